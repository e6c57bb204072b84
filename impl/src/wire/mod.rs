//! Wire formats: DescribeQuorum v0–3 (our own codec, v3 from `specs/messages`), headers and frames.
//!
//! Entry points: [`DescribeQuorumRequest`] / [`DescribeQuorumResponse`] (`encode`, `decode`,
//! `encoded_size`, `to_bytes`), [`header`] for request header v1/v2 and response header v0/v1, and
//! [`frame`] for size-prefixed frames. Every failure is a [`WireError`].

pub mod codec;
pub mod describe_quorum;
pub mod error;
pub mod frame;
pub mod header;
pub mod schema;

pub use codec::{Reader, UnknownTaggedFields};
pub use describe_quorum::{
    DescribeQuorumRequest, DescribeQuorumResponse, Listener, NodeEndpoints, PartitionData,
    PartitionRequest, ReplicaState, TopicData, TopicRequest,
};
pub use error::WireError;
pub use header::{RequestHeader, ResponseHeader};
