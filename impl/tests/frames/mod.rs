//! Sample frames of every served API at every served version: peer traffic captured from a simulated
//! 4-node cluster (election, replication with records, a membership change), client requests and the
//! node's answers, and hand-built EndQuorumEpoch/UpdateRaftVoter frames the run does not send.

#![allow(dead_code)]

use bytes::Bytes;
use kafka_protocol::messages::end_quorum_epoch_request::{
    LeaderEndpoint, PartitionData as EndPartition, ReplicaInfo, TopicData as EndTopic,
};
use kafka_protocol::messages::end_quorum_epoch_response::{
    NodeEndpoint, PartitionData as EndRespPartition, TopicData as EndRespTopic,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::update_raft_voter_request::{KRaftVersionFeature, Listener};
use kafka_protocol::messages::update_raft_voter_response::CurrentLeader;
use kafka_protocol::messages::{
    AddRaftVoterResponse, ApiVersionsRequest, BrokerId, DescribeClusterRequest,
    EndQuorumEpochRequest, EndQuorumEpochResponse, MetadataRequest, MetadataResponse,
    RemoveRaftVoterResponse, TopicName, UpdateRaftVoterRequest, UpdateRaftVoterResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kraft::node::{ClientRequest, ClientResponse, Message, Timer};
use kraft::server::client::describe_frame;
use kraft::server::codec::{self, BrokerInfo, CodecError, Reply};
use kraft_sim::{self as sim, Sim};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A request frame as the node's listener reads it.
    Request,
    /// A response to a Raft RPC, as a node's peer link reads it.
    PeerResponse,
    /// A response as the CLI's client reads it.
    ClientResponse,
}

impl Side {
    /// The cargo-fuzz target that decodes this side (`impl/fuzz/fuzz_targets`).
    pub fn fuzz_target(self) -> &'static str {
        match self {
            Side::Request => "request_decoder",
            Side::PeerResponse => "peer_response_decoder",
            Side::ClientResponse => "client_response_decoder",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Sample {
    pub name: String,
    pub side: Side,
    pub api_key: i16,
    pub version: i16,
    /// The frame without its size prefix.
    pub payload: Bytes,
}

impl Sample {
    /// The fuzz targets' input: requests as the payload; responses as api key, version, payload.
    pub fn fuzz_input(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.side != Side::Request {
            out.extend_from_slice(&self.api_key.to_be_bytes());
            out.extend_from_slice(&self.version.to_be_bytes());
        }
        out.extend_from_slice(&self.payload);
        out
    }
}

/// (api key, min, max) of every API the node serves, Metadata included.
pub fn served() -> Vec<(i16, i16, i16)> {
    kraft::wire::apis::SERVED_APIS
        .iter()
        .map(|a| (a.key as i16, a.min, a.max))
        .collect()
}

/// Decodes a payload as its receiver does.
pub fn decode(side: Side, api_key: i16, version: i16, payload: Bytes) -> Result<(), CodecError> {
    match side {
        Side::Request => codec::decode_request(payload).map(|_| ()),
        Side::PeerResponse => {
            let (_, body) = codec::response_body(payload, api_key, version)?;
            codec::decode_peer_response(body, api_key, version).map(|_| ())
        }
        Side::ClientResponse => {
            let (_, mut body) = codec::response_body(payload, api_key, version)?;
            if api_key == 3 {
                MetadataResponse::decode(&mut body, version)
                    .map(|_| ())
                    .map_err(|e| CodecError::Malformed {
                        what: "MetadataResponse",
                        reason: e.to_string(),
                    })
            } else {
                codec::decode_client_response(body, api_key, version).map(|_| ())
            }
        }
    }
}

fn payload(frame: Bytes) -> Bytes {
    frame.slice(4..)
}

fn request<M: Encodable>(out: &mut Vec<Sample>, name: &str, key: i16, versions: (i16, i16), m: &M) {
    for v in versions.0..=versions.1 {
        if let Ok(frame) = codec::request_frame(key, v, 7, "sample", m) {
            out.push(Sample {
                name: format!("{name}_v{v}_{}", out.len()),
                side: Side::Request,
                api_key: key,
                version: v,
                payload: payload(frame),
            });
        }
    }
}

fn response(
    out: &mut Vec<Sample>,
    name: &str,
    side: Side,
    key: i16,
    versions: (i16, i16),
    encode: impl Fn(&Reply) -> Result<Bytes, CodecError>,
) {
    for v in versions.0..=versions.1 {
        let reply = Reply {
            correlation_id: 7,
            api_key: key,
            api_version: v,
        };
        if let Ok(frame) = encode(&reply) {
            out.push(Sample {
                name: format!("{name}_v{v}_{}", out.len()),
                side,
                api_key: key,
                version: v,
                payload: payload(frame),
            });
        }
    }
}

fn range(key: i16) -> (i16, i16) {
    served()
        .into_iter()
        .find(|&(k, _, _)| k == key)
        .map(|(_, min, max)| (min, max))
        .expect("served api")
}

/// Delivers everything in flight, keeping a copy of each message.
fn drain(sim: &mut Sim, seen: &mut Vec<Message>) {
    let mut n = 0;
    while !sim.network.is_empty() && n < 10_000 {
        seen.push(sim.network[0].msg.clone());
        sim.deliver(0);
        n += 1;
    }
}

fn captured() -> (Vec<Message>, Vec<ClientResponse>, Vec<ClientRequest>) {
    let mut sim = Sim::new(3, 1, 11).expect("sim");
    let mut seen = Vec::new();
    sim.fire(1, Timer::Election);
    drain(&mut sim, &mut seen);
    let _ = sim.append(1, &[b"alpha", b"beta"]);
    for _ in 0..4 {
        for id in 2..=4 {
            sim.fire(id, Timer::Fetch);
        }
        drain(&mut sim, &mut seen);
    }
    // A replica that joins after the leader's snapshot: a Fetch answered with a SnapshotId, then
    // FetchSnapshot requests and chunks.
    let mut snap = Sim::new(1, 1, 11).expect("sim");
    snap.crash(2);
    snap.elect(1);
    let _ = snap.append(1, &[b"alpha"]);
    snap.replicate(2);
    let id = kraft::log::SnapshotId {
        end_offset: snap.node(1).high_watermark().expect("hw"),
        epoch: snap.node(1).epoch(),
    };
    assert_eq!(snap.take_snapshot(1), Some(id), "a snapshot at the HW");
    snap.restart(2).expect("restart");
    snap.fire(2, Timer::Fetch);
    for _ in 0..3 {
        drain(&mut snap, &mut seen);
        snap.fire(2, Timer::Fetch);
    }
    let requests = vec![
        ClientRequest::ApiVersions(ApiVersionsRequest::default()),
        sim::add_voter_request(4),
        sim::remove_voter_request(3),
    ];
    let mut replies = Vec::new();
    for r in &requests {
        replies.extend(sim.client(1, r.clone()));
        drain(&mut sim, &mut seen);
    }
    (seen, replies, requests)
}

pub fn samples() -> Vec<Sample> {
    let mut out = Vec::new();
    let (messages, replies, client_requests) = captured();
    for m in &messages {
        match m {
            Message::VoteRequest(r) => request(&mut out, "vote", 52, range(52), r),
            Message::BeginQuorumEpochRequest(r) => request(&mut out, "begin", 53, range(53), r),
            Message::EndQuorumEpochRequest(r) => request(&mut out, "end", 54, range(54), r),
            Message::FetchRequest(r) => request(&mut out, "fetch", 1, range(1), r),
            Message::FetchSnapshotRequest(r) => {
                request(&mut out, "fetch_snapshot", 59, range(59), r)
            }
            response_message => {
                let key = match response_message {
                    Message::VoteResponse(_) => 52,
                    Message::BeginQuorumEpochResponse(_) => 53,
                    Message::EndQuorumEpochResponse(_) => 54,
                    Message::FetchSnapshotResponse(_) => 59,
                    _ => 1,
                };
                response(
                    &mut out,
                    "resp",
                    Side::PeerResponse,
                    key,
                    range(key),
                    |reply| codec::peer_response(reply, response_message),
                );
            }
        }
    }
    let end = EndQuorumEpochRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str("sim-cluster")))
        .with_topics(vec![EndTopic::default()
            .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
            .with_partitions(vec![EndPartition::default()
                .with_leader_id(BrokerId(1))
                .with_leader_epoch(3)
                .with_preferred_successors(vec![2, 3])
                .with_preferred_candidates(vec![ReplicaInfo::default()
                    .with_candidate_id(BrokerId(2))
                    .with_candidate_directory_id(sim::directory_id(2))])])])
        .with_leader_endpoints(vec![LeaderEndpoint::default()
            .with_name(StrBytes::from_static_str("CONTROLLER"))
            .with_host(StrBytes::from_static_str("localhost"))
            .with_port(9093)]);
    request(&mut out, "end", 54, range(54), &end);
    let end_response = Message::EndQuorumEpochResponse(
        EndQuorumEpochResponse::default()
            .with_topics(vec![EndRespTopic::default()
                .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
                .with_partitions(vec![EndRespPartition::default()
                    .with_leader_id(BrokerId(1))
                    .with_leader_epoch(3)])])
            .with_node_endpoints(vec![NodeEndpoint::default()
                .with_node_id(BrokerId(1))
                .with_host(StrBytes::from_static_str("localhost"))
                .with_port(9093)]),
    );
    response(
        &mut out,
        "end_resp",
        Side::PeerResponse,
        54,
        range(54),
        |reply| codec::peer_response(reply, &end_response),
    );

    // Client requests.
    for r in &client_requests {
        match r {
            ClientRequest::ApiVersions(_) => {
                let req = ApiVersionsRequest::default()
                    .with_client_software_name(StrBytes::from_static_str("kraft"))
                    .with_client_software_version(StrBytes::from_static_str("0.1.0"));
                request(&mut out, "api_versions", 18, range(18), &req);
            }
            ClientRequest::AddRaftVoter { request: req, .. } => {
                request(&mut out, "add", 80, range(80), req);
                // v1 (KIP-1186): kafka-protocol 0.18 cannot encode it; v0's frame with the version set
                // to 1 and `AckWhenCommitted=false` before the (empty) final tagged-field section.
                let v0 = payload(codec::request_frame(80, 0, 7, "sample", req).expect("v0 frame"));
                assert_eq!(
                    v0.last(),
                    Some(&0),
                    "no top-level tagged fields in the sample"
                );
                let mut v1 = v0[..v0.len() - 1].to_vec();
                v1[2..4].copy_from_slice(&1i16.to_be_bytes());
                v1.extend_from_slice(&[0, 0]);
                out.push(Sample {
                    name: format!("add_v1_{}", out.len()),
                    side: Side::Request,
                    api_key: 80,
                    version: 1,
                    payload: Bytes::from(v1),
                });
            }
            ClientRequest::RemoveRaftVoter(req) => request(&mut out, "remove", 81, range(81), req),
            _ => {}
        }
    }
    let update = UpdateRaftVoterRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str("sim-cluster")))
        .with_current_leader_epoch(2)
        .with_voter_id(2)
        .with_voter_directory_id(sim::directory_id(2))
        .with_listeners(vec![Listener::default()
            .with_name(StrBytes::from_static_str("CONTROLLER"))
            .with_host(StrBytes::from_static_str("localhost"))
            .with_port(9094)])
        .with_k_raft_version_feature(
            KRaftVersionFeature::default()
                .with_min_supported_version(0)
                .with_max_supported_version(1),
        );
    request(&mut out, "update", 82, range(82), &update);
    let features =
        kafka_protocol::messages::UpdateFeaturesRequest::default().with_feature_updates(vec![
            kafka_protocol::messages::update_features_request::FeatureUpdateKey::default()
                .with_feature(StrBytes::from_static_str("kraft.version"))
                .with_max_version_level(1),
        ]);
    request(&mut out, "update_features", 57, range(57), &features);
    let validate = features.with_validate_only(true);
    request(&mut out, "update_features_validate", 57, (1, 2), &validate);
    let refused = kraft::node::FeatureRefusal::Busy;
    let answer = ClientResponse::UpdateFeatures(kraft::node::features_response(
        1,
        &[StrBytes::from_static_str("kraft.version")],
        Some(&refused),
    ));
    response(
        &mut out,
        "features_resp",
        Side::ClientResponse,
        57,
        range(57),
        |reply| codec::client_response(reply, &answer),
    );
    let metadata = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str("t"))))]));
    request(&mut out, "metadata", 3, range(3), &metadata);
    let (min, max) = range(55);
    for v in min..=max {
        let req = kraft::wire::DescribeQuorumRequest::for_metadata_partition();
        if let Ok(frame) = describe_frame(v, 7, &req) {
            out.push(Sample {
                name: format!("describe_v{v}"),
                side: Side::Request,
                api_key: 55,
                version: v,
                payload: payload(frame),
            });
        }
    }

    // Client responses: the node's answers plus DescribeQuorum and Metadata.
    for r in &replies {
        let key = match r {
            ClientResponse::ApiVersions(_) => 18,
            ClientResponse::DescribeQuorum(_) => 55,
            ClientResponse::AddRaftVoter(_) => 80,
            ClientResponse::RemoveRaftVoter(_) => 81,
            ClientResponse::UpdateRaftVoter(_) => 82,
            ClientResponse::DescribeCluster(_) => 60,
            ClientResponse::UpdateFeatures(_) => 57,
        };
        response(
            &mut out,
            "client_resp",
            Side::ClientResponse,
            key,
            range(key),
            |reply| codec::client_response(reply, r),
        );
    }
    let mut sim = Sim::new(3, 0, 5).expect("sim");
    sim.elect(1);
    sim.replicate(3);
    for v in min..=max {
        let d = ClientResponse::DescribeQuorum(sim.describe(1, v));
        response(
            &mut out,
            "describe_resp",
            Side::ClientResponse,
            55,
            (v, v),
            |reply| codec::client_response(reply, &d),
        );
    }
    let message = || Some(StrBytes::from_static_str("sample"));
    let changes = [
        ClientResponse::AddRaftVoter(AddRaftVoterResponse::default().with_error_message(message())),
        ClientResponse::RemoveRaftVoter(
            RemoveRaftVoterResponse::default().with_error_message(message()),
        ),
        ClientResponse::UpdateRaftVoter(
            UpdateRaftVoterResponse::default().with_current_leader(
                CurrentLeader::default()
                    .with_leader_id(BrokerId(1))
                    .with_leader_epoch(2)
                    .with_host(StrBytes::from_static_str("localhost"))
                    .with_port(9093),
            ),
        ),
    ];
    for (key, r) in [80, 81, 82].into_iter().zip(&changes) {
        response(
            &mut out,
            "change_resp",
            Side::ClientResponse,
            key,
            range(key),
            |reply| codec::client_response(reply, r),
        );
    }
    // DescribeCluster (KIP-919): a controller request, and the elected node's answer.
    let dc = DescribeClusterRequest::default()
        .with_endpoint_type(2)
        .with_include_cluster_authorized_operations(true);
    request(&mut out, "describe_cluster", 60, range(60), &dc);
    // v0 has no EndpointType: the default request is the only one it can carry.
    request(
        &mut out,
        "describe_cluster",
        60,
        range(60),
        &DescribeClusterRequest::default(),
    );
    for v in range(60).0..=range(60).1 {
        let resp = sim.client(
            1,
            ClientRequest::DescribeCluster {
                version: v,
                request: dc.clone(),
            },
        );
        let r = resp.first().expect("a DescribeCluster answer").clone();
        response(
            &mut out,
            "describe_cluster_resp",
            Side::ClientResponse,
            60,
            (v, v),
            |reply| codec::client_response(reply, &r),
        );
    }
    let info = BrokerInfo {
        node_id: 1,
        host: "localhost".into(),
        port: 9093,
        cluster_id: "sim-cluster".into(),
    };
    response(
        &mut out,
        "metadata_resp",
        Side::ClientResponse,
        3,
        range(3),
        |reply| codec::metadata_response(reply, &info),
    );
    out
}
