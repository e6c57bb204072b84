//! Snapshot properties (KIP-630): every snapshot covers committed records and carries the committed
//! voter set there, and the `sometimes` examples of taking, installing and cleaning snapshots.

use super::spec_committed_set;
use crate::spec::committed_voters;
use crate::step::KraftModel;
use crate::types::{violation, Snapshot, State, VoterSet};

/// True if the snapshot `snap` is a prefix of the committed log: the committed log reaches its end
/// offset, has the snapshot's epoch at its last offset, and the snapshot's voter set is the
/// committed voter set there.
fn snapshot_committed(m: &KraftModel, s: &State, snap: Snapshot) -> bool {
    let end = snap.id.end;
    let c = &s.history.committed;
    c.len() >= end as usize
        && end > 0
        && c[end as usize - 1].0.epoch == snap.id.epoch
        && spec_committed_set(m.cfg.bootstrap(), c, end) == Some(snap.voters)
}

/// Every snapshot a replica holds (its latest, and the one its log starts at) covers committed
/// records only (no offset at or above its writer's HW when written), and every replica's HW is at
/// least its log start.
pub fn snapshot_within_high_watermark(_: &KraftModel, s: &State) -> bool {
    let c = s.history.committed.len();
    s.history.violations & violation::SNAPSHOT_ABOVE_HW == 0
        && s.servers.iter().all(|v| {
            [v.snapshot, v.log.base()]
                .into_iter()
                .flatten()
                .all(|snap| snap.id.end as usize <= c)
                && v.hw.is_none_or(|h| h >= v.log.start())
        })
}

/// A snapshot's voter set is the committed voter set at its last offset (and its epoch the committed
/// record's there), for every snapshot a replica holds.
pub fn snapshot_voters_committed(m: &KraftModel, s: &State) -> bool {
    s.servers.iter().all(|v| {
        [v.snapshot, v.log.base()]
            .into_iter()
            .flatten()
            .all(|snap| snapshot_committed(m, s, snap))
    })
}

/// After an install the follower's committed voter set is the leader's voter set at the same HW
/// (the snapshot's end offset), and every replica's committed voter set is the spec's committed set
/// at its HW (the last VotersRecord of the committed log below it).
pub fn install_matches_leader(m: &KraftModel, s: &State) -> bool {
    let bootstrap = m.cfg.bootstrap();
    s.history.violations & violation::INSTALL_VOTERS_DIFFER == 0
        // With the log starting at 0 this follows from `CommittedEntriesNeverLost`; checked where a
        // snapshot begins the history.
        && s.servers.iter().all(|v| match v.hw {
            Some(h) if v.log.start() > 0 && h as usize <= s.history.committed.len() => {
                committed_voters(bootstrap, &v.log, v.hw)
                    == spec_committed_set(bootstrap, &s.history.committed, h)
            }
            _ => true,
        })
}

/// A follower installed a snapshot from its leader.
pub fn snapshot_installed(_: &KraftModel, s: &State) -> bool {
    s.history.events & crate::types::event::SNAPSHOT_INSTALLED != 0
}

/// A replica's log start moved up to a snapshot.
pub fn log_start_moved(_: &KraftModel, s: &State) -> bool {
    s.history.events & crate::types::event::LOG_START_MOVED != 0
}

/// A replica restarted in the middle of downloading a snapshot.
pub fn crash_during_install(_: &KraftModel, s: &State) -> bool {
    s.history.events & crate::types::event::CRASH_DURING_INSTALL != 0
}

/// A membership change committed across a snapshot: a replica whose log starts at a snapshot
/// carrying a changed voter set (its committed set comes from the snapshot, not from a record in its
/// log), or whose log holds a committed change it has above its log start.
pub fn change_committed_across_snapshot(m: &KraftModel, s: &State) -> bool {
    let bootstrap = m.cfg.bootstrap();
    s.servers.iter().any(|v| {
        v.log.base().is_some_and(|b| {
            b.voters != VoterSet::of(bootstrap)
                && v.hw.is_some()
                && crate::spec::committed_voters_offset(&v.log, v.hw)
                    == Some(v.log.start() as i8 - 1)
        })
    })
}
