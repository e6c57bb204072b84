//! `cargo run -p conformance`: replays model traces against the implementation and checks DescribeQuorum
//! on the wire. The default run is the CI gate; the exit code is non-zero iff a divergence was found or
//! anything could not run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use conformance::replay::{self, Options, TraceSpec};
use conformance::{batch, engine, graph, report, sources, vectors, wire};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Source {
    Graph,
    Exhaustive,
    Random,
    Files,
    Bugs,
}

/// The search that explores a graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Engine {
    /// Depth-first on `--threads` threads in this process (the gate's).
    Local,
    /// Breadth-first on Timely Dataflow: `--workers` threads in each of `--processes` processes.
    Timely,
}

#[derive(Parser)]
#[command(
    name = "conformance",
    about = "Replay model traces against the kraft implementation"
)]
struct Cli {
    /// (a) Graph replay at these named bounds (`first-election`, `membership`, `snapshots`, `snapshot-crash`,
    /// `updates`, `disk-loss`, `upgrade`, `auto-join`; beyond the gate, the model check's bounds: `model-default`,
    /// `model-snapshots`).
    #[arg(long, default_values_t = sources::GRAPH_BOUNDS.map(String::from))]
    graph: Vec<String>,
    /// (a) Override the messages-in-flight bound of every `--graph` (larger graphs than the gate's; see
    /// conformance/README.md for measured sizes).
    #[arg(long)]
    in_flight: Option<u8>,
    /// (a) Implementation states expanded per model state (distinct implementation fingerprints, 1–4).
    #[arg(long, default_value_t = 1)]
    variants: usize,
    /// (a) Stop each graph after expanding this many model states (measurement; not complete). With
    /// `--engine timely`: after the BFS level where about this many successors were generated.
    #[arg(long)]
    max_states: Option<u64>,
    /// (a) The search: `local` (depth-first, this process) or `timely` (breadth-first, distributed;
    /// every process runs the same command with its own `--process`, process 0 prints the verdict).
    #[arg(long, value_enum, default_value_t = Engine::Local)]
    engine: Engine,
    #[command(flatten)]
    cluster: model::engine::Cluster,
    /// Progress to stderr every this many seconds (0: none).
    #[arg(long, default_value_t = 0)]
    progress: u64,
    /// (a') Every path of at most this many actions at the default model bounds (0: none).
    #[arg(long, default_value_t = 0)]
    depth: usize,
    /// (b) Number of seeded random walks.
    #[arg(long, default_value_t = 600)]
    walks: u64,
    /// (b) Actions per random walk.
    #[arg(long, default_value_t = 200)]
    walk_depth: usize,
    /// (b) Seed of the first walk (walk k uses seed + k).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// (c) Trace files or directories of `.jsonl` files (default: conformance/traces).
    #[arg(long)]
    traces: Vec<PathBuf>,
    /// (d) Only this bug variant (with --only bugs).
    #[arg(long)]
    bug: Option<String>,
    /// Run only these sources (default: all).
    #[arg(long, value_enum)]
    only: Vec<Source>,
    /// Run only the trace with this index in its source (with --only).
    #[arg(long)]
    index: Option<usize>,
    /// Message schemas (default: specs/messages).
    #[arg(long)]
    messages: Option<PathBuf>,
    /// Golden vectors (default: specs/vectors).
    #[arg(long)]
    vectors: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Stop the run at this many divergences (at least 1) and print them; the sources not yet run are
    /// skipped, so `--max-reports 1` exits at the first divergence (the mutation run uses it).
    #[arg(long, default_value_t = 3)]
    max_reports: usize,
}

/// mimalloc: the replay allocates small values and node copies at a high rate (see the workspace's
/// Cargo.toml for the measured difference).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // `conformance node ...`: the black-box kit (conformance/README.md, "Test your KRaft implementation").
    if std::env::args().nth(1).as_deref() == Some("node") {
        return conformance::kit::main(std::env::args().skip(1));
    }
    let mut cli = Cli::parse();
    let started = Instant::now();
    if cli.engine == Engine::Timely && cli.cluster.process > 0 {
        // Only the graphs are distributed: the other sources run on process 0.
        cli.only = vec![Source::Graph];
    }
    let mut problems: Vec<String> = Vec::new();
    let wants = |s: Source| cli.only.is_empty() || cli.only.contains(&s);
    let limit = cli.max_reports.max(1);

    let messages = cli
        .messages
        .clone()
        .unwrap_or_else(wire::default_messages_dir);
    let mut encodings_wire = 0u64;
    let mut checker = match wire::WireChecker::load(&messages) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "conformance: cannot load the message schemas from {}: {e}",
                messages.display()
            );
            println!("conformance: 0 traces, 0 steps, 0 DescribeQuorum encodings checked, 0 divergences (could not run)");
            return ExitCode::FAILURE;
        }
    };
    for v in 0..=kraft::wire::describe_quorum::MAX_VERSION {
        if let Err(e) = checker.check_request(&conformance::describe::describe_request(), v) {
            problems.push(format!("DescribeQuorum request v{v}: {e}"));
        }
    }
    let vectors_dir = cli
        .vectors
        .clone()
        .unwrap_or_else(wire::default_vectors_dir);
    match vectors::check_dir(&vectors_dir, &mut checker) {
        Ok(n) => println!(
            "vectors: {n} golden vectors in {} agree",
            vectors_dir.display()
        ),
        Err(e) => problems.push(format!("vectors: {e}")),
    }

    let mut traces: Vec<TraceSpec> = Vec::new();
    let pick = |mut v: Vec<TraceSpec>| match cli.index {
        Some(i) => v.drain(..).nth(i).into_iter().collect(),
        None => v,
    };
    let (mut graph_transitions, mut graph_states, mut graph_encodings) = (0u64, 0u64, 0u64);
    let mut graph_refusals = 0u64;
    let mut graph_divergences = Vec::new();
    let mut covered = Vec::new();
    let mut not_covered = Vec::new();
    if wants(Source::Graph) {
        for name in &cli.graph {
            if graph_divergences.len() >= limit {
                break;
            }
            let Some(mut cfg) = sources::graph_config(name) else {
                problems.push(format!(
                    "unknown --graph bounds {name} (known: {}, {})",
                    sources::GRAPH_BOUNDS.join(", "),
                    sources::LARGE_GRAPH_BOUNDS.join(", ")
                ));
                continue;
            };
            if let Some(k) = cli.in_flight {
                cfg.max_in_flight = k;
            }
            let mut opts = graph::GraphOptions::new(cfg);
            opts.threads = cli.threads.max(1);
            opts.variants = cli.variants;
            opts.max_divergences = limit - graph_divergences.len();
            opts.max_states = cli.max_states;
            opts.progress_secs = cli.progress;
            let run = match cli.engine {
                Engine::Local => graph::run(&opts, &checker).map(Some),
                Engine::Timely => engine::run(&opts, &cli.cluster, &checker).map(|r| {
                    r.map(|(g, note)| {
                        println!("{}", engine_note(&note));
                        g
                    })
                }),
            };
            match run {
                Ok(None) => {
                    // Another process of the cluster: its workers took part; process 0 reports.
                    println!(
                        "(a) graph {name}: explored with process 0 of {}, which reports the verdict",
                        cli.cluster.processes
                    );
                    continue;
                }
                Ok(Some(g)) => {
                    println!(
                        "(a) graph {name}: {} transitions of {} model states in {:.1} s ({:.0} transitions/s){}; \
                         {} expanded (model state, implementation) pairs, {} model states reached with \
                         more than one implementation fingerprint, {} with one left unexpanded{}; at {cfg}",
                        g.transitions,
                        g.states,
                        g.seconds,
                        g.per_second(),
                        if g.complete {
                            ""
                        } else if g.truncated {
                            " (stopped at --max-states: not the whole graph)"
                        } else {
                            " (stopped at the divergence limit)"
                        },
                        g.expanded,
                        g.multi,
                        g.capped,
                        downloads_note(&g.downloads),
                    );
                    graph_transitions += g.transitions;
                    graph_states += g.states;
                    graph_encodings += g.encodings;
                    graph_refusals += g.refusals;
                    encodings_wire += g.wire_checked;
                    let label = sources::graph_label(name, &cfg);
                    if g.complete && g.divergences.is_empty() {
                        covered.push(label);
                    } else {
                        not_covered.push(label);
                    }
                    graph_divergences.extend(g.divergences);
                }
                Err(e) => problems.push(format!("graph {name}: {e}")),
            }
        }
    }
    if cli.engine == Engine::Timely && cli.cluster.process > 0 {
        for p in &problems {
            eprintln!("conformance: {p}");
        }
        println!(
            "conformance: process {} of {}: the graphs were explored with process 0, which prints the verdict",
            cli.cluster.process, cli.cluster.processes
        );
        return if problems.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let more = |found: usize| found < limit;
    if wants(Source::Exhaustive) && cli.depth > 0 && more(graph_divergences.len()) {
        match sources::exhaustive(sources::exhaustive_config(), cli.depth) {
            Ok(v) => {
                println!(
                    "(a) exhaustive: {} paths of depth ≤ {} at {}",
                    v.len(),
                    cli.depth,
                    sources::exhaustive_config()
                );
                traces.extend(pick(v));
            }
            Err(e) => problems.push(format!("exhaustive source: {e}")),
        }
    }
    if wants(Source::Random) && more(graph_divergences.len()) {
        match sources::random_walks(cli.walks, cli.walk_depth, cli.seed) {
            Ok(v) => {
                println!(
                    "(b) random: {} walks of ≤ {} actions from seed {}",
                    v.len(),
                    cli.walk_depth,
                    cli.seed
                );
                traces.extend(pick(v));
            }
            Err(e) => problems.push(format!("random source: {e}")),
        }
    }
    if wants(Source::Files) && more(graph_divergences.len()) {
        let paths = if cli.traces.is_empty() {
            vec![default_traces_dir()]
        } else {
            cli.traces.clone()
        };
        let mut files = Vec::new();
        for p in &paths {
            match sources::trace_files(p) {
                Ok(f) => files.extend(f),
                Err(e) => problems.push(format!("trace files: {e}")),
            }
        }
        let mut from_files = Vec::new();
        for f in &files {
            match sources::read_trace_file(f) {
                Ok(v) => from_files.extend(v),
                Err(e) => problems.push(format!("trace file: {e}")),
            }
        }
        println!(
            "(c) files: {} traces from {} files",
            from_files.len(),
            files.len()
        );
        traces.extend(pick(from_files));
    }

    let opts = Options::default();
    let left = limit.saturating_sub(graph_divergences.len());
    let outcome = batch::replay_all(&traces, &checker, &opts, cli.threads, left.max(1));
    let outcome_content = outcome.content;
    let refusals = outcome.refusals + graph_refusals;
    let mut divergences = graph_divergences;
    divergences.extend(outcome.divergences);
    let (mut steps, mut encodings, mut count) =
        (outcome.steps, outcome.encodings, outcome.replayed);

    if wants(Source::Bugs) && more(divergences.len()) {
        // (d) Each bug-variant counterexample must diverge from the correct implementation.
        for (bug, t) in sources::bug_traces() {
            if cli.bug.as_deref().is_some_and(|b| b != bug.name()) {
                continue;
            }
            let t = match t {
                Ok(t) => t,
                Err(e) => {
                    problems.push(e);
                    continue;
                }
            };
            count += 1;
            match replay::replay(&t, &mut checker, &opts) {
                Ok(c) => {
                    steps += c.steps;
                    problems.push(format!(
                        "{}: the counterexample replays without divergence, so the harness cannot see this bug",
                        t.label
                    ));
                }
                Err(d) => {
                    steps += d.step as u64;
                    let action = d
                        .action
                        .map(|a| model::story::action(&a))
                        .unwrap_or_default();
                    println!(
                        "(d) {} diverges as required at step {} ({action}): {}",
                        t.label,
                        d.step,
                        report::headline(&d)
                    );
                }
            }
        }
    }
    encodings += checker.checked + encodings_wire;

    for d in &divergences {
        eprintln!("{}", report::render(d));
    }
    for p in &problems {
        eprintln!("conformance: {p}");
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{:.1} s; walks and files: {} steps ({:.0} steps/s over the whole run); {} DescribeQuorum responses \
         checked against the model ({} distinct encodings through every decoder)",
        secs,
        steps,
        steps as f64 / secs.max(1e-9),
        outcome_content + graph_encodings,
        encodings
    );
    let d = divergences.len();
    let stopped = if more(d) {
        String::new()
    } else {
        format!(" (--max-reports {limit} reached: the run stopped there)")
    };
    let coverage = report::coverage(&covered, &not_covered);
    println!(
        "conformance: {graph_transitions} transitions of {graph_states} model states ({coverage}), \
         {count} walks, {encodings} DescribeQuorum encodings checked, {refusals} refusal reasons compared, \
         {d} divergences{stopped}"
    );
    divergences.clear();
    if d > 0 || !problems.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn default_traces_dir() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")
}

/// The graph line's account of snapshot downloads, if any happened.
fn downloads_note(d: &conformance::harness::Downloads) -> String {
    if d.installs == 0 && d.part_restarts == 0 {
        return String::new();
    }
    format!(
        "; {} snapshot installs in {} FetchSnapshot chunks (at least {} each), {} restarts with a .checkpoint.part",
        d.installs, d.chunks, d.min_chunks, d.part_restarts
    )
}

/// Where a run on the engine ran, its peak memory per process, and what rebuilding pairs that crossed
/// processes cost here.
fn engine_note(n: &engine::EngineNote) -> String {
    let rss: Vec<String> = n
        .peak_rss
        .iter()
        .map(|b| format!("{:.0} MB", *b as f64 / 1e6))
        .collect();
    let per = |x: f64| x / (n.rebuilds.max(1) as f64);
    format!(
        "    engine: timely, {} workers × {} processes, peak RSS per process [{}]; {} pairs rebuilt here \
         from their paths ({:.1} actions, {:.1} µs each)",
        n.workers,
        n.processes,
        rss.join(", "),
        n.rebuilds,
        per(n.rebuild_actions as f64),
        per(n.rebuild_seconds * 1e6),
    )
}
