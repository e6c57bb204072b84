//! The KRaft node: a deterministic state machine.
//!
//! Inputs: peer messages (`handle`), client requests (`handle_client`), client appends (`append`) and time
//! (`tick`). Outputs: [`Output`] with effects to persist first and messages to send after.
//!
//! Shell contract:
//! 1. Apply `Output::effects` in order (persist the election state, fsync) **before** sending any message.
//! 2. A response to a peer request handed to `handle` is in the `Output` of that same call, addressed to the
//!    requester; the shell writes it to the requesting connection. Other messages are new requests.
//! 3. Client replies carry the `ClientId` given to `handle_client`; Add/Remove replies may come later, in the
//!    output of a later `handle` or `tick`.

use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, ApiVersionsRequest, ApiVersionsResponse,
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest, EndQuorumEpochResponse,
    FetchRequest, FetchResponse, RemoveRaftVoterRequest, RemoveRaftVoterResponse, UpdateRaftVoterRequest,
    UpdateRaftVoterResponse, VoteRequest, VoteResponse,
};
use uuid::Uuid;

use crate::voter_set::{Endpoint, ReplicaKey, VoterSet};
use crate::wire::describe_quorum::{DescribeQuorumRequest, DescribeQuorumResponse};

/// Milliseconds on the shell's monotonic clock. The core never reads a clock itself.
pub type Millis = u64;

/// Raft messages between voters and observers: kafka-protocol structs, so the shell only frames bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    VoteRequest(VoteRequest),
    VoteResponse(VoteResponse),
    BeginQuorumEpochRequest(BeginQuorumEpochRequest),
    BeginQuorumEpochResponse(BeginQuorumEpochResponse),
    EndQuorumEpochRequest(EndQuorumEpochRequest),
    EndQuorumEpochResponse(EndQuorumEpochResponse),
    FetchRequest(FetchRequest),
    FetchResponse(FetchResponse),
}

/// Identifies a client request so its reply can be routed back by the shell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub u64);

/// Requests from admin clients and operators (answered through `Output::client_replies`).
#[derive(Clone, Debug, PartialEq)]
pub enum ClientRequest {
    ApiVersions(ApiVersionsRequest),
    DescribeQuorum { version: i16, request: DescribeQuorumRequest },
    AddRaftVoter(AddRaftVoterRequest),
    RemoveRaftVoter(RemoveRaftVoterRequest),
    UpdateRaftVoter(UpdateRaftVoterRequest),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ClientResponse {
    ApiVersions(ApiVersionsResponse),
    DescribeQuorum(DescribeQuorumResponse),
    AddRaftVoter(AddRaftVoterResponse),
    RemoveRaftVoter(RemoveRaftVoterResponse),
    UpdateRaftVoter(UpdateRaftVoterResponse),
}

/// Election state that must be durable before the messages that depend on it leave the node
/// (Kafka's `quorum-state` file).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ElectionState {
    pub epoch: i32,
    pub voted: Option<ReplicaKey>,
    pub leader_id: Option<i32>,
}

/// Side effects for the shell, applied in order before any message of the same output is sent.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Write the election state atomically and durably.
    PersistElectionState(ElectionState),
}

/// Everything one input produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub effects: Vec<Effect>,
    /// Messages to peers: (destination node id, message).
    pub messages: Vec<(i32, Message)>,
    pub client_replies: Vec<(ClientId, ClientResponse)>,
}

/// How the node learns its first voter set.
#[derive(Clone, Debug, PartialEq)]
pub enum Bootstrap {
    /// `kraft.version` 0: a configured static set, no VotersRecord; membership changes are refused.
    Static(VoterSet),
    /// `kraft.version` 1: the formatted bootstrap checkpoint, a voter set at offset −1.
    Checkpoint(VoterSet),
}

/// Static configuration of a node.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeConfig {
    pub cluster_id: String,
    pub node_id: i32,
    pub directory_id: Uuid,
    /// This node's listeners; the first is the default listener (sent in BeginQuorumEpoch, AddRaftVoter).
    pub listeners: Vec<Endpoint>,
    pub bootstrap: Bootstrap,
    /// Election timeout base; the actual timeout is drawn from [base, 2·base) with the seeded RNG.
    pub election_timeout_ms: Millis,
    /// Follower fetch timeout: no successful fetch for this long starts an election (voters only).
    pub fetch_timeout_ms: Millis,
    /// Interval between fetches from the leader.
    pub fetch_interval_ms: Millis,
    /// Leader check-quorum window (Kafka: 1.5 × fetch timeout).
    pub check_quorum_timeout_ms: Millis,
    /// Pending Add/Remove reply deadline (the record stays in the log after it).
    pub request_timeout_ms: Millis,
    /// An observer untracked for this long is dropped from the leader's state.
    pub observer_expiry_ms: Millis,
    /// Seed of the election-timeout RNG: the same seed and inputs give the same run.
    pub seed: u64,
}
