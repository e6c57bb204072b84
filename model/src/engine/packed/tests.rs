use super::*;
use crate::check::{
    auto_join_bounds, default_bounds, disk_loss_bounds, snapshot_bounds, upgrade_bounds,
};
use crate::config::{FetchMode, ModelConfig};
use crate::step::KraftModel;
use crate::trace::{random_walk, replay, SplitMix64};

/// Configurations whose runs reach every kind of field: snapshots and log starts, directory ids,
/// fetch requests and responses in flight (async fetch), pre-votes and crashes (the default),
/// acknowledgements at append (auto-join), volatile voter sets and voters without a directory id (the
/// kraft.version upgrade).
fn configs() -> Vec<ModelConfig> {
    let async_fetch = ModelConfig {
        fetch: FetchMode::Async,
        ..default_bounds()
    };
    vec![
        default_bounds(),
        snapshot_bounds(),
        disk_loss_bounds(),
        async_fetch,
        auto_join_bounds(),
        upgrade_bounds(),
    ]
}

/// Through [`encode`] and [`decode`], and through [`Packed`] in timely's own encoding (bincode's
/// defaults): both must give `t` back.
fn round_trip<T: Plain + Clone + PartialEq + std::fmt::Debug>(t: &T) -> T {
    let back: T = decode(&encode(t).0).expect("decodes");
    let timely = bincode::serialize(&Packed(t.clone())).expect("encodes");
    let packed: Packed<T> = bincode::deserialize(&timely).expect("decodes");
    assert_eq!(packed.0, back);
    back
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Every state and action of a random run comes back equal from its plain form, in fewer bytes
    /// than its named MessagePack form.
    #[test]
    fn reachable_states_and_actions_round_trip(cfg in 0usize..6, seed: u64, depth in 1usize..80) {
        let model = KraftModel::new(configs()[cfg]).expect("valid");
        let path = random_walk(&model, &mut SplitMix64(seed), depth);
        let trace = replay(&model, &path).expect("replays");
        for s in std::iter::once(&trace.init).chain(trace.steps.iter().map(|s| &s.state)) {
            proptest::prop_assert_eq!(&round_trip(s), s);
            let named = rmp_serde::to_vec_named(s).expect("encodes");
            proptest::prop_assert!(encode(s).0.len() * 3 < named.len());
        }
        proptest::prop_assert_eq!(&round_trip(&path), &path);
    }

    /// Cut or corrupted bytes give an error (or another valid state), never a panic.
    #[test]
    fn damaged_bytes_are_an_error(seed: u64, cut in 0usize..400, flip in 0usize..400) {
        let model = KraftModel::new(default_bounds()).expect("valid");
        let path = random_walk(&model, &mut SplitMix64(seed), 40);
        let trace = replay(&model, &path).expect("replays");
        let s = trace.steps.last().map_or(&trace.init, |s| &s.state);
        let bytes = encode(s).0;
        proptest::prop_assert!(decode::<State>(&bytes[..cut.min(bytes.len() - 1)]).is_err());
        let mut flipped = bytes.to_vec();
        let at = flip % flipped.len();
        flipped[at] ^= 0xFF;
        let _ = decode::<State>(&flipped);
    }
}

/// A log longer than its bound is refused, not truncated.
#[test]
fn an_overlong_log_is_an_error() {
    let entries = (0..=MAX_LOG).map(|_| Entry::default().into()).collect();
    let err = Log::try_from(LogForm(None, entries)).expect_err("too long");
    assert!(err.contains("beyond"), "{err}");
}
