//! The core's time: milliseconds on the shell's monotonic clock (a leaf: every module may use it).

/// Milliseconds on the shell's monotonic clock. The core never reads a clock itself.
pub type Millis = u64;
