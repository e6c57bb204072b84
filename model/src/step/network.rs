//! Message delivery and the garbage collection of messages their receiver is certain to ignore.

use super::Tx;
use crate::types::{bit, Envelope, ErrorCode, Kind, Log, Mask, Msg, Role};

impl Tx<'_> {
    pub(super) fn deliver(&mut self, env: Envelope) {
        let Envelope { src, dst, msg } = env;
        if dst as usize >= self.s.servers.len() {
            return;
        }
        match msg {
            Msg::VoteRequest {
                epoch,
                last_epoch,
                last_offset,
            } => self.on_vote_request(dst, src, epoch, last_epoch, last_offset),
            Msg::PreVoteRequest {
                epoch,
                last_epoch,
                last_offset,
            } => self.on_pre_vote_request(dst, src, epoch, last_epoch, last_offset),
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
            Msg::BeginQuorumEpoch { epoch } | Msg::EndQuorumEpoch { epoch } => {
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
    /// older epoch, vote refusals that can teach their receiver nothing, fetch responses that match no
    /// outstanding request. Receivers' epochs and fetch keys only move forward, so such a message
    /// stays ignorable.
    pub(super) fn collect_garbage(&mut self) {
        let lose = self.may_lose_leader();
        let servers = &self.s.servers;
        self.s.network.retain(|env| {
            let d = &servers[env.dst as usize];
            match env.msg {
                // A refusal only matters if it carries a newer epoch, or names the leader of the
                // receiver's epoch (someone other than the receiver) while the receiver knows none —
                // now, or later in the same epoch (see `may_lose_leader`). A leader or resigned
                // leader never again lacks one in its epoch.
                Msg::VoteResponse {
                    epoch,
                    granted: false,
                    leader,
                    ..
                } => {
                    epoch > d.epoch
                        || (epoch == d.epoch
                            && leader.is_some_and(|l| l != env.dst)
                            && (Self::leaderless(d)
                                || (matches!(d.role, Role::Follower | Role::Prospective)
                                    && lose & bit(env.dst) != 0)))
                }
                Msg::VoteResponse { epoch, .. }
                | Msg::BeginQuorumEpoch { epoch }
                | Msg::EndQuorumEpoch { epoch } => epoch >= d.epoch,
                Msg::FetchResponse(r) => d.fetching == Some(r.request),
                Msg::VoteRequest { .. } | Msg::PreVoteRequest { .. } | Msg::FetchRequest(_) => true,
            }
        });
    }

    /// The servers that may still become leaderless in their current epoch while following (or
    /// standing as prospective under) its leader: by a restart (Unattached, or Candidate if it voted
    /// for itself) while crashes remain, or as an observer whose leader is gone (`FetchTimeout`),
    /// which a voter becomes only by a VotersRecord without it — one in some log or message now
    /// (a fetch or a truncation can make it latest), or one a remaining membership change appends.
    pub(super) fn may_lose_leader(&self) -> Mask {
        let h = &self.s.history;
        if h.crashes < self.cfg.max_crashes || h.changes < self.cfg.max_changes {
            return Mask::MAX;
        }
        let mut outside = !self.cfg.bootstrap();
        let mut note = |log: &Log| {
            for e in log.as_slice() {
                if let Kind::Voters(set) = e.kind {
                    outside |= !set;
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
