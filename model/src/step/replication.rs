//! Replication: the leader's HW rule and ghost commit bookkeeping, fetch handling on both sides,
//! truncation.

use super::Tx;
use crate::config::Bug;
use crate::spec::{
    diverging, latest_voters, membership_changes_from, next_high_watermark, other_caught_up,
    reported_committed_offset, reported_committed_voters, set_other_caught_up, snapshot_answer,
    truncation_offset,
};
use crate::types::{
    bit, event, violation, ErrorCode, FetchKey, FetchResponse, Id, Kind, Log, Reply, Role,
};

impl Tx<'_> {
    /// The leader's HW rule after a change of its LEO, a replica's offset or the voter set; answers
    /// the pending change once the HW passes its record.
    pub(super) fn advance_hw(&mut self, i: Id) {
        let cfg = self.cfg;
        let s = self.server(i);
        if s.role != Role::Leader {
            return;
        }
        let new = next_high_watermark(cfg, i, s);
        if new == s.hw {
            return;
        }
        s.hw = new;
        if let (Some(h), Some(p)) = (new, s.pending) {
            if h > p.offset {
                s.pending = None;
                self.replies.push(Reply {
                    server: i,
                    op: p.op,
                    error: ErrorCode::None,
                });
            }
        }
        self.note_leader(i);
    }

    /// Ghost bookkeeping for a leader: extend the global committed prefix up to its HW (flagging a
    /// conflict) and remember the committed voter set it reports. Called on every HW advance and
    /// after every step, so a leader that resigns within the step is still recorded.
    pub(super) fn note_leader(&mut self, i: Id) {
        let cfg = self.cfg;
        let s = &self.s.servers[i as usize];
        let h = &mut self.s.history;
        if s.role != Role::Leader {
            return;
        }
        let Some(hw) = s.hw else { return };
        // Below the log start the leader holds a snapshot, not entries: the committed prefix must
        // already reach it (`SnapshotWithinHighWatermark` fails otherwise).
        if h.committed.len() < s.log.start() as usize {
            h.violations |= violation::SNAPSHOT_ABOVE_HW;
        } else {
            for (o, e) in s.log.iter().take_while(|(o, _)| *o < hw) {
                match h.committed.get(o as usize) {
                    Some((c, _)) if *c != e => h.violations |= violation::CONFLICTING_COMMIT,
                    Some(_) => {}
                    None => h.committed.push((e, s.epoch)),
                }
            }
        }
        if let (Some(o), Some(set)) = (
            reported_committed_offset(cfg, s),
            reported_committed_voters(cfg, s),
        ) {
            // A set that comes from the snapshot the log starts at has the offset `start − 1`; the
            // ghost keeps the offset of the VotersRecord behind it in the committed log.
            let is_record = |o: i8| {
                o < 0
                    || matches!(h.committed.get(o as usize), Some((e, _)) if matches!(e.kind, Kind::Voters(_)))
            };
            let o = if o < 0 || o as u8 >= s.log.start() || is_record(o) {
                o
            } else {
                (0..o).rev().find(|&x| is_record(x)).unwrap_or(-1)
            };
            if !matches!(h.max_reported, Some((_, mo, _)) if mo >= o) {
                h.max_reported = Some((s.epoch, o, set));
            }
        }
    }

    /// Server `l` answers fetch `key` from `f` (leader or not).
    pub(super) fn handle_fetch(&mut self, l: Id, f: Id, key: FetchKey) -> FetchResponse {
        let s = &self.s.servers[l as usize];
        let mut resp = FetchResponse {
            request: key,
            error: ErrorCode::None,
            leader_epoch: s.epoch,
            leader_id: s.leader,
            high_watermark: None,
            diverging: None,
            records: Log::default(),
            snapshot_id: None,
        };
        if key.epoch < s.epoch {
            resp.error = ErrorCode::FencedLeaderEpoch;
            return resp;
        }
        if key.epoch > s.epoch {
            resp.error = ErrorCode::UnknownLeaderEpoch;
            resp.leader_id = None;
            return resp;
        }
        if s.role != Role::Leader {
            resp.error = ErrorCode::NotLeaderOrFollower;
            return resp;
        }
        // A fetch the leader's log cannot answer is pointed to its latest snapshot; the leader
        // records no progress for the replica.
        if let Some(id) =
            snapshot_answer(s.snapshot, &s.log, key.fetch_offset, key.last_fetched_epoch)
        {
            resp.snapshot_id = Some(id);
            resp.high_watermark = s.hw;
            return resp;
        }
        if let Some(div) = diverging(&s.log, key.fetch_offset, key.last_fetched_epoch) {
            resp.diverging = Some(div);
            resp.high_watermark = s.hw;
            return resp;
        }
        self.record_fetch(l, f, key);
        self.advance_hw(l);
        let s = &self.s.servers[l as usize];
        resp.high_watermark = s.hw;
        resp.records = s.log.suffix(key.fetch_offset);
        resp
    }

    /// Leader `l` records a valid fetch from the key (f, `key.replica_dir`) (Kafka 4.4
    /// `LeaderState.updateReplicaState`, whose replica states are keyed by (id, directory id)). A
    /// fetch from another key than the latest set's voter key of `f` is an observer's: the model
    /// keeps one replica state per id, the voter's, and leaves it alone (Kafka adds an observer
    /// state beside it, which the model forgets; the observer's next fetch after the voter is
    /// removed records it). The `fetch-ignores-directory-id` bug records it as the voter's.
    fn record_fetch(&mut self, l: Id, f: Id, key: FetchKey) {
        let voters = latest_voters(self.cfg.bootstrap(), &self.s.servers[l as usize].log);
        let other_key = voters.has_id(f) && !voters.is_voter(f, key.replica_dir);
        if other_key {
            if !self.cfg.has(Bug::FetchIgnoresDirectoryId) {
                // Kafka's observer state of that key: its caught-up flag outlives the voter's key.
                let s = self.server(l);
                if key.fetch_offset >= s.log.len() {
                    set_other_caught_up(s, f, Some(key.replica_dir));
                }
                return;
            }
            self.s.history.violations |= violation::KEY_NOT_HELD_COUNTED;
        }
        let s = self.server(l);
        if !other_key && s.peer_dir(f) != key.replica_dir {
            // Another key of this id: its state starts afresh, but for a catch-up seen while it was
            // not the recorded key; the key it replaces keeps its own.
            let was = other_caught_up(s, f) == Some(key.replica_dir);
            let old = (s.caught_up & bit(f) != 0).then(|| s.peer_dir(f));
            set_other_caught_up(s, f, old);
            s.end[f as usize] = None;
            s.caught_up &= !bit(f);
            if was {
                s.caught_up |= bit(f);
            }
            s.set_peer_dir(f, key.replica_dir);
        }
        s.end[f as usize] = Some(key.fetch_offset);
        if key.fetch_offset >= s.log.len() {
            s.caught_up |= bit(f);
        }
    }

    /// Replica `i` applies a fetch response from `from` that matches its request.
    pub(super) fn on_fetch_response(&mut self, i: Id, from: Id, r: FetchResponse) {
        let s = &self.s.servers[i as usize];
        if r.leader_epoch > s.epoch {
            match r.leader_id {
                Some(l) if l != i => self.become_follower(i, l, r.leader_epoch),
                _ => self.become_unattached(i, r.leader_epoch),
            }
            return;
        }
        if r.leader_epoch < s.epoch || r.error != ErrorCode::None {
            return;
        }
        if !(s.role == Role::Follower && s.leader == Some(from)) {
            if !matches!(s.role, Role::Unattached | Role::Candidate) {
                return;
            }
            // Kafka (`maybeHandleCommonResponse`): learning the leader of the current epoch makes the
            // replica its follower, and a successful response is then handled as usual ("an observer
            // discovers the leader and appends to the log in the same Fetch").
            self.become_follower(i, from, r.leader_epoch);
        }
        if self.cfg.pre_vote {
            self.server(i).fetched = true;
        }
        let s = &self.s.servers[i as usize];
        if let Some((epoch, end)) = r.diverging {
            let to = truncation_offset(&s.log, epoch, end);
            self.truncate(i, to);
            return;
        }
        if let Some(id) = r.snapshot_id {
            // Kafka creates the snapshot writer (`createNewSnapshotUnchecked`) and sends FetchSnapshot
            // instead of Fetch until the download ends.
            self.server(i).fetching_snapshot = Some(id);
            return;
        }
        let s = self.server(i);
        if r.request.fetch_offset == s.log.len() {
            for e in r.records.as_slice() {
                s.log.push(*e);
            }
        }
        if let Some(h) = r.high_watermark {
            let new = h.min(s.log.len());
            if !matches!(s.hw, Some(old) if new <= old) {
                s.hw = Some(new);
            }
        }
    }

    /// Suffix truncation; truncating below the HW is a violation (Kafka refuses with a fatal error).
    pub(super) fn truncate(&mut self, i: Id, to: u8) {
        let bootstrap = self.cfg.bootstrap();
        let s = &mut self.s.servers[i as usize];
        if to >= s.log.len() {
            return;
        }
        // Below the log start lies a snapshot, which only ever holds committed records.
        if matches!(s.hw, Some(h) if to < h) || to < s.log.start() {
            self.s.history.violations |= violation::TRUNCATION_BELOW_HW;
        }
        if membership_changes_from(bootstrap, &s.log, to) > 0 {
            self.s.history.events |= event::VOTERS_RECORD_TRUNCATED;
        }
        s.log.truncate(to);
    }
}
