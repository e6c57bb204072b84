//! Transitions: which actions are enabled, and what each does (Kafka 4.x behaviour with KIP-996
//! pre-vote and check-quorum by default, contract §1–§10). Role changes and vote handling are in
//! `roles`, the HW rule and fetch in `replication`, delivery and message garbage collection in
//! `network`.

use crate::config::{Bug, ConfigError, FetchMode, ModelConfig, Start};
use crate::spec::{
    check_change, is_majority, latest_voters, latest_voters_offset, reported_committed_offset,
};
use crate::types::{
    bit, event, ids, violation, Action, ChangeOp, Entry, Envelope, ErrorCode, FetchKey, History,
    Id, Kind, Msg, Reply, Role, Server, State, MAX_DIRS,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

mod auto_join;
mod kraft_version;
mod network;
mod replication;
mod roles;
mod snapshot;

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
            Start::Elected | Start::Static => {
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

    /// True if server `i`'s key (id, directory id) is a voter of its own latest set (Kafka's
    /// `QuorumState.isVoter`).
    fn is_voter(&self, s: &Server, i: Id) -> bool {
        latest_voters(self.cfg.bootstrap(), &s.log).is_voter(i, s.dir)
    }

    /// Size of the start-of-epoch batch server `s` would write as leader.
    fn start_batch_len(&self, s: &Server) -> u8 {
        if latest_voters_offset(&s.log).is_none()
            && crate::kraft_version::kraft_version(&self.cfg, &s.log) == 1
        {
            3
        } else {
            1
        }
    }

    /// True if server `i` may start an election now (voter of its latest set, epoch and log bounds).
    fn may_stand(&self, s: &Server, i: Id) -> bool {
        self.is_voter(s, i)
            && s.epoch < self.cfg.max_epoch
            && s.log.len() + self.start_batch_len(s) <= self.cfg.max_log
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
            // A follower downloading a snapshot sends FetchSnapshot instead of Fetch.
            Role::Follower => r.leader == Some(leader) && r.fetching_snapshot.is_none(),
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
            && latest_voters(self.cfg.bootstrap(), &s.log).len() > 1
    }

    /// The directory id of the key an operator's `op` names for the replica it adds or updates
    /// (the replica's current one: the operator reads it from the replica's `meta.properties`);
    /// a removal names the key the leader's latest set holds, so its directory id is not used.
    pub fn op_dir(st: &State, op: ChangeOp) -> u8 {
        match op {
            ChangeOp::Add(j) | ChangeOp::Update(j) | ChangeOp::Swap { add: j, .. } => {
                st.servers.get(j as usize).map_or(0, |s| s.dir)
            }
            ChangeOp::Remove(_) | ChangeOp::KraftVersionUpgrade => 0,
        }
    }

    /// The operations tried at each server.
    fn change_ops(&self) -> Vec<ChangeOp> {
        let n = self.cfg.servers();
        let mut ops: Vec<ChangeOp> = (0..n).map(ChangeOp::Add).collect();
        ops.extend((0..n).map(ChangeOp::Remove));
        if self.cfg.updates || self.cfg.start == Start::Static {
            ops.extend((0..n).map(ChangeOp::Update));
        }
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
        let Ok(new_set) = check_change(&self.cfg, s, op, Self::op_dir(st, op)) else {
            return false;
        };
        if self.volatile_update(s, op) {
            return true;
        }
        if let ChangeOp::Swap { .. } = op {
            // The swap bug only targets odd-sized sets, where one-out-one-in breaks overlap.
            if latest_voters(self.cfg.bootstrap(), &s.log).len() & 1 == 0 || new_set.is_empty() {
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
        let ops = self.change_ops();
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
                    if s.pending.is_some() && !crate::kraft_version::upgrade_pending(s) {
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
            if st.history.disk_losses < cfg.max_disk_losses
                && s.dir + 1 < MAX_DIRS
                && crate::kraft_version::disk_loss_allowed(cfg, st)
            {
                out.push(Action::DiskLoss(i));
            }
            if self.upgrade_enabled(st, i) && !self.resign_due(s, i) {
                out.push(Action::UpgradeKraftVersion(i));
            }
            for &op in &ops {
                if self.resign_due(s, i) {
                    break;
                }
                // A voter sends UpdateRaftVoter to its leader; a leader rewrites its own entry in
                // its start-of-epoch batch instead.
                if op == ChangeOp::Update(i) || !self.update_sent(st, i, op) {
                    continue;
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
            self.auto_join_actions(st, i, out);
            if cfg.max_snapshots > 0 {
                if self.snapshot_point(st, s).is_some() {
                    out.push(Action::TakeSnapshot(i));
                }
                if self.log_start_target(s).is_some() {
                    out.push(Action::AdvanceLogStart(i));
                }
                if let Some(l) = s.leader.filter(|&l| self.may_fetch_snapshot(st, i, l)) {
                    out.push(Action::FetchSnapshot {
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
            if self.may_duplicate(st, env) {
                out.push(Action::Duplicate(*env));
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
                let voters = latest_voters(cfg.bootstrap(), &s.log).ids();
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
                if crate::kraft_version::upgrade_pending(s) {
                    return None;
                }
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
                if st.servers[i as usize].fetching_snapshot.is_some() {
                    tx.s.history.events |= event::CRASH_DURING_INSTALL;
                }
                tx.restart(i);
                if cfg.gc {
                    // Kafka loses the responses on their way to a crashed server with its
                    // connections; the checked model does too (`gc` only: conformance replays with
                    // `gc` off, where they stay in flight and the restarted server may still use
                    // them — a superset of Kafka's runs). Not a pure reduction: a restriction to
                    // what Kafka can do.
                    tx.forget_requests(i);
                    // A restart that changes nothing but the crash count leads to a state with
                    // fewer behaviours than this one (one crash less to spend; every property reads
                    // only servers, messages and ghosts, never the count): skip it.
                    if tx.s.servers == st.servers && tx.s.network == st.network {
                        return None;
                    }
                }
            }
            Action::DiskLoss(i) if i < n => {
                let dir = st.servers[i as usize].dir;
                if st.history.disk_losses >= cfg.max_disk_losses
                    || dir + 1 >= MAX_DIRS
                    || !crate::kraft_version::disk_loss_allowed(cfg, st)
                {
                    return None;
                }
                tx.s.history.disk_losses += 1;
                tx.lose_disk(i);
                if cfg.gc {
                    // As on a restart: the answers on their way to it are lost with its connections.
                    tx.forget_requests(i);
                } else {
                    tx.forget_exchanges(i);
                }
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
                    && op != ChangeOp::Update(server)
                    && op != ChangeOp::KraftVersionUpgrade
                    && self.update_sent(st, server, op)
                    && !self.resign_due(&st.servers[server as usize], server) =>
            {
                let s = &st.servers[server as usize];
                match check_change(cfg, s, op, Self::op_dir(st, op)) {
                    Ok(new_set) if self.volatile_update(s, op) => {
                        tx.store_volatile(server, op, new_set);
                    }
                    Ok(new_set) => {
                        if !self.change_allowed(st, s, op) {
                            return None;
                        }
                        tx.s.history.changes += 1;
                        let offset = s.log.len();
                        tx.append(server, Kind::Voters(new_set));
                        if let ChangeOp::Update(_) = op {
                            // Answered once appended (Kafka's UpdateVoterHandler).
                            tx.replies.push(Reply {
                                server,
                                op,
                                error: ErrorCode::None,
                            });
                        } else {
                            tx.s.servers[server as usize].pending =
                                Some(crate::types::PendingChange { op, offset });
                        }
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
            Action::TakeSnapshot(i) if i < n && !self.resign_due(&st.servers[i as usize], i) => {
                let end = self.snapshot_point(st, &st.servers[i as usize])?;
                tx.take_snapshot(i, end);
            }
            Action::AdvanceLogStart(i) if i < n && !self.resign_due(&st.servers[i as usize], i) => {
                let snap = self.log_start_target(&st.servers[i as usize])?;
                tx.advance_log_start(i, snap);
            }
            Action::FetchSnapshot { replica, leader } if replica < n && leader < n => {
                if cfg.max_snapshots == 0 || !self.may_fetch_snapshot(st, replica, leader) {
                    return None;
                }
                tx.fetch_snapshot(replica, leader);
            }
            Action::UpgradeKraftVersion(i)
                if i < n && !self.resign_due(&st.servers[i as usize], i) =>
            {
                tx.upgrade(i)?;
            }
            Action::AutoJoin { replica, leader } if replica < n && leader < n => {
                self.step_auto_join(&mut tx, st, replica, leader)?
            }
            Action::Duplicate(env) if self.may_duplicate(st, &env) => tx.duplicate(env),
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

/// True if the network keeps at most one copy of `msg`: every message on a duplicating network;
/// with `gc`, pre-vote requests and vote answers (see [`Tx::send`]).
fn kept_once(cfg: &ModelConfig, msg: &Msg) -> bool {
    let idempotent = matches!(msg, Msg::PreVoteRequest { .. } | Msg::VoteResponse { .. });
    cfg.network.duplicating() || (cfg.gc && idempotent)
}

fn op_in_range(op: ChangeOp, n: u8) -> bool {
    match op {
        ChangeOp::Add(j) | ChangeOp::Remove(j) | ChangeOp::Update(j) => j < n,
        ChangeOp::Swap { out, add } => out < n && add < n,
        ChangeOp::KraftVersionUpgrade => true,
    }
}

/// The key of the fetch a replica sends now: its epoch, LEO and last fetched epoch.
pub fn fetch_key(s: &Server) -> FetchKey {
    FetchKey {
        epoch: s.epoch,
        fetch_offset: s.log.len(),
        last_fetched_epoch: s.log.last_epoch(),
        replica_dir: s.dir,
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
        if kept_once(self.cfg, &msg) && self.s.network.get(pos) == Some(&env) {
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

    /// Ghost bookkeeping after a step: committed prefix, reported committed voter sets, and the
    /// transition-level checks (HW and committed set never move backwards).
    fn record_history(&mut self, before: &State, action: Action) {
        let cfg = self.cfg;
        let restarted = match action {
            Action::Restart(i) | Action::DiskLoss(i) => Some(i),
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
                // Forward only, and the entry it moved from is still the same record (or now lies in
                // the snapshot the log starts at).
                let kept = a < 0
                    || (a as u8) < new.log.start()
                    || old.log.get(a as u8) == new.log.get(a as u8);
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

#[cfg(test)]
mod auto_join_tests;
#[cfg(test)]
mod disk_loss_tests;
#[cfg(test)]
mod duplicate_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod vote_tests;
