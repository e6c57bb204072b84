//! Each state's parent, kept by the state's owner level by level, apart from the visited set: the
//! visited set answers "seen?" for every successor and stays in memory (8 bytes of fingerprint per
//! state); a parent is read only when a failure's path is walked back, one level per round, so
//! with `--spill-dir` it goes to a file of its worker and level (16-byte records: fingerprint,
//! parent fingerprint), written in order and scanned once per walked-back step.
//! Without a spill directory a level's parents are a vector in memory.

use super::spill::{io, Owned, SpillError};
use super::timely::Parent;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Bytes of a parent record on disk.
const RECORD: usize = 8 + 8;

/// One worker's parents.
pub(crate) struct Parents {
    dir: Option<PathBuf>,
    worker: usize,
    levels: BTreeMap<u32, Level>,
}

enum Level {
    Memory(Vec<(u64, Parent)>),
    File {
        path: Owned,
        /// Open while the level is written; flushed and closed before a lookup.
        writer: Option<BufWriter<File>>,
        records: u64,
    },
}

impl Parents {
    /// In memory, or in files in `dir`.
    pub(crate) fn new(dir: Option<&Path>, worker: usize) -> Self {
        Parents {
            dir: dir.map(Path::to_path_buf),
            worker,
            levels: BTreeMap::new(),
        }
    }

    /// Records `fp`'s parent at `level` (a state is recorded once: at its first visit).
    pub(crate) fn push(&mut self, level: u32, fp: u64, parent: Parent) -> Result<(), SpillError> {
        let level_log = match self.levels.get_mut(&level) {
            Some(l) => l,
            None => {
                let created = match &self.dir {
                    None => Level::Memory(Vec::new()),
                    Some(dir) => {
                        let path = dir.join(format!(
                            "parents-{}-w{}-l{level}.spill",
                            std::process::id(),
                            self.worker
                        ));
                        let file = OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(&path)
                            .map_err(io(&path))?;
                        Level::File {
                            path: Owned(path),
                            writer: Some(BufWriter::with_capacity(1 << 16, file)),
                            records: 0,
                        }
                    }
                };
                // The levels before are complete: close their files.
                for l in self.levels.values_mut() {
                    l.close()?;
                }
                self.levels.entry(level).or_insert(created)
            }
        };
        match level_log {
            Level::Memory(v) => v.push((fp, parent)),
            Level::File {
                path,
                writer,
                records,
            } => {
                let w = writer.as_mut().ok_or_else(|| {
                    io(&path.0)(std::io::Error::other("written after it was read"))
                })?;
                let mut rec = [0u8; RECORD];
                rec[..8].copy_from_slice(&fp.to_le_bytes());
                rec[8..].copy_from_slice(&parent.to_le_bytes());
                w.write_all(&rec).map_err(io(&path.0))?;
                *records += 1;
            }
        }
        Ok(())
    }

    /// `fp`'s parent if `fp` was recorded at `level`.
    pub(crate) fn find(&mut self, level: u32, fp: u64) -> Result<Option<Parent>, SpillError> {
        let Some(l) = self.levels.get_mut(&level) else {
            return Ok(None);
        };
        l.close()?;
        match l {
            Level::Memory(v) => Ok(v.iter().find(|(f, _)| *f == fp).map(|&(_, p)| p)),
            Level::File { path, records, .. } => scan(&path.0, *records, fp),
        }
    }
}

impl Level {
    fn close(&mut self) -> Result<(), SpillError> {
        if let Level::File { path, writer, .. } = self {
            if let Some(w) = writer.take() {
                w.into_inner().map_err(|e| io(&path.0)(e.into_error()))?;
            }
        }
        Ok(())
    }
}

/// Reads a parents file of `records` records for `fp`; a file of another length is an error.
fn scan(path: &Path, records: u64, fp: u64) -> Result<Option<Parent>, SpillError> {
    let file = File::open(path).map_err(io(path))?;
    let len = file.metadata().map_err(io(path))?.len();
    let expected = records * RECORD as u64;
    if len < expected {
        return Err(SpillError::Truncated {
            path: path.to_path_buf(),
            record: len / RECORD as u64,
            records,
        });
    }
    if len > expected {
        return Err(SpillError::Trailing {
            path: path.to_path_buf(),
            records,
        });
    }
    let mut r = BufReader::with_capacity(1 << 16, file);
    let mut rec = [0u8; RECORD];
    for _ in 0..records {
        r.read_exact(&mut rec).map_err(io(path))?;
        let word = |a: usize| u64::from_le_bytes(rec[a..a + 8].try_into().expect("8 bytes"));
        if word(0) == fp {
            return Ok(Some(word(8)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(dir: Option<&Path>) -> Parents {
        let mut p = Parents::new(dir, 1);
        for level in 0..3u32 {
            for i in 0..500u64 {
                let fp = u64::from(level) * 1000 + i + 1;
                p.push(level, fp, fp * 7 + u64::from(level))
                    .expect("writes");
            }
        }
        p
    }

    #[test]
    fn parents_are_found_at_their_level_in_memory_and_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        for d in [None, Some(dir.path())] {
            let mut p = filled(d);
            assert_eq!(p.find(1, 1001).unwrap(), Some(7008));
            assert_eq!(p.find(2, 2500).unwrap(), Some(17502));
            assert_eq!(p.find(0, 1001).unwrap(), None, "another level");
            assert_eq!(p.find(7, 1).unwrap(), None, "no such level");
        }
        let files = || std::fs::read_dir(dir.path()).unwrap().count();
        let p = filled(Some(dir.path()));
        assert_eq!(files(), 3, "a file per level");
        drop(p);
        assert_eq!(files(), 0, "removed with the worker's parents");
    }

    #[test]
    fn a_cut_or_grown_file_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        for (cut, what) in [(true, "cut short"), (false, "bytes after")] {
            let mut p = filled(Some(dir.path()));
            p.find(0, 1).unwrap();
            let path = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|f| f.to_string_lossy().ends_with("-l0.spill"))
                .unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            if cut {
                bytes.truncate(bytes.len() - 3);
            } else {
                bytes.push(0);
            }
            std::fs::write(&path, bytes).unwrap();
            let e = p.find(0, 1).expect_err(what);
            assert!(
                matches!(
                    (cut, &e),
                    (true, SpillError::Truncated { .. }) | (false, SpillError::Trailing { .. })
                ),
                "{what}: {e}"
            );
        }
    }
}
