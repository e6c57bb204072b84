//! Auto-join (KIP-1186), as Kafka 4.4's `pollFollowerAsObserver` does it: an observer with auto-join
//! that follows a leader sends it RemoveRaftVoter of the key its id holds under another directory id
//! in the observer's latest voter set, if there is one, else AddRaftVoter v1 of its own key with
//! `AckWhenCommitted = false`. The leader checks the request as an operator's (Kafka's
//! `RemoveVoterHandler`, `AddVoterHandler`); the removal is answered at commit, the add once its
//! VotersRecord is appended, with no pending operation kept (the next change waits for the record's
//! commit through the uncommitted-VotersRecord rule).
//!
//! Request, handling and answer are one step, as a sync fetch is. Sound for the same reason: the
//! observer's state does not change with the answer (an answer only restarts its update-voter-set
//! timer, which the model leaves nondeterministic: the request is enabled again at once), so a
//! retried request is the step taken again, and a duplicated answer changes nothing.

use super::{KraftModel, Tx};
use crate::config::Bug;
use crate::spec::{check_change, latest_voters, Refusal};
use crate::types::{
    Action, AutoJoinRequest, ChangeOp, ErrorCode, Id, Kind, PendingChange, Reply, Role, Server,
    State, VoterSet,
};

impl KraftModel {
    /// True if server `i` runs auto-join: `--auto-join` is on and `i` is a joiner or lost a disk.
    pub fn auto_joins(&self, s: &Server, i: Id) -> bool {
        self.cfg.auto_join && (i >= self.cfg.voters || s.dir != 0)
    }

    /// What observer `i` asks for now, by its own latest voter set: `None` once its key is a voter.
    /// The `auto-join-keeps-stale` bug skips the removal of a stale key.
    pub fn auto_join_request(&self, s: &Server, i: Id) -> Option<AutoJoinRequest> {
        let latest = latest_voters(self.cfg.bootstrap(), &s.log);
        match latest.dir(i) {
            Some(d) if d == s.dir => None,
            Some(dir) if !self.cfg.has(Bug::AutoJoinKeepsStale) => {
                Some(AutoJoinRequest::RemoveStale { dir })
            }
            _ => Some(AutoJoinRequest::Add),
        }
    }

    /// True if `replica` may send an auto-join request to `leader` now: it runs auto-join, follows
    /// `leader` (Kafka sends it in place of a Fetch), which leads, and its key is not a voter.
    pub fn may_auto_join(&self, st: &State, replica: Id, leader: Id) -> bool {
        let (Some(r), Some(l)) = (
            st.servers.get(replica as usize),
            st.servers.get(leader as usize),
        ) else {
            return false;
        };
        replica != leader
            && self.auto_joins(r, replica)
            && r.role == Role::Follower
            && r.leader == Some(leader)
            && l.role == Role::Leader
            && !self.resign_due(l, leader)
            && self.auto_join_request(r, replica).is_some()
    }

    /// The leader's handling of `req` from `replica`: the operation and the new voter set, or the
    /// refusal. A removal names the stale key: VOTER_NOT_FOUND unless the leader's latest set holds
    /// exactly that key (Kafka's `RemoveVoterHandler` compares the whole key), so a removal sent from a
    /// lagging log never removes the replica's new key.
    pub fn auto_join_change(
        &self,
        st: &State,
        replica: Id,
        leader: Id,
        req: AutoJoinRequest,
    ) -> Result<(ChangeOp, VoterSet), Refusal> {
        let l = &st.servers[leader as usize];
        match req {
            AutoJoinRequest::RemoveStale { dir } => {
                let op = ChangeOp::Remove(replica);
                let set = check_change(&self.cfg, l, op, 0)?;
                if latest_voters(self.cfg.bootstrap(), &l.log).is_voter(replica, dir) {
                    Ok((op, set))
                } else {
                    Err(Refusal::VoterNotFound)
                }
            }
            AutoJoinRequest::Add => {
                let op = ChangeOp::Add(replica);
                let r = &st.servers[replica as usize];
                let latest = latest_voters(self.cfg.bootstrap(), &l.log);
                match check_change(&self.cfg, l, op, r.dir) {
                    // The bug's add over a stale key: the model keeps no replica state for a key
                    // whose id is a voter under another key (Kafka keeps an observer state), so the
                    // caught-up test reads the observer itself: it holds the leader's whole log.
                    Err(Refusal::NotCaughtUp)
                        if self.cfg.has(Bug::AutoJoinKeepsStale)
                            && latest.has_id(replica)
                            && r.epoch == l.epoch
                            && r.log.len() >= l.log.len() =>
                    {
                        Ok((op, latest.with(replica, r.dir)))
                    }
                    other => other.map(|set| (op, set)),
                }
            }
        }
    }

    /// True if the request would append within the bounds (changes, log length).
    fn auto_join_allowed(&self, st: &State, replica: Id, leader: Id) -> bool {
        let Some(req) = self.auto_join_request(&st.servers[replica as usize], replica) else {
            return false;
        };
        self.auto_join_change(st, replica, leader, req).is_ok()
            && st.history.changes < self.cfg.max_changes
            && st.servers[leader as usize].log.len() < self.cfg.max_log
    }

    /// The enabled auto-join steps of server `i` (refused ones only with refusal steps on).
    pub(super) fn auto_join_actions(&self, st: &State, i: Id, out: &mut Vec<Action>) {
        if !self.cfg.auto_join {
            return;
        }
        for l in 0..self.cfg.servers() {
            if self.may_auto_join(st, i, l)
                && (self.cfg.refusal_steps || self.auto_join_allowed(st, i, l))
            {
                out.push(Action::AutoJoin {
                    replica: i,
                    leader: l,
                });
            }
        }
    }

    /// `Action::AutoJoin`: `None` if not enabled, or refused without refusal steps.
    pub(super) fn step_auto_join(
        &self,
        tx: &mut Tx,
        st: &State,
        replica: Id,
        leader: Id,
    ) -> Option<()> {
        if !self.may_auto_join(st, replica, leader) {
            return None;
        }
        let req = self.auto_join_request(&st.servers[replica as usize], replica)?;
        let (op, set) = match self.auto_join_change(st, replica, leader, req) {
            Ok(change) if self.auto_join_allowed(st, replica, leader) => change,
            Ok(_) => return None,
            Err(refusal) if self.cfg.refusal_steps => {
                tx.replies.push(Reply {
                    server: leader,
                    op: auto_join_op(req, replica),
                    error: refusal.error(),
                });
                return Some(());
            }
            Err(_) => return None,
        };
        tx.s.history.changes += 1;
        let offset = st.servers[leader as usize].log.len();
        tx.append(leader, Kind::Voters(set));
        match req {
            AutoJoinRequest::RemoveStale { .. } => {
                tx.server(leader).pending = Some(PendingChange { op, offset });
            }
            AutoJoinRequest::Add => {
                // AckWhenCommitted = false: answered now, nothing pending.
                tx.replies.push(Reply {
                    server: leader,
                    op,
                    error: ErrorCode::None,
                });
                let epoch = st.servers[leader as usize].epoch;
                tx.s.history.append_acks.push(offset, epoch);
            }
        }
        tx.advance_hw(leader);
        if req == AutoJoinRequest::Add && self.cfg.has(Bug::AutoJoinAckCommits) {
            let s = tx.server(leader);
            s.hw = Some(s.log.len());
        }
        Some(())
    }
}

/// The operation an auto-join request names, for its answer.
fn auto_join_op(req: AutoJoinRequest, replica: Id) -> ChangeOp {
    match req {
        AutoJoinRequest::RemoveStale { .. } => ChangeOp::Remove(replica),
        AutoJoinRequest::Add => ChangeOp::Add(replica),
    }
}
