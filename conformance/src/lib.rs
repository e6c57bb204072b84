//! Conformance: the `kraft` implementation replayed step by step against the model's traces, and
//! DescribeQuorum checked on the wire for every version at every traced state.
//!
//! - [`schema`]: an interpreter of Kafka message JSON schemas (`specs/messages`), independent of `kraft`.
//! - [`wire`]: DescribeQuorum encodings checked by three decoders.
//! - [`mapping`]: model ⇄ implementation, both ways (its doc comment is the mapping's definition).
//! - [`refusal`]: refusal reasons, model ⇄ implementation (compared with the codes).
//! - [`harness`]: the implementation cluster driven by model actions.
//! - [`replay`]: the lockstep replay and its divergences, and [`replay::step`], one transition from a
//!   (model state, cluster) pair, which the graph search uses; [`report`] renders divergences.
//! - [`describe`]: DescribeQuorum of a replayed node on the wire and against the model.
//! - [`graph`]: the search over the model's state graph (which pairs to expand).
//! - [`engine`]: the same search on the distributed engine (`model::engine`, Timely Dataflow).
//! - [`batch`]: many traces on worker threads, stopping at a number of divergences.
//! - [`sources`]: exhaustive paths, random walks, trace files, bug-variant counterexamples.
//! - [`kit`]: the black-box kit, one real node driven over TCP (`conformance node`).
//! - [`vectors`]: `specs/vectors` checked by the interpreter.
//! - [`wire_fetch_snapshot`]: FetchSnapshot as kafka-protocol reads it, for the vectors.

pub mod batch;
pub mod describe;
pub mod engine;
pub mod fingerprint;
pub mod graph;
pub mod harness;
pub mod kit;
pub mod mapping;
pub mod refusal;
pub mod replay;
pub mod report;
pub mod schema;
pub mod sources;
pub mod vectors;
pub mod wire;
pub mod wire_fetch_snapshot;
