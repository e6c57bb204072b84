//! Wire formats: DescribeQuorum v0–3 (our own codec, v3 from `specs/messages`), headers and frames.
//!
//! Entry points: [`DescribeQuorumRequest`] / [`DescribeQuorumResponse`] (`encode`, `decode`,
//! `encoded_size`, `to_bytes`), [`header`] for request header v1/v2 and response header v0/v1,
//! [`frame`] for size-prefixed frames (read and written only there), [`apis`] for the table of served
//! APIs and versions, and [`schema`] for the bounds walk over Kafka's message schemas that runs before
//! kafka-protocol decodes anything. Every failure is a [`WireError`].
//!
//! Where a message becomes bytes:
//! - The core never encodes: it builds kafka-protocol structs (`node/messages.rs`) and hands them out.
//! - The node's sockets go through `server::codec`, the one place that turns requests and responses into
//!   frames and back, for the node, the CLI and the conformance kit alike. It uses kafka-protocol's
//!   generated codecs for headers and every body except two: DescribeQuorum ([`describe_quorum`]: v3 adds
//!   `CommittedVoters`, KIP-1204, which kafka-protocol does not have) and AddRaftVoter v1
//!   ([`add_raft_voter`]: kafka-protocol 0.18 knows v0 only). Every incoming body is first walked by
//!   [`schema`], because kafka-protocol reserves memory for whatever lengths the bytes claim.
//! - [`header`] and [`frame`]'s whole-frame DescribeQuorum functions (`encode_request_frame` and the
//!   like) are the byte-exact codec the wire tests and benches pin against Kafka's bytes; the node's
//!   DescribeQuorum bodies use the same [`describe_quorum`] codec.
//! - `conformance/src/kit/encode.rs` turns the model's messages into kafka-protocol structs; their bytes
//!   then go through `server::codec` like the node's.
//! - `conformance/src/schema` is not a path of the node: it interprets Kafka's JSON schemas at run time as
//!   an independent oracle that this codec and kafka-protocol are checked against, so it must not share
//!   their code.

pub mod add_raft_voter;
pub mod apis;
pub mod codec;
pub mod describe_quorum;
pub mod error;
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
