//! Requests and responses as bytes: what the shell reads from and writes to sockets.
//!
//! Headers go through kafka-protocol; which codec writes which body is the table in [`crate::wire`].
//! Frames carry the int32 size prefix.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{
    AddRaftVoterResponse, ApiKey, ApiVersionsRequest, ApiVersionsResponse, BeginQuorumEpochRequest,
    BeginQuorumEpochResponse, BrokerId, DescribeClusterRequest, DescribeClusterResponse,
    EndQuorumEpochRequest, EndQuorumEpochResponse, FetchRequest, FetchResponse,
    FetchSnapshotRequest, FetchSnapshotResponse, MetadataRequest, MetadataResponse,
    RemoveRaftVoterRequest, RemoveRaftVoterResponse, RequestHeader, ResponseHeader,
    UpdateFeaturesRequest, UpdateFeaturesResponse, UpdateRaftVoterRequest, UpdateRaftVoterResponse,
    VoteRequest, VoteResponse,
};
use kafka_protocol::protocol::{
    decode_request_header_from_buffer, encode_request_header_into_buffer, Decodable, Encodable,
    StrBytes,
};

use crate::node::{errors, ClientRequest, ClientResponse, Message};
use crate::wire::apis::{self, max_version};
use crate::wire::describe_quorum::{DescribeQuorumRequest, DescribeQuorumResponse};
use crate::wire::frame::{self as wire_frame, SIZE_PREFIX};
use crate::wire::schema;
use crate::wire::WireError;

/// Versions this shell writes its requests at when it does not know the peer's (the conformance kit's
/// driver): the served maxima of [`apis::SERVED_APIS`]. Peer links negotiate (`api_versions`).
pub const FETCH_VERSION: i16 = max_version(ApiKey::Fetch);
pub const VOTE_VERSION: i16 = max_version(ApiKey::Vote);
pub const BEGIN_QUORUM_EPOCH_VERSION: i16 = max_version(ApiKey::BeginQuorumEpoch);
pub const END_QUORUM_EPOCH_VERSION: i16 = max_version(ApiKey::EndQuorumEpoch);
pub const API_VERSIONS_VERSION: i16 = max_version(ApiKey::ApiVersions);
pub const FETCH_SNAPSHOT_VERSION: i16 = max_version(ApiKey::FetchSnapshot);
pub const UPDATE_RAFT_VOTER_VERSION: i16 = max_version(ApiKey::UpdateRaftVoter);
pub const ADD_RAFT_VOTER_VERSION: i16 = max_version(ApiKey::AddRaftVoter);
pub const REMOVE_RAFT_VOTER_VERSION: i16 = max_version(ApiKey::RemoveRaftVoter);

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("request frame of {0} bytes is too short for a request header")]
    ShortHeader(usize),
    #[error("malformed {what}: {reason}")]
    Malformed { what: &'static str, reason: String },
    #[error("cannot encode {what}: {reason}")]
    Encode { what: &'static str, reason: String },
    /// Found by the schema walk before kafka-protocol saw the bytes (a length that does not fit, ...).
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A request the version it would be sent at cannot carry.
    #[error(transparent)]
    Version(#[from] super::api_versions::VersionError),
}

/// kafka-protocol reports `anyhow` errors; they are kept as their message.
fn malformed(what: &'static str, e: impl std::fmt::Display) -> CodecError {
    CodecError::Malformed {
        what,
        reason: e.to_string(),
    }
}

/// A decoded request frame.
#[derive(Debug)]
pub enum Incoming {
    /// A Raft RPC from a peer; `from` is the sender named in the request body.
    Peer {
        from: i32,
        message: Message,
    },
    Client(ClientRequest),
    Metadata(MetadataRequest),
    /// An api key or version this node does not serve: answered with UNSUPPORTED_VERSION.
    Unsupported,
}

/// Where a response goes back: correlation id plus the api key and version that fix its encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub correlation_id: i32,
    pub api_key: i16,
    pub api_version: i16,
}

/// Decodes a request frame payload (without the size prefix).
///
/// Every frame of at least 8 bytes yields a [`Reply`] (key, version, correlation id sit at fixed places in
/// all header versions), so unknown keys and versions can be answered; a malformed body of a supported
/// request is an error (the connection is then closed).
pub fn decode_request(payload: Bytes) -> Result<(Reply, Incoming), CodecError> {
    if payload.len() < 8 {
        return Err(CodecError::ShortHeader(payload.len()));
    }
    let key = i16::from_be_bytes([payload[0], payload[1]]);
    let version = i16::from_be_bytes([payload[2], payload[3]]);
    let correlation_id = i32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
    let reply = Reply {
        correlation_id,
        api_key: key,
        api_version: version,
    };
    let api = match ApiKey::try_from(key) {
        Ok(api) if apis::supports(key, version) => api,
        _ => return Ok((reply, Incoming::Unsupported)),
    };
    // Every length in the header and body must fit in the frame before kafka-protocol reserves for it.
    let header_version = api.request_header_version(version);
    let used = walk_named("RequestHeader", header_version, &payload, SIZE_PREFIX)?;
    if let Some(body) = schema::schema_for(key, false) {
        schema::walk(body, version, &payload[used..], SIZE_PREFIX + used)?;
    }
    let mut buf = payload;
    decode_request_header_from_buffer(&mut buf).map_err(|e| CodecError::Malformed {
        what: "request header",
        reason: e.to_string(),
    })?;
    let peer = |from: i32, message: Message| Incoming::Peer { from, message };
    let incoming = match api {
        ApiKey::ApiVersions => Incoming::Client(ClientRequest::ApiVersions(
            ApiVersionsRequest::decode(&mut buf, version)
                .map_err(|e| malformed("ApiVersionsRequest", e))?,
        )),
        ApiKey::Metadata => Incoming::Metadata(
            MetadataRequest::decode(&mut buf, version)
                .map_err(|e| malformed("MetadataRequest", e))?,
        ),
        ApiKey::DescribeQuorum => Incoming::Client(ClientRequest::DescribeQuorum {
            version,
            request: DescribeQuorumRequest::decode(&buf, version).map_err(|e| {
                CodecError::Malformed {
                    what: "DescribeQuorumRequest",
                    reason: e.to_string(),
                }
            })?,
        }),
        ApiKey::DescribeCluster => Incoming::Client(ClientRequest::DescribeCluster {
            version,
            request: DescribeClusterRequest::decode(&mut buf, version)
                .map_err(|e| malformed("DescribeClusterRequest", e))?,
        }),
        ApiKey::AddRaftVoter => {
            let (request, ack_when_committed) =
                crate::wire::add_raft_voter::decode_request(&mut buf, version)
                    .map_err(|e| malformed("AddRaftVoterRequest", e))?;
            Incoming::Client(ClientRequest::AddRaftVoter {
                request,
                ack_when_committed,
            })
        }
        ApiKey::RemoveRaftVoter => Incoming::Client(ClientRequest::RemoveRaftVoter(
            RemoveRaftVoterRequest::decode(&mut buf, version)
                .map_err(|e| malformed("RemoveRaftVoterRequest", e))?,
        )),
        ApiKey::UpdateRaftVoter => Incoming::Client(ClientRequest::UpdateRaftVoter(
            UpdateRaftVoterRequest::decode(&mut buf, version)
                .map_err(|e| malformed("UpdateRaftVoterRequest", e))?,
        )),
        ApiKey::UpdateFeatures => Incoming::Client(ClientRequest::UpdateFeatures {
            version,
            request: UpdateFeaturesRequest::decode(&mut buf, version)
                .map_err(|e| malformed("UpdateFeaturesRequest", e))?,
        }),
        ApiKey::Vote => {
            let r =
                VoteRequest::decode(&mut buf, version).map_err(|e| malformed("VoteRequest", e))?;
            let from = r
                .topics
                .first()
                .and_then(|t| t.partitions.first())
                .map_or(-1, |p| p.replica_id.0);
            peer(from, Message::VoteRequest(r))
        }
        ApiKey::BeginQuorumEpoch => {
            let r = BeginQuorumEpochRequest::decode(&mut buf, version)
                .map_err(|e| malformed("BeginQuorumEpochRequest", e))?;
            let from = r
                .topics
                .first()
                .and_then(|t| t.partitions.first())
                .map_or(-1, |p| p.leader_id.0);
            peer(from, Message::BeginQuorumEpochRequest(r))
        }
        ApiKey::EndQuorumEpoch => {
            let r = EndQuorumEpochRequest::decode(&mut buf, version)
                .map_err(|e| malformed("EndQuorumEpochRequest", e))?;
            let from = r
                .topics
                .first()
                .and_then(|t| t.partitions.first())
                .map_or(-1, |p| p.leader_id.0);
            peer(from, Message::EndQuorumEpochRequest(r))
        }
        ApiKey::Fetch => {
            let r = FetchRequest::decode(&mut buf, version)
                .map_err(|e| malformed("FetchRequest", e))?;
            let from = r.replica_state.replica_id.0;
            peer(from, Message::FetchRequest(r))
        }
        ApiKey::FetchSnapshot => {
            let r = FetchSnapshotRequest::decode(&mut buf, version)
                .map_err(|e| malformed("FetchSnapshotRequest", e))?;
            let from = r.replica_id.0;
            peer(from, Message::FetchSnapshotRequest(r))
        }
        _ => Incoming::Unsupported,
    };
    Ok((reply, incoming))
}

fn frame(
    reply: &Reply,
    body: impl FnOnce(&mut BytesMut) -> Result<(), CodecError>,
) -> Result<Bytes, CodecError> {
    let mut buf = wire_frame::begin_frame();
    let header_version = ApiKey::try_from(reply.api_key)
        .map(|k| k.response_header_version(reply.api_version))
        .unwrap_or(0);
    ResponseHeader::default()
        .with_correlation_id(reply.correlation_id)
        .encode(&mut buf, header_version)
        .map_err(|e| CodecError::Encode {
            what: "response header",
            reason: e.to_string(),
        })?;
    body(&mut buf)?;
    Ok(wire_frame::finish_frame(buf)?)
}

fn encode_body<M: Encodable>(
    what: &'static str,
    m: &M,
    v: i16,
    buf: &mut BytesMut,
) -> Result<(), CodecError> {
    m.encode(buf, v).map_err(|e| CodecError::Encode {
        what,
        reason: e.to_string(),
    })
}

/// A response frame of any message (the SASL exchange's answers, written by the shell).
pub fn message_response<M: Encodable>(
    reply: &Reply,
    what: &'static str,
    message: &M,
) -> Result<Bytes, CodecError> {
    frame(reply, |buf| {
        encode_body(what, message, reply.api_version, buf)
    })
}

/// Decodes the body of a request frame whose key and version the caller checked. Header and body are
/// walked by their embedded schemas first, so kafka-protocol reserves only for bytes that are there.
pub fn decode_request_as<M: Decodable>(
    payload: Bytes,
    what: &'static str,
) -> Result<M, CodecError> {
    if payload.len() < 8 {
        return Err(CodecError::ShortHeader(payload.len()));
    }
    let key = i16::from_be_bytes([payload[0], payload[1]]);
    let version = i16::from_be_bytes([payload[2], payload[3]]);
    let api = ApiKey::try_from(key).map_err(|_| malformed(what, format!("api key {key}")))?;
    let used = walk_named(
        "RequestHeader",
        api.request_header_version(version),
        &payload,
        SIZE_PREFIX,
    )?;
    let body = schema::schema_for(key, false).ok_or(CodecError::Malformed {
        what: "schema",
        reason: format!("{what} is not embedded"),
    })?;
    schema::walk(body, version, &payload[used..], SIZE_PREFIX + used)?;
    let mut buf = payload;
    decode_request_header_from_buffer(&mut buf).map_err(|e| malformed("request header", e))?;
    M::decode(&mut buf, version).map_err(|e| malformed(what, e))
}

/// Kafka's answer to an unknown api key or version: ApiVersionsResponse v0 (header v0) with
/// UNSUPPORTED_VERSION and the supported ranges, so the client can pick a version and retry.
pub fn unsupported_response(
    reply: &Reply,
    api_versions: ApiVersionsResponse,
) -> Result<Bytes, CodecError> {
    let body = api_versions.with_error_code(errors::UNSUPPORTED_VERSION);
    let reply = Reply {
        api_key: ApiKey::ApiVersions as i16,
        api_version: 0,
        ..*reply
    };
    frame(&reply, |buf| {
        encode_body("ApiVersionsResponse", &body, 0, buf)
    })
}

pub fn client_response(reply: &Reply, resp: &ClientResponse) -> Result<Bytes, CodecError> {
    let v = reply.api_version;
    frame(reply, |buf| match resp {
        ClientResponse::ApiVersions(r) => encode_body("ApiVersionsResponse", r, v, buf),
        ClientResponse::DescribeQuorum(r) => r.encode(v, buf).map_err(|e| CodecError::Encode {
            what: "DescribeQuorumResponse",
            reason: e.to_string(),
        }),
        ClientResponse::AddRaftVoter(r) => {
            let v = crate::wire::add_raft_voter::response_encoding_version(v);
            encode_body("AddRaftVoterResponse", r, v, buf)
        }
        ClientResponse::RemoveRaftVoter(r) => encode_body("RemoveRaftVoterResponse", r, v, buf),
        ClientResponse::UpdateRaftVoter(r) => encode_body("UpdateRaftVoterResponse", r, v, buf),
        ClientResponse::DescribeCluster(r) => encode_body("DescribeClusterResponse", r, v, buf),
        ClientResponse::UpdateFeatures(r) => encode_body("UpdateFeaturesResponse", r, v, buf),
    })
}

pub fn peer_response(reply: &Reply, message: &Message) -> Result<Bytes, CodecError> {
    let v = reply.api_version;
    frame(reply, |buf| match message {
        Message::VoteResponse(r) => encode_body("VoteResponse", r, v, buf),
        Message::BeginQuorumEpochResponse(r) => encode_body("BeginQuorumEpochResponse", r, v, buf),
        Message::EndQuorumEpochResponse(r) => encode_body("EndQuorumEpochResponse", r, v, buf),
        // NodeEndpoints exists from v16; an older requester gets the response without it.
        Message::FetchResponse(r) if v < 16 && !r.node_endpoints.is_empty() => {
            let mut older = r.clone();
            older.node_endpoints.clear();
            encode_body("FetchResponse", &older, v, buf)
        }
        Message::FetchResponse(r) => encode_body("FetchResponse", r, v, buf),
        // NodeEndpoints exists from v1.
        Message::FetchSnapshotResponse(r) if v < 1 && !r.node_endpoints.is_empty() => {
            let mut older = r.clone();
            older.node_endpoints.clear();
            encode_body("FetchSnapshotResponse", &older, v, buf)
        }
        Message::FetchSnapshotResponse(r) => encode_body("FetchSnapshotResponse", r, v, buf),
        Message::ApiVersionsResponse(r) => encode_body("ApiVersionsResponse", r, v, buf),
        Message::UpdateRaftVoterResponse(r) => encode_body("UpdateRaftVoterResponse", r, v, buf),
        Message::AddRaftVoterResponse(r) => {
            let v = crate::wire::add_raft_voter::response_encoding_version(v);
            encode_body("AddRaftVoterResponse", r, v, buf)
        }
        Message::RemoveRaftVoterResponse(r) => encode_body("RemoveRaftVoterResponse", r, v, buf),
        other => Err(CodecError::Encode {
            what: "response",
            reason: format!("{other:?} is a request"),
        }),
    })
}

/// Identity the shell reports in Metadata.
#[derive(Clone, Debug)]
pub struct BrokerInfo {
    pub node_id: i32,
    pub host: String,
    pub port: u16,
    pub cluster_id: String,
}

/// Minimal Metadata: this node as the only broker and controller, no topics.
pub fn metadata_response(reply: &Reply, info: &BrokerInfo) -> Result<Bytes, CodecError> {
    let v = reply.api_version;
    let broker = MetadataResponseBroker::default()
        .with_node_id(BrokerId(info.node_id))
        .with_host(StrBytes::from_string(info.host.clone()))
        .with_port(i32::from(info.port));
    let mut resp = MetadataResponse::default().with_brokers(vec![broker]);
    if v >= 1 {
        resp = resp.with_controller_id(BrokerId(info.node_id));
    }
    if v >= 2 {
        resp = resp.with_cluster_id(Some(StrBytes::from_string(info.cluster_id.clone())));
    }
    frame(reply, |buf| encode_body("MetadataResponse", &resp, v, buf))
}

/// Api key and version this shell uses to send a request message.
pub fn request_api(message: &Message) -> Option<(i16, i16)> {
    Some(match message {
        Message::VoteRequest(_) => (ApiKey::Vote as i16, VOTE_VERSION),
        Message::BeginQuorumEpochRequest(_) => {
            (ApiKey::BeginQuorumEpoch as i16, BEGIN_QUORUM_EPOCH_VERSION)
        }
        Message::EndQuorumEpochRequest(_) => {
            (ApiKey::EndQuorumEpoch as i16, END_QUORUM_EPOCH_VERSION)
        }
        Message::FetchRequest(_) => (ApiKey::Fetch as i16, FETCH_VERSION),
        Message::FetchSnapshotRequest(_) => (ApiKey::FetchSnapshot as i16, FETCH_SNAPSHOT_VERSION),
        Message::ApiVersionsRequest(_) => (ApiKey::ApiVersions as i16, API_VERSIONS_VERSION),
        Message::UpdateRaftVoterRequest(_) => {
            (ApiKey::UpdateRaftVoter as i16, UPDATE_RAFT_VOTER_VERSION)
        }
        Message::AddRaftVoterRequest(_) => (ApiKey::AddRaftVoter as i16, ADD_RAFT_VOTER_VERSION),
        Message::RemoveRaftVoterRequest(_) => {
            (ApiKey::RemoveRaftVoter as i16, REMOVE_RAFT_VOTER_VERSION)
        }
        _ => return None,
    })
}

/// A request frame (size prefix, header, body) for any request kind this crate sends.
pub fn request_frame<M: Encodable>(
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: &str,
    body: &M,
) -> Result<Bytes, CodecError> {
    let mut buf = wire_frame::begin_frame();
    let header = RequestHeader::default()
        .with_request_api_key(api_key)
        .with_request_api_version(api_version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    encode_request_header_into_buffer(&mut buf, &header).map_err(|e| CodecError::Encode {
        what: "request header",
        reason: e.to_string(),
    })?;
    encode_body("request", body, api_version, &mut buf)?;
    Ok(wire_frame::finish_frame(buf)?)
}

/// The request frame for a peer message at the served maximum of its API ([`request_api`]).
pub fn peer_request_frame(
    message: &Message,
    correlation_id: i32,
    client_id: &str,
) -> Result<Bytes, CodecError> {
    let (_, v) = request_api(message).unwrap_or((-1, -1));
    peer_request_frame_at(message, v, correlation_id, client_id)
}

/// The request frame for a peer message at `v`, with only what `v` can carry
/// ([`super::api_versions::fit`]).
pub fn peer_request_frame_at(
    message: &Message,
    v: i16,
    correlation_id: i32,
    client_id: &str,
) -> Result<Bytes, CodecError> {
    let key = message.api_key() as i16;
    let message = super::api_versions::fit(message, v)?;
    match message.as_ref() {
        Message::VoteRequest(r) => request_frame(key, v, correlation_id, client_id, r),
        Message::BeginQuorumEpochRequest(r) => request_frame(key, v, correlation_id, client_id, r),
        Message::EndQuorumEpochRequest(r) => request_frame(key, v, correlation_id, client_id, r),
        Message::FetchRequest(r) => request_frame(key, v, correlation_id, client_id, r),
        Message::FetchSnapshotRequest(r) => request_frame(key, v, correlation_id, client_id, r),
        Message::ApiVersionsRequest(r) => request_frame(key, v, correlation_id, client_id, r),
        Message::UpdateRaftVoterRequest(r) => request_frame(key, v, correlation_id, client_id, r),
        // Auto-join's request (KIP-1186): at v1 it asks to be answered once the record is appended.
        Message::AddRaftVoterRequest(r) => {
            let body = crate::wire::add_raft_voter::OutgoingRequest {
                request: r.clone(),
                ack_when_committed: false,
            };
            request_frame(key, v, correlation_id, client_id, &body)
        }
        Message::RemoveRaftVoterRequest(r) => request_frame(key, v, correlation_id, client_id, r),
        other => Err(CodecError::Encode {
            what: "request",
            reason: format!("{other:?} is a response"),
        }),
    }
}

/// Walks `bytes` by the embedded schema `name`; returns the bytes it takes.
fn walk_named(name: &str, version: i16, bytes: &[u8], offset: usize) -> Result<usize, CodecError> {
    let s = schema::schema(name).ok_or(CodecError::Malformed {
        what: "schema",
        reason: format!("{name} is not embedded"),
    })?;
    Ok(schema::walk(s, version, bytes, offset)?)
}

/// Splits a response payload into its correlation id and body (header version from key and version).
/// The body is first walked by its schema, so whatever decodes it next allocates only for what is there.
pub fn response_body(
    payload: Bytes,
    api_key: i16,
    api_version: i16,
) -> Result<(i32, Bytes), CodecError> {
    let header_version = ApiKey::try_from(api_key)
        .map(|k| k.response_header_version(api_version))
        .unwrap_or(0);
    let used = walk_named("ResponseHeader", header_version, &payload, SIZE_PREFIX)?;
    if let Some(body) = schema::schema_for(api_key, true) {
        schema::walk(body, api_version, &payload[used..], SIZE_PREFIX + used)?;
    }
    let mut buf = payload;
    let header =
        ResponseHeader::decode(&mut buf, header_version).map_err(|e| CodecError::Malformed {
            what: "response header",
            reason: e.to_string(),
        })?;
    Ok((header.correlation_id, buf))
}

/// Decodes a peer response body for the request kind `api_key` at `api_version`.
pub fn decode_peer_response(
    mut body: Bytes,
    api_key: i16,
    api_version: i16,
) -> Result<Message, CodecError> {
    let v = api_version;
    Ok(match ApiKey::try_from(api_key) {
        Ok(ApiKey::Vote) => Message::VoteResponse(
            VoteResponse::decode(&mut body, v).map_err(|e| malformed("VoteResponse", e))?,
        ),
        Ok(ApiKey::BeginQuorumEpoch) => Message::BeginQuorumEpochResponse(
            BeginQuorumEpochResponse::decode(&mut body, v)
                .map_err(|e| malformed("BeginQuorumEpochResponse", e))?,
        ),
        Ok(ApiKey::EndQuorumEpoch) => Message::EndQuorumEpochResponse(
            EndQuorumEpochResponse::decode(&mut body, v)
                .map_err(|e| malformed("EndQuorumEpochResponse", e))?,
        ),
        Ok(ApiKey::Fetch) => Message::FetchResponse(
            FetchResponse::decode(&mut body, v).map_err(|e| malformed("FetchResponse", e))?,
        ),
        Ok(ApiKey::FetchSnapshot) => Message::FetchSnapshotResponse(
            FetchSnapshotResponse::decode(&mut body, v)
                .map_err(|e| malformed("FetchSnapshotResponse", e))?,
        ),
        Ok(ApiKey::ApiVersions) => Message::ApiVersionsResponse(
            ApiVersionsResponse::decode(&mut body, v)
                .map_err(|e| malformed("ApiVersionsResponse", e))?,
        ),
        Ok(ApiKey::UpdateRaftVoter) => Message::UpdateRaftVoterResponse(
            UpdateRaftVoterResponse::decode(&mut body, v)
                .map_err(|e| malformed("UpdateRaftVoterResponse", e))?,
        ),
        Ok(ApiKey::AddRaftVoter) => Message::AddRaftVoterResponse(
            AddRaftVoterResponse::decode(
                &mut body,
                crate::wire::add_raft_voter::response_encoding_version(v),
            )
            .map_err(|e| malformed("AddRaftVoterResponse", e))?,
        ),
        Ok(ApiKey::RemoveRaftVoter) => Message::RemoveRaftVoterResponse(
            RemoveRaftVoterResponse::decode(&mut body, v)
                .map_err(|e| malformed("RemoveRaftVoterResponse", e))?,
        ),
        _ => {
            return Err(CodecError::Malformed {
                what: "response",
                reason: format!("unexpected api key {api_key}"),
            })
        }
    })
}

/// Client-side decoders (used by the CLI client).
pub fn decode_client_response(
    body: Bytes,
    api_key: i16,
    api_version: i16,
) -> Result<ClientResponse, CodecError> {
    let mut b = body;
    let v = api_version;
    Ok(match ApiKey::try_from(api_key) {
        Ok(ApiKey::ApiVersions) => ClientResponse::ApiVersions(
            ApiVersionsResponse::decode(&mut b, v)
                .map_err(|e| malformed("ApiVersionsResponse", e))?,
        ),
        Ok(ApiKey::DescribeQuorum) => ClientResponse::DescribeQuorum(
            DescribeQuorumResponse::decode_bytes(&b, v).map_err(|e| CodecError::Malformed {
                what: "DescribeQuorumResponse",
                reason: e.to_string(),
            })?,
        ),
        Ok(ApiKey::AddRaftVoter) => ClientResponse::AddRaftVoter(
            AddRaftVoterResponse::decode(
                &mut b,
                crate::wire::add_raft_voter::response_encoding_version(v),
            )
            .map_err(|e| malformed("AddRaftVoterResponse", e))?,
        ),
        Ok(ApiKey::RemoveRaftVoter) => ClientResponse::RemoveRaftVoter(
            RemoveRaftVoterResponse::decode(&mut b, v)
                .map_err(|e| malformed("RemoveRaftVoterResponse", e))?,
        ),
        Ok(ApiKey::UpdateRaftVoter) => ClientResponse::UpdateRaftVoter(
            UpdateRaftVoterResponse::decode(&mut b, v)
                .map_err(|e| malformed("UpdateRaftVoterResponse", e))?,
        ),
        Ok(ApiKey::DescribeCluster) => ClientResponse::DescribeCluster(
            DescribeClusterResponse::decode(&mut b, v)
                .map_err(|e| malformed("DescribeClusterResponse", e))?,
        ),
        Ok(ApiKey::UpdateFeatures) => ClientResponse::UpdateFeatures(
            UpdateFeaturesResponse::decode(&mut b, v)
                .map_err(|e| malformed("UpdateFeaturesResponse", e))?,
        ),
        _ => {
            return Err(CodecError::Malformed {
                what: "response",
                reason: format!("unexpected api key {api_key}"),
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use kafka_protocol::messages::metadata_request::MetadataRequest as Req;

    #[test]
    fn unknown_key_and_version_are_unsupported_not_errors() {
        let mut p = BytesMut::new();
        p.put_i16(999);
        p.put_i16(0);
        p.put_i32(42);
        let (reply, incoming) = decode_request(p.freeze()).unwrap();
        assert_eq!(reply.correlation_id, 42);
        assert!(matches!(incoming, Incoming::Unsupported));
        let frame = unsupported_response(&reply, ApiVersionsResponse::default()).unwrap();
        // size | corr 42 | error 35
        assert_eq!(&frame[4..8], &42i32.to_be_bytes());
        assert_eq!(&frame[8..10], &35i16.to_be_bytes());
        let mut p = BytesMut::new();
        p.put_i16(ApiKey::DescribeQuorum as i16);
        p.put_i16(4);
        p.put_i32(7);
        assert!(matches!(
            decode_request(p.freeze()).unwrap().1,
            Incoming::Unsupported
        ));
        assert!(matches!(
            decode_request(Bytes::from_static(&[0, 1])),
            Err(CodecError::ShortHeader(2))
        ));
    }

    #[test]
    fn metadata_round_trip_at_every_served_version() {
        let info = BrokerInfo {
            node_id: 3,
            host: "127.0.0.1".into(),
            port: 9093,
            cluster_id: "cid".into(),
        };
        let metadata = apis::served(ApiKey::Metadata as i16).unwrap();
        for v in metadata.min..=metadata.max {
            let req = request_frame(ApiKey::Metadata as i16, v, 5, "t", &Req::default()).unwrap();
            let (reply, incoming) = decode_request(req.slice(4..)).unwrap();
            assert!(matches!(incoming, Incoming::Metadata(_)), "v{v}");
            let frame = metadata_response(&reply, &info).unwrap();
            let (corr, mut body) =
                response_body(frame.slice(4..), ApiKey::Metadata as i16, v).unwrap();
            assert_eq!(corr, 5);
            let resp = MetadataResponse::decode(&mut body, v).unwrap();
            assert_eq!(resp.brokers[0].node_id.0, 3);
            if v >= 2 {
                assert_eq!(resp.cluster_id.as_deref(), Some("cid"));
            }
        }
    }

    #[test]
    fn truncated_body_of_a_supported_request_is_malformed() {
        let req = request_frame(ApiKey::Vote as i16, 1, 1, "t", &VoteRequest::default()).unwrap();
        let cut = req.slice(4..req.len() - 2);
        // The schema walk finds it first, naming the field and the frame offset where input ends.
        match decode_request(cut) {
            Err(CodecError::Wire(WireError::Truncated { field, offset, .. })) => {
                assert!(field.starts_with("VoteRequest."), "{field}");
                assert_eq!(offset, req.len() - 2);
            }
            other => panic!("{other:?}"),
        }
    }
}
