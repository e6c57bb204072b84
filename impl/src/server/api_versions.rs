//! The ApiVersions round trip that opens every peer connection, as Kafka's `NetworkClient` does: the peer's
//! answer fixes the version of each request sent on that connection (the highest both sides serve, ours
//! from [`apis::SERVED_APIS`]), and a request is sent only as that version can carry it ([`fit`]).
//!
//! Kafka 4.0 serves Fetch up to v17: a Fetch v18 makes it close the connection without an answer, so a
//! node that sent fixed versions never replicated from it.

use std::borrow::Cow;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::end_quorum_epoch_request::ReplicaInfo;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, BrokerId};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::codec::{request_frame, response_body, CodecError};
use crate::node::{errors, Message};
use crate::wire::apis;
use crate::wire::frame::{self, FrameReadError};

/// Why a request is not sent to a peer at any version.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("the peer does not serve {api:?}")]
    NotServed { api: ApiKey },
    #[error(
        "the peer serves {api:?} v{theirs_min}-{theirs_max}, this node v{ours_min}-{ours_max}"
    )]
    NoCommonVersion {
        api: ApiKey,
        theirs_min: i16,
        theirs_max: i16,
        ours_min: i16,
        ours_max: i16,
    },
    #[error("{api:?} v{version} cannot carry {field}")]
    CannotCarry {
        api: ApiKey,
        version: i16,
        field: &'static str,
    },
}

/// What a peer answered to ApiVersions: the request versions it serves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerVersions {
    /// (api key, min, max) as the peer listed them.
    apis: Vec<(i16, i16, i16)>,
}

impl PeerVersions {
    pub fn from_response(response: &ApiVersionsResponse) -> Self {
        PeerVersions {
            apis: response
                .api_keys
                .iter()
                .map(|k| (k.api_key, k.min_version, k.max_version))
                .collect(),
        }
    }

    /// The range the peer listed for `api`, if it lists it.
    pub fn range(&self, api: ApiKey) -> Option<(i16, i16)> {
        self.apis
            .iter()
            .find(|(k, _, _)| *k == api as i16)
            .map(|&(_, min, max)| (min, max))
    }

    /// The version to send `api` at: the highest both sides serve (Kafka's `NetworkClient` rule).
    pub fn version(&self, api: ApiKey) -> Result<i16, VersionError> {
        let key = api as i16;
        let ours = apis::served(key).ok_or(VersionError::NotServed { api })?;
        let &(_, theirs_min, theirs_max) = self
            .apis
            .iter()
            .find(|(k, _, _)| *k == key)
            .ok_or(VersionError::NotServed { api })?;
        apis::common_version((theirs_min, theirs_max), (ours.min, ours.max)).ok_or(
            VersionError::NoCommonVersion {
                api,
                theirs_min,
                theirs_max,
                ours_min: ours.min,
                ours_max: ours.max,
            },
        )
    }
}

/// `message` as request version `version` can carry it (field versions from Kafka's JSON schemas,
/// `specs/messages/`): fields the version lacks are left out, or the request is refused when leaving one
/// out would change what it asks (a pre-vote below Vote v2 would be a real vote).
pub fn fit(message: &Message, version: i16) -> Result<Cow<'_, Message>, VersionError> {
    let fitted = match message {
        // HighWatermark (KIP-1166) is tagged from v18, ReplicaDirectoryId from v17.
        Message::FetchRequest(r) if version < 18 => {
            let mut r = r.clone();
            for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                p.high_watermark = i64::MAX;
                if version < 17 {
                    p.replica_directory_id = uuid::Uuid::nil();
                }
            }
            Message::FetchRequest(r)
        }
        Message::VoteRequest(r) if version < 2 => {
            let partitions = || r.topics.iter().flat_map(|t| t.partitions.iter());
            if partitions().any(|p| p.pre_vote) {
                return Err(VersionError::CannotCarry {
                    api: ApiKey::Vote,
                    version,
                    field: "PreVote",
                });
            }
            if version >= 1 {
                return Ok(Cow::Borrowed(message));
            }
            let mut r = r.clone();
            r.voter_id = BrokerId(-1);
            for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                p.replica_directory_id = uuid::Uuid::nil();
                p.voter_directory_id = uuid::Uuid::nil();
            }
            Message::VoteRequest(r)
        }
        Message::BeginQuorumEpochRequest(r) if version < 1 => {
            let mut r = r.clone();
            r.voter_id = BrokerId(-1);
            r.leader_endpoints.clear();
            for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                p.voter_directory_id = uuid::Uuid::nil();
            }
            Message::BeginQuorumEpochRequest(r)
        }
        // v0 names the successors by id only (PreferredSuccessors); v1 by id and directory.
        Message::EndQuorumEpochRequest(r) if version < 1 => {
            let mut r = r.clone();
            r.leader_endpoints.clear();
            for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                let candidates: Vec<ReplicaInfo> = std::mem::take(&mut p.preferred_candidates);
                if p.preferred_successors.is_empty() {
                    p.preferred_successors = candidates.iter().map(|c| c.candidate_id.0).collect();
                }
            }
            Message::EndQuorumEpochRequest(r)
        }
        Message::ApiVersionsRequest(r) if version < 3 => {
            let mut r = r.clone();
            r.client_software_name = StrBytes::default();
            r.client_software_version = StrBytes::default();
            Message::ApiVersionsRequest(r)
        }
        _ => return Ok(Cow::Borrowed(message)),
    };
    Ok(Cow::Owned(fitted))
}

/// What the core is told of a request no version can carry: an answer of its kind with UNSUPPORTED_VERSION,
/// as Kafka's `KafkaNetworkChannel` answers a request its client refused for a version mismatch (a
/// Prospective then stands as Candidate at once; other kinds are retried at the core's timers).
pub fn unsupported_answer(request: &Message) -> Option<Message> {
    request.error_answer(errors::UNSUPPORTED_VERSION)
}

/// Why the ApiVersions round trip of a new connection failed (the connection is then dropped).
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("the peer closed the connection on ApiVersions v{version}")]
    Closed { version: i16 },
    #[error("no ApiVersions answer within {0:?}")]
    Timeout(Duration),
    #[error("ApiVersions: {0}")]
    Io(#[from] std::io::Error),
    #[error("ApiVersions answer: {0}")]
    Frame(FrameReadError),
    #[error("ApiVersions answer: {0}")]
    Codec(#[from] CodecError),
    #[error("ApiVersions answered with error code {0}")]
    Refused(i16),
}

/// The ApiVersions request a peer link opens with (this node's software name and version).
fn request(version: i16, correlation_id: i32, client_id: &str) -> Result<Bytes, CodecError> {
    let body = crate::node::api_versions_request();
    let fitted = fit(&Message::ApiVersionsRequest(body), version)
        .map_err(|e| CodecError::Encode {
            what: "ApiVersionsRequest",
            reason: e.to_string(),
        })?
        .into_owned();
    let Message::ApiVersionsRequest(body) = fitted else {
        unreachable!("fit keeps the message kind")
    };
    request_frame(
        ApiKey::ApiVersions as i16,
        version,
        correlation_id,
        client_id,
        &body,
    )
}

/// Decodes an ApiVersions answer to a request at `version`. A peer that does not serve `version`
/// answers UNSUPPORTED_VERSION in the v0 layout (Kafka's rule), so v0 is tried when `version` fails.
fn decode_answer(payload: Bytes, version: i16) -> Result<(i32, ApiVersionsResponse), CodecError> {
    let key = ApiKey::ApiVersions as i16;
    let decode = |payload: Bytes, v: i16| {
        let (corr, mut body) = response_body(payload, key, v)?;
        ApiVersionsResponse::decode(&mut body, v)
            .map(|r| (corr, r))
            .map_err(|e| CodecError::Malformed {
                what: "ApiVersionsResponse",
                reason: e.to_string(),
            })
    };
    match decode(payload.clone(), version) {
        Ok(answer) => Ok(answer),
        Err(e) if version > 0 => decode(payload, 0).map_err(|_| e),
        Err(e) => Err(e),
    }
}

/// Sends ApiVersions on a new connection and reads the answer (correlation ids 0 and, after an
/// UNSUPPORTED_VERSION answer, 1 at the highest version the peer named); returns what the peer serves.
pub async fn handshake<R, W>(
    read: &mut R,
    write: &mut W,
    client_id: &str,
    timeout: Duration,
    max_frame: usize,
) -> Result<PeerVersions, HandshakeError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + ?Sized,
{
    let ours = apis::max_version(ApiKey::ApiVersions);
    let mut version = ours;
    for correlation in 0..2 {
        let frame = request(version, correlation, client_id)?;
        let round_trip = async {
            write.write_all(&frame).await?;
            write.flush().await?;
            match frame::read_frame(read, max_frame).await {
                Ok(payload) => Ok(payload),
                Err(FrameReadError::Closed) => Err(HandshakeError::Closed { version }),
                Err(e) => Err(HandshakeError::Frame(e)),
            }
        };
        let payload = tokio::time::timeout(timeout, round_trip)
            .await
            .map_err(|_| HandshakeError::Timeout(timeout))??;
        let (corr, answer) = decode_answer(payload, version)?;
        if corr != correlation {
            return Err(CodecError::Malformed {
                what: "response header",
                reason: format!("correlation id {corr}, expected {correlation}"),
            }
            .into());
        }
        if answer.error_code == errors::UNSUPPORTED_VERSION && correlation == 0 {
            let theirs = PeerVersions::from_response(&answer).version(ApiKey::ApiVersions);
            if let Some(v) = theirs.ok().filter(|v| *v < version) {
                version = v;
                continue;
            }
        }
        if answer.error_code != errors::NONE {
            return Err(HandshakeError::Refused(answer.error_code));
        }
        return Ok(PeerVersions::from_response(&answer));
    }
    Err(HandshakeError::Refused(errors::UNSUPPORTED_VERSION))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::codec::{decode_request, peer_request_frame_at, Incoming};
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::vote_request::{PartitionData, TopicData};
    use kafka_protocol::messages::{
        end_quorum_epoch_request, EndQuorumEpochRequest, FetchRequest, VoteRequest,
    };

    fn answer(ranges: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
        ApiVersionsResponse::default().with_api_keys(
            ranges
                .iter()
                .map(|&(k, min, max)| {
                    ApiVersion::default()
                        .with_api_key(k as i16)
                        .with_min_version(min)
                        .with_max_version(max)
                })
                .collect(),
        )
    }

    /// What Kafka 4.0.1's controller lists for the Raft RPCs (its ApiVersions answer).
    fn kafka_4_0() -> PeerVersions {
        PeerVersions::from_response(&answer(&[
            (ApiKey::Fetch, 4, 17),
            (ApiKey::ApiVersions, 0, 4),
            (ApiKey::Vote, 0, 2),
            (ApiKey::BeginQuorumEpoch, 0, 1),
            (ApiKey::EndQuorumEpoch, 0, 1),
            (ApiKey::AddRaftVoter, 0, 0),
        ]))
    }

    #[test]
    fn the_version_sent_is_the_highest_both_serve() {
        let v = kafka_4_0();
        assert_eq!(v.version(ApiKey::Fetch), Ok(17));
        assert_eq!(v.version(ApiKey::Vote), Ok(2));
        assert_eq!(v.version(ApiKey::AddRaftVoter), Ok(0));
        assert_eq!(
            v.version(ApiKey::UpdateRaftVoter),
            Err(VersionError::NotServed {
                api: ApiKey::UpdateRaftVoter
            })
        );
        let old = PeerVersions::from_response(&answer(&[(ApiKey::Fetch, 4, 14)]));
        assert!(matches!(
            old.version(ApiKey::Fetch),
            Err(VersionError::NoCommonVersion {
                theirs_max: 14,
                ours_min: 15,
                ..
            })
        ));
        let newer = PeerVersions::from_response(&answer(&[(ApiKey::Fetch, 4, 40)]));
        assert_eq!(
            newer.version(ApiKey::Fetch),
            Ok(apis::max_version(ApiKey::Fetch))
        );
    }

    fn fetch(hw: i64) -> Message {
        Message::FetchRequest(FetchRequest::default().with_topics(vec![
            FetchTopic::default().with_partitions(vec![FetchPartition::default()
                .with_high_watermark(hw)
                .with_replica_directory_id(uuid::Uuid::from_u128(7))]),
        ]))
    }

    /// The bytes at `version` decode (as the peer would) to a request without the follower's HW below v18.
    #[test]
    fn fetch_below_v18_carries_no_follower_high_watermark() {
        for (version, want_hw) in [(18, 42), (17, i64::MAX), (15, i64::MAX)] {
            let frame = peer_request_frame_at(&fetch(42), version, 1, "t").unwrap();
            let (reply, incoming) = decode_request(frame.slice(4..)).unwrap();
            assert_eq!(reply.api_version, version);
            let Incoming::Peer {
                message: Message::FetchRequest(r),
                ..
            } = incoming
            else {
                panic!("{incoming:?}")
            };
            let p = &r.topics[0].partitions[0];
            assert_eq!(p.high_watermark, want_hw, "v{version}");
            let dir = if version >= 17 { 7 } else { 0 };
            assert_eq!(
                p.replica_directory_id,
                uuid::Uuid::from_u128(dir),
                "v{version}"
            );
        }
    }

    #[test]
    fn a_pre_vote_is_not_sent_below_vote_v2() {
        let vote = |pre_vote| {
            Message::VoteRequest(VoteRequest::default().with_topics(vec![TopicData::default()
                .with_partitions(vec![PartitionData::default().with_pre_vote(pre_vote)])]))
        };
        assert!(matches!(fit(&vote(true), 2), Ok(Cow::Borrowed(_))));
        assert_eq!(
            fit(&vote(true), 1).unwrap_err().to_string(),
            "Vote v1 cannot carry PreVote"
        );
        assert!(peer_request_frame_at(&vote(false), 0, 1, "t").is_ok());
    }

    #[test]
    fn end_quorum_epoch_v0_names_the_successors_by_id() {
        let candidate = |id| {
            end_quorum_epoch_request::ReplicaInfo::default()
                .with_candidate_id(BrokerId(id))
                .with_candidate_directory_id(uuid::Uuid::from_u128(id as u128))
        };
        let req = EndQuorumEpochRequest::default().with_topics(vec![
            end_quorum_epoch_request::TopicData::default()
                .with_partitions(vec![end_quorum_epoch_request::PartitionData::default()
                    .with_preferred_candidates(vec![candidate(2), candidate(3)])]),
        ]);
        let frame = peer_request_frame_at(&Message::EndQuorumEpochRequest(req), 0, 1, "t").unwrap();
        let (_, incoming) = decode_request(frame.slice(4..)).unwrap();
        let Incoming::Peer {
            message: Message::EndQuorumEpochRequest(r),
            ..
        } = incoming
        else {
            panic!("{incoming:?}")
        };
        let p = &r.topics[0].partitions[0];
        assert_eq!(p.preferred_successors, vec![2, 3]);
    }

    /// A peer that serves ApiVersions only up to v2 answers v4 with UNSUPPORTED_VERSION in the v0
    /// layout; the handshake asks again at v2.
    #[tokio::test]
    async fn handshake_retries_at_the_peers_api_versions_version() {
        use crate::server::codec::{unsupported_response, Reply};
        let (mut client, mut server) = tokio::io::duplex(1 << 16);
        let peer = tokio::spawn(async move {
            let ranges = answer(&[(ApiKey::ApiVersions, 0, 2), (ApiKey::Fetch, 4, 17)]);
            let mut versions_seen = Vec::new();
            for _ in 0..2 {
                let payload = frame::read_frame(&mut server, 1 << 20).await.unwrap();
                let (reply, _) = decode_request(payload).unwrap();
                versions_seen.push(reply.api_version);
                let frame = if reply.api_version > 2 {
                    unsupported_response(&reply, ranges.clone()).unwrap()
                } else {
                    let body = ranges.clone();
                    let reply = Reply { ..reply };
                    crate::server::codec::client_response(
                        &reply,
                        &crate::node::ClientResponse::ApiVersions(body),
                    )
                    .unwrap()
                };
                server.write_all(&frame).await.unwrap();
            }
            versions_seen
        });
        let (mut read, mut write) = tokio::io::split(&mut client);
        let versions = handshake(&mut read, &mut write, "t", Duration::from_secs(5), 1 << 20)
            .await
            .unwrap();
        assert_eq!(versions.version(ApiKey::Fetch), Ok(17));
        assert_eq!(peer.await.unwrap(), vec![4, 2]);
    }

    #[tokio::test]
    async fn a_peer_that_closes_on_api_versions_is_a_typed_error() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        drop(server);
        let (mut read, mut write) = tokio::io::split(&mut client);
        let e = handshake(&mut read, &mut write, "t", Duration::from_secs(5), 1 << 20)
            .await
            .unwrap_err();
        assert!(
            matches!(e, HandshakeError::Closed { .. } | HandshakeError::Io(_)),
            "{e}"
        );
    }
}
