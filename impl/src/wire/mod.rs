//! Wire formats: DescribeQuorum v0–3 (our own codec, v3 from `specs/messages`), headers and frames.

pub mod describe_quorum;
