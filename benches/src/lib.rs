//! Shared helpers for the benchmarks: a counting global allocator, DescribeQuorum fixtures built the same
//! way for our codec and for `kafka-protocol`, core fixtures, and a small loopback client for the node.

pub mod alloc;
pub mod fixtures;
pub mod loopback;
