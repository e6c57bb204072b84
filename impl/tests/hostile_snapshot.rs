//! Forged FetchSnapshot traffic (KIP-630) against the quorum core, both ways.
//!
//! Requests to a leader that holds a snapshot get Kafka's error codes (`handleFetchSnapshotRequest`) and
//! a chunk bounded by MaxBytes and by this node's own bound ([`MAX_FETCH_BYTES`]), whatever the request
//! claims. Responses to a follower in the middle of a download that do not continue it (a stale or
//! forged position or snapshot id, a Size that lies or changes, a chunk longer than the MaxBytes asked
//! for or than the Size, a sender that is not the leader fetched from, an older leader epoch) write no
//! byte and complete nothing; the download then finishes from the real leader and installs. The core
//! holds no snapshot bytes (a chunk goes to the shell as an effect), so memory is bounded by the frame
//! limit of the shell (`wire_bounds.rs`).

mod snapshot_support;

use bytes::Bytes;
use kafka_protocol::messages::fetch_snapshot_request::{PartitionSnapshot, TopicSnapshot};
use kafka_protocol::messages::fetch_snapshot_response::{
    LeaderIdAndEpoch, NodeEndpoint, PartitionSnapshot as RespPartition, SnapshotId as RespId,
    TopicSnapshot as RespTopic,
};
use kafka_protocol::messages::{BrokerId, FetchSnapshotRequest, FetchSnapshotResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kraft::log::{RaftLog, SnapshotId};
use kraft::node::{errors, Effect, Message, Node, Output, Role, Timer, MAX_FETCH_BYTES};
use kraft_sim::{Envelope, Sim};
use snapshot_support::{ask, fetch_snapshot, leader_with_snapshot, snapshot_file, topic};

#[test]
fn forged_requests_get_kafkas_error_codes_and_bounded_chunks() {
    let (mut cluster, id) = leader_with_snapshot(4, 7);
    let epoch = cluster.node(1).epoch();
    let size = snapshot_file(&[1]).len() as u64;
    let hw = cluster.node(1).high_watermark();
    // Positions far out: POSITION_OUT_OF_RANGE, never an overflow.
    for position in [i64::MIN, -1, size as i64, i64::MAX] {
        assert_eq!(
            ask(&mut cluster, 2, fetch_snapshot(epoch, id, position, 10)).0,
            errors::POSITION_OUT_OF_RANGE,
            "position {position}"
        );
    }
    // MaxBytes is honoured and capped by this node's bound; zero or negative asks for nothing.
    assert_eq!(
        ask(&mut cluster, 2, fetch_snapshot(epoch, id, 0, i32::MAX)),
        (0, Some(size.min(MAX_FETCH_BYTES as u64)))
    );
    assert_eq!(
        ask(&mut cluster, 2, fetch_snapshot(epoch, id, 1, 3)),
        (0, Some(3))
    );
    for max in [0, -1, i32::MIN] {
        assert_eq!(
            ask(&mut cluster, 2, fetch_snapshot(epoch, id, 0, max)),
            (0, Some(0)),
            "max {max}"
        );
    }
    // Snapshot ids it does not hold, with extreme values.
    for (end_offset, snap_epoch) in [
        (id.end_offset + 1, id.epoch),
        (i64::MAX, i32::MAX),
        (-1, -1),
        (0, 0),
    ] {
        let other = SnapshotId {
            end_offset,
            epoch: snap_epoch,
        };
        assert_eq!(
            ask(&mut cluster, 2, fetch_snapshot(epoch, other, 0, 10)).0,
            errors::SNAPSHOT_NOT_FOUND,
            "{other}"
        );
    }
    // Epoch fencing and a foreign cluster.
    for (e, code) in [
        (epoch - 1, errors::FENCED_LEADER_EPOCH),
        (i32::MIN, errors::FENCED_LEADER_EPOCH),
        (epoch + 1, errors::UNKNOWN_LEADER_EPOCH),
        (i32::MAX, errors::UNKNOWN_LEADER_EPOCH),
    ] {
        assert_eq!(
            ask(&mut cluster, 2, fetch_snapshot(e, id, 0, 10)).0,
            code,
            "epoch {e}"
        );
    }
    let foreign =
        fetch_snapshot(epoch, id, 0, 10).with_cluster_id(Some(StrBytes::from_static_str("x")));
    assert_eq!(
        ask(&mut cluster, 2, foreign).0,
        errors::INCONSISTENT_CLUSTER_ID
    );
    // Many topics and partitions (none the metadata partition), and a replica id that is no member.
    let mut many = fetch_snapshot(epoch, id, 0, 10);
    many.topics = (0..1000)
        .map(|i| {
            TopicSnapshot::default()
                .with_name(TopicName(StrBytes::from_string(format!("t{i}"))))
                .with_partitions(vec![PartitionSnapshot::default(); 3])
        })
        .collect();
    assert_eq!(ask(&mut cluster, 2, many).0, errors::INVALID_REQUEST);
    assert_eq!(
        ask(&mut cluster, -7, fetch_snapshot(epoch, id, 0, 10)),
        (0, Some(10))
    );
    // Nothing moved: same leader, epoch and HW, and it still commits.
    assert_eq!(cluster.node(1).role(), Role::Leader);
    assert_eq!(cluster.node(1).epoch(), epoch);
    assert_eq!(cluster.node(1).high_watermark(), hw);
    cluster.append(1, &[b"after"]).unwrap();
    cluster.replicate(3);
    assert!(cluster.node(1).high_watermark() > hw);
}

/// Observer 2 restarted and fetching: runs the exchange until its first FetchSnapshot request is in
/// flight to the leader (left there).
fn follower_waiting_for_a_chunk(cluster: &mut Sim) -> FetchSnapshotRequest {
    cluster.restart(2).unwrap();
    cluster.fire(2, Timer::Fetch);
    for _ in 0..50 {
        let pending = cluster.network.iter().find_map(|e| match e {
            Envelope {
                from: 2,
                msg: Message::FetchSnapshotRequest(req),
                ..
            } => Some(req.clone()),
            _ => None,
        });
        if let Some(req) = pending {
            return req;
        }
        if cluster.network.is_empty() {
            cluster.fire(2, Timer::Fetch);
        } else {
            cluster.deliver(0);
        }
    }
    panic!("the follower never asked for a chunk");
}

fn chunk(
    id: SnapshotId,
    leader_epoch: i32,
    size: i64,
    position: i64,
    bytes: &[u8],
) -> FetchSnapshotResponse {
    FetchSnapshotResponse::default().with_topics(vec![RespTopic::default()
        .with_name(topic())
        .with_partitions(vec![RespPartition::default()
            .with_snapshot_id(
                RespId::default()
                    .with_end_offset(id.end_offset)
                    .with_epoch(id.epoch),
            )
            .with_current_leader(
                LeaderIdAndEpoch::default()
                    .with_leader_id(BrokerId(1))
                    .with_leader_epoch(leader_epoch),
            )
            .with_size(size)
            .with_position(position)
            .with_unaligned_records(Bytes::copy_from_slice(bytes))])])
}

fn snapshot_effects(out: &Output) -> usize {
    out.effects
        .iter()
        .filter(|e| {
            matches!(
                e,
                Effect::WriteSnapshotChunk { .. } | Effect::CompleteSnapshot { .. }
            )
        })
        .count()
}

#[test]
fn forged_responses_write_nothing_and_the_download_then_completes() {
    let (mut cluster, id) = leader_with_snapshot(5, 7);
    let file = snapshot_file(&[1]);
    let size = file.len() as i64;
    let req = follower_waiting_for_a_chunk(&mut cluster);
    let epoch = cluster.node(1).epoch();
    assert_eq!(req.topics[0].partitions[0].position, 0);
    assert_eq!(cluster.node(2).snapshot_download(), Some((id, 0)));
    // Each forgery is the answer to that request in flight, on a copy of the follower.
    let waiting = cluster.node(2).clone();
    let now = cluster.clock(2);
    let other = SnapshotId {
        end_offset: id.end_offset + 10,
        epoch: id.epoch,
    };
    let oversized = vec![0u8; req.max_bytes as usize + 1];
    let mut top_level = chunk(id, epoch, size, 0, &file[..4]);
    top_level.error_code = errors::INCONSISTENT_CLUSTER_ID;
    // Chunks refused as they arrive, and a top-level error: the chunk is asked for again after one fetch
    // interval. The others are not taken as the answer: the request stays in flight until it times out.
    let retried = [
        "size 0",
        "negative size",
        "a chunk longer than the size",
        "a chunk longer than MaxBytes",
        "a top-level error",
    ];
    let interval = waiting.config().fetch_interval_ms;
    let asks_at = |node: &Node, at: u64| {
        let out = node.clone().tick(at);
        (out.requests.iter())
            .filter(|(to, m)| *to == 1 && matches!(m, Message::FetchSnapshotRequest(r) if r.topics[0].partitions[0].position == 0))
            .count()
    };
    let forged: Vec<(&str, i32, FetchSnapshotResponse)> = vec![
        (
            "a position that does not continue the .part",
            1,
            chunk(id, epoch, size, 4, &file[4..8]),
        ),
        (
            "negative position",
            1,
            chunk(id, epoch, size, -1, &file[..4]),
        ),
        (
            "position i64::MAX",
            1,
            chunk(id, epoch, size, i64::MAX, &file[..4]),
        ),
        ("size 0", 1, chunk(id, epoch, 0, 0, &file[..4])),
        ("negative size", 1, chunk(id, epoch, -5, 0, &file[..4])),
        (
            "a chunk longer than the size",
            1,
            chunk(id, epoch, 2, 0, &file[..4]),
        ),
        (
            "a chunk longer than MaxBytes",
            1,
            chunk(id, epoch, i64::MAX, 0, &oversized),
        ),
        (
            "a snapshot not being fetched",
            1,
            chunk(other, epoch, size, 0, &file[..4]),
        ),
        (
            "a sender that is not the leader",
            3,
            chunk(id, epoch, size, 0, &file[..4]),
        ),
        (
            "an older leader epoch",
            1,
            chunk(id, epoch - 1, size, 0, &file[..4]),
        ),
        ("a top-level error", 1, top_level),
        ("no partition", 1, FetchSnapshotResponse::default()),
    ];
    for (what, from, resp) in forged {
        let mut node = waiting.clone();
        let out = node.handle(now, from, Message::FetchSnapshotResponse(resp));
        assert_eq!(snapshot_effects(&out), 0, "{what}: {:?}", out.effects);
        assert_eq!(node.snapshot_download(), Some((id, 0)), "{what}");
        assert_eq!(node.installing_snapshot(), None, "{what}");
        assert_eq!(node.log().start_offset(), 0, "{what}");
        assert_eq!(
            (node.role(), node.epoch()),
            (Role::Follower, epoch),
            "{what}"
        );
        if retried.contains(&what) {
            assert_eq!(
                asks_at(&node, now + interval - 1),
                0,
                "{what}: asked again at once"
            );
            assert_eq!(
                asks_at(&node, now + interval),
                1,
                "{what}: asked again after the interval"
            );
        }
    }
    // An answer that brings no bytes is asked again after the fetch interval (50 ms in the sim), not at once.
    let mut node = waiting.clone();
    let out = node.handle(
        now,
        1,
        Message::FetchSnapshotResponse(chunk(id, epoch, size, 0, &[])),
    );
    assert_eq!(snapshot_effects(&out), 0, "an empty chunk");
    assert_eq!(node.snapshot_download(), Some((id, 0)));
    let asks = |out: &Output| {
        out.requests
            .iter()
            .filter(|(_, m)| matches!(m, Message::FetchSnapshotRequest(_)))
            .count()
    };
    assert_eq!(
        asks(&node.tick(now + 49)),
        0,
        "asked again before the interval"
    );
    assert_eq!(asks(&node.tick(now + 50)), 1, "asked again at the interval");
    // A real first chunk, then a forged second one whose Size differs from the first answer's.
    let mut node = waiting.clone();
    let out = node.handle(
        now,
        1,
        Message::FetchSnapshotResponse(chunk(id, epoch, size, 0, &file[..4])),
    );
    assert_eq!(snapshot_effects(&out), 1);
    assert_eq!(node.snapshot_download(), Some((id, 4)));
    let next = node.tick(now);
    assert!(
        next.requests
            .iter()
            .any(|(to, m)| *to == 1 && matches!(m, Message::FetchSnapshotRequest(r) if r.topics[0].partitions[0].position == 4)),
        "it asks for the next chunk: {:?}",
        next.requests
    );
    let out = node.handle(
        now,
        1,
        Message::FetchSnapshotResponse(chunk(id, epoch, size + 1, 4, &file[4..8])),
    );
    assert_eq!(snapshot_effects(&out), 0, "a Size that changed");
    assert_eq!(node.snapshot_download(), Some((id, 4)));
    // The real follower goes on with the real leader: installed, its log starting at the snapshot's end.
    for _ in 0..200 {
        if cluster.node(2).log().start_offset() == id.end_offset
            && cluster.node(2).log().end_offset() == cluster.node(1).log().end_offset()
        {
            break;
        }
        if cluster.network.is_empty() {
            cluster.advance(50);
        } else {
            cluster.deliver(0);
        }
    }
    let follower = cluster.node(2);
    assert_eq!(follower.log().start_offset(), id.end_offset);
    assert!(follower.snapshots().any(|m| m.id == id));
    assert_eq!(follower.snapshot_download(), None);
    assert_eq!(
        follower.log().end_offset(),
        cluster.node(1).log().end_offset()
    );
}

/// An error answer to FetchSnapshot in the follower's epoch, as Kafka 4.4's `handleFetchSnapshotResponse`
/// takes it: the epoch and leader errors (`maybeHandleCommonResponse`) keep the download; after them,
/// SNAPSHOT_NOT_FOUND or any other error without a snapshot id (a Kafka leader's POSITION_OUT_OF_RANGE
/// carries none) drops the download and fetches again at once.
#[test]
fn an_error_answer_without_a_snapshot_id_starts_over_unless_it_is_about_the_epoch_or_leader() {
    let (mut cluster, id) = leader_with_snapshot(5, 7);
    let _ = follower_waiting_for_a_chunk(&mut cluster);
    let epoch = cluster.node(1).epoch();
    let waiting = cluster.node(2).clone();
    let now = cluster.clock(2);
    let no_id = SnapshotId {
        end_offset: -1,
        epoch: -1,
    };
    let answer = |code: i16| {
        let mut resp = chunk(no_id, epoch, -1, -1, &[]);
        resp.topics[0].partitions[0].error_code = code;
        Message::FetchSnapshotResponse(resp)
    };
    let fetches = |out: &Output| {
        out.requests
            .iter()
            .filter(|(to, m)| *to == 1 && matches!(m, Message::FetchRequest(_)))
            .count()
    };
    for code in [
        errors::SNAPSHOT_NOT_FOUND,
        errors::POSITION_OUT_OF_RANGE,
        errors::UNKNOWN_TOPIC_OR_PARTITION,
        errors::UNKNOWN_SERVER_ERROR,
    ] {
        let mut node = waiting.clone();
        // Some time after the request: the leader's answer starts the fetch timeout again from there.
        let at = now + 10;
        let mut out = node.handle(at, 1, answer(code));
        out.requests.extend(node.tick(at).requests);
        assert_eq!(node.snapshot_download(), None, "error {code}");
        assert_eq!(fetches(&out), 1, "error {code}: {:?}", out.requests);
        assert_eq!((node.role(), node.epoch()), (Role::Follower, epoch));
        assert_eq!(
            node.timers().fetch_timeout,
            Some(at + node.config().fetch_timeout_ms),
            "error {code}"
        );
    }
    for code in [
        errors::NOT_LEADER_OR_FOLLOWER,
        errors::FENCED_LEADER_EPOCH,
        errors::UNKNOWN_LEADER_EPOCH,
        errors::BROKER_NOT_AVAILABLE,
        errors::INVALID_VOTER_KEY,
        errors::INVALID_REQUEST,
    ] {
        let mut node = waiting.clone();
        let mut out = node.handle(now, 1, answer(code));
        out.requests.extend(node.tick(now).requests);
        assert_eq!(node.snapshot_download(), Some((id, 0)), "error {code}");
        assert_eq!(fetches(&out), 0, "error {code}: {:?}", out.requests);
        // Same leader and epoch: the chunk is asked for again after one fetch interval, not before.
        assert!(out.requests.is_empty(), "error {code}: {:?}", out.requests);
        let retry = now + node.config().fetch_interval_ms;
        assert_eq!(node.timers().fetch, Some(retry), "error {code}");
        let again = node.tick(retry);
        assert!(
            matches!(again.requests.as_slice(), [(1, Message::FetchSnapshotRequest(r))]
                if r.topics[0].partitions[0].position == 0),
            "error {code}: {:?}",
            again.requests
        );
    }
}

/// The last chunk completes the download; until the shell answers `CompleteSnapshot` the follower reports
/// the install as pending, sends nothing and its timers wait (no Fetch, no election), whatever the time;
/// the shell's answer installs it and the follower fetches again at once.
#[test]
fn a_fetched_snapshot_waits_for_the_shells_install_and_the_follower_sends_nothing_meanwhile() {
    let (mut cluster, id) = leader_with_snapshot(5, 7);
    let file = snapshot_file(&[1]);
    let _ = follower_waiting_for_a_chunk(&mut cluster);
    let epoch = cluster.node(1).epoch();
    let mut node = cluster.node(2).clone();
    let now = cluster.clock(2);
    let out = node.handle(
        now,
        1,
        Message::FetchSnapshotResponse(chunk(id, epoch, file.len() as i64, 0, &file)),
    );
    assert!(
        out.effects
            .iter()
            .any(|e| matches!(e, Effect::CompleteSnapshot { id: done, .. } if *done == id)),
        "{:?}",
        out.effects
    );
    assert_eq!(node.installing_snapshot(), Some(id));
    assert_eq!(node.snapshot_download(), None);
    for later in [now, now + 1_000, now + 60_000] {
        let out = node.tick(later);
        assert!(out.requests.is_empty(), "at {later}: {:?}", out.requests);
        assert_eq!((node.role(), node.epoch()), (Role::Follower, epoch));
    }
    let meta = cluster
        .node(1)
        .snapshots()
        .find(|m| m.id == id)
        .unwrap()
        .clone();
    let later = now + 60_000;
    let mut out = node.snapshot_loaded(later, id, Ok(meta));
    out.requests.extend(node.tick(later).requests);
    assert_eq!(node.installing_snapshot(), None);
    assert_eq!(node.log().start_offset(), id.end_offset);
    // The install ends the leader's last answer (Kafka installs while handling it and resets its fetch
    // timer there): the fetch timeout starts again from it.
    assert_eq!(
        node.timers().fetch_timeout,
        Some(later + node.config().fetch_timeout_ms)
    );
    assert!(
        out.requests
            .iter()
            .any(|(to, m)| *to == 1 && matches!(m, Message::FetchRequest(_))),
        "{:?}",
        out.requests
    );
}

/// A FetchSnapshot answer's NodeEndpoints may name other nodes beside the leader: the follower learns the
/// leader's address from the leader's own entry (Kafka's `Endpoints.fromFetchSnapshotResponse`), whatever
/// the order.
#[test]
fn the_leaders_endpoint_is_read_from_its_own_entry_among_others() {
    let (mut cluster, id) = leader_with_snapshot(5, 7);
    let file = snapshot_file(&[1]);
    let _ = follower_waiting_for_a_chunk(&mut cluster);
    let epoch = cluster.node(1).epoch();
    let mut node = cluster.node(2).clone();
    let now = cluster.clock(2);
    let endpoint = |node_id: i32, port: u16| {
        NodeEndpoint::default()
            .with_node_id(BrokerId(node_id))
            .with_host(StrBytes::from_static_str("localhost"))
            .with_port(port)
    };
    let resp = chunk(id, epoch, file.len() as i64, 0, &file[..4])
        .with_node_endpoints(vec![endpoint(3, 3333), endpoint(1, 1111)]);
    let out = node.handle(now, 1, Message::FetchSnapshotResponse(resp));
    assert_eq!(snapshot_effects(&out), 1);
    assert_eq!(
        node.leader_endpoint().map(|(leader, e)| (leader, e.port)),
        Some((1, 1111))
    );
}
