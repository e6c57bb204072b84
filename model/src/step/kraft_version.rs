//! Transitions of the `kraft.version` upgrade (`--start static`; the rules are in
//! `crate::kraft_version`): UpdateRaftVoter into the leader's volatile voter set, and the operator's
//! UpdateFeatures that appends KRaftVersion(1) and the VotersRecord in one batch.

use super::{KraftModel, Tx};
use crate::config::Start;
use crate::kraft_version::{check_upgrade, kraft_version, upgrade_pending};
use crate::types::{ChangeOp, Entry, Id, Kind, PendingChange, Reply, Role, State, VoterSet};

impl KraftModel {
    /// True if the UpdateRaftVoter `op` at `server` is one the model sends. At `kraft.version` 0
    /// (`--start static`) a voter sends it to the leader it follows, in that leader's epoch (Kafka's
    /// follower sends it once per leader; request and handling are one step, which is sound as the
    /// sync fetch is: the request carries the follower's epoch and key, neither of which changes
    /// before the upgrade is in every log, and the leader refuses it in any other epoch), and only
    /// while the leader's volatile set lacks its key (a repeat changes nothing). At `kraft.version` 1
    /// it is the `--updates` request. Every other operation: true.
    pub(super) fn update_sent(&self, st: &State, server: Id, op: ChangeOp) -> bool {
        let ChangeOp::Update(j) = op else {
            return true;
        };
        let l = &st.servers[server as usize];
        if kraft_version(&self.cfg, &l.log) == 1 {
            return self.cfg.updates;
        }
        let v = &st.servers[j as usize];
        // The voter decides by its own log's `kraft.version` (Kafka's `shouldSendUpdateVoteRequest`):
        // one that holds an uncommitted upgrade of an old leader reports nothing until it truncates.
        kraft_version(&self.cfg, &v.log) == 0
            && crate::kraft_version::static_voters(&self.cfg).has_id(j)
            && v.role == Role::Follower
            && v.leader == Some(server)
            && v.epoch == l.epoch
            && !l.volatile_voters.is_voter(j, v.dir)
    }

    /// True if `op` at `s` is an UpdateRaftVoter answered from the volatile set (appends nothing,
    /// so the change and log bounds do not apply).
    pub(super) fn volatile_update(&self, s: &crate::types::Server, op: ChangeOp) -> bool {
        matches!(op, ChangeOp::Update(_)) && kraft_version(&self.cfg, &s.log) == 0
    }

    /// True if the operator's UpdateFeatures `kraft.version` = 1 at `i` is a step: it appends the
    /// upgrade (within the log bound), or, with refusal steps, it is answered.
    pub(super) fn upgrade_enabled(&self, st: &State, i: Id) -> bool {
        if self.cfg.start != Start::Static {
            return false;
        }
        let s = &st.servers[i as usize];
        if upgrade_pending(s) {
            return false;
        }
        match check_upgrade(&self.cfg, s) {
            Ok(Some(_)) => s.log.len() + 2 <= self.cfg.max_log,
            _ => self.cfg.refusal_steps,
        }
    }
}

impl Tx<'_> {
    /// An accepted UpdateRaftVoter at `kraft.version` 0: the leader's volatile set is `set`; answered
    /// NONE at once (Kafka's `UpdateVoterHandler`).
    pub(super) fn store_volatile(&mut self, leader: Id, op: ChangeOp, set: VoterSet) {
        self.server(leader).volatile_voters = set;
        self.replies.push(Reply {
            server: leader,
            op,
            error: crate::types::ErrorCode::None,
        });
    }

    /// UpdateFeatures `kraft.version` = 1 at `i`: KRaftVersion(1) and the VotersRecord in one
    /// batch, pending until the HW passes it; a refusal or a no-op is answered at once. `None` if
    /// the step is not one the model takes.
    pub(super) fn upgrade(&mut self, i: Id) -> Option<()> {
        let cfg = self.cfg;
        let s = &self.s.servers[i as usize];
        if upgrade_pending(s) {
            return None;
        }
        let op = ChangeOp::KraftVersionUpgrade;
        let answer = |error| Reply {
            server: i,
            op,
            error,
        };
        match check_upgrade(cfg, s) {
            Ok(Some(set)) => {
                if s.log.len() + 2 > cfg.max_log {
                    return None;
                }
                let offset = s.log.len() + 1;
                let s = self.server(i);
                let epoch = s.epoch;
                s.log.push(Entry {
                    epoch,
                    kind: Kind::KRaftVersion,
                });
                s.log.push(Entry {
                    epoch,
                    kind: Kind::Voters(set),
                });
                // Kafka drops the volatile set once the upgrade is appended.
                s.volatile_voters = VoterSet::default();
                s.pending = Some(PendingChange { op, offset });
                self.advance_hw(i);
            }
            Ok(None) if cfg.refusal_steps => {
                self.replies.push(answer(crate::types::ErrorCode::None))
            }
            Err(r) if cfg.refusal_steps => self.replies.push(answer(r.error())),
            _ => return None,
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{ModelConfig, Start};
    use crate::kraft_version::kraft_version;
    use crate::spec::check_change;
    use crate::types::{Action, ChangeOp, ErrorCode, Kind, Role, VoterSet};
    use crate::KraftModel;

    fn model() -> KraftModel {
        KraftModel::new(ModelConfig {
            start: Start::Static,
            joiners: 1,
            max_crashes: 0,
            ..ModelConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn the_static_start_has_no_voters_record() {
        let m = model();
        let s = m.initial_state();
        let l = &s.servers[0];
        assert_eq!(l.role, Role::Leader);
        assert_eq!(l.log.len(), 1, "LeaderChange only");
        assert_eq!(l.hw, Some(1));
        assert_eq!(kraft_version(&m.cfg, &l.log), 0);
        assert_eq!(l.volatile_voters, VoterSet::of(0b001), "its own key");
    }

    #[test]
    fn updates_then_the_upgrade_in_one_batch() {
        let m = model();
        let s0 = m.initial_state();
        let l = &s0.servers[0];
        // Add and remove are refused at kraft.version 0.
        for op in [ChangeOp::Add(3), ChangeOp::Remove(2)] {
            let r = check_change(&m.cfg, l, op, 0).unwrap_err();
            assert_eq!(r.error(), ErrorCode::UnsupportedVersion);
        }
        // Not before both followers reported.
        assert!(m.step(&s0, Action::UpgradeKraftVersion(0)).is_none());
        let upd = |j| Action::Change {
            server: 0,
            op: ChangeOp::Update(j),
        };
        let s1 = m.step(&s0, upd(1)).unwrap();
        assert_eq!(s1.replies[0].error, ErrorCode::None);
        assert!(m.step(&s1.state, upd(1)).is_none(), "a repeat is no step");
        // The joiner is no static voter: it sends nothing.
        assert!(m.step(&s1.state, upd(3)).is_none());
        let s2 = m.step(&s1.state, upd(2)).unwrap().state;
        assert_eq!(s2.servers[0].volatile_voters, VoterSet::of(0b111));
        let s3 = m.step(&s2, Action::UpgradeKraftVersion(0)).unwrap().state;
        let l = &s3.servers[0];
        let kinds: Vec<Kind> = l.log.as_slice().iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::LeaderChange,
                Kind::KRaftVersion,
                Kind::Voters(VoterSet::of(0b111))
            ]
        );
        assert_eq!(l.pending.map(|p| p.op), Some(ChangeOp::KraftVersionUpgrade));
        // Until it commits, an add is REQUEST_TIMED_OUT.
        let r = check_change(&m.cfg, l, ChangeOp::Add(3), 0).unwrap_err();
        assert_eq!(r.error(), ErrorCode::RequestTimedOut);
        // For the uncommitted VotersRecord, as Kafka's AddVoterHandler says; the wait does not time
        // out and a repeated UpdateFeatures is no step.
        assert_eq!(r, crate::spec::Refusal::UncommittedVoters);
        assert!(m.step(&s3, Action::ChangeTimeout(0)).is_none());
        assert!(m.step(&s3, Action::UpgradeKraftVersion(0)).is_none());
        // Two fetch rounds commit it and answer the request.
        let mut s = s3;
        let mut replies = Vec::new();
        for r in [1, 2, 1] {
            let st = m
                .step(
                    &s,
                    Action::Fetch {
                        replica: r,
                        leader: 0,
                    },
                )
                .unwrap();
            replies.extend(st.replies);
            s = st.state;
        }
        assert_eq!(
            replies.iter().map(|r| (r.op, r.error)).collect::<Vec<_>>(),
            [(ChangeOp::KraftVersionUpgrade, ErrorCode::None)]
        );
        assert!(crate::kraft_version::upgrade_committed(&m.cfg, &s));
    }
}
