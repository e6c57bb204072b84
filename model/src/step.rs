//! Transitions: which actions are enabled, and what each does (Kafka 3.9 behaviour, contract §1–§10).

use crate::config::{Bug, ConfigError, FetchMode, ModelConfig, Start};
use crate::spec::{
    check_change, diverging, is_majority, latest_voters, latest_voters_offset, log_up_to_date,
    membership_changes_from, next_high_watermark, reported_committed_offset,
    reported_committed_voters, size, truncation_offset,
};
use crate::types::{
    bit, event, ids, violation, Action, ChangeOp, Entry, Envelope, ErrorCode, FetchKey,
    FetchResponse, History, Id, Kind, Log, Mask, Msg, Reply, Role, Server, State, MAX_SERVERS,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The KRaft membership model. `cfg` holds the bounds, knobs and bug flag.
#[derive(Debug)]
pub struct KraftModel {
    /// Bounds and knobs.
    pub cfg: ModelConfig,
    /// `sometimes` properties already exemplified in this run (see [`KraftModel::example_once`]).
    examples: Arc<[AtomicBool; 32]>,
    /// Check only these properties (a harm search); `None` = all.
    pub only: Option<&'static [&'static str]>,
}

/// The result of one step: the next state and the operator replies it produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// State after the action.
    pub state: State,
    /// Replies to operator requests produced by this action (refusals, NONE on commit, timeouts,
    /// NOT_LEADER_OR_FOLLOWER on leadership loss).
    pub replies: Vec<Reply>,
}

/// A transition in progress.
struct Tx<'a> {
    cfg: &'a ModelConfig,
    s: State,
    replies: Vec<Reply>,
}

/// A clone starts with no `sometimes` example recorded, so each run of a clone reports its own.
impl Clone for KraftModel {
    fn clone(&self) -> Self {
        KraftModel {
            only: self.only,
            ..Self::unchecked(self.cfg)
        }
    }
}

impl KraftModel {
    /// A model with validated bounds.
    pub fn new(cfg: ModelConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        Ok(Self::unchecked(cfg))
    }

    fn unchecked(cfg: ModelConfig) -> Self {
        KraftModel {
            cfg,
            examples: Arc::new(std::array::from_fn(|_| AtomicBool::new(false))),
            only: None,
        }
    }

    /// Evaluates `sometimes` property number `idx` until it first holds, then reports false: one
    /// example is all a `sometimes` property needs, and stateright would otherwise re-record the
    /// example (cloning its path) in every state where it holds.
    pub fn example_once(&self, idx: usize, f: fn(&KraftModel, &State) -> bool, s: &State) -> bool {
        let flag = &self.examples[idx];
        if flag.load(Ordering::Relaxed) {
            return false;
        }
        let holds = f(self, s);
        if holds {
            flag.store(true, Ordering::Relaxed);
        }
        holds
    }

    /// The bootstrap state: every server at epoch 0, no vote, empty log, Unattached; the bootstrap
    /// voter set lives at offset −1 (in the config), so the initial voters and the joiners differ only
    /// by membership in it.
    pub fn fresh_state(&self) -> State {
        State {
            bootstrap: self.cfg.bootstrap(),
            servers: vec![Server::default(); self.cfg.servers() as usize],
            network: Vec::new(),
            history: History {
                opened: if self.cfg.pre_vote { 1 } else { 0 },
                ..History::default()
            },
        }
    }

    /// The actions that turn the fresh state into the elected start: server 0 wins epoch 1 with every
    /// voter's vote, then every other voter fetches twice (records, then the HW).
    pub fn election_prefix(&self) -> Vec<Action> {
        let sync = KraftModel::unchecked(ModelConfig {
            fetch: FetchMode::Sync,
            gc: false,
            bug: None, // a bug variant starts where the protocol does
            ..self.cfg
        });
        let mut actions = vec![Action::ElectionTimeout(0)];
        let mut s = sync
            .step(&sync.fresh_state(), Action::ElectionTimeout(0))
            .map(|st| st.state);
        while let Some(cur) = s.clone() {
            let Some(env) = cur.network.first().copied() else {
                break;
            };
            actions.push(Action::Deliver(env));
            s = sync.step(&cur, Action::Deliver(env)).map(|st| st.state);
        }
        for _round in 0..2 {
            for v in 1..self.cfg.voters {
                actions.push(Action::Fetch {
                    replica: v,
                    leader: 0,
                });
            }
        }
        // Joiners: discovery (Unattached → Follower), records, HW; they end caught up as observers.
        for _round in 0..3 {
            for j in self.cfg.voters..self.cfg.servers() {
                actions.push(Action::Fetch {
                    replica: j,
                    leader: 0,
                });
            }
        }
        actions
    }

    /// The initial state for the configured [`Start`].
    pub fn initial_state(&self) -> State {
        let fresh = self.fresh_state();
        match self.cfg.start {
            Start::Fresh => fresh,
            Start::Elected => {
                let sync = KraftModel::unchecked(ModelConfig {
                    fetch: FetchMode::Sync,
                    gc: false,
                    bug: None, // a bug variant starts where the protocol does
                    ..self.cfg
                });
                let mut s = fresh;
                for a in self.election_prefix() {
                    if let Some(st) = sync.step(&s, a) {
                        s = st.state;
                    }
                }
                s
            }
        }
    }

    /// True if server `i` is a voter of its own latest set.
    fn is_voter(&self, s: &Server, i: Id) -> bool {
        latest_voters(self.cfg.bootstrap(), &s.log) & bit(i) != 0
    }

    /// Size of the start-of-epoch batch server `s` would write as leader.
    fn start_batch_len(s: &Server) -> u8 {
        if latest_voters_offset(&s.log).is_none() {
            3
        } else {
            1
        }
    }

    /// True if server `i` may start an election now (voter of its latest set, epoch and log bounds).
    fn may_stand(&self, s: &Server, i: Id) -> bool {
        self.is_voter(s, i)
            && s.epoch < self.cfg.max_epoch
            && s.log.len() + Self::start_batch_len(s) <= self.cfg.max_log
    }

    /// True if `replica` may fetch from `leader` now. Followers fetch from their leader; an
    /// Unattached replica with no known leader fetches from whoever leads (an observer's bootstrap
    /// discovery, or a voter finding the leader again). In sync mode the target must be a leader.
    pub fn may_fetch(&self, st: &State, replica: Id, leader: Id) -> bool {
        if replica == leader {
            return false;
        }
        let r = &st.servers[replica as usize];
        let l = &st.servers[leader as usize];
        let target_ok = l.role == Role::Leader && !self.resign_due(l, leader);
        let fetcher_ok = match r.role {
            Role::Follower => r.leader == Some(leader),
            // Kafka 3.9: an Unattached voter waits for BeginQuorumEpoch or its election timeout;
            // only an observer looks for the leader by fetching.
            Role::Unattached => target_ok && l.epoch >= r.epoch && !self.is_voter(r, replica),
            _ => false,
        };
        match self.cfg.fetch {
            FetchMode::Sync => fetcher_ok && target_ok,
            FetchMode::Async => fetcher_ok && r.fetching.is_none(),
        }
    }

    /// True if `i` leads and its own removal is committed: it must resign before doing anything else.
    pub fn resign_due(&self, s: &Server, i: Id) -> bool {
        let committed = match (s.hw, latest_voters_offset(&s.log)) {
            (Some(h), Some(o)) => o < h,
            _ => false,
        };
        s.role == Role::Leader && committed && !self.is_voter(s, i)
    }

    /// True if leader `s`'s check-quorum timer can expire: check-quorum on (and not the
    /// `no-check-quorum` bug) and more than one voter (Kafka never expires a one-voter set,
    /// KAFKA-16144). Without a clock the timer may expire at any moment: fetches can be late.
    fn check_quorum_may_expire(&self, s: &Server) -> bool {
        self.cfg.check_quorum
            && !self.cfg.has(Bug::NoCheckQuorum)
            && size(latest_voters(self.cfg.bootstrap(), &s.log)) > 1
    }

    /// The operations tried at each server.
    fn change_ops(&self) -> Vec<ChangeOp> {
        let n = self.cfg.servers();
        let mut ops: Vec<ChangeOp> = (0..n).map(ChangeOp::Add).collect();
        ops.extend((0..n).map(ChangeOp::Remove));
        if self.cfg.has(Bug::SwapVoter) {
            for out in 0..n {
                for add in 0..n {
                    if out != add {
                        ops.push(ChangeOp::Swap { out, add });
                    }
                }
            }
        }
        ops
    }

    /// True if `op` at `s` would append a record within the bounds.
    fn change_allowed(&self, st: &State, s: &Server, op: ChangeOp) -> bool {
        let Ok(new_set) = check_change(&self.cfg, s, op) else {
            return false;
        };
        if let ChangeOp::Swap { .. } = op {
            // The swap bug only targets odd-sized sets, where one-out-one-in breaks overlap.
            if size(latest_voters(self.cfg.bootstrap(), &s.log)) & 1 == 0 || size(new_set) == 0 {
                return false;
            }
        }
        st.history.changes < self.cfg.max_changes && s.log.len() < self.cfg.max_log
    }

    /// Enabled actions, in a deterministic order.
    pub fn enabled_actions(&self, st: &State, out: &mut Vec<Action>) {
        let cfg = &self.cfg;
        let n = cfg.servers();
        // Kafka resigns at the leader's next poll, before anything else reaches it; the implementation
        // does so within the input that commits the removal. A due Resign therefore comes first (the
        // only other orders differ by steps that do not involve the leader and commute with it), so a
        // trace always has it right after the step that made it due and conformance replays the two
        // as one implementation step.
        let due: Vec<Action> = (0..n)
            .filter(|&i| self.resign_due(&st.servers[i as usize], i))
            .map(Action::Resign)
            .collect();
        if !due.is_empty() {
            out.extend(due);
            return;
        }
        for i in 0..n {
            let s = &st.servers[i as usize];
            let voter = self.is_voter(s, i);
            match s.role {
                Role::Unattached | Role::Candidate if self.may_stand(s, i) => {
                    out.push(Action::ElectionTimeout(i))
                }
                Role::Prospective => out.push(Action::ElectionTimeout(i)),
                Role::Resigned if cfg.pre_vote && s.epoch < cfg.max_epoch => {
                    out.push(Action::ElectionTimeout(i))
                }
                Role::Resigned if self.may_stand(s, i) || (!voter && s.epoch < cfg.max_epoch) => {
                    out.push(Action::ElectionTimeout(i))
                }
                Role::Follower => {
                    let leader_gone = s.leader.is_none_or_not_leading(st, s.epoch);
                    if (voter && self.may_stand(s, i)) || (!voter && leader_gone) {
                        out.push(Action::FetchTimeout(i));
                    }
                }
                Role::Leader if self.resign_due(s, i) => out.push(Action::Resign(i)),
                Role::Leader => {
                    if self.check_quorum_may_expire(s) {
                        out.push(Action::CheckQuorumTimeout(i));
                    }
                    if s.pending.is_some() {
                        out.push(Action::ChangeTimeout(i));
                    }
                    if st.history.data < cfg.max_data && s.log.len() < cfg.max_log {
                        out.push(Action::ClientAppend(i));
                    }
                }
                _ => {}
            }
            if st.history.crashes < cfg.max_crashes {
                out.push(Action::Restart(i));
            }
            for op in self.change_ops() {
                if self.resign_due(s, i) {
                    break;
                }
                if cfg.refusal_steps || self.change_allowed(st, s, op) {
                    out.push(Action::Change { server: i, op });
                }
            }
            for l in 0..n {
                if self.may_fetch(st, i, l) {
                    out.push(Action::Fetch {
                        replica: i,
                        leader: l,
                    });
                }
            }
        }
        let mut last: Option<&Envelope> = None;
        for env in &st.network {
            if last == Some(env) {
                continue;
            }
            last = Some(env);
            out.push(Action::Deliver(*env));
            if cfg.network.lossy() {
                out.push(Action::Drop(*env));
            }
        }
    }

    /// Applies `action`; `None` if it is not enabled or changes nothing.
    pub fn step(&self, st: &State, action: Action) -> Option<Step> {
        let mut tx = Tx {
            cfg: &self.cfg,
            s: st.clone(),
            replies: Vec::new(),
        };
        let cfg = &self.cfg;
        let n = cfg.servers();
        match action {
            Action::ElectionTimeout(i) if i < n => {
                let s = &st.servers[i as usize];
                let voter = self.is_voter(s, i);
                match s.role {
                    Role::Unattached | Role::Candidate if self.may_stand(s, i) => tx.stand(i),
                    // KIP-996: a prospective that did not win goes back to its leader, if it knew one.
                    Role::Prospective => match s.leader {
                        Some(l) => tx.become_follower(i, l, s.epoch),
                        None => tx.become_unattached(i, s.epoch),
                    },
                    // Kafka 4.x: a resigned replica moves to the next epoch and stands from there.
                    Role::Resigned if cfg.pre_vote && s.epoch < cfg.max_epoch => {
                        tx.s.history.opened |= 1 << (s.epoch + 1);
                        tx.become_unattached(i, s.epoch + 1)
                    }
                    Role::Resigned if self.may_stand(s, i) => tx.stand(i),
                    Role::Resigned if !voter && s.epoch < cfg.max_epoch => {
                        tx.become_unattached(i, s.epoch + 1)
                    }
                    _ => return None,
                }
            }
            Action::FetchTimeout(i) if i < n => {
                let s = &st.servers[i as usize];
                if s.role != Role::Follower {
                    return None;
                }
                if self.is_voter(s, i) {
                    if !self.may_stand(s, i) {
                        return None;
                    }
                    tx.stand(i);
                } else if s.leader.is_none_or_not_leading(st, s.epoch) {
                    tx.become_unattached(i, s.epoch);
                } else {
                    return None;
                }
            }
            Action::CheckQuorumTimeout(i)
                if i < n && !self.resign_due(&st.servers[i as usize], i) =>
            {
                let s = &st.servers[i as usize];
                if s.role != Role::Leader || !self.check_quorum_may_expire(s) {
                    return None;
                }
                // Ghost: was it cut off, a majority of its other voters already in a later epoch?
                let voters = latest_voters(cfg.bootstrap(), &s.log);
                let moved_on = ids(voters)
                    .filter(|&v| v != i && st.servers[v as usize].epoch > s.epoch)
                    .fold(0, |m, v| m | bit(v));
                if is_majority(moved_on, voters) {
                    tx.s.history.events |= event::CUT_OFF_LEADER_RESIGNED;
                }
                tx.resign(i);
            }
            Action::Resign(i) if i < n => {
                if !self.resign_due(&st.servers[i as usize], i) {
                    return None;
                }
                tx.resign(i);
            }
            Action::ChangeTimeout(i) if i < n && !self.resign_due(&st.servers[i as usize], i) => {
                let s = &mut tx.s.servers[i as usize];
                let p = s.pending.take()?;
                tx.replies.push(Reply {
                    server: i,
                    op: p.op,
                    error: ErrorCode::RequestTimedOut,
                });
            }
            Action::Restart(i) if i < n => {
                if st.history.crashes >= cfg.max_crashes {
                    return None;
                }
                tx.s.history.crashes += 1;
                tx.restart(i);
            }
            Action::ClientAppend(i) if i < n && !self.resign_due(&st.servers[i as usize], i) => {
                let s = &st.servers[i as usize];
                if s.role != Role::Leader
                    || st.history.data >= cfg.max_data
                    || s.log.len() >= cfg.max_log
                {
                    return None;
                }
                tx.s.history.data += 1;
                tx.append(i, Kind::Data);
                tx.advance_hw(i);
            }
            Action::Change { server, op }
                if server < n
                    && op_in_range(op, n)
                    && !self.resign_due(&st.servers[server as usize], server) =>
            {
                let s = &st.servers[server as usize];
                match check_change(cfg, s, op) {
                    Ok(new_set) => {
                        if !self.change_allowed(st, s, op) {
                            return None;
                        }
                        tx.s.history.changes += 1;
                        let offset = s.log.len();
                        tx.append(server, Kind::Voters(new_set));
                        tx.s.servers[server as usize].pending =
                            Some(crate::types::PendingChange { op, offset });
                        tx.advance_hw(server);
                    }
                    Err(refusal) => {
                        if !cfg.refusal_steps {
                            return None;
                        }
                        tx.replies.push(Reply {
                            server,
                            op,
                            error: refusal.error(),
                        });
                    }
                }
            }
            Action::Fetch { replica, leader } if replica < n && leader < n => {
                if !self.may_fetch(st, replica, leader) {
                    return None;
                }
                let key = fetch_key(&st.servers[replica as usize]);
                match cfg.fetch {
                    FetchMode::Sync => {
                        let resp = tx.handle_fetch(leader, replica, key);
                        tx.on_fetch_response(replica, leader, resp);
                    }
                    FetchMode::Async => {
                        tx.s.servers[replica as usize].fetching = Some(key);
                        tx.send(replica, leader, Msg::FetchRequest(key));
                    }
                }
            }
            Action::Deliver(env) => {
                let pos = st.network.binary_search(&env).ok()?;
                if !cfg.network.duplicating() {
                    tx.s.network.remove(pos);
                }
                tx.deliver(env);
            }
            Action::Drop(env) => {
                if !cfg.network.lossy() {
                    return None;
                }
                let pos = st.network.binary_search(&env).ok()?;
                tx.s.network.remove(pos);
            }
            _ => return None,
        }
        if cfg.gc {
            tx.collect_garbage();
        }
        tx.record_history(st, action);
        if tx.s == *st && tx.replies.is_empty() {
            return None;
        }
        Some(Step {
            state: tx.s,
            replies: tx.replies,
        })
    }
}

fn op_in_range(op: ChangeOp, n: u8) -> bool {
    match op {
        ChangeOp::Add(j) | ChangeOp::Remove(j) => j < n,
        ChangeOp::Swap { out, add } => out < n && add < n,
    }
}

/// The key of the fetch a replica sends now: its epoch, LEO and last fetched epoch.
pub fn fetch_key(s: &Server) -> FetchKey {
    FetchKey {
        epoch: s.epoch,
        fetch_offset: s.log.len(),
        last_fetched_epoch: s.log.last_epoch(),
    }
}

/// Helper: "this follower's leader is not leading its epoch any more" (an observer's fetch timer
/// fires only then; a reduction, since while the leader leads its fetches succeed).
trait LeaderGone {
    fn is_none_or_not_leading(&self, st: &State, epoch: u8) -> bool;
}

impl LeaderGone for Option<Id> {
    fn is_none_or_not_leading(&self, st: &State, epoch: u8) -> bool {
        match self {
            None => true,
            Some(l) => {
                let l = &st.servers[*l as usize];
                !(l.role == Role::Leader && l.epoch == epoch)
            }
        }
    }
}

impl Tx<'_> {
    fn server(&mut self, i: Id) -> &mut Server {
        &mut self.s.servers[i as usize]
    }

    fn send(&mut self, src: Id, dst: Id, msg: Msg) {
        let env = Envelope { src, dst, msg };
        let pos = self.s.network.partition_point(|e| *e < env);
        let idempotent = matches!(msg, Msg::PreVoteRequest { .. } | Msg::VoteResponse { .. });
        let as_set = self.cfg.network.duplicating() || (self.cfg.gc && idempotent);
        if as_set && self.s.network.get(pos) == Some(&env) {
            // A set: the copy is already there. For pre-vote requests and vote answers this is a
            // reduction (`gc`): a prospective that times out and stands again with the same epoch
            // and log sends identical requests, and every effect of such a message is idempotent
            // (the receiver's move to the request's epoch, a grant bit, adopting an epoch or a
            // leader), so a second copy repeats the first or carries what the one copy carries
            // when it is delivered later. `tests/protocol.rs` checks the same verdicts without it.
            return;
        }
        self.s.network.insert(pos, env);
    }

    fn append(&mut self, i: Id, kind: Kind) {
        let s = self.server(i);
        let epoch = s.epoch;
        s.log.push(Entry { epoch, kind });
    }

    /// Leaving the leader role answers the pending change with NOT_LEADER_OR_FOLLOWER.
    fn leave_leadership(&mut self, i: Id) {
        let s = self.server(i);
        if let Some(p) = s.pending.take() {
            self.replies.push(Reply {
                server: i,
                op: p.op,
                error: ErrorCode::NotLeaderOrFollower,
            });
        }
    }

    /// Clears the volatile per-role fields (each role sets what it needs afterwards).
    fn reset_volatile(s: &mut Server) {
        s.leader = None;
        s.votes = 0;
        s.epoch_start = 0;
        s.end = [None; MAX_SERVERS];
        s.caught_up = 0;
        s.pending = None;
        s.fetching = None;
        s.fetched = false;
        s.pre_votes = 0;
    }

    /// Enter `epoch` (≥ current): a new epoch forgets the vote. Leader and Resigned hold no HW after
    /// the transition (Kafka: the HW carries over only between Unattached, Follower and Candidate).
    fn enter(&mut self, i: Id, epoch: u8, role: Role) {
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
    }

    fn become_unattached(&mut self, i: Id, epoch: u8) {
        self.enter(i, epoch, Role::Unattached);
    }

    fn become_follower(&mut self, i: Id, leader: Id, epoch: u8) {
        self.enter(i, epoch, Role::Follower);
        self.server(i).leader = Some(leader);
    }

    /// A timed-out voter stands: with pre-vote it first becomes Prospective, else Candidate.
    fn stand(&mut self, i: Id) {
        if self.cfg.pre_vote {
            self.become_prospective(i);
        } else {
            self.become_candidate(i);
        }
    }

    /// KIP-996: Prospective in the same epoch, keeping its vote, known leader and HW; pre-votes asked
    /// from the other voters of its latest set at the current epoch (the `prevote-bumps-epoch` bug
    /// moves to the next epoch first).
    fn become_prospective(&mut self, i: Id) {
        let s = self.server(i);
        let (leader, voted_for) = (s.leader, s.voted_for);
        let mut epoch = s.epoch;
        if self.cfg.has(Bug::PrevoteBumpsEpoch) {
            epoch += 1;
        }
        self.enter(i, epoch, Role::Prospective);
        let bootstrap = self.cfg.bootstrap();
        let bumped = self.cfg.has(Bug::PrevoteBumpsEpoch);
        let s = self.server(i);
        if !bumped {
            s.leader = leader;
            s.voted_for = voted_for;
        }
        s.pre_votes = bit(i);
        let (last_epoch, last_offset) = (s.log.last_epoch(), s.log.len());
        let voters = latest_voters(bootstrap, &s.log);
        for v in ids(voters).filter(|&v| v != i) {
            self.send(
                i,
                v,
                Msg::PreVoteRequest {
                    epoch,
                    last_epoch,
                    last_offset,
                },
            );
        }
        self.maybe_become_candidate(i);
    }

    /// A prospective with a pre-vote majority of its latest set becomes Candidate.
    fn maybe_become_candidate(&mut self, i: Id) {
        let bootstrap = self.cfg.bootstrap();
        let s = self.server(i);
        if s.role == Role::Prospective && is_majority(s.pre_votes, latest_voters(bootstrap, &s.log))
        {
            self.s.history.events |= event::PRE_VOTE_WON;
            self.become_candidate(i);
        }
    }

    fn become_candidate(&mut self, i: Id) {
        let epoch = self.server(i).epoch + 1;
        if self.cfg.pre_vote {
            self.s.history.opened |= 1 << epoch;
        }
        self.enter(i, epoch, Role::Candidate);
        let bootstrap = self.cfg.bootstrap();
        let s = self.server(i);
        s.voted_for = Some(i);
        s.votes = bit(i);
        let (last_epoch, last_offset) = (s.log.last_epoch(), s.log.len());
        let voters = latest_voters(bootstrap, &s.log);
        for v in ids(voters).filter(|&v| v != i) {
            self.send(
                i,
                v,
                Msg::VoteRequest {
                    epoch,
                    last_epoch,
                    last_offset,
                },
            );
        }
        self.maybe_become_leader(i);
    }

    fn maybe_become_leader(&mut self, i: Id) {
        let bootstrap = self.cfg.bootstrap();
        let s = self.server(i);
        if s.role == Role::Candidate && is_majority(s.votes, latest_voters(bootstrap, &s.log)) {
            self.become_leader(i);
        }
    }

    /// Leader: start-of-epoch batch (LeaderChange; KRaftVersion + Voters while the latest set is the
    /// bootstrap one), HW unknown, BeginQuorumEpoch to the other voters.
    fn become_leader(&mut self, i: Id) {
        let epoch = self.server(i).epoch;
        self.enter(i, epoch, Role::Leader);
        let bootstrap = self.cfg.bootstrap();
        let s = self.server(i);
        s.leader = Some(i);
        s.hw = None;
        s.epoch_start = s.log.len();
        let epoch = s.epoch;
        let voters = latest_voters(bootstrap, &s.log);
        let needs_voters_record = latest_voters_offset(&s.log).is_none();
        self.s.history.leaders[epoch as usize] |= bit(i);
        self.append(i, Kind::LeaderChange);
        if needs_voters_record {
            self.append(i, Kind::KRaftVersion);
            self.append(i, Kind::Voters(voters));
        }
        for v in ids(voters).filter(|&v| v != i) {
            self.send(i, v, Msg::BeginQuorumEpoch { epoch });
        }
        self.advance_hw(i);
    }

    /// Resigned: EndQuorumEpoch to the other voters of the latest set.
    fn resign(&mut self, i: Id) {
        let epoch = self.server(i).epoch;
        self.enter(i, epoch, Role::Resigned);
        let bootstrap = self.cfg.bootstrap();
        let s = self.server(i);
        s.hw = None;
        // Kafka's ResignedState keeps itself as the epoch's leader (fetches are answered naming it).
        s.leader = Some(i);
        let voters = latest_voters(bootstrap, &s.log);
        for v in ids(voters).filter(|&v| v != i) {
            self.send(i, v, Msg::EndQuorumEpoch { epoch });
        }
    }

    /// Restart: durable epoch, vote and log stay; a leader comes back Resigned, a replica that voted
    /// for itself (and is a voter) Candidate, anyone else Unattached. Pending change lost unanswered.
    fn restart(&mut self, i: Id) {
        let bootstrap = self.cfg.bootstrap();
        let s = self.server(i);
        let was_leader = matches!(s.role, Role::Leader | Role::Resigned);
        let voted_self = s.voted_for == Some(i) && latest_voters(bootstrap, &s.log) & bit(i) != 0;
        Self::reset_volatile(s);
        s.hw = None;
        if was_leader {
            s.role = Role::Resigned;
            s.leader = Some(i);
        } else if voted_self {
            s.role = Role::Candidate;
            s.votes = bit(i);
            self.maybe_become_leader(i);
        } else {
            s.role = Role::Unattached;
        }
    }

    /// The leader's HW rule after a change of its LEO, a replica's offset or the voter set; answers
    /// the pending change once the HW passes its record.
    fn advance_hw(&mut self, i: Id) {
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
    fn note_leader(&mut self, i: Id) {
        let cfg = self.cfg;
        let s = &self.s.servers[i as usize];
        let h = &mut self.s.history;
        if s.role != Role::Leader {
            return;
        }
        let Some(hw) = s.hw else { return };
        let entries = &s.log.as_slice()[..(hw as usize).min(s.log.len() as usize)];
        for (o, e) in entries.iter().enumerate() {
            match h.committed.get(o) {
                Some((c, _)) if c != e => h.violations |= violation::CONFLICTING_COMMIT,
                Some(_) => {}
                None => h.committed.push((*e, s.epoch)),
            }
        }
        if let (Some(o), Some(set)) = (
            reported_committed_offset(cfg, s),
            reported_committed_voters(cfg, s),
        ) {
            if !matches!(h.max_reported, Some((_, mo, _)) if mo >= o) {
                h.max_reported = Some((s.epoch, o, set));
            }
        }
    }

    /// Server `l` answers fetch `key` from `f` (leader or not).
    fn handle_fetch(&mut self, l: Id, f: Id, key: FetchKey) -> FetchResponse {
        let s = &self.s.servers[l as usize];
        let mut resp = FetchResponse {
            request: key,
            error: ErrorCode::None,
            leader_epoch: s.epoch,
            leader_id: s.leader,
            high_watermark: None,
            diverging: None,
            records: Log::default(),
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
        if let Some(div) = diverging(&s.log, key.fetch_offset, key.last_fetched_epoch) {
            resp.diverging = Some(div);
            resp.high_watermark = s.hw;
            return resp;
        }
        let s = self.server(l);
        s.end[f as usize] = Some(key.fetch_offset);
        if key.fetch_offset >= s.log.len() {
            s.caught_up |= bit(f);
        }
        self.advance_hw(l);
        let s = &self.s.servers[l as usize];
        resp.high_watermark = s.hw;
        resp.records = s.log.suffix(key.fetch_offset);
        resp
    }

    /// Replica `i` applies a fetch response from `from` that matches its request.
    fn on_fetch_response(&mut self, i: Id, from: Id, r: FetchResponse) {
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
    fn truncate(&mut self, i: Id, to: u8) {
        let bootstrap = self.cfg.bootstrap();
        let s = &mut self.s.servers[i as usize];
        if to >= s.log.len() {
            return;
        }
        if matches!(s.hw, Some(h) if to < h) {
            self.s.history.violations |= violation::TRUNCATION_BELOW_HW;
        }
        if membership_changes_from(bootstrap, &s.log, to) > 0 {
            self.s.history.events |= event::VOTERS_RECORD_TRUNCATED;
        }
        s.log.truncate(to);
    }

    fn deliver(&mut self, env: Envelope) {
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

    /// True if `s` knows no leader of its epoch and may learn one (Kafka's `maybeTransition` for the
    /// current epoch: Unattached, Candidate, or Prospective without a known leader).
    fn leaderless(s: &Server) -> bool {
        match s.role {
            Role::Unattached | Role::Candidate => true,
            Role::Prospective => s.leader.is_none(),
            _ => false,
        }
    }

    /// Answers a request of `epoch` from `c` that is older than `r`'s epoch; true if it did.
    fn fence_vote(&mut self, r: Id, c: Id, epoch: u8) -> bool {
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

    /// KIP-996 pre-vote handling (Kafka 4.x `handleVoteRequest` with `PreVote`): a newer epoch moves
    /// the receiver to Unattached as for any vote request; the grant rests on the log check alone
    /// (Unattached, Prospective, or a Follower that has not fetched from its leader yet) and records
    /// nothing. A follower that has fetched from its leader, a candidate, a leader and a resigned
    /// leader refuse.
    fn on_pre_vote_request(&mut self, r: Id, c: Id, epoch: u8, last_epoch: u8, last_offset: u8) {
        if self.fence_vote(r, c, epoch) {
            return;
        }
        if epoch > self.s.servers[r as usize].epoch {
            self.become_unattached(r, epoch);
        }
        let log_ok = self.cfg.has(Bug::VoteIgnoresLog)
            || log_up_to_date(last_epoch, last_offset, &self.s.servers[r as usize].log);
        let s = &self.s.servers[r as usize];
        let granted = log_ok
            && match s.role {
                Role::Unattached | Role::Prospective => true,
                Role::Follower => !s.fetched,
                Role::Candidate | Role::Leader | Role::Resigned => false,
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
        self.send(r, c, msg);
    }

    /// Kafka's vote handling: Unattached (and, with pre-vote, Prospective) grants if it has not voted
    /// for another candidate, knows no leader, and the candidate's log is up to date; the vote is
    /// recorded (durably). Everyone else refuses.
    fn on_vote_request(&mut self, r: Id, c: Id, epoch: u8, last_epoch: u8, last_offset: u8) {
        if self.fence_vote(r, c, epoch) {
            return;
        }
        if epoch > self.s.servers[r as usize].epoch {
            self.become_unattached(r, epoch);
        }
        let ignore_log = self.cfg.has(Bug::VoteIgnoresLog);
        let s = self.server(r);
        let granted = matches!(s.role, Role::Unattached | Role::Prospective)
            && s.voted_for.is_none_or_eq(c)
            && (s.voted_for.is_some() || s.leader.is_none())
            && (ignore_log || log_up_to_date(last_epoch, last_offset, &s.log));
        if granted {
            s.voted_for = Some(c);
        }
        let msg = Msg::VoteResponse {
            epoch: s.epoch,
            granted,
            error: ErrorCode::None,
            leader: s.leader,
        };
        self.send(r, c, msg);
    }

    /// Drops messages their receiver is certain to ignore: responses and leader announcements of an
    /// older epoch, vote refusals that can teach their receiver nothing, fetch responses that match no
    /// outstanding request. Receivers' epochs and fetch keys only move forward, so such a message
    /// stays ignorable.
    fn collect_garbage(&mut self) {
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
    fn may_lose_leader(&self) -> Mask {
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

    /// Ghost bookkeeping after a step: committed prefix, reported committed voter sets, and the
    /// transition-level checks (HW and committed set never move backwards).
    fn record_history(&mut self, before: &State, action: Action) {
        let cfg = self.cfg;
        let restarted = match action {
            Action::Restart(i) => Some(i),
            _ => None,
        };
        for (i, (old, new)) in before.servers.iter().zip(&self.s.servers).enumerate() {
            if restarted == Some(i as Id) {
                continue;
            }
            if let (Some(a), Some(b)) = (old.hw, new.hw) {
                if b < a {
                    self.s.history.violations |= violation::HW_DECREASED;
                }
            }
            if let (Some(a), Some(b)) = (
                reported_committed_offset(cfg, old),
                reported_committed_offset(cfg, new),
            ) {
                // Forward only, and the entry it moved from is still the same record.
                let kept = a < 0 || old.log.get(a as u8) == new.log.get(a as u8);
                if b < a || !kept {
                    self.s.history.violations |= violation::COMMITTED_VOTERS_REGRESSED;
                }
            }
        }
        for i in 0..self.s.servers.len() as Id {
            self.note_leader(i);
        }
    }
}

/// `voted_for` allows a vote for `c`: none yet, or already `c`.
trait VotedFor {
    fn is_none_or_eq(&self, c: Id) -> bool;
}

impl VotedFor for Option<Id> {
    fn is_none_or_eq(&self, c: Id) -> bool {
        self.is_none() || *self == Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(cfg: ModelConfig) -> KraftModel {
        KraftModel::new(cfg).unwrap()
    }

    #[test]
    fn elected_start_matches_the_contract_bootstrap() {
        let m = model(ModelConfig::default());
        let s = m.initial_state();
        let l = &s.servers[0];
        assert_eq!(l.role, Role::Leader);
        assert_eq!(l.epoch, 1);
        let kinds: Vec<Kind> = l.log.as_slice().iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            vec![Kind::LeaderChange, Kind::KRaftVersion, Kind::Voters(0b111)]
        );
        assert_eq!(l.hw, Some(3));
        for f in &s.servers[1..3] {
            assert_eq!(
                (f.role, f.leader, f.hw, f.log),
                (Role::Follower, Some(0), Some(3), l.log)
            );
        }
        let j = &s.servers[3];
        assert_eq!(
            (j.role, j.leader, j.hw, j.log),
            (Role::Follower, Some(0), Some(3), l.log)
        );
        assert_eq!(
            l.caught_up & bit(3),
            bit(3),
            "the joiner starts caught up as an observer"
        );
        assert!(s.network.is_empty());
        assert_eq!(s.history.committed.len(), 3);
    }

    #[test]
    fn change_commits_and_replies_none() {
        let m = model(ModelConfig {
            refusal_steps: true,
            ..ModelConfig::default()
        });
        let s = m.initial_state();
        let add = Action::Change {
            server: 0,
            op: ChangeOp::Add(3),
        };
        // Only the leader accepts: a follower answers NOT_LEADER_OR_FOLLOWER.
        let st = m
            .step(
                &s,
                Action::Change {
                    server: 1,
                    op: ChangeOp::Add(3),
                },
            )
            .unwrap();
        assert_eq!(st.replies[0].error, ErrorCode::NotLeaderOrFollower);
        assert_eq!(st.state, s);
        let st = m.step(&s, add).unwrap();
        assert!(st.replies.is_empty());
        let s = st.state;
        assert_eq!(s.servers[0].pending.map(|p| p.offset), Some(3));
        let st = m
            .step(
                &s,
                Action::Fetch {
                    replica: 1,
                    leader: 0,
                },
            )
            .unwrap();
        assert!(st.replies.is_empty(), "a majority of {{0,1,2,3}} needs 3");
        let st = m
            .step(
                &st.state,
                Action::Fetch {
                    replica: 1,
                    leader: 0,
                },
            )
            .unwrap();
        let st2 = m
            .step(
                &st.state,
                Action::Fetch {
                    replica: 2,
                    leader: 0,
                },
            )
            .unwrap();
        let st2 = m
            .step(
                &st2.state,
                Action::Fetch {
                    replica: 2,
                    leader: 0,
                },
            )
            .unwrap();
        assert_eq!(
            st2.replies,
            vec![Reply {
                server: 0,
                op: ChangeOp::Add(3),
                error: ErrorCode::None
            }]
        );
        assert_eq!(st2.state.servers[0].hw, Some(4));
    }
}
