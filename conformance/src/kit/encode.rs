//! Model messages → Kafka requests and responses, and the node's messages → model messages.
//!
//! The direction model → bytes is the kit's own (the in-process replay never needs it: there the
//! implementation builds its messages). The direction bytes → model reuses [`crate::mapping`]; the only
//! translation added here is the endpoint one: the mapping names replica `i`'s listener
//! `node<i>.conformance:<9000+i>`, the kit's replicas listen on real loopback ports, so every voter set
//! the node sends is rewritten from the kit's endpoints to the mapping's before [`mapping::mask_of`]
//! checks it (an endpoint the kit did not hand out is left as it is, and the mapping then refuses it).

use bytes::Bytes;
use kafka_protocol::messages::{
    begin_quorum_epoch_request, begin_quorum_epoch_response, end_quorum_epoch_request,
    end_quorum_epoch_response, fetch_request, fetch_response, vote_request, vote_response,
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, BrokerId, EndQuorumEpochRequest,
    EndQuorumEpochResponse, FetchRequest, FetchResponse, TopicName, VoteRequest, VoteResponse,
};
use kafka_protocol::protocol::StrBytes;
use kraft::log::{Batch, Record};
use kraft::node::{FetchEcho, Message, FETCH_ECHO_TAG};
use kraft::voter_set::{Endpoint, SupportedVersions, VoterNode, VoterSet};
use model::types::{ids, Entry, FetchKey, Id, Kind, Log, Mask, Msg};

use crate::mapping;

const TOPIC: &str = "__cluster_metadata";
/// Kafka's `Uuid.METADATA_TOPIC_ID` (Fetch v13+ names the topic by id).
const TOPIC_ID: uuid::Uuid = uuid::Uuid::from_u128(1);

/// The run's identity on the wire: the real listener of every replica (index = model id) and the
/// cluster id every request carries (Kafka refuses a request whose cluster id is not its own with
/// INCONSISTENT_CLUSTER_ID, and formats only a base64 UUID).
#[derive(Clone, Debug)]
pub struct Endpoints {
    pub ports: Vec<u16>,
    pub cluster_id: String,
}

impl Endpoints {
    /// The endpoints of servers 0 (the node, port unknown yet: 0) to 3, the played replicas at the
    /// addresses their listeners bound.
    pub fn played(cluster_id: &str, addrs: Vec<(Id, std::net::SocketAddr)>) -> Endpoints {
        let mut eps = Endpoints {
            ports: vec![0; 4],
            cluster_id: cluster_id.to_string(),
        };
        for (i, a) in addrs {
            eps.ports[i as usize] = a.port();
        }
        eps
    }

    /// Replica `i`'s one listener as the kit formats it and announces it.
    pub fn endpoint(&self, i: Id) -> Endpoint {
        Endpoint {
            name: mapping::LISTENER.to_string(),
            host: "127.0.0.1".to_string(),
            port: self.ports[i as usize],
        }
    }

    /// The voter node of `i` under model directory id `dir`, with its real endpoint.
    pub fn voter_node(&self, i: Id, dir: u8) -> VoterNode {
        VoterNode {
            key: mapping::replica_key_at(i, dir),
            listeners: vec![self.endpoint(i)],
            supported: SupportedVersions::CURRENT,
        }
    }

    /// A voter set with real endpoints (each voter's key as the model's set names it).
    pub fn voter_set(&self, set: model::types::VoterSet) -> Result<VoterSet, String> {
        let nodes = ids(set.ids()).map(|i| self.voter_node(i, set.dir(i).unwrap_or(0)));
        VoterSet::new(nodes).map_err(|e| e.to_string())
    }

    /// `--initial-controllers` for `kraft format` / `kafka-storage format`.
    pub fn initial_controllers(&self, mask: Mask) -> String {
        ids(mask)
            .map(|i| {
                format!(
                    "{i}@127.0.0.1:{}:{}",
                    self.ports[i as usize],
                    kraft::storage::format_directory_id(mapping::directory_id(i))
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The mask of a voter set the node sent ([`Self::voters_of`] without the directory ids).
    pub fn mask_of(&self, set: &VoterSet) -> Result<Mask, String> {
        self.voters_of(set).map(model::types::VoterSet::ids)
    }

    /// A voter set the node sent as the model's (its voter keys), its endpoints translated to the
    /// mapping's.
    pub fn voters_of(&self, set: &VoterSet) -> Result<model::types::VoterSet, String> {
        let nodes = set.nodes().map(|n| {
            let mut n = n.clone();
            if let Ok(i) = Id::try_from(n.key.id) {
                if (i as usize) < self.ports.len() && n.listeners == vec![self.endpoint(i)] {
                    n.listeners = vec![mapping::endpoint(i)];
                }
            }
            n
        });
        let canonical = VoterSet::new(nodes).map_err(|e| e.to_string())?;
        mapping::voters_of(&canonical)
    }

    /// The records of a Fetch response as model entries.
    pub fn records_of(&self, bytes: Option<&Bytes>) -> Result<Log, String> {
        let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
            return Ok(Log::default());
        };
        let batches = kraft::records::decode_batches(bytes.clone())
            .map_err(|e| format!("fetched records: {e}"))?;
        let mut out = Vec::new();
        for b in &batches {
            let epoch = u8::try_from(b.epoch).map_err(|_| format!("batch epoch {}", b.epoch))?;
            for r in &b.records {
                let kind = match r {
                    Record::Data(_) => Kind::Data,
                    Record::LeaderChange { .. } => Kind::LeaderChange,
                    Record::KRaftVersion(1) => Kind::KRaftVersion,
                    Record::KRaftVersion(v) => return Err(format!("KRaftVersionRecord level {v}")),
                    Record::Voters(set) => Kind::Voters(self.voters_of(set)?),
                };
                out.push(Entry { epoch, kind });
            }
        }
        Log::try_from(out)
    }

    /// Model entries from `offset` on as record batches (one batch per entry) written by `leader`.
    pub fn batches(&self, entries: &[Entry], offset: u8, leader: Id) -> Result<Bytes, String> {
        let mut batches = Vec::new();
        for (k, e) in entries.iter().enumerate() {
            let record = match e.kind {
                Kind::Data => Record::Data(Bytes::from_static(b"kit")),
                Kind::LeaderChange => Record::LeaderChange {
                    leader_id: i32::from(leader),
                    voters: Vec::new(),
                    granting_voters: Vec::new(),
                },
                Kind::KRaftVersion => Record::KRaftVersion(1),
                Kind::Voters(m) => Record::Voters(self.voter_set(m)?),
            };
            batches.push(Batch {
                base_offset: i64::from(offset) + k as i64,
                epoch: i32::from(e.epoch),
                append_time: 0,
                records: vec![record],
            });
        }
        kraft::records::encode_batches(&batches).map_err(|e| e.to_string())
    }
}

impl Endpoints {
    pub fn cluster(&self) -> Option<StrBytes> {
        Some(StrBytes::from_string(self.cluster_id.clone()))
    }
}

fn topic() -> TopicName {
    TopicName(StrBytes::from_static_str(TOPIC))
}

/// The request replica `src` sends for model message `msg` to `dst`. `hw` is the sender's HW (Fetch
/// v18 carries it); `leader_endpoint` is the sender's own listener (Begin/EndQuorumEpoch carry it).
pub fn request(
    eps: &Endpoints,
    src: Id,
    dst: Id,
    msg: &Msg,
    hw: Option<u8>,
) -> Result<Message, String> {
    let me = mapping::replica_key(src);
    let to = mapping::replica_key(dst);
    let own = eps.endpoint(src);
    Ok(match *msg {
        Msg::VoteRequest {
            epoch,
            voter_dir,
            last_epoch,
            last_offset,
        }
        | Msg::PreVoteRequest {
            epoch,
            voter_dir,
            last_epoch,
            last_offset,
        } => Message::VoteRequest(
            VoteRequest::default()
                .with_cluster_id(eps.cluster())
                .with_voter_id(BrokerId(to.id))
                .with_topics(vec![vote_request::TopicData::default()
                    .with_topic_name(topic())
                    .with_partitions(vec![vote_request::PartitionData::default()
                        .with_partition_index(0)
                        .with_replica_epoch(i32::from(epoch))
                        .with_replica_id(BrokerId(me.id))
                        .with_replica_directory_id(mapping::directory_id(src))
                        .with_voter_directory_id(mapping::directory_id_at(dst, voter_dir))
                        .with_last_offset_epoch(i32::from(last_epoch))
                        .with_last_offset(i64::from(last_offset))
                        .with_pre_vote(matches!(msg, Msg::PreVoteRequest { .. }))])]),
        ),
        Msg::BeginQuorumEpoch { epoch, voter_dir } => {
            use begin_quorum_epoch_request::{LeaderEndpoint, PartitionData, TopicData};
            Message::BeginQuorumEpochRequest(
                BeginQuorumEpochRequest::default()
                    .with_cluster_id(eps.cluster())
                    .with_voter_id(BrokerId(to.id))
                    .with_topics(vec![TopicData::default()
                        .with_topic_name(topic())
                        .with_partitions(vec![PartitionData::default()
                            .with_partition_index(0)
                            .with_voter_directory_id(mapping::directory_id_at(dst, voter_dir))
                            .with_leader_id(BrokerId(me.id))
                            .with_leader_epoch(i32::from(epoch))])])
                    .with_leader_endpoints(vec![LeaderEndpoint::default()
                        .with_name(StrBytes::from_string(own.name))
                        .with_host(StrBytes::from_string(own.host))
                        .with_port(own.port)]),
            )
        }
        Msg::EndQuorumEpoch { epoch } => {
            use end_quorum_epoch_request::{LeaderEndpoint, PartitionData, TopicData};
            Message::EndQuorumEpochRequest(
                EndQuorumEpochRequest::default()
                    .with_cluster_id(eps.cluster())
                    .with_topics(vec![TopicData::default()
                        .with_topic_name(topic())
                        .with_partitions(vec![PartitionData::default()
                            .with_partition_index(0)
                            .with_leader_id(BrokerId(me.id))
                            .with_leader_epoch(i32::from(epoch))])])
                    .with_leader_endpoints(vec![LeaderEndpoint::default()
                        .with_name(StrBytes::from_string(own.name))
                        .with_host(StrBytes::from_string(own.host))
                        .with_port(own.port)]),
            )
        }
        Msg::FetchRequest(k) => Message::FetchRequest(
            FetchRequest::default()
                .with_cluster_id(eps.cluster())
                .with_replica_state(
                    fetch_request::ReplicaState::default().with_replica_id(BrokerId(me.id)),
                )
                .with_max_wait_ms(0)
                .with_topics(vec![fetch_request::FetchTopic::default()
                    .with_topic(topic())
                    .with_topic_id(TOPIC_ID)
                    .with_partitions(vec![fetch_request::FetchPartition::default()
                        .with_partition(0)
                        .with_current_leader_epoch(i32::from(k.epoch))
                        .with_fetch_offset(i64::from(k.fetch_offset))
                        .with_last_fetched_epoch(i32::from(k.last_fetched_epoch))
                        .with_log_start_offset(0)
                        .with_high_watermark(hw.map_or(-1, i64::from))
                        .with_replica_directory_id(mapping::directory_id_at(
                            src,
                            k.replica_dir,
                        ))])]),
        ),
        Msg::VoteResponse { .. } | Msg::FetchResponse(_) => {
            return Err(format!("{msg:?} is a response, not a request"))
        }
    })
}

/// The response replica `src` gives to the node's request `req` (whose model message is `model_req`),
/// from the model's response message (`None` for Begin/EndQuorumEpoch, whose responses the model leaves
/// out: then the acknowledgement is built from the replica's epoch and leader after the step).
pub fn response(
    eps: &Endpoints,
    src: Id,
    req: &Message,
    model_resp: Option<&Msg>,
    (epoch, leader): (u8, Option<Id>),
) -> Result<Message, String> {
    let leader_id = |l: Option<Id>| BrokerId(l.map_or(-1, i32::from));
    Ok(match (req, model_resp) {
        (
            Message::VoteRequest(_),
            Some(Msg::VoteResponse {
                epoch,
                granted,
                error,
                leader,
            }),
        ) => Message::VoteResponse(VoteResponse::default().with_topics(
            vec![vote_response::TopicData::default()
                .with_topic_name(topic())
                .with_partitions(vec![vote_response::PartitionData::default()
                    .with_partition_index(0)
                    .with_error_code(mapping::kafka_code(*error))
                    .with_leader_id(leader_id(*leader))
                    .with_leader_epoch(i32::from(*epoch))
                    .with_vote_granted(*granted)])],
        )),
        (Message::FetchRequest(_), Some(Msg::FetchResponse(r))) => {
            let mut p = fetch_response::PartitionData::default()
                .with_partition_index(0)
                .with_error_code(mapping::kafka_code(r.error))
                .with_high_watermark(r.high_watermark.map_or(-1, i64::from))
                .with_log_start_offset(0)
                .with_current_leader(
                    fetch_response::LeaderIdAndEpoch::default()
                        .with_leader_id(leader_id(r.leader_id))
                        .with_leader_epoch(i32::from(r.leader_epoch)),
                )
                .with_records(Some(eps.batches(
                    r.records.as_slice(),
                    r.request.fetch_offset,
                    src,
                )?));
            if let Some(id) = r.snapshot_id {
                p = p.with_snapshot_id(
                    fetch_response::SnapshotId::default()
                        .with_end_offset(i64::from(id.end))
                        .with_epoch(i32::from(id.epoch)),
                );
            }
            if let Some((e, end)) = r.diverging {
                p = p.with_diverging_epoch(
                    fetch_response::EpochEndOffset::default()
                        .with_epoch(i32::from(e))
                        .with_end_offset(i64::from(end)),
                );
            }
            let endpoints = r
                .leader_id
                .map(|l| {
                    let e = eps.endpoint(l);
                    vec![fetch_response::NodeEndpoint::default()
                        .with_node_id(BrokerId(i32::from(l)))
                        .with_host(StrBytes::from_string(e.host))
                        .with_port(i32::from(e.port))]
                })
                .unwrap_or_default();
            Message::FetchResponse(
                FetchResponse::default()
                    .with_node_endpoints(endpoints)
                    .with_responses(vec![fetch_response::FetchableTopicResponse::default()
                        .with_topic(topic())
                        .with_topic_id(TOPIC_ID)
                        .with_partitions(vec![p])]),
            )
        }
        (Message::BeginQuorumEpochRequest(_), None) => Message::BeginQuorumEpochResponse(
            BeginQuorumEpochResponse::default().with_topics(vec![
                begin_quorum_epoch_response::TopicData::default()
                    .with_topic_name(topic())
                    .with_partitions(vec![begin_quorum_epoch_response::PartitionData::default()
                        .with_partition_index(0)
                        .with_leader_id(leader_id(leader))
                        .with_leader_epoch(i32::from(epoch))]),
            ]),
        ),
        (Message::EndQuorumEpochRequest(_), None) => {
            Message::EndQuorumEpochResponse(EndQuorumEpochResponse::default().with_topics(vec![
                end_quorum_epoch_response::TopicData::default()
                    .with_topic_name(topic())
                    .with_partitions(vec![end_quorum_epoch_response::PartitionData::default()
                        .with_partition_index(0)
                        .with_leader_id(leader_id(leader))
                        .with_leader_epoch(i32::from(epoch))]),
            ]))
        }
        (req, resp) => {
            return Err(format!(
                "no response shape for request {} with model answer {resp:?}",
                name(req)
            ))
        }
    })
}

/// The model message of a message the node sent from `src`. A Fetch response is read against the
/// request the kit sent (`sent`): Kafka has no request echo, so the kit supplies `kraft`'s private one
/// before the mapping reads it, and the records are read with [`Endpoints::records_of`].
pub fn abstract_message(
    eps: &Endpoints,
    msg: &Message,
    src: Id,
    sent: Option<FetchKey>,
) -> Result<Msg, String> {
    match (msg, sent) {
        (Message::FetchResponse(r), Some(k)) => {
            let mut r = r.clone();
            let mut records = None;
            for t in &mut r.responses {
                for p in &mut t.partitions {
                    let echo = FetchEcho {
                        epoch: i32::from(k.epoch),
                        fetch_offset: i64::from(k.fetch_offset),
                        last_fetched_epoch: i32::from(k.last_fetched_epoch),
                    };
                    p.unknown_tagged_fields
                        .insert(FETCH_ECHO_TAG, echo.encode());
                    if records.is_none() {
                        records = Some(eps.records_of(p.records.as_ref())?);
                    }
                    // Read by the kit (endpoint translation), not by the mapping.
                    p.records = None;
                }
            }
            match mapping::abstract_message(&Message::FetchResponse(r), src)? {
                Msg::FetchResponse(mut f) => {
                    f.records = records.unwrap_or_default();
                    // The answer to the kit's request on its connection: that request's key.
                    f.request.replica_dir = k.replica_dir;
                    Ok(Msg::FetchResponse(f))
                }
                other => Err(format!("FetchResponse read as {other:?}")),
            }
        }
        _ => mapping::abstract_message(msg, src),
    }
}

/// Kafka's name of a message.
pub fn name(msg: &Message) -> &'static str {
    match msg {
        Message::VoteRequest(_) => "VoteRequest",
        Message::VoteResponse(_) => "VoteResponse",
        Message::BeginQuorumEpochRequest(_) => "BeginQuorumEpochRequest",
        Message::BeginQuorumEpochResponse(_) => "BeginQuorumEpochResponse",
        Message::EndQuorumEpochRequest(_) => "EndQuorumEpochRequest",
        Message::EndQuorumEpochResponse(_) => "EndQuorumEpochResponse",
        Message::FetchRequest(_) => "FetchRequest",
        Message::FetchResponse(_) => "FetchResponse",
        Message::FetchSnapshotRequest(_) => "FetchSnapshotRequest",
        Message::FetchSnapshotResponse(_) => "FetchSnapshotResponse",
        Message::ApiVersionsRequest(_) => "ApiVersionsRequest",
        Message::ApiVersionsResponse(_) => "ApiVersionsResponse",
        Message::UpdateRaftVoterRequest(_) => "UpdateRaftVoterRequest",
        Message::UpdateRaftVoterResponse(_) => "UpdateRaftVoterResponse",
        Message::AddRaftVoterRequest(_) => "AddRaftVoterRequest",
        Message::AddRaftVoterResponse(_) => "AddRaftVoterResponse",
        Message::RemoveRaftVoterRequest(_) => "RemoveRaftVoterRequest",
        Message::RemoveRaftVoterResponse(_) => "RemoveRaftVoterResponse",
    }
}

/// The error code of a response's first partition (`$topics`: its list of topics).
macro_rules! first_partition_error {
    ($topics:expr) => {
        $topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| p.error_code)
    };
}

/// The error code of a response (top level first, then the partition's), for coverage.
pub fn error_code(msg: &Message) -> i16 {
    let top_then = |top: i16, part: Option<i16>| if top != 0 { top } else { part.unwrap_or(0) };
    match msg {
        Message::VoteResponse(r) => top_then(r.error_code, first_partition_error!(r.topics)),
        Message::BeginQuorumEpochResponse(r) => {
            top_then(r.error_code, first_partition_error!(r.topics))
        }
        Message::EndQuorumEpochResponse(r) => {
            top_then(r.error_code, first_partition_error!(r.topics))
        }
        Message::FetchResponse(r) => top_then(r.error_code, first_partition_error!(r.responses)),
        Message::FetchSnapshotResponse(r) => {
            top_then(r.error_code, first_partition_error!(r.topics))
        }
        _ => 0,
    }
}
