//! Kafka's error codes used by this crate (`Errors.java`), taken from kafka-protocol's
//! [`ResponseError`] table, and Kafka's default message for each.

use kafka_protocol::error::ResponseError;

pub const UNKNOWN_SERVER_ERROR: i16 = ResponseError::UnknownServerError.code();
pub const NONE: i16 = 0;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = ResponseError::UnknownTopicOrPartition.code();
pub const NOT_LEADER_OR_FOLLOWER: i16 = ResponseError::NotLeaderOrFollower.code();
pub const REQUEST_TIMED_OUT: i16 = ResponseError::RequestTimedOut.code();
pub const BROKER_NOT_AVAILABLE: i16 = ResponseError::BrokerNotAvailable.code();
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = ResponseError::ClusterAuthorizationFailed.code();
pub const UNSUPPORTED_VERSION: i16 = ResponseError::UnsupportedVersion.code();
pub const INVALID_REQUEST: i16 = ResponseError::InvalidRequest.code();
pub const FENCED_LEADER_EPOCH: i16 = ResponseError::FencedLeaderEpoch.code();
pub const UNKNOWN_LEADER_EPOCH: i16 = ResponseError::UnknownLeaderEpoch.code();
pub const SNAPSHOT_NOT_FOUND: i16 = ResponseError::SnapshotNotFound.code();
pub const POSITION_OUT_OF_RANGE: i16 = ResponseError::PositionOutOfRange.code();
pub const INCONSISTENT_CLUSTER_ID: i16 = ResponseError::InconsistentClusterId.code();
/// KIP-919.
pub const MISMATCHED_ENDPOINT_TYPE: i16 = ResponseError::MismatchedEndpointType.code();
/// KIP-919.
pub const UNSUPPORTED_ENDPOINT_TYPE: i16 = ResponseError::UnsupportedEndpointType.code();
pub const INVALID_VOTER_KEY: i16 = ResponseError::InvalidVoterKey.code();
pub const DUPLICATE_VOTER: i16 = ResponseError::DuplicateVoter.code();
pub const VOTER_NOT_FOUND: i16 = ResponseError::VoterNotFound.code();
/// UpdateFeatures sent to a controller that is not the active one.
pub const NOT_CONTROLLER: i16 = ResponseError::NotController.code();
/// UpdateFeatures: a level the controller refuses.
pub const INVALID_UPDATE_VERSION: i16 = ResponseError::InvalidUpdateVersion.code();

/// Kafka's default message for an error code (`Errors.message()`); `None` for NONE.
pub fn error_message(code: i16) -> Option<&'static str> {
    Some(match code {
        NONE => return None,
        UNKNOWN_TOPIC_OR_PARTITION => "This server does not host this topic-partition.",
        NOT_LEADER_OR_FOLLOWER => "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.",
        REQUEST_TIMED_OUT => "The request timed out.",
        NOT_CONTROLLER => "This is not the correct controller for this cluster.",
        INVALID_UPDATE_VERSION => "The given update version was invalid.",
        UNSUPPORTED_VERSION => "The version of API is not supported.",
        INVALID_REQUEST => "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.",
        FENCED_LEADER_EPOCH => "The leader epoch in the request is older than the epoch on the broker.",
        UNKNOWN_LEADER_EPOCH => "The leader epoch in the request is newer than the epoch on the broker.",
        SNAPSHOT_NOT_FOUND => "Requested snapshot was not found.",
        POSITION_OUT_OF_RANGE => "Requested position is not greater than or equal to zero, and less than the size of the snapshot.",
        INCONSISTENT_CLUSTER_ID => "The clusterId in the request does not match that found on the server",
        INVALID_VOTER_KEY => "The voter key doesn't match the receiving replica's key.",
        DUPLICATE_VOTER => "The voter is already part of the set of voters.",
        VOTER_NOT_FOUND => "The voter is not part of the set of voters.",
        _ => "Unexpected error.",
    })
}
/// SaslHandshake: the listener does not enable the mechanism (the answer lists those it does).
pub const UNSUPPORTED_SASL_MECHANISM: i16 = ResponseError::UnsupportedSaslMechanism.code();
/// SaslAuthenticate: wrong credentials.
pub const SASL_AUTHENTICATION_FAILED: i16 = ResponseError::SaslAuthenticationFailed.code();
/// A SASL request out of turn (mid-exchange, or after authentication).
pub const ILLEGAL_SASL_STATE: i16 = ResponseError::IllegalSaslState.code();
