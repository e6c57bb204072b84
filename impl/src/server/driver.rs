//! The node task: the only owner of the core. It feeds events, time and completed flushes into `Node`,
//! hands each output's effects to the storage thread ([`store`](super::store)) and routes the output
//! (responses to their connection, requests to peer links, client replies) only once those effects and
//! every earlier output's are durable. It never waits for storage itself: it goes on serving inputs.

use std::collections::{HashMap, VecDeque};

use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

use tokio::time::Instant;

use kafka_protocol::messages::ApiKey;

pub use super::event::Event;
use super::peer::PeerLinks;
use super::store::{Done, Job, SnapshotOutcome, Store};
use super::ServerError;
use crate::node::{ClientId, ClientRequest, ClientResponse, Message, Millis, Node, Output, Role};
use crate::storage::{SnapshotReader, StorageError};
use crate::voter_set::Endpoint;
use crate::wire::describe_quorum::DescribeQuorumResponse;

/// A short summary published after every step, for logs and `kraft cluster`: the core's state, which may be
/// ahead of storage (a leader's HW counts records not flushed yet); peers and clients see only durable state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub leader_id: Option<i32>,
    pub epoch: i32,
    pub high_watermark: Option<i64>,
    /// The figures of the metrics listener (`crate::metrics`).
    pub quorum: crate::metrics::QuorumSample,
}

/// The node task's state; [`Driver::new`] builds it, [`Driver::run`] runs it.
pub struct Driver {
    node: Node,
    store: Store,
    /// The storage thread's reports, in the order of its jobs.
    stored: mpsc::UnboundedReceiver<Result<Done, StorageError>>,
    /// Sequence number of the last job handed to the storage thread, and of the last one durable.
    issued: u64,
    durable: u64,
    /// Outputs waiting for the storage thread, with the job they wait for, oldest first.
    held: VecDeque<(u64, Output)>,
    events: mpsc::Receiver<Event>,
    peers: PeerLinks,
    start: Instant,
    status: watch::Sender<Status>,
    /// Wall-clock milliseconds at `start`: DescribeQuorum timestamps are reported as epoch milliseconds.
    wall_base_ms: i64,
    last_state: Option<(Role, i32, Option<i32>)>,
    /// Where the replies to each requester's requests of each API go, oldest first: the core answers
    /// every request once, one requester's requests of one API in the order they came (a Fetch possibly
    /// in a later output: long poll).
    reply_waiters: HashMap<(i32, ApiKey), VecDeque<oneshot::Sender<Message>>>,
    /// The metadata log directory: FetchSnapshot chunks are read from its snapshot files.
    snapshot_dir: std::path::PathBuf,
    /// Time spent waiting for an event, per poll (`poll-idle-ratio-avg`, `crate::metrics`).
    poll_idle: crate::metrics::stats::PollIdle,
}

/// Shifts the core's monotonic timestamps (−1 stays "unknown") to wall-clock epoch milliseconds.
fn to_wall_clock(response: &mut DescribeQuorumResponse, base: i64) {
    let shift = |t: &mut i64| {
        if *t >= 0 {
            *t += base;
        }
    };
    for p in response
        .topics
        .iter_mut()
        .flat_map(|t| t.partitions.iter_mut())
    {
        for r in p
            .current_voters
            .iter_mut()
            .chain(p.observers.iter_mut())
            .chain(p.committed_voters.iter_mut())
        {
            shift(&mut r.last_fetch_timestamp);
            shift(&mut r.last_caught_up_timestamp);
        }
    }
}

/// The wall clock: milliseconds since the Unix epoch (0 for a clock set before 1970).
fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Driver {
    /// The task for `node`: its storage thread (`store`, reporting on `stored`), its event queue, its peer
    /// links, where its status is published, and the directory its snapshot files are read from. Its
    /// clock starts now.
    pub(super) fn new(
        node: Node,
        store: Store,
        stored: mpsc::UnboundedReceiver<Result<Done, StorageError>>,
        events: mpsc::Receiver<Event>,
        peers: PeerLinks,
        status: watch::Sender<Status>,
        snapshot_dir: std::path::PathBuf,
    ) -> Driver {
        Driver {
            node,
            store,
            stored,
            issued: 0,
            durable: 0,
            held: VecDeque::new(),
            events,
            peers,
            start: Instant::now(),
            status,
            wall_base_ms: wall_clock_ms(),
            last_state: None,
            reply_waiters: HashMap::new(),
            snapshot_dir,
            poll_idle: Default::default(),
        }
    }

    /// What this task records of its idle time, for the metrics exporter.
    pub fn poll_idle(&self) -> crate::metrics::stats::PollIdle {
        self.poll_idle.clone()
    }

    /// Records one wait for work that began at `since` and ended now.
    fn polled(&self, since: std::time::Instant) {
        let now = std::time::Instant::now();
        self.poll_idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(now.saturating_duration_since(since), now);
    }

    /// The monotonic time of the input about to be handed to the core, which is told the wall clock at it.
    fn now(&mut self) -> Millis {
        let now = self.start.elapsed().as_millis() as Millis;
        self.node.set_wall_clock(now, wall_clock_ms());
        now
    }

    /// Runs until every event sender is gone; a storage error stops the node before anything that waited
    /// for it is sent (it must not go on).
    pub async fn run(mut self) -> Result<(), ServerError> {
        let mut clients: HashMap<ClientId, oneshot::Sender<ClientResponse>> = HashMap::new();
        let mut next_client = 0u64;
        // Fire timers armed at construction (relative to 0) against the real clock.
        let now = self.now();
        let out = self.node.tick(now);
        self.apply(out, &mut clients);
        loop {
            let deadline = self
                .node
                .next_deadline()
                .map(|d| self.start + Duration::from_millis(d))
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            let idle_since = std::time::Instant::now();
            let event = tokio::select! {
                event = self.events.recv() => {
                    self.polled(idle_since);
                    match event {
                        Some(event) => Some(event),
                        None => return Ok(()),
                    }
                }
                stored = self.stored.recv() => {
                    self.polled(idle_since);
                    self.on_stored(stored, &mut clients)?;
                    continue;
                }
                _ = tokio::time::sleep_until(deadline) => {
                    self.polled(idle_since);
                    None
                }
            };
            let now = self.now();
            match event {
                None => {
                    let out = self.node.tick(now);
                    self.apply(out, &mut clients);
                }
                Some(Event::PeerRequest {
                    from,
                    message,
                    reply,
                }) => {
                    self.reply_waiters
                        .entry((from, message.api_key()))
                        .or_default()
                        .push_back(reply);
                    let out = self.node.handle(now, from, message);
                    self.apply(out, &mut clients);
                }
                Some(Event::PeerResponse { from, message }) => {
                    tracing::trace!(from, ?message, "peer response");
                    let out = self.node.handle(now, from, message);
                    self.apply(out, &mut clients);
                }
                Some(Event::Client {
                    request: ClientRequest::DescribeQuorum { version, request },
                    reply,
                }) if self.forward_to().is_some() => {
                    if let Some((leader, endpoint)) = self.forward_to() {
                        self.peers
                            .forward
                            .describe_quorum(leader, endpoint, version, request, reply);
                    }
                }
                Some(Event::Client { request, reply }) => {
                    let id = ClientId(next_client);
                    next_client += 1;
                    clients.insert(id, reply);
                    let out = self.node.handle_client(now, id, request);
                    self.apply(out, &mut clients);
                }
            }
            // Clients that hung up while waiting (e.g. an add-voter whose caller timed out).
            clients.retain(|_, reply| !reply.is_closed());
        }
    }

    /// A storage report: release the outputs that waited for it, in order. The
    /// first storage error stops the node; the outputs held behind it are never sent.
    fn on_stored(
        &mut self,
        stored: Option<Result<Done, StorageError>>,
        clients: &mut HashMap<ClientId, oneshot::Sender<ClientResponse>>,
    ) -> Result<(), ServerError> {
        let done = match stored {
            Some(Ok(done)) => done,
            Some(Err(e)) => return Err(ServerError::Persist(e)),
            None => return Err(ServerError::StorageStopped),
        };
        self.durable = done.seq;
        while self
            .held
            .front()
            .is_some_and(|(seq, _)| *seq <= self.durable)
        {
            if let Some((_, out)) = self.held.pop_front() {
                self.route(out, clients);
            }
        }
        // A download installed (or refused) and a snapshot of our own written (or not): back to the core.
        for outcome in done.snapshots {
            let now = self.now();
            let out = match outcome {
                SnapshotOutcome::Loaded { id, result } => {
                    self.node.snapshot_loaded(now, id, result)
                }
                SnapshotOutcome::Taken { id, result } => self.node.snapshot_taken(now, id, result),
            };
            self.apply(out, clients);
        }
        Ok(())
    }

    /// Persist first, then send (the shell contract of `node`): the effects go to the storage thread and
    /// the output waits for them, and for every earlier output, before it is routed.
    fn apply(
        &mut self,
        mut out: Output,
        clients: &mut HashMap<ClientId, oneshot::Sender<ClientResponse>>,
    ) {
        for refused in &out.refused {
            tracing::error!(error = %refused, "quorum core refused a transition");
        }
        if !out.effects.is_empty() {
            self.issued += 1;
            let effects = std::mem::take(&mut out.effects);
            self.store.submit(Job {
                seq: self.issued,
                effects,
            });
        }
        if self.issued > self.durable {
            self.held.push_back((self.issued, out));
        } else {
            self.route(out, clients);
        }
        self.publish_status();
    }

    fn route(
        &mut self,
        out: Output,
        clients: &mut HashMap<ClientId, oneshot::Sender<ClientResponse>>,
    ) {
        for (to, message) in out.replies {
            tracing::trace!(to, ?message, "replying");
            let key = (to, message.api_key());
            let waiter = self
                .reply_waiters
                .get_mut(&key)
                .and_then(VecDeque::pop_front);
            if self.reply_waiters.get(&key).is_some_and(VecDeque::is_empty) {
                self.reply_waiters.remove(&key);
            }
            match (waiter, message) {
                // The core names the chunk of a FetchSnapshot response; its bytes come from the file,
                // read off the runtime's workers.
                (Some(reply), Message::FetchSnapshotResponse(mut resp)) => {
                    let Some(chunk) = crate::node::snapshot_chunk(&resp) else {
                        drop(reply.send(Message::FetchSnapshotResponse(resp)));
                        continue;
                    };
                    let dir = self.snapshot_dir.clone();
                    tokio::task::spawn_blocking(move || {
                        let read = SnapshotReader::open(&dir, chunk.id)
                            .and_then(|r| r.chunk(chunk.position, chunk.len as usize));
                        match read {
                            Ok(bytes) => {
                                crate::node::fill_snapshot_chunk(&mut resp, bytes);
                                drop(reply.send(Message::FetchSnapshotResponse(resp)));
                            }
                            // Deleted meanwhile (the log start moved): the requester asks again.
                            Err(e) => tracing::warn!(to, "FetchSnapshot not answered: {e}"),
                        }
                    });
                }
                // A requester that hung up meanwhile: nothing to write.
                (Some(reply), message) => drop(reply.send(message)),
                (None, _) => tracing::warn!(to, "dropping a response with no matching request"),
            }
        }
        for (to, message) in out.requests {
            tracing::trace!(to, ?message, "sending");
            match self.endpoint_of(to) {
                Some(endpoint) => self.peers.send(to, endpoint, message),
                None => tracing::warn!(to, "no known endpoint for node; dropping request"),
            }
        }
        for (id, mut response) in out.client_replies {
            if let ClientResponse::DescribeQuorum(r) = &mut response {
                to_wall_clock(r, self.wall_base_ms);
            }
            if let Some(reply) = clients.remove(&id) {
                let _ = reply.send(response);
            }
        }
    }

    fn publish_status(&mut self) {
        let state = (self.node.role(), self.node.epoch(), self.node.leader_id());
        if self.last_state != Some(state) {
            tracing::info!(role = ?state.0, epoch = state.1, leader = ?state.2, "quorum state changed");
            self.last_state = Some(state);
        }
        let status = Status {
            leader_id: self.node.leader_id(),
            epoch: self.node.epoch(),
            high_watermark: self.node.high_watermark(),
            quorum: crate::metrics::QuorumSample::of_node(&self.node),
        };
        self.status.send_if_modified(|s| {
            let changed = *s != status;
            *s = status;
            changed
        });
    }

    /// The leader a client's DescribeQuorum goes on to ([`forward`](super::forward)): one this node knows
    /// in its epoch, other than itself, with a known endpoint. `None`: the core answers.
    fn forward_to(&self) -> Option<(i32, Endpoint)> {
        if self.node.role() == Role::Leader || !self.peers.forward.enabled() {
            return None;
        }
        self.node
            .leader_endpoint()
            .filter(|(leader, _)| *leader != self.node.node_id())
    }

    /// Where `id` listens: the leader's announced endpoint, else its default listener in the voter sets.
    fn endpoint_of(&self, id: i32) -> Option<Endpoint> {
        self.node.endpoint_of(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::MemoryLog;
    use crate::node::{Bootstrap, NodeConfig};
    use crate::node::{Harness, Timer};
    use crate::storage::read_quorum_state;
    use crate::voter_set::{ReplicaKey, SupportedVersions, VoterNode, VoterSet};
    use std::path::PathBuf;
    use uuid::Uuid;

    /// Node 1 of {1, 2}, with node 2 at `port`: node 1 times out, votes for itself and asks node 2. Its
    /// log segments live in `dir`, its election state at `quorum_state_path`.
    fn driver(
        port: u16,
        dir: &std::path::Path,
        quorum_state_path: PathBuf,
    ) -> (Driver, watch::Receiver<Status>) {
        let voter = |id: i32, port: u16| VoterNode {
            key: ReplicaKey::new(id, Uuid::from_u128(id as u128)),
            listeners: vec![Endpoint {
                name: "CONTROLLER".into(),
                host: "127.0.0.1".into(),
                port,
            }],
            supported: SupportedVersions::CURRENT,
        };
        let voters = VoterSet::new([voter(1, 1), voter(2, port)]).unwrap();
        let config = NodeConfig {
            cluster_id: "c".into(),
            node_id: 1,
            directory_id: Uuid::from_u128(1),
            listeners: vec![voter(1, 1).listeners[0].clone()],
            bootstrap: Bootstrap::Checkpoint(voters),
            bootstrap_servers: Vec::new(),
            election_timeout_ms: 20,
            fetch_timeout_ms: 100,
            fetch_interval_ms: 10,
            fetch_max_wait_ms: 0,
            check_quorum_timeout_ms: 150,
            request_timeout_ms: 100,
            observer_expiry_ms: 1000,
            seed: 1,
            snapshots: Default::default(),
            auto_join: false,
        };
        let node = Node::new(config, MemoryLog::new(), Default::default()).unwrap();
        let (events_tx, events) = mpsc::channel(16);
        let (status, status_rx) = watch::channel(Status::default());
        let peers = PeerLinks::new(1, events_tx, super::super::LinkConfig::default(), None);
        let (stored_tx, stored) = mpsc::unbounded_channel();
        let log = crate::storage::MetadataLog::open(dir).unwrap();
        let store = Store::spawn(log, quorum_state_path, stored_tx).unwrap();
        let mut driver = Driver::new(
            node,
            store,
            stored,
            events,
            peers,
            status,
            dir.to_path_buf(),
        );
        driver.wall_base_ms = 0;
        (driver, status_rx)
    }

    /// Reads one peer request frame from `conn`: (reply address, message). The ApiVersions request that
    /// opens a peer link is answered with this crate's served versions on the way.
    async fn read_request(
        conn: &mut tokio::net::TcpStream,
    ) -> (super::super::codec::Reply, Message) {
        use super::super::codec::{client_response, decode_request, Incoming};
        use crate::node::{ClientRequest, ClientResponse};
        use tokio::io::AsyncWriteExt;
        loop {
            let frame =
                crate::wire::frame::read_frame(conn, crate::wire::frame::DEFAULT_MAX_FRAME_SIZE);
            match decode_request(frame.await.unwrap()).unwrap() {
                (reply, Incoming::Peer { message, .. }) => return (reply, message),
                (reply, Incoming::Client(ClientRequest::ApiVersions(_))) => {
                    let keys = crate::wire::apis::api_versions();
                    let answer = kafka_protocol::messages::ApiVersionsResponse::default()
                        .with_api_keys(keys);
                    let bytes =
                        client_response(&reply, &ClientResponse::ApiVersions(answer)).unwrap();
                    conn.write_all(&bytes).await.unwrap();
                }
                (_, other) => panic!("not a peer request: {other:?}"),
            }
        }
    }

    /// Answers node 1's first request, a pre-vote, as a replica without Vote v2 would (Kafka's
    /// UNSUPPORTED_VERSION): node 1 then stands as Candidate at once.
    async fn refuse_pre_vote(conn: &mut tokio::net::TcpStream) {
        use tokio::io::AsyncWriteExt;
        let (reply, message) = read_request(conn).await;
        match &message {
            Message::VoteRequest(r) => {
                assert!(r.topics[0].partitions[0].pre_vote, "a pre-vote first")
            }
            other => panic!("expected a pre-vote, got {other:?}"),
        }
        let resp = kafka_protocol::messages::VoteResponse::default()
            .with_error_code(crate::node::errors::UNSUPPORTED_VERSION);
        let bytes =
            super::super::codec::peer_response(&reply, &Message::VoteResponse(resp)).unwrap();
        conn.write_all(&bytes).await.unwrap();
    }

    #[tokio::test]
    async fn the_vote_is_durable_before_the_vote_request_leaves() {
        let peer = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quorum-state");
        let (driver, _status) = driver(peer.local_addr().unwrap().port(), dir.path(), path.clone());
        let task = tokio::spawn(driver.run());
        let (mut conn, _) = tokio::time::timeout(Duration::from_secs(5), peer.accept())
            .await
            .unwrap()
            .unwrap();
        refuse_pre_vote(&mut conn).await;
        let (_, message) = read_request(&mut conn).await;
        match &message {
            Message::VoteRequest(r) => assert!(!r.topics[0].partitions[0].pre_vote, "a vote"),
            other => panic!("expected a Vote request, got {other:?}"),
        }
        // By the time the request is on the wire, the vote for itself is on disk.
        let state = read_quorum_state(&path).unwrap();
        assert_eq!(state.voted.map(|k| k.id), Some(1));
        assert!(state.epoch >= 1);
        task.abort();
    }

    /// Node 1 stands as Candidate: its pre-vote round (whose requests are dropped here) is refused as by
    /// a peer without Vote v2. Returns the output that votes for itself and asks node 2 for its vote.
    fn stand_as_candidate(driver: &mut Driver) -> Output {
        let election = driver.node.timers().election.unwrap();
        let pre_vote = driver.node.fire(election, Timer::Election);
        assert!(pre_vote.effects.is_empty(), "a pre-vote persists nothing");
        let refusal = Message::VoteResponse(
            kafka_protocol::messages::VoteResponse::default()
                .with_error_code(crate::node::errors::UNSUPPORTED_VERSION),
        );
        let out = driver.node.handle(election, 2, refusal);
        assert_eq!(driver.node.role(), Role::Candidate);
        assert!(
            !out.effects.is_empty() && !out.requests.is_empty(),
            "{out:?}"
        );
        out
    }

    /// No clock and no socket: the core is driven directly and the storage thread's report awaited.
    #[tokio::test]
    async fn a_failed_persist_stops_the_node_before_anything_is_sent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-dir").join("quorum-state");
        let (mut driver, _status) = driver(1, dir.path(), path);
        let mut clients = HashMap::new();
        let out = stand_as_candidate(&mut driver);
        driver.apply(out, &mut clients);
        assert_eq!(
            driver.held.len(),
            1,
            "the Vote request waits for the vote to be durable"
        );
        let stored = driver.stored.recv().await;
        let result = driver.on_stored(stored, &mut clients);
        assert!(matches!(result, Err(ServerError::Persist(_))), "{result:?}");
        assert_eq!(driver.held.len(), 1, "nothing was released");
        assert_eq!(driver.peers.links(), 0, "no request left for any peer");
        // The storage thread does nothing more once it failed: it has hung up.
        assert!(driver.stored.recv().await.is_none());
    }

    #[tokio::test]
    async fn outputs_wait_in_order_until_their_effects_are_durable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quorum-state");
        let (mut driver, _status) = driver(1, dir.path(), path.clone());
        let mut clients = HashMap::new();
        let out = stand_as_candidate(&mut driver);
        let now = driver.node.timers().election.unwrap();
        driver.apply(out, &mut clients);
        // A reply with no effect of its own waits behind the earlier vote.
        let (tx, mut rx) = oneshot::channel();
        clients.insert(ClientId(7), tx);
        let request = ClientRequest::DescribeQuorum {
            version: 0,
            request: crate::wire::describe_quorum::DescribeQuorumRequest::for_metadata_partition(),
        };
        let out = driver.node.handle_client(now, ClientId(7), request);
        assert!(out.effects.is_empty());
        driver.apply(out, &mut clients);
        assert_eq!(driver.held.len(), 2);
        assert!(
            rx.try_recv().is_err(),
            "not released before the vote is durable"
        );
        let stored = driver.stored.recv().await;
        driver.on_stored(stored, &mut clients).unwrap();
        assert!(driver.held.is_empty());
        assert!(matches!(
            rx.try_recv(),
            Ok(ClientResponse::DescribeQuorum(_))
        ));
        assert_eq!(
            read_quorum_state(&path).unwrap().voted.map(|k| k.id),
            Some(1)
        );
    }
}
