//! The protocol model holds at small bounds (both fetch granularities), the first election is covered
//! from a fresh start, and the negative controls behave as documented.

use model::check::{self, CheckOptions, Status, Strategy};
use model::{FetchMode, HwRule, KraftModel, ModelConfig, Start};

fn dfs() -> CheckOptions {
    CheckOptions {
        strategy: Strategy::Dfs,
        threads: 2,
        symmetry: true,
        ..CheckOptions::default()
    }
}

fn violated(cfg: ModelConfig) -> (bool, Vec<String>) {
    let r = check::run(KraftModel::new(cfg).unwrap(), dfs());
    (
        r.exhaustive,
        r.violated().into_iter().map(String::from).collect(),
    )
}

/// The bound shared by sync and async fetch (async is ~20x larger per bound).
fn shared_small(fetch: FetchMode) -> ModelConfig {
    ModelConfig {
        joiners: 0,
        max_log: 4,
        max_changes: 1,
        max_crashes: 0,
        max_in_flight: 4,
        check_quorum: true,
        fetch,
        ..ModelConfig::default()
    }
}

#[test]
fn sync_and_async_hold_at_a_shared_small_bound() {
    for fetch in [FetchMode::Sync, FetchMode::Async] {
        let (exhaustive, bad) = violated(shared_small(fetch));
        assert!(exhaustive, "{fetch:?}");
        assert!(bad.is_empty(), "{fetch:?}: {bad:?}");
    }
}

#[test]
fn protocol_holds_with_a_joiner_and_reaches_every_example() {
    // Joiner, one change, pre-vote and check-quorum: every `always` holds and every example is
    // reached (the default `check` covers more; this bound keeps `cargo test` short).
    let cfg = ModelConfig {
        max_log: 5,
        max_changes: 1,
        max_crashes: 0,
        max_in_flight: 4,
        ..ModelConfig::default()
    };
    let r = check::run(KraftModel::new(cfg).unwrap(), dfs());
    assert!(r.exhaustive);
    assert!(r.violated().is_empty(), "{:?}", r.violated());
    for p in &r.properties {
        if p.kind == "sometimes" {
            assert_eq!(p.status, Status::ExampleFound, "{}", p.name);
        }
    }
    assert!(r.ok());
}

#[test]
fn first_election_from_a_fresh_cluster_holds() {
    // One election from a fresh cluster, with and without pre-vote (`check` runs two epochs).
    for pre_vote in [true, false] {
        let cfg = ModelConfig {
            max_epoch: 1,
            max_in_flight: 4,
            pre_vote,
            ..check::first_election_bounds()
        };
        let r = check::run(KraftModel::new(cfg).unwrap(), dfs());
        assert!(
            r.exhaustive && r.violated().is_empty(),
            "{:?}",
            r.properties
        );
        for name in ["LeaderElected", "PreVoteWon"] {
            let found = r.properties.iter().find(|p| p.name == name);
            assert!(
                found.is_none_or(|p| p.status == Status::ExampleFound),
                "{name} (pre-vote {pre_vote})"
            );
        }
    }
}

/// The negative control: HW over the committed set only. The HW rule does not depend on the
/// election: Kafka 3.9's, without check-quorum, keeps it short.
fn committed_hw_rule() -> ModelConfig {
    ModelConfig {
        hw_rule: HwRule::Committed,
        max_log: 4,
        max_changes: 1,
        max_crashes: 1,
        pre_vote: false,
        check_quorum: false,
        ..ModelConfig::default()
    }
}

#[test]
fn proof_search_agrees_with_stateright() {
    // `check::run`'s own DFS (`model::dfs`) and Stateright's DFS reach the same representatives and
    // the same verdicts, on the protocol and on a negative control whose proof fails (whose
    // counterexample then comes from Stateright).
    for cfg in [shared_small(FetchMode::Sync), committed_hw_rule()] {
        let ours = check::run(KraftModel::new(cfg).unwrap(), dfs());
        let theirs = check::run_stateright(KraftModel::new(cfg).unwrap(), dfs());
        assert!(ours.exhaustive && theirs.exhaustive);
        assert_eq!(ours.unique_states, theirs.unique_states, "{cfg}");
        assert_eq!(ours.states, theirs.states, "{cfg}");
        assert_eq!(ours.properties, theirs.properties, "{cfg}");
        assert_eq!(
            ours.counterexample.is_some(),
            !ours.violated().is_empty(),
            "{cfg}"
        );
    }
}

#[test]
fn negative_controls() {
    // KRaft's rule (latest set only) is the default and holds above. The committed-set-only rule
    // loses no data and never rolls a voter set back; it only trips HighWatermarkMajority, whose
    // either/or form (latest set or set at HW − 1) describes the latest-set rule: committing an
    // AddVoter record with the old set's majority leaves the new set without a majority at HW − 1.
    let (exhaustive, bad) = violated(committed_hw_rule());
    assert!(exhaustive);
    assert_eq!(bad, vec!["HighWatermarkMajority".to_string()]);
}

#[test]
fn elected_start_is_reachable_from_the_fresh_start() {
    let m = KraftModel::new(ModelConfig::default()).unwrap();
    // Without gc: the prefix delivers every message, stale ones included.
    let fresh = KraftModel::new(ModelConfig {
        start: Start::Fresh,
        gc: false,
        ..ModelConfig::default()
    })
    .unwrap();
    let mut s = fresh.initial_state();
    for a in m.election_prefix() {
        s = fresh
            .step(&s, a)
            .expect("every prefix action is enabled")
            .state;
    }
    assert_eq!(s, m.initial_state());
}
