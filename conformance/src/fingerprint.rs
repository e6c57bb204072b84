//! Fixed-seed hashing shared by the graph search, the kit and the wire digests.

use std::hash::{BuildHasher, Hash, Hasher};

use model::types::State;

/// A fast hasher with fixed seeds (the same fingerprints for the whole run; not a security boundary).
pub fn hasher() -> ahash::AHasher {
    ahash::RandomState::with_seeds(0x6b72, 0x6166, 0x7431, 0x3135).build_hasher()
}

/// The model's fingerprint of a state (its `Hash`, as stateright fingerprints it, with a fixed-seed
/// hasher).
pub fn model_fingerprint(s: &State) -> u64 {
    let mut h = hasher();
    s.hash(&mut h);
    h.finish()
}
