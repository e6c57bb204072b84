//! Message delivery, bounded duplication, and the garbage collection of messages their receiver is
//! certain to ignore.

use super::{kept_once, KraftModel, Tx};
use crate::types::{bit, Envelope, ErrorCode, Id, Kind, Log, Mask, Msg, Role, Server, State};

impl KraftModel {
    /// True if `Duplicate(env)` is enabled: `env` is in flight, duplicates remain, and the network
    /// keeps more than one copy of it (on a duplicating network, and for the messages `gc` keeps
    /// once, one copy already stands for any number).
    pub(super) fn may_duplicate(&self, st: &State, env: &Envelope) -> bool {
        st.history.duplicates < self.cfg.max_duplicates
            && !kept_once(&self.cfg, &env.msg)
            && st.network.binary_search(env).is_ok()
    }
}

impl Tx<'_> {
    /// A second copy of `env` goes in flight. Kafka resends a Vote, BeginQuorumEpoch or
    /// EndQuorumEpoch request whose answer did not come in time (its `RequestManager` timeout), with
    /// the same content while the sender stays in the same state, and the first copy may still
    /// arrive: the receiver handles the request twice and answers twice. The network is
    /// unordered, so a copy made now is the retry sent when the original was and delayed; and
    /// both copies are alike to `collect_garbage` and `forget_requests`, so a retry the sender's
    /// state change would cancel goes with the original.
    pub(super) fn duplicate(&mut self, env: Envelope) {
        let pos = self.s.network.partition_point(|e| *e < env);
        self.s.network.insert(pos, env);
        self.s.history.duplicates += 1;
    }

    pub(super) fn deliver(&mut self, env: Envelope) {
        let Envelope { src, dst, msg } = env;
        if dst as usize >= self.s.servers.len() {
            return;
        }
        match msg {
            Msg::VoteRequest {
                epoch,
                voter_dir,
                last_epoch,
                last_offset,
            } => self.on_vote_request(dst, src, epoch, voter_dir, last_epoch, last_offset),
            Msg::PreVoteRequest {
                epoch,
                voter_dir,
                last_epoch,
                last_offset,
            } => self.on_pre_vote_request(dst, src, epoch, voter_dir, last_epoch, last_offset),
            Msg::VoteResponse {
                epoch,
                granted,
                error,
                leader,
            } => {
                // Kafka's maybeHandleCommonResponse: a newer epoch, or the leader of the current epoch
                // while none is known, is followed; only then is the vote itself counted.
                let s = &self.s.servers[dst as usize];
                let leader = leader.filter(|&l| l != dst);
                if epoch > s.epoch {
                    match leader {
                        Some(l) => self.become_follower(dst, l, epoch),
                        None => self.become_unattached(dst, epoch),
                    }
                } else if epoch == s.epoch && error == ErrorCode::None {
                    match leader {
                        Some(l) if Self::leaderless(s) => self.become_follower(dst, l, epoch),
                        Some(_) if s.role != Role::Prospective => {}
                        _ if s.role == Role::Candidate && granted => {
                            self.server(dst).votes |= bit(src);
                            self.maybe_become_leader(dst);
                        }
                        // Kafka's response has no pre-vote flag: a prospective counts any grant of
                        // its epoch.
                        _ if s.role == Role::Prospective && granted => {
                            self.server(dst).pre_votes |= bit(src);
                            self.maybe_become_candidate(dst);
                        }
                        _ => {}
                    }
                }
            }
            // BeginQuorumEpoch's voter key is checked after the transition (Kafka 4.4
            // `handleBeginQuorumEpochRequest`): a mismatch only changes the unmodelled answer.
            Msg::BeginQuorumEpoch { epoch, .. } | Msg::EndQuorumEpoch { epoch } => {
                // Kafka's maybeTransition: a leader id for a newer epoch, or for the current epoch
                // while no leader is known, makes the receiver its follower.
                let s = &self.s.servers[dst as usize];
                if epoch > s.epoch || (epoch == s.epoch && Self::leaderless(s)) {
                    self.become_follower(dst, src, epoch);
                }
            }
            Msg::FetchRequest(key) => {
                let resp = self.handle_fetch(dst, src, key);
                self.send(dst, src, Msg::FetchResponse(resp));
            }
            Msg::FetchResponse(r) => {
                let s = self.server(dst);
                if s.fetching == Some(r.request) {
                    s.fetching = None;
                    self.on_fetch_response(dst, src, r);
                }
            }
        }
    }

    /// Drops messages their receiver is certain to ignore: responses and leader announcements of an
    /// older epoch; those of the receiver's epoch that it can no longer use (a vote grant at a leader
    /// or resigned leader of that epoch, a refusal naming the leader or a BeginQuorumEpoch /
    /// EndQuorumEpoch at a receiver that knows the epoch's leader and cannot lose it); fetch responses
    /// that match no outstanding request. Each stays ignorable: receivers' epochs and fetch keys only
    /// move forward, a Leader or Resigned leader of an epoch is never Candidate, Prospective or
    /// leaderless in it again, and `may_lose_leader` only shrinks once changes and crashes are spent
    /// (no new VotersRecord can appear).
    pub(super) fn collect_garbage(&mut self) {
        let lose = self.may_lose_leader();
        let servers = &self.s.servers;
        // True if `d` (server `i`) knows no leader of its epoch now, or may lose it later in the epoch
        // (`may_lose_leader`); a Leader or Resigned leader never again lacks one in its epoch.
        let learns_leader = |d: &Server, i: Id| {
            Self::leaderless(d)
                || (matches!(d.role, Role::Follower | Role::Prospective) && lose & bit(i) != 0)
        };
        let max_epoch = self.cfg.max_epoch;
        self.s.network.retain(|env| {
            let d = &servers[env.dst as usize];
            // The sender's epoch is final: no epoch above `max_epoch` exists in a run (candidates
            // and resigned leaders move only below it), so no answer can move the sender on.
            let src_final = servers[env.src as usize].epoch >= max_epoch;
            match env.msg {
                // An error answer (FENCED_LEADER_EPOCH) is followed only for its newer epoch
                // (`maybeHandleCommonResponse`); at the receiver's epoch or below it is ignored.
                Msg::VoteResponse { epoch, error, .. } if error != ErrorCode::None => {
                    epoch > d.epoch
                }
                // An answer of the receiver's epoch is used by the receiver's current role only:
                // every role change and restart drops the answers in flight to it
                // (`forget_requests`, Kafka's `resetConnections`), and nothing else changes its
                // role, epoch or known leader. So it matters only if it names the epoch's leader
                // (someone other than the receiver) to a receiver that knows none, or grants a
                // (pre-)vote to a Candidate or Prospective; at a Follower, a Leader, a Resigned
                // leader or a Prospective that knows the leader it is ignored until it is dropped.
                Msg::VoteResponse {
                    epoch,
                    granted,
                    leader,
                    ..
                } => {
                    epoch > d.epoch
                        || (epoch == d.epoch
                            && ((leader.is_some_and(|l| l != env.dst) && Self::leaderless(d))
                                || (granted
                                    && matches!(d.role, Role::Candidate | Role::Prospective))))
                }
                // A leader announcement of the receiver's epoch only matters while the receiver knows
                // no leader of it, now or later in the epoch (Kafka's `maybeTransition`).
                Msg::BeginQuorumEpoch { epoch, .. } | Msg::EndQuorumEpoch { epoch } => {
                    epoch > d.epoch || (epoch == d.epoch && learns_leader(d, env.dst))
                }
                Msg::FetchResponse(r) => d.fetching == Some(r.request),
                // A request of an older epoch than its receiver's changes nothing there: the
                // receiver only answers FENCED_LEADER_EPOCH with its epoch (≤ `max_epoch`), which a
                // sender already at `max_epoch` ignores. A pre-vote request of the receiver's own
                // epoch changes nothing at the receiver either (a pre-vote records nothing) and its
                // answer carries that epoch, below a final sender's: ignored too. (The only trace
                // such a delivery leaves is the `PRE_VOTE_REFUSED_BY_FOLLOWER` event, which feeds a
                // `sometimes` example, not a safety property.) Receivers' epochs only grow, so the
                // message stays dead.
                Msg::VoteRequest { epoch, .. } => !(src_final && epoch < d.epoch),
                Msg::PreVoteRequest { epoch, .. } => {
                    !(src_final && epoch < max_epoch && epoch <= d.epoch)
                }
                Msg::FetchRequest(_) => true,
            }
        });
    }

    /// Server `i` changed role (or restarted): drops what Kafka would ignore from then on
    /// (`gc` only). Kafka resets its `RequestManager` on every transition (`resetConnections` in
    /// `onBecomeLeader`/`onBecomeCandidate`/`onBecomeProspective`/`onBecomeFollower`,
    /// `transitionToUnattached`/`transitionToResigned`; checked with `javap` on kafka-raft 4.4.0)
    /// and ignores a response whose request is no longer expected (`handleInboundMessage`:
    /// `isResponseExpected`); a crash loses the connections too. So the answers in flight to `i`
    /// are dead, and so is a request from `i` whose delivery changes nothing at its receiver but
    /// the answer: a pre-vote request of an epoch the receiver already holds (a pre-vote records
    /// nothing) and a vote request of an older epoch (answered FENCED_LEADER_EPOCH only); the
    /// receiver's epoch only grows, so that stays true until delivery.
    ///
    /// Not a pure reduction of the model (with `gc` off, as conformance replays it, those answers
    /// stay deliverable and a later Prospective of the same epoch may count an old grant): it
    /// restricts the model to what Kafka does. Every Kafka run is still a run of the checked model:
    /// Kafka drops exactly these answers, and answers to requests sent before a transition but
    /// delivered after it stay deliverable here (a superset of Kafka's runs).
    pub(super) fn forget_requests(&mut self, i: Id) {
        let servers = &self.s.servers;
        self.s.network.retain(|e| {
            let dst_epoch = servers[e.dst as usize].epoch;
            let dead = match e.msg {
                Msg::VoteResponse { .. } | Msg::FetchResponse(_) => e.dst == i,
                Msg::PreVoteRequest { epoch, .. } => e.src == i && epoch <= dst_epoch,
                Msg::VoteRequest { epoch, .. } => e.src == i && epoch < dst_epoch,
                _ => false,
            };
            !dead
        });
    }

    /// The servers that may still become leaderless in their current epoch while following (or
    /// standing as prospective under) its leader: by a restart (Unattached, or Candidate if it voted
    /// for itself) while crashes remain, or as an observer whose leader is gone (`FetchTimeout`),
    /// which a voter becomes only by a VotersRecord without it — one in some log or message now
    /// (a fetch or a truncation can make it latest), or one a remaining membership change appends.
    pub(super) fn may_lose_leader(&self) -> Mask {
        let h = &self.s.history;
        if h.crashes < self.cfg.max_crashes
            || h.changes < self.cfg.max_changes
            || h.disk_losses < self.cfg.max_disk_losses
        {
            return Mask::MAX;
        }
        // A replica whose disk was replaced is an observer of every set that holds an older key of
        // its id.
        let mut outside = !self.cfg.bootstrap()
            | self
                .s
                .servers
                .iter()
                .enumerate()
                .filter(|(_, s)| s.dir != 0)
                .fold(0, |m, (i, _)| m | bit(i as Id));
        let mut note = |log: &Log| {
            for e in log.as_slice() {
                if let Kind::Voters(set) = e.kind {
                    outside |= !set.ids();
                }
            }
        };
        for s in &self.s.servers {
            note(&s.log);
        }
        for env in &self.s.network {
            if let Msg::FetchResponse(r) = &env.msg {
                note(&r.records);
            }
        }
        outside
    }
}
