//! The implementation side of a replay: one `kraft` node per model server, the shell's durable state, a
//! network of the messages the nodes sent, and the inputs each model action maps to (see `mapping`).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use kraft::log::{MemoryLog, RaftLog};
use kraft::node::{
    ChangeOutcome, ClientRequest, ClientResponse, Effect, ElectionState, Harness, Message, Millis,
    Node, Output, SnapshotId, SnapshotMeta, Timer,
};
use kraft::records::SnapshotFileKind;
use kraft::storage::kept_at_start;
use model::types::{Action, ChangeOp, Envelope, Id, Mask, Msg, Reply};
use model::{FetchMode, NetworkKind};

use crate::mapping::{self, ChangeRequest};
use crate::refusal::{self, Refused};

mod auto_join;
mod download;
mod upgrade;

/// Called on every node the harness builds (also after a restart): the mutation check uses it to switch
/// on `kraft`'s test-only faults, which only exist when `kraft/faults` is enabled (a dev-dependency
/// feature of this crate's tests).
pub type NodeHook = std::sync::Arc<dyn Fn(&mut Node) + Send + Sync>;

/// What the core needs to know of a snapshot file, read with the storage's parser.
fn snapshot_meta(id: SnapshotId, bytes: &Bytes) -> Result<SnapshotMeta, String> {
    let s = kraft::records::decode_snapshot(bytes.clone())
        .map_err(|e| format!("snapshot {id}: {e}"))?;
    Ok(SnapshotMeta {
        id,
        size: bytes.len() as u64,
        kraft_version: s.kraft_version.unwrap_or(0),
        voters: s.voters,
        last_contained_log_timestamp: s.last_contained_log_timestamp,
    })
}

/// A message in flight with its model abstraction.
#[derive(Debug)]
pub struct InFlight {
    pub envelope: Envelope,
    pub msg: Message,
    /// Digest of the message's bytes on the wire (part of the graph replay's implementation fingerprint).
    pub digest: u64,
}

/// What an action did on the implementation side.
#[derive(Clone, Debug, Default)]
pub struct Applied {
    /// Operator replies, mapped to the model's form.
    pub replies: Vec<Reply>,
    /// The refused ones among them, with the implementation's reason.
    pub refusals: Vec<Refused>,
    /// Snapshot downloads: how the model's steps were realised.
    pub downloads: Downloads,
}

/// How snapshot downloads went (summed over a replay): the model installs in one `FetchSnapshot` step,
/// the replay in FetchSnapshot round trips of at most [`mapping::SNAPSHOT_CHUNK_BYTES`] each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Downloads {
    /// Snapshots installed.
    pub installs: u64,
    /// FetchSnapshot answers that carried bytes.
    pub chunks: u64,
    /// The fewest chunks one install took (0: no install yet).
    pub min_chunks: u64,
    /// Restarts with a `.checkpoint.part` on disk (a download cut short).
    pub part_restarts: u64,
}

impl Downloads {
    pub fn add(&mut self, o: &Downloads) {
        self.installs += o.installs;
        self.chunks += o.chunks;
        self.part_restarts += o.part_restarts;
        if o.min_chunks > 0 && (self.min_chunks == 0 || o.min_chunks < self.min_chunks) {
            self.min_chunks = o.min_chunks;
        }
    }
}

/// The implementation cluster. Cloning is cheap: nodes and messages are shared (`Arc`) and a node is
/// copied only when an input reaches it (`Arc::make_mut`), so the graph replay branches a cluster into
/// every successor of a model state and pays only for the nodes each action touches.
#[derive(Clone)]
pub struct Cluster {
    pub nodes: Vec<Arc<Node>>,
    /// The last election state each node asked the shell to persist.
    persisted: Vec<ElectionState>,
    /// Each node's durable log: its log effects applied in order (a flush completes at once). A restart
    /// starts from it.
    storage: Vec<Arc<MemoryLog>>,
    /// Each node's snapshot files (in memory, the bootstrap one left out): durable, as its log.
    files: Vec<Arc<BTreeMap<SnapshotId, Bytes>>>,
    /// Each node's `.checkpoint.part`: the download in progress, written chunk by chunk; durable.
    parts: Vec<Option<(SnapshotId, Bytes)>>,
    clocks: Vec<Millis>,
    /// Each node's model directory id: its disk (one more after each disk loss), durable.
    dirs: Vec<u8>,
    pub network: Vec<Arc<InFlight>>,
    clients: BTreeMap<u64, (Id, ChangeOp)>,
    next_client: u64,
    /// Ghost: the auto-join adds acknowledged at append (`append_acks`).
    append_acks: Vec<(u8, u8)>,
    bootstrap: Mask,
    /// `--start static`: nodes configured with static voters (`mapping::upgrade`).
    static_voters: bool,
    /// The model's `--auto-join`: every node's `controller.quorum.auto.join.enable`.
    auto_join: bool,
    seed: u64,
    network_kind: NetworkKind,
    hook: Option<NodeHook>,
}

impl Cluster {
    /// `servers` fresh nodes: empty logs, epoch 0, no vote, the bootstrap checkpoint (contract §1).
    pub fn new(
        servers: usize,
        bootstrap: Mask,
        start: model::Start,
        auto_join: bool,
        network_kind: NetworkKind,
        seed: u64,
        hook: Option<NodeHook>,
    ) -> Result<Cluster, String> {
        let mut c = Cluster {
            nodes: Vec::with_capacity(servers),
            persisted: vec![ElectionState::default(); servers],
            storage: (0..servers).map(|_| Arc::new(MemoryLog::new())).collect(),
            files: vec![Arc::default(); servers],
            parts: vec![None; servers],
            clocks: vec![0; servers],
            dirs: vec![0; servers],
            network: Vec::new(),
            clients: BTreeMap::new(),
            next_client: 1,
            append_acks: Vec::new(),
            bootstrap,
            static_voters: start == model::Start::Static,
            auto_join,
            seed,
            network_kind,
            hook,
        };
        for i in 0..servers {
            let node = c.build(i as Id, MemoryLog::new(), ElectionState::default())?;
            c.nodes.push(Arc::new(node));
        }
        Ok(c)
    }

    fn build(&self, i: Id, log: MemoryLog, state: ElectionState) -> Result<Node, String> {
        let dir = self.dirs.get(i as usize).copied().unwrap_or(0);
        let mut cfg = mapping::node_config(i, dir, self.bootstrap, self.seed, self.auto_join)?;
        if self.static_voters {
            cfg = mapping::upgrade::static_config(cfg, self.bootstrap)?;
        }
        let files = self.files.get(i as usize).map(|f| f.as_ref());
        // Start-up loads what the storage's rule keeps: a kept `.checkpoint.part` would be read as a
        // snapshot, as `MetadataLog::open` reads every file it keeps.
        let part = self.parts.get(i as usize).and_then(|p| p.as_ref());
        let metas = files
            .into_iter()
            .flatten()
            .chain(part.map(|(id, bytes)| (id, bytes)))
            .map(|(id, bytes)| snapshot_meta(*id, bytes))
            .collect::<Result<Vec<_>, _>>()?;
        let mut node = Node::with_snapshots(cfg, log, state, metas)
            .map_err(|e| format!("Node::with_snapshots for {i}: {e}"))?;
        // A deterministic wall clock: the replay stays a function of the model's trace.
        let now = self.clocks.get(i as usize).copied().unwrap_or(0);
        node.set_wall_clock(now, kraft::time::virtual_wall_clock(now));
        // Auto-join asks when the model's `AutoJoin` does, never by its period.
        node.auto_join_on_command_only();
        if let Some(hook) = &self.hook {
            hook(&mut node);
        }
        Ok(node)
    }

    /// The node's clock for its next input (1 ms per input).
    fn tick_clock(&mut self, i: Id) -> Millis {
        self.clocks[i as usize] += 1;
        self.clocks[i as usize]
    }

    pub fn now(&self, i: Id) -> Millis {
        self.clocks[i as usize]
    }

    /// Applies an output of node `i`: effects first (the shell's rule), then messages and replies.
    /// `request`: the sender and API of the request this output answers, if the input was one.
    fn absorb(
        &mut self,
        i: Id,
        out: Output,
        request: Option<(i32, ApiKey)>,
        applied: &mut Applied,
    ) -> Result<(), String> {
        // The shell's answers to snapshot effects, handed to the node after this output.
        let mut taken = None;
        let mut loaded = None;
        for e in out.effects {
            match e {
                Effect::PersistElectionState(s) => self.persisted[i as usize] = s,
                Effect::AppendLog(batches) => Arc::make_mut(&mut self.storage[i as usize])
                    .append_replicated(batches)
                    .map_err(|e| {
                        format!("node {i}: an append that does not continue its log: {e}")
                    })?,
                Effect::TruncateLog(offset) => Arc::make_mut(&mut self.storage[i as usize])
                    .truncate_to(offset)
                    .map_err(|e| format!("node {i}: a truncation outside its log: {e}"))?,
                Effect::FlushLog { up_to } => {
                    let end = self.storage[i as usize].end_offset();
                    if up_to != end {
                        return Err(format!(
                            "node {i}: a flush up to {up_to}, its log ends at {end}"
                        ));
                    }
                }
                Effect::TakeSnapshot {
                    id,
                    last_contained_log_timestamp,
                    kraft_version,
                    voters,
                    append_time,
                } => {
                    let file = kraft::records::encode_control_snapshot(
                        id,
                        last_contained_log_timestamp,
                        kraft_version,
                        voters.as_ref(),
                        append_time,
                    )
                    .map_err(|e| format!("node {i}: snapshot {id} does not encode: {e}"))?;
                    let meta = snapshot_meta(id, &file)?;
                    Arc::make_mut(&mut self.files[i as usize]).insert(id, file);
                    taken = Some((id, meta));
                }
                Effect::MoveLogStart { offset } => {
                    let files = Arc::make_mut(&mut self.files[i as usize]);
                    let Some(id) = files.keys().find(|s| s.end_offset == offset).copied() else {
                        return Err(format!("node {i}: log start {offset} is no snapshot's end"));
                    };
                    if !Arc::make_mut(&mut self.storage[i as usize]).advance_start(offset, id.epoch)
                    {
                        return Err(format!("node {i}: log start {offset} does not move up"));
                    }
                    files.retain(|s, _| *s >= id);
                }
                Effect::WriteSnapshotChunk {
                    id,
                    position,
                    bytes,
                } => {
                    // Position 0 starts (or restarts) the file; any other continues it
                    // (`MetadataLog::write_snapshot_chunk`).
                    let part = &mut self.parts[i as usize];
                    let written = match part {
                        _ if position == 0 => Vec::new(),
                        Some((p, b)) if *p == id && b.len() as u64 == position => b.to_vec(),
                        _ => {
                            return Err(format!(
                            "node {i}: chunk of {id} at {position} does not continue the download"
                        ))
                        }
                    };
                    let mut written = written;
                    written.extend_from_slice(&bytes);
                    *part = Some((id, Bytes::from(written)));
                }
                Effect::AbortSnapshotDownload { id } => {
                    let part = &mut self.parts[i as usize];
                    if part.as_ref().is_some_and(|(p, _)| *p == id) {
                        *part = None;
                    }
                }
                Effect::CompleteSnapshot { id, size } => {
                    let Some((part_id, part)) = self.parts[i as usize].take() else {
                        return Err(format!("node {i}: {id} complete without a download"));
                    };
                    if (part_id, part.len() as u64) != (id, size) {
                        return Err(format!(
                            "node {i}: {id} of {size} bytes complete, {} bytes of {part_id} written",
                            part.len()
                        ));
                    }
                    let bytes = part;
                    let meta = snapshot_meta(id, &bytes)?;
                    // Kafka's `truncateToLatestSnapshot`: the log starts at the snapshot.
                    let files = Arc::make_mut(&mut self.files[i as usize]);
                    files.retain(|held, _| *held > id);
                    files.insert(id, bytes);
                    self.storage[i as usize] =
                        Arc::new(MemoryLog::starting_at(id.end_offset, id.epoch));
                    loaded = Some((id, meta));
                    applied.downloads.installs += 1;
                }
            }
        }
        // The shell contract: a request is answered once, in the same output (no fetch waits here:
        // `fetch_max_wait_ms` is 0), to its sender; nothing else produces a reply.
        let answered: Vec<(i32, ApiKey)> = out
            .replies
            .iter()
            .map(|(to, m)| (*to, m.api_key()))
            .collect();
        if answered != Vec::from_iter(request) {
            return Err(format!(
                "node {i} answered {answered:?}, expected exactly {request:?}"
            ));
        }
        for (dst, msg) in out.replies {
            self.send(i, dst, msg)?;
        }
        for (dst, msg) in out.requests {
            self.send(i, dst, msg)?;
        }
        for (client, resp) in out.client_replies {
            // A request gets one reply: forget the client (keeps clones small).
            let Some((server, op)) = self.clients.remove(&client.0) else {
                return Err(format!("node {i} replied to unknown client {}", client.0));
            };
            if server != i {
                return Err(format!("node {i} replied to a request sent to {server}"));
            }
            let code = match resp {
                ClientResponse::AddRaftVoter(r) => r.error_code,
                ClientResponse::RemoveRaftVoter(r) => r.error_code,
                ClientResponse::UpdateRaftVoter(r) => r.error_code,
                ClientResponse::UpdateFeatures(r) => mapping::upgrade::features_code(&r)?,
                other => return Err(format!("unexpected client reply {other:?}")),
            };
            let error = mapping::error_code(code)
                .ok_or_else(|| format!("reply error code {code} has no model counterpart"))?;
            applied.replies.push(Reply { server, op, error });
            if code != 0 && op != ChangeOp::KraftVersionUpgrade {
                // The reply on the wire carries the code; the node keeps the typed outcome of the
                // last reply it built, which must be this one (one refusal per input).
                let last = self.nodes[i as usize].last_change_reply();
                let Some(r) = last.filter(|r| r.client.0 == client.0) else {
                    return Err(format!(
                        "node {i}: no typed outcome for the reply to {client:?}"
                    ));
                };
                if let ChangeOutcome::Refused(reason) = r.outcome {
                    let reason = refusal::reason(reason)?;
                    applied.refusals.push(Refused { server, op, reason });
                }
            }
        }
        if let Some((id, meta)) = taken {
            let now = self.tick_clock(i);
            let out = Arc::make_mut(&mut self.nodes[i as usize]).snapshot_taken(now, id, Ok(meta));
            self.absorb(i, out, None, applied)?;
        }
        if let Some((id, meta)) = loaded {
            let now = self.tick_clock(i);
            let out = Arc::make_mut(&mut self.nodes[i as usize]).snapshot_loaded(now, id, Ok(meta));
            self.absorb(i, out, None, applied)?;
        }
        let (disk, node) = (&self.storage[i as usize], self.nodes[i as usize].log());
        if disk.batches() != node.batches() || disk.start_offset() != node.start_offset() {
            return Err(format!("node {i}: its log effects do not rebuild its log"));
        }
        Ok(())
    }

    /// The new voter `dst` answers the leader's ApiVersions request, and the leader gets the answer.
    fn answer_api_versions(
        &mut self,
        leader: Id,
        dst: i32,
        req: Message,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let Some(voter) = usize::try_from(dst).ok().filter(|d| *d < self.nodes.len()) else {
            return Err(format!(
                "node {leader} sent ApiVersions to an unknown node {dst}"
            ));
        };
        let Message::ApiVersionsRequest(req) = mapping::through_wire(&req)? else {
            return Err("ApiVersions request changed kind through the wire".into());
        };
        let resp = Message::ApiVersionsResponse(self.nodes[voter].api_versions(&req));
        let resp = mapping::through_wire(&resp)?;
        let now = self.tick_clock(leader);
        let out = Arc::make_mut(&mut self.nodes[leader as usize]).handle(now, dst, resp);
        self.absorb(leader, out, None, applied)
    }

    fn send(&mut self, src: Id, dst: i32, msg: Message) -> Result<(), String> {
        if mapping::left_out(&msg) {
            return Ok(());
        }
        let dst = Id::try_from(dst)
            .ok()
            .filter(|d| (*d as usize) < self.nodes.len());
        let Some(dst) = dst else {
            return Err(format!("node {src} sent a message to an unknown node"));
        };
        mapping::upgrade::check_voter_key(
            &msg,
            self.nodes[src as usize].latest_voters(),
            dst.into(),
        )?;
        let (msg, digest) = mapping::through_wire_digest(&msg)?;
        let mut envelope = Envelope {
            src,
            dst,
            msg: mapping::abstract_message(&msg, src)?,
        };
        // A Fetch response echoes the request's key, whose directory id Kafka's response does not
        // carry: the requester's current one (a response to an earlier disk's request would be the
        // model's with the old one; the named graphs with disk losses fetch in sync mode).
        if let model::types::Msg::FetchResponse(r) = &mut envelope.msg {
            r.request.replica_dir = self.dirs[dst as usize];
        }
        if self.network_kind.duplicating() && self.network.iter().any(|m| m.envelope == envelope) {
            return Ok(()); // a set, as in the model
        }
        self.network.push(Arc::new(InFlight {
            envelope,
            msg,
            digest,
        }));
        Ok(())
    }

    fn fire(&mut self, i: Id, timer: Timer, applied: &mut Applied) -> Result<(), String> {
        let node = &self.nodes[i as usize];
        let Some(deadline) = node.timers().get(timer) else {
            return Err(format!("node {i}: the {timer:?} timer is not armed"));
        };
        let now = self.clocks[i as usize].max(deadline);
        self.clocks[i as usize] = now;
        let out = Arc::make_mut(&mut self.nodes[i as usize]).fire(now, timer);
        self.absorb(i, out, None, applied)
    }

    fn take(&mut self, env: &Envelope) -> Result<Arc<InFlight>, String> {
        let pos = self
            .network
            .iter()
            .position(|m| m.envelope == *env)
            .ok_or_else(|| format!("no such message in the implementation's network: {env:?}"))?;
        Ok(if self.network_kind.duplicating() {
            self.network[pos].clone()
        } else {
            self.network.remove(pos)
        })
    }

    fn deliver(&mut self, m: Arc<InFlight>, applied: &mut Applied) -> Result<(), String> {
        let (src, dst) = (m.envelope.src, m.envelope.dst);
        let now = self.tick_clock(dst);
        let msg = Arc::try_unwrap(m).map_or_else(|m| m.msg.clone(), |m| m.msg);
        let request = msg.is_request().then(|| (i32::from(src), msg.api_key()));
        let out = Arc::make_mut(&mut self.nodes[dst as usize]).handle(now, i32::from(src), msg);
        self.absorb(dst, out, request, applied)
    }

    /// Applies one model action (`fetch`: the model's fetch granularity for this action).
    pub fn apply(&mut self, action: &Action, fetch: FetchMode) -> Result<Applied, String> {
        let mut applied = Applied::default();
        let n = self.nodes.len() as Id;
        let check = |i: Id| {
            if i < n {
                Ok(())
            } else {
                Err(format!("server {i} does not exist"))
            }
        };
        match *action {
            Action::ElectionTimeout(i) => {
                check(i)?;
                self.fire(i, Timer::Election, &mut applied)?
            }
            Action::FetchTimeout(i) => {
                check(i)?;
                self.fire(i, Timer::FetchTimeout, &mut applied)?
            }
            Action::CheckQuorumTimeout(i) => {
                check(i)?;
                self.fire(i, Timer::CheckQuorum, &mut applied)?
            }
            Action::ChangeTimeout(i) => {
                check(i)?;
                self.fire(i, Timer::PendingChange, &mut applied)?
            }
            Action::Resign(i) => {
                // No input: the implementation resigned within the input that committed its removal
                // (the replay compares after this action, see `mapping`).
                check(i)?;
            }
            Action::AutoJoin { replica, leader } => {
                check(replica)?;
                check(leader)?;
                self.auto_join(replica, leader, &mut applied)?;
            }
            Action::DiskLoss(i) => {
                check(i)?;
                self.lose_disk(i, &mut applied)?;
            }
            Action::Restart(i) => {
                check(i)?;
                // A follower that downloads a snapshot crashes with part of it on disk: one chunk
                // first, when its leader serves it (the model's partial download is volatile).
                if let Some(leader) = self.serving_leader(i) {
                    self.cut_download_short(i, leader, &mut applied)?;
                }
                // Start-up (`MetadataLog::open`): the files the storage's rule does not keep are deleted.
                let start = self.storage[i as usize].start_offset();
                let part = &mut self.parts[i as usize];
                if part
                    .as_ref()
                    .is_some_and(|(id, _)| !kept_at_start(*id, SnapshotFileKind::Partial, start))
                {
                    *part = None;
                }
                let kept =
                    |id: &SnapshotId| kept_at_start(*id, SnapshotFileKind::Checkpoint, start);
                if !self.files[i as usize].keys().all(kept) {
                    Arc::make_mut(&mut self.files[i as usize]).retain(|id, _| kept(id));
                }
                let log = MemoryLog::clone(&self.storage[i as usize]);
                let state = self.persisted[i as usize].clone();
                self.nodes[i as usize] = Arc::new(self.build(i, log, state)?);
                // A restarted Candidate's or Resigned leader's first poll (its Vote or
                // EndQuorumEpoch requests) is part of the restart.
                if self.nodes[i as usize]
                    .timers()
                    .get(Timer::FirstPoll)
                    .is_some()
                {
                    self.fire(i, Timer::FirstPoll, &mut applied)?;
                }
            }
            Action::ClientAppend(i) => {
                check(i)?;
                let now = self.tick_clock(i);
                let (_, out) = Arc::make_mut(&mut self.nodes[i as usize])
                    .append(now, vec![Bytes::from_static(b"conformance")])
                    .map_err(|e| format!("client append at {i} refused: {e}"))?;
                self.absorb(i, out, None, &mut applied)?;
            }
            Action::Change { server, op } => {
                check(server)?;
                // The key the request names: the replica's current one for an add or update, the
                // one the receiver's latest set holds for a removal (the model's `op_dir`).
                let dir = match op {
                    ChangeOp::Remove(j) => self.voter_dir(server, j),
                    ChangeOp::Add(j) | ChangeOp::Update(j) | ChangeOp::Swap { add: j, .. } => {
                        self.dirs.get(j as usize).copied().unwrap_or(0)
                    }
                    // The upgrade's pending kind, never an operator's Change (no request below).
                    ChangeOp::KraftVersionUpgrade => 0,
                };
                let req = mapping::change_request(op, dir).ok_or_else(|| {
                    format!(
                        "{op:?} has no Kafka request (only the swap-voter bug variant does this)"
                    )
                })?;
                let req = match req {
                    ChangeRequest::Add(r) => ClientRequest::AddRaftVoter {
                        request: r,
                        ack_when_committed: true,
                    },
                    ChangeRequest::Remove(r) => ClientRequest::RemoveRaftVoter(r),
                    ChangeRequest::Update(r) => {
                        let r = r.with_current_leader_epoch(self.nodes[server as usize].epoch());
                        self.check_own_update(server, &r)?;
                        ClientRequest::UpdateRaftVoter(r)
                    }
                };
                self.serve_change(server, op, req, &mut applied)?;
            }
            Action::Fetch { replica, leader } => {
                check(replica)?;
                check(leader)?;
                let before = self.network.len();
                // The model names the fetch target (an observer's bootstrap choice): `fetch_from`.
                let now = self.tick_clock(replica);
                let mut out = Arc::make_mut(&mut self.nodes[replica as usize])
                    .fetch_from(now, i32::from(leader));
                self.drop_own_report(replica, &mut out);
                self.absorb(replica, out, None, &mut applied)?;
                let mut sent: Vec<Arc<InFlight>> = self.network.drain(before..).collect();
                let n = sent.len();
                let (1, Some(req)) = (n, sent.pop()) else {
                    return Err(format!(
                        "the Fetch timer of {replica} sent {n} messages, expected one FetchRequest"
                    ));
                };
                if !matches!(req.msg, Message::FetchRequest(_)) || req.envelope.dst != leader {
                    return Err(format!(
                        "the Fetch timer of {replica} sent {:?} to {}, the model fetches from {leader}",
                        req.envelope.msg, req.envelope.dst
                    ));
                }
                match fetch {
                    FetchMode::Async => self.network.push(req),
                    FetchMode::Sync => {
                        self.deliver(req, &mut applied)?;
                        let pos = self
                            .network
                            .iter()
                            .rposition(|m| {
                                m.envelope.src == leader
                                    && m.envelope.dst == replica
                                    && matches!(m.msg, Message::FetchResponse(_))
                            })
                            .ok_or_else(|| {
                                format!("leader {leader} did not answer the Fetch of {replica}")
                            })?;
                        let resp = self.network.remove(pos);
                        self.deliver(resp, &mut applied)?;
                    }
                }
            }
            Action::Deliver(env) => {
                let m = self.take(&env)?;
                self.deliver(m, &mut applied)?;
            }
            Action::TakeSnapshot(i) => {
                check(i)?;
                let now = self.tick_clock(i);
                let out = Arc::make_mut(&mut self.nodes[i as usize]).take_snapshot_now(now);
                self.absorb(i, out, None, &mut applied)?;
            }
            Action::AdvanceLogStart(i) => {
                check(i)?;
                let now = self.tick_clock(i);
                let out = Arc::make_mut(&mut self.nodes[i as usize]).clean_now(now);
                self.absorb(i, out, None, &mut applied)?;
            }
            Action::FetchSnapshot { replica, leader } => {
                check(replica)?;
                check(leader)?;
                self.fetch_snapshot(replica, leader, &mut applied)?;
            }
            Action::UpgradeKraftVersion(i) => {
                check(i)?;
                self.upgrade(i, &mut applied)?;
            }
            Action::Drop(env) => {
                let pos = self
                    .network
                    .iter()
                    .position(|m| m.envelope == env)
                    .ok_or_else(|| format!("no such message to drop: {env:?}"))?;
                self.network.remove(pos);
            }
            // A retried request: the same bytes in flight once more.
            Action::Duplicate(env) => {
                let m = self.network.iter().find(|m| m.envelope == env).cloned();
                let m = m.ok_or_else(|| format!("no such message to duplicate: {env:?}"))?;
                self.network.push(m);
            }
        }
        Ok(applied)
    }

    /// A replaced disk: node `i` starts again from a freshly formatted data directory under its node
    /// id and the next directory id (`mapping::directory_id_at`): no log, no snapshot, no download,
    /// the default election state, the bootstrap checkpoint. Its clock goes on (the shell's clock is
    /// the machine's). The node's first poll fires as after a restart.
    fn lose_disk(&mut self, i: Id, applied: &mut Applied) -> Result<(), String> {
        let k = i as usize;
        self.dirs[k] += 1;
        self.persisted[k] = ElectionState::default();
        self.storage[k] = Arc::new(MemoryLog::new());
        self.files[k] = Arc::default();
        self.parts[k] = None;
        self.nodes[k] = Arc::new(self.build(i, MemoryLog::new(), ElectionState::default())?);
        // The old process's Vote and Fetch exchanges die with its connections (the model's
        // `forget_exchanges`): its requests in flight and the answers on their way to it.
        self.network.retain(|m| match m.envelope.msg {
            Msg::VoteResponse { .. } | Msg::FetchResponse(_) => m.envelope.dst != i,
            Msg::VoteRequest { .. } | Msg::PreVoteRequest { .. } | Msg::FetchRequest(_) => {
                m.envelope.src != i
            }
            _ => true,
        });
        if self.nodes[k].timers().get(Timer::FirstPoll).is_some() {
            self.fire(i, Timer::FirstPoll, applied)?;
        }
        Ok(())
    }

    /// The model directory id of node `j` (its current disk).
    pub fn dir(&self, j: Id) -> u8 {
        self.dirs[j as usize]
    }

    /// The model directory id of voter `j` in node `i`'s latest voter set (0 if `j` is no voter there).
    fn voter_dir(&self, i: Id, j: Id) -> u8 {
        self.nodes[i as usize]
            .latest_voters()
            .nodes()
            .find(|n| n.key.id == i32::from(j))
            .and_then(|n| mapping::key_dir(&n.key, j, "voter directory id").ok())
            .unwrap_or(0)
    }

    /// Node `i`'s abstract state (`mapping::abstract_view`).
    fn abstract_of(&self, i: Id) -> Result<mapping::Abstract, String> {
        let node = &self.nodes[i as usize];
        mapping::abstract_view(
            i,
            node,
            &node.view(),
            node.leader_state().map(|l| l.epoch_start_offset),
            self.nodes.len(),
            // Before and after a chunk: the same keys (the ones the voter set names).
            &|j| self.voter_dir(i, j),
        )
    }

    /// True if the in-flight envelopes are `model`'s (sorted; a multiset, or a set on a duplicating
    /// network). No allocation: the networks hold a handful of messages.
    pub fn network_is(&self, model: &[Envelope]) -> bool {
        let count = |e: &Envelope| self.network.iter().filter(|m| m.envelope == *e).count();
        if self.network_kind.duplicating() {
            return self
                .network
                .iter()
                .all(|m| model.binary_search(&m.envelope).is_ok())
                && model.iter().all(|e| count(e) > 0);
        }
        self.network.len() == model.len()
            && model.iter().enumerate().all(|(k, e)| {
                // Count each distinct envelope once, at the start of its run.
                k > 0 && model[k - 1] == *e
                    || count(e) == model[k..].iter().take_while(|x| *x == e).count()
            })
    }

    /// The durable election state node `i` last asked the shell to persist.
    pub fn persisted(&self, i: Id) -> &ElectionState {
        &self.persisted[i as usize]
    }

    /// The in-flight envelopes, sorted (a set on a duplicating network), as the model keeps them.
    pub fn envelopes(&self) -> Vec<Envelope> {
        let mut v: Vec<Envelope> = self.network.iter().map(|m| m.envelope).collect();
        v.sort();
        if self.network_kind.duplicating() {
            v.dedup();
        }
        v
    }
}
