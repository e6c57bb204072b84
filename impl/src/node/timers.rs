//! Timers: what each deadline does when it fires, and the deadlines derived from other state
//! (see [`Timers`] for which are stored and which derived).

use crate::voter_set::ReplicaKey;

use super::membership::ChangeOutcome;
use super::types::*;
use super::{Node, RoleState};

/// Kafka 4.4's follower `updateVoterSetPeriodTimer` (`FollowerState.updateVoterPeriodMs`: one fetch
/// timeout), which paces both a voter's UpdateRaftVoter (`update_voter.rs`) and an observer's auto-join
/// (`auto_join.rs`): due in `epoch` at `due`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PeriodDue {
    epoch: i32,
    due: Millis,
}

impl PeriodDue {
    /// One period from `now`, in `epoch`.
    pub(super) fn start(epoch: i32, now: Millis, period: Millis) -> PeriodDue {
        PeriodDue {
            epoch,
            due: now.saturating_add(period),
        }
    }

    /// Whether the period in `slot` has passed at `now` in `epoch`. A slot of another epoch (or none) is
    /// armed for one `period` from `now` (the replica starts following), and has not.
    pub(super) fn passed(
        slot: &mut Option<PeriodDue>,
        epoch: i32,
        now: Millis,
        period: Millis,
    ) -> bool {
        match slot {
            Some(d) if d.epoch == epoch => now >= d.due,
            _ => {
                *slot = Some(PeriodDue::start(epoch, now, period));
                false
            }
        }
    }

    pub(super) fn epoch(&self) -> i32 {
        self.epoch
    }
}

impl Node {
    /// Recomputes the derived deadlines of [`Timers`] (`fetch`, `check_quorum`, `pending_change`) from the
    /// state they belong to; the stored ones (`election`, `fetch_timeout`, `begin_quorum_epoch`,
    /// `first_poll`) are the transitions' to set, except that leaving the leader role clears
    /// `begin_quorum_epoch` here.
    pub(super) fn refresh_timers(&mut self) {
        let sent_at = (self.outstanding_fetch.map(|f| f.sent_at))
            .or(self.sent_snapshot_fetch.map(|f| f.sent_at));
        self.timers.fetch = match sent_at {
            Some(sent_at) => Some(sent_at + self.config.request_timeout_ms),
            None => self.next_fetch_at,
        };
        match &self.role {
            RoleState::Leader(l) => {
                self.timers.check_quorum = l.check_quorum_deadline;
                self.timers.pending_change = (self.pending.as_ref().map(|p| p.deadline))
                    .or(self.add_check.as_ref().map(|c| c.deadline));
            }
            _ => {
                self.timers.check_quorum = None;
                self.timers.pending_change = None;
                self.timers.begin_quorum_epoch = None;
            }
        }
    }

    pub(super) fn fire_timer(&mut self, now: Millis, timer: Timer, out: &mut Output) {
        match timer {
            Timer::PendingChange => {
                if let Some(p) = self.pending.take() {
                    // The record stays in the log: it may still commit, and it blocks the next change
                    // until it does.
                    self.reply_change(p.client, p.kind, p.key, ChangeOutcome::TimedOut, out);
                } else if let Some(c) = self.add_check.take() {
                    // No ApiVersions answer from the new voter in time.
                    let outcome = ChangeOutcome::TimedOut;
                    self.reply_change(c.client, ChangeKind::Add, c.key, outcome, out);
                }
            }
            Timer::CheckQuorum => {
                if matches!(self.role, RoleState::Leader(_)) {
                    tracing::info!(
                        node = self.local.id,
                        epoch = self.election.epoch,
                        "check-quorum expired; resigning"
                    );
                    self.become_resigned(now, out);
                }
            }
            Timer::BeginQuorumEpoch => {
                let targets: Vec<ReplicaKey> = match &self.role {
                    RoleState::Leader(l) => {
                        let stale = self.config.fetch_timeout_ms;
                        l.voter_states()
                            .filter(|p| p.key.id != self.local.id)
                            .filter(|p| {
                                p.last_fetch_ms
                                    .is_none_or(|t| now.saturating_sub(t) >= stale)
                            })
                            .map(|p| p.key)
                            .collect()
                    }
                    _ => return,
                };
                for key in targets {
                    let req = self.begin_request(key);
                    out.requests
                        .push((key.id, Message::BeginQuorumEpochRequest(req)));
                }
                self.timers.begin_quorum_epoch =
                    Some(now + (self.config.fetch_timeout_ms / 2).max(1));
            }
            Timer::FirstPoll => {
                self.timers.first_poll = None;
                if let RoleState::Resigned = self.role {
                    // Kafka's `QuorumState.initialize` gives a restarted leader no preferred successors
                    // (it knows no replica's progress).
                    self.send_end_quorum_epoch(&[], out);
                    return;
                }
                // A single voter is leader at once (Kafka's `onBecomeCandidate`); otherwise every
                // voter that has not granted is asked.
                self.maybe_become_leader(now, out);
                self.request_votes(out);
            }
            Timer::Election => match self.role {
                RoleState::Unattached | RoleState::Candidate { .. } => {
                    if self.is_voter() {
                        self.become_prospective(now, out);
                    } else {
                        let epoch = self.election.epoch;
                        self.become_unattached(now, epoch, out);
                    }
                }
                RoleState::Prospective { .. } => self.prospective_lost(now, out),
                RoleState::Resigned => {
                    // Kafka 4.x: a resigned leader moves to the next epoch, Unattached, and stands from
                    // there (a removed one so that Fetch responses stop naming it). At i32::MAX it stays
                    // at its epoch (Unattached, no leader named).
                    let epoch = self.next_epoch(out).unwrap_or(self.election.epoch);
                    self.become_unattached(now, epoch, out);
                }
                _ => self.timers.election = None,
            },
            Timer::FetchTimeout => {
                if let RoleState::Follower { .. } = self.role {
                    if self.is_voter() {
                        self.become_prospective(now, out);
                    } else {
                        let epoch = self.election.epoch;
                        self.become_unattached(now, epoch, out);
                    }
                }
            }
            Timer::Fetch => {
                // An outstanding fetch past its deadline is taken as lost.
                self.outstanding_fetch = None;
                self.sent_snapshot_fetch = None;
                self.send_fetch(now, out);
            }
        }
    }
}
