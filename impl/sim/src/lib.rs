//! A deterministic in-process cluster for tests and benchmarks: N nodes over [`MemoryLog`], a network the
//! caller controls (deliver, drop, duplicate, in any order), per-node clocks, crash and restart from the
//! durable state only (log and persisted election state).
//!
//! It plays the shell of the core's contract (`kraft::node`) in memory: effects are applied before an
//! output's messages enter the network, every flush completes at once, snapshot files are byte vectors. It
//! steps nodes through [`Harness`] (a timer fired on command, a fetch to a chosen peer), which is how the
//! scenarios and the model's traces pick one schedule among those a real clock and network allow.

use std::collections::BTreeMap;

use bytes::Bytes;
use uuid::Uuid;

use kraft::log::{MemoryLog, RaftLog, SnapshotId, SnapshotMeta};
use kraft::node::{
    AppendError, Bootstrap, ClientId, ClientRequest, ClientResponse, Effect, ElectionState,
    Harness, Message, Millis, Node, NodeConfig, NodeError, Output, Role, StepError, Timer,
};
use kraft::time::virtual_wall_clock;
use kraft::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};
use kraft::wire::describe_quorum::{DescribeQuorumRequest, DescribeQuorumResponse};

/// A message in flight.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    pub from: i32,
    pub to: i32,
    pub msg: Message,
}

/// One simulated replica: the running node (None while crashed) and its durable state.
pub struct SimNode {
    pub config: NodeConfig,
    pub node: Option<Node>,
    /// The last persisted election state (what survives a crash).
    pub persisted: ElectionState,
    /// The durable log: the node's log effects applied in order (every flush completes at once).
    pub storage: MemoryLog,
    /// The log kept across a crash: `storage` at the crash.
    pub crashed_log: Option<MemoryLog>,
    pub clock: Millis,
    /// The snapshot files (in memory), by id, and a download in progress (the `.part` file).
    pub snapshot_files: BTreeMap<SnapshotId, Bytes>,
    pub partial_snapshot: Option<(SnapshotId, Vec<u8>)>,
    /// What the bootstrap snapshot said when the node last crashed (its time: when it first started).
    pub bootstrap: Option<SnapshotMeta>,
}

/// Reads a snapshot file with the storage's parser: what the core needs to know of it.
pub fn snapshot_meta(id: SnapshotId, bytes: &Bytes) -> Result<SnapshotMeta, String> {
    let snapshot = kraft::records::decode_snapshot(bytes.clone())
        .map_err(|e| format!("snapshot {id}: {e}"))?;
    Ok(SnapshotMeta {
        id,
        size: bytes.len() as u64,
        kraft_version: snapshot.kraft_version.unwrap_or(0),
        voters: snapshot.voters,
        last_contained_log_timestamp: snapshot.last_contained_log_timestamp,
    })
}

/// The simulated cluster.
pub struct Sim {
    pub nodes: BTreeMap<i32, SimNode>,
    pub network: Vec<Envelope>,
    pub client_replies: Vec<(i32, ClientId, ClientResponse)>,
    /// Transitions a node refused, in order: (node id, error).
    pub refused: Vec<(i32, StepError)>,
    next_client: u64,
    /// AddRaftVoter / RemoveRaftVoter sent by a peer (auto-join), served as the client requests a shell
    /// decodes them as: (serving node, client id) → the requester their answer goes back to.
    peer_clients: BTreeMap<(i32, ClientId), i32>,
    next_peer_client: u64,
}

/// Directory id of simulated node `id` (deterministic, never nil).
pub fn directory_id(id: i32) -> Uuid {
    Uuid::from_u128(0x1000 + id as u128)
}

/// Replica key of simulated node `id`.
pub fn key(id: i32) -> ReplicaKey {
    ReplicaKey::new(id, directory_id(id))
}

/// Default listener of simulated node `id`.
pub fn listener(id: i32) -> Endpoint {
    Endpoint {
        name: "CONTROLLER".into(),
        host: "localhost".into(),
        port: 9000 + id as u16,
    }
}

/// Voter node of simulated node `id`.
pub fn voter_node(id: i32) -> VoterNode {
    VoterNode {
        key: key(id),
        listeners: vec![listener(id)],
        supported: SupportedVersions::CURRENT,
    }
}

/// A voter set of simulated nodes.
pub fn voter_set(ids: &[i32]) -> VoterSet {
    VoterSet::new(ids.iter().map(|&id| voter_node(id))).expect("ids are distinct and non-empty")
}

/// A static voter set (`controller.quorum.voters`) of simulated nodes.
pub fn static_voter_set(ids: &[i32]) -> VoterSet {
    VoterSet::new(ids.iter().map(|&id| VoterNode {
        key: ReplicaKey::without_directory(id),
        supported: SupportedVersions::STATIC,
        ..voter_node(id)
    }))
    .expect("ids are distinct and non-empty")
}

/// The configuration the simulator gives node `id`.
pub fn config(id: i32, bootstrap: Bootstrap, seed: u64) -> NodeConfig {
    NodeConfig {
        cluster_id: "sim-cluster".into(),
        node_id: id,
        directory_id: directory_id(id),
        listeners: vec![listener(id)],
        bootstrap,
        bootstrap_servers: Vec::new(),
        election_timeout_ms: 1000,
        fetch_timeout_ms: 2000,
        fetch_interval_ms: 50,
        // Answers at once, so scenarios step message by message (core_fetch_wait.rs waits).
        fetch_max_wait_ms: 0,
        check_quorum_timeout_ms: 3000,
        request_timeout_ms: 2000,
        observer_expiry_ms: 300_000,
        seed: seed.wrapping_mul(1_000_003).wrapping_add(id as u64),
        snapshots: Default::default(),
        auto_join: false,
    }
}

/// AddRaftVoter for simulated node `id` (its default listener).
pub fn add_voter_request(id: i32) -> ClientRequest {
    use kafka_protocol::messages::add_raft_voter_request::Listener;
    use kafka_protocol::messages::AddRaftVoterRequest;
    use kafka_protocol::protocol::StrBytes;
    let l = listener(id);
    ClientRequest::AddRaftVoter {
        request: AddRaftVoterRequest::default()
            .with_cluster_id(Some(StrBytes::from_static_str("sim-cluster")))
            .with_timeout_ms(2000)
            .with_voter_id(id)
            .with_voter_directory_id(directory_id(id))
            .with_listeners(vec![Listener::default()
                .with_name(StrBytes::from_string(l.name))
                .with_host(StrBytes::from_string(l.host))
                .with_port(l.port)]),
        ack_when_committed: true,
    }
}

/// RemoveRaftVoter for simulated node `id`.
pub fn remove_voter_request(id: i32) -> ClientRequest {
    use kafka_protocol::messages::RemoveRaftVoterRequest;
    use kafka_protocol::protocol::StrBytes;
    ClientRequest::RemoveRaftVoter(
        RemoveRaftVoterRequest::default()
            .with_cluster_id(Some(StrBytes::from_static_str("sim-cluster")))
            .with_voter_id(id)
            .with_voter_directory_id(directory_id(id)),
    )
}

/// DescribeQuorum for `__cluster_metadata`-0 at `version`.
pub fn describe_request(version: i16) -> ClientRequest {
    ClientRequest::DescribeQuorum {
        version,
        request: DescribeQuorumRequest::for_metadata_partition(),
    }
}

/// The error code of an Add/Remove/Update reply.
pub fn change_error_code(resp: &ClientResponse) -> Option<i16> {
    match resp {
        ClientResponse::AddRaftVoter(r) => Some(r.error_code),
        ClientResponse::RemoveRaftVoter(r) => Some(r.error_code),
        ClientResponse::UpdateRaftVoter(r) => Some(r.error_code),
        _ => None,
    }
}

impl Sim {
    /// Voters `1..=voters` (bootstrap checkpoint, `kraft.version` 1) and observers after them that start
    /// with the same bootstrap set.
    pub fn new(voters: i32, observers: i32, seed: u64) -> Result<Sim, NodeError> {
        let ids: Vec<i32> = (1..=voters).collect();
        let set = voter_set(&ids);
        Self::with_configs(
            (1..=voters + observers).map(|id| config(id, Bootstrap::Checkpoint(set.clone()), seed)),
        )
    }

    /// Static voters (`kraft.version` 0), entered as Kafka reads `controller.quorum.voters`: no
    /// directory ids, supported `kraft.version` [0, 0].
    pub fn new_static(voters: i32, seed: u64) -> Result<Sim, NodeError> {
        let ids: Vec<i32> = (1..=voters).collect();
        let set = static_voter_set(&ids);
        Self::with_configs((1..=voters).map(|id| config(id, Bootstrap::Static(set.clone()), seed)))
    }

    pub fn with_configs(configs: impl IntoIterator<Item = NodeConfig>) -> Result<Sim, NodeError> {
        let mut nodes = BTreeMap::new();
        for config in configs {
            let mut node = Node::new(config.clone(), MemoryLog::new(), ElectionState::default())?;
            node.set_wall_clock(0, virtual_wall_clock(0));
            node.start_clock(0);
            let id = config.node_id;
            nodes.insert(
                id,
                SimNode {
                    config,
                    node: Some(node),
                    persisted: ElectionState::default(),
                    storage: MemoryLog::new(),
                    crashed_log: None,
                    clock: 0,
                    snapshot_files: BTreeMap::new(),
                    partial_snapshot: None,
                    bootstrap: None,
                },
            );
        }
        Ok(Sim {
            nodes,
            network: Vec::new(),
            client_replies: Vec::new(),
            refused: Vec::new(),
            next_client: 0,
            peer_clients: BTreeMap::new(),
            next_peer_client: 0,
        })
    }

    /// The running node `id`. Panics if unknown or crashed: a test bug, not a protocol outcome.
    pub fn node(&self, id: i32) -> &Node {
        self.nodes[&id].node.as_ref().expect("node is running")
    }

    pub fn node_mut(&mut self, id: i32) -> &mut Node {
        self.nodes
            .get_mut(&id)
            .and_then(|n| n.node.as_mut())
            .expect("node is running")
    }

    /// The durable log of node `id`, running or crashed.
    pub fn durable_log(&self, id: i32) -> Option<&MemoryLog> {
        let n = self.nodes.get(&id)?;
        n.node
            .as_ref()
            .map(|node| node.log())
            .or(n.crashed_log.as_ref())
    }

    pub fn is_running(&self, id: i32) -> bool {
        self.nodes.get(&id).is_some_and(|n| n.node.is_some())
    }

    pub fn clock(&self, id: i32) -> Millis {
        self.nodes[&id].clock
    }

    /// Routes an output: effects first (each log flush completes at once), then replies and requests
    /// into the network, then client replies.
    pub fn absorb(&mut self, from: i32, mut out: Output) {
        let (mut loaded, mut taken) = (None, None);
        let sim_node = self.nodes.get_mut(&from).expect("known node");
        for effect in out.effects {
            match effect {
                Effect::PersistElectionState(state) => sim_node.persisted = state,
                Effect::AppendLog(batches) => sim_node
                    .storage
                    .append_replicated(batches)
                    .expect("the node's appends continue its durable log"),
                Effect::TruncateLog(offset) => sim_node
                    .storage
                    .truncate_to(offset)
                    .expect("the node truncates within its durable log"),
                Effect::FlushLog { .. } => sim_node.storage.flush().expect("a memory log flushes"),
                Effect::WriteSnapshotChunk {
                    id,
                    position,
                    bytes,
                } => {
                    if position == 0 {
                        sim_node.partial_snapshot = Some((id, Vec::new()));
                    }
                    let (part_id, part) = sim_node
                        .partial_snapshot
                        .as_mut()
                        .expect("a chunk continues a download");
                    assert_eq!((*part_id, part.len() as u64), (id, position), "chunk order");
                    part.extend_from_slice(&bytes);
                }
                Effect::AbortSnapshotDownload { id } => {
                    if sim_node
                        .partial_snapshot
                        .as_ref()
                        .is_some_and(|(p, _)| *p == id)
                    {
                        sim_node.partial_snapshot = None;
                    }
                }
                Effect::CompleteSnapshot { id, size } => {
                    let (part_id, part) = sim_node
                        .partial_snapshot
                        .take()
                        .expect("a completed download has a partial file");
                    assert_eq!(
                        (part_id, part.len() as u64),
                        (id, size),
                        "complete download"
                    );
                    let bytes = Bytes::from(part);
                    let result = snapshot_meta(id, &bytes);
                    if result.is_ok() {
                        // Kafka's `truncateToLatestSnapshot`: the log starts at the snapshot; older
                        // snapshots go.
                        sim_node.snapshot_files.retain(|held, _| *held > id);
                        sim_node.snapshot_files.insert(id, bytes);
                        sim_node.storage = MemoryLog::starting_at(id.end_offset, id.epoch);
                    }
                    loaded = Some((id, result));
                }
                Effect::TakeSnapshot {
                    id,
                    last_contained_log_timestamp,
                    kraft_version,
                    voters,
                    append_time,
                } => {
                    // The control records of the snapshot, at the kraft.version the core asks for (the
                    // data records this cluster appends are test values, not metadata records a
                    // snapshot would keep).
                    let file = kraft::records::encode_control_snapshot(
                        id,
                        last_contained_log_timestamp,
                        kraft_version,
                        voters.as_ref(),
                        append_time,
                    );
                    let result = file.map_err(|e| e.to_string()).and_then(|bytes| {
                        let meta = snapshot_meta(id, &bytes)?;
                        sim_node.snapshot_files.insert(id, bytes);
                        Ok(meta)
                    });
                    taken = Some((id, result));
                }
                Effect::MoveLogStart { offset } => {
                    let epoch = sim_node
                        .snapshot_files
                        .keys()
                        .find(|s| s.end_offset == offset)
                        .map(|s| s.epoch)
                        .expect("the log start moves to a held snapshot");
                    assert!(
                        sim_node.storage.advance_start(offset, epoch),
                        "log start moves up"
                    );
                    sim_node
                        .snapshot_files
                        .retain(|s, _| s.end_offset >= offset);
                }
            }
        }
        for (_, msg) in out.replies.iter_mut() {
            if let Message::FetchSnapshotResponse(resp) = msg {
                if let Some(chunk) = kraft::node::snapshot_chunk(resp) {
                    let file = &sim_node.snapshot_files[&chunk.id];
                    let (start, len) = (chunk.position as usize, chunk.len as usize);
                    kraft::node::fill_snapshot_chunk(resp, file.slice(start..start + len));
                }
            }
        }
        for (to, msg) in out.replies {
            assert!(!msg.is_request(), "a reply that is not a response: {msg:?}");
            self.network.push(Envelope { from, to, msg });
        }
        for (to, msg) in out.requests {
            assert!(msg.is_request(), "a response among the requests: {msg:?}");
            self.network.push(Envelope { from, to, msg });
        }
        for (client, reply) in out.client_replies {
            let Some(to) = self.peer_clients.remove(&(from, client)) else {
                self.client_replies.push((from, client, reply));
                continue;
            };
            let msg = match reply {
                ClientResponse::AddRaftVoter(r) => Message::AddRaftVoterResponse(r),
                ClientResponse::RemoveRaftVoter(r) => Message::RemoveRaftVoterResponse(r),
                other => panic!("a peer's membership request answered with {other:?}"),
            };
            self.network.push(Envelope { from, to, msg });
        }
        self.refused
            .extend(out.refused.into_iter().map(|e| (from, e)));
        if let Some((id, result)) = taken {
            let now = self.nodes[&from].clock;
            let out = self.node_mut(from).snapshot_taken(now, id, result);
            self.absorb(from, out);
        }
        if let Some((id, result)) = loaded {
            // The shell's answer once the file is stored (the core waits for it).
            let now = self.nodes[&from].clock;
            let out = self.node_mut(from).snapshot_loaded(now, id, result);
            self.absorb(from, out);
        }
    }

    /// Delivers the message at `index` of the network (removing it). A message to a crashed or unknown
    /// node is lost.
    pub fn deliver(&mut self, index: usize) {
        if index >= self.network.len() {
            return;
        }
        let env = self.network.remove(index);
        if !self.is_running(env.to) {
            return;
        }
        let now = self.clock(env.to);
        // A peer's AddRaftVoter / RemoveRaftVoter is served as the client request a shell decodes it as
        // (auto-join sends AddRaftVoter v1 with AckWhenCommitted false).
        let request = match env.msg {
            Message::AddRaftVoterRequest(request) => ClientRequest::AddRaftVoter {
                request,
                ack_when_committed: false,
            },
            Message::RemoveRaftVoterRequest(r) => ClientRequest::RemoveRaftVoter(r),
            msg => {
                let out = self.node_mut(env.to).handle(now, env.from, msg);
                self.absorb(env.to, out);
                return;
            }
        };
        self.next_peer_client += 1;
        let client = ClientId(u64::MAX - self.next_peer_client);
        self.peer_clients.insert((env.to, client), env.from);
        let out = self.node_mut(env.to).handle_client(now, client, request);
        self.absorb(env.to, out);
    }

    pub fn drop_message(&mut self, index: usize) {
        if index < self.network.len() {
            self.network.remove(index);
        }
    }

    pub fn duplicate(&mut self, index: usize) {
        if let Some(env) = self.network.get(index).cloned() {
            self.network.push(env);
        }
    }

    /// Delivers messages in FIFO order until the network is empty or `max` messages were delivered.
    /// Returns how many were delivered.
    pub fn deliver_all(&mut self, max: usize) -> usize {
        let mut n = 0;
        while !self.network.is_empty() && n < max {
            self.deliver(0);
            n += 1;
        }
        n
    }

    /// Sets node `id`'s clock (never backwards) and fires its due timers.
    pub fn tick(&mut self, id: i32, now: Millis) {
        if !self.is_running(id) {
            return;
        }
        let sim_node = self.nodes.get_mut(&id).expect("known node");
        sim_node.clock = sim_node.clock.max(now);
        let now = sim_node.clock;
        let out = self.node_mut(id).tick(now);
        self.absorb(id, out);
    }

    /// Advances every clock by `ms` and ticks every running node.
    pub fn advance(&mut self, ms: Millis) {
        let ids: Vec<i32> = self.nodes.keys().copied().collect();
        for id in ids {
            let now = self.nodes[&id].clock + ms;
            self.tick(id, now);
        }
    }

    /// Advances node `id`'s clock to the deadline of `timer` (if armed) and fires exactly that timer.
    pub fn fire(&mut self, id: i32, timer: Timer) {
        if !self.is_running(id) {
            return;
        }
        let Some(deadline) = self.node(id).timers().get(timer) else {
            return;
        };
        let sim_node = self.nodes.get_mut(&id).expect("known node");
        sim_node.clock = sim_node.clock.max(deadline);
        let now = sim_node.clock;
        let out = self.node_mut(id).fire(now, timer);
        self.absorb(id, out);
    }

    /// Crash: volatile state is lost; the log and the persisted election state remain.
    pub fn crash(&mut self, id: i32) {
        if let Some(sim_node) = self.nodes.get_mut(&id) {
            if let Some(node) = sim_node.node.take() {
                assert_eq!(
                    node.log().batches(),
                    sim_node.storage.batches(),
                    "view = storage"
                );
                sim_node.crashed_log = Some(sim_node.storage.clone());
                // The bootstrap snapshot "file": formatted when the node first started.
                sim_node.bootstrap = node
                    .snapshots()
                    .find(|m| m.id == SnapshotId::BOOTSTRAP)
                    .cloned()
                    .or(sim_node.bootstrap.take());
                // Kafka deletes a partial snapshot file at start-up.
                sim_node.partial_snapshot = None;
            }
        }
    }

    /// Restart from the durable state.
    pub fn restart(&mut self, id: i32) -> Result<(), NodeError> {
        let Some(sim_node) = self.nodes.get_mut(&id) else {
            return Ok(());
        };
        if sim_node.node.is_some() {
            return Ok(());
        }
        // Whatever is in flight to it was sent to the crashed process (or while it was down) over
        // connections that died with it (TCP): the new process never gets an answer to a request it did
        // not send (a stale pre-vote grant would count as a vote for its restored candidacy).
        // Likewise a request its earlier run sent that is still in flight: the peer's answer would go back
        // over a dead connection, never to the new process (a peer's pre-vote grant, answered to it, would
        // count as a vote for the candidacy it restores in the same epoch).
        self.network
            .retain(|e| e.to != id && !(e.from == id && e.msg.is_request()));
        let log = sim_node.crashed_log.take().unwrap_or_default();
        // What the node starts from is its durable log (a test may have replaced the disk meanwhile).
        sim_node.storage = log.clone();
        let snapshots = sim_node
            .snapshot_files
            .iter()
            .map(|(id, bytes)| snapshot_meta(*id, bytes))
            .chain(sim_node.bootstrap.clone().map(Ok))
            .collect::<Result<Vec<_>, _>>()
            .map_err(NodeError::Config)?;
        let persisted = sim_node.persisted.clone();
        let mut node = Node::with_snapshots(sim_node.config.clone(), log, persisted, snapshots)?;
        node.set_wall_clock(sim_node.clock, virtual_wall_clock(sim_node.clock));
        node.start_clock(sim_node.clock);
        sim_node.node = Some(node);
        Ok(())
    }

    /// Asks node `id` for a snapshot now ([`Harness::take_snapshot_now`]) and lets its shell write it;
    /// returns the snapshot asked for, if any.
    pub fn take_snapshot(&mut self, id: i32) -> Option<SnapshotId> {
        let now = self.clock(id);
        let out = self.node_mut(id).take_snapshot_now(now);
        let asked = out.effects.iter().find_map(|e| match e {
            Effect::TakeSnapshot { id, .. } => Some(*id),
            _ => None,
        });
        self.absorb(id, out);
        asked
    }

    /// Sends a client request to node `id`; returns the replies produced right away. The ApiVersions round
    /// trip an AddRaftVoter starts (the leader asking the new voter, KIP-853) is delivered at once, as a
    /// reachable voter answers it; [`Sim::client_held`] leaves it in the network.
    pub fn client(&mut self, id: i32, req: ClientRequest) -> Vec<ClientResponse> {
        let before = self.client_replies.len();
        let queued = self.network.len();
        let client = self.client_held(id, req);
        self.deliver_api_versions(queued);
        self.client_replies[before..]
            .iter()
            .filter(|(_, c, _)| *c == client)
            .map(|(_, _, r)| r.clone())
            .collect()
    }

    /// Sends a client request to node `id` and delivers nothing; returns its client id.
    pub fn client_held(&mut self, id: i32, req: ClientRequest) -> ClientId {
        self.next_client += 1;
        let client = ClientId(self.next_client);
        let now = self.clock(id);
        let out = self.node_mut(id).handle_client(now, client, req);
        self.absorb(id, out);
        client
    }

    /// Delivers every ApiVersions request in flight from network position `start` on, and then its
    /// answer; returns what was delivered, in order. A request to a crashed node is lost (no answer).
    pub fn deliver_api_versions(&mut self, start: usize) -> Vec<Envelope> {
        let mut delivered = Vec::new();
        let is_api_versions = |m: &Message| {
            matches!(
                m,
                Message::ApiVersionsRequest(_) | Message::ApiVersionsResponse(_)
            )
        };
        while let Some(i) =
            (start..self.network.len()).find(|i| is_api_versions(&self.network[*i].msg))
        {
            delivered.push(self.network[i].clone());
            self.deliver(i);
        }
        delivered
    }

    /// DescribeQuorum at `version` answered by node `id`.
    pub fn describe(&mut self, id: i32, version: i16) -> DescribeQuorumResponse {
        match self.client(id, describe_request(version)).pop() {
            Some(ClientResponse::DescribeQuorum(r)) => r,
            other => {
                unreachable!("DescribeQuorum is answered at once with its own type, got {other:?}")
            }
        }
    }

    /// Runs `f` and then forgets the client ids it used and the replies it got, so that a check made on
    /// the side (e.g. DescribeQuorum at every version) leaves the client ids a scenario prints unchanged.
    /// Only for read-only requests: whatever else `f` did to the nodes stays.
    pub fn unrecorded<T>(&mut self, f: impl FnOnce(&mut Sim) -> T) -> T {
        let (next_client, replies) = (self.next_client, self.client_replies.len());
        let out = f(self);
        self.next_client = next_client;
        self.client_replies.truncate(replies);
        out
    }

    /// The id of the last client request sent.
    pub fn last_client_id(&self) -> ClientId {
        ClientId(self.next_client)
    }

    /// Every reply the cluster gave to `client` so far.
    pub fn replies_to(&self, client: ClientId) -> Vec<ClientResponse> {
        self.client_replies
            .iter()
            .filter(|(_, c, _)| *c == client)
            .map(|(_, _, r)| r.clone())
            .collect()
    }

    /// Client append on node `id`.
    pub fn append(&mut self, id: i32, data: &[&[u8]]) -> Result<i64, AppendError> {
        let now = self.clock(id);
        let records = data.iter().map(|d| Bytes::copy_from_slice(d)).collect();
        let (offset, out) = self.node_mut(id).append(now, records)?;
        self.absorb(id, out);
        Ok(offset)
    }

    /// The running leader with the highest epoch.
    pub fn leader(&self) -> Option<i32> {
        self.nodes
            .iter()
            .filter_map(|(id, n)| n.node.as_ref().map(|node| (*id, node)))
            .filter(|(_, node)| node.role() == Role::Leader)
            .max_by_key(|(_, node)| node.epoch())
            .map(|(id, _)| id)
    }

    /// Fires node `id`'s election timer (its fetch timeout if it follows a leader) and delivers messages
    /// until quiet: a deterministic election.
    ///
    /// Pre-vote (KIP-996): a voter that follows a leader it has fetched from refuses pre-votes. If `id`
    /// is refused, the other voters that follow a leader time out too (each loses a pre-vote round of its
    /// own at once and follows its leader again, without a fetch since), then `id` stands again.
    pub fn elect(&mut self, id: i32) {
        self.stand(id);
        if self.node(id).role() == Role::Leader {
            return;
        }
        let followers: Vec<i32> = self
            .nodes
            .iter()
            .filter(|(other, _)| **other != id)
            .filter_map(|(other, n)| n.node.as_ref().map(|node| (*other, node)))
            .filter(|(_, node)| node.role() == Role::Follower && node.is_voter())
            .map(|(other, _)| other)
            .collect();
        for v in followers {
            self.fire(v, Timer::FetchTimeout);
            self.fire(v, Timer::Election);
        }
        self.deliver_all(10_000);
        if self.node(id).role() == Role::Prospective {
            self.fire(id, Timer::Election);
        }
        self.stand(id);
    }

    fn stand(&mut self, id: i32) {
        let timer = if self.node(id).timers().election.is_some() {
            Timer::Election
        } else {
            Timer::FetchTimeout
        };
        self.fire(id, timer);
        self.deliver_all(10_000);
    }

    /// Lets every follower fetch until nothing changes (bounded): fires due fetch timers, delivers.
    pub fn replicate(&mut self, rounds: usize) {
        for _ in 0..rounds {
            let ids: Vec<i32> = self.nodes.keys().copied().collect();
            let mut sent = false;
            for id in ids {
                if !self.is_running(id) {
                    continue;
                }
                let node = self.node(id);
                if node.timers().fetch.is_some() && node.outstanding_fetch_is_none() {
                    self.fire(id, Timer::Fetch);
                    sent = true;
                }
            }
            let delivered = self.deliver_all(10_000);
            if !sent && delivered == 0 {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_nodes_elect_and_commit() {
        let mut sim = Sim::new(3, 0, 7).unwrap();
        sim.elect(1);
        assert_eq!(sim.leader(), Some(1));
        assert_eq!(sim.node(1).high_watermark(), None);
        sim.replicate(5);
        assert_eq!(sim.node(1).high_watermark(), Some(3));
        sim.append(1, &[b"a"]).unwrap();
        sim.replicate(5);
        for id in 1..=3 {
            assert_eq!(sim.node(id).high_watermark(), Some(4), "node {id}");
        }
    }

    #[test]
    fn crash_keeps_log_and_election_state() {
        let mut sim = Sim::new(3, 0, 1).unwrap();
        sim.elect(2);
        sim.replicate(5);
        sim.crash(2);
        sim.restart(2).unwrap();
        assert_eq!(sim.node(2).role(), Role::Resigned);
        assert_eq!(sim.node(2).epoch(), 1);
        assert_eq!(sim.node(2).log().batches().len(), 1);
        assert_eq!(sim.node(2).high_watermark(), None);
    }
}
