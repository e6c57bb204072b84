//! Data-driven scenarios of the quorum core, etcd-raft style: every file under `tests/testdata/` is a
//! list of commands run against the in-process simulator, each followed by `----` and the output it must
//! print. A protocol designer reads and extends them without writing Rust.
//!
//! ```text
//! # comment
//! cluster voters=3 observers=1 seed=11
//! ----
//! 1: Unattached epoch=0 leader=- hw=- leo=0 voters=[1,2,3]
//! ...
//! ```
//!
//! An output ends at the first empty line. `REWRITE=1 cargo test -p kraft --test scenarios` regenerates
//! every expectation from the current behaviour (review the diff before committing it).
//!
//! Commands (node ids are plain integers):
//! - `cluster voters=N [observers=M] [seed=S] [static]`: a fresh cluster (bootstrap checkpoint, or
//!   static voters with `kraft.version` 0); prints `raft-state`. Own snapshots: `snapshot-bytes=B`
//!   (retention checked every 1000 ms), `snapshot-interval-ms=MS`, `retention-bytes=B`, `retention-ms=MS`,
//!   `snapshot-max-bytes=B`.
//! - `raft-state`: one line per node: role, epoch, known leader, HW, log end, latest and committed voters.
//! - `elect ID`: fires ID's election timer (its fetch timeout if it follows a leader) and delivers every
//!   message until the network is quiet; prints `raft-state`.
//! - `fire ID TIMER`: fires one armed timer (`election`, `fetch-timeout`, `fetch`, `check-quorum`,
//!   `pending-change`, `begin-quorum-epoch`, `first-poll`); prints the messages it queued.
//! - `network`: the messages in flight, in delivery order.
//! - `deliver [N]`: delivers the first N messages (all by default), printing each as it is delivered;
//!   `deliver at=I` delivers only the message at position I of `network`.
//! - `drop INDEX`: drops the message at INDEX of `network`.
//! - `fetch ID`: `fire ID fetch` then `deliver`.
//! - `replicate [rounds=N]`: lets every follower fetch until nothing changes (at most N rounds, 20 by
//!   default); prints `raft-state`.
//! - `add-voter LEADER ID`, `remove-voter LEADER ID`, `update-voter LEADER ID`: the membership request
//!   for node ID sent to LEADER; prints the immediate reply (with the leader's typed refusal reason in
//!   parentheses) or `pending`. Options: `dir=zero|new` (nil or a replaced disk's directory id),
//!   `listener=NAME`, `port=P`, `cluster=NAME`; for update-voter also `epoch=E` (default: the leader's)
//!   and `kraft=MIN-MAX` (default 0-1). An add's ApiVersions round trip to node ID (KIP-853) is delivered
//!   at once and printed before the reply; `api-versions=hold` leaves the request in the network.
//! - `edit INDEX key=value...`: changes the queued message at INDEX of `network`: a Fetch's `offset=`,
//!   `last-epoch=`, `replica=`; a Vote's or BeginQuorumEpoch's `voter-dir=new`; an EndQuorumEpoch's
//!   `leader=`. Prints `network`.
//! - `replace-disk ID`: ID restarts on an empty disk (new directory id, empty log, no election state).
//! - `update-features ID LEVEL [type=upgrade|safe|unsafe|N] [validate=true] [version=V] [feature=NAME]`:
//!   UpdateFeatures (default v2, `kraft.version`) sent to node ID; prints the reply or `pending`.
//! - `replies`: the membership and UpdateFeatures replies given since the last `replies` (or
//!   `add-voter`/`remove-voter`).
//! - `describe ID vN [topic=NAME] [partitions=P,Q] [topics=NAME:P,...] [detail=yes]`: the DescribeQuorum
//!   v0–v3 answer of node ID (encoded through the wire codec); by default for `__cluster_metadata`
//!   partition 0. `detail=yes` adds each replica's directory id and fetch / caught-up timestamps and each
//!   node's listeners. Every `describe` also checks that all four versions encode and agree (v0–v2 are v3
//!   without what they cannot carry) and that a committed voter that is current reports one state.
//! - `append ID N`: N data records appended on leader ID; prints the base offset.
//! - `crash ID`, `restart ID`, `advance MS` (every clock, firing due timers), `log ID` (a VotersRecord
//!   shows `ID:PORT` for a voter whose default listener's port is not the simulator's for that id).
//! - `wall-clock ID MS`: node ID's wall clock reads MS (milliseconds since the Unix epoch) now and runs on
//!   with its clock (the simulator starts every node's at 2026-01-01T00:00:00Z, 1767225600000).
//! - `create-times ID`: node ID's durable log as Kafka record batches, one line each: offsets@epoch, the
//!   header's FirstTimestamp and MaxTimestamp, every record's timestamp (CreateTime).
//! - `run MS`: a healthy network for MS ms (100 ms `advance` steps, every message delivered after each);
//!   prints `raft-state`.
//! - `cluster ... snapshot-bytes=N [snapshot-interval-ms=T] [retention-bytes=M] [snapshot-max-bytes=B]`:
//!   every node takes its own snapshots once N bytes were committed since its last one (`metadata.log.max.
//!   record.bytes.between.snapshots`) or T ms passed since it (`metadata.log.max.snapshot.interval.ms`;
//!   both checked as the HW moves), checks retention every second of `advance` (`metadata.max.retention.
//!   bytes` = M), and fetches snapshots in chunks of B bytes (`controller.quorum.fetch.snapshot.max.bytes`).
//! - `snapshots`: one line per node: log start, snapshots held (`END@EPOCH`), a download or install in
//!   progress.
//! - `forge-vote FROM TO EPOCH`: queues a Vote request that claims to come from FROM at EPOCH (what any
//!   client that reaches a listener can send without mutual TLS).
//!
//! Any command's output ends with the transitions a node refused meanwhile (`refused by ID: ...`). After
//! every command the runner checks ElectionSafety (at most one leader per epoch since `cluster`).

mod scenario_support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use scenario_support::Opts;

use kafka_protocol::messages::{fetch_response, BrokerId};
use kafka_protocol::ResponseError;
use kraft::log::RaftLog;
use kraft::node::{ChangeOutcome, ClientRequest, ClientResponse, EntryKind, Message, Timer};
use kraft::voter_set::VoterSet;
use kraft_sim::{self as sim, change_error_code, Sim};

fn code_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".into(),
        Some(e) => format!("{e}"),
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn ids(set: &VoterSet) -> String {
    let v: Vec<String> = set.ids().map(|i| i.to_string()).collect();
    format!("[{}]", v.join(","))
}

/// Like [`ids`], with `:PORT` after a voter whose default listener is not the simulator's for its id.
fn ids_with_ports(set: &VoterSet) -> String {
    let v: Vec<String> = set
        .nodes()
        .map(|n| match n.default_listener() {
            Some(l) if l.port != sim::listener(n.key.id).port => format!("{}:{}", n.key.id, l.port),
            _ => n.key.id.to_string(),
        })
        .collect();
    format!("[{}]", v.join(","))
}

fn leader_id(b: BrokerId) -> String {
    if b.0 < 0 {
        "-".into()
    } else {
        b.0.to_string()
    }
}

/// A response's error: its partition's when that is set, else the top-level one.
fn error_summary(kind: &str, top: i16, partition: Option<i16>) -> String {
    match partition.filter(|&c| c != 0) {
        Some(c) => format!("{kind} partition {}", code_name(c)),
        None => format!("{kind} {}", code_name(top)),
    }
}

/// One line for a message: its kind and the fields a designer reasons with.
fn summary(msg: &Message) -> String {
    match msg {
        Message::VoteRequest(r) => {
            let p = &r.topics[0].partitions[0];
            format!(
                "Vote epoch={} last={}@{}",
                p.replica_epoch, p.last_offset, p.last_offset_epoch
            )
        }
        Message::VoteResponse(r) => match r.topics.first().and_then(|t| t.partitions.first()) {
            Some(p) => format!(
                "VoteResponse {} epoch={} leader={} granted={}",
                code_name(p.error_code),
                p.leader_epoch,
                leader_id(p.leader_id),
                p.vote_granted
            ),
            None => format!("VoteResponse {}", code_name(r.error_code)),
        },
        Message::BeginQuorumEpochRequest(r) => {
            let p = &r.topics[0].partitions[0];
            format!(
                "BeginQuorumEpoch epoch={} leader={}",
                p.leader_epoch, p.leader_id.0
            )
        }
        Message::BeginQuorumEpochResponse(r) => {
            let p = r.topics.first().and_then(|t| t.partitions.first());
            error_summary(
                "BeginQuorumEpochResponse",
                r.error_code,
                p.map(|p| p.error_code),
            )
        }
        Message::EndQuorumEpochRequest(r) => {
            let p = &r.topics[0].partitions[0];
            let successors: Vec<String> = p
                .preferred_candidates
                .iter()
                .map(|c| c.candidate_id.0.to_string())
                .collect();
            format!(
                "EndQuorumEpoch epoch={} leader={} successors=[{}]",
                p.leader_epoch,
                p.leader_id.0,
                successors.join(",")
            )
        }
        Message::EndQuorumEpochResponse(r) => {
            let p = r.topics.first().and_then(|t| t.partitions.first());
            error_summary(
                "EndQuorumEpochResponse",
                r.error_code,
                p.map(|p| p.error_code),
            )
        }
        Message::FetchRequest(r) => {
            let p = &r.topics[0].partitions[0];
            format!(
                "Fetch epoch={} offset={} last_epoch={}",
                p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch
            )
        }
        Message::FetchSnapshotRequest(r) => {
            let p = &r.topics[0].partitions[0];
            format!(
                "FetchSnapshot epoch={} snapshot={}@{} position={}",
                p.current_leader_epoch, p.snapshot_id.end_offset, p.snapshot_id.epoch, p.position
            )
        }
        Message::FetchSnapshotResponse(r) => {
            let Some(p) = r.topics.first().and_then(|t| t.partitions.first()) else {
                return format!("FetchSnapshotResponse {}", code_name(r.error_code));
            };
            let mut s = format!(
                "FetchSnapshotResponse {} epoch={} leader={}",
                code_name(p.error_code),
                p.current_leader.leader_epoch,
                leader_id(p.current_leader.leader_id),
            );
            if p.error_code == 0 {
                let _ = write!(
                    s,
                    " snapshot={}@{} size={} position={} bytes={}",
                    p.snapshot_id.end_offset,
                    p.snapshot_id.epoch,
                    p.size,
                    p.position,
                    p.unaligned_records.len()
                );
            }
            s
        }
        Message::ApiVersionsRequest(_) => "ApiVersions".into(),
        Message::UpdateRaftVoterRequest(r) => {
            let ports: Vec<String> = r.listeners.iter().map(|l| l.port.to_string()).collect();
            format!(
                "UpdateRaftVoter epoch={} voter={} ports=[{}]",
                r.current_leader_epoch,
                r.voter_id,
                ports.join(",")
            )
        }
        Message::UpdateRaftVoterResponse(r) => format!(
            "UpdateRaftVoterResponse {} epoch={} leader={}",
            code_name(r.error_code),
            r.current_leader.leader_epoch,
            leader_id(r.current_leader.leader_id)
        ),
        Message::AddRaftVoterRequest(r) => {
            let ports: Vec<String> = r.listeners.iter().map(|l| l.port.to_string()).collect();
            format!(
                "AddRaftVoter voter={} ports=[{}]",
                r.voter_id,
                ports.join(",")
            )
        }
        Message::AddRaftVoterResponse(r) => {
            format!("AddRaftVoterResponse {}", code_name(r.error_code))
        }
        Message::RemoveRaftVoterRequest(r) => format!("RemoveRaftVoter voter={}", r.voter_id),
        Message::RemoveRaftVoterResponse(r) => {
            format!("RemoveRaftVoterResponse {}", code_name(r.error_code))
        }
        Message::ApiVersionsResponse(r) => {
            let range = r
                .supported_features
                .iter()
                .find(|f| f.name.as_str() == "kraft.version")
                .map_or("-".into(), |f| {
                    format!("{}-{}", f.min_version, f.max_version)
                });
            format!(
                "ApiVersionsResponse {} kraft.version={range}",
                code_name(r.error_code)
            )
        }
        Message::FetchResponse(r) => {
            let Some(p) = r.responses.first().and_then(|t| t.partitions.first()) else {
                return format!("FetchResponse {}", code_name(r.error_code));
            };
            let mut s = format!(
                "FetchResponse {} epoch={} leader={} hw={}",
                code_name(p.error_code),
                p.current_leader.leader_epoch,
                leader_id(p.current_leader.leader_id),
                p.high_watermark
            );
            let fetch_response::EpochEndOffset {
                epoch, end_offset, ..
            } = &p.diverging_epoch;
            if *epoch >= 0 {
                let _ = write!(s, " diverging={end_offset}@{epoch}");
            }
            if p.snapshot_id.epoch >= 0 || p.snapshot_id.end_offset >= 0 {
                let id = &p.snapshot_id;
                let _ = write!(s, " snapshot={}@{}", id.end_offset, id.epoch);
            }
            let bytes = p.records.as_ref().map_or(0, |r| r.len());
            if bytes > 0 {
                let _ = write!(s, " records={bytes}B");
            }
            s
        }
    }
}

fn reply_summary(resp: &ClientResponse) -> String {
    if let ClientResponse::UpdateFeatures(r) = resp {
        return scenario_support::features_summary(r, code_name);
    }
    match change_error_code(resp) {
        Some(code) => {
            let kind = match resp {
                ClientResponse::AddRaftVoter(_) => "AddRaftVoter",
                ClientResponse::RemoveRaftVoter(_) => "RemoveRaftVoter",
                _ => "UpdateRaftVoter",
            };
            format!("{kind} {}", code_name(code))
        }
        None => format!("{resp:?}"),
    }
}

fn timer(name: &str) -> Result<Timer, String> {
    Ok(match name {
        "election" => Timer::Election,
        "fetch-timeout" => Timer::FetchTimeout,
        "fetch" => Timer::Fetch,
        "check-quorum" => Timer::CheckQuorum,
        "pending-change" => Timer::PendingChange,
        "begin-quorum-epoch" => Timer::BeginQuorumEpoch,
        "first-poll" => Timer::FirstPoll,
        _ => return Err(format!("unknown timer {name}")),
    })
}

/// The interpreter's state: the cluster and the replies not yet printed.
#[derive(Default)]
struct Runner {
    sim: Option<Sim>,
    replies_seen: usize,
    refused_seen: usize,
    /// The leader seen in each epoch since `cluster` (ElectionSafety, checked after every command).
    leaders: std::collections::BTreeMap<i32, i32>,
}

impl Runner {
    fn sim(&mut self) -> Result<&mut Sim, String> {
        self.sim
            .as_mut()
            .ok_or_else(|| "no cluster: start with `cluster`".to_string())
    }

    fn raft_state(&mut self) -> Result<String, String> {
        let sim = self.sim()?;
        let mut out = String::new();
        let nodes: Vec<i32> = sim.nodes.keys().copied().collect();
        for id in nodes {
            if !sim.is_running(id) {
                let _ = writeln!(out, "{id}: crashed");
                continue;
            }
            let n = sim.node(id);
            let _ = write!(
                out,
                "{id}: {:?} epoch={} leader={} hw={} leo={} voters={}",
                n.role(),
                n.epoch(),
                opt(n.leader_id()),
                opt(n.high_watermark()),
                n.log().end_offset(),
                ids(n.latest_voters()),
            );
            if let Some(c) = n.committed_voters() {
                let _ = write!(out, " committed={}", ids(c));
            }
            out.push('\n');
        }
        Ok(out)
    }

    /// One line per running node: its log start, the snapshots it holds (`END@EPOCH`, `0@0` the
    /// bootstrap one) and a download or install in progress.
    fn snapshots(&mut self) -> Result<String, String> {
        let sim = self.sim()?;
        let mut out = String::new();
        for (id, sim_node) in &sim.nodes {
            let Some(n) = &sim_node.node else {
                let _ = writeln!(out, "{id}: crashed");
                continue;
            };
            let held: Vec<String> = n
                .snapshots()
                .map(|m| format!("{}@{}", m.id.end_offset, m.id.epoch))
                .collect();
            let _ = write!(
                out,
                "{id}: start={} snapshots=[{}]",
                n.log().start_offset(),
                held.join(",")
            );
            if let Some((d, written)) = n.snapshot_download() {
                let _ = write!(
                    out,
                    " downloading={}@{} written={written}",
                    d.end_offset, d.epoch
                );
            }
            if let Some(d) = n.installing_snapshot() {
                let _ = write!(out, " installing={}@{}", d.end_offset, d.epoch);
            }
            out.push('\n');
        }
        Ok(out)
    }

    fn deliver(&mut self, max: usize) -> Result<String, String> {
        self.deliver_from(0, max)
    }

    /// Delivers up to `max` messages, each the one at network position `at`.
    fn deliver_from(&mut self, at: usize, max: usize) -> Result<String, String> {
        let sim = self.sim()?;
        let mut out = String::new();
        let mut n = 0;
        while n < max && sim.network.len() > at {
            let env = &sim.network[at];
            let lost = if sim.is_running(env.to) {
                ""
            } else {
                " (lost: crashed)"
            };
            let _ = writeln!(out, "{}->{} {}{lost}", env.from, env.to, summary(&env.msg));
            sim.deliver(at);
            n += 1;
        }
        if n >= 10_000 && !sim.network.is_empty() {
            return Err("the network did not go quiet".into());
        }
        Ok(out)
    }

    fn network(&mut self) -> Result<String, String> {
        let sim = self.sim()?;
        let mut out = String::new();
        for (i, env) in sim.network.iter().enumerate() {
            let _ = writeln!(out, "{i}: {}->{} {}", env.from, env.to, summary(&env.msg));
        }
        Ok(out)
    }

    fn membership(&mut self, kind: &str, args: &[&str]) -> Result<String, String> {
        let (pos, o) = Opts::parse(
            args,
            &[
                "dir",
                "listener",
                "cluster",
                "port",
                "epoch",
                "kraft",
                "api-versions",
            ],
        )?;
        let hold = match o.get("api-versions") {
            None => false,
            Some("hold") => true,
            Some(v) => return Err(format!("api-versions={v}: expected hold")),
        };
        let [leader, id] = pos[..] else {
            return Err(format!("usage: {kind} LEADER ID [key=value...]"));
        };
        let (leader, id) = (num(leader)?, num(id)?);
        let req = match kind {
            "add-voter" => scenario_support::add_voter(id, &o)?,
            "remove-voter" => scenario_support::remove_voter(id, &o)?,
            _ => scenario_support::update_voter(id, self.sim()?.node(leader).epoch(), &o)?,
        };
        let sim = self.sim()?;
        let before = sim.client_replies.len();
        let queued = sim.network.len();
        let client = sim.client_held(leader, req);
        let mut out = String::new();
        // An add's ApiVersions round trip: delivered at once (and shown), or left in the network.
        if hold {
            for (i, env) in sim.network.iter().enumerate() {
                if matches!(env.msg, Message::ApiVersionsRequest(_)) {
                    let _ = writeln!(
                        out,
                        "{i}: {}->{} {} (held)",
                        env.from,
                        env.to,
                        summary(&env.msg)
                    );
                }
            }
        } else {
            for env in sim.deliver_api_versions(queued) {
                let lost = if sim.is_running(env.to) {
                    ""
                } else {
                    " (lost: crashed)"
                };
                let _ = writeln!(out, "{}->{} {}{lost}", env.from, env.to, summary(&env.msg));
            }
        }
        let replies: Vec<ClientResponse> = sim.client_replies[before..]
            .iter()
            .filter(|(_, c, _)| *c == client)
            .map(|(_, _, r)| r.clone())
            .collect();
        // The typed reason of an immediate refusal (the wire carries only the code).
        let reason = match sim.node(leader).last_change_reply() {
            Some(r) if r.client == sim.last_client_id() => match r.outcome {
                ChangeOutcome::Refused(why) => format!(" ({why:?})"),
                _ => String::new(),
            },
            _ => String::new(),
        };
        self.replies_seen = self.sim()?.client_replies.len();
        match replies.as_slice() {
            [] => out.push_str("pending\n"),
            rs => out.extend(rs.iter().map(|r| reply_summary(r) + &reason + "\n")),
        }
        Ok(out)
    }

    fn describe(&mut self, args: &[&str]) -> Result<String, String> {
        let (pos, o) = Opts::parse(args, &["topic", "partitions", "topics", "detail"])?;
        let [id, version] = pos[..] else {
            return Err(
                "usage: describe ID vN [topic=NAME] [partitions=P,Q] [topics=NAME:P,...] [detail=yes]"
                    .into(),
            );
        };
        let detail = o.get("detail") == Some("yes");
        let id = num(id)?;
        let version: i16 = version
            .strip_prefix('v')
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("bad version {version}"))?;
        let request = scenario_support::describe(&o)?;
        let r = match self
            .sim()?
            .client(id, ClientRequest::DescribeQuorum { version, request })
            .pop()
        {
            Some(ClientResponse::DescribeQuorum(r)) => r,
            other => return Err(format!("no DescribeQuorum answer: {other:?}")),
        };
        r.to_bytes(version)
            .map_err(|e| format!("v{version} does not encode: {e}"))?;
        self.describe_versions_agree(id, &o, &r)?;
        let mut out = format!("error={}\n", code_name(r.error_code));
        for t in &r.topics {
            if r.topics.len() > 1 {
                let _ = writeln!(out, "topic {}", t.topic_name);
            }
            for p in &t.partitions {
                let _ = writeln!(
                    out,
                    "partition {}: error={} leader={} epoch={} hw={}",
                    p.partition_index,
                    code_name(p.error_code),
                    p.leader_id,
                    p.leader_epoch,
                    p.high_watermark
                );
                let rows = |rs: &[kraft::wire::describe_quorum::ReplicaState]| {
                    let v: Vec<String> = rs
                        .iter()
                        .map(|r| match detail {
                            false => format!("{}@{}", r.replica_id, r.log_end_offset),
                            true => format!(
                                "{}@{}(dir={} fetch={} caught-up={})",
                                r.replica_id,
                                r.log_end_offset,
                                r.replica_directory_id,
                                r.last_fetch_timestamp,
                                r.last_caught_up_timestamp
                            ),
                        })
                        .collect();
                    format!("[{}]", v.join(" "))
                };
                let _ = writeln!(out, "  current-voters={}", rows(&p.current_voters));
                let _ = writeln!(out, "  observers={}", rows(&p.observers));
                if version >= 3 {
                    let _ = writeln!(out, "  committed-voters={}", rows(&p.committed_voters));
                }
            }
        }
        if version >= 2 && detail {
            for n in &r.nodes {
                let listeners: Vec<String> = n
                    .listeners
                    .iter()
                    .map(|l| format!("{}={}:{}", l.name, l.host, l.port))
                    .collect();
                let _ = writeln!(out, "node {} [{}]", n.node_id, listeners.join(" "));
            }
        } else if version >= 2 {
            let nodes: Vec<String> = r.nodes.iter().map(|n| n.node_id.to_string()).collect();
            let _ = writeln!(out, "nodes=[{}]", nodes.join(","));
        }
        Ok(out)
    }

    /// Every DescribeQuorum version answers the same quorum: each encodes, and v0–v2 are v3 without what
    /// they cannot carry (CommittedVoters below v3, Nodes below v2, and at v2 only the current voters'
    /// nodes). A committed voter that is also current reports the same state in both lists.
    fn describe_versions_agree(
        &mut self,
        id: i32,
        o: &Opts,
        asked: &kraft::wire::describe_quorum::DescribeQuorumResponse,
    ) -> Result<(), String> {
        let mut answers = Vec::new();
        for version in 0..=3i16 {
            let request = scenario_support::describe(o)?;
            let answer = self.sim()?.unrecorded(|sim| {
                sim.client(id, ClientRequest::DescribeQuorum { version, request })
                    .pop()
            });
            match answer {
                Some(ClientResponse::DescribeQuorum(r)) => {
                    r.to_bytes(version)
                        .map_err(|e| format!("v{version} does not encode: {e}"))?;
                    answers.push(r);
                }
                other => return Err(format!("no DescribeQuorum v{version} answer: {other:?}")),
            }
        }
        let v3 = &answers[3];
        let rows = |rs: &[kraft::wire::describe_quorum::ReplicaState]| -> Vec<(i32, i64)> {
            rs.iter()
                .map(|r| (r.replica_id, r.log_end_offset))
                .collect()
        };
        let asked_rows: Vec<_> = asked
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| (p.error_code, rows(&p.current_voters), rows(&p.observers)))
            .collect();
        for (version, r) in answers.iter().enumerate() {
            let err = |what: &str| {
                Err(format!(
                    "DescribeQuorum v{version} disagrees with v3: {what}"
                ))
            };
            if r.error_code != v3.error_code || r.topics.len() != v3.topics.len() {
                return err("error or topics");
            }
            let mut current_ids = Vec::new();
            for (t, t3) in r.topics.iter().zip(&v3.topics) {
                if t.partitions.len() != t3.partitions.len() {
                    return err("partitions");
                }
                for (p, p3) in t.partitions.iter().zip(&t3.partitions) {
                    let head = |p: &kraft::wire::describe_quorum::PartitionData| {
                        (
                            p.partition_index,
                            p.error_code,
                            p.leader_id,
                            p.leader_epoch,
                            p.high_watermark,
                        )
                    };
                    if head(p) != head(p3)
                        || rows(&p.current_voters) != rows(&p3.current_voters)
                        || rows(&p.observers) != rows(&p3.observers)
                    {
                        return err("leader, epoch, HW, voters or observers");
                    }
                    if version < 3 && !p.committed_voters.is_empty() {
                        return err("CommittedVoters below v3");
                    }
                    current_ids.extend(p.current_voters.iter().map(|r| r.replica_id));
                }
            }
            let nodes: Vec<i32> = r.nodes.iter().map(|n| n.node_id).collect();
            let expect: Vec<i32> = match version {
                0 | 1 => vec![],
                2 => v3
                    .nodes
                    .iter()
                    .map(|n| n.node_id)
                    .filter(|n| current_ids.contains(n))
                    .collect(),
                _ => nodes.clone(),
            };
            if nodes != expect {
                return err("Nodes");
            }
        }
        let v3_rows: Vec<_> = v3
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| (p.error_code, rows(&p.current_voters), rows(&p.observers)))
            .collect();
        if v3_rows != asked_rows {
            return Err("a repeated DescribeQuorum changed the answer".into());
        }
        for p in v3.topics.iter().flat_map(|t| &t.partitions) {
            for c in &p.committed_voters {
                if let Some(cur) = p
                    .current_voters
                    .iter()
                    .find(|r| r.replica_id == c.replica_id)
                {
                    if c != cur {
                        return Err(format!(
                            "committed voter {} reports another state than in CurrentVoters",
                            c.replica_id
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn log(&mut self, id: i32) -> Result<String, String> {
        let sim = self.sim()?;
        let mut out = String::new();
        for e in sim.node(id).view().log {
            let kind = match e.kind {
                EntryKind::Data => "Data".to_string(),
                EntryKind::LeaderChange => "LeaderChange".to_string(),
                EntryKind::KRaftVersion(v) => format!("KRaftVersion({v})"),
                EntryKind::Voters(set) => format!("Voters{}", ids_with_ports(&set)),
            };
            let _ = writeln!(out, "{}@{} {kind}", e.offset, e.epoch);
        }
        Ok(out)
    }

    /// Node `id`'s durable log as Kafka record batches: per batch its offsets, epoch, FirstTimestamp and
    /// MaxTimestamp (header) and its records' timestamps (base + delta), as `kafka-dump-log` reads them.
    fn create_times(&mut self, id: i32) -> Result<String, String> {
        let storage = &self.sim()?.nodes[&id].storage;
        let bytes = storage
            .read_bytes(storage.start_offset(), usize::MAX)
            .map_err(|e| e.to_string())?;
        let mut out = String::new();
        let mut at = 0;
        while at < bytes.len() {
            let (base, len) = kraft::records::batch_frame(&bytes, at).map_err(|e| e.to_string())?;
            let header = |from: usize| {
                i64::from_be_bytes(bytes[at + from..at + from + 8].try_into().unwrap())
            };
            let (epoch, first, max) = (
                i32::from_be_bytes(bytes[at + 12..at + 16].try_into().unwrap()),
                header(27),
                header(35),
            );
            let mut batch = bytes.slice(at..at + len);
            let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut batch)
                .map_err(|e| e.to_string())?;
            let times: Vec<String> = set
                .records
                .iter()
                .map(|r| r.timestamp.to_string())
                .collect();
            let last = base + set.records.len() as i64 - 1;
            let _ = writeln!(
                out,
                "{base}-{last}@{epoch} first={first} max={max} records=[{}]",
                times.join(",")
            );
            at += len;
        }
        Ok(out)
    }

    /// Runs one command; transitions a node refused meanwhile are appended to its output.
    fn step(&mut self, line: &str) -> Result<String, String> {
        let mut out = self.run(line)?;
        if let Some(sim) = &self.sim {
            for (&id, _) in sim.nodes.iter().filter(|(&id, _)| sim.is_running(id)) {
                let node = sim.node(id);
                if node.role() == kraft::node::Role::Leader {
                    let first = *self.leaders.entry(node.epoch()).or_insert(id);
                    if first != id {
                        return Err(format!(
                            "ElectionSafety: {first} and {id} both led epoch {}",
                            node.epoch()
                        ));
                    }
                }
            }
            for (id, e) in &sim.refused[self.refused_seen.min(sim.refused.len())..] {
                let _ = writeln!(out, "refused by {id}: {e}");
            }
            self.refused_seen = sim.refused.len();
        }
        Ok(out)
    }

    /// A Vote request as node FROM would send it to TO, but at `epoch`: what a peer that can reach the
    /// listener can forge.
    fn forge_vote(&mut self, args: &[&str]) -> Result<String, String> {
        use kafka_protocol::messages::vote_request::{PartitionData, TopicData};
        use kafka_protocol::messages::{TopicName, VoteRequest};
        use kafka_protocol::protocol::StrBytes;
        let [from, to, epoch] = args else {
            return Err("usage: forge-vote FROM TO EPOCH".into());
        };
        let (from, to, epoch) = (num(from)?, num(to)?, num(epoch)?);
        let sim = self.sim()?;
        let log = sim.node(from).log();
        let (last_epoch, last_offset) = (log.last_epoch(), log.end_offset());
        let req = VoteRequest::default()
            .with_cluster_id(Some(StrBytes::from_static_str("sim-cluster")))
            .with_voter_id(BrokerId(to))
            .with_topics(vec![TopicData::default()
                .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
                .with_partitions(vec![PartitionData::default()
                    .with_partition_index(0)
                    .with_replica_epoch(epoch)
                    .with_replica_id(BrokerId(from))
                    .with_replica_directory_id(sim::directory_id(from))
                    .with_voter_directory_id(sim::directory_id(to))
                    .with_last_offset_epoch(last_epoch)
                    .with_last_offset(last_offset)])]);
        sim.network.push(sim::Envelope {
            from,
            to,
            msg: Message::VoteRequest(req),
        });
        self.network()
    }

    fn run(&mut self, line: &str) -> Result<String, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (cmd, args) = words.split_first().ok_or("empty command")?;
        match (*cmd, args) {
            ("cluster", args) => {
                let (mut voters, mut observers, mut seed, mut statik) = (3, 0, 1, false);
                // Which nodes run with auto-join (KIP-1186): `auto-join` = the observers, `auto-join=3,4`.
                let mut auto_join: Vec<i32> = Vec::new();
                let mut auto_join_observers = false;
                let mut snapshots = kraft::node::SnapshotConfig::default();
                for a in args {
                    match a.split_once('=') {
                        Some(("voters", v)) => voters = num(v)?,
                        Some(("observers", v)) => observers = num(v)?,
                        Some(("seed", v)) => seed = num(v)? as u64,
                        Some(("snapshot-bytes", v)) => {
                            snapshots.enabled = true;
                            snapshots.max_record_bytes_between_snapshots = num(v)? as u64;
                            // Retention is checked at every `advance` step of 1 s or more.
                            snapshots.clean_interval_ms = 1000;
                        }
                        Some(("retention-bytes", v)) => {
                            snapshots.max_retention_bytes = num(v)? as i64
                        }
                        Some(("retention-ms", v)) => snapshots.max_retention_ms = num(v)? as i64,
                        Some(("snapshot-interval-ms", v)) => {
                            snapshots.max_snapshot_interval_ms = num(v)? as u64
                        }
                        Some(("snapshot-max-bytes", v)) => {
                            snapshots.fetch_snapshot_max_bytes = num(v)?
                        }
                        None if *a == "static" => statik = true,
                        None if *a == "auto-join" => auto_join_observers = true,
                        Some(("auto-join", v)) => {
                            for id in v.split(',') {
                                auto_join.push(num(id)?);
                            }
                        }
                        _ => return Err(format!("unknown argument {a}")),
                    }
                }
                let sim = if statik {
                    Sim::new_static(voters, seed)
                } else if auto_join_observers
                    || !auto_join.is_empty()
                    || snapshots != kraft::node::SnapshotConfig::default()
                {
                    let set = sim::voter_set(&(1..=voters).collect::<Vec<_>>());
                    Sim::with_configs((1..=voters + observers).map(|id| {
                        let mut c =
                            sim::config(id, kraft::node::Bootstrap::Checkpoint(set.clone()), seed);
                        c.snapshots = snapshots.clone();
                        c.auto_join =
                            auto_join.contains(&id) || (auto_join_observers && id > voters);
                        c
                    }))
                } else {
                    Sim::new(voters, observers, seed)
                };
                self.sim = Some(sim.map_err(|e| e.to_string())?);
                self.replies_seen = 0;
                self.refused_seen = 0;
                self.leaders.clear();
                self.raft_state()
            }
            ("raft-state", []) => self.raft_state(),
            ("snapshots", []) => self.snapshots(),
            ("elect", [id]) => {
                let id = num(id)?;
                let sim = self.sim()?;
                sim.elect(id);
                self.raft_state()
            }
            ("fire", [id, t]) => {
                let (id, t) = (num(id)?, timer(t)?);
                let sim = self.sim()?;
                let before = sim.network.len();
                if sim.node(id).timers().get(t).is_none() {
                    return Ok(format!("{t:?} is not armed\n"));
                }
                sim.fire(id, t);
                let mut out = String::new();
                for env in &sim.network[before.min(sim.network.len())..] {
                    let _ = writeln!(out, "{}->{} {}", env.from, env.to, summary(&env.msg));
                }
                Ok(out)
            }
            ("network", []) => self.network(),
            ("deliver", []) => self.deliver(10_000),
            ("deliver", [at]) if at.starts_with("at=") => {
                let (_, o) = Opts::parse(&[at], &["at"])?;
                self.deliver_from(o.num("at")?.unwrap_or(0) as usize, 1)
            }
            ("deliver", [n]) => self.deliver(num(n)? as usize),
            ("drop", [i]) => {
                let i = num(i)? as usize;
                self.sim()?.drop_message(i);
                self.network()
            }
            ("fetch", [id]) => {
                let id = num(id)?;
                let sim = self.sim()?;
                if sim.node(id).timers().fetch.is_none() {
                    return Ok("Fetch is not armed\n".into());
                }
                sim.fire(id, Timer::Fetch);
                self.deliver(10_000)
            }
            ("replicate", []) => {
                self.sim()?.replicate(20);
                self.raft_state()
            }
            ("replicate", [rounds]) if rounds.starts_with("rounds=") => {
                let (_, o) = Opts::parse(&[rounds], &["rounds"])?;
                let rounds = o.num("rounds")?.unwrap_or(20) as usize;
                self.sim()?.replicate(rounds);
                self.raft_state()
            }
            ("add-voter" | "remove-voter" | "update-voter", args) => self.membership(cmd, args),
            ("update-features", [id, level, rest @ ..]) => {
                let (_, o) = Opts::parse(rest, &["type", "validate", "version", "feature"])?;
                let req = scenario_support::update_features(num(level)? as i16, &o)?;
                let replies = self.sim()?.client(num(id)?, req);
                self.replies_seen = self.sim()?.client_replies.len();
                Ok(match replies.as_slice() {
                    [] => "pending\n".into(),
                    rs => rs.iter().map(|r| reply_summary(r) + "\n").collect(),
                })
            }
            ("edit", args) => {
                let (pos, o) = Opts::parse(
                    args,
                    &["offset", "last-epoch", "replica", "voter-dir", "leader"],
                )?;
                let [i] = pos[..] else {
                    return Err("usage: edit INDEX key=value...".into());
                };
                let i = num(i)? as usize;
                let sim = self.sim()?;
                let env = sim.network.get_mut(i).ok_or("no such message")?;
                scenario_support::edit(&mut env.msg, &o)?;
                self.network()
            }
            ("replace-disk", [id]) => {
                // The replica restarts on an empty disk: new directory id, empty log, no election state.
                let id = num(id)?;
                let sim = self.sim()?;
                sim.crash(id);
                let n = sim.nodes.get_mut(&id).ok_or("no such node")?;
                n.config.directory_id = scenario_support::new_directory_id(id);
                n.crashed_log = None;
                n.persisted = Default::default();
                sim.restart(id).map_err(|e| e.to_string())?;
                self.raft_state()
            }
            ("replies", []) => {
                let seen = self.replies_seen;
                let sim = self.sim()?;
                let mut out = String::new();
                let changes = sim.client_replies[seen..].iter().filter(|(_, _, r)| {
                    change_error_code(r).is_some() || matches!(r, ClientResponse::UpdateFeatures(_))
                });
                for (node, client, r) in changes {
                    let _ = writeln!(out, "client {} from {node}: {}", client.0, reply_summary(r));
                }
                self.replies_seen = sim.client_replies.len();
                Ok(out)
            }
            ("describe", args) => self.describe(args),
            ("append", [id, n]) => {
                let (id, n) = (num(id)?, num(n)?);
                let data: Vec<Vec<u8>> = (0..n).map(|i| format!("r{i}").into_bytes()).collect();
                let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
                match self.sim()?.append(id, &refs) {
                    Ok(offset) => Ok(format!("offset={offset}\n")),
                    Err(e) => Ok(format!("error: {e}\n")),
                }
            }
            ("crash", [id]) => {
                let id = num(id)?;
                self.sim()?.crash(id);
                self.raft_state()
            }
            ("restart", [id]) => {
                let id = num(id)?;
                self.sim()?.restart(id).map_err(|e| e.to_string())?;
                self.raft_state()
            }
            ("advance", [ms]) => {
                let ms = num(ms)? as u64;
                self.sim()?.advance(ms);
                self.network()
            }
            ("run", [ms]) => {
                // A healthy cluster for MS ms: 100 ms steps, every message delivered after each.
                let sim = self.sim()?;
                for _ in 0..(num(ms)? / 100).max(1) {
                    sim.advance(100);
                    sim.deliver_all(10_000);
                }
                self.raft_state()
            }
            ("log", [id]) => self.log(num(id)?),
            ("wall-clock", [id, ms]) => {
                let (id, wall) = (
                    num(id)?,
                    ms.parse().map_err(|_| format!("not a time: {ms}"))?,
                );
                let sim = self.sim()?;
                let now = sim.clock(id);
                sim.node_mut(id).set_wall_clock(now, wall);
                Ok("ok\n".into())
            }
            ("create-times", [id]) => self.create_times(num(id)?),
            ("forge-vote", args) => self.forge_vote(args),
            _ => Err(format!("unknown command or arguments: {line}")),
        }
    }
}

fn num(s: &str) -> Result<i32, String> {
    s.parse().map_err(|_| format!("not a number: {s}"))
}

/// A parsed case: the command line, its expected output, and where it sits in the file.
struct Case {
    line_no: usize,
    command: String,
    expected: String,
}

/// Parses a testdata file: comment (`#`) and empty lines between cases, then `command`, `----`, the
/// expected output up to the next empty line.
fn parse(text: &str) -> Result<Vec<Case>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut cases = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_end();
        if l.is_empty() || l.starts_with('#') {
            i += 1;
            continue;
        }
        let line_no = i + 1;
        if lines.get(i + 1).map(|s| s.trim_end()) != Some("----") {
            return Err(format!("line {line_no}: `{l}` is not followed by `----`"));
        }
        i += 2;
        let mut expected = String::new();
        while i < lines.len() && !lines[i].trim_end().is_empty() {
            expected.push_str(lines[i].trim_end());
            expected.push('\n');
            i += 1;
        }
        cases.push(Case {
            line_no,
            command: l.to_string(),
            expected,
        });
    }
    Ok(cases)
}

/// Runs one file; returns the mismatches, or rewrites the expectations when `rewrite` is set.
fn run_file(path: &Path, rewrite: bool) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("readable testdata");
    let cases = match parse(&text) {
        Ok(c) => c,
        Err(e) => return vec![format!("{}: {e}", path.display())],
    };
    let mut runner = Runner::default();
    let mut failures = Vec::new();
    let mut actual_outputs = Vec::new();
    for case in &cases {
        let actual = match runner.step(&case.command) {
            Ok(s) if s.is_empty() => "ok\n".to_string(),
            Ok(s) => s,
            Err(e) => format!("error: {e}\n"),
        };
        if actual != case.expected {
            failures.push(format!(
                "{}:{}: {}\n--- expected\n{}--- actual\n{}",
                path.display(),
                case.line_no,
                case.command,
                case.expected,
                actual
            ));
        }
        actual_outputs.push(actual);
    }
    if rewrite {
        let mut out = String::new();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        let mut case = 0;
        while i < lines.len() {
            let l = lines[i].trim_end();
            if case < cases.len() && i + 1 == cases[case].line_no {
                out.push_str(l);
                out.push_str("\n----\n");
                out.push_str(&actual_outputs[case]);
                i += 2;
                while i < lines.len() && !lines[i].trim_end().is_empty() {
                    i += 1;
                }
                case += 1;
                continue;
            }
            out.push_str(l);
            out.push('\n');
            i += 1;
        }
        std::fs::write(path, out).expect("writable testdata");
        return Vec::new();
    }
    failures
}

fn testdata_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/testdata exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    files
}

#[test]
fn testdata_scenarios() {
    let rewrite = std::env::var_os("REWRITE").is_some();
    let files = testdata_files();
    assert!(!files.is_empty(), "no scenario files");
    let failures: Vec<String> = files.iter().flat_map(|f| run_file(f, rewrite)).collect();
    assert!(
        failures.is_empty(),
        "{} scenario step(s) differ (REWRITE=1 regenerates):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_parser_rejects_a_command_without_separator() {
    assert!(parse("elect 1\nraft-state\n").is_err());
    let cases = parse("# c\n\nelect 1\n----\na\nb\n\nraft-state\n----\nok\n").unwrap();
    assert_eq!(cases.len(), 2);
    assert_eq!(cases[0].expected, "a\nb\n");
    assert_eq!(cases[1].line_no, 8);
}
