//! The replay engine: a model trace and the implementation in lockstep.
//!
//! For a trace (a model configuration and an action list) it builds a fresh model state and a fresh
//! implementation cluster, replays the model's election prefix first when the trace starts from
//! `Start::Elected` (the implementation has to get there by itself too), then every action. After
//! every step it compares the operator replies, every server's abstract state, the messages in flight,
//! and DescribeQuorum v0–3 of every node on the wire (`wire`) and against the model's own
//! DescribeQuorum view. The first difference stops the replay and becomes a [`Divergence`].

use kraft::wire::describe_quorum as dq;
use model::spec;
use model::types::{Action, Envelope, Id, Reply, State};
use model::{FetchMode, KraftModel, ModelConfig, Start};

use crate::harness::{Cluster, Downloads, NodeHook};
use crate::mapping::{self, Abstract};
use crate::refusal::{self, Refused};
use crate::schema::{StructValue, Value};
use crate::wire::{partitions, replicas, WireChecker};

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

/// The DescribeQuorum request every node is asked (Kafka's admin client: `__cluster_metadata`-0).
pub fn describe_request() -> dq::DescribeQuorumRequest {
    dq::DescribeQuorumRequest::for_metadata_partition()
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
    let prefix = if cfg.start == Start::Elected {
        model.election_prefix()
    } else {
        Vec::new()
    };
    let cluster = Cluster::new(
        cfg.servers() as usize,
        cfg.bootstrap(),
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
        refusal::of_model_step(&prefix_model.cfg, &state, a, &step.replies, &mut refused);
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
        refusal::of_model_step(&model.cfg, &state, a, &step.replies, &mut refused_model);
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
            spec::reported_committed_voters(cfg, s).map(mapping::model_ids),
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

/// DescribeQuorum of node `id` at `version`: the wire checks, then the content against the model.
fn check_describe(
    model: &KraftModel,
    cluster: &mut Cluster,
    state: &State,
    id: Id,
    version: i16,
    wire: &mut WireChecker,
) -> Result<(), String> {
    let now = cluster.now(id);
    // `describe_quorum` may expire observers (never, at the mapping's expiry): a node that is shared
    // with the parent cluster is copied first.
    let node = std::sync::Arc::make_mut(&mut cluster.nodes[id as usize]);
    let resp = node.describe_quorum(now, version, &describe_request());
    let s = &state.servers[id as usize];
    let view = spec::describe_quorum(&model.cfg, id, s);
    wire.check_with(&resp, version, &view, |value| {
        check_content(value, view.as_ref(), version)
    })
}

fn int(v: &StructValue, field: &str) -> Result<i64, String> {
    v.int(field).ok_or_else(|| format!("{field} missing"))
}

/// One replica state row: (id, LEO, last fetch, last caught up, directory id).
type Row = (i64, i64, i64, i64, Option<uuid::Uuid>);

/// Rows of a replica list, sorted by id.
fn rows(p: &StructValue, field: &str) -> Result<Vec<Row>, String> {
    let mut out = Vec::new();
    for r in replicas(p, field) {
        let dir = match r.get("ReplicaDirectoryId") {
            Some(Value::Uuid(u)) => Some(*u),
            _ => None,
        };
        out.push((
            int(r, "ReplicaId")?,
            int(r, "LogEndOffset")?,
            int(r, "LastFetchTimestamp")?,
            int(r, "LastCaughtUpTimestamp")?,
            dir,
        ));
    }
    out.sort_by_key(|r| r.0);
    Ok(out)
}

/// The decoded response against the model's DescribeQuorum view (`None`: the node is not the leader).
pub fn check_content(
    value: &StructValue,
    view: Option<&spec::DescribeQuorumView>,
    version: i16,
) -> Result<(), String> {
    let parts = partitions(value);
    let [p] = parts.as_slice() else {
        return Err(format!("{} partitions, expected 1", parts.len()));
    };
    if int(value, "ErrorCode")? != 0 {
        return Err(format!("top-level ErrorCode {}", int(value, "ErrorCode")?));
    }
    let Some(view) = view else {
        // Kafka's non-leader answer: NOT_LEADER_OR_FOLLOWER with 0/0/0 and empty lists.
        let got = (
            int(p, "ErrorCode")?,
            int(p, "LeaderId")?,
            int(p, "LeaderEpoch")?,
            int(p, "HighWatermark")?,
        );
        if got != (6, 0, 0, 0) {
            return Err(format!(
                "non-leader answered (error, leader, epoch, HW) = {got:?}, expected (6, 0, 0, 0)"
            ));
        }
        for f in ["CurrentVoters", "Observers", "CommittedVoters"] {
            if !replicas(p, f).is_empty() {
                return Err(format!("non-leader answered a non-empty {f}"));
            }
        }
        if value.array("Nodes").is_some_and(|n| !n.is_empty()) {
            return Err("non-leader answered a non-empty Nodes".into());
        }
        return Ok(());
    };
    let got = (
        int(p, "ErrorCode")?,
        int(p, "LeaderId")?,
        int(p, "LeaderEpoch")?,
        int(p, "HighWatermark")?,
    );
    let want = (
        0,
        i64::from(view.leader_id),
        i64::from(view.leader_epoch),
        view.high_watermark,
    );
    if got != want {
        return Err(format!(
            "(error, LeaderId, LeaderEpoch, HighWatermark) = {got:?}, model {want:?}"
        ));
    }
    let current = rows(p, "CurrentVoters")?;
    let observers = rows(p, "Observers")?;
    let committed = rows(p, "CommittedVoters")?;
    let model_rows = |v: &[spec::ReplicaState]| {
        let mut r: Vec<(i64, i64)> = v
            .iter()
            .map(|r| (i64::from(r.replica_id), r.log_end_offset))
            .collect();
        r.sort();
        r
    };
    let id_leo = |r: &[Row]| r.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>();
    for (field, got, want) in [
        ("CurrentVoters", &current, model_rows(&view.current_voters)),
        ("Observers", &observers, model_rows(&view.observers)),
    ] {
        if id_leo(got) != want {
            return Err(format!(
                "{field} (id, LogEndOffset) = {:?}, model {want:?}",
                id_leo(got)
            ));
        }
    }
    // The model has no clock, but one timestamp rule needs none: a replica that never fetched in this
    // epoch (LogEndOffset -1) has never fetched or caught up either (Kafka's -1 sentinels), at every version.
    for r in current.iter().chain(&observers) {
        if r.1 == -1 && (r.2, r.3) != (-1, -1) {
            return Err(format!(
                "replica {} has LogEndOffset -1 but timestamps ({}, {}), expected (-1, -1)",
                r.0, r.2, r.3
            ));
        }
    }
    // Directory ids from v2 on: the mapping's identity of each replica.
    for r in current.iter().chain(&observers).chain(&committed) {
        let want = if version >= 2 {
            mapping::directory_id(r.0 as Id)
        } else {
            uuid::Uuid::nil()
        };
        if r.4 != Some(want) {
            return Err(format!(
                "replica {} has directory id {:?} at v{version}, expected {want}",
                r.0, r.4
            ));
        }
    }
    if version >= 3 {
        let want = model_rows(&view.committed_voters);
        if id_leo(&committed) != want {
            return Err(format!(
                "CommittedVoters (id, LogEndOffset) = {:?}, model {want:?}",
                id_leo(&committed)
            ));
        }
        if committed.is_empty() != (view.high_watermark < 0) {
            return Err("CommittedVoters must be empty iff the HW is unknown".into());
        }
        // The same state as in CurrentVoters/Observers where the leader has one, else the sentinels.
        for c in &committed {
            let tracked = current.iter().chain(&observers).find(|r| r.0 == c.0);
            match tracked {
                Some(r) if r != c => {
                    return Err(format!(
                        "CommittedVoters entry {c:?} differs from the leader's replica state {r:?}"
                    ))
                }
                Some(_) => {}
                None if (c.1, c.2, c.3) != (-1, -1, -1) => {
                    return Err(format!(
                        "untracked committed voter {} lacks the sentinels: {c:?}",
                        c.0
                    ))
                }
                None => {}
            }
        }
    }
    if version >= 2 {
        let mut want: Vec<i64> = current.iter().map(|r| r.0).collect();
        if version >= 3 {
            want.extend(committed.iter().map(|r| r.0));
        }
        want.sort();
        want.dedup();
        let mut nodes = Vec::new();
        for n in value.array("Nodes").unwrap_or(&[]) {
            let Value::Struct(n) = n else {
                return Err("Nodes entry is not a struct".into());
            };
            let id = int(n, "NodeId")?;
            let listeners = n.array("Listeners").unwrap_or(&[]);
            let e = mapping::endpoint(id as Id);
            let ok = matches!(listeners, [Value::Struct(l)]
                if l.get("Name") == Some(&Value::String(Some(e.name.clone())))
                && l.get("Host") == Some(&Value::String(Some(e.host.clone())))
                && l.int("Port") == Some(i64::from(e.port)));
            if !ok {
                return Err(format!(
                    "Nodes entry {id} has listeners {listeners:?}, expected {e:?}"
                ));
            }
            nodes.push(id);
        }
        nodes.sort();
        if nodes != want {
            return Err(format!("Nodes = {nodes:?}, expected the voters {want:?}"));
        }
    }
    Ok(())
}
