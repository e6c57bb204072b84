//! Wire formats: DescribeQuorum v0–3 (our own codec, v3 from `specs/messages`), headers and frames.
//!
//! Entry points: [`DescribeQuorumRequest`] / [`DescribeQuorumResponse`] (`encode`, `decode`,
//! `encoded_size`, `to_bytes`), [`header`] for request header v1/v2 and response header v0/v1,
//! [`frame`] for size-prefixed frames (read and written only there), [`apis`] for the table of served
//! APIs and versions, and [`schema`] for the bounds walk over Kafka's message schemas that runs before
//! kafka-protocol decodes anything. Every failure is a [`WireError`].

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
