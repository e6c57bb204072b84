//! The `kraft.version` upgrade from 0 (static voters from `controller.quorum.voters`) to 1 (KIP-853
//! dynamic voters), as Kafka 4.4 does it (`LeaderState.maybeAppendUpgradedKRaftVersion`,
//! `UpdateVoterHandler`, `KafkaRaftClient.upgradeKRaftVersion`), behind `--start static`:
//!
//! - At `kraft.version` 0 the voters are the static set (the bootstrap set; its keys carry no
//!   directory id in Kafka, directory id 0 here: every replica keeps its first disk until the
//!   upgrade is in every log, see [`disk_loss_allowed`]). No KRaftVersion or VotersRecord is written.
//! - The leader keeps a volatile voter set, [`crate::types::Server::volatile_voters`]: its own key
//!   from the start of its epoch, and the key of each voter whose UpdateRaftVoter it accepted
//!   ([`update_volatile`]). Every server runs software whose supported `kraft.version` range is
//!   [0, 1]; a static entry's range is [0, 0] until its voter reports, so "every voter supports 1"
//!   and "every voter's directory id is known" both mean "every voter reported".
//! - UpdateFeatures `kraft.version` = 1 ([`check_upgrade`]) appends one batch: KRaftVersion(1) and
//!   a VotersRecord of the volatile set (the static voters with their keys). It is the leader's
//!   pending request until the HW passes the batch.
//! - AddRaftVoter and RemoveRaftVoter are UNSUPPORTED_VERSION at `kraft.version` 0 and
//!   REQUEST_TIMED_OUT while the upgrade batch is uncommitted (`spec::check_change`).
//!
//! `kraft.version` is read from the log as Kafka's `KRaftControlRecordStateMachine` does: the
//! latest KRaftVersion record, committed or not.

use crate::config::{Bug, ModelConfig, Start};
use crate::spec::{reported_committed_voters, Refusal};
use crate::types::{ErrorCode, Id, Kind, Log, Role, Server, State, VoterSet};

/// The replica's `kraft.version`: 1 unless `--start static` and its log holds no KRaftVersion record
/// (a log that starts at a snapshot is at 1: snapshots are not modelled at `kraft.version` 0).
pub fn kraft_version(cfg: &ModelConfig, log: &Log) -> u8 {
    let upgraded =
        || log.start() > 0 || log.as_slice().iter().any(|e| e.kind == Kind::KRaftVersion);
    if cfg.start != Start::Static || upgraded() {
        1
    } else {
        0
    }
}

/// Offset of the log's KRaftVersion record, if it holds one.
pub fn upgrade_offset(log: &Log) -> Option<u8> {
    log.iter()
        .find(|(_, e)| e.kind == Kind::KRaftVersion)
        .map(|(o, _)| o)
}

/// True if leader `s` waits for its upgrade batch to commit. Kafka keeps that wait apart from the
/// add/remove operation in progress: an add or remove meanwhile is refused for the uncommitted
/// VotersRecord (REQUEST_TIMED_OUT, `UncommittedVoters`), the wait has no timeout (the
/// controller's write waits for its commit or a new leader), and a repeated UpdateFeatures waits
/// for the same commit (its deferred answer is not modelled: no step).
pub fn upgrade_pending(s: &Server) -> bool {
    s.pending
        .is_some_and(|p| p.op == crate::types::ChangeOp::KraftVersionUpgrade)
}

/// The static voter set (`controller.quorum.voters`).
pub fn static_voters(cfg: &ModelConfig) -> VoterSet {
    VoterSet::of(cfg.bootstrap())
}

/// UpdateRaftVoter at `kraft.version` 0 (after `check_change`'s leader, pending and HW checks):
/// the voter must be a static voter (Kafka's `updateVoterIgnoringDirectoryId` matches the id only,
/// the static entry having no directory id); the volatile set then holds its key.
pub fn update_volatile(
    cfg: &ModelConfig,
    s: &Server,
    id: Id,
    dir: u8,
) -> Result<VoterSet, Refusal> {
    if !static_voters(cfg).has_id(id) {
        return Err(Refusal::VoterNotFound);
    }
    Ok(s.volatile_voters.with(id, dir))
}

/// Why UpdateFeatures `kraft.version` = 1 is refused (Kafka's `FeatureControlManager` and
/// `maybeAppendUpgradedKRaftVersion`, in that order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpgradeRefusal {
    /// Not the leader, or its HW is unknown (Kafka's controller is not active yet) → NOT_CONTROLLER.
    NotController,
    /// A voter has not reported its key and supported range ("not all of the voters support it")
    /// → INVALID_UPDATE_VERSION.
    VotersNotReported,
}

impl UpgradeRefusal {
    /// The error code of the UpdateFeatures answer.
    pub fn error(self) -> ErrorCode {
        match self {
            UpgradeRefusal::NotController => ErrorCode::NotController,
            UpgradeRefusal::VotersNotReported => ErrorCode::InvalidUpdateVersion,
        }
    }
}

/// UpdateFeatures `kraft.version` = 1 at server `s`: the VotersRecord to append with the
/// KRaftVersion record, `None` if it is already at 1 (answered NONE, nothing appended), or the
/// refusal. The `upgrade-before-directory-ids` bug writes an unreported voter with no directory id.
pub fn check_upgrade(cfg: &ModelConfig, s: &Server) -> Result<Option<VoterSet>, UpgradeRefusal> {
    if s.role != Role::Leader || s.hw.is_none() {
        return Err(UpgradeRefusal::NotController);
    }
    if kraft_version(cfg, &s.log) == 1 {
        return Ok(None);
    }
    let static_set = static_voters(cfg);
    let reported = s.volatile_voters;
    if cfg.has(Bug::UpgradeBeforeDirectoryIds) {
        let missing = static_set.ids() & !reported.ids();
        let set = crate::types::ids(missing).fold(reported, VoterSet::with_unknown_dir);
        return Ok(Some(set));
    }
    if reported.ids() != static_set.ids() {
        return Err(UpgradeRefusal::VotersNotReported);
    }
    Ok(Some(reported))
}

/// A disk is replaced only once every replica's log holds the upgrade (`--start static`): at
/// `kraft.version` 0 a static voter with a new disk is still a voter (its key has no directory id)
/// and may vote with an empty log, the unsafe case KIP-853 exists to end; operators replace disks
/// after the upgrade.
pub fn disk_loss_allowed(cfg: &ModelConfig, st: &State) -> bool {
    cfg.start != Start::Static || st.servers.iter().all(|s| upgrade_offset(&s.log).is_some())
}

/// `StaticVotersBeforeUpgrade`: a replica whose committed prefix holds no KRaftVersion record
/// reports the static set as its committed voter set (DescribeQuorum's `CommittedVoters`).
pub fn static_voters_before_upgrade(cfg: &ModelConfig, st: &State) -> bool {
    cfg.start != Start::Static
        || st.servers.iter().all(|s| {
            let Some(hw) = s.hw else { return true };
            upgrade_offset(&s.log).is_some_and(|o| o < hw)
                || reported_committed_voters(cfg, s) == Some(static_voters(cfg))
        })
}

/// `UpgradeKeepsVoters` (`--start static`): in every log that starts at offset 0 (and in the committed prefix), no
/// VotersRecord comes before the KRaftVersion record, and the record after it, in the same batch,
/// is a VotersRecord naming exactly the static voters: the set in force does not change across the
/// upgrade.
pub fn upgrade_keeps_voters(cfg: &ModelConfig, st: &State) -> bool {
    if cfg.start != Start::Static {
        // The elected and fresh starts' first batch is LeaderChange, KRaftVersion and the bootstrap
        // set by construction (`become_leader`).
        return true;
    }
    let static_ids = static_voters(cfg).ids();
    let ok = |entries: &mut dyn Iterator<Item = Kind>| {
        let mut upgraded = false;
        let mut expect_voters = false;
        for kind in entries {
            if expect_voters {
                if !matches!(kind, Kind::Voters(v) if v.ids() == static_ids) {
                    return false;
                }
                expect_voters = false;
                continue;
            }
            match kind {
                Kind::KRaftVersion if !upgraded => {
                    upgraded = true;
                    expect_voters = true;
                }
                Kind::Voters(_) if !upgraded => return false,
                _ => {}
            }
        }
        true
    };
    st.servers
        .iter()
        .filter(|s| s.log.start() == 0)
        .all(|s| ok(&mut s.log.as_slice().iter().map(|e| e.kind)))
        && ok(&mut st.history.committed.iter().map(|(e, _)| e.kind))
}

/// `UpgradeVotersKeyed`: every VotersRecord in every log holds a directory id for each voter.
pub fn upgrade_voters_keyed(cfg: &ModelConfig, st: &State) -> bool {
    // Only the upgrade writes a voter with no directory id.
    cfg.start != Start::Static
        || st.servers.iter().all(|s| {
            s.log
                .as_slice()
                .iter()
                .all(|e| !matches!(e.kind, Kind::Voters(v) if v.unknown_dirs() != 0))
        })
}

/// `UpgradeCommitted` (sometimes): a leader's HW passed the upgrade batch.
pub fn upgrade_committed(cfg: &ModelConfig, st: &State) -> bool {
    cfg.start == Start::Static
        && st.servers.iter().any(|s| {
            s.role == Role::Leader
                && matches!((s.hw, upgrade_offset(&s.log)), (Some(h), Some(o)) if o + 1 < h)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Entry;

    fn cfg() -> ModelConfig {
        ModelConfig {
            start: Start::Static,
            ..ModelConfig::default()
        }
    }

    fn leader(volatile: VoterSet) -> Server {
        Server {
            role: Role::Leader,
            epoch: 1,
            hw: Some(1),
            log: Log::from_slice(&[Entry {
                epoch: 1,
                kind: Kind::LeaderChange,
            }]),
            volatile_voters: volatile,
            ..Server::default()
        }
    }

    #[test]
    fn the_version_is_read_from_the_log() {
        let c = cfg();
        let s = leader(VoterSet::of(0));
        assert_eq!(kraft_version(&c, &s.log), 0);
        assert_eq!(kraft_version(&ModelConfig::default(), &s.log), 1);
        let mut log = s.log;
        log.push(Entry {
            epoch: 1,
            kind: Kind::KRaftVersion,
        });
        assert_eq!(kraft_version(&c, &log), 1);
        assert_eq!(upgrade_offset(&log), Some(1));
    }

    #[test]
    fn the_upgrade_waits_for_every_voter() {
        let c = cfg();
        let partial = VoterSet::of(0b011);
        assert_eq!(
            check_upgrade(&c, &leader(partial)),
            Err(UpgradeRefusal::VotersNotReported)
        );
        let all = VoterSet::of(0b111);
        assert_eq!(check_upgrade(&c, &leader(all)), Ok(Some(all)));
        let mut not_active = leader(all);
        not_active.hw = None;
        assert_eq!(
            check_upgrade(&c, &not_active),
            Err(UpgradeRefusal::NotController)
        );
        let buggy = ModelConfig {
            bug: Some(Bug::UpgradeBeforeDirectoryIds),
            ..c
        };
        let written = check_upgrade(&buggy, &leader(partial)).unwrap().unwrap();
        assert_eq!(written.ids(), 0b111);
        assert_eq!(written.unknown_dirs(), 0b100);
        assert_eq!(
            UpgradeRefusal::VotersNotReported.error(),
            ErrorCode::InvalidUpdateVersion
        );
    }

    #[test]
    fn updates_at_version_0_fill_the_volatile_set() {
        let c = cfg();
        let s = leader(VoterSet::of(0b001));
        assert_eq!(update_volatile(&c, &s, 1, 0), Ok(VoterSet::of(0b011)));
        assert_eq!(update_volatile(&c, &s, 3, 0), Err(Refusal::VoterNotFound));
    }
}
