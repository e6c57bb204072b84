//! An in-memory observer of the metadata log, for `kraft describe` against a leader that serves no
//! DescribeQuorum v3 (every released Kafka 4.x): the core's [`Node`] as a replica without an id
//! ([`ANONYMOUS_OBSERVER_ID`]), driven over blocking connections. It fetches as Kafka's observers do and
//! learns the HW from the leader's Fetch responses; its voter-set history answers
//! [`committed_voter_set`], the one definition of the committed voter set.
//!
//! What the leader sees: Fetch requests with replica id −1 and the zero directory id, which Kafka 4.x's
//! `LeaderState.updateReplicaState` ignores (a reader that is no replica, like a consumer): not listed in
//! DescribeQuorum's Observers, never counted for the HW or check-quorum, never a voter. It sends nothing
//! else (no Vote, no membership request): read-only. A leader with an authorizer must grant its principal
//! CLUSTER_ACTION on the cluster, as for any Fetch on the controller listener.
//!
//! Memory: data records are emptied before the core sees them (only their offsets and epochs matter to the
//! voter-set history), so the observer holds control records and per-record bookkeeping, not metadata.
//!
//! Snapshots (KIP-630): a leader whose log starts at a snapshot answers the first Fetch with its id; the
//! observer then fetches it with FetchSnapshot as a follower would (chunks of at most
//! [`FETCH_SNAPSHOT_MAX_BYTES`]), reads only its leading control batch (KRaftVersion and Voters, see
//! [`SnapshotHead`]) and drops every data byte as it arrives, installs it in the core with
//! [`Node::snapshot_loaded`] and goes on fetching from the snapshot's end. Memory for a snapshot of any
//! size: one chunk plus at most [`MAX_CONTROL_BATCH_BYTES`](super::snapshot_head::MAX_CONTROL_BATCH_BYTES);
//! the whole snapshot still crosses the network once.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::snapshot_head::SnapshotHead;
use crate::history::committed_voter_set;
use crate::log::{Batch, Record};
use crate::node::{
    Bootstrap, Effect, ElectionState, Harness, Message, Millis, Node, NodeConfig, NodeError,
    Output, Role, SnapshotConfig, ANONYMOUS_OBSERVER_ID,
};
use crate::server::client::{Client, ClientError, ClientSecurity};
use crate::voter_set::{Endpoint, VoterSet};

/// Why observing stopped.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error("observer configuration: {0}")]
    Node(#[from] NodeError),
    #[error("{0}")]
    Client(#[from] ClientError),
    /// The leader refused the Fetch (Kafka's controllers authorize it with CLUSTER_ACTION).
    #[error("{principal} may not fetch the metadata log: CLUSTER_AUTHORIZATION_FAILED (31) from {addr}; it lacks the ACL ALLOW ClusterAction on Cluster:kafka-cluster")]
    Denied { principal: String, addr: String },
}

/// The MaxBytes of the observer's FetchSnapshot requests (Kafka's `controller.quorum.fetch.snapshot.max.bytes`
/// default): the most snapshot bytes it holds at once.
pub const FETCH_SNAPSHOT_MAX_BYTES: i32 = 1024 * 1024;

/// What the observer knows at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub leader_id: Option<i32>,
    pub epoch: i32,
    pub high_watermark: Option<i64>,
    pub log_end_offset: i64,
    pub current: VoterSet,
    /// [`committed_voter_set`] at this HW; `None` while the HW is unknown or no voter set lies below it.
    pub committed: Option<VoterSet>,
}

pub struct Observer {
    node: Node,
    security: ClientSecurity,
    timeout: Duration,
    clients: BTreeMap<String, Client>,
    started: Instant,
    /// The last Fetch answer had no records (the observer was at the leader's end offset then).
    caught_up: bool,
    bootstrap_count: usize,
    /// The snapshot being fetched, if any.
    head: Option<SnapshotHead>,
}

/// `HOST:PORT` for an endpoint (brackets around an IPv6 host).
fn address(e: &Endpoint) -> String {
    if e.host.contains(':') {
        format!("[{}]:{}", e.host, e.port)
    } else {
        format!("{}:{}", e.host, e.port)
    }
}

fn endpoint(addr: &str) -> Option<Endpoint> {
    let (host, port) = addr.rsplit_once(':')?;
    Some(Endpoint {
        name: "CONTROLLER".into(),
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port: port.parse().ok()?,
    })
}

impl Observer {
    /// An observer of cluster `cluster_id` that asks `bootstrap` (`HOST:PORT`, the leader first if known)
    /// until a Fetch answer names the leader, as Kafka's `controller.quorum.bootstrap.servers`.
    pub fn new(
        cluster_id: &str,
        bootstrap: &[String],
        security: ClientSecurity,
        timeout: Duration,
    ) -> Result<Observer, ObserveError> {
        let bootstrap_servers: Vec<Endpoint> =
            bootstrap.iter().filter_map(|a| endpoint(a)).collect();
        let config = NodeConfig {
            cluster_id: cluster_id.to_string(),
            node_id: ANONYMOUS_OBSERVER_ID,
            directory_id: uuid::Uuid::nil(),
            listeners: Vec::new(),
            bootstrap: Bootstrap::NoInitialVoters,
            bootstrap_servers,
            election_timeout_ms: 1_000,
            // Kafka's default fetch timeout: a silent leader is given up and the bootstrap list asked.
            fetch_timeout_ms: 2_000,
            fetch_interval_ms: 100,
            fetch_max_wait_ms: crate::node::FETCH_MAX_WAIT_MS,
            check_quorum_timeout_ms: 3_000,
            request_timeout_ms: 2_000,
            observer_expiry_ms: 300_000,
            seed: 0,
            // No own snapshots (the observer writes nothing); fetched ones in bounded chunks.
            snapshots: SnapshotConfig {
                enabled: false,
                fetch_snapshot_max_bytes: FETCH_SNAPSHOT_MAX_BYTES,
                ..Default::default()
            },
            auto_join: false,
        };
        let bootstrap_count = config.bootstrap_servers.len();
        let node = Node::new(config, Default::default(), ElectionState::default())?;
        Ok(Observer {
            node,
            security,
            timeout,
            clients: BTreeMap::new(),
            started: Instant::now(),
            caught_up: false,
            bootstrap_count,
            head: None,
        })
    }

    fn now(&self) -> Millis {
        self.started.elapsed().as_millis() as Millis
    }

    /// What the observer knows now.
    pub fn observed(&self) -> Observed {
        let hw = self.node.high_watermark();
        Observed {
            leader_id: self.node.leader_id(),
            epoch: self.node.epoch(),
            high_watermark: hw,
            log_end_offset: crate::log::RaftLog::end_offset(self.node.log()),
            current: self.node.latest_voters().clone(),
            committed: committed_voter_set(self.node.history(), hw).cloned(),
        }
    }

    /// [`committed_voter_set`] at `high_watermark` (a leader's HW the observer has reached): `None` if
    /// the observer's own HW is below it or no voter set lies below it.
    pub fn committed_at(&self, high_watermark: i64) -> Option<&VoterSet> {
        if self
            .node
            .high_watermark()
            .is_none_or(|own| own < high_watermark)
        {
            return None;
        }
        committed_voter_set(self.node.history(), Some(high_watermark))
    }

    /// Offset of the latest VotersRecord in the observed log (−1: a bootstrap set); `None`: none seen.
    pub fn last_voters_record(&self) -> Option<i64> {
        self.node.history().latest_entry().map(|(offset, _)| offset)
    }

    /// Whether the last Fetch answer was empty: the observer had the leader's whole log then.
    pub fn caught_up(&self) -> bool {
        self.caught_up && self.node.role() == Role::Follower
    }

    /// One round: fires due timers, sends every request the core makes (each a blocking round trip)
    /// and hands it the answers. Sleeps briefly when there was nothing to send.
    pub fn step(&mut self) -> Result<(), ObserveError> {
        let now = self.now();
        let out = self.node.tick(now);
        let mut queue = std::collections::VecDeque::new();
        self.absorb(out, &mut queue);
        if queue.is_empty() {
            let wait = self
                .node
                .next_deadline()
                .map_or(50, |d| d.saturating_sub(now).clamp(1, 50));
            std::thread::sleep(Duration::from_millis(wait));
        }
        while let Some((to, request)) = queue.pop_front() {
            let answer = match self.node.endpoint_of(to) {
                Some(e) => self.round_trip(&address(&e), &request),
                None => Err(None),
            };
            let now = self.now();
            match answer {
                Ok(Message::FetchResponse(response))
                    if response.error_code
                        == crate::wire::error_codes::CLUSTER_AUTHORIZATION_FAILED =>
                {
                    let addr = self
                        .node
                        .endpoint_of(to)
                        .map(|e| address(&e))
                        .unwrap_or_default();
                    let principal = self.security.sasl.as_ref().map_or_else(
                        || "this client's principal".to_string(),
                        |s| format!("User:{}", s.username),
                    );
                    return Err(ObserveError::Denied { principal, addr });
                }
                Ok(Message::FetchResponse(mut response)) => {
                    self.caught_up = strip_fetch_response(&mut response);
                    let out = self.node.handle(now, to, Message::FetchResponse(response));
                    self.absorb(out, &mut queue);
                }
                Ok(other) => {
                    let out = self.node.handle(now, to, other);
                    self.absorb(out, &mut queue);
                }
                Err(e) => {
                    if let Some(e) = e {
                        tracing::debug!(to, error = %e, "observer request failed");
                    }
                    self.caught_up = false;
                    std::thread::sleep(Duration::from_millis(100));
                    // No leader known: ask the next bootstrap server (Kafka picks one at random).
                    if self.node.leader_id().is_none() && self.bootstrap_count > 0 {
                        let next = crate::node::bootstrap_server_index(to)
                            .map_or(0, |i| (i + 1) % self.bootstrap_count);
                        let out = self
                            .node
                            .fetch_from(self.now(), crate::node::bootstrap_server_id(next));
                        self.absorb(out, &mut queue);
                    }
                }
            }
        }
        Ok(())
    }

    /// Queues the core's requests and plays the shell for its snapshot download: each chunk goes through
    /// the snapshot's [`SnapshotHead`] and is dropped; a complete download is installed at once. Other
    /// effects (log writes) have nothing to do: the core's in-memory log is the observer's only copy.
    fn absorb(&mut self, out: Output, queue: &mut std::collections::VecDeque<(i32, Message)>) {
        queue.extend(out.requests);
        for effect in out.effects {
            match effect {
                Effect::WriteSnapshotChunk {
                    id,
                    position,
                    bytes,
                } => {
                    if position == 0 || self.head.as_ref().is_none_or(|h| h.id() != id) {
                        tracing::info!(%id, "fetching snapshot from the leader");
                        self.head = Some(SnapshotHead::new(id));
                    }
                    if let Some(head) = self.head.as_mut() {
                        head.push(position, &bytes);
                    }
                }
                Effect::AbortSnapshotDownload { .. } => self.head = None,
                Effect::CompleteSnapshot { id, size } => {
                    let result = match self.head.take().filter(|h| h.id() == id) {
                        Some(head) => head.finish(size).map_err(|e| e.to_string()),
                        None => Err(format!("snapshot {id}: no chunk was received")),
                    };
                    match &result {
                        Ok(meta) => {
                            tracing::info!(%id, size, voters = ?meta.voters.as_ref().map(|v| v.ids().collect::<Vec<_>>()), "snapshot read")
                        }
                        Err(e) => tracing::warn!(%id, error = %e, "snapshot refused"),
                    }
                    let out = self.node.snapshot_loaded(self.now(), id, result);
                    self.absorb(out, queue);
                }
                _ => {}
            }
        }
    }

    fn round_trip(
        &mut self,
        addr: &str,
        request: &Message,
    ) -> Result<Message, Option<ClientError>> {
        if !self.clients.contains_key(addr) {
            let client = Client::connect_secure(addr, self.timeout, &self.security)?;
            self.clients.insert(addr.to_string(), client);
        }
        let client = self.clients.get_mut(addr).ok_or(None)?;
        match client.peer_request(request) {
            Ok(m) => Ok(m),
            Err(e) => {
                // A broken or timed-out connection is not reused (its answer may still arrive).
                self.clients.remove(addr);
                Err(Some(e))
            }
        }
    }
}

/// Empties the data records of a Fetch answer (offsets, epochs and control records stay) and reports
/// whether it carried no records at all (an answer naming a snapshot to fetch is not "caught up").
fn strip_fetch_response(response: &mut kafka_protocol::messages::FetchResponse) -> bool {
    let Some(p) = response
        .responses
        .first_mut()
        .and_then(|t| t.partitions.first_mut())
    else {
        return false;
    };
    let Some(records) = p.records.take().filter(|r| !r.is_empty()) else {
        p.records = Some(Bytes::new());
        return p.error_code == 0 && p.diverging_epoch.epoch < 0 && p.snapshot_id.end_offset < 0;
    };
    p.records = Some(strip_data(records));
    false
}

/// The batches of `records` with every data record's value emptied, re-encoded; bytes that do not
/// decode are passed on unchanged for the core to refuse with its own error.
fn strip_data(records: Bytes) -> Bytes {
    let Ok(batches) = crate::records::decode_batches(records.clone()) else {
        return records;
    };
    let stripped: Vec<Batch> = batches
        .into_iter()
        .map(|mut b| {
            for r in &mut b.records {
                if let Record::Data(value) = r {
                    *value = Bytes::new();
                }
            }
            b
        })
        .collect();
    crate::records::encode_batches(&stripped).unwrap_or(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripping_keeps_offsets_epochs_and_control_records() {
        let batches = vec![
            Batch {
                base_offset: 0,
                epoch: 1,
                append_time: 0,
                records: vec![Record::KRaftVersion(1)],
            },
            Batch {
                base_offset: 1,
                epoch: 1,
                append_time: 0,
                records: vec![
                    Record::Data(Bytes::from(vec![7u8; 1000])),
                    Record::Data(Bytes::from_static(b"x")),
                ],
            },
        ];
        let bytes = crate::records::encode_batches(&batches).unwrap();
        let stripped = strip_data(bytes.clone());
        assert!(stripped.len() < bytes.len() - 900);
        let back = crate::records::decode_batches(stripped).unwrap();
        assert_eq!(back[0], batches[0]);
        assert_eq!((back[1].base_offset, back[1].epoch), (1, 1));
        assert_eq!(
            back[1].records,
            vec![Record::Data(Bytes::new()), Record::Data(Bytes::new())]
        );
    }
}
