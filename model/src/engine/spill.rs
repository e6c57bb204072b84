//! A level's frontier on disk: when the states waiting for a level outgrow a worker's share of
//! `--frontier-memory`, they are appended to a file of that worker and level, and read back in
//! chunks while the level is expanded. The file is removed when its reader (or an unfinished
//! writer) is dropped, whatever ended the level.
//!
//! A record is a fixed header — the state's fingerprint, its parent's fingerprint, the payload's
//! length and a checksum of all of it — then the payload: the state's
//! stored form in bincode. Reading is bounded: a length above [`MAX_RECORD`] is an error before
//! anything is allocated, and the reader knows how many records were written, so a file cut
//! short, a flipped bit or trailing bytes are typed errors, never a panic or a wrong count.

use super::timely::Parent;
use bincode::Options as _;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// Longest payload a record may have: far above any stored state (a few hundred bytes).
pub const MAX_RECORD: u32 = 1 << 20;

/// Header bytes: fingerprint, parent fingerprint, length, checksum.
const HEADER: usize = 8 + 8 + 4 + 8;

/// What went wrong with a spill file.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    #[error("spill file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("spill file {path}: cut short in record {record} of {records}")]
    Truncated {
        path: PathBuf,
        record: u64,
        records: u64,
    },
    #[error("spill file {path}: record {record} claims {len} bytes (at most {MAX_RECORD})")]
    TooLong {
        path: PathBuf,
        record: u64,
        len: u32,
    },
    #[error("spill file {path}: record {record} fails its checksum")]
    Checksum { path: PathBuf, record: u64 },
    #[error("spill file {path}: record {record} is not a stored state: {reason}")]
    Decode {
        path: PathBuf,
        record: u64,
        reason: String,
    },
    #[error("spill file {path}: bytes after its {records} records")]
    Trailing { path: PathBuf, records: u64 },
    #[error("spill file {path}: a state does not encode: {reason}")]
    Encode { path: PathBuf, reason: String },
}

/// The I/O errors of the file at `path`, as [`SpillError::Io`].
pub(crate) fn io(path: &Path) -> impl Fn(std::io::Error) -> SpillError + '_ {
    move |source| SpillError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A spill file's path, removed when dropped.
pub(crate) struct Owned(pub(crate) PathBuf);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn checksum(header: &[u8], payload: &[u8]) -> u64 {
    ahash::RandomState::with_seeds(5, 6, 7, 8).hash_one((header, payload))
}

fn codec() -> impl bincode::Options {
    bincode::DefaultOptions::new().with_limit(MAX_RECORD as u64)
}

/// A level's states being written.
pub struct Writer<St> {
    path: Owned,
    file: BufWriter<File>,
    records: u64,
    payload: Vec<u8>,
    _states: PhantomData<St>,
}

impl<St: Serialize + DeserializeOwned> Writer<St> {
    /// A new file in `dir` for `worker`'s level `level` (the process id keeps runs sharing a
    /// directory apart).
    pub fn create(dir: &Path, worker: usize, level: u32) -> Result<Self, SpillError> {
        let path = dir.join(format!(
            "frontier-{}-w{worker}-l{level}.spill",
            std::process::id()
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(Writer {
            path: Owned(path),
            file: BufWriter::new(file),
            records: 0,
            payload: Vec::new(),
            _states: PhantomData,
        })
    }

    /// Appends one state.
    pub fn push(&mut self, fp: u64, parent: Parent, state: &St) -> Result<(), SpillError> {
        let path = &self.path.0;
        self.payload.clear();
        codec()
            .serialize_into(&mut self.payload, state)
            .map_err(|e| SpillError::Encode {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        let mut header = [0u8; HEADER];
        header[..8].copy_from_slice(&fp.to_le_bytes());
        header[8..16].copy_from_slice(&parent.to_le_bytes());
        header[16..20].copy_from_slice(&(self.payload.len() as u32).to_le_bytes());
        let sum = checksum(&header[..20], &self.payload);
        header[20..].copy_from_slice(&sum.to_le_bytes());
        self.file.write_all(&header).map_err(io(path))?;
        self.file.write_all(&self.payload).map_err(io(path))?;
        self.records += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Done writing: a reader from the first record.
    pub fn finish(self) -> Result<Reader<St>, SpillError> {
        let Writer {
            path,
            file,
            records,
            ..
        } = self;
        file.into_inner()
            .map_err(|e| io(&path.0)(e.into_error()))?
            .sync_data()
            .map_err(io(&path.0))?;
        Reader::open(path, records)
    }
}

/// A level's states being read back.
pub struct Reader<St> {
    path: Owned,
    file: BufReader<File>,
    records: u64,
    read: u64,
    payload: Vec<u8>,
    _states: PhantomData<St>,
}

impl<St: DeserializeOwned> Reader<St> {
    fn open(path: Owned, records: u64) -> Result<Self, SpillError> {
        let file = File::open(&path.0).map_err(io(&path.0))?;
        Ok(Reader {
            path,
            file: BufReader::with_capacity(1 << 16, file),
            records,
            read: 0,
            payload: Vec::new(),
            _states: PhantomData,
        })
    }

    /// Records not read yet.
    pub fn remaining(&self) -> u64 {
        self.records - self.read
    }

    /// The next state, `None` after the last (and the file holds nothing more).
    pub fn next_state(&mut self) -> Result<Option<(u64, Parent, St)>, SpillError> {
        let path = &self.path.0;
        let record = self.read;
        if record == self.records {
            let mut byte = [0u8; 1];
            return match self.file.read(&mut byte) {
                Ok(0) => Ok(None),
                Ok(_) => Err(SpillError::Trailing {
                    path: path.clone(),
                    records: self.records,
                }),
                Err(source) => Err(io(path)(source)),
            };
        }
        let cut = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                SpillError::Truncated {
                    path: path.clone(),
                    record,
                    records: self.records,
                }
            } else {
                io(path)(e)
            }
        };
        let mut header = [0u8; HEADER];
        self.file.read_exact(&mut header).map_err(cut)?;
        let word = |r: std::ops::Range<usize>| {
            let mut b = [0u8; 8];
            b[..r.len()].copy_from_slice(&header[r]);
            u64::from_le_bytes(b)
        };
        let (fp, parent) = (word(0..8), word(8..16));
        let len = word(16..20) as u32;
        if len > MAX_RECORD {
            return Err(SpillError::TooLong {
                path: path.clone(),
                record,
                len,
            });
        }
        self.payload.resize(len as usize, 0);
        self.file.read_exact(&mut self.payload).map_err(cut)?;
        if checksum(&header[..20], &self.payload) != word(20..28) {
            return Err(SpillError::Checksum {
                path: path.clone(),
                record,
            });
        }
        let state = codec()
            .deserialize(&self.payload)
            .map_err(|e| SpillError::Decode {
                path: path.clone(),
                record,
                reason: e.to_string(),
            })?;
        self.read += 1;
        Ok(Some((fp, parent, state)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::packed::Bytes;

    fn written(dir: &Path, n: u32) -> (PathBuf, Reader<Bytes>) {
        let mut w = Writer::<Bytes>::create(dir, 3, 7).expect("creates");
        for i in 0..n {
            let state = Bytes(vec![i as u8; (i % 50) as usize].into_boxed_slice());
            w.push(u64::from(i) * 31, u64::from(i) + 1, &state)
                .expect("writes");
        }
        let path = w.path.0.clone();
        (path, w.finish().expect("finishes"))
    }

    fn read_all(r: &mut Reader<Bytes>) -> Result<Vec<(u64, Parent, Bytes)>, SpillError> {
        let mut out = Vec::new();
        while let Some(x) = r.next_state()? {
            out.push(x);
        }
        Ok(out)
    }

    #[test]
    fn states_come_back_in_order_and_the_file_goes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut r) = written(dir.path(), 1000);
        assert_eq!(r.remaining(), 1000);
        let all = read_all(&mut r).expect("reads");
        assert_eq!(all.len(), 1000);
        for (i, (fp, parent, s)) in all.into_iter().enumerate() {
            let i = i as u32;
            assert_eq!((fp, parent), (u64::from(i) * 31, u64::from(i) + 1));
            assert_eq!(s.0.len(), (i % 50) as usize);
            assert!(s.0.iter().all(|&b| b == i as u8));
        }
        assert!(path.exists());
        drop(r);
        assert!(!path.exists(), "removed after use");
        // An unfinished writer removes its file too.
        let w = Writer::<Bytes>::create(dir.path(), 0, 0).unwrap();
        let p = w.path.0.clone();
        assert!(p.exists());
        drop(w);
        assert!(!p.exists());
    }

    /// Rewrites the file under a reader that has not read yet (it opened the same inode).
    fn damage(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
        let mut bytes = std::fs::read(path).unwrap();
        f(&mut bytes);
        let mut file = OpenOptions::new().write(true).open(path).unwrap();
        file.write_all(&bytes).unwrap();
        file.set_len(bytes.len() as u64).unwrap();
    }

    #[test]
    fn a_damaged_file_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        type Damage = fn(&mut Vec<u8>);
        let cases: [(&str, Damage); 5] = [
            ("cut mid-record", |b| b.truncate(b.len() - 3)),
            ("cut at a record's end", |b| b.truncate(HEADER + 1)),
            ("a payload byte flipped", |b| b[HEADER + HEADER + 2] ^= 1),
            ("a huge length", |b| {
                b[16..20].copy_from_slice(&u32::MAX.to_le_bytes())
            }),
            ("bytes appended", |b| b.push(0)),
        ];
        for (what, f) in cases {
            let (path, mut r) = written(dir.path(), 20);
            damage(&path, f);
            let e = read_all(&mut r).expect_err(what);
            let ok = match what {
                "cut mid-record" | "cut at a record's end" => {
                    matches!(e, SpillError::Truncated { .. })
                }
                "a payload byte flipped" => matches!(e, SpillError::Checksum { .. }),
                "a huge length" => matches!(e, SpillError::TooLong { .. }),
                _ => matches!(e, SpillError::Trailing { .. }),
            };
            assert!(ok, "{what}: {e}");
            assert!(e.to_string().contains("spill file"), "{e}");
        }
    }
}
