//! Graph-generated paths (`conformance node --walk GRAPH`): walks of the model's named graphs
//! (`sources::graph_config`: `first-election`, `membership`) driven over TCP against one fresh node
//! per path, choosing at every step an action the kit can force, preferring transitions not yet
//! exercised.
//!
//! What the kit can force, and so what a walk may choose (the **restricted graph**):
//! - every step of a played replica: its timers, its fetches (from the node: bytes; between played
//!   replicas: model only), its operator changes, deliveries between played replicas;
//! - a delivery to the node (bytes; the node's answer comes back at once and is delivered with it);
//! - a delivery of a request the node sent (it is held by the played replica until the walk chooses
//!   it, oldest first on each connection; the replica's answer is written at once);
//! - an operator change at the node (AddRaftVoter / RemoveRaftVoter, refusals included).
//!
//! Not choosable, only observed and checked: the node's own steps. Its eager ones (its next fetch: the
//! graphs' fetch is one step, so the played leader answers it at once; a due resignation) are waited
//! for after every step; its timers are either forced as the path's first event (`--walk` paths of
//! family "node stands": a short election timeout, the kit quiet until the node stands) or pushed
//! beyond the run (60 s: the node never times out). A timer that fires anyway is still checked as a
//! model step; if it takes the state out of the graph's bounds the path ends there.
//!
//! The checking model is the graph's configuration with asynchronous fetches (a sync fetch of the
//! graph is request, answer and response as three steps) and room for the node's spontaneous
//! timeouts (epoch); a path ends when its state leaves the graph's bounds.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use model::types::{Action, ChangeOp, Envelope, Id, Role, State};
use model::{FetchMode, KraftModel, ModelConfig, Start};

use super::driver::{race, Divergence, Kit};
use super::encode::Endpoints;
use super::net::Listeners;
use super::report::Report;
use super::{scenarios, start_node, wait_listening_for, KitArgs, NUT};
use crate::fingerprint::model_fingerprint;
use crate::schema::MessageSchema;
use crate::sources::graph_config;

type R<T> = Result<T, Box<Divergence>>;

/// Election timeout of a node that must never time out (ms).
pub(super) const NEVER: u64 = 60_000;

/// The totals of a walk run.
#[derive(Default, Debug)]
pub struct WalkOutcome {
    pub paths: usize,
    /// Kit choices made (transitions of the restricted graph taken).
    pub choices: usize,
    /// Distinct (model state, action) pairs chosen.
    pub distinct: usize,
    /// Distinct model states seen at the kit's choice points.
    pub states: usize,
    /// Paths that ended because the node's own steps (its timer, its messages) took the state out of
    /// the graph's bounds.
    pub left_bounds: usize,
    /// Paths cut by a race of the node's timer and walked again with a longer election timeout.
    pub cut: usize,
    /// Scenario-like results: one per path.
    pub results: Vec<(String, Result<(), String>)>,
}

/// The checking model of a graph: its protocol, asynchronous fetches, room for spontaneous
/// elections of the node, a fresh start (the membership graph's elected start is reached over the
/// wire first).
pub(super) fn check_config(plan: &ModelConfig) -> ModelConfig {
    ModelConfig {
        fetch: FetchMode::Async,
        start: Start::Fresh,
        max_epoch: plan.max_epoch + 3,
        max_log: model::types::MAX_LOG as u8,
        max_in_flight: 32,
        ..*plan
    }
}

/// True if `st` is inside the graph's bounds (the walk ends a path otherwise).
pub(super) fn in_bounds(plan: &ModelConfig, st: &State) -> bool {
    st.network.len() <= plan.max_in_flight as usize
        && st
            .servers
            .iter()
            .all(|s| s.epoch <= plan.max_epoch && s.log.len() <= plan.max_log)
}

/// The kit's state as the graph sees it: the node's parked fetches left out (in the graph the node's
/// fetch is one step it has not taken yet).
fn plan_view(kit: &Kit) -> State {
    let mut st = kit.state.clone();
    for e in kit.parked() {
        if let Some(p) = st.network.iter().position(|x| *x == e) {
            st.network.remove(p);
        }
    }
    st
}

/// Why the kit cannot choose model transition `a` (`None`: it can force it). `deliverable`: the
/// node's held requests the kit may deliver now; `restarts`: the node's restart is driven (a kill
/// and a start of its process on the same data directory).
pub fn not_choosable(
    nut: Id,
    deliverable: &[Envelope],
    a: &Action,
    restarts: bool,
) -> Option<&'static str> {
    match *a {
        Action::ElectionTimeout(i)
        | Action::FetchTimeout(i)
        | Action::CheckQuorumTimeout(i)
        | Action::ChangeTimeout(i)
            if i == nut =>
        {
            Some("the node's timer (its clock: waited for, never forced at a chosen point)")
        }
        Action::Resign(i) | Action::Fetch { replica: i, .. } if i == nut => {
            Some("the node's eager step (taken by the node on its own, waited for after every step)")
        }
        Action::ClientAppend(i) if i == nut => {
            Some("a client append at the node (a controller has no client write RPC)")
        }
        Action::Restart(i) if i == nut && !restarts => Some("the node's restart (not driven here)"),
        Action::Restart(i) if i != nut => {
            Some("a played replica's restart (a model step with nothing on the wire; the node's is driven)")
        }
        Action::Change { server, .. } if server != nut => {
            Some("a played replica's operator change (a model step with nothing on the wire)")
        }
        Action::Change {
            op: ChangeOp::Swap { .. },
            ..
        } => Some("a swap (the bug variant: no Kafka request)"),
        Action::Deliver(e) if (e.src == nut || e.dst == nut) && super::driver::is_response(&e.msg) => {
            Some("a response apart from its request (the kit delivers each response with its request)")
        }
        Action::Deliver(e) if e.src == nut && !deliverable.contains(&e) => {
            Some("a held request behind another on its connection (responses are read in order)")
        }
        Action::Drop(_) => Some("a lost message (reliable network)"),
        _ => None,
    }
}

/// The kit's choices at its current state (the walk's restricted graph).
fn choices(plan: &KraftModel, kit: &Kit) -> Vec<Action> {
    let view = plan_view(kit);
    let st = &view;
    let held = kit.deliverable_held();
    let mut all = Vec::new();
    plan.enabled_actions(st, &mut all);
    all.into_iter()
        .filter(|a| not_choosable(kit.nut, &held, a, false).is_none())
        .filter(|a| {
            plan.step(st, *a)
                .is_some_and(|s| s.state.network.len() <= plan.cfg.max_in_flight as usize)
        })
        .collect()
}

/// Performs the kit's choice `a` (an action of the graph's model) with the checking model.
pub(super) fn perform(kit: &mut Kit, a: Action) -> R<()> {
    let nut = kit.nut;
    match a {
        Action::Fetch { replica, leader } => {
            // The graph's fetch is one step; here: request, the leader's answer, the response.
            let before = kit.state.clone();
            kit.kit(a)?;
            let req = added_from(&before, &kit.state, replica)
                .ok_or_else(|| kit_err(format!("{a:?} sent no request")))?;
            if leader == nut {
                kit.deliver_to_node(req)
            } else {
                let before = kit.state.clone();
                kit.kit(Action::Deliver(req))?;
                match added_from(&before, &kit.state, leader) {
                    Some(resp) => kit.kit(Action::Deliver(resp)),
                    None => Ok(()),
                }
            }
        }
        Action::Change { server, op } if server == nut => kit.change(op),
        Action::Deliver(e) if e.src == nut => kit.deliver_held(e),
        Action::Deliver(e) if e.dst == nut => kit.deliver_to_node(e),
        other => kit.kit(other),
    }
}

fn kit_err(s: String) -> Box<Divergence> {
    Box::new(Divergence::Kit(s))
}

/// The message `after` has in flight from `src` that `before` has not.
fn added_from(before: &State, after: &State, src: model::types::Id) -> Option<Envelope> {
    super::driver::new_messages(before, after)
        .into_iter()
        .find(|e| e.src == src)
}

/// A small deterministic generator (the walk is reproducible for a seed, up to the node's timing).
struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> Option<T> {
        (!v.is_empty()).then(|| v[(self.next() % v.len() as u64) as usize])
    }
}

/// Walk options.
pub struct WalkPlan<'a> {
    pub graph: &'a str,
    pub paths: usize,
    pub max_steps: usize,
    pub seed: u64,
    /// DescribeQuorum version checked after every step (all versions up to it at a path's end).
    pub describe_max: i16,
}

/// Runs `w.paths` walks of graph `w.graph`, each against a fresh `kraft node` (started with `bin`).
pub fn run(
    args: &KitArgs,
    w: &WalkPlan,
    bin: &super::Launcher,
    work: &Path,
    schema: &MessageSchema,
    report: &mut Report,
    out: &mut WalkOutcome,
) -> Result<(), String> {
    let plan_cfg = graph_config(w.graph).ok_or_else(|| format!("no graph {:?}", w.graph))?;
    let plan = KraftModel::new(plan_cfg).map_err(|e| e.to_string())?;
    let mut covered: HashSet<(u64, Action)> = HashSet::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut rng = SplitMix(w.seed);
    let mut election = args.election_ms;
    let mut p = 0;
    while p < w.paths {
        // first-election: even paths force the node's election first, odd ones never let it time out.
        // membership: the node is elected first (the graph starts there), with the short timer.
        let stands = w.graph == "membership" || p % 2 == 0;
        let name = format!(
            "walk {} #{p} ({})",
            w.graph,
            if stands { "node stands" } else { "kit stands" }
        );
        let dir = work.join(format!("walk-{}-{p}", w.graph));
        let check = KraftModel::new(check_config(&plan_cfg)).map_err(|e| e.to_string())?;
        report.trace = name.clone();
        let (mut kit, node) = fresh_kit(
            args,
            bin,
            dir,
            if stands { election } else { NEVER },
            check,
            std::mem::take(report),
            schema,
        )?;
        let started = std::time::Instant::now();
        let r = walk_one(
            &mut kit,
            &plan,
            w,
            stands,
            &mut rng,
            &mut covered,
            &mut seen,
            out,
        );
        let name = format!("{name}, {} ms", started.elapsed().as_millis());
        *report = std::mem::take(&mut kit.report);
        drop(kit);
        // A race of the node's timer: the path again with a longer election timeout while one is left.
        let longer = race::longer_timeout(election, args.wait_ms);
        if let (Err(d), Some(t)) = (&r, longer) {
            if race::is_timer_race(d) {
                out.cut += 1;
                election = t;
                continue;
            }
        }
        let keep = r.is_err();
        let dir = node.dir.clone();
        drop(node);
        if !keep {
            let _ = std::fs::remove_dir_all(&dir);
        }
        out.paths += 1;
        out.results.push((name, r.map_err(|d| d.to_string())));
        p += 1;
    }
    out.distinct += covered.len();
    out.states += seen.len();
    Ok(())
}

/// A fresh `kraft node` in `dir` (election timeout `election` ms, fetch timeout [`NEVER`]) and the kit
/// playing replicas 1, 2, 3 against it with the checking model `check`.
pub(super) fn fresh_kit(
    args: &KitArgs,
    bin: &super::Launcher,
    dir: std::path::PathBuf,
    election: u64,
    check: KraftModel,
    report: Report,
    schema: &MessageSchema,
) -> Result<(Kit, super::NodeProcess), String> {
    let (listeners, addrs) =
        Listeners::bind(&[(1, 0), (2, 0), (3, 0)]).map_err(|e| format!("kit listeners: {e}"))?;
    let mut eps = Endpoints::played(&args.cluster_id, addrs);
    eps.ports[0] = super::free_port()?;
    let mut node = start_node(bin, dir, &eps, (election, NEVER), Vec::new(), None)?;
    let addr = format!("127.0.0.1:{}", eps.ports[0])
        .parse()
        .map_err(|e| format!("{e}"))?;
    let wait = Duration::from_millis(args.wait_ms);
    wait_listening_for(addr, wait, Some(&mut node))?;
    let mut kit = Kit::new(
        check,
        NUT,
        eps,
        (addr, listeners),
        wait,
        report,
        schema.clone(),
    );
    kit.one_in_flight = args.one_in_flight;
    kit.elected_appends = args.elected_appends.clone();
    Ok((kit, node))
}

/// The membership graph's start reached over the wire: the node's first election, two fetch rounds
/// of the voters, the joiner's discovery, records and HW (`KraftModel::election_prefix`); then the
/// kit's state is checked equal to the model's elected start `start` and becomes it. A node that
/// writes records of its own once elected (`--elected-appends`): after the voters' rounds, per batch
/// (`stages`: the records written by then, the played replicas that fetch after them, in turn), the
/// kit waits until DescribeQuorum shows them, then the replicas fetch (`tour::elected_start`).
pub(super) fn reach_elected_start(kit: &mut Kit, start: State, stages: &[(u8, Vec<Id>)]) -> R<()> {
    scenarios::first_election(kit, 0..=0)?;
    if stages.is_empty() {
        for _ in 0..3 {
            scenarios::fetch_from_node(kit, 3)?;
        }
    }
    for (written, fetches) in stages {
        kit.await_node_appends(*written)?;
        for &r in fetches {
            scenarios::fetch_from_node(kit, r)?;
        }
    }
    let differ: Vec<String> = (0..start.servers.len())
        .filter(|&i| start.servers[i] != kit.state.servers[i])
        .map(|i| format!("{:?} vs {:?}", kit.state.servers[i], start.servers[i]))
        .collect();
    if !differ.is_empty() || !kit.state.network.is_empty() {
        return Err(kit_err(format!(
            "the first election did not reach the membership graph's start: {differ:?}, in flight {:?}",
            kit.state.network
        )));
    }
    kit.state = start;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn walk_one(
    kit: &mut Kit,
    plan: &KraftModel,
    w: &WalkPlan,
    stands: bool,
    rng: &mut SplitMix,
    covered: &mut HashSet<(u64, Action)>,
    seen: &mut HashSet<u64>,
    out: &mut WalkOutcome,
) -> R<()> {
    let me = kit.nut as usize;
    if w.graph == "membership" {
        reach_elected_start(kit, plan.initial_state(), &[])?;
    } else if stands {
        kit.until("the node's election timeout", |k| {
            k.state.servers[me].role != Role::Unattached
        })?;
    }
    kit.hold = true;
    kit.settle_node()?;
    for _ in 0..w.max_steps {
        let view = plan_view(kit);
        if !in_bounds(&plan.cfg, &view) {
            out.left_bounds += 1;
            break;
        }
        let fp = model_fingerprint(&view);
        seen.insert(fp);
        let cs = choices(plan, kit);
        let fresh: Vec<Action> = cs
            .iter()
            .copied()
            .filter(|a| !covered.contains(&(fp, *a)))
            .collect();
        let Some(a) = rng.pick(if fresh.is_empty() { &cs } else { &fresh }) else {
            break;
        };
        covered.insert((fp, a));
        out.choices += 1;
        perform(kit, a)?;
        kit.settle_node()?;
        kit.describe(w.describe_max)?;
    }
    describe_all_versions(kit, w.describe_max)
}

fn describe_all_versions(kit: &mut Kit, max: i16) -> R<()> {
    for v in 0..=max {
        kit.describe(v)?;
    }
    Ok(())
}
