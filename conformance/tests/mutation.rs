//! Mutation check: each seeded fault of `kraft` (feature `faults`, a dev-dependency feature of
//! these tests) must make conformance fail, naming the field or property that differs.

use std::sync::Arc;

use conformance::harness::NodeHook;
use conformance::replay::{self, DivergenceKind, Options, TraceSpec};
use conformance::{report, sources, wire};
use kraft::node::Faults;
use model::types::{Action, ChangeOp};

fn checker() -> wire::WireChecker {
    wire::WireChecker::load(&wire::default_messages_dir()).expect("specs/messages loads")
}

fn trace(label: &str, actions: Vec<Action>) -> TraceSpec {
    TraceSpec {
        label: label.to_string(),
        reproduce: String::new(),
        config: sources::exhaustive_config(),
        actions,
        recorded: None,
    }
}

fn hook(faults: Faults) -> Option<NodeHook> {
    Some(Arc::new(move |n: &mut kraft::node::Node| {
        n.set_faults(faults)
    }))
}

/// Leader 0 adds the caught-up joiner 3, then removes itself once that commits.
fn scenarios() -> Vec<TraceSpec> {
    let add = Action::Change {
        server: 0,
        op: ChangeOp::Add(3),
    };
    let remove_self = Action::Change {
        server: 0,
        op: ChangeOp::Remove(0),
    };
    let remove_1 = Action::Change {
        server: 0,
        op: ChangeOp::Remove(1),
    };
    let fetch = |r| Action::Fetch {
        replica: r,
        leader: 0,
    };
    vec![
        trace(
            "add then a second change while pending",
            vec![add, remove_1],
        ),
        trace(
            "leader removes itself",
            vec![remove_self, fetch(1), fetch(1)],
        ),
    ]
}

/// Replays every scenario with `faults` on; returns the headlines of the divergences.
fn run(faults: Faults) -> Vec<String> {
    let mut w = checker();
    let opts = Options {
        seed: 1,
        hook: hook(faults),
    };
    scenarios()
        .iter()
        .filter_map(|t| replay::replay(t, &mut w, &opts).err())
        .map(|d| {
            let h = report::headline(&d);
            // A fault must show as a protocol difference, never as an input the harness could not map.
            assert!(!matches!(d.kind, DivergenceKind::ModelRefused), "{h}");
            h
        })
        .collect()
}

#[test]
fn scenarios_conform_without_faults() {
    assert!(
        run(Faults::default()).is_empty(),
        "{:?}",
        run(Faults::default())
    );
}

#[test]
fn committed_set_from_latest_record_is_caught() {
    let found = run(Faults {
        committed_from_latest: true,
        ..Faults::default()
    });
    assert!(
        found
            .iter()
            .any(|h| h.contains("committed_voters") || h.contains("CommittedVoters")),
        "{found:?}"
    );
}

#[test]
fn change_accepted_while_pending_is_caught() {
    let found = run(Faults {
        accept_change_while_pending: true,
        ..Faults::default()
    });
    assert!(
        found
            .iter()
            .any(|h| h.contains("replies differ") || h.contains("log")),
        "{found:?}"
    );
}

#[test]
fn hw_counting_a_removed_leader_is_caught() {
    let found = run(Faults {
        hw_counts_removed_leader: true,
        ..Faults::default()
    });
    assert!(
        found
            .iter()
            .any(|h| h.contains("hw") || h.contains("HighWatermark")),
        "{found:?}"
    );
}
