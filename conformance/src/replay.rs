//! The replay engine: a model trace and the implementation in lockstep.
//!
//! For a trace (a model configuration and an action list) it builds a fresh model state and a fresh
//! implementation cluster, replays the model's election prefix first when the trace starts from
//! `Start::Elected` (the implementation has to get there by itself too), then every action. After
//! every step it compares the operator replies, every server's abstract state, the messages in flight,
//! and DescribeQuorum v0–3 of every node on the wire (`wire`) and against the model's own
//! DescribeQuorum view. The first difference stops the replay and becomes a [`Divergence`].
//!
//! The graph search uses one transition at a time: [`step`] replays one action from a [`Pair`] (a model
//! state and the cluster that realises it) and returns the successor pair or what differs; the search
//! (`graph`, or a distributed engine) only decides which pairs to expand.

use kraft::wire::describe_quorum as dq;
use model::spec;
use model::types::{Action, Envelope, Id, Reply, State, MAX_SERVERS};
use model::{FetchMode, KraftModel, ModelConfig, Start};
use stateright::Model;

use crate::describe::check_describe;
use crate::fingerprint::{cluster_fingerprint, model_fingerprint, node_fingerprint};
use crate::harness::{Cluster, Downloads, NodeHook};
use crate::mapping::{self, Abstract};
use crate::refusal::{self, Refused};
use crate::wire::WireChecker;

/// Where a trace comes from, and how to run it again.
#[derive(Clone, Debug)]
pub struct TraceSpec {
    /// Source label: `exhaustive`, `random seed 7`, a file name, `bug concurrent-changes`.
    pub label: String,
    /// A command that reproduces this trace alone.
    pub reproduce: String,
    pub config: ModelConfig,
    /// Actions after the initial state (the election prefix is added for `Start::Elected`).
    pub actions: Vec<Action>,
    /// Recorded model states after each action (trace files): checked against the model too.
    pub recorded: Option<Vec<State>>,
}

/// What kind of difference was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DivergenceKind {
    /// The action could not be applied to the implementation (timer not armed, wrong fetch target, …).
    Input(String),
    /// The model refused the action (a trace file the model does not accept).
    ModelRefused,
    /// A recorded state in a trace file differs from the model's.
    RecordedState,
    /// Operator replies differ.
    Replies {
        model: Vec<Reply>,
        implementation: Vec<Reply>,
    },
    /// A server's abstract state differs (or cannot be abstracted).
    State {
        server: Id,
        model: Box<Abstract>,
        implementation: Result<Box<Abstract>, String>,
    },
    /// Equal replies, but a refused membership request was refused by different rules.
    Refusals {
        model: Vec<Refused>,
        implementation: Vec<Refused>,
    },
    /// The auto-join adds acknowledged at append (`AckWhenCommitted` false) differ: the model's ghost
    /// `History::append_acks` against the harness's record of the leaders' answers.
    AppendAcks {
        model: Vec<(u8, u8)>,
        implementation: Vec<(u8, u8)>,
    },
    /// The messages in flight differ.
    Network {
        model: Vec<Envelope>,
        implementation: Vec<Envelope>,
    },
    /// DescribeQuorum at one version failed a wire or semantic check.
    DescribeQuorum {
        server: Id,
        version: i16,
        reason: String,
    },
}

/// The first difference of a replay.
#[derive(Clone, Debug)]
pub struct Divergence {
    pub label: String,
    pub reproduce: String,
    /// Step number: 0 is the initial state, k the state after the k-th action (prefix included).
    pub step: usize,
    /// Actions of the election prefix (so a step can be told apart from a trace step).
    pub prefix_len: usize,
    pub action: Option<Action>,
    pub kind: DivergenceKind,
    /// Every server's model state at that step (after the action).
    pub model_state: Option<State>,
}

/// Counts of a finished replay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub steps: u64,
    /// DescribeQuorum responses (node × version × state) checked against the model.
    pub encodings: u64,
    /// Refused membership requests whose reasons were compared.
    pub refusals: u64,
    /// Snapshot downloads replayed (installs, chunks, restarts with a `.checkpoint.part`).
    pub downloads: Downloads,
}

/// Replay knobs.
#[derive(Clone, Default)]
pub struct Options {
    /// Seed of the nodes' election-timeout RNGs (timers fire on command, so it only moves deadlines).
    pub seed: u64,
    /// Switches on test-only faults in every node (mutation check).
    pub hook: Option<NodeHook>,
}

struct Replay<'a> {
    spec: &'a TraceSpec,
    prefix_len: usize,
    cluster: Cluster,
    wire: &'a mut WireChecker,
    counts: Counts,
}

/// Replays one trace. `Ok` with the counts, or the first divergence.
pub fn replay(
    spec: &TraceSpec,
    wire: &mut WireChecker,
    opts: &Options,
) -> Result<Counts, Box<Divergence>> {
    replay_full(spec, wire, opts).map(|(c, _)| c)
}

/// Replays one trace and returns the implementation cluster at its end (the graph replay starts there).
pub fn replay_to_end(
    spec: &TraceSpec,
    wire: &mut WireChecker,
    opts: &Options,
) -> Result<Cluster, Box<Divergence>> {
    replay_full(spec, wire, opts).map(|(_, c)| c)
}

fn replay_full(
    spec: &TraceSpec,
    wire: &mut WireChecker,
    opts: &Options,
) -> Result<(Counts, Cluster), Box<Divergence>> {
    let cfg = spec.config;
    let fail = |step: usize, action: Option<Action>, kind: DivergenceKind| {
        Box::new(Divergence {
            label: spec.label.clone(),
            reproduce: spec.reproduce.clone(),
            step,
            prefix_len: 0,
            action,
            kind,
            model_state: None,
        })
    };
    let model = KraftModel::new(cfg).map_err(|e| {
        fail(
            0,
            None,
            DivergenceKind::Input(format!("bad model config: {e}")),
        )
    })?;
    let prefix_model = KraftModel::new(ModelConfig {
        fetch: FetchMode::Sync,
        gc: false,
        ..cfg
    })
    .map_err(|e| {
        fail(
            0,
            None,
            DivergenceKind::Input(format!("bad model config: {e}")),
        )
    })?;
    let prefix = if matches!(cfg.start, Start::Elected | Start::Static) {
        model.election_prefix()
    } else {
        Vec::new()
    };
    let cluster = Cluster::new(
        cfg.servers() as usize,
        cfg.bootstrap(),
        cfg.start,
        cfg.auto_join,
        cfg.network,
        opts.seed,
        opts.hook.clone(),
    )
    .map_err(|e| fail(0, None, DivergenceKind::Input(e)))?;
    let mut r = Replay {
        spec,
        prefix_len: prefix.len(),
        cluster,
        wire,
        counts: Counts::default(),
    };
    let mut state = model.fresh_state();
    r.compare(0, None, &model, &state, (&[], &[]), (&[], &[]))?;
    let mut step_no = 0;
    for a in &prefix {
        // `initial_state` skips prefix actions that change nothing; so does the replay.
        let Some(step) = prefix_model.step(&state, *a) else {
            continue;
        };
        step_no += 1;
        let mut refused = Vec::new();
        refusal::of_model_step(&prefix_model, &state, a, &step.replies, &mut refused);
        let applied = r.cluster.apply(a, FetchMode::Sync).map_err(|e| {
            r.divergence(
                step_no,
                Some(*a),
                DivergenceKind::Input(e),
                Some(&step.state),
            )
        })?;
        r.compare(
            step_no,
            Some(*a),
            &prefix_model,
            &step.state,
            (&step.replies, &applied.replies),
            (&refused, &applied.refusals),
        )?;
        state = step.state;
    }
    if state != model.initial_state() {
        return Err(r.divergence(step_no, None, DivergenceKind::RecordedState, Some(&state)));
    }
    // Replies of a step whose comparison waits for the Resign that must follow it.
    let (mut held_model, mut held_impl) = (Vec::new(), Vec::new());
    let (mut refused_model, mut refused_impl) = (Vec::new(), Vec::new());
    for (k, a) in spec.actions.iter().enumerate() {
        step_no += 1;
        let Some(step) = model.step(&state, *a) else {
            return Err(r.divergence(
                step_no,
                Some(*a),
                DivergenceKind::ModelRefused,
                Some(&state),
            ));
        };
        if let Some(rec) = spec.recorded.as_ref().and_then(|v| v.get(k)) {
            if *rec != step.state {
                return Err(r.divergence(
                    step_no,
                    Some(*a),
                    DivergenceKind::RecordedState,
                    Some(&step.state),
                ));
            }
        }
        let applied = r.cluster.apply(a, cfg.fetch).map_err(|e| {
            r.divergence(
                step_no,
                Some(*a),
                DivergenceKind::Input(e),
                Some(&step.state),
            )
        })?;
        r.counts.downloads.add(&applied.downloads);
        refusal::of_model_step(&model, &state, a, &step.replies, &mut refused_model);
        held_model.extend(step.replies);
        held_impl.extend(applied.replies);
        refused_impl.extend(applied.refusals);
        let resign_next = matches!(spec.actions.get(k + 1), Some(Action::Resign(i))
            if model.resign_due(&step.state.servers[*i as usize], *i));
        if resign_next {
            // The implementation resigned within this input: compare after the Resign.
            r.counts.steps += 1;
        } else {
            r.compare(
                step_no,
                Some(*a),
                &model,
                &step.state,
                (&held_model, &held_impl),
                (&refused_model, &refused_impl),
            )?;
            held_model.clear();
            held_impl.clear();
            refused_model.clear();
            refused_impl.clear();
        }
        state = step.state;
    }
    Ok((r.counts, r.cluster))
}

impl Replay<'_> {
    fn divergence(
        &self,
        step: usize,
        action: Option<Action>,
        kind: DivergenceKind,
        state: Option<&State>,
    ) -> Box<Divergence> {
        Box::new(Divergence {
            label: self.spec.label.clone(),
            reproduce: self.spec.reproduce.clone(),
            step,
            prefix_len: self.prefix_len,
            action,
            kind,
            model_state: state.cloned(),
        })
    }

    /// Everything compared after a step.
    fn compare(
        &mut self,
        step: usize,
        action: Option<Action>,
        model: &KraftModel,
        state: &State,
        (model_replies, impl_replies): (&[Reply], &[Reply]),
        (model_refusals, impl_refusals): (&[Refused], &[Refused]),
    ) -> Result<(), Box<Divergence>> {
        self.counts.steps += u64::from(action.is_some());
        let mut after = After {
            cluster: &mut self.cluster,
            state,
            model_replies,
            impl_replies,
            model_refusals,
            impl_refusals,
        };
        let r = compare(
            model,
            &mut after,
            None,
            self.wire,
            &mut self.counts,
            &mut |_, _| {},
        );
        r.map_err(|kind| self.divergence(step, action, kind, Some(state)))
    }
}

/// The two sides after a step.
pub struct After<'a> {
    pub cluster: &'a mut Cluster,
    pub state: &'a State,
    pub model_replies: &'a [Reply],
    pub impl_replies: &'a [Reply],
    /// The refused requests among the replies, with each side's reason.
    pub model_refusals: &'a [Refused],
    pub impl_refusals: &'a [Refused],
}

/// Everything compared after a step: every server's abstract state, the operator replies, the messages
/// in flight, and DescribeQuorum at every version on the wire and against the model.
///
/// `parent` is the pair before the step, already compared: a server whose model state is unchanged and
/// whose implementation node was not touched (the same shared node, see `Cluster`) is not compared
/// again, since neither side can differ from what was compared there (a node's clock moves only with
/// its own inputs). `seen` gets the view of every node that was compared.
pub fn compare(
    model: &KraftModel,
    after: &mut After,
    parent: Option<(&Cluster, &State)>,
    wire: &mut WireChecker,
    counts: &mut Counts,
    seen: &mut dyn FnMut(Id, &kraft::node::NodeView),
) -> Result<(), DivergenceKind> {
    let cfg = &model.cfg;
    let state = after.state;
    let cluster = &mut *after.cluster;
    let n = state.servers.len();
    let mut changed = [true; model::types::MAX_SERVERS];
    if let Some((pc, ps)) = parent {
        for (id, s) in state.servers.iter().enumerate() {
            changed[id] = !std::sync::Arc::ptr_eq(&pc.nodes[id], &cluster.nodes[id])
                || ps.servers.get(id) != Some(s);
        }
    }
    for (id, s) in state.servers.iter().enumerate() {
        if !changed[id] {
            continue;
        }
        let id = id as Id;
        let want = mapping::abstract_model(
            id,
            s,
            cfg.bootstrap(),
            spec::reported_committed_voters(cfg, s),
            n,
        );
        let node = &cluster.nodes[id as usize];
        let view = node.view();
        seen(id, &view);
        let got = mapping::abstract_view(
            id,
            node,
            &view,
            node.leader_state().map(|l| l.epoch_start_offset),
            n,
            &|j| s.peer_dir(j),
        );
        if got.as_ref() != Ok(&want) {
            return Err(DivergenceKind::State {
                server: id,
                model: Box::new(want),
                implementation: got.map(Box::new),
            });
        }
    }
    // Replies after the states, so a fault that shows in both is named by the state field.
    if !after.model_replies.is_empty() || !after.impl_replies.is_empty() {
        let mut m = after.model_replies.to_vec();
        let mut i = after.impl_replies.to_vec();
        m.sort_by_key(|r| (r.server, r.op, r.error));
        i.sort_by_key(|r| (r.server, r.op, r.error));
        if m != i {
            return Err(DivergenceKind::Replies {
                model: m,
                implementation: i,
            });
        }
    }
    counts.refusals += after.model_refusals.len() as u64;
    if after.model_refusals != after.impl_refusals {
        let mut m = after.model_refusals.to_vec();
        let mut i = after.impl_refusals.to_vec();
        m.sort();
        i.sort();
        if m != i {
            return Err(DivergenceKind::Refusals {
                model: m,
                implementation: i,
            });
        }
    }
    if cluster.append_acks() != &state.history.append_acks[..] {
        return Err(DivergenceKind::AppendAcks {
            model: state.history.append_acks.to_vec(),
            implementation: cluster.append_acks().to_vec(),
        });
    }
    if !cluster.network_is(&state.network) {
        return Err(DivergenceKind::Network {
            model: state.network.clone(),
            implementation: cluster.envelopes(),
        });
    }
    for id in 0..n as Id {
        if !changed[id as usize] {
            continue;
        }
        for version in dq::MIN_VERSION..=dq::MAX_VERSION {
            if let Err(reason) = check_describe(model, cluster, state, id, version, wire) {
                return Err(DivergenceKind::DescribeQuorum {
                    server: id,
                    version,
                    reason,
                });
            }
            counts.encodings += 1;
        }
    }
    Ok(())
}

/// A model state and the implementation cluster that realises it: what the graph search carries from
/// state to state, and all [`step`] needs to replay a transition from it.
#[derive(Clone)]
pub struct Pair {
    pub state: State,
    pub cluster: Cluster,
    /// Each node's implementation fingerprint ([`node_fingerprint`]), kept up to date by [`step`].
    pub nodes: [u64; MAX_SERVERS],
}

impl Pair {
    pub fn new(state: State, cluster: Cluster) -> Pair {
        let mut nodes = [0u64; MAX_SERVERS];
        for (i, n) in cluster.nodes.iter().enumerate() {
            nodes[i] = node_fingerprint(&n.view());
        }
        Pair {
            state,
            cluster,
            nodes,
        }
    }

    /// The model's fingerprint of the state: the search's key.
    pub fn model_fingerprint(&self) -> u64 {
        model_fingerprint(&self.state)
    }

    /// The implementation fingerprint of the cluster (what tells two arrivals at one model state apart).
    pub fn impl_fingerprint(&self) -> u64 {
        cluster_fingerprint(&self.cluster, &self.nodes[..self.state.servers.len()])
    }
}

/// What replaying a transition of one model needs besides the pair: the model and the replay knobs.
pub struct Ctx {
    pub model: KraftModel,
    pub opts: Options,
}

/// One replaying thread's own side: the wire checker (its cache of checked encodings) and the counts.
pub struct Check {
    pub wire: WireChecker,
    pub counts: Counts,
}

impl Check {
    pub fn new(wire: &WireChecker) -> Check {
        Check {
            wire: WireChecker::new(wire.response.clone(), wire.request.clone()),
            counts: Counts::default(),
        }
    }
}

/// One transition replayed from a pair.
pub struct Successor {
    pub pair: Pair,
    /// The action and the `Resign`s folded into it (see `mapping`): the transitions replayed.
    pub taken: Vec<Action>,
    /// Model fingerprints of the states passed within the bounds on the way (a `Resign` was due there):
    /// visited, but never expanded.
    pub passed: Vec<u64>,
    /// The successor is within the model's bounds (else it is compared but not expanded).
    pub within: bool,
}

/// A transition whose two sides differ.
pub struct Diverged {
    /// The action and the `Resign`s folded into it, up to the difference.
    pub taken: Vec<Action>,
    pub kind: DivergenceKind,
}

impl Ctx {
    pub fn new(config: ModelConfig, opts: Options) -> Result<Ctx, String> {
        let model = KraftModel::new(config).map_err(|e| e.to_string())?;
        Ok(Ctx { model, opts })
    }

    /// The root pair: the model's initial state (the election prefix of `Start::Elected` included)
    /// and the cluster the step replay reaches it with; `None` if it is outside the bounds.
    pub fn root(&self, wire: &mut WireChecker) -> Result<Option<Pair>, Box<Divergence>> {
        let spec = TraceSpec {
            label: "graph initial state".into(),
            reproduce: String::new(),
            config: self.model.cfg,
            actions: Vec::new(),
            recorded: None,
        };
        let cluster = replay_to_end(&spec, wire, &self.opts)?;
        let init = self.model.initial_state();
        Ok(self
            .model
            .within_boundary(&init)
            .then(|| Pair::new(init, cluster)))
    }

    /// The actions enabled at the pair's model state, in the model's order.
    pub fn actions(&self, pair: &Pair, out: &mut Vec<Action>) {
        out.clear();
        self.model.enabled_actions(&pair.state, out);
    }

    /// A path the search found divergent, again through the step replay: the same report as any trace,
    /// and a check that the incremental comparison of [`step`] found a real difference.
    pub fn confirm(
        &self,
        label: String,
        actions: Vec<Action>,
        wire: &mut WireChecker,
    ) -> Divergence {
        let spec = TraceSpec {
            label,
            reproduce: String::new(),
            config: self.model.cfg,
            actions,
            recorded: None,
        };
        match replay(&spec, wire, &self.opts) {
            Err(d) => *d,
            Ok(_) => Divergence {
                label: spec.label,
                reproduce: String::new(),
                step: spec.actions.len(),
                prefix_len: 0,
                action: spec.actions.last().copied(),
                kind: DivergenceKind::Input(
                    "the graph replay diverged here but the step replay of the same path does not"
                        .into(),
                ),
                model_state: None,
            },
        }
    }
}

/// Replays `action` from `pair`: the model's step and the implementation's input, compared as
/// [`compare`] does (only what the action touched). `Ok(None)` if the model has no transition for it.
pub fn step(
    ctx: &Ctx,
    pair: &Pair,
    action: Action,
    check: &mut Check,
) -> Result<Option<Successor>, Diverged> {
    let model = &ctx.model;
    let Some(step) = model.step(&pair.state, action) else {
        return Ok(None); // not a transition (stateright skips it too)
    };
    let mut taken = vec![action];
    let mut cluster = pair.cluster.clone();
    let applied = match cluster.apply(&action, model.cfg.fetch) {
        Ok(x) => x,
        Err(e) => {
            return Err(Diverged {
                taken,
                kind: DivergenceKind::Input(e),
            })
        }
    };
    check.counts.downloads.add(&applied.downloads);
    let mut refused = Vec::new();
    refusal::of_model_step(model, &pair.state, &action, &step.replies, &mut refused);
    let (mut state, mut replies) = (step.state, step.replies);
    let n = state.servers.len();
    let mut passed = Vec::new();
    // A due Resign is part of the implementation's input that made it due (see `mapping`): the
    // intermediate model state is visited, and the comparison is after the Resign.
    while let Some(i) = (0..n as Id).find(|&i| model.resign_due(&state.servers[i as usize], i)) {
        if model.within_boundary(&state) {
            passed.push(model_fingerprint(&state));
        }
        let Some(r) = model.step(&state, Action::Resign(i)) else {
            break;
        };
        taken.push(Action::Resign(i));
        state = r.state;
        replies.extend(r.replies);
    }
    let mut nodes = pair.nodes;
    let mut after = After {
        cluster: &mut cluster,
        state: &state,
        model_replies: &replies,
        impl_replies: &applied.replies,
        model_refusals: &refused,
        impl_refusals: &applied.refusals,
    };
    let r = compare(
        model,
        &mut after,
        Some((&pair.cluster, &pair.state)),
        &mut check.wire,
        &mut check.counts,
        &mut |id, v| nodes[id as usize] = node_fingerprint(v),
    );
    if let Err(kind) = r {
        return Err(Diverged { taken, kind });
    }
    let within = model.within_boundary(&state);
    Ok(Some(Successor {
        pair: Pair {
            state,
            cluster,
            nodes,
        },
        taken,
        passed,
        within,
    }))
}
