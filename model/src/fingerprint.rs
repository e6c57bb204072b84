//! State fingerprints: the keys of the search's visited set (`dfs`), computed by `symmetry`.

use crate::types::State;

/// The hasher of fingerprints: ahash with fixed seeds (as Stateright's own).
pub fn hasher() -> ahash::RandomState {
    ahash::RandomState::with_seeds(11, 22, 33, 44)
}

/// A state's fingerprint.
pub fn fingerprint(s: &State) -> u64 {
    hasher().hash_one(s)
}
