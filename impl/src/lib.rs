//! `kraft`: KRaft (Apache Kafka's Raft) dynamic membership with a committed voter set (KIP-853, KIP-1204).
//!
//! The quorum core ([`node`], [`leader`], [`history`], [`voter_set`], [`log`], [`records`]) is deterministic:
//! it takes messages, client requests and the current time as inputs and returns messages and effects. The
//! shells ([`storage`], [`server`], [`cli`] and the `kraft` binary) do the I/O around it.

pub mod batch;
pub mod cli;
#[cfg(feature = "faults")]
pub mod faults;
pub mod history;
pub mod leader;
pub mod log;
pub mod metrics;
pub mod node;
pub mod records;
pub mod server;
pub mod storage;
pub mod time;
pub mod voter_set;
pub mod wire;
