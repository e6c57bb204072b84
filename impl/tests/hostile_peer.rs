//! A hostile peer against a real 3-node quorum: forged Raft RPCs, byte-mutated frames of every
//! served API, lying size prefixes and 1,000 idle connections. Afterwards every node is alive, a leader
//! is elected, the HW is not lower, the committed voter set is unchanged, the logs agree below the HW,
//! no log has `panicked`, and every node's resident memory is below [`RSS_BOUND_KIB`].
//!
//! What the forged RPCs must get is what Apache Kafka's `KafkaRaftClient` answers:
//! - Fetch with a negative fetch offset or last fetched epoch: partition error INVALID_REQUEST;
//! - Fetch at an offset beyond the leader's log end: a DivergingEpoch at the leader's end for that epoch
//!   (`validateOffsetAndEpoch`), the fetcher's state untouched;
//! - Fetch from a voter id with a directory id that is not the voter's: served as an observer, which
//!   does not count toward the HW (`LeaderState` keys voters by id *and* directory id);
//! - Vote / BeginQuorumEpoch addressed to a directory id that is not the receiver's: INVALID_VOTER_KEY
//!   (a BeginQuorumEpoch after the transition to its leader, Kafka 4.4's order);
//! - Vote from a non-voter at the current epoch: not granted; at a higher epoch: the receiver moves to
//!   that epoch as Kafka's `handleVoteRequest` does (no voter check on the candidate, KIP-853), and the
//!   quorum elects a new leader above it.
//!
//! An epoch at `i32::MAX` from any sender moves a Kafka quorum to an epoch it cannot increment; the core
//! refuses the increment (never wraps it), which the last test shows on its own quorum.

mod cluster_support;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use cluster_support::*;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kraft::server::codec::{request_frame, response_body};
use rand::{Rng, SeedableRng};
use uuid::Uuid;

const TIMING: &[&str] = &[
    "--election-timeout-ms",
    "300",
    "--fetch-timeout-ms",
    "1500",
    "--fetch-interval-ms",
    "20",
    "--frame-timeout-ms",
    "2000",
];

/// Resident memory each node must stay under after the attacks, with the 1,000 idle connections open
/// (KiB). Measured 9–13 MiB on 8142339 (impl/README.md, "Measured"); the bound leaves allocator slack.
const RSS_BOUND_KIB: u64 = 32 * 1024;

const INVALID_REQUEST: i16 = 42;
const INVALID_VOTER_KEY: i16 = 125;
const CLUSTER: &str = "itest";

fn metadata_topic() -> TopicName {
    TopicName(StrBytes::from_static_str("__cluster_metadata"))
}

/// Sends one frame on a fresh connection, half-closes, and returns the response payload if any
/// (`None` when the node closed the connection without answering).
fn round_trip(addr: &str, frame: &[u8]) -> Option<Bytes> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // The node may close before taking all bytes of a bad frame: a write error is an answer too.
    if s.write_all(frame).is_err() {
        return None;
    }
    let _ = s.shutdown(Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    if out.len() < 4 {
        return None;
    }
    let size = i32::from_be_bytes(out[..4].try_into().unwrap()) as usize;
    (out.len() >= 4 + size).then(|| Bytes::copy_from_slice(&out[4..4 + size]))
}

fn call<Resp: Decodable>(addr: &str, key: i16, version: i16, req: &impl Encodable) -> Resp {
    let frame = request_frame(key, version, 1, "hostile", req).unwrap();
    let payload = round_trip(addr, &frame).expect("an answer");
    let (_, mut body) = response_body(payload, key, version).unwrap();
    Resp::decode(&mut body, version).unwrap()
}

struct Target {
    epoch: i32,
    leo: i64,
    /// A follower voter's id and real directory id.
    follower: (i32, Uuid),
}

fn fetch(t: &Target, dir: Uuid, offset: i64, last_epoch: i32, current_epoch: i32) -> FetchRequest {
    use fetch_request::{FetchPartition, FetchTopic, ReplicaState};
    FetchRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str(CLUSTER)))
        .with_replica_state(ReplicaState::default().with_replica_id(BrokerId(t.follower.0)))
        .with_max_wait_ms(0)
        .with_topics(vec![FetchTopic::default()
            .with_topic(metadata_topic())
            .with_topic_id(Uuid::from_u128(1))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(current_epoch)
                .with_fetch_offset(offset)
                .with_last_fetched_epoch(last_epoch)
                .with_replica_directory_id(dir)])])
}

fn vote(to: i32, to_dir: Uuid, candidate: i32, epoch: i32, cluster: &str) -> VoteRequest {
    use vote_request::{PartitionData, TopicData};
    VoteRequest::default()
        .with_cluster_id(Some(StrBytes::from_string(cluster.into())))
        .with_voter_id(BrokerId(to))
        .with_topics(vec![TopicData::default()
            .with_topic_name(metadata_topic())
            .with_partitions(vec![PartitionData::default()
                .with_partition_index(0)
                .with_replica_epoch(epoch)
                .with_replica_id(BrokerId(candidate))
                .with_replica_directory_id(Uuid::from_u128(0xbad))
                .with_voter_directory_id(to_dir)
                .with_last_offset_epoch(epoch.saturating_sub(1).max(0))
                .with_last_offset(i64::MAX / 2)])])
}

fn begin(to: i32, to_dir: Uuid, leader: i32, epoch: i32, cluster: &str) -> BeginQuorumEpochRequest {
    use begin_quorum_epoch_request::{LeaderEndpoint, PartitionData, TopicData};
    BeginQuorumEpochRequest::default()
        .with_cluster_id(Some(StrBytes::from_string(cluster.into())))
        .with_voter_id(BrokerId(to))
        .with_topics(vec![TopicData::default()
            .with_topic_name(metadata_topic())
            .with_partitions(vec![PartitionData::default()
                .with_partition_index(0)
                .with_voter_directory_id(to_dir)
                .with_leader_id(BrokerId(leader))
                .with_leader_epoch(epoch)])])
        .with_leader_endpoints(vec![LeaderEndpoint::default()
            .with_name(StrBytes::from_static_str("CONTROLLER"))
            .with_host(StrBytes::from_static_str("127.0.0.1"))
            .with_port(1)])
}

fn end(leader: i32, epoch: i32, cluster: &str) -> EndQuorumEpochRequest {
    use end_quorum_epoch_request::{PartitionData, TopicData};
    EndQuorumEpochRequest::default()
        .with_cluster_id(Some(StrBytes::from_string(cluster.into())))
        .with_topics(vec![TopicData::default()
            .with_topic_name(metadata_topic())
            .with_partitions(vec![PartitionData::default()
                .with_partition_index(0)
                .with_leader_id(BrokerId(leader))
                .with_leader_epoch(epoch)
                .with_preferred_successors(vec![99])])])
}

fn fetch_partition(r: &FetchResponse) -> &fetch_response::PartitionData {
    &r.responses[0].partitions[0]
}

fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// One valid frame of every served API, aimed so that even a valid mutation changes nothing durable:
/// the Raft RPCs and membership changes carry a cluster id one letter off, the removal names voter 99.
fn base_frames() -> Vec<(&'static str, Bytes)> {
    let wrong = "jtest";
    let t = Target {
        epoch: 1,
        leo: 0,
        follower: (2, Uuid::from_u128(0x1002)),
    };
    let mut f = fetch(&t, t.follower.1, 0, 0, 1);
    f.cluster_id = Some(StrBytes::from_static_str(wrong));
    let add = AddRaftVoterRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str(wrong)))
        .with_voter_id(99)
        .with_voter_directory_id(Uuid::from_u128(99))
        .with_listeners(vec![add_raft_voter_request::Listener::default()
            .with_name(StrBytes::from_static_str("CONTROLLER"))
            .with_host(StrBytes::from_static_str("127.0.0.1"))
            .with_port(1)]);
    let remove = RemoveRaftVoterRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str(wrong)))
        .with_voter_id(99)
        .with_voter_directory_id(Uuid::from_u128(99));
    let update = UpdateRaftVoterRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str(wrong)))
        .with_voter_id(99)
        .with_voter_directory_id(Uuid::from_u128(99));
    let describe = kraft::wire::describe_quorum::DescribeQuorumRequest::for_metadata_partition();
    vec![
        (
            "ApiVersions",
            request_frame(18, 4, 1, "h", &ApiVersionsRequest::default()).unwrap(),
        ),
        (
            "Metadata",
            request_frame(3, 12, 1, "h", &MetadataRequest::default()).unwrap(),
        ),
        ("Fetch", request_frame(1, 17, 1, "h", &f).unwrap()),
        (
            "Vote",
            request_frame(52, 1, 1, "h", &vote(1, Uuid::nil(), 99, 1, wrong)).unwrap(),
        ),
        (
            "BeginQuorumEpoch",
            request_frame(53, 1, 1, "h", &begin(1, Uuid::nil(), 99, 1, wrong)).unwrap(),
        ),
        (
            "EndQuorumEpoch",
            request_frame(54, 1, 1, "h", &end(99, 1, wrong)).unwrap(),
        ),
        (
            "DescribeQuorum",
            kraft::server::client::describe_frame(3, 1, &describe).unwrap(),
        ),
        (
            "DescribeCluster",
            request_frame(60, 2, 1, "h", &DescribeClusterRequest::default()).unwrap(),
        ),
        ("AddRaftVoter", request_frame(80, 0, 1, "h", &add).unwrap()),
        (
            "RemoveRaftVoter",
            request_frame(81, 0, 1, "h", &remove).unwrap(),
        ),
        (
            "UpdateRaftVoter",
            request_frame(82, 0, 1, "h", &update).unwrap(),
        ),
    ]
}

/// A mutation of `frame` that keeps its size prefix true: flipped bytes, random bytes, a cut, a
/// repeated run (so the body lies about lengths, not the prefix).
fn mutate(frame: &[u8], rng: &mut impl Rng) -> Vec<u8> {
    let mut body = frame[4..].to_vec();
    match rng.gen_range(0..4) {
        0 => {
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..body.len());
                body[i] ^= 1 << rng.gen_range(0..8);
            }
        }
        1 => {
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..body.len());
                body[i] = *[0x00, 0x7f, 0x80, 0xff].get(rng.gen_range(0..4)).unwrap();
            }
        }
        2 => body.truncate(rng.gen_range(8..body.len().max(9))),
        _ => {
            let i = rng.gen_range(0..body.len());
            let run = body[i..].iter().take(8).copied().collect::<Vec<_>>();
            body.splice(i..i, run);
        }
    }
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

struct Baseline {
    leader: i32,
    high_watermark: i64,
    committed: Vec<(i32, Uuid)>,
}

fn committed(d: &kraft::cli::describe::QuorumDescription) -> Vec<(i32, Uuid)> {
    d.partition
        .committed_voters
        .iter()
        .map(|r| (r.replica_id, r.replica_directory_id))
        .collect()
}

#[test]
fn a_hostile_peer_cannot_take_the_quorum_down() {
    let started = Instant::now();
    let mut c = Cluster::start(3, 0, 10, TIMING);
    let d = c.wait_for_leader(Duration::from_secs(30));
    let before = Baseline {
        leader: d.partition.leader_id,
        high_watermark: d.partition.high_watermark,
        committed: committed(&d),
    };
    assert_eq!(before.committed.len(), 3);
    let leader_addr = c.addr(before.leader);
    let leader_state = d
        .partition
        .current_voters
        .iter()
        .find(|r| r.replica_id == before.leader)
        .unwrap();
    let follower = d
        .partition
        .current_voters
        .iter()
        .find(|r| r.replica_id != before.leader)
        .unwrap();
    let t = Target {
        epoch: d.partition.leader_epoch,
        leo: leader_state.log_end_offset,
        follower: (follower.replica_id, follower.replica_directory_id),
    };
    let mut frames_sent = 0u64;

    // --- Forged Fetch from a voter's id --------------------------------------------------------------
    // Wrong directory id: answered (as an observer), no error.
    let r: FetchResponse = call(
        &leader_addr,
        1,
        17,
        &fetch(&t, Uuid::from_u128(0xbad), t.leo, t.epoch, t.epoch),
    );
    assert_eq!((r.error_code, fetch_partition(&r).error_code), (0, 0));
    // Beyond the log end: DivergingEpoch at the leader's end of that epoch, as Kafka answers.
    let r: FetchResponse = call(
        &leader_addr,
        1,
        17,
        &fetch(&t, t.follower.1, t.leo + 1_000_000, t.epoch, t.epoch),
    );
    let p = fetch_partition(&r);
    assert_eq!(p.error_code, 0);
    assert_eq!(p.diverging_epoch.epoch, t.epoch);
    assert!(
        p.diverging_epoch.end_offset >= t.leo && p.diverging_epoch.end_offset < t.leo + 1_000_000
    );
    assert!(
        p.high_watermark <= p.diverging_epoch.end_offset,
        "HW past the log end"
    );
    // Negative offsets and epochs: INVALID_REQUEST on the partition.
    for (offset, last_epoch) in [
        (-1, t.epoch),
        (i64::MIN, t.epoch),
        (t.leo, -1),
        (t.leo, i32::MIN),
    ] {
        let r: FetchResponse = call(
            &leader_addr,
            1,
            17,
            &fetch(&t, t.follower.1, offset, last_epoch, t.epoch),
        );
        assert_eq!(
            fetch_partition(&r).error_code,
            INVALID_REQUEST,
            "offset {offset} epoch {last_epoch}"
        );
    }
    frames_sent += 6;
    // The HW is still bounded by what the real voters hold.
    let d = c.wait_for_leader(Duration::from_secs(30));
    let max_real_leo = d
        .partition
        .current_voters
        .iter()
        .map(|r| r.log_end_offset)
        .max()
        .unwrap();
    assert!(d.partition.high_watermark <= max_real_leo);

    // --- Vote / Begin / End from non-voters and to unknown directory ids, at the current epoch ------
    for &id in c.nodes.keys() {
        let addr = c.addr(id);
        let dir = Uuid::from_u128(0x1000 + id as u128);
        let r: VoteResponse = call(&addr, 52, 1, &vote(id, dir, 99, t.epoch, CLUSTER));
        let p = &r.topics[0].partitions[0];
        assert!(
            !p.vote_granted,
            "node {id} granted a vote to non-voter 99 in a running epoch"
        );
        let r: VoteResponse = call(
            &addr,
            52,
            1,
            &vote(id, Uuid::from_u128(0xbad), 99, t.epoch, CLUSTER),
        );
        assert_eq!(r.topics[0].partitions[0].error_code, INVALID_VOTER_KEY);
        // The voter key is checked after the transition: a follower gets a Begin from the leader it
        // follows (a leader of 99 in the running epoch would be inconsistent and refused first).
        if id != before.leader {
            let r: BeginQuorumEpochResponse = call(
                &addr,
                53,
                1,
                &begin(id, Uuid::from_u128(0xbad), before.leader, t.epoch, CLUSTER),
            );
            assert_eq!(r.topics[0].partitions[0].error_code, INVALID_VOTER_KEY);
            frames_sent += 1;
        }
        // A Begin/End naming non-voter 99 as leader of the running epoch: answered, nothing breaks.
        let _: BeginQuorumEpochResponse = call(&addr, 53, 1, &begin(id, dir, 99, t.epoch, CLUSTER));
        let _: EndQuorumEpochResponse = call(&addr, 54, 1, &end(99, t.epoch, CLUSTER));
        frames_sent += 4;
    }

    // --- Byte-mutated frames of every served API, to every node ---------------------------------------
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    const PER_API_PER_NODE: usize = 100;
    let mut answered = 0u64;
    for (_, frame) in base_frames() {
        for id in c.nodes.keys().copied().collect::<Vec<_>>() {
            let addr = c.addr(id);
            for _ in 0..PER_API_PER_NODE {
                answered += u64::from(round_trip(&addr, &mutate(&frame, &mut rng)).is_some());
                frames_sent += 1;
            }
        }
    }

    // --- Lying size prefixes -------------------------------------------------------------------------
    for size in [-1i32, i32::MIN, 0, 1, 7, 8, 9 << 20, i32::MAX] {
        let mut frame = size.to_be_bytes().to_vec();
        frame.extend_from_slice(&[0x00, 0x12, 0x00, 0x04, 0, 0, 0, 1, 0xff, 0xff, 0x00]);
        for id in c.nodes.keys().copied().collect::<Vec<_>>() {
            assert!(
                round_trip(&c.addr(id), &frame).is_none(),
                "size {size} answered"
            );
            frames_sent += 1;
        }
    }

    // --- 1,000 idle connections to the leader, while it keeps serving ---------------------------------
    let idle: Vec<TcpStream> = (0..1000)
        .map(|_| TcpStream::connect(&leader_addr).unwrap())
        .collect();
    // The node holds them (accepted, one descriptor each), not just the kernel's backlog.
    let leader_pid = c.nodes[&before.leader].proc.as_ref().unwrap().child.id();
    wait_until(
        "the leader to accept 1,000 connections",
        Duration::from_secs(20),
        || {
            let fds = std::fs::read_dir(format!("/proc/{leader_pid}/fd"))
                .unwrap()
                .count();
            (fds >= 1000).then_some(())
        },
    );
    let d = c.wait_for_leader(Duration::from_secs(30));
    assert!(d.partition.high_watermark >= before.high_watermark);

    // --- A higher epoch from a non-voter: Kafka moves to it; the quorum elects a leader above it -----
    let bumped = t.epoch + 1000;
    for &id in c.nodes.keys() {
        let dir = Uuid::from_u128(0x1000 + id as u128);
        let _: VoteResponse = call(&c.addr(id), 52, 1, &vote(id, dir, 99, bumped, CLUSTER));
        frames_sent += 1;
    }
    let d = wait_until(
        "a leader above the forged epoch",
        Duration::from_secs(30),
        || {
            c.describe()
                .filter(|d| d.partition.leader_epoch > bumped && d.partition.high_watermark >= 0)
        },
    );

    // --- Afterwards ----------------------------------------------------------------------------------
    let mut rss = Vec::new();
    for (&id, node) in c.nodes.iter_mut() {
        let proc = node.proc.as_mut().unwrap();
        assert!(proc.child.try_wait().unwrap().is_none(), "node {id} exited");
        rss.push((id, vm_rss_kib(proc.child.id())));
    }
    drop(idle);
    assert!(
        d.partition.high_watermark >= before.high_watermark,
        "HW went back"
    );
    assert_eq!(
        committed(&d),
        before.committed,
        "committed voter set changed"
    );
    let hw = d.partition.high_watermark;
    // The HW needs only a majority; wait until every voter holds it before comparing logs below it.
    wait_until(
        "every voter holding the HW",
        Duration::from_secs(30),
        || {
            c.describe().filter(|d| {
                d.partition
                    .current_voters
                    .iter()
                    .all(|r| r.log_end_offset >= hw)
            })
        },
    );
    for (id, kib) in &rss {
        assert!(
            *kib < RSS_BOUND_KIB,
            "node {id} VmRSS {kib} KiB ≥ {RSS_BOUND_KIB} KiB"
        );
    }
    let ids: Vec<i32> = c.nodes.keys().copied().collect();
    for &id in &ids {
        c.kill(id);
        assert!(
            !c.log_text(id).contains("panicked"),
            "node {id} panicked:\n{}",
            c.log_text(id)
        );
    }
    let logs: Vec<_> = ids
        .iter()
        .map(|&id| {
            c.read_log(id)
                .into_iter()
                .filter(|(o, _, _)| *o < hw)
                .collect::<Vec<_>>()
        })
        .collect();
    for (id, log) in ids.iter().zip(&logs).skip(1) {
        assert_eq!(log, &logs[0], "node {id}'s log differs below the HW {hw}");
    }
    assert_eq!(
        logs[0].len() as i64,
        hw,
        "the logs hold every offset below the HW"
    );
    eprintln!(
        "hostile peer: {frames_sent} frames ({answered} of the mutated ones answered, the rest closed), \
         1000 idle connections, VmRSS KiB {rss:?}, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn connections_beyond_max_connections_are_closed_with_a_log_line() {
    let mut timing: Vec<&str> = TIMING.to_vec();
    timing.extend(["--max-connections", "8"]);
    let c = Cluster::start(1, 0, 11, &timing);
    c.wait_for_leader(Duration::from_secs(30));
    let mut held: Vec<TcpStream> = (0..8)
        .map(|_| TcpStream::connect(c.addr(1)).unwrap())
        .collect();
    // The listener may count the describe connection of wait_for_leader until it closes: poll.
    wait_until(
        "the 9th connection to be closed",
        Duration::from_secs(10),
        || {
            let mut s = TcpStream::connect(c.addr(1)).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            let mut b = [0u8; 1];
            matches!(s.read(&mut b), Ok(0) | Err(_))
                .then_some(())
                .filter(|_| {
                    c.log_text(1)
                        .contains("refusing connection: max_connections (8) reached")
                })
        },
    );
    held.pop();
    // A slot is free again: the node serves a new client.
    wait_until(
        "a client to be served again",
        Duration::from_secs(10),
        || c.describe(),
    );
    let mut buf = [0u8; 1];
    held[0].set_nonblocking(true).unwrap();
    // A held connection is still open (not closed by the node): WouldBlock, not EOF.
    assert!(matches!(held[0].read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock));
}

/// An epoch at `i32::MAX` from a non-voter: every node adopts it (as Kafka's replicas do) and then cannot
/// start an election, because no later epoch exists. The core refuses the increment instead of wrapping
/// it (`StepError::EpochExhausted`, logged); no node panics or exits.
#[test]
fn an_epoch_at_i32_max_is_refused_not_wrapped() {
    let mut c = Cluster::start(3, 0, 12, TIMING);
    c.wait_for_leader(Duration::from_secs(30));
    for &id in c.nodes.keys() {
        let dir = Uuid::from_u128(0x1000 + id as u128);
        let _: VoteResponse = call(&c.addr(id), 52, 1, &vote(id, dir, 99, i32::MAX, CLUSTER));
        let _: BeginQuorumEpochResponse =
            call(&c.addr(id), 53, 1, &begin(id, dir, 99, i32::MAX, CLUSTER));
        let _: EndQuorumEpochResponse = call(&c.addr(id), 54, 1, &end(99, i32::MAX, CLUSTER));
    }
    let ids: Vec<i32> = c.nodes.keys().copied().collect();
    wait_until(
        "every node to refuse the epoch increment past i32::MAX",
        Duration::from_secs(60),
        || {
            ids.iter()
                .all(|&id| c.log_text(id).contains("quorum core refused a transition"))
                .then_some(())
        },
    );
    for &id in &ids {
        let node = c.nodes.get_mut(&id).unwrap();
        let alive = node
            .proc
            .as_mut()
            .unwrap()
            .child
            .try_wait()
            .unwrap()
            .is_none();
        assert!(alive, "node {id} exited:\n{}", c.log_text(id));
    }
    for id in ids {
        c.kill(id);
        let log = c.log_text(id);
        assert!(!log.contains("panicked"), "node {id}:\n{log}");
        assert!(
            !log.contains("-2147483648"),
            "node {id} wrapped the epoch:\n{log}"
        );
    }
}
