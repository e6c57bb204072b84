//! Snapshot files in the metadata log directory, as Kafka names and writes them (see `records::snapshot` for
//! the frame): the reader that checks a whole file before anything of it is used, the chunk reader that
//! serves FetchSnapshot, the `.checkpoint.part` writer of a download or of a snapshot of our own (fsync, then
//! an atomic rename to `.checkpoint`, then a directory fsync), and deletion through `.checkpoint.deleted`.
//!
//! Files are read one batch at a time: a batch's length is checked against what the file still holds (and
//! against `records::MAX_BATCH_SIZE`) before its bytes are read, so a length field never sizes an allocation.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::sync_dir;
use crate::records::{
    self, RecordsError, SnapshotFileKind, SnapshotFrame, SnapshotId, SnapshotInfo, SnapshotRecord,
    BATCH_LOG_OVERHEAD,
};

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("snapshot {path} is corrupt at byte {position}: {source}")]
    Corrupt {
        path: PathBuf,
        position: u64,
        source: RecordsError,
    },
    #[error(
        "{path} is not a snapshot file name (<20-digit end offset>-<10-digit epoch>.checkpoint)"
    )]
    BadName { path: PathBuf },
    #[error("snapshot {path}: a chunk at position {position} does not continue the {written} bytes written")]
    Position {
        path: PathBuf,
        position: u64,
        written: u64,
    },
    #[error("snapshot {path}: position {position} is outside the snapshot's {size} bytes")]
    OutOfRange {
        path: PathBuf,
        position: u64,
        size: u64,
    },
    #[error("snapshot {id} cannot be written: {reason}")]
    Unwritable { id: SnapshotId, reason: String },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where snapshot `id` of kind `kind` lives in `dir`.
pub fn snapshot_path(dir: &Path, id: SnapshotId, kind: SnapshotFileKind) -> PathBuf {
    dir.join(id.file_name(kind))
}

/// Every snapshot file in `dir` with its id and kind, ordered by id (other files are ignored).
pub fn list_snapshots(dir: &Path) -> Result<Vec<(SnapshotId, SnapshotFileKind)>, SnapshotError> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let name = entry.map_err(io_err(dir))?.file_name();
        if let Some(parsed) = SnapshotId::parse_file_name(&name.to_string_lossy()) {
            found.push(parsed);
        }
    }
    found.sort_by_key(|(id, _)| *id);
    Ok(found)
}

/// Reads every batch of the snapshot file at `path`, checking the whole frame; `each` sees every decoded
/// batch. The id is taken from the file name (a `.part` file's too).
pub fn scan_snapshot(
    path: &Path,
    mut each: impl FnMut(&records::SnapshotBatch) -> Result<(), SnapshotError>,
) -> Result<SnapshotInfo, SnapshotError> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let (id, _) = SnapshotId::parse_file_name(&name).ok_or_else(|| SnapshotError::BadName {
        path: path.to_path_buf(),
    })?;
    let file = File::open(path).map_err(io_err(path))?;
    let size = file.metadata().map_err(io_err(path))?.len();
    let corrupt = |position: u64, source: RecordsError| SnapshotError::Corrupt {
        path: path.to_path_buf(),
        position,
        source,
    };
    let mut frame = SnapshotFrame::default();
    let mut reader = io::BufReader::new(file);
    let mut position = 0u64;
    while position < size {
        let mut prefix = [0u8; BATCH_LOG_OVERHEAD];
        let available = (size - position).min(BATCH_LOG_OVERHEAD as u64) as usize;
        reader
            .read_exact(&mut prefix[..available])
            .map_err(io_err(path))?;
        // The length is checked against the bytes the file still holds before any buffer is sized by it.
        // From the prefix alone batch_frame reports Truncated with the batch's whole length as `needed`
        // (the prefix's own length when the file ends inside it).
        let total = match records::batch_frame(&prefix[..available], 0) {
            Ok((_, total)) => total,
            Err(RecordsError::Truncated { needed, .. }) if needed as u64 <= size - position => {
                needed
            }
            Err(RecordsError::Truncated { needed, .. }) => {
                return Err(corrupt(
                    position,
                    RecordsError::Truncated {
                        position: position as usize,
                        needed,
                        available: (size - position) as usize,
                    },
                ))
            }
            Err(e) => return Err(corrupt(position, e)),
        };
        let mut batch = vec![0u8; total];
        batch[..BATCH_LOG_OVERHEAD].copy_from_slice(&prefix);
        reader
            .read_exact(&mut batch[BATCH_LOG_OVERHEAD..])
            .map_err(io_err(path))?;
        let (decoded, _) = frame
            .push(&Bytes::from(batch), 0)
            .map_err(|e| corrupt(position, e))?;
        each(&decoded)?;
        position += total as u64;
    }
    frame.finish(id, size).map_err(|e| corrupt(position, e))
}

/// Reads and checks the snapshot file at `path` (CRC of every batch, control values, header first, footer
/// last); a file that fails any check is never used.
pub fn read_snapshot_meta(path: &Path) -> Result<SnapshotInfo, SnapshotError> {
    scan_snapshot(path, |_| Ok(()))
}

/// An open complete snapshot, for FetchSnapshot's chunks.
#[derive(Debug)]
pub struct SnapshotReader {
    path: PathBuf,
    file: File,
    size: u64,
}

impl SnapshotReader {
    pub fn open(dir: &Path, id: SnapshotId) -> Result<SnapshotReader, SnapshotError> {
        let path = snapshot_path(dir, id, SnapshotFileKind::Checkpoint);
        let file = File::open(&path).map_err(io_err(&path))?;
        let size = file.metadata().map_err(io_err(&path))?.len();
        Ok(SnapshotReader { path, file, size })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Kafka's `slice(position, min(max_len, size − position))`; a position at or past the end (or a
    /// chunk that cannot be read) is an error.
    pub fn chunk(&self, position: u64, max_len: usize) -> Result<Bytes, SnapshotError> {
        if position >= self.size {
            return Err(SnapshotError::OutOfRange {
                path: self.path.clone(),
                position,
                size: self.size,
            });
        }
        let len = (self.size - position).min(max_len as u64) as usize;
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, position)
            .map_err(io_err(&self.path))?;
        Ok(Bytes::from(buf))
    }
}

/// A snapshot being written: `<id>.checkpoint.part`, appended in order.
#[derive(Debug)]
pub struct PartialSnapshot {
    dir: PathBuf,
    id: SnapshotId,
    path: PathBuf,
    file: File,
    written: u64,
}

impl PartialSnapshot {
    /// Starts `<id>.checkpoint.part` in `dir`, empty (a leftover of an earlier attempt is discarded).
    pub fn create(dir: &Path, id: SnapshotId) -> Result<PartialSnapshot, SnapshotError> {
        let path = snapshot_path(dir, id, SnapshotFileKind::Partial);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(io_err(&path))?;
        Ok(PartialSnapshot {
            dir: dir.to_path_buf(),
            id,
            path,
            file,
            written: 0,
        })
    }

    pub fn id(&self) -> SnapshotId {
        self.id
    }

    /// Bytes written so far: the position the next chunk must have.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Appends a chunk that must start where the bytes written end (FetchSnapshot's `Position` check).
    pub fn append(&mut self, position: u64, bytes: &[u8]) -> Result<(), SnapshotError> {
        if position != self.written {
            return Err(SnapshotError::Position {
                path: self.path.clone(),
                position,
                written: self.written,
            });
        }
        self.file
            .write_all_at(bytes, position)
            .map_err(io_err(&self.path))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Makes the snapshot durable and visible: fsync, a check of the whole file, an atomic rename to
    /// `.checkpoint` and a directory fsync. A file that fails the check is deleted and the error names it.
    pub fn complete(self) -> Result<SnapshotInfo, SnapshotError> {
        self.file.sync_all().map_err(io_err(&self.path))?;
        drop(self.file);
        let meta = match read_snapshot_meta(&self.path) {
            Ok(meta) => meta,
            Err(e) => {
                let _ = std::fs::remove_file(&self.path);
                return Err(e);
            }
        };
        let done = snapshot_path(&self.dir, self.id, SnapshotFileKind::Checkpoint);
        std::fs::rename(&self.path, &done).map_err(io_err(&done))?;
        sync_dir(&self.dir).map_err(io_err(&self.dir))?;
        Ok(meta)
    }

    /// Gives the download up: the `.part` file is deleted.
    pub fn abandon(self) -> Result<(), SnapshotError> {
        drop(self.file);
        std::fs::remove_file(&self.path).map_err(io_err(&self.path))
    }
}

/// Deletes snapshot `id` as Kafka does: renamed to `.checkpoint.deleted` first (a crash leaves a name that
/// start-up deletes), then removed.
pub fn delete_snapshot(dir: &Path, id: SnapshotId) -> Result<(), SnapshotError> {
    let from = snapshot_path(dir, id, SnapshotFileKind::Checkpoint);
    let to = snapshot_path(dir, id, SnapshotFileKind::Deleted);
    std::fs::rename(&from, &to).map_err(io_err(&from))?;
    std::fs::remove_file(&to).map_err(io_err(&to))?;
    sync_dir(dir).map_err(io_err(dir))
}

/// Kafka's `RecordsSnapshotWriter` batch limit (`KafkaRaftClient.MAX_BATCH_SIZE_BYTES`, 8 MiB): data records
/// are packed into batches of at most about this many value bytes.
pub const SNAPSHOT_BATCH_BYTES: usize = 8 << 20;

/// Which data records a snapshot of ours carries, fed the previous snapshot's data records and then the
/// log's, in order: every metadata record unchanged, except NoOpRecords (they change no metadata image),
/// the transaction markers, and the records of an aborted transaction (Kafka's loader drops those too).
#[derive(Debug, Default)]
pub struct DataRule {
    /// Records of the transaction in progress, held until it ends.
    open: Option<Vec<Bytes>>,
}

impl DataRule {
    /// Feeds one data record; returns the records that are now part of the snapshot.
    pub fn feed(&mut self, value: Bytes) -> Vec<Bytes> {
        use crate::records::{
            METADATA_ABORT_TRANSACTION as ABORT, METADATA_BEGIN_TRANSACTION as BEGIN,
            METADATA_END_TRANSACTION as END, METADATA_NO_OP as NO_OP,
        };
        match records::metadata_record_type(&value) {
            Some(NO_OP) => Vec::new(),
            Some(BEGIN) => {
                // A transaction inside a transaction: Kafka's loader refuses it; the first one's records stay.
                self.open.get_or_insert_with(Vec::new);
                Vec::new()
            }
            Some(END) => self.open.take().unwrap_or_default(),
            Some(ABORT) => {
                self.open = None;
                Vec::new()
            }
            _ => match &mut self.open {
                Some(held) => {
                    held.push(value);
                    Vec::new()
                }
                None => vec![value],
            },
        }
    }

    /// Whether a transaction is open: a snapshot cannot end here.
    pub fn in_transaction(&self) -> bool {
        self.open.is_some()
    }
}

/// A snapshot of our own being written to `.checkpoint.part`: the header batch, data batches of at most
/// [`SNAPSHOT_BATCH_BYTES`], the footer, then [`PartialSnapshot::complete`].
pub struct SnapshotWriter {
    part: PartialSnapshot,
    encoder: records::SnapshotEncoder,
    rule: DataRule,
    pending: Vec<Bytes>,
    pending_bytes: usize,
    append_time: i64,
}

impl SnapshotWriter {
    /// `voters` and `kraft_version` are those as of `id.end_offset − 1`; `append_time` stamps every batch.
    pub fn create(
        dir: &Path,
        id: SnapshotId,
        last_contained_log_timestamp: i64,
        kraft_version: i16,
        voters: Option<&crate::voter_set::VoterSet>,
        append_time: i64,
    ) -> Result<SnapshotWriter, SnapshotError> {
        let unwritable = |e: RecordsError| SnapshotError::Unwritable {
            id,
            reason: e.to_string(),
        };
        let encoder = records::SnapshotEncoder::new(
            id,
            last_contained_log_timestamp,
            kraft_version,
            voters,
            append_time,
        )
        .map_err(unwritable)?;
        Ok(SnapshotWriter {
            part: PartialSnapshot::create(dir, id)?,
            encoder,
            rule: DataRule::default(),
            pending: Vec::new(),
            pending_bytes: 0,
            append_time,
        })
    }

    /// Feeds one data record (of the previous snapshot or of the log) through [`DataRule`].
    pub fn feed(&mut self, value: Bytes) -> Result<(), SnapshotError> {
        for value in self.rule.feed(value) {
            if !self.pending.is_empty() && self.pending_bytes + value.len() > SNAPSHOT_BATCH_BYTES {
                self.flush_batch()?;
            }
            self.pending_bytes += value.len();
            self.pending.push(value);
        }
        Ok(())
    }

    /// Feeds every data record of the snapshot file at `path` (checked as [`read_snapshot_meta`] does).
    pub fn feed_snapshot(&mut self, path: &Path) -> Result<(), SnapshotError> {
        scan_snapshot(path, |batch| {
            for record in &batch.records {
                if let SnapshotRecord::Data(value) = record {
                    self.feed(value.clone())?;
                }
            }
            Ok(())
        })
        .map(|_| ())
    }

    fn flush_batch(&mut self) -> Result<(), SnapshotError> {
        let id = self.part.id();
        self.encoder
            .data_batch(&self.pending, self.append_time)
            .map_err(|e| SnapshotError::Unwritable {
                id,
                reason: e.to_string(),
            })?;
        self.pending.clear();
        self.pending_bytes = 0;
        let bytes = self.encoder.take();
        let at = self.part.written();
        self.part.append(at, &bytes)
    }

    /// Gives the snapshot up: its `.part` file is deleted.
    pub fn abandon(self) -> Result<(), SnapshotError> {
        self.part.abandon()
    }

    /// Writes the footer and completes the file. A snapshot whose end offset falls inside a metadata
    /// transaction is refused (its `.part` deleted): its records could not be told committed or aborted.
    pub fn finish(mut self) -> Result<SnapshotInfo, SnapshotError> {
        let id = self.part.id();
        if self.rule.in_transaction() {
            self.part.abandon()?;
            return Err(SnapshotError::Unwritable {
                id,
                reason: "its end offset is inside a metadata transaction".into(),
            });
        }
        if !self.pending.is_empty() {
            self.flush_batch()?;
        }
        let bytes =
            self.encoder
                .finish(self.append_time)
                .map_err(|e| SnapshotError::Unwritable {
                    id,
                    reason: e.to_string(),
                })?;
        let at = self.part.written();
        self.part.append(at, &bytes)?;
        self.part.complete()
    }
}
