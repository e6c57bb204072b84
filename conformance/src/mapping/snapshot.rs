//! Snapshot settings of the replayed nodes (`TakeSnapshot`, `AdvanceLogStart`, `FetchSnapshot`).

use kraft::node::SnapshotConfig;

use super::NEVER;

/// Own snapshots on, every trigger off: a node takes a snapshot only when the model's `TakeSnapshot`
/// asks (`Harness::take_snapshot_now`), and moves its log start only when `AdvanceLogStart` asks
/// (`Harness::clean_now`, with a retention limit of 0 bytes, so the start moves up to the latest snapshot).
/// A FetchSnapshot answer carries at most [`SNAPSHOT_CHUNK_BYTES`]: every download takes several chunks.
pub fn snapshot_config() -> SnapshotConfig {
    SnapshotConfig {
        enabled: true,
        max_record_bytes_between_snapshots: u64::MAX,
        max_snapshot_interval_ms: 0,
        max_retention_bytes: 0,
        max_retention_ms: -1,
        clean_interval_ms: NEVER,
        fetch_snapshot_max_bytes: SNAPSHOT_CHUNK_BYTES,
    }
}

/// The replayed nodes' FetchSnapshot `MaxBytes`: below half the smallest snapshot file the replay writes
/// (its control records alone), so a download takes at least two chunks.
pub const SNAPSHOT_CHUNK_BYTES: i32 = 64;
