//! The graph replay visits exactly the states stateright visits (no symmetry reduction), replays every
//! transition without divergence on the correct implementation, and diverges on a seeded fault.

use std::sync::Arc;

use conformance::graph::{self, GraphOptions};
use conformance::{report, sources, wire};
use model::{KraftModel, ModelConfig, Start};
use stateright::{Checker, Model};

fn checker() -> wire::WireChecker {
    wire::WireChecker::load(&wire::default_messages_dir()).expect("specs/messages loads")
}

/// Unique states of a stateright BFS (no symmetry), the reference count of the graph.
fn stateright_states(cfg: ModelConfig) -> usize {
    let model = KraftModel::new(cfg).unwrap();
    model
        .checker()
        .threads(1)
        .spawn_bfs()
        .join()
        .unique_state_count()
}

/// Small bounds that still hold an election, a change, refusals, a crash, snapshots and installs.
fn small() -> Vec<ModelConfig> {
    let fresh = ModelConfig {
        max_epoch: 1,
        max_log: 3,
        max_in_flight: 2,
        ..sources::graph_config("first-election").unwrap()
    };
    let membership = ModelConfig {
        max_in_flight: 1,
        max_log: 4,
        max_crashes: 1,
        ..sources::graph_config("membership").unwrap()
    };
    let snapshots = ModelConfig {
        max_in_flight: 1,
        max_crashes: 1,
        ..sources::graph_config("snapshots").unwrap()
    };
    vec![fresh, membership, snapshots]
}

#[test]
fn graph_replay_covers_stateright_states_without_divergence() {
    let w = checker();
    for cfg in small() {
        for g in replay_on_1_and_2_threads(cfg, &w) {
            assert!(g.transitions > g.states, "{cfg}: {g:?}");
            assert!(g.encodings > 0);
        }
    }
}

/// The graph at `cfg` replayed on 1 and 2 threads: complete, no divergence, and exactly the states
/// stateright visits.
fn replay_on_1_and_2_threads(cfg: ModelConfig, w: &wire::WireChecker) -> Vec<graph::GraphOutcome> {
    let mut runs = Vec::new();
    for threads in [1, 2] {
        let mut opts = GraphOptions::new(cfg);
        opts.threads = threads;
        let g = graph::run(&opts, w).unwrap();
        if let Some(d) = g.divergences.first() {
            panic!("{}", report::render(d));
        }
        assert!(g.complete);
        assert_eq!(g.states as usize, stateright_states(cfg), "{cfg}");
        runs.push(g);
    }
    runs
}

#[test]
fn snapshots_download_in_chunks_and_restart_mid_download() {
    let w = checker();
    let cfg = small()[2];
    let g = graph::run(&GraphOptions::new(cfg), &w).unwrap();
    assert!(g.complete && g.divergences.is_empty());
    let d = g.downloads;
    assert!(d.installs > 0 && d.min_chunks >= 2, "{d:?}");
    assert!(d.part_restarts > 0, "{d:?}");
}

/// The `auto-join` graph at epoch 1: the replaced replica's auto-join (stale-key removal, the add
/// acknowledged at append, refusals) replayed with the states stateright visits, on 1 and 2 threads.
#[test]
fn auto_join_graph_covers_stateright_states_without_divergence() {
    let w = checker();
    let cfg = ModelConfig {
        max_epoch: 1,
        ..sources::graph_config("auto-join").unwrap()
    };
    replay_on_1_and_2_threads(cfg, &w);
    // The bounds reach an auto-join add acknowledged at append and then committed.
    let c = KraftModel::new(cfg).unwrap().checker().spawn_bfs().join();
    assert!(c.discovery("AutoJoinCommitted").is_some(), "{cfg}");
}

#[test]
fn more_variants_expand_more_without_divergence() {
    let w = checker();
    let cfg = small()[1];
    let one = graph::run(&GraphOptions::new(cfg), &w).unwrap();
    let mut opts = GraphOptions::new(cfg);
    opts.variants = 4;
    let four = graph::run(&opts, &w).unwrap();
    assert!(four.divergences.is_empty());
    assert_eq!(one.states, four.states);
    assert!(four.expanded >= one.expanded);
    // Every state reached with a second implementation fingerprint is expanded with it.
    assert!(four.expanded >= one.states + one.multi.min(1));
}

#[test]
fn a_seeded_fault_diverges_in_the_graph() {
    let w = checker();
    let cfg = ModelConfig {
        start: Start::Elected,
        ..small()[1]
    };
    let mut opts = GraphOptions::new(cfg);
    opts.hook = Some(Arc::new(|n: &mut kraft::node::Node| {
        n.set_faults(kraft::node::Faults {
            committed_from_latest: true,
            ..Default::default()
        })
    }));
    opts.max_divergences = 1;
    let g = graph::run(&opts, &w).unwrap();
    assert!(!g.complete);
    let d = g.divergences.first().expect("the fault is seen");
    assert!(
        report::headline(d).contains("committed_voters"),
        "{}",
        report::render(d)
    );
}

/// Sizes of the gate's graphs as stateright counts them (`cargo test -p conformance --test graph --
/// --ignored --nocapture`).
#[test]
#[ignore]
fn print_gate_graph_sizes() {
    for name in sources::GRAPH_BOUNDS {
        let cfg = sources::graph_config(name).unwrap();
        let model = KraftModel::new(cfg).unwrap();
        let started = std::time::Instant::now();
        let c = model.clone().checker().threads(2).spawn_bfs().join();
        println!(
            "{name}: {} unique states, {} generated, {:.1} s; init actions {}",
            c.unique_state_count(),
            c.state_count(),
            started.elapsed().as_secs_f64(),
            {
                let mut a = Vec::new();
                model.actions(&model.initial_state(), &mut a);
                a.len()
            }
        );
    }
}
