//! Fixed-seed hashing shared by the graph search, the kit and the wire digests, and the graph search's
//! implementation fingerprints (what tells two implementation states of one model state apart: see
//! `graph`).

use std::hash::{BuildHasher, Hash, Hasher};

use kraft::node::{EntryKind, NodeView, ALL_TIMERS};
use model::types::{Id, State};

use crate::harness::Cluster;

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

/// The implementation fingerprint of one node (see the module doc for what it leaves out).
pub fn node_fingerprint(v: &NodeView) -> u64 {
    let mut h = hasher();
    (v.role, v.epoch, v.leader_id, v.voted).hash(&mut h);
    for e in &v.log {
        (e.offset, e.epoch).hash(&mut h);
        match &e.kind {
            EntryKind::Data => 0u8.hash(&mut h),
            EntryKind::LeaderChange => 1u8.hash(&mut h),
            EntryKind::KRaftVersion(k) => (2u8, k).hash(&mut h),
            EntryKind::Voters(s) => (3u8, s).hash(&mut h),
        }
    }
    (
        v.log_end_offset,
        v.last_epoch,
        v.high_watermark,
        v.kraft_version,
    )
        .hash(&mut h);
    (
        &v.latest_voters,
        v.latest_voters_offset,
        &v.committed_voters,
    )
        .hash(&mut h);
    v.is_voter.hash(&mut h);
    v.pending_change
        .as_ref()
        .map(|p| (p.kind, p.key, p.offset))
        .hash(&mut h);
    for t in ALL_TIMERS {
        v.timers.get(t).is_some().hash(&mut h);
    }
    v.outstanding_fetch
        .map(|f| (f.to, f.epoch, f.fetch_offset, f.last_fetched_epoch))
        .hash(&mut h);
    for r in &v.replicas {
        (r.key, r.is_voter, r.end_offset, r.caught_up).hash(&mut h);
    }
    h.finish()
}

/// The implementation fingerprint of a cluster from its nodes' fingerprints.
pub fn cluster_fingerprint(c: &Cluster, nodes: &[u64]) -> u64 {
    let mut h = hasher();
    nodes.hash(&mut h);
    for i in 0..nodes.len() {
        let p = c.persisted(i as Id);
        (p.epoch, p.voted, p.leader_id).hash(&mut h);
    }
    // The network is a multiset: combine the messages order-independently.
    let mut net = 0u64;
    for m in &c.network {
        let mut e = hasher();
        (m.envelope, m.digest).hash(&mut e);
        net = net.wrapping_add(e.finish());
    }
    net.hash(&mut h);
    h.finish()
}
