//! The metadata log directory as a whole: the segments ([`FileLog`]) and the snapshot files beside them, kept
//! consistent through crashes the way Kafka's `KafkaRaftLog` does.
//!
//! Start-up ([`MetadataLog::open`], Kafka's `createLog`): the log start is the first segment's base offset;
//! `.checkpoint.part` files (a download or a snapshot write cut short: Kafka deletes them, and the
//! download starts again from the leader's next answer), `.checkpoint.deleted` files and snapshots that end
//! below the log start are deleted; every remaining snapshot is checked whole (a bad one stops the node with
//! an error naming it: it is never loaded); then, if the latest snapshot is newer than the log (a later epoch,
//! or the same epoch past the log end: a follower that crashed between installing a snapshot and truncating
//! its log), the log is truncated fully to it. The bootstrap snapshot (0, 0) is never deleted here: `kraft
//! node` reads it at every start (Kafka deletes it once the log start passes 0).

use std::path::{Path, PathBuf};

use super::snapshot_file::{
    delete_snapshot, list_snapshots, read_snapshot_meta, scan_snapshot, snapshot_path,
    PartialSnapshot, SnapshotError, SnapshotWriter,
};
use super::{FileLog, StorageError};
use crate::log::{RaftLog, Record};
use crate::records::{SnapshotFileKind, SnapshotId, SnapshotInfo};
use crate::voter_set::VoterSet;

/// A metadata log directory: segments and snapshots.
pub struct MetadataLog {
    pub log: FileLog,
    dir: PathBuf,
    /// Complete snapshots other than the bootstrap one, oldest first.
    snapshots: Vec<SnapshotInfo>,
    /// The download in progress, if any.
    download: Option<PartialSnapshot>,
}

/// Whether start-up keeps the snapshot file `id` of `kind` beside a log starting at `log_start`: only a
/// complete snapshot (`.checkpoint`) that reaches the log start, or the bootstrap one. A `.checkpoint.part`
/// (a download cut short) or a `.checkpoint.deleted` is deleted: a download starts again from position 0.
pub fn kept_at_start(id: SnapshotId, kind: SnapshotFileKind, log_start: i64) -> bool {
    kind == SnapshotFileKind::Checkpoint
        && (id.end_offset >= log_start || id == SnapshotId::BOOTSTRAP)
}

impl MetadataLog {
    /// Opens `dir` as Kafka's `createLog` does (see the module comment).
    pub fn open(dir: &Path) -> Result<MetadataLog, StorageError> {
        Self::with_log(dir, FileLog::open(dir)?)
    }

    /// As [`open`](Self::open), starting a new segment once the active one reaches `segment_bytes`.
    pub fn open_with_segment_bytes(
        dir: &Path,
        segment_bytes: u64,
    ) -> Result<MetadataLog, StorageError> {
        Self::with_log(dir, FileLog::open_with_segment_bytes(dir, segment_bytes)?)
    }

    /// As [`open`](Self::open), with a log already opened on `dir`.
    pub fn with_log(dir: &Path, log: FileLog) -> Result<MetadataLog, StorageError> {
        let start = log.start_offset();
        let mut snapshots = Vec::new();
        for (id, kind) in list_snapshots(dir)? {
            let bootstrap = id == SnapshotId::BOOTSTRAP;
            if !kept_at_start(id, kind, start) {
                let path = snapshot_path(dir, id, kind);
                tracing::info!(file = %path.display(), "deleting unneeded snapshot file");
                std::fs::remove_file(&path).map_err(|source| StorageError::Io { path, source })?;
            } else if !bootstrap {
                snapshots.push(read_snapshot_meta(&snapshot_path(dir, id, kind))?);
            }
        }
        if start > 0 && snapshots.last().is_none_or(|s| s.id.end_offset < start) {
            return Err(StorageError::Corrupt {
                path: log
                    .segment_paths()
                    .first()
                    .cloned()
                    .unwrap_or(dir.to_path_buf()),
                reason: format!(
                    "the log starts at {start} but no snapshot reaches it (latest: {:?})",
                    snapshots.last().map(|s| s.id)
                ),
            });
        }
        let mut this = MetadataLog {
            log,
            dir: dir.to_path_buf(),
            snapshots,
            download: None,
        };
        this.truncate_to_latest_snapshot()?;
        Ok(this)
    }

    /// Complete snapshots other than the bootstrap one, oldest first.
    pub fn snapshots(&self) -> &[SnapshotInfo] {
        &self.snapshots
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The epoch of the snapshot the log starts at, if one ends there: the last epoch of an empty log.
    pub fn start_epoch(&self) -> i32 {
        let start = self.log.start_offset();
        self.snapshots
            .iter()
            .rev()
            .find(|s| s.id.end_offset == start)
            .map_or(0, |s| s.id.epoch)
    }

    /// The core's view of the log (see [`FileLog::load_view`]), starting at the log start.
    pub fn load_view(&self) -> Result<crate::log::MemoryLog, crate::log::LogError> {
        self.log.load_view_after(self.start_epoch())
    }

    /// Kafka's `truncateToLatestSnapshot`: when the latest snapshot is newer than the log, the log is
    /// truncated fully to it and the older snapshots are deleted. Returns whether it truncated.
    pub fn truncate_to_latest_snapshot(&mut self) -> Result<bool, StorageError> {
        let Some(latest) = self.snapshots.last().map(|s| s.id) else {
            return Ok(false);
        };
        let (last_epoch, end) = (self.log.last_epoch(), self.log.end_offset());
        if latest.epoch > last_epoch || (latest.epoch == last_epoch && latest.end_offset > end) {
            tracing::info!(snapshot = %latest, log_end = end, "truncating the log fully to the latest snapshot");
            self.log.truncate_fully_and_start_at(latest.end_offset)?;
            self.forget_snapshots_before(latest)?;
            return Ok(true);
        }
        Ok(false)
    }

    fn forget_snapshots_before(&mut self, id: SnapshotId) -> Result<(), StorageError> {
        while self.snapshots.first().is_some_and(|s| s.id < id) {
            let old = self.snapshots.remove(0);
            delete_snapshot(&self.dir, old.id)?;
        }
        Ok(())
    }

    /// A chunk of a download: position 0 starts (or restarts) `<id>.checkpoint.part`; any other position
    /// must continue the download in progress of the same id.
    pub fn write_snapshot_chunk(
        &mut self,
        id: SnapshotId,
        position: u64,
        bytes: &[u8],
    ) -> Result<(), SnapshotError> {
        if position == 0 {
            tracing::info!(snapshot = %id, "snapshot download started");
            if let Some(old) = self.download.take() {
                old.abandon()?;
            }
            self.download = Some(PartialSnapshot::create(&self.dir, id)?);
        }
        match self.download.as_mut().filter(|d| d.id() == id) {
            Some(part) => part.append(position, bytes),
            None => Err(SnapshotError::Position {
                path: snapshot_path(&self.dir, id, SnapshotFileKind::Partial),
                position,
                written: 0,
            }),
        }
    }

    /// Gives up the download of `id` (its `.part` file is deleted).
    pub fn abort_download(&mut self, id: SnapshotId) -> Result<(), SnapshotError> {
        match self.download.take() {
            Some(part) if part.id() == id => part.abandon(),
            other => {
                self.download = other;
                Ok(())
            }
        }
    }

    /// Completes the download of `id` at `size` bytes: durable, checked whole, renamed; then the log is
    /// truncated fully to it as Kafka's follower does (`truncateToLatestSnapshot`). A file that fails a
    /// check is deleted and the error names it; the log is then left alone.
    pub fn complete_download(
        &mut self,
        id: SnapshotId,
        size: u64,
    ) -> Result<SnapshotInfo, StorageError> {
        let path = snapshot_path(&self.dir, id, SnapshotFileKind::Partial);
        let part = match self.download.take() {
            Some(part) if part.id() == id => part,
            other => {
                self.download = other;
                return Err(SnapshotError::Unwritable {
                    id,
                    reason: "no download of it is in progress".into(),
                }
                .into());
            }
        };
        if part.written() != size {
            let written = part.written();
            part.abandon()?;
            return Err(SnapshotError::Position {
                path,
                position: size,
                written,
            }
            .into());
        }
        let info = part.complete()?;
        self.insert(info.clone());
        self.truncate_to_latest_snapshot()?;
        Ok(info)
    }

    fn insert(&mut self, info: SnapshotInfo) {
        match self.snapshots.binary_search_by_key(&info.id, |s| s.id) {
            Ok(i) => self.snapshots[i] = info,
            Err(i) => self.snapshots.insert(i, info),
        }
    }

    /// Writes a snapshot of our own log up to `id.end_offset` (a batch boundary in the log, at most its
    /// end): the previous snapshot's data records and the log's after it, by `DataRule`. `voters` and
    /// `kraft_version` are those as of `id.end_offset − 1`; `last_contained_log_timestamp` goes in the
    /// header (the core's: the append time of the batch ending at `id.end_offset`, Kafka's
    /// `lastContainedLogTimeMs`); `append_time` (wall clock) stamps the batches.
    pub fn take_snapshot(
        &mut self,
        id: SnapshotId,
        last_contained_log_timestamp: i64,
        kraft_version: i16,
        voters: Option<&VoterSet>,
        append_time: i64,
    ) -> Result<SnapshotInfo, StorageError> {
        let refuse =
            |reason: String| StorageError::Snapshot(SnapshotError::Unwritable { id, reason });
        let (start, end) = (self.log.start_offset(), self.log.end_offset());
        if self.snapshots.iter().any(|s| s.id == id) {
            return Err(refuse("it exists already".into()));
        }
        let previous = self
            .snapshots
            .iter()
            .rev()
            .find(|s| s.id.end_offset <= id.end_offset)
            .map(|s| s.id);
        let from = previous.map_or(start, |p| p.end_offset);
        if from < start || id.end_offset > end || id.end_offset < from {
            return Err(refuse(format!(
                "the log holds [{start}, {end}) and the records from {from} are needed"
            )));
        }
        let mut writer = SnapshotWriter::create(
            &self.dir,
            id,
            last_contained_log_timestamp,
            kraft_version,
            voters,
            append_time,
        )?;
        let fed = self.feed_snapshot_data(&mut writer, id, previous, from);
        if let Err(e) = fed {
            writer.abandon()?;
            return Err(e);
        }
        let info = writer.finish()?;
        self.insert(info.clone());
        Ok(info)
    }

    /// Feeds `writer` the previous snapshot's data records, then the log's in `[from, id.end_offset)`.
    fn feed_snapshot_data(
        &self,
        writer: &mut SnapshotWriter,
        id: SnapshotId,
        previous: Option<SnapshotId>,
        from: i64,
    ) -> Result<(), StorageError> {
        let refuse =
            |reason: String| StorageError::Snapshot(SnapshotError::Unwritable { id, reason });
        if let Some(previous) = previous {
            writer.feed_snapshot(&snapshot_path(
                &self.dir,
                previous,
                SnapshotFileKind::Checkpoint,
            ))?;
        }
        let mut at = from;
        while at < id.end_offset {
            let batches = self.log.read(at, 1 << 20)?;
            let Some(first) = batches.first() else { break };
            if first.base_offset > at {
                return Err(refuse(format!("the log has no batch at {at}")));
            }
            for batch in &batches {
                for (offset, record) in (batch.base_offset..).zip(&batch.records) {
                    if (at..id.end_offset).contains(&offset) {
                        if let Record::Data(value) = record {
                            writer.feed(value.clone())?;
                        }
                    }
                }
                if batch.base_offset < id.end_offset && batch.next_offset() > id.end_offset {
                    return Err(refuse(format!(
                        "its end is inside the batch at {}",
                        batch.base_offset
                    )));
                }
                at = at.max(batch.next_offset());
            }
        }
        Ok(())
    }

    /// Kafka's `deleteBeforeSnapshot`: the log starts at `offset` (a held snapshot's end), the segments
    /// wholly below it and the snapshots ending below it are deleted (segments first, so a crash between
    /// leaves start-up to delete the snapshots).
    pub fn move_log_start(&mut self, offset: i64) -> Result<(), StorageError> {
        let Some(id) = self
            .snapshots
            .iter()
            .find(|s| s.id.end_offset == offset)
            .map(|s| s.id)
        else {
            return Err(StorageError::Snapshot(SnapshotError::Unwritable {
                id: SnapshotId {
                    end_offset: offset,
                    epoch: 0,
                },
                reason: "the log start can only move to a held snapshot's end".into(),
            }));
        };
        if offset <= self.log.start_offset() {
            return Ok(());
        }
        let deleted = self.log.advance_start(offset)?;
        tracing::info!(
            log_start = offset,
            segments_deleted = deleted,
            "log start moved to a snapshot's end"
        );
        self.forget_snapshots_before(id)
    }

    /// Reads every data record of snapshot `id` (for tools and tests).
    pub fn snapshot_data(&self, id: SnapshotId) -> Result<Vec<bytes::Bytes>, SnapshotError> {
        let mut out = Vec::new();
        scan_snapshot(
            &snapshot_path(&self.dir, id, SnapshotFileKind::Checkpoint),
            |batch| {
                for record in &batch.records {
                    if let crate::records::SnapshotRecord::Data(v) = record {
                        out.push(v.clone());
                    }
                }
                Ok(())
            },
        )?;
        Ok(out)
    }
}
