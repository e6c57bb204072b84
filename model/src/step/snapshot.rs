//! Snapshots (Kafka 4.4, KIP-630), abstracted to what membership needs: a replica snapshots at its
//! HW, its log start moves up to a snapshot, and a follower whose fetch the leader's log cannot
//! answer downloads the leader's snapshot and starts its log (and its voter-set history) there.

use super::{KraftModel, Tx};
use crate::config::Bug;
use crate::spec::{committed_voters, latest_voters, voters_at};
use crate::types::{event, violation, Id, Role, Server, Snapshot, SnapshotId, State};

impl KraftModel {
    /// The end offset of the snapshot `s` would take now: its HW (Kafka's `SnapshotGenerator` writes
    /// only committed state; the `snapshot-above-hw` bug takes its LEO), if that is past its latest
    /// snapshot and the log start, and snapshots remain in the bounds.
    pub(super) fn snapshot_point(&self, st: &State, s: &Server) -> Option<u8> {
        if st.history.snapshots >= self.cfg.max_snapshots {
            return None;
        }
        let end = if self.cfg.has(Bug::SnapshotAboveHw) {
            s.log.len()
        } else {
            s.hw?
        };
        let after = s.snapshot.map_or(0, |p| p.id.end).max(s.log.start());
        (end > after && end <= s.log.len()).then_some(end)
    }

    /// The snapshot `s`'s log start may move up to: its latest, if it is past the log start and at
    /// most the HW (Kafka's `maybeIncrementLogStartOffset` refuses to pass the HW).
    pub(super) fn log_start_target(&self, s: &Server) -> Option<Snapshot> {
        let snap = s.snapshot?;
        let end = snap.id.end;
        (end > s.log.start() && end <= s.log.len() && s.hw.is_some_and(|h| end <= h))
            .then_some(snap)
    }

    /// True if `replica` may download its pending snapshot from `leader` now: it follows `leader`,
    /// which still leads.
    pub(super) fn may_fetch_snapshot(&self, st: &State, replica: Id, leader: Id) -> bool {
        let r = &st.servers[replica as usize];
        let l = &st.servers[leader as usize];
        replica != leader
            && r.fetching_snapshot.is_some()
            && r.role == Role::Follower
            && r.leader == Some(leader)
            && l.role == Role::Leader
            && !self.resign_due(l, leader)
    }
}

impl Tx<'_> {
    /// Replica `i` writes a snapshot ending at `end` with the voter set at `end − 1` (Kafka's
    /// `voterSetAtOffset(end − 1)`; the `snapshot-latest-voters` bug writes the latest set).
    pub(super) fn take_snapshot(&mut self, i: Id, end: u8) {
        let bootstrap = self.cfg.bootstrap();
        let latest_bug = self.cfg.has(Bug::SnapshotLatestVoters);
        let s = &self.s.servers[i as usize];
        let Some(last) = s.log.get(end - 1) else {
            return;
        };
        let voters = if latest_bug {
            latest_voters(bootstrap, &s.log)
        } else {
            voters_at(bootstrap, &s.log, end)
        };
        if s.hw.is_none_or(|h| end > h) {
            self.s.history.violations |= violation::SNAPSHOT_ABOVE_HW;
        }
        self.s.history.snapshots += 1;
        self.server(i).snapshot = Some(Snapshot {
            id: SnapshotId {
                end,
                epoch: last.epoch,
            },
            voters,
        });
    }

    /// Replica `i`'s log start moves up to its latest snapshot: the entries below are deleted and
    /// the voter-set history begins with the snapshot's set (as Kafka's does once it reloads the
    /// snapshot after a restart).
    pub(super) fn advance_log_start(&mut self, i: Id, snap: Snapshot) {
        self.server(i).log.advance_start(snap);
        self.s.history.events |= event::LOG_START_MOVED;
    }

    /// Follower `r` downloads snapshot `id` from leader `l` (Kafka's FetchSnapshot, every chunk)
    /// and installs it: the snapshot is frozen, the log truncated fully to start at it
    /// (`truncateToLatestSnapshot`), the voter-set history reloaded from it, and the HW set to its
    /// end. A leader that no longer holds it answers SNAPSHOT_NOT_FOUND: the follower drops the
    /// download and fetches again. A leader of another epoch answers as a Fetch does.
    pub(super) fn fetch_snapshot(&mut self, r: Id, l: Id) {
        let bootstrap = self.cfg.bootstrap();
        let fetcher = &self.s.servers[r as usize];
        let Some(id) = fetcher.fetching_snapshot else {
            return;
        };
        if fetcher.epoch != self.s.servers[l as usize].epoch {
            let key = super::fetch_key(fetcher);
            let resp = self.handle_fetch(l, r, key);
            self.on_fetch_response(r, l, resp);
            return;
        }
        let leader = &self.s.servers[l as usize];
        let held = [leader.snapshot, leader.log.base()]
            .into_iter()
            .flatten()
            .find(|s| s.id == id);
        let Some(snap) = held else {
            self.server(r).fetching_snapshot = None;
            return;
        };
        let leader_voters = voters_at(bootstrap, &leader.log, id.end);
        let keep_suffix = self.cfg.has(Bug::InstallKeepsSuffix);
        let f = self.server(r);
        let old = f.log;
        f.log
            .truncate_fully_and_start_at(id.end, id.epoch, snap.voters);
        if keep_suffix {
            for (_, e) in old.iter().filter(|(o, _)| *o >= id.end) {
                f.log.push(e);
            }
        }
        f.snapshot = Some(snap);
        f.fetching_snapshot = None;
        if f.hw.is_none_or(|h| h < id.end) {
            f.hw = Some(id.end);
        }
        if committed_voters(bootstrap, &f.log, f.hw) != Some(leader_voters) {
            self.s.history.violations |= violation::INSTALL_VOTERS_DIFFER;
        }
        self.s.history.events |= event::SNAPSHOT_INSTALLED;
    }

    /// Kafka's start-up `truncateToLatestSnapshot`: a latest snapshot past the log (a crash between
    /// freezing a downloaded snapshot and truncating the log) truncates the log fully to it.
    pub(super) fn truncate_to_latest_snapshot(&mut self, i: Id) {
        let s = self.server(i);
        if let Some(snap) = s.snapshot {
            let last = s.log.last_epoch();
            if snap.id.epoch > last || (snap.id.epoch == last && snap.id.end > s.log.len()) {
                s.log
                    .truncate_fully_and_start_at(snap.id.end, snap.id.epoch, snap.voters);
            }
        }
    }
}
