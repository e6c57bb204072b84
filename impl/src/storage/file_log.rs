//! `FileLog`: the durable [`RaftLog`], Kafka v2 record batches in segment files.
//!
//! An in-memory index (one entry per record batch: offsets, epoch, file position) answers offset and epoch
//! queries; batch bytes are read back from the files and CRC-checked on every read. Recovery on open scans
//! every segment and truncates at the first torn or corrupt batch.
//!
//! The log start offset is Kafka's: on open, the first segment's base offset (Kafka's metadata log keeps no
//! log-start checkpoint); it moves up with [`FileLog::advance_start`] (segments wholly below it deleted) and
//! [`FileLog::truncate_fully_and_start_at`] (after a snapshot download).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};

use super::{sync_dir, StorageError};
use crate::log::{Batch, LogError, MemoryLog, RaftLog, Record, Replicated};
use crate::records;

/// A new segment is started once the active one reaches this size.
pub const DEFAULT_SEGMENT_BYTES: u64 = 8 << 20;

struct Segment {
    path: PathBuf,
    file: File,
    len: u64,
}

#[derive(Clone, Copy, Debug)]
struct IndexEntry {
    base_offset: i64,
    next_offset: i64,
    epoch: i32,
    segment: usize,
    position: u64,
    len: u64,
}

pub struct FileLog {
    dir: PathBuf,
    segments: Vec<Segment>,
    index: Vec<IndexEntry>,
    segment_bytes: u64,
    /// The log start offset: nothing below it is read.
    start: i64,
    flushed: i64,
    /// Segments written since the last flush (index into `segments`), and whether the directory changed.
    dirty_from: Option<usize>,
    dir_dirty: bool,
}

fn segment_name(base_offset: i64) -> String {
    format!("{base_offset:020}.log")
}

/// The base offset in a segment's file name (every segment this log holds has one).
fn segment_base(path: &Path) -> i64 {
    path.file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .unwrap_or(i64::MAX)
}

fn io_at(path: &Path) -> impl Fn(std::io::Error) -> LogError + '_ {
    move |e| {
        LogError::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        ))
    }
}

impl FileLog {
    /// Opens (creating if needed) the log in `dir`, recovering from a torn or corrupt tail.
    pub fn open(dir: &Path) -> Result<FileLog, StorageError> {
        Self::open_with_segment_bytes(dir, DEFAULT_SEGMENT_BYTES)
    }

    pub fn open_with_segment_bytes(
        dir: &Path,
        segment_bytes: u64,
    ) -> Result<FileLog, StorageError> {
        let io = |source| StorageError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut bases = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let name = entry.map_err(io)?.file_name();
            let name = name.to_string_lossy();
            if let Some(stem) = name.strip_suffix(".log") {
                match stem.parse::<i64>() {
                    Ok(base) if stem.len() == 20 && base >= 0 => bases.push(base),
                    _ => tracing::warn!(file = %name, "ignoring file that is not a log segment"),
                }
            }
        }
        bases.sort_unstable();
        let mut log = FileLog {
            dir: dir.to_path_buf(),
            segments: Vec::new(),
            index: Vec::new(),
            segment_bytes: segment_bytes.max(1),
            start: bases.first().copied().unwrap_or(0),
            flushed: 0,
            dirty_from: None,
            dir_dirty: false,
        };
        log.recover(&bases)?;
        if log.segments.is_empty() {
            log.create_segment(log.start)?;
            sync_dir(dir).map_err(io)?;
            log.dir_dirty = false;
        }
        log.flushed = log.end_offset();
        Ok(log)
    }

    fn recover(&mut self, bases: &[i64]) -> Result<(), StorageError> {
        let mut expected: Option<i64> = None;
        let mut last_epoch = 0;
        for (i, &base) in bases.iter().enumerate() {
            let path = self.dir.join(segment_name(base));
            if expected.is_some_and(|e| e != base) {
                // A gap or overlap between segments: everything from here on is unusable.
                tracing::error!(segment = %path.display(), expected = ?expected,
                    "log recovery: segment does not continue the log; deleting it and later segments");
                self.delete_files(&bases[i..])?;
                break;
            }
            let bytes = std::fs::read(&path).map_err(|source| StorageError::Io {
                path: path.clone(),
                source,
            })?;
            let total = bytes.len();
            let scan = records::scan_batches(Bytes::from(bytes));
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|source| StorageError::Io {
                    path: path.clone(),
                    source,
                })?;
            let segment = self.segments.len();
            let mut position = 0u64;
            let mut stop: Option<String> = scan.error.as_ref().map(ToString::to_string);
            let mut valid = scan.valid_bytes as u64;
            let mut next = expected.unwrap_or(base);
            for (batch, len) in scan
                .batches
                .iter()
                .zip(scan.lengths.iter().map(|l| *l as u64))
            {
                if batch.base_offset != next || batch.epoch < last_epoch {
                    stop = Some(format!(
                        "batch at offset {} (epoch {}) does not continue offset {next} (epoch {last_epoch})",
                        batch.base_offset, batch.epoch
                    ));
                    valid = position;
                    break;
                }
                self.index.push(IndexEntry {
                    base_offset: batch.base_offset,
                    next_offset: batch.next_offset(),
                    epoch: batch.epoch,
                    segment,
                    position,
                    len,
                });
                position += len;
                next = batch.next_offset();
                last_epoch = batch.epoch;
            }
            self.segments.push(Segment {
                path: path.clone(),
                file,
                len: valid,
            });
            if let Some(reason) = stop {
                tracing::warn!(
                    segment = %path.display(),
                    valid_bytes = valid,
                    dropped_bytes = total as u64 - valid,
                    next_offset = next,
                    "log recovery: truncating torn or corrupt tail: {reason}"
                );
                let seg = &self.segments[segment];
                seg.file.set_len(valid).map_err(|source| StorageError::Io {
                    path: path.clone(),
                    source,
                })?;
                seg.file.sync_all().map_err(|source| StorageError::Io {
                    path: path.clone(),
                    source,
                })?;
                if i + 1 < bases.len() {
                    tracing::error!(
                        "log recovery: deleting {} later segment(s) after the corrupt batch",
                        bases.len() - i - 1
                    );
                    self.delete_files(&bases[i + 1..])?;
                }
                break;
            }
            expected = Some(next);
        }
        Ok(())
    }

    fn delete_files(&self, bases: &[i64]) -> Result<(), StorageError> {
        for base in bases {
            let path = self.dir.join(segment_name(*base));
            std::fs::remove_file(&path).map_err(|source| StorageError::Io { path, source })?;
        }
        sync_dir(&self.dir).map_err(|source| StorageError::Io {
            path: self.dir.clone(),
            source,
        })
    }

    fn create_segment(&mut self, base_offset: i64) -> Result<(), LogError> {
        let path = self.dir.join(segment_name(base_offset));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(io_at(&path))?;
        self.segments.push(Segment { path, file, len: 0 });
        self.dir_dirty = true;
        Ok(())
    }

    fn write_batch(&mut self, batch: &Batch) -> Result<(), LogError> {
        let mut buf = BytesMut::new();
        records::encode_batch_into(batch, &mut buf).map_err(|e| LogError::Corrupt {
            offset: batch.base_offset,
            reason: e.to_string(),
        })?;
        self.write_encoded(batch, &buf)
    }

    /// Writes `buf`, the Kafka record batches of `batch`, at the end of the active segment and indexes them.
    fn write_encoded(&mut self, batch: &Batch, buf: &[u8]) -> Result<(), LogError> {
        let active = self.segments.len() - 1;
        if self.segments[active].len >= self.segment_bytes {
            self.create_segment(batch.base_offset)?;
        }
        let active = self.segments.len() - 1;
        let segment = &mut self.segments[active];
        let start = segment.len;
        segment
            .file
            .write_all_at(buf, start)
            .map_err(io_at(&segment.path))?;
        segment.len += buf.len() as u64;
        // A mixed data/control batch is stored as several Kafka batches: index each one.
        let mut position = 0usize;
        while position < buf.len() {
            let (base_offset, len) =
                records::batch_frame(buf, position).map_err(|e| LogError::Corrupt {
                    offset: batch.base_offset,
                    reason: e.to_string(),
                })?;
            let b = &buf[position + 23..position + 27];
            let last_offset_delta = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            self.index.push(IndexEntry {
                base_offset,
                next_offset: base_offset + i64::from(last_offset_delta) + 1,
                epoch: batch.epoch,
                segment: active,
                position: start + position as u64,
                len: len as u64,
            });
            position += len;
        }
        self.dirty_from = Some(self.dirty_from.map_or(active, |d| d.min(active)));
        Ok(())
    }

    fn check_append(&self, batch: &Batch, end: i64, last_epoch: i32) -> Result<(), LogError> {
        if batch.records.is_empty() {
            return Err(LogError::EmptyBatch);
        }
        if batch.base_offset != end {
            return Err(LogError::NonContiguous {
                expected: end,
                got: batch.base_offset,
            });
        }
        if batch.epoch < last_epoch {
            return Err(LogError::EpochRegression {
                last: last_epoch,
                got: batch.epoch,
            });
        }
        Ok(())
    }

    /// The index entries a read from `from` returns: the batch holding `from` and those after it, within
    /// `max_bytes` except that the first is always included (both reads share this rule).
    fn entries_to_read(&self, from: i64, max_bytes: usize) -> Result<&[IndexEntry], LogError> {
        let end = self.end_offset();
        if from < self.start || from > end {
            return Err(LogError::OutOfRange {
                offset: from,
                start: self.start,
                end,
            });
        }
        let first = self.index.partition_point(|e| e.next_offset <= from);
        let mut size = 0usize;
        let mut count = 0;
        for entry in &self.index[first..] {
            if count > 0 && size + entry.len as usize > max_bytes {
                break;
            }
            size += entry.len as usize;
            count += 1;
        }
        Ok(&self.index[first..first + count])
    }

    fn read_entry_bytes(&self, entry: &IndexEntry) -> Result<Bytes, LogError> {
        let segment = &self.segments[entry.segment];
        let mut buf = vec![0u8; entry.len as usize];
        segment
            .file
            .read_exact_at(&mut buf, entry.position)
            .map_err(io_at(&segment.path))?;
        Ok(Bytes::from(buf))
    }

    fn read_entry(&self, entry: &IndexEntry) -> Result<Vec<Batch>, LogError> {
        records::decode_batches(self.read_entry_bytes(entry)?).map_err(|e| LogError::Corrupt {
            offset: entry.base_offset,
            reason: e.to_string(),
        })
    }

    /// The whole log as the core's in-memory view (`Node::new`): every batch with its stored bytes
    /// (CRC-checked), all of it durable. The node's shell then keeps this log equal to the view by
    /// applying the core's log effects.
    pub fn load_view(&self) -> Result<MemoryLog, LogError> {
        self.load_view_after(0)
    }

    /// As [`load_view`](Self::load_view) for a log that starts after a snapshot of epoch `start_epoch`
    /// (the view's last epoch while it holds no batch).
    pub fn load_view_after(&self, start_epoch: i32) -> Result<MemoryLog, LogError> {
        let mut batches = Vec::with_capacity(self.index.len());
        for entry in &self.index {
            let bytes = self.read_entry_bytes(entry)?;
            let decoded =
                records::decode_batches_with_bytes(bytes).map_err(|e| LogError::Corrupt {
                    offset: entry.base_offset,
                    reason: e.to_string(),
                })?;
            batches.extend(decoded.into_iter().map(|(batch, raw)| Replicated {
                batch,
                bytes: Some(raw),
            }));
        }
        let mut view = MemoryLog::starting_at(self.start, start_epoch);
        view.append_replicated(batches)?;
        view.flush()?;
        Ok(view)
    }

    /// Kafka's `truncateFullyAndStartAt` (after a snapshot download): every segment is deleted and the log
    /// starts, empty, at `offset` in a new segment. Durable on return. A crash part way leaves fewer
    /// segments, or none, and start-up truncates fully again to the snapshot that is newer than the log.
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<(), LogError> {
        if offset < 0 {
            return Err(LogError::OutOfRange {
                offset,
                start: self.start,
                end: self.end_offset(),
            });
        }
        for removed in self.segments.drain(..) {
            std::fs::remove_file(&removed.path).map_err(io_at(&removed.path))?;
        }
        self.index.clear();
        self.dirty_from = None;
        sync_dir(&self.dir).map_err(io_at(&self.dir))?;
        self.start = offset;
        self.create_segment(offset)?;
        sync_dir(&self.dir).map_err(io_at(&self.dir))?;
        self.dir_dirty = false;
        self.flushed = offset;
        Ok(())
    }

    /// Kafka's `deleteBeforeSnapshot` on the log: the start moves up to `offset` (at most the LEO) and the
    /// segments whose records are all below it are deleted (never the active one); a batch holding
    /// `offset` stays and is read whole, as Kafka serves it. Returns how many segments were deleted.
    pub fn advance_start(&mut self, offset: i64) -> Result<usize, LogError> {
        let end = self.end_offset();
        if offset < self.start || offset > end {
            return Err(LogError::OutOfRange {
                offset,
                start: self.start,
                end,
            });
        }
        self.start = offset;
        let dropped = self.index.partition_point(|e| e.next_offset <= offset);
        self.index.drain(..dropped);
        // A segment goes when the next one starts at or below the new start.
        let bases: Vec<i64> = self
            .segments
            .iter()
            .map(|s| segment_base(&s.path))
            .collect();
        let gone = (0..self.segments.len().saturating_sub(1))
            .take_while(|&i| bases[i + 1] <= offset)
            .count();
        for removed in self.segments.drain(..gone) {
            std::fs::remove_file(&removed.path).map_err(io_at(&removed.path))?;
        }
        if gone > 0 {
            for entry in &mut self.index {
                entry.segment -= gone;
            }
            self.dirty_from = self.dirty_from.map(|d| d.saturating_sub(gone));
            sync_dir(&self.dir).map_err(io_at(&self.dir))?;
        }
        self.flushed = self.flushed.max(offset);
        Ok(gone)
    }

    /// Bytes held in segment files (Kafka's `log.size()`, for retention by size).
    pub fn size_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.len).sum()
    }

    /// Segment files currently in use, oldest first (for tests and tools).
    pub fn segment_paths(&self) -> Vec<PathBuf> {
        self.segments.iter().map(|s| s.path.clone()).collect()
    }
}

impl RaftLog for FileLog {
    fn start_offset(&self) -> i64 {
        self.start
    }

    fn end_offset(&self) -> i64 {
        self.index.last().map_or(self.start, |e| e.next_offset)
    }

    fn last_epoch(&self) -> i32 {
        self.index.last().map_or(0, |e| e.epoch)
    }

    fn append_as_leader(
        &mut self,
        epoch: i32,
        append_time: crate::time::WallMillis,
        records: Vec<Record>,
    ) -> Result<i64, LogError> {
        let batch = Batch {
            base_offset: self.end_offset(),
            epoch,
            append_time,
            records,
        };
        self.check_append(&batch, self.end_offset(), self.last_epoch())?;
        self.write_batch(&batch)?;
        Ok(batch.base_offset)
    }

    fn append_as_follower(&mut self, batches: Vec<Batch>) -> Result<(), LogError> {
        // Validate the whole sequence first so a bad batch leaves the log unchanged.
        let (mut end, mut last) = (self.end_offset(), self.last_epoch());
        for batch in &batches {
            self.check_append(batch, end, last)?;
            end = batch.next_offset();
            last = batch.epoch;
        }
        for batch in &batches {
            self.write_batch(batch)?;
        }
        Ok(())
    }

    fn append_replicated(&mut self, batches: Vec<Replicated>) -> Result<(), LogError> {
        let (mut end, mut last) = (self.end_offset(), self.last_epoch());
        for r in &batches {
            self.check_append(&r.batch, end, last)?;
            end = r.batch.next_offset();
            last = r.batch.epoch;
        }
        for r in &batches {
            match &r.bytes {
                Some(bytes) => self.write_encoded(&r.batch, bytes)?,
                None => self.write_batch(&r.batch)?,
            }
        }
        Ok(())
    }

    fn truncate_to(&mut self, offset: i64) -> Result<(), LogError> {
        let end = self.end_offset();
        if offset < self.start {
            return Err(LogError::OutOfRange {
                offset,
                start: self.start,
                end,
            });
        }
        if offset >= end {
            return Ok(());
        }
        let keep = self.index.partition_point(|e| e.next_offset <= offset);
        // A batch straddling `offset` keeps its records below `offset`, rewritten in place.
        let partial = self
            .index
            .get(keep)
            .filter(|e| e.base_offset < offset)
            .copied();
        let mut rewritten = Vec::new();
        if let Some(entry) = partial {
            for mut batch in self.read_entry(&entry)? {
                batch
                    .records
                    .truncate((offset - batch.base_offset).max(0) as usize);
                if !batch.records.is_empty() {
                    rewritten.push(batch);
                }
            }
        }
        let cut = self.index.get(keep).map(|e| (e.segment, e.position));
        self.index.truncate(keep);
        if let Some((segment, position)) = cut {
            // Drop later segments; never the first one, which is truncated instead.
            let keep_segments = if position == 0 && segment > 0 {
                segment
            } else {
                segment + 1
            };
            for removed in self.segments.drain(keep_segments..) {
                std::fs::remove_file(&removed.path).map_err(io_at(&removed.path))?;
            }
            let last = self.segments.len() - 1;
            let len = if last == segment {
                position
            } else {
                self.segments[last].len
            };
            let seg = &mut self.segments[last];
            seg.file.set_len(len).map_err(io_at(&seg.path))?;
            seg.len = len;
            for batch in &rewritten {
                self.write_batch(batch)?;
            }
            // Truncation is made durable at once: a crash must not resurrect a removed suffix.
            for seg in &self.segments[last..] {
                seg.file.sync_all().map_err(io_at(&seg.path))?;
            }
            sync_dir(&self.dir).map_err(io_at(&self.dir))?;
        }
        self.flushed = self.flushed.min(offset);
        Ok(())
    }

    fn read(&self, from: i64, max_bytes: usize) -> Result<Vec<Batch>, LogError> {
        let mut out = Vec::new();
        for entry in self.entries_to_read(from, max_bytes)? {
            out.extend(self.read_entry(entry)?);
        }
        Ok(out)
    }

    fn read_bytes(&self, from: i64, max_bytes: usize) -> Result<Bytes, LogError> {
        let mut out = BytesMut::new();
        for entry in self.entries_to_read(from, max_bytes)? {
            let bytes = self.read_entry_bytes(entry)?;
            // CRC and structure are checked on every read, as `read` does.
            records::decode_batches(bytes.clone()).map_err(|e| LogError::Corrupt {
                offset: entry.base_offset,
                reason: e.to_string(),
            })?;
            out.extend_from_slice(&bytes);
        }
        Ok(out.freeze())
    }

    fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        let first = self.index.first()?;
        let after = self.index.partition_point(|e| e.epoch <= epoch);
        if after == 0 {
            return Some((epoch, first.base_offset));
        }
        let found = self.index[after - 1].epoch;
        let end = self
            .index
            .get(after)
            .map_or(self.end_offset(), |e| e.base_offset);
        Some((found, end))
    }

    fn flush(&mut self) -> Result<(), LogError> {
        if let Some(from) = self.dirty_from.take() {
            // Truncation may have removed segments since the write; clamp to the ones left.
            let from = from.min(self.segments.len() - 1);
            for segment in &self.segments[from..] {
                segment.file.sync_data().map_err(io_at(&segment.path))?;
            }
        }
        if self.dir_dirty {
            sync_dir(&self.dir).map_err(io_at(&self.dir))?;
            self.dir_dirty = false;
        }
        self.flushed = self.end_offset();
        Ok(())
    }

    fn flushed_offset(&self) -> i64 {
        self.flushed
    }
}
