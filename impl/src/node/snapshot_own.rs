//! Snapshots of this replica's own log and the log start (KIP-630), decided by the core and carried out by
//! the shell as effects. Triggers as Kafka 4.4's `SnapshotGenerator` (every replica, leader or not, once
//! the bytes committed since the last snapshot reach `metadata.log.max.record.bytes.between.snapshots`
//! or the time since it reaches `metadata.log.max.snapshot.interval.ms`; checked when the HW moves, at
//! the last whole batch below the HW), retention as Kafka's `KafkaRaftLog.maybeClean` (every 60 s: with
//! at least two snapshots, while the log and snapshots exceed `metadata.max.retention.bytes` or the
//! oldest snapshot's `LastContainedLogTimestamp` is more than `metadata.max.retention.ms` before the wall
//! clock, the log start moves to the next snapshot's end and the older snapshot goes).

use crate::log::{approximate_size, RaftLog, SnapshotId};

use super::types::*;
use super::Node;

/// When this replica last took a snapshot and when it next checks retention.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OwnSnapshots {
    /// Kafka's `lastSnapshotTimeNs` (the node's start counts as one).
    pub last_snapshot_at: Option<Millis>,
    pub next_clean_at: Option<Millis>,
}

impl Node {
    /// Starts the snapshot clocks at the first input (the node's start, as Kafka's generator's).
    pub(super) fn start_snapshot_clocks(&mut self, now: Millis) {
        if !self.config.snapshots.enabled || self.own.last_snapshot_at.is_some() {
            return;
        }
        self.own.last_snapshot_at = Some(now);
        self.own.next_clean_at = Some(now + self.config.snapshots.clean_interval_ms);
        let wall = self.wall_time(now);
        self.snapshots.date_undescribed_bootstrap(wall);
    }

    /// The committed end a snapshot may be taken at now: the end of the last whole batch at or below the
    /// HW, with that batch's epoch, and that batch's append time (the snapshot's
    /// `LastContainedLogTimestamp`, Kafka's `lastContainedLogTimeMs`).
    fn committed_batch_end(&self) -> Option<(SnapshotId, WallMillis)> {
        let hw = self.high_watermark()?;
        let batches = self.log.batches();
        let i = batches.partition_point(|b| b.next_offset() <= hw);
        let b = batches.get(i.checked_sub(1)?)?;
        let id = SnapshotId {
            end_offset: b.next_offset(),
            epoch: b.epoch,
        };
        Some((id, b.append_time))
    }

    /// [`Harness::take_snapshot_now`](super::Harness::take_snapshot_now).
    pub(super) fn take_snapshot_on_command(&mut self, now: Millis) -> Output {
        self.adopt_clock(now);
        let mut out = Output::default();
        if let Some(point) = self.snapshot_point() {
            self.write_snapshot(now, point, 0, false, &mut out);
        }
        self.finish(now, &mut out);
        out
    }

    /// [`Harness::clean_now`](super::Harness::clean_now).
    pub(super) fn clean_on_command(&mut self, now: Millis) -> Output {
        self.adopt_clock(now);
        let mut out = Output::default();
        self.own.next_clean_at = Some(now);
        self.maybe_clean(now, &mut out);
        self.finish(now, &mut out);
        out
    }

    /// Where a snapshot may be taken now: the committed batch end, past the latest snapshot and the log
    /// start, while no snapshot is being written or installed.
    fn snapshot_point(&self) -> Option<(SnapshotId, WallMillis)> {
        if self.taking.is_some() || self.installing.is_some() {
            return None;
        }
        let (id, last_time) = self.committed_batch_end()?;
        let last_end = self
            .snapshots
            .latest()
            .map_or(self.log.start_offset(), |m| m.id.end_offset)
            .max(self.log.start_offset());
        (id.end_offset > last_end).then_some((id, last_time))
    }

    /// After the HW moved: take a snapshot if a trigger is due.
    pub(super) fn maybe_take_snapshot(&mut self, now: Millis, out: &mut Output) {
        let cfg = &self.config.snapshots;
        if !cfg.enabled {
            return;
        }
        let Some(point) = self.snapshot_point() else {
            return;
        };
        let id = point.0;
        let last_end = self
            .snapshots
            .latest()
            .map_or(self.log.start_offset(), |m| m.id.end_offset)
            .max(self.log.start_offset());
        let bytes: u64 = self
            .log
            .batches()
            .iter()
            .filter(|b| b.base_offset >= last_end && b.next_offset() <= id.end_offset)
            .map(|b| approximate_size(b) as u64)
            .sum();
        let by_bytes = bytes >= cfg.max_record_bytes_between_snapshots.max(1);
        let by_time = cfg.max_snapshot_interval_ms > 0
            && self
                .own
                .last_snapshot_at
                .is_some_and(|t| now.saturating_sub(t) >= cfg.max_snapshot_interval_ms);
        if !(by_bytes || by_time) {
            return;
        }
        self.write_snapshot(now, point, bytes, by_time, out);
    }

    /// Asks the shell to write snapshot `id` with the kraft.version and voter set at its last offset and
    /// its last batch's append time.
    fn write_snapshot(
        &mut self,
        now: Millis,
        (id, last_contained_log_timestamp): (SnapshotId, WallMillis),
        bytes: u64,
        by_time: bool,
        out: &mut Output,
    ) {
        let at = id.end_offset - 1;
        let kraft_version = self
            .kraft_versions
            .at_or_before(at)
            .map_or(self.base_kraft_version, |(_, v)| *v);
        let voters = (kraft_version > 0)
            .then(|| self.history.at_or_before(at).map(|(_, s)| s.clone()))
            .flatten();
        tracing::info!(node = self.local.id, %id, bytes, by_time, "taking a snapshot");
        self.taking = Some(id);
        self.own.last_snapshot_at = Some(now);
        out.effects.push(Effect::TakeSnapshot {
            id,
            last_contained_log_timestamp,
            kraft_version,
            voters,
            append_time: self.wall_time(now),
        });
    }

    /// Kafka's `maybeClean`, when its interval is due: moves the log start by the retention rules.
    pub(super) fn maybe_clean(&mut self, now: Millis, out: &mut Output) {
        let cfg = self.config.snapshots.clone();
        if !cfg.enabled || self.own.next_clean_at.is_none_or(|t| now < t) {
            return;
        }
        self.own.next_clean_at = Some(now + cfg.clean_interval_ms);
        if self.installing.is_some() {
            return;
        }
        if cfg.max_retention_bytes >= 0 {
            let log_size: u64 = self
                .log
                .batches()
                .iter()
                .map(|b| approximate_size(b) as u64)
                .sum();
            let mut total: u64 = self.snapshots.iter().map(|m| m.size).sum();
            loop {
                let held: Vec<_> = self.snapshots.iter().take(2).cloned().collect();
                let [oldest, next] = held.as_slice() else {
                    break;
                };
                if log_size + total <= cfg.max_retention_bytes as u64 {
                    break;
                }
                total -= oldest.size;
                if !self.delete_before_snapshot(next.id, out) {
                    break;
                }
            }
        }
        if cfg.max_retention_ms >= 0 {
            // Kafka's `cleanSnapshotsRetentionMs`: the oldest snapshot's age on the wall clock.
            let wall = self.wall_time(now);
            loop {
                let held: Vec<_> = self.snapshots.iter().take(2).cloned().collect();
                let [oldest, next] = held.as_slice() else {
                    break;
                };
                let age = wall.saturating_sub(oldest.last_contained_log_timestamp);
                if age <= cfg.max_retention_ms || !self.delete_before_snapshot(next.id, out) {
                    break;
                }
            }
        }
    }

    /// Kafka's `deleteBeforeSnapshot` for a held snapshot `id` (retention passes the second oldest, so it
    /// is within the latest): the log starts at `id`'s end if that is past the current start; older
    /// snapshots are forgotten. Returns whether the start moved.
    fn delete_before_snapshot(&mut self, id: SnapshotId, out: &mut Output) -> bool {
        if !self.log.advance_start(id.end_offset, id.epoch) {
            return false;
        }
        tracing::info!(node = self.local.id, %id, "log start moved to a snapshot");
        self.snapshots.forget_before(id);
        // Keep the entries in force at the snapshot's last offset: the committed voter set is read at
        // HW − 1, which may be `end − 1` when the HW is the new log start.
        self.history.trim_old_entries(id.end_offset - 1);
        self.kraft_versions.trim_old_entries(id.end_offset - 1);
        out.effects.push(Effect::MoveLogStart {
            offset: id.end_offset,
        });
        true
    }

    /// The next retention check, when own snapshots are on.
    pub(super) fn clean_deadline(&self) -> Option<Millis> {
        self.own.next_clean_at
    }
}
