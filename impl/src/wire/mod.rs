//! Wire formats: DescribeQuorum v0–3 (our own codec, v3 from `specs/messages`), headers and frames.
//!
//! Entry points: [`DescribeQuorumRequest`] / [`DescribeQuorumResponse`] (`encode`, `decode`,
//! `encoded_size`, `to_bytes`; `From` conversions to and from kafka-protocol's types), [`header`] for
//! request header v1/v2 and response header v0/v1, [`frame`] for size-prefixed frames (read and written
//! only there), [`apis`] for the table of served APIs and versions, [`error_codes`] for Kafka's error
//! codes, and [`schema`] for the bounds walk over Kafka's message schemas that runs before
//! kafka-protocol decodes anything. Every failure is a [`WireError`].
//!
//! Where a request or response becomes bytes, by API:
//!
//! | API | body codec | why |
//! |---|---|---|
//! | DescribeQuorum (55) | [`describe_quorum`] | v3 adds `CommittedVoters` (KIP-1204), which kafka-protocol lacks |
//! | AddRaftVoter (80) | [`add_raft_voter`] for v1, kafka-protocol for v0 | kafka-protocol 0.18 knows v0 only |
//! | every other served API ([`apis::SERVED_APIS`]) | kafka-protocol's generated structs | they match Kafka's bytes |
//!
//! - The core never encodes: it builds kafka-protocol structs (`node/messages.rs`) and hands them out.
//! - `server::codec` is the one place that turns requests and responses into frames and back, for the
//!   node, the CLI and the conformance kit alike: headers through kafka-protocol, bodies as in the table.
//!   Every incoming body is first walked by [`schema`], because kafka-protocol reserves memory for
//!   whatever lengths the bytes claim.
//! - [`header`] and [`frame`]'s whole-frame DescribeQuorum functions (`encode_request_frame` and the
//!   like) write and read a DescribeQuorum frame without kafka-protocol; the golden vectors
//!   (`specs/vectors`), the malformed-input tests and the loopback benches pin this byte-exact codec
//!   against Kafka's bytes. The node's DescribeQuorum bodies use the same [`describe_quorum`] codec.
//! - `conformance/src/kit/encode.rs` encodes nothing: it turns the model's messages into kafka-protocol
//!   structs, whose bytes then go through `server::codec` like the node's.
//! - `conformance/src/schema` is not a path of the node: it interprets Kafka's JSON schemas at run time as
//!   an independent oracle that this codec and kafka-protocol are checked against, so it shares only the
//!   version-range notation ([`schema::Versions`]) with this crate.

pub mod add_raft_voter;
pub mod apis;
pub mod codec;
pub mod describe_quorum;
pub mod error;
pub mod error_codes;
pub mod frame;
pub mod header;
pub mod schema;
pub mod tagged;

pub use codec::{Reader, UnknownTaggedFields};
pub use describe_quorum::{
    DescribeQuorumRequest, DescribeQuorumResponse, Listener, NodeEndpoints, PartitionData,
    PartitionRequest, ReplicaState, TopicData, TopicRequest,
};
pub use error::WireError;
pub use header::{RequestHeader, ResponseHeader};
