//! The core's time: milliseconds on the shell's monotonic clock, and the shell's wall clock (a leaf: every
//! module may use it).

/// Milliseconds on the shell's monotonic clock. The core never reads a clock itself.
pub type Millis = u64;

/// Milliseconds since the Unix epoch on the shell's wall clock (Kafka's `Time.milliseconds()`): the
/// CreateTime of the batches a leader appends and the age of a snapshot for `metadata.max.retention.ms`.
/// The core never reads a clock itself; the shell tells it with `Node::set_wall_clock`.
pub type WallMillis = i64;

/// The wall clock a deterministic harness (the simulator, the conformance replay) gives its nodes at
/// monotonic time 0: 2026-01-01T00:00:00Z, so that a replayed log's timestamps read as real dates.
pub const VIRTUAL_WALL_CLOCK_START: WallMillis = 1_767_225_600_000;

/// A deterministic harness's wall clock at its monotonic time `now`.
pub fn virtual_wall_clock(now: Millis) -> WallMillis {
    VIRTUAL_WALL_CLOCK_START.saturating_add(i64::try_from(now).unwrap_or(i64::MAX))
}
