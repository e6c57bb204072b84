//! Trace sources: (a) every path of the model up to a depth, (b) seeded random walks at
//! larger bounds, (c) JSON Lines trace files written by `cargo run -p model -- traces`, (d) the
//! counterexamples of the model's bug variants.

use std::path::{Path, PathBuf};

use model::check;
use model::trace::{self, SplitMix64};
use model::{Bug, FetchMode, KraftModel, ModelConfig, NetworkKind, Start};

use crate::replay::TraceSpec;

/// Bounds of the exhaustive source: `ModelConfig::default()` (one change, no crash; `check` adds a
/// second change and a crash), with refusals as visible steps and stale messages kept
/// (`trace::trace_config`), so a replay exercises both.
pub fn exhaustive_config() -> ModelConfig {
    trace::trace_config(ModelConfig::default())
}

/// The graph replay's bounds by name: the model's first-election bounds (`check::first_election_bounds`:
/// a fresh cluster) at 3 messages in flight instead of the model check's 4, and a membership bound
/// (elected start, a joiner, one change, 2 messages in flight, refusals as steps). Both keep stale
/// messages (`gc` off: the implementation does not drop them), check-quorum on, and the
/// implementation's election (`IMPL_PRE_VOTE`: pre-vote). With pre-vote, 4 in flight
/// makes the first-election graph too large for the CI budget (conformance/README.md has the sizes);
/// `--in-flight` replays larger graphs.
pub fn graph_config(name: &str) -> Option<ModelConfig> {
    let cfg = match name {
        "first-election" => ModelConfig {
            gc: false,
            refusal_steps: false,
            pre_vote: model::config::IMPL_PRE_VOTE,
            max_in_flight: 3,
            ..check::first_election_bounds()
        },
        "membership" => ModelConfig {
            voters: 3,
            joiners: 1,
            max_epoch: 2,
            max_log: 5,
            max_data: 0,
            max_changes: 1,
            max_crashes: 0,
            max_in_flight: 2,
            ..trace::trace_config(ModelConfig::default())
        },
        "snapshots" => ModelConfig {
            voters: 3,
            joiners: 0,
            max_epoch: 2,
            max_log: 4,
            max_data: 0,
            max_changes: 1,
            max_crashes: 0,
            max_snapshots: 1,
            max_in_flight: 2,
            fetch: FetchMode::Sync,
            ..trace::trace_config(ModelConfig::default())
        },
        // The snapshot bounds with a crash instead of a change, and a client append so that a
        // follower falls behind the log start: downloads cut short by a restart, their
        // `.checkpoint.part` on disk.
        "snapshot-crash" => ModelConfig {
            max_data: 1,
            max_changes: 0,
            max_crashes: 1,
            ..graph_config("snapshots")?
        },
        // The membership bounds without the joiner, UpdateRaftVoter beside AddVoter/RemoveVoter: an
        // update, then a change held back by it; refusals as steps.
        "updates" => ModelConfig {
            joiners: 0,
            updates: true,
            ..graph_config("membership")?
        },
        // A voter loses its disk (a fresh data directory under a new directory id) and the two
        // changes that bring it back under its new key (remove the stale key, add the new one):
        // INVALID_VOTER_KEY answers, the replaced replica's fetches kept apart from the voter's.
        // One message in flight (a (pre-)vote to the replaced replica is still delivered and
        // compared; 2 in flight is 394,004 model states, beyond the CI budget).
        "disk-loss" => ModelConfig {
            joiners: 0,
            max_changes: 2,
            max_disk_losses: 1,
            max_in_flight: 1,
            fetch: FetchMode::Sync,
            ..graph_config("membership")?
        },
        // The `kraft.version` 0 -> 1 upgrade: static voters (`controller.quorum.voters`), their
        // UpdateRaftVoter reports into the leader's volatile set, the operator's UpdateFeatures (its
        // refusals, the one batch, the answer at commit) and the add/remove refusals around it.
        // No change, crash or disk loss; two messages in flight, sync fetch.
        "upgrade" => ModelConfig {
            start: Start::Static,
            joiners: 0,
            max_log: 5,
            max_changes: 0,
            max_in_flight: 2,
            fetch: FetchMode::Sync,
            ..graph_config("membership")?
        },
        // KIP-1186 auto-join on the `disk-loss` bounds: the replaced replica removes its stale key and
        // adds itself (acknowledged at append), beside operator changes; refusals as steps.
        "auto-join" => ModelConfig {
            auto_join: true,
            ..graph_config("disk-loss")?
        },
        // The model check's bounds (`cargo run -p model -- check`, and `--preset snapshots`) as graphs:
        // stale messages kept, refusals as steps, no symmetry, like the gate's. Far larger than the
        // gate's (conformance/README.md, "Beyond one machine"); not in its default.
        "model-default" => trace::trace_config(check::default_bounds()),
        "model-snapshots" => trace::trace_config(check::snapshot_bounds()),
        _ => return None,
    };
    Some(cfg)
}

/// The bounds of a named graph in a few words, for the summary line.
pub fn graph_label(name: &str, cfg: &ModelConfig) -> String {
    let mut snapshots = if cfg.max_snapshots > 0 {
        format!(" max_snapshots={}", cfg.max_snapshots)
    } else {
        String::new()
    };
    if cfg.updates {
        snapshots += " updates=true";
    }
    if cfg.max_data > 0 {
        snapshots += &format!(" max_data={}", cfg.max_data);
    }
    if cfg.max_crashes > 0 {
        snapshots += &format!(" max_crashes={}", cfg.max_crashes);
    }
    if cfg.max_disk_losses > 0 {
        snapshots += &format!(" max_disk_losses={}", cfg.max_disk_losses);
    }
    if cfg.start == Start::Static {
        snapshots += " start=static";
    }
    if cfg.auto_join {
        snapshots += " auto_join=true";
    }
    format!(
        "{name}[max_in_flight={} max_epoch={} max_log={} max_changes={}{snapshots} pre_vote={}]",
        cfg.max_in_flight, cfg.max_epoch, cfg.max_log, cfg.max_changes, cfg.pre_vote
    )
}

/// Named graphs too large for the gate (the model check's bounds), also accepted by [`graph_config`].
pub const LARGE_GRAPH_BOUNDS: [&str; 2] = ["model-default", "model-snapshots"];

/// The gate's named graphs, accepted by [`graph_config`].
pub const GRAPH_BOUNDS: [&str; 8] = [
    "first-election",
    "membership",
    "snapshots",
    "snapshot-crash",
    "updates",
    "disk-loss",
    "upgrade",
    "auto-join",
];

/// (a) Every maximal path of at most `depth` actions after the initial state.
pub fn exhaustive(cfg: ModelConfig, depth: usize) -> Result<Vec<TraceSpec>, String> {
    let model = KraftModel::new(cfg).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    trace::for_each_path(&model, depth, &mut |p| {
        let k = out.len();
        out.push(TraceSpec {
            label: format!("exhaustive depth {depth} #{k}"),
            reproduce: format!(
                "cargo run -p conformance -- --only exhaustive --depth {depth} --index {k}"
            ),
            config: cfg,
            actions: p.to_vec(),
            recorded: None,
        });
    });
    Ok(out)
}

/// The configurations random walks cycle through (walk seed modulo their count): larger than the
/// exhaustive bounds, both fetch modes, every network kind, both starts.
pub fn walk_configs() -> Vec<ModelConfig> {
    let big = ModelConfig {
        voters: 3,
        joiners: 2,
        max_epoch: 6,
        max_log: 10,
        max_data: 3,
        max_changes: 4,
        max_crashes: 2,
        max_in_flight: 10,
        ..ModelConfig::default()
    };
    [
        big,
        ModelConfig {
            fetch: FetchMode::Async,
            network: NetworkKind::LossyDuplicating,
            ..big
        },
        ModelConfig {
            start: Start::Fresh,
            fetch: FetchMode::Async,
            network: NetworkKind::Lossy,
            ..big
        },
        ModelConfig {
            voters: 4,
            joiners: 2,
            network: NetworkKind::Duplicating,
            ..big
        },
    ]
    .into_iter()
    .map(trace::trace_config)
    .collect()
}

/// (b) `n` random walks of at most `depth` actions; walk k uses seed `seed + k`.
pub fn random_walks(n: u64, depth: usize, seed: u64) -> Result<Vec<TraceSpec>, String> {
    let configs = walk_configs();
    let mut out = Vec::new();
    for k in 0..n {
        let s = seed.wrapping_add(k);
        let cfg = configs[(s % configs.len() as u64) as usize];
        let model = KraftModel::new(cfg).map_err(|e| e.to_string())?;
        let actions = trace::random_walk(&model, &mut SplitMix64(s), depth);
        out.push(TraceSpec {
            label: format!("random seed {s}"),
            reproduce: format!("cargo run -p conformance -- --only random --seed {s} --walks 1 --walk-depth {depth}"),
            config: cfg,
            actions,
            recorded: None,
        });
    }
    Ok(out)
}

/// The `.jsonl` files of `path` (itself if it is a file), sorted.
pub fn trace_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl" || x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// (c) Every trace of a JSON Lines file. The recorded initial state must be the model's, and the
/// recorded states after each action are checked during the replay.
pub fn read_trace_file(path: &Path) -> Result<Vec<TraceSpec>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let t = trace::from_json_line(line)
            .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        let model =
            KraftModel::new(t.config).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        if model.initial_state() != t.init {
            return Err(format!(
                "{}:{}: the initial state is not the model's",
                path.display(),
                n + 1
            ));
        }
        let k = out.len();
        out.push(TraceSpec {
            label: format!("{} line {}", path.display(), n + 1),
            reproduce: format!(
                "cargo run -p conformance -- --only files --traces {} --index {k}",
                path.display()
            ),
            config: t.config,
            actions: t.steps.iter().map(|s| s.action).collect(),
            recorded: Some(t.steps.into_iter().map(|s| s.state).collect()),
        });
    }
    Ok(out)
}

/// (d) The shortest counterexample of each bug variant (sync fetch) in the implementation's election
/// (`check::impl_bug_bounds`), as a trace with the bug on.
pub fn bug_traces() -> Vec<(Bug, Result<TraceSpec, String>)> {
    Bug::ALL
        .iter()
        .filter(|b| b.impl_comparable())
        .map(|&bug| {
            let t = match check::impl_bug_counterexample(bug, FetchMode::Sync) {
                Some(c) => Ok(TraceSpec {
                    label: format!("bug {} ({})", bug.name(), c.property),
                    reproduce: format!(
                        "cargo run -p conformance -- --only bugs --bug {}",
                        bug.name()
                    ),
                    config: check::impl_bug_bounds(bug, FetchMode::Sync).expect("impl-comparable"),
                    actions: c.actions,
                    recorded: None,
                }),
                None => Err(format!(
                    "the model found no counterexample for bug {}",
                    bug.name()
                )),
            };
            (bug, t)
        })
        .collect()
}
