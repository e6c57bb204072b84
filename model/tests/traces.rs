//! Traces: enumeration, seeded walks, JSON Lines round trip, verification.

use model::trace::{self, SplitMix64, TraceError};
use model::{Action, KraftModel, ModelConfig, Start};
use stateright::Model;

fn model() -> KraftModel {
    KraftModel::new(trace::trace_config(ModelConfig {
        start: Start::Fresh,
        ..ModelConfig::default()
    }))
    .unwrap()
}

#[test]
fn every_path_of_depth_three_replays_and_round_trips() {
    // As `traces` does in every-path mode: refusals off, or they dominate the enumeration.
    let cfg = ModelConfig {
        refusal_steps: false,
        ..model().cfg
    };
    let m = KraftModel::new(cfg).unwrap();
    let paths = trace::all_paths(&m, 3);
    assert!(paths.len() > 10, "{} paths", paths.len());
    for p in &paths {
        let t = trace::replay(&m, p).unwrap();
        let line = trace::to_json_line(&t);
        assert!(!line.contains('\n'));
        let back = trace::from_json_line(&line).unwrap();
        assert_eq!(back, t);
        trace::verify(&back).unwrap();
    }
}

#[test]
fn random_walks_are_seeded_and_safe() {
    let m = model();
    let props = m.properties();
    for seed in 0..40u64 {
        let a = trace::random_walk(&m, &mut SplitMix64(seed), 40);
        let b = trace::random_walk(&m, &mut SplitMix64(seed), 40);
        assert_eq!(a, b);
        let t = trace::replay(&m, &a).unwrap();
        for s in std::iter::once(&t.init).chain(t.steps.iter().map(|s| &s.state)) {
            for p in props
                .iter()
                .filter(|p| p.expectation == stateright::Expectation::Always)
            {
                assert!((p.condition)(&m, s), "{} violated on seed {seed}", p.name);
            }
        }
    }
}

#[test]
fn verify_rejects_tampered_traces() {
    let m = model();
    let t = trace::replay(&m, &[Action::ElectionTimeout(0)]).unwrap();
    let mut bad = t.clone();
    bad.steps[0].state.servers[0].epoch = 7;
    assert_eq!(
        trace::verify(&bad),
        Err(TraceError::StateMismatch { index: 0 })
    );
    let not_enabled = trace::replay(&m, &[Action::ClientAppend(0)]);
    assert!(matches!(
        not_enabled,
        Err(TraceError::NotEnabled { index: 0, .. })
    ));
    assert!(matches!(
        trace::from_json_line("{"),
        Err(TraceError::Format(_))
    ));
}

#[test]
fn refusals_are_steps_with_kafka_error_codes_in_traces() {
    let m = model();
    let t = trace::replay(
        &m,
        &[Action::Change {
            server: 1,
            op: model::ChangeOp::Add(3),
        }],
    )
    .unwrap();
    assert_eq!(
        t.steps[0].replies[0].error,
        model::types::ErrorCode::NotLeaderOrFollower
    );
    assert_eq!(t.steps[0].state, t.init);
}
