//! Fetch, both sides: the follower's request and response handling, the leader's answer.

use bytes::Bytes;
use kafka_protocol::messages::{FetchRequest, FetchResponse};
use kafka_protocol::protocol::StrBytes;

use crate::log::RaftLog;
use crate::voter_set::ReplicaKey;

use super::fetch_wait::FetchArgs;
use super::messages::{self, errors, METADATA_PARTITION};
use super::types::*;
use super::{Node, RoleState};

/// The most record bytes one Fetch response carries (Kafka's KRaft fetch size, 8 MiB); a single larger
/// batch is still served whole.
pub const MAX_FETCH_BYTES: usize = 8 * 1024 * 1024;

impl Node {
    pub(super) fn send_fetch(&mut self, now: Millis, out: &mut Output) {
        self.send_fetch_to(now, None, out)
    }

    /// [`Harness::fetch_from`](super::Harness::fetch_from).
    pub(super) fn fetch_on_command(&mut self, now: Millis, to: i32) -> Output {
        self.adopt_clock(now);
        let mut out = Output::default();
        let allowed = match self.role {
            RoleState::Follower { leader, .. } => leader == to,
            RoleState::Unattached => !self.is_voter() && to != self.local.id,
            _ => false,
        };
        if allowed {
            self.outstanding_fetch = None;
            self.send_fetch_to(now, Some(to), &mut out);
        }
        self.finish(now, &mut out);
        out
    }

    pub(super) fn send_fetch_to(&mut self, now: Millis, target: Option<i32>, out: &mut Output) {
        use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
        use kafka_protocol::messages::BrokerId;
        if self.installing.is_some() {
            self.next_fetch_at = None;
            return;
        }
        if let (RoleState::Follower { leader, .. }, Some(d)) = (&self.role, self.downloading()) {
            let leader = *leader;
            self.send_fetch_snapshot(now, leader, d, out);
            return;
        }
        let to = match self.role {
            RoleState::Follower { leader, .. } => leader,
            RoleState::Unattached if !self.is_voter() && target.is_some() => {
                target.unwrap_or_default()
            }
            RoleState::Unattached if !self.is_voter() => {
                // Kafka's observer asks its bootstrap servers; without any configured, the voters.
                let others: Vec<i32> = if self.config.bootstrap_servers.is_empty() {
                    self.history
                        .latest()
                        .ids()
                        .filter(|&id| id != self.local.id)
                        .collect()
                } else {
                    (0..self.config.bootstrap_servers.len())
                        .map(bootstrap_server_id)
                        .collect()
                };
                if others.is_empty() {
                    self.next_fetch_at = None;
                    return;
                }
                others[self.bootstrap_cursor % others.len()]
            }
            _ => {
                self.next_fetch_at = None;
                return;
            }
        };
        let fetch = OutstandingFetch {
            to,
            epoch: self.election.epoch,
            fetch_offset: self.log.end_offset(),
            last_fetched_epoch: self.log.last_epoch(),
            sent_at: now,
        };
        let req = FetchRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(self.config.cluster_id.clone())))
            .with_replica_state(ReplicaState::default().with_replica_id(BrokerId(self.local.id)))
            .with_max_wait_ms(i32::try_from(self.config.fetch_max_wait_ms).unwrap_or(i32::MAX))
            .with_max_bytes(MAX_FETCH_BYTES as i32)
            .with_topics(vec![FetchTopic::default()
                .with_topic(messages::topic_name())
                .with_topic_id(messages::METADATA_TOPIC_ID)
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(METADATA_PARTITION)
                    .with_current_leader_epoch(fetch.epoch)
                    .with_fetch_offset(fetch.fetch_offset)
                    .with_last_fetched_epoch(fetch.last_fetched_epoch)
                    .with_log_start_offset(self.log.start_offset())
                    // KIP-1166 (v18): the HW this replica knows, -1 if none.
                    .with_high_watermark(self.high_watermark().unwrap_or(-1))
                    .with_replica_directory_id(self.local.directory_or_nil())])]);
        self.outstanding_fetch = Some(fetch);
        self.next_fetch_at = None;
        self.maybe_send_update_voter(now, out);
        self.maybe_send_auto_join(now, out);
        out.requests.push((to, Message::FetchRequest(req)));
    }

    /// Kafka's `validateOffsetAndEpoch`: `None` if the fetcher's log matches at `(fetch_offset,
    /// last_fetched_epoch)`, else the diverging `(epoch, end offset)` to truncate to.
    pub fn diverging_epoch(
        &self,
        fetch_offset: i64,
        last_fetched_epoch: i32,
    ) -> Option<(i32, i64)> {
        let (epoch, end) = self.end_offset_for_epoch(last_fetched_epoch);
        (epoch != last_fetched_epoch || fetch_offset > end).then_some((epoch, end))
    }

    /// `endOffsetForEpoch` with one answer for "nothing of epoch ≤ `epoch` here": `(0, log start)`.
    pub(super) fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        let start = self.log.start_offset();
        // Kafka's `endOffsetForEpoch` answers the snapshot the log starts at when no batch of epoch ≤
        // `epoch` is left (every batch is later, or the log is empty after a full truncation).
        let at_start = self
            .snapshots
            .iter()
            .find(|m| m.id.end_offset == start && m.id != crate::log::SnapshotId::BOOTSTRAP)
            .map_or((0, start), |m| (m.id.epoch, start));
        match self.log.end_offset_for_epoch(epoch) {
            // The log's "every batch is later" answer ends at its start: no record of epoch ≤ `epoch`.
            Some((_, end)) if end <= start => at_start,
            Some(found) => found,
            None => at_start,
        }
    }

    /// Where a follower truncates on DivergingEpoch{epoch, end} (Kafka's `truncateToEndOffset`): the
    /// smaller of `end` and its own end offset for `epoch`, never past its LEO.
    pub(super) fn truncation_offset(&self, diverging_epoch: i32, diverging_end: i64) -> i64 {
        let (_, local_end) = self.end_offset_for_epoch(diverging_epoch);
        diverging_end.min(local_end).min(self.log.end_offset())
    }

    /// The response skeleton of this node's current state (no HW, no records, no error).
    pub(super) fn fetch_response_base(&self) -> messages::FetchResponseParts {
        messages::FetchResponseParts {
            top_error: 0,
            error: 0,
            high_watermark: -1,
            leader_id: self.known_leader_or_sentinel(),
            leader_epoch: self.election.epoch,
            diverging: None,
            snapshot_id: None,
            records: None,
            echo: None,
            log_start_offset: self.log.start_offset(),
            leader_endpoint: self.leader_endpoint(),
        }
    }

    pub(super) fn on_fetch_request(
        &mut self,
        now: Millis,
        from: i32,
        req: FetchRequest,
        out: &mut Output,
    ) {
        // Responses to one requester leave in the order of its fetches: an earlier parked one first.
        self.answer_parked_fetches_of(now, from, out);
        let mut parts = self.fetch_response_base();
        let mut hw_advanced = false;
        let mut wait = None;
        'build: {
            if messages::cluster_id_mismatch(&req.cluster_id, &self.config.cluster_id) {
                parts.top_error = errors::INCONSISTENT_CLUSTER_ID;
                break 'build;
            }
            let Some(p) = messages::fetch_partition(&req) else {
                parts.top_error = errors::INVALID_REQUEST;
                break 'build;
            };
            let args = FetchArgs {
                replica: ReplicaKey::new(messages::fetch_replica_id(&req), p.replica_directory_id),
                echo: messages::FetchEcho {
                    epoch: p.current_leader_epoch,
                    fetch_offset: p.fetch_offset,
                    last_fetched_epoch: p.last_fetched_epoch,
                },
                max_bytes: usize::try_from(req.max_bytes).unwrap_or(0),
                follower_hw: p.high_watermark,
            };
            parts.echo = Some(args.echo);
            // Kafka's request checks (`handleFetchRequest`). A negative replica id (−1: a reader that is
            // no replica) is served but not tracked (`LeaderState::update_replica`), as Kafka's is; the
            // leader's own id is refused where Kafka throws.
            if req.max_wait_ms < 0
                || p.fetch_offset < 0
                || p.last_fetched_epoch < 0
                || p.last_fetched_epoch > p.current_leader_epoch
                || args.replica.id == self.local.id
            {
                parts.error = errors::INVALID_REQUEST;
                break 'build;
            }
            hw_advanced = self.try_complete_fetch(now, &args, &mut parts);
            // Kafka answers at once an error, records, a diverging epoch, a requester that does not
            // wait, and a follower whose HW (KIP-1166) is behind the leader's; otherwise it waits.
            let answer_now = parts.error != errors::NONE
                || parts.records.as_ref().is_some_and(|r| !r.is_empty())
                || req.max_wait_ms == 0
                || parts.diverging.is_some()
                || parts.snapshot_id.is_some()
                || args.follower_hw < parts.high_watermark;
            if !answer_now {
                wait = Some((args, req.max_wait_ms));
            }
        }
        let high_watermark = parts.high_watermark;
        let response = messages::fetch_response(parts);
        match wait {
            Some((args, max_wait_ms)) => {
                self.park_fetch(now, from, args, max_wait_ms, high_watermark, response, out)
            }
            None => out.replies.push((from, Message::FetchResponse(response))),
        }
        if hw_advanced {
            self.on_leader_hw_advanced(now, out);
        }
    }

    /// Kafka's `tryCompleteFetchRequest`: the leader-only checks, the replica's progress, the HW and the
    /// records from the fetch offset, into `parts`. Returns whether the HW advanced.
    pub(super) fn try_complete_fetch(
        &mut self,
        now: Millis,
        args: &FetchArgs,
        parts: &mut messages::FetchResponseParts,
    ) -> bool {
        let p = args.echo;
        if let Some(code) = self.leader_only_error(p.epoch) {
            parts.error = code;
            return false;
        }
        // Kafka answers a snapshot id and no records, and leaves the replica's state (and check-quorum)
        // alone, as for a diverging epoch.
        if let Some(id) = self.snapshot_for_fetch(p.fetch_offset, p.last_fetched_epoch) {
            parts.snapshot_id = Some(id);
            parts.high_watermark = self.high_watermark().unwrap_or(-1);
            return false;
        }
        if let Some(diverging) = self.diverging_epoch(p.fetch_offset, p.last_fetched_epoch) {
            parts.diverging = Some(diverging);
            parts.high_watermark = self.high_watermark().unwrap_or(-1);
            return false;
        }
        if p.fetch_offset > self.log.end_offset() {
            parts.error = errors::INVALID_REQUEST;
            return false;
        }
        let mut hw_advanced = false;
        if let RoleState::Leader(l) = &mut self.role {
            hw_advanced = l.update_replica(args.replica, now, p.fetch_offset);
            l.update_check_quorum(now, self.config.check_quorum_timeout_ms);
        }
        parts.high_watermark = self.high_watermark().unwrap_or(-1);
        match self.read_suffix(p.fetch_offset, args.max_bytes) {
            Ok(records) => parts.records = records,
            Err(e) => {
                tracing::error!(node = self.local.id, error = %e, "cannot read the log for a fetch");
                parts.error = errors::UNKNOWN_SERVER_ERROR;
            }
        }
        hw_advanced
    }

    /// The stored batches from the one holding `from` towards the LEO, byte for byte as the log holds
    /// them (Kafka's leader also serves whole batches; the fetcher skips records below its LEO), at most
    /// the request's MaxBytes and [`MAX_FETCH_BYTES`] unless the first batch alone is larger (Kafka reads
    /// with `minOneMessage`): a follower far behind catches up over several fetches instead of one
    /// unbounded response.
    pub(super) fn read_suffix(&self, from: i64, max_bytes: usize) -> Result<Option<Bytes>, String> {
        if from >= self.log.end_offset() {
            return Ok(None);
        }
        self.log
            .read_bytes(from, max_bytes.min(MAX_FETCH_BYTES))
            .map(Some)
            .map_err(|e| e.to_string())
    }

    pub(super) fn on_fetch_response(
        &mut self,
        now: Millis,
        from: i32,
        resp: FetchResponse,
        out: &mut Output,
    ) {
        let Some(reply) = messages::read_fetch_response(&resp) else {
            return;
        };
        let Some(sent) = self.outstanding_fetch else {
            return;
        };
        let matches = from == sent.to
            && reply.echo.is_none_or(|e| {
                (e.epoch, e.fetch_offset, e.last_fetched_epoch)
                    == (sent.epoch, sent.fetch_offset, sent.last_fetched_epoch)
            });
        if !matches {
            return;
        }
        self.outstanding_fetch = None;
        if let Some((host, port)) = reply.leader_endpoint.clone() {
            self.learn_leader_endpoint(reply.leader_epoch, reply.leader_id, host, port);
        }
        if reply.error != errors::NONE {
            let before = (self.role(), self.election.epoch, self.leader_id());
            let follows = self.maybe_transition(now, reply.leader_epoch, reply.leader_id, out);
            if !follows {
                // Ask the next voter of the latest set (observers looking for the leader).
                self.bootstrap_cursor = self.bootstrap_cursor.wrapping_add(1);
            }
            let changed = before != (self.role(), self.election.epoch, self.leader_id());
            let fetching = matches!(self.role, RoleState::Follower { .. })
                || (self.role() == Role::Unattached && !self.is_voter());
            if fetching && !changed {
                // Same leader (or none) as before: retry after the fetch interval, not in a hot loop.
                self.next_fetch_at = Some(now + self.config.fetch_interval_ms);
            }
            return;
        }
        // A successful reply comes from the leader of the request's epoch; a bootstrap server (a peer id
        // ≤ −2, its node id unknown) is named by the reply's CurrentLeader, as Kafka reads it.
        let leader = if bootstrap_server_index(from).is_some() {
            reply.leader_id
        } else {
            from
        };
        if leader < 0
            || !self.maybe_transition(now, reply.leader_epoch, leader, out)
            || reply.leader_epoch != sent.epoch
        {
            return;
        }
        if let RoleState::Follower { fetched, .. } = &mut self.role {
            *fetched = true;
        }
        let mut progressed = false;
        if let Some((epoch, end_offset)) = reply.diverging {
            // Kafka applies no HW from a diverging reply: truncate, then fetch again.
            let target = self.truncation_offset(epoch, end_offset);
            if self.hw.is_some_and(|hw| target < hw) {
                tracing::error!(node = self.local.id, target, hw = ?self.hw, "diverging epoch below the HW ignored");
            } else if let Err(e) = self.truncate_log(target, out) {
                tracing::error!(node = self.local.id, error = %e, "truncation failed");
            } else {
                progressed = true;
            }
        } else if let Some(id) = reply.snapshot_id {
            match id {
                Ok(id) => self.start_download(id, out),
                Err((end_offset, epoch)) => {
                    // Kafka logs it and treats the answer as failed (no fetch-timeout reset).
                    tracing::error!(
                        node = self.local.id,
                        end_offset,
                        epoch,
                        "leader sent an invalid snapshot id"
                    );
                    self.next_fetch_at = Some(now + self.config.fetch_interval_ms);
                    return;
                }
            }
            progressed = true;
        } else {
            if let Some(bytes) = reply.records {
                match self.append_fetched(bytes, out) {
                    Ok(appended) => progressed = appended,
                    Err(e) => {
                        tracing::warn!(node = self.local.id, error = %e, "fetched records refused")
                    }
                }
            }
            if reply.high_watermark >= 0 {
                let candidate = reply.high_watermark.min(self.log.end_offset());
                if self.hw.is_none_or(|hw| candidate > hw) {
                    self.hw = Some(candidate);
                    self.maybe_take_snapshot(now, out);
                }
            }
        }
        self.timers.fetch_timeout = Some(now + self.config.fetch_timeout_ms);
        // Kafka's follower fetches again at once: the leader waits (up to MaxWaitMs) for something new.
        // A follower that asks for no wait paces itself with the fetch interval instead.
        self.next_fetch_at = Some(if progressed || self.config.fetch_max_wait_ms > 0 {
            now
        } else {
            now + self.config.fetch_interval_ms
        });
    }

    /// Appends fetched batches after the local LEO (records below it are skipped) and has the shell
    /// persist them: the next Fetch, which acknowledges them, leaves after the flush (persist before
    /// send). Returns whether anything was appended.
    pub(super) fn append_fetched(
        &mut self,
        bytes: Bytes,
        out: &mut Output,
    ) -> Result<bool, String> {
        use crate::log::Replicated;
        let batches =
            crate::records::decode_batches_with_bytes(bytes).map_err(|e| e.to_string())?;
        let end = self.log.end_offset();
        let mut fresh = Vec::new();
        for (mut batch, raw) in batches {
            if batch.next_offset() <= end {
                continue;
            }
            let mut bytes = Some(raw);
            if batch.base_offset < end {
                // Only a cut batch loses the leader's bytes (this log was truncated inside a batch).
                let skip = (end - batch.base_offset) as usize;
                batch.records.drain(..skip);
                batch.base_offset = end;
                bytes = None;
            }
            fresh.push(Replicated { batch, bytes });
        }
        if fresh.is_empty() {
            return Ok(false);
        }
        self.log
            .append_replicated(fresh.clone())
            .map_err(|e| e.to_string())?;
        self.persist_appended(fresh, out);
        self.load_control_records().map_err(|e| e.to_string())?;
        Ok(true)
    }
}
