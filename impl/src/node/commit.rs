//! The log as the leader grows it and the HW commits it; control records read into the histories.

use crate::history::HistoryError;
use crate::log::{Batch, LogError, RaftLog, Record, Replicated};

use super::membership::ChangeOutcome;
use super::types::*;
use super::{Node, RoleState};

impl Node {
    /// Reads control records appended since the last call into the voter-set and kraft.version histories.
    pub(super) fn load_control_records(&mut self) -> Result<(), LogError> {
        let end = self.log.end_offset();
        if self.history_next_offset >= end {
            self.history_next_offset = end;
            return Ok(());
        }
        let from = self.history_next_offset.max(self.log.start_offset());
        for batch in self.log.read(from, usize::MAX)? {
            for (i, record) in batch.records.iter().enumerate() {
                let offset = batch.base_offset + i as i64;
                if offset < from {
                    continue;
                }
                let corrupt = |e: HistoryError| LogError::Corrupt {
                    offset,
                    reason: e.to_string(),
                };
                match record {
                    Record::Voters(set) => {
                        self.history.add_at(offset, set.clone()).map_err(corrupt)?
                    }
                    Record::KRaftVersion(v) => {
                        self.kraft_versions.add_at(offset, *v).map_err(corrupt)?
                    }
                    _ => {}
                }
            }
        }
        self.history_next_offset = end;
        Ok(())
    }

    /// Truncates the view and has the shell truncate the durable log.
    pub(super) fn truncate_log(&mut self, offset: i64, out: &mut Output) -> Result<(), LogError> {
        self.log.truncate_to(offset)?;
        out.effects.push(Effect::TruncateLog(offset));
        self.history.truncate_new_entries(offset);
        self.kraft_versions.truncate_new_entries(offset.max(0));
        self.history_next_offset = self.history_next_offset.min(self.log.end_offset());
        Ok(())
    }

    /// Has the shell append `batches` (just appended to the view) to the durable log and flush it.
    pub(super) fn persist_appended(&mut self, batches: Vec<Replicated>, out: &mut Output) {
        let up_to = self.log.end_offset();
        out.effects.push(Effect::AppendLog(batches));
        out.effects.push(Effect::FlushLog { up_to });
    }

    /// Appends one batch in the leader's epoch and has the shell persist it; the leader's own end counts
    /// toward the HW at once (see [`Node::update_leader_end`]).
    pub(super) fn leader_append(
        &mut self,
        now: Millis,
        records: Vec<Record>,
        out: &mut Output,
    ) -> Result<i64, LogError> {
        let epoch = self.election.epoch;
        let append_time = self.wall_time(now);
        let offset = self
            .log
            .append_as_leader(epoch, append_time, records.clone())?;
        let batch = Batch {
            base_offset: offset,
            epoch,
            append_time,
            records,
        };
        self.persist_appended(vec![Replicated { batch, bytes: None }], out);
        self.load_control_records()?;
        self.update_leader_end(now, true, out);
        Ok(offset)
    }

    /// Counts the leader's log end and its latest voter set toward the HW (and, after an append,
    /// re-evaluates the check-quorum window). The end counts before the shell's flush completes, as in
    /// Kafka 4.4 (`flushLeaderLog` calls `updateLeaderEndOffsetAndTimestamp` before `log.flush`): nothing
    /// that shows the new HW leaves the node before that flush is durable, because the shell sends an
    /// output only once its effects and every earlier output's are durable (shell contract, rule 1).
    pub(super) fn update_leader_end(&mut self, now: Millis, check_quorum: bool, out: &mut Output) {
        let end = self.log.end_offset();
        let latest = self.history.latest().clone();
        let advanced = match &mut self.role {
            RoleState::Leader(l) => {
                let advanced = l.update_local_end_offset(end, &latest);
                if check_quorum {
                    l.update_check_quorum(now, self.config.check_quorum_timeout_ms);
                }
                advanced
            }
            _ => return,
        };
        if advanced {
            self.on_leader_hw_advanced(now, out);
        }
    }

    /// The HW moved: complete the pending change once the HW passes its record; resign once this
    /// leader's own removal is committed.
    pub(super) fn on_leader_hw_advanced(&mut self, now: Millis, out: &mut Output) {
        let Some(hw) = self.high_watermark() else {
            return;
        };
        self.maybe_take_snapshot(now, out);
        self.on_features_hw(hw, out);
        if let Some(p) = self.pending.as_ref().filter(|p| hw > p.offset).cloned() {
            self.pending = None;
            self.reply_change(p.client, p.kind, p.key, ChangeOutcome::Committed, out);
        }
        let removal_committed = self.history.latest_entry().is_some_and(|(o, _)| o < hw);
        if !self.is_voter() && removal_committed {
            tracing::info!(node = self.local.id, "own removal committed; resigning");
            self.become_resigned(now, out);
        }
    }
}
