//! Role transitions (Unattached, Follower, Prospective, Candidate, Leader, Resigned), restart,
//! and the vote and pre-vote handling that drives them.

use super::Tx;
use crate::config::Bug;
use crate::kraft_version::kraft_version;
use crate::spec::{is_majority, latest_voters, latest_voters_offset, log_up_to_date};
use crate::types::{
    bit, event, ids, violation, ChangeOp, ErrorCode, Id, Kind, Msg, Reply, Role, Server, VoterSet,
    MAX_SERVERS, NO_DIR,
};

impl Tx<'_> {
    /// Leaving the leader role answers the pending change with NOT_LEADER_OR_FOLLOWER.
    pub(super) fn leave_leadership(&mut self, i: Id) {
        let s = self.server(i);
        if let Some(p) = s.pending.take() {
            // Kafka's controller fails a pending UpdateFeatures with NOT_CONTROLLER.
            let error = match p.op {
                ChangeOp::KraftVersionUpgrade => ErrorCode::NotController,
                _ => ErrorCode::NotLeaderOrFollower,
            };
            self.replies.push(Reply {
                server: i,
                op: p.op,
                error,
            });
        }
    }

    /// Clears the volatile per-role fields (each role sets what it needs afterwards).
    pub(super) fn reset_volatile(s: &mut Server) {
        s.leader = None;
        s.votes = 0;
        s.epoch_start = 0;
        s.end = [None; MAX_SERVERS];
        s.caught_up = 0;
        s.peer_dirs = 0;
        s.other_caught_up = 0;
        s.pending = None;
        s.volatile_voters = VoterSet::default();
        s.fetching = None;
        s.fetched = false;
        s.pre_votes = 0;
        s.fetching_snapshot = None;
    }

    /// Enter `epoch` (≥ current): a new epoch forgets the vote. Leader and Resigned hold no HW after
    /// the transition (Kafka: the HW carries over only between Unattached, Follower and Candidate).
    pub(super) fn enter(&mut self, i: Id, epoch: u8, role: Role) {
        let was = self.server(i).role;
        if was == Role::Leader {
            self.leave_leadership(i);
        }
        let s = self.server(i);
        if epoch > s.epoch {
            s.epoch = epoch;
            s.voted_for = None;
        }
        if matches!(was, Role::Resigned) {
            s.hw = None;
        }
        Self::reset_volatile(s);
        s.role = role;
        if self.cfg.gc {
            self.forget_requests(i);
        }
    }

    pub(super) fn become_unattached(&mut self, i: Id, epoch: u8) {
        self.enter(i, epoch, Role::Unattached);
    }

    pub(super) fn become_follower(&mut self, i: Id, leader: Id, epoch: u8) {
        self.enter(i, epoch, Role::Follower);
        self.server(i).leader = Some(leader);
    }

    /// A timed-out voter stands: with pre-vote it first becomes Prospective, else Candidate.
    pub(super) fn stand(&mut self, i: Id) {
        if self.cfg.pre_vote {
            self.become_prospective(i);
        } else {
            self.become_candidate(i);
        }
    }

    /// KIP-996: Prospective in the same epoch, keeping its vote, known leader and HW; pre-votes asked
    /// from the other voters of its latest set at the current epoch (the `prevote-bumps-epoch` bug
    /// moves to the next epoch first).
    pub(super) fn become_prospective(&mut self, i: Id) {
        let s = self.server(i);
        let (leader, voted_for) = (s.leader, s.voted_for);
        let mut epoch = s.epoch;
        if self.cfg.has(Bug::PrevoteBumpsEpoch) {
            epoch += 1;
        }
        self.enter(i, epoch, Role::Prospective);
        let bumped = self.cfg.has(Bug::PrevoteBumpsEpoch);
        let s = self.server(i);
        if !bumped {
            s.leader = leader;
            s.voted_for = voted_for;
        }
        s.pre_votes = bit(i);
        self.ask_voters(i, |epoch, voter_dir, last_epoch, last_offset| {
            Msg::PreVoteRequest {
                epoch,
                voter_dir,
                last_epoch,
                last_offset,
            }
        });
        self.maybe_become_candidate(i);
    }

    /// A prospective with a pre-vote majority of its latest set becomes Candidate.
    pub(super) fn maybe_become_candidate(&mut self, i: Id) {
        let bootstrap = self.cfg.bootstrap();
        let s = self.server(i);
        if s.role == Role::Prospective
            && is_majority(s.pre_votes, latest_voters(bootstrap, &s.log).ids())
        {
            self.s.history.events |= event::PRE_VOTE_WON;
            self.become_candidate(i);
        }
    }

    pub(super) fn become_candidate(&mut self, i: Id) {
        let epoch = self.server(i).epoch + 1;
        if self.cfg.pre_vote {
            self.s.history.opened |= 1 << epoch;
        }
        self.enter(i, epoch, Role::Candidate);
        let s = self.server(i);
        s.voted_for = Some(i);
        s.votes = bit(i);
        self.ask_voters(i, vote_request);
        self.maybe_become_leader(i);
    }

    pub(super) fn maybe_become_leader(&mut self, i: Id) {
        let bootstrap = self.cfg.bootstrap();
        let s = self.server(i);
        if s.role == Role::Candidate && is_majority(s.votes, latest_voters(bootstrap, &s.log).ids())
        {
            self.become_leader(i);
        }
    }

    /// Leader: start-of-epoch batch (LeaderChange; KRaftVersion + Voters while the latest set is the
    /// bootstrap checkpoint's), HW unknown, BeginQuorumEpoch to the other voters.
    pub(super) fn become_leader(&mut self, i: Id) {
        let epoch = self.server(i).epoch;
        self.enter(i, epoch, Role::Leader);
        let bootstrap = self.cfg.bootstrap();
        let cfg = self.cfg;
        let s = self.server(i);
        s.leader = Some(i);
        s.hw = None;
        s.epoch_start = s.log.len();
        let epoch = s.epoch;
        let voters = latest_voters(bootstrap, &s.log);
        // Kafka writes them while the voter set comes from the bootstrap checkpoint: a log that starts
        // at a snapshot has its set at offset `start − 1` (the snapshot's).
        let needs_voters_record = latest_voters_offset(&s.log).is_none()
            && s.log.start() == 0
            && kraft_version(cfg, &s.log) == 1;
        if !needs_voters_record && kraft_version(cfg, &s.log) == 0 {
            // Kafka's `LeaderState`: the volatile voter set starts with the leader's own key.
            s.volatile_voters = VoterSet::of(0).with(i, s.dir);
        }
        self.s.history.leaders[epoch as usize] |= bit(i);
        self.append(i, Kind::LeaderChange);
        if needs_voters_record {
            self.append(i, Kind::KRaftVersion);
            self.append(i, Kind::Voters(voters));
        }
        self.tell_voters(i, |voter_dir| Msg::BeginQuorumEpoch { epoch, voter_dir });
        self.advance_hw(i);
    }

    /// Resigned: EndQuorumEpoch to the other voters of the latest set.
    pub(super) fn resign(&mut self, i: Id) {
        let epoch = self.server(i).epoch;
        self.enter(i, epoch, Role::Resigned);
        self.announce_resignation(i);
    }

    /// Kafka's `ResignedState` (entered on resignation, and on restart by a replica that led its
    /// epoch): no HW, itself still the epoch's leader (fetches are answered naming it), and
    /// EndQuorumEpoch to every other voter of its latest set (`pollResigned`).
    fn announce_resignation(&mut self, i: Id) {
        let s = self.server(i);
        s.role = Role::Resigned;
        s.hw = None;
        s.leader = Some(i);
        let epoch = s.epoch;
        self.tell_voters(i, |_| Msg::EndQuorumEpoch { epoch });
    }

    /// Sends `msg(directory id)` from `i` to every other voter of `i`'s latest set, each naming
    /// the receiver's voter key in that set.
    fn tell_voters(&mut self, i: Id, msg: impl Fn(u8) -> Msg) {
        let voters = latest_voters(self.cfg.bootstrap(), &self.server(i).log);
        for v in ids(voters.ids()).filter(|&v| v != i) {
            self.send(i, v, msg(voters.request_dir(v)));
        }
    }

    /// Asks every other voter of `i`'s latest set for a (pre-)vote: `request(epoch, voter's
    /// directory id, last epoch, LEO)` built from `i`'s epoch and log as they are now.
    fn ask_voters(&mut self, i: Id, request: fn(u8, u8, u8, u8) -> Msg) {
        let s = self.server(i);
        let (epoch, last_epoch, leo) = (s.epoch, s.log.last_epoch(), s.log.len());
        self.tell_voters(i, |dir| request(epoch, dir, last_epoch, leo));
    }

    /// Restart: durable epoch, vote and log stay (and the epoch's leader, which Kafka stores with the
    /// vote); a leader comes back Resigned, a replica that voted for itself (and is a voter) Candidate,
    /// one that knew the epoch's leader its Follower if that leader is a voter of its latest set (Kafka
    /// knows its endpoints only then), anyone else Unattached. Pending change lost unanswered.
    /// A restarted Candidate asks the other voters for their votes again at its epoch, as Kafka 4.4
    /// does (`QuorumState.initialize` makes it a `CandidateState`, whose first `pollCandidate` sends
    /// Vote requests to every voter that has not answered: after a restart, all of them). A restarted
    /// leader (stored leader id its own) sends EndQuorumEpoch to the other voters as on resignation
    /// (`initialize` makes it a `ResignedState` with every other voter unacknowledged, and its first
    /// `pollResigned` sends them EndQuorumEpoch).
    pub(super) fn restart(&mut self, i: Id) {
        let bootstrap = self.cfg.bootstrap();
        let s = self.server(i);
        let was_leader = matches!(s.role, Role::Leader | Role::Resigned);
        let voters = latest_voters(bootstrap, &s.log);
        let voted_self = s.voted_for == Some(i) && voters.is_voter(i, s.dir);
        // Kafka's `QuorumState.initialize`: a stored leader whose endpoints the latest voter set has
        // is followed again (a `FollowerState` that has not fetched yet, no HW).
        let stored_leader = s.leader.filter(|&l| l != i && voters.has_id(l));
        Self::reset_volatile(s);
        s.hw = None;
        self.truncate_to_latest_snapshot(i);
        let s = self.server(i);
        if was_leader {
            self.announce_resignation(i);
        } else if voted_self {
            s.role = Role::Candidate;
            s.votes = bit(i);
            self.maybe_become_leader(i);
            if self.server(i).role == Role::Candidate {
                self.ask_voters(i, vote_request);
            }
        } else if let Some(l) = stored_leader {
            s.role = Role::Follower;
            s.leader = Some(l);
        } else {
            s.role = Role::Unattached;
        }
    }

    /// A replaced disk: the server comes back formatted afresh under the same node id, with a new
    /// directory id, epoch 0, no vote, an empty log and no snapshot, Unattached: an observer of
    /// the bootstrap set (its new key is in no voter set). Its pending change is lost unanswered,
    /// as on a restart.
    pub(super) fn lose_disk(&mut self, i: Id) {
        let s = self.server(i);
        *s = Server {
            dir: s.dir + 1,
            ..Server::default()
        };
    }

    /// A replaced disk is a new process: even where stale messages are kept (`gc` off), the answers
    /// to the old process's requests die with its connections, and so do its requests that expect
    /// one (a Vote or Fetch answer would reach the new process, at epoch 0, naming an epoch it
    /// never saw, possibly with itself as leader). Kafka correlates answers on the connection.
    pub(super) fn forget_exchanges(&mut self, i: Id) {
        self.s.network.retain(|e| match e.msg {
            Msg::VoteResponse { .. } | Msg::FetchResponse(_) => e.dst != i,
            Msg::VoteRequest { .. } | Msg::PreVoteRequest { .. } | Msg::FetchRequest(_) => {
                e.src != i
            }
            _ => true,
        });
    }

    /// Kafka 4.4's `isValidVoterKey`, checked after the epoch transition of a (pre-)vote request:
    /// a request meant for another directory id of this id is refused with INVALID_VOTER_KEY
    /// (answered here, true). The `vote-ignores-directory-id` bug skips it.
    fn refuse_other_key(&mut self, r: Id, c: Id, voter_dir: u8) -> bool {
        let s = &self.s.servers[r as usize];
        // A request naming no directory id (a voter whose key is not known) is valid for any.
        if voter_dir == s.dir || voter_dir == NO_DIR || self.cfg.has(Bug::VoteIgnoresDirectoryId) {
            return false;
        }
        let msg = Msg::VoteResponse {
            epoch: s.epoch,
            granted: false,
            error: ErrorCode::InvalidVoterKey,
            leader: s.leader,
        };
        self.send(r, c, msg);
        true
    }

    /// Ghost: a grant for the key (r, voter_dir) by a replica that does not hold it.
    fn note_grant(&mut self, r: Id, voter_dir: u8, granted: bool) {
        if granted && self.s.servers[r as usize].dir != voter_dir {
            self.s.history.violations |= violation::KEY_NOT_HELD_COUNTED;
        }
    }

    /// True if `s` knows no leader of its epoch and may learn one (Kafka's `maybeTransition` for the
    /// current epoch: Unattached, Candidate, or Prospective without a known leader).
    pub(super) fn leaderless(s: &Server) -> bool {
        match s.role {
            Role::Unattached | Role::Candidate => true,
            Role::Prospective => s.leader.is_none(),
            _ => false,
        }
    }

    /// Answers a request of `epoch` from `c` that is older than `r`'s epoch; true if it did.
    pub(super) fn fence_vote(&mut self, r: Id, c: Id, epoch: u8) -> bool {
        let s = &self.s.servers[r as usize];
        if epoch >= s.epoch {
            return false;
        }
        let msg = Msg::VoteResponse {
            epoch: s.epoch,
            granted: false,
            error: ErrorCode::FencedLeaderEpoch,
            leader: s.leader,
        };
        self.send(r, c, msg);
        true
    }

    /// KIP-996 pre-vote handling (Kafka 4.4 `handleVoteRequest` with `PreVote`): a newer epoch moves
    /// the receiver to Unattached as for any vote request; nothing is recorded. Grants rest on the log
    /// check alone, per role as Kafka's `canGrantVote`: Unattached, Prospective, Candidate and
    /// Resigned grant an up-to-date pre-vote, a Follower only until it has fetched from its leader,
    /// a Leader never.
    pub(super) fn on_pre_vote_request(
        &mut self,
        r: Id,
        c: Id,
        epoch: u8,
        voter_dir: u8,
        last_epoch: u8,
        last_offset: u8,
    ) {
        if self.fence_vote(r, c, epoch) {
            return;
        }
        if epoch > self.s.servers[r as usize].epoch {
            self.become_unattached(r, epoch);
        }
        if self.refuse_other_key(r, c, voter_dir) {
            return;
        }
        let log_ok = self.cfg.has(Bug::VoteIgnoresLog)
            || log_up_to_date(last_epoch, last_offset, &self.s.servers[r as usize].log);
        let s = &self.s.servers[r as usize];
        let granted = log_ok
            && match s.role {
                Role::Unattached | Role::Prospective | Role::Candidate | Role::Resigned => true,
                Role::Follower => !s.fetched,
                Role::Leader => false,
            };
        if s.role == Role::Follower && s.fetched {
            self.s.history.events |= event::PRE_VOTE_REFUSED_BY_FOLLOWER;
        }
        let msg = Msg::VoteResponse {
            epoch: s.epoch,
            granted,
            error: ErrorCode::None,
            leader: s.leader,
        };
        self.note_grant(r, voter_dir, granted);
        self.send(r, c, msg);
    }

    /// Kafka 4.4's vote handling (`unattachedOrProspectiveCanGrantVote`): an Unattached (or, with
    /// pre-vote, Prospective) replica that voted in this epoch grants again to the same candidate only
    /// (no other check); one that has not voted grants if it knows no leader and the candidate's log
    /// is up to date, and records the vote (durably). Follower, Candidate, Leader and Resigned refuse.
    pub(super) fn on_vote_request(
        &mut self,
        r: Id,
        c: Id,
        epoch: u8,
        voter_dir: u8,
        last_epoch: u8,
        last_offset: u8,
    ) {
        if self.fence_vote(r, c, epoch) {
            return;
        }
        if epoch > self.s.servers[r as usize].epoch {
            self.become_unattached(r, epoch);
        }
        if self.refuse_other_key(r, c, voter_dir) {
            return;
        }
        let ignore_log = self.cfg.has(Bug::VoteIgnoresLog);
        let s = self.server(r);
        let granted = matches!(s.role, Role::Unattached | Role::Prospective)
            && match s.voted_for {
                Some(v) => v == c,
                None => {
                    s.leader.is_none()
                        && (ignore_log || log_up_to_date(last_epoch, last_offset, &s.log))
                }
            };
        if granted {
            s.voted_for = Some(c);
        }
        let msg = Msg::VoteResponse {
            epoch: s.epoch,
            granted,
            error: ErrorCode::None,
            leader: s.leader,
        };
        self.note_grant(r, voter_dir, granted);
        self.send(r, c, msg);
    }
}

/// A Vote request from its fields (the constructor [`Tx::ask_voters`] takes).
fn vote_request(epoch: u8, voter_dir: u8, last_epoch: u8, last_offset: u8) -> Msg {
    Msg::VoteRequest {
        epoch,
        voter_dir,
        last_epoch,
        last_offset,
    }
}
