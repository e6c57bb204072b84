//! `model`: check, explore, simulate and export traces of the KRaft membership model.

use clap::{Args, Parser, Subcommand, ValueEnum};
use model::check::{self, CheckOptions, CheckReport, Status, Strategy};
use model::config::{FetchMode, ModelConfig, Start};
use model::step::KraftModel;
use model::trace::{self, SplitMix64};
use model::{properties, story};
use serde_json::json;
use stateright::Model;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

mod cli_bounds;
use cli_bounds::{explore_command, explore_config, Bounds};

/// What a C tool's SIGPIPE death reports (128 + 13): the reader closed stdout (`model check | head`),
/// so the run ends quietly rather than panicking in `println!`, and a pipeline never sees a verdict
/// the run did not reach.
const EXIT_STDOUT_CLOSED: i32 = 141;

/// Writes to stdout; a closed stdout ends the process with [`EXIT_STDOUT_CLOSED`].
fn write_out(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if out.write_fmt(args).is_err() || out.flush().is_err() {
        std::process::exit(EXIT_STDOUT_CLOSED);
    }
}

/// `println!` through [`write_out`].
macro_rules! out {
    () => {
        write_out(format_args!("\n"))
    };
    ($($t:tt)*) => {
        write_out(format_args!("{}\n", format_args!($($t)*)))
    };
}

/// `print!` through [`write_out`].
macro_rules! out_part {
    ($($t:tt)*) => {
        write_out(format_args!($($t)*))
    };
}

#[derive(Parser)]
#[command(
    name = "model",
    about = "Stateright model of KRaft membership changes and the committed voter set"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Exhaustive check at the given bounds (DFS + symmetry); with --bug, a shortest-counterexample
    /// hunt (BFS, one thread, stop at the first violation).
    Check(CheckArgs),
    /// Serve stateright's Explorer web UI on 127.0.0.1.
    Explore {
        /// Port.
        #[arg(long, default_value_t = 3000)]
        port: u16,
        /// Serve the model as `check` runs it (message GC on, refused requests answered without a
        /// step) instead of with trace settings, so that the `explorer path` of a counterexample
        /// opens: `check` prints the whole command.
        #[arg(long)]
        as_check: bool,
        #[command(flatten)]
        bounds: Bounds,
    },
    /// Seeded random walks, checking every `always` property in every state.
    Simulate {
        /// Seed of the first walk (walk k uses seed + k).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Number of walks.
        #[arg(long, default_value_t = 1000)]
        runs: u64,
        /// Actions per walk.
        #[arg(long, default_value_t = 40)]
        depth: usize,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        bounds: Bounds,
    },
    /// Write JSON Lines traces (schema: specs/traces.md).
    Traces {
        /// Actions per trace.
        #[arg(long)]
        depth: usize,
        /// Write N seeded random walks instead of every path.
        #[arg(long)]
        random: Option<u64>,
        /// Seed for --random.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Stop after this many traces (every-path mode grows exponentially).
        #[arg(long, default_value_t = 100_000)]
        max_traces: u64,
        /// Refused operator requests as steps (default: on with --random, off for every path,
        /// where they would dominate the enumeration).
        #[arg(long)]
        refusals: Option<bool>,
        /// Output file.
        #[arg(long)]
        out: std::path::PathBuf,
        #[command(flatten)]
        bounds: Bounds,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum StrategyArg {
    Dfs,
    Bfs,
    Simulation,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum EngineArg {
    /// The parallel DFS of one process (`src/dfs.rs`).
    Dfs,
    /// The BFS on Timely Dataflow over threads and processes (`src/engine/`): shortest
    /// counterexamples, state counts equal to the DFS's.
    Timely,
}

#[derive(Args)]
struct CheckArgs {
    #[command(flatten)]
    bounds: Bounds,
    /// The exhaustive search's engine.
    #[arg(long, value_enum, default_value_t = EngineArg::Dfs)]
    engine: EngineArg,
    #[command(flatten)]
    cluster: model::engine::Cluster,
    /// Worker threads (default: all cores; --bug defaults to 1 for shortest paths).
    #[arg(long)]
    threads: Option<usize>,
    /// Disable symmetry reduction.
    #[arg(long)]
    no_symmetry: bool,
    /// The model as the conformance gate explores it (`trace::trace_config`: refusals as steps,
    /// stale messages kept, check-quorum and the node's pre-vote); with --no-symmetry its unique
    /// states are the model states of the gate's graph at these bounds.
    #[arg(long)]
    gate_form: bool,
    /// Stateright target_max_depth (paths of at most DEPTH − 2 actions); makes the run non-exhaustive.
    #[arg(long)]
    depth: Option<usize>,
    /// Search strategy (default: dfs; bfs with --bug).
    #[arg(long, value_enum)]
    strategy: Option<StrategyArg>,
    /// Seed for --strategy simulation.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Stop after SECONDS (the run is then reported as not exhaustive).
    #[arg(long)]
    timeout: Option<u64>,
    /// Skip the small fresh-start check that covers the first election.
    #[arg(long)]
    no_first_election: bool,
    /// Print progress every second (stderr).
    #[arg(long)]
    progress: bool,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
    /// Start from a named set of bounds (flags still override): `default`, `deep` (the default
    /// at epoch 3; minutes, not seconds: model/README.md), or `snapshots` (snapshots, log-start
    /// moves and installs), or `updates` (UpdateRaftVoter requests), or `disk-loss` (disk losses:
    /// directory ids, a replaced voter rejoining under its new key), `upgrade` (the kraft.version
    /// 0 -> 1 upgrade from static voters) or `auto-join` (KIP-1186).
    #[arg(long, value_enum)]
    preset: Option<Preset>,
    /// With --bug: search only for the user-visible safety failures (two leaders in one epoch, a
    /// committed entry lost, a committed voter set rolled back), not the structural property that
    /// fires first. BFS, stops at the first failure, at --max-states (default 6,000,000 generated
    /// states, a few GB of queue) or after --timeout.
    #[arg(long, requires = "bug")]
    harm: bool,
    /// Stop after generating about this many states (the run is then reported as not exhaustive).
    #[arg(long)]
    max_states: Option<usize>,
}

/// `check --harm`'s default cap: a BFS queues every generated state (about 400 bytes each).
const HARM_MAX_STATES: usize = 6_000_000;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Preset {
    Default,
    Deep,
    /// Snapshots, log-start moves and installs (model/README.md, "Snapshots").
    Snapshots,
    /// UpdateRaftVoter requests beside AddVoter and RemoveVoter (model/README.md, "UpdateRaftVoter").
    Updates,
    /// Disk losses and directory ids (model/README.md, "Disk loss").
    DiskLoss,
    /// The kraft.version upgrade from static voters (model/README.md, "The kraft.version upgrade").
    Upgrade,
    /// Auto-join of a replaced voter and a joiner (model/README.md, "Auto-join").
    AutoJoin,
}

fn model_or_exit(cfg: ModelConfig) -> Result<KraftModel, ExitCode> {
    KraftModel::new(cfg).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Holds => "holds",
        Status::Violated => "VIOLATED",
        Status::ExampleFound => "example found",
        Status::NoExample => "NO EXAMPLE",
    }
}

fn print_report(title: &str, engine: &Option<String>, opts: &CheckOptions, r: &CheckReport) {
    out!("== {title}");
    out!("bounds: {}", r.bounds);
    if let Some(e) = engine {
        out!("engine: {e}");
    } else {
        out!(
            "strategy: {:?}, threads {}, symmetry {}",
            opts.strategy,
            opts.threads,
            if opts.symmetry && opts.strategy != Strategy::Bfs {
                "on"
            } else {
                "off"
            }
        );
    }
    out!("exhaustive: {}", r.exhaustive);
    out!(
        "states: {}, unique states: {}, max depth: {}, seconds: {:.2}, unique states/s: {:.0}",
        r.states,
        r.unique_states,
        r.max_depth,
        r.seconds,
        r.unique_per_second()
    );
    out!("properties:");
    for p in &r.properties {
        out!("  {:<9} {:<38} {}", p.kind, p.name, status_word(p.status));
    }
    if let Some(c) = &r.counterexample {
        out!(
            "counterexample: {} violated after {} steps (explorer path #/steps/{})",
            c.property,
            c.actions.len(),
            c.index_path
        );
        out!("explorer: {}", explore_command(&r.bounds));
        out_part!("{}", story::path(&r.bounds, &c.steps));
    }
}

fn report_json(r: &CheckReport) -> serde_json::Value {
    // `counterexample`: the steps from the initial state (step 0 has no action), each with the
    // state after it; the violated property is `counterexample_property`.
    let counterexample = r.counterexample.as_ref().map(|c| {
        let mut steps =
            vec![json!({ "step": 0, "action": null, "state": c.steps.first().map(|s| &s.0) })];
        steps.extend(
            c.steps
                .windows(2)
                .enumerate()
                .map(|(k, w)| json!({ "step": k + 1, "action": w[0].1, "state": w[1].0 })),
        );
        steps
    });
    json!({
        "result": if r.ok() { "ok" } else { "violated" },
        "exhaustive": r.exhaustive,
        "bounds": r.bounds,
        "states": r.states,
        "unique_states": r.unique_states,
        "max_depth": r.max_depth,
        "seconds": r.seconds,
        "unique_states_per_second": r.unique_per_second(),
        "properties": r.properties,
        "counterexample": counterexample,
        "counterexample_property": r.counterexample.as_ref().map(|c| &c.property),
        "explorer": r.counterexample.as_ref().map(|c| json!({
            "command": explore_command(&r.bounds),
            "path": format!("#/steps/{}", c.index_path),
        })),
    })
}

fn cmd_check(a: CheckArgs) -> Result<ExitCode, ExitCode> {
    let hunting = a.bounds.bug.is_some();
    let base = match (a.bounds.bug, a.preset) {
        (Some(bug), _) => check::bug_bounds(bug, a.bounds.fetch.unwrap_or(FetchMode::Sync)),
        (None, Some(Preset::Deep)) => check::deep_bounds(),
        (None, Some(Preset::Snapshots)) => check::snapshot_bounds(),
        (None, Some(Preset::Updates)) => check::update_bounds(),
        (None, Some(Preset::DiskLoss)) => check::disk_loss_bounds(),
        (None, Some(Preset::Upgrade)) => check::upgrade_bounds(),
        (None, Some(Preset::AutoJoin)) => check::auto_join_bounds(),
        (None, _) => check::default_bounds(),
    };
    let cfg = a.bounds.apply(base);
    let cfg = if a.gate_form {
        trace::trace_config(cfg)
    } else {
        cfg
    };
    let mut model = model_or_exit(cfg)?;
    if a.harm {
        model.only = Some(&properties::HARM);
    }
    let strategy = match a.strategy {
        Some(StrategyArg::Dfs) => Strategy::Dfs,
        Some(StrategyArg::Bfs) => Strategy::Bfs,
        Some(StrategyArg::Simulation) => Strategy::Simulation { seed: a.seed },
        None if hunting => Strategy::Bfs,
        None => Strategy::Dfs,
    };
    let threads = a.threads.unwrap_or(if hunting {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    });
    let opts = CheckOptions {
        strategy,
        threads,
        symmetry: !a.no_symmetry,
        depth: a.depth,
        timeout: a.timeout.map(Duration::from_secs),
        stop_at_first_violation: hunting || strategy != Strategy::Dfs,
        progress: a.progress,
        max_states: a.max_states.or(a.harm.then_some(HARM_MAX_STATES)),
    };
    let engine = (a.engine == EngineArg::Timely).then(|| timely_label(&a, &opts));
    let run = |model: KraftModel, opts: CheckOptions| -> Result<Option<CheckReport>, ExitCode> {
        if a.engine == EngineArg::Dfs {
            return Ok(Some(check::run(model, opts)));
        }
        if matches!(opts.strategy, Strategy::Simulation { .. }) || opts.depth.is_some() {
            eprintln!("error: --engine timely is a BFS: no --strategy simulation, no --depth");
            return Err(ExitCode::from(2));
        }
        model::engine::kraft::run(model, &opts, &a.cluster).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(2)
        })
    };
    let Some(main) = run(model, opts)? else {
        // Process 0 prints the result.
        return Ok(ExitCode::SUCCESS);
    };
    let mut reports = vec![("check", opts, main)];
    if !hunting && !a.no_first_election && cfg.start == Start::Elected {
        let fe_cfg = ModelConfig {
            fetch: cfg.fetch,
            network: cfg.network,
            hw_rule: cfg.hw_rule,
            ..check::first_election_bounds()
        };
        let fe_opts = CheckOptions {
            progress: false,
            timeout: None,
            depth: None,
            max_states: None,
            ..opts
        };
        if let Some(fe) = run(model_or_exit(fe_cfg)?, fe_opts)? {
            reports.push(("first election (fresh start)", fe_opts, fe));
        }
    }
    let ok = reports.iter().all(|(_, _, r)| r.ok());
    if a.json {
        let mut v = report_json(&reports[0].2);
        if let Some((_, _, fe)) = reports.get(1) {
            v["first_election"] = report_json(fe);
        }
        v["result"] = json!(if ok { "ok" } else { "violated" });
        v["engine"] = json!(engine.as_deref().unwrap_or("dfs"));
        out!("{}", serde_json::to_string_pretty(&v).expect("json"));
    } else {
        for (title, o, r) in &reports {
            print_report(title, &engine, o, r);
        }
        out!("result: {}", if ok { "ok" } else { "violated" });
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// How `--engine timely` runs, as printed.
fn timely_label(a: &CheckArgs, opts: &CheckOptions) -> String {
    let c = &a.cluster;
    format!(
        "timely BFS, {} process(es) x {} worker(s), symmetry {}",
        c.processes,
        c.workers.unwrap_or(opts.threads),
        if opts.symmetry { "on" } else { "off" }
    )
}

fn cmd_simulate(
    seed: u64,
    runs: u64,
    depth: usize,
    json_out: bool,
    b: Bounds,
) -> Result<ExitCode, ExitCode> {
    let cfg = b.apply(ModelConfig {
        pre_vote: ModelConfig::default().pre_vote,
        ..trace::trace_config(ModelConfig {
            start: Start::Fresh,
            ..ModelConfig::default()
        })
    });
    let model = model_or_exit(cfg)?;
    let props = model.properties();
    let mut found = vec![false; props.len()];
    let mut violation: Option<(String, u64, Vec<model::Action>)> = None;
    let mut states = 0u64;
    let started = std::time::Instant::now();
    'runs: for k in 0..runs {
        let mut rng = SplitMix64(seed.wrapping_add(k));
        let path = trace::random_walk(&model, &mut rng, depth);
        let t = trace::replay(&model, &path).map_err(|e| {
            eprintln!("internal error: {e}");
            ExitCode::from(1)
        })?;
        let all_states = std::iter::once(&t.init).chain(t.steps.iter().map(|s| &s.state));
        for (i, s) in all_states.enumerate() {
            states += 1;
            for (p, f) in props.iter().zip(found.iter_mut()) {
                let holds = (p.condition)(&model, s);
                match p.expectation {
                    stateright::Expectation::Always if !holds => {
                        violation =
                            Some((p.name.to_string(), seed.wrapping_add(k), path[..i].to_vec()));
                        break 'runs;
                    }
                    stateright::Expectation::Sometimes if holds => *f = true,
                    _ => {}
                }
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    if json_out {
        let v = json!({
            "result": if violation.is_some() { "violated" } else { "ok" },
            "bounds": cfg, "runs": runs, "depth": depth, "seed": seed, "states": states, "seconds": secs,
            "violation": violation.as_ref().map(|(p, s, a)| json!({"property": p, "seed": s, "actions": a})),
            "examples": props.iter().zip(&found).map(|(p, f)| json!({"name": p.name, "kind": properties::kind_name(&p.expectation), "found": f})).collect::<Vec<_>>(),
        });
        out!("{}", serde_json::to_string_pretty(&v).expect("json"));
    } else {
        out!("bounds: {cfg}");
        out!("runs: {runs}, depth: {depth}, seed: {seed}, states visited: {states}, seconds: {secs:.2}");
        for (p, f) in props.iter().zip(&found) {
            if p.expectation == stateright::Expectation::Sometimes {
                out!(
                    "  sometimes {:<38} {}",
                    p.name,
                    if *f { "example found" } else { "no example" }
                );
            }
        }
        match &violation {
            None => out!("result: no violation (not exhaustive)"),
            Some((p, s, actions)) => {
                out!(
                    "result: {p} VIOLATED in the walk with seed {s} after {} steps",
                    actions.len()
                );
                if let Ok(t) = trace::replay(&model, actions) {
                    let mut steps = vec![(t.init.clone(), None)];
                    for st in t.steps {
                        steps.last_mut().expect("non-empty").1 = Some(st.action);
                        steps.push((st.state, None));
                    }
                    out_part!("{}", story::path(&cfg, &steps));
                }
            }
        }
    }
    Ok(if violation.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[allow(clippy::too_many_arguments)]
fn cmd_traces(
    depth: usize,
    random: Option<u64>,
    seed: u64,
    max_traces: u64,
    refusals: bool,
    out: std::path::PathBuf,
    b: Bounds,
) -> Result<ExitCode, ExitCode> {
    let base = trace::trace_config(ModelConfig {
        start: Start::Fresh,
        ..ModelConfig::default()
    });
    let cfg = b.apply(ModelConfig {
        refusal_steps: refusals,
        ..base
    });
    let model = model_or_exit(cfg)?;
    let file = std::fs::File::create(&out).map_err(|e| {
        eprintln!("error: cannot create {}: {e}", out.display());
        ExitCode::from(2)
    })?;
    let mut w = std::io::BufWriter::new(file);
    let mut written = 0u64;
    let mut io_error = None;
    let mut emit = |actions: &[model::Action]| {
        if io_error.is_some() || written >= max_traces {
            return;
        }
        match trace::replay(&model, actions) {
            Ok(t) => {
                if let Err(e) = writeln!(w, "{}", trace::to_json_line(&t)) {
                    io_error = Some(e.to_string());
                }
                written += 1;
            }
            Err(e) => io_error = Some(format!("internal error: {e}")),
        }
    };
    match random {
        Some(n) => {
            for k in 0..n {
                let mut rng = SplitMix64(seed.wrapping_add(k));
                emit(&trace::random_walk(&model, &mut rng, depth));
            }
        }
        None => trace::for_each_path(&model, depth, &mut emit),
    }
    if let Some(e) = io_error {
        eprintln!("error: {e}");
        return Err(ExitCode::from(1));
    }
    w.flush().map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(1)
    })?;
    out!("bounds: {cfg}");
    out!(
        "wrote {written} traces of at most {depth} actions to {}",
        out.display()
    );
    if written >= max_traces && random.is_none() {
        out!("note: stopped at --max-traces {max_traces}; not every path was written");
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(a) => cmd_check(a),
        Command::Explore {
            port,
            as_check,
            bounds,
        } => {
            let cfg = explore_config(as_check, &bounds);
            match model_or_exit(cfg) {
                Err(c) => Err(c),
                Ok(m) => {
                    let addr = format!("127.0.0.1:{port}");
                    // tiny_http panics on a busy port: probe it first for a clean error.
                    if let Err(e) = std::net::TcpListener::bind(&addr) {
                        eprintln!("error: cannot listen on {addr}: {e}");
                        return ExitCode::from(2);
                    }
                    out!("bounds: {cfg}");
                    out!("Explorer at http://{addr}/ (Ctrl-C to stop)");
                    // Blocks while the web server runs.
                    let _checker = m.checker().serve(addr);
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
        Command::Simulate {
            seed,
            runs,
            depth,
            json,
            bounds,
        } => cmd_simulate(seed, runs, depth, json, bounds),
        Command::Traces {
            depth,
            random,
            seed,
            max_traces,
            refusals,
            out,
            bounds,
        } => {
            let refusals = refusals.unwrap_or(random.is_some());
            cmd_traces(depth, random, seed, max_traces, refusals, out, bounds)
        }
    };
    result.unwrap_or_else(|c| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::config::{Bug, HwRule, NetworkKind};

    /// `check` prints `explore_command(bounds)` beside a counterexample's explorer path; the path
    /// opens only if that command serves the very model the check ran.
    #[test]
    fn the_printed_explore_command_serves_the_checked_model() {
        let mut configs = vec![
            check::default_bounds(),
            check::deep_bounds(),
            check::snapshot_bounds(),
            check::first_election_bounds(),
            ModelConfig {
                network: NetworkKind::LossyDuplicating,
                hw_rule: HwRule::Committed,
                check_quorum: false,
                pre_vote: false,
                ..check::default_bounds()
            },
        ];
        for bug in Bug::ALL {
            for fetch in [FetchMode::Sync, FetchMode::Async] {
                configs.push(check::bug_bounds(bug, fetch));
            }
        }
        for cfg in configs {
            let cmd = explore_command(&cfg);
            let cli = Cli::try_parse_from(cmd.split_whitespace())
                .unwrap_or_else(|e| panic!("{cmd}: {e}"));
            let Command::Explore {
                as_check, bounds, ..
            } = cli.command
            else {
                panic!("{cmd}: not an explore command");
            };
            assert_eq!(explore_config(as_check, &bounds), cfg, "{cmd}");
        }
    }
}
