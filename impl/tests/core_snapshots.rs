//! Snapshots in the quorum core (KIP-630), against Kafka 4.4's rules: when a leader answers a Fetch with a
//! `SnapshotId`, how it serves FetchSnapshot (error codes, chunks), how a follower downloads and installs
//! one, and the voter-set history that starts at a snapshot.

mod snapshot_support;

use kafka_protocol::messages::{BrokerId, FetchSnapshotRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kraft::history::committed_voter_set;
use kraft::log::{RaftLog, SnapshotId};
use kraft::node::{
    errors, Bootstrap, Effect, Harness, Message, NodeConfig, Role, Timer, METADATA_TOPIC,
};
use kraft_sim::{self as sim, Envelope, Sim};
use snapshot_support::{ask, fetch_snapshot, leader_with_snapshot, snapshot_file};

#[test]
fn fetch_snapshot_errors_and_chunks_as_kafka() {
    let (mut cluster, id) = leader_with_snapshot(4, 3);
    let epoch = cluster.node(1).epoch();
    let size = snapshot_file(&[1]).len() as i64;
    assert_eq!(
        ask(&mut cluster, 2, fetch_snapshot(epoch, id, 0, 10)),
        (0, Some(10))
    );
    assert_eq!(
        ask(
            &mut cluster,
            2,
            fetch_snapshot(epoch, id, size - 3, 1 << 20)
        ),
        (0, Some(3)),
        "the last chunk ends at the size"
    );
    assert_eq!(
        ask(&mut cluster, 2, fetch_snapshot(epoch, id, size, 10)).0,
        errors::POSITION_OUT_OF_RANGE
    );
    assert_eq!(
        ask(&mut cluster, 2, fetch_snapshot(epoch, id, -1, 10)).0,
        errors::POSITION_OUT_OF_RANGE
    );
    let other = SnapshotId {
        end_offset: id.end_offset - 1,
        epoch: id.epoch,
    };
    assert_eq!(
        ask(&mut cluster, 2, fetch_snapshot(epoch, other, 0, 10)).0,
        errors::SNAPSHOT_NOT_FOUND
    );
    assert_eq!(
        ask(
            &mut cluster,
            2,
            fetch_snapshot(epoch, SnapshotId::BOOTSTRAP, 0, 10)
        )
        .0,
        errors::SNAPSHOT_NOT_FOUND,
        "the bootstrap snapshot is never served"
    );
    assert_eq!(
        ask(&mut cluster, 2, fetch_snapshot(epoch - 1, id, 0, 10)).0,
        errors::FENCED_LEADER_EPOCH
    );
    assert_eq!(
        ask(&mut cluster, 2, fetch_snapshot(epoch + 1, id, 0, 10)).0,
        errors::UNKNOWN_LEADER_EPOCH
    );
    let foreign =
        fetch_snapshot(epoch, id, 0, 10).with_cluster_id(Some(StrBytes::from_static_str("x")));
    assert_eq!(
        ask(&mut cluster, 2, foreign).0,
        errors::INCONSISTENT_CLUSTER_ID
    );
    let mut wrong_partition = fetch_snapshot(epoch, id, 0, 10);
    wrong_partition.topics[0].partitions[0].partition = 1;
    assert_eq!(
        ask(&mut cluster, 2, wrong_partition).0,
        errors::UNKNOWN_TOPIC_OR_PARTITION
    );
    assert_eq!(
        ask(&mut cluster, 2, FetchSnapshotRequest::default()).0,
        errors::INVALID_REQUEST
    );
}

#[test]
fn a_follower_at_offset_zero_fetches_the_snapshot_installs_it_and_catches_up() {
    let (mut cluster, id) = leader_with_snapshot(5, 3);
    cluster.restart(2).unwrap();
    // The observer finds the leader and fetches at offset 0: the answer is the snapshot id, no records.
    cluster.fire(2, kraft::node::Timer::Fetch);
    let mut saw_snapshot_id = false;
    let mut chunks = 0;
    for _ in 0..50 {
        if cluster.network.is_empty() {
            cluster.fire(2, kraft::node::Timer::Fetch);
            if cluster.network.is_empty() {
                break;
            }
        }
        let Envelope { msg, .. } = cluster.network[0].clone();
        match &msg {
            Message::FetchResponse(r) => {
                let p = &r.responses[0].partitions[0];
                if p.snapshot_id.end_offset >= 0 {
                    saw_snapshot_id = true;
                    assert_eq!(
                        (p.snapshot_id.end_offset, p.snapshot_id.epoch),
                        (id.end_offset, id.epoch)
                    );
                    assert!(p.records.as_ref().is_none_or(|r| r.is_empty()));
                }
            }
            Message::FetchSnapshotResponse(_) => chunks += 1,
            _ => {}
        }
        cluster.deliver(0);
        if cluster.node(2).log().end_offset() == cluster.node(1).log().end_offset()
            && cluster.node(2).log().start_offset() == id.end_offset
        {
            break;
        }
    }
    assert!(
        saw_snapshot_id,
        "the leader pointed the new replica to its snapshot"
    );
    assert!(chunks >= 1);
    let follower = cluster.node(2);
    assert_eq!(follower.role(), Role::Follower);
    assert_eq!(
        follower.log().start_offset(),
        id.end_offset,
        "log truncated fully, started at the end"
    );
    assert!(follower.snapshots().any(|m| m.id == id));
    assert_eq!(follower.installing_snapshot(), None);
    // The voter set comes from the snapshot, at end offset − 1; the HW is at least the snapshot's end.
    assert_eq!(
        follower
            .history()
            .at_or_before(id.end_offset - 1)
            .map(|(o, _)| o),
        Some(id.end_offset - 1)
    );
    let hw = follower.high_watermark();
    assert!(hw.is_some_and(|hw| hw >= id.end_offset));
    assert_eq!(
        committed_voter_set(follower.history(), hw),
        Some(&sim::voter_set(&[1]))
    );
    // It goes on fetching records after the snapshot, and survives a restart from snapshot + suffix.
    cluster.append(1, &[b"after"]).unwrap();
    cluster.replicate(5);
    assert_eq!(
        cluster.node(2).log().end_offset(),
        cluster.node(1).log().end_offset()
    );
    cluster.crash(2);
    cluster.restart(2).unwrap();
    let restarted = cluster.node(2);
    assert_eq!(restarted.log().start_offset(), id.end_offset);
    assert_eq!(restarted.latest_voters(), &sim::voter_set(&[1]));
}

/// A Fetch answer: the snapshot id it names, whether it has records, its diverging epoch.
type FetchAnswer = (Option<(i64, i32)>, bool, Option<(i32, i64)>);

/// The leader's answer to a Fetch from replica 2 at `(offset, last fetched epoch)`: the snapshot id it
/// names, whether it carries records, and its diverging epoch.
fn fetch_answer(cluster: &mut Sim, offset: i64, last_epoch: i32) -> FetchAnswer {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
    use kafka_protocol::messages::FetchRequest;
    let epoch = cluster.node(1).epoch();
    let req = FetchRequest::default()
        .with_replica_state(ReplicaState::default().with_replica_id(BrokerId(2)))
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_static_str(METADATA_TOPIC)))
            .with_partitions(vec![FetchPartition::default()
                .with_current_leader_epoch(epoch)
                .with_fetch_offset(offset)
                .with_last_fetched_epoch(last_epoch)])]);
    let now = cluster.clock(1);
    let out = cluster
        .node_mut(1)
        .handle(now, 2, Message::FetchRequest(req));
    let [(2, Message::FetchResponse(r))] = out.replies.as_slice() else {
        panic!("one Fetch response: {:?}", out.replies);
    };
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    let snapshot =
        (p.snapshot_id.end_offset >= 0).then_some((p.snapshot_id.end_offset, p.snapshot_id.epoch));
    let records = p.records.as_ref().is_some_and(|r| !r.is_empty());
    let diverging = (p.diverging_epoch.epoch >= 0)
        .then_some((p.diverging_epoch.epoch, p.diverging_epoch.end_offset));
    if snapshot.is_some() {
        assert!(
            !records && diverging.is_none(),
            "a snapshot answer has nothing else"
        );
    }
    (snapshot, records, diverging)
}

#[test]
fn fetch_offset_zero_gets_the_snapshot_but_the_bootstrap_snapshot_keeps_the_log_valid() {
    let (mut cluster, id) = leader_with_snapshot(3, 3);
    let epoch = cluster.node(1).epoch();
    let snap = Some((id.end_offset, id.epoch));
    assert_eq!(
        fetch_answer(&mut cluster, 0, 0).0,
        snap,
        "offset 0 with a non-bootstrap snapshot"
    );
    // The log start is still 0 and the earliest snapshot is the bootstrap one (0, 0): a replica inside
    // the log is served records, whatever its epoch (Kafka's validateOffsetAndEpoch).
    let (s, records, _) = fetch_answer(&mut cluster, 1, epoch);
    assert_eq!((s, records), (None, true));
    // The leader leaves that replica's fetch state alone when it names a snapshot.
    let before = cluster.node(1).view().replicas;
    fetch_answer(&mut cluster, 0, 0);
    assert_eq!(cluster.node(1).view().replicas, before);
}

#[test]
fn offset_zero_with_only_the_bootstrap_snapshot_is_served_records_whatever_its_epoch() {
    let mut cluster = Sim::new(1, 1, 3).unwrap();
    cluster.crash(2);
    cluster.elect(1);
    cluster.append(1, &[b"r0"]).unwrap();
    cluster.replicate(3);
    let held: Vec<SnapshotId> = cluster.node(1).snapshots().map(|m| m.id).collect();
    assert_eq!(held, [SnapshotId::BOOTSTRAP]);
    let epoch = cluster.node(1).epoch();
    assert!(epoch > 0);
    // Kafka's validateOffsetAndEpoch: a log that starts at 0 is valid at offset 0, whatever the last
    // fetched epoch; the earliest snapshot's epoch (0) is not compared there.
    assert_eq!(fetch_answer(&mut cluster, 0, epoch), (None, true, None));
}

#[test]
fn a_snapshot_the_shell_reports_is_taken_on_only_as_asked() {
    let (mut cluster, id) = leader_with_snapshot(3, 3);
    let hw = cluster.node(1).high_watermark().unwrap();
    assert!(hw > 2);
    let held =
        |cluster: &Sim| -> Vec<SnapshotId> { cluster.node(1).snapshots().map(|m| m.id).collect() };
    let report = |cluster: &mut Sim, asked: SnapshotId, written: SnapshotId| {
        let meta = sim::snapshot_meta(written, &snapshot_file(&[1])).unwrap();
        let now = cluster.clock(1);
        let _ = cluster.node_mut(1).snapshot_taken(now, asked, Ok(meta));
    };
    // Snapshots nobody asked for, within the log start and HW and above it.
    for end_offset in [1, 2, hw + 1] {
        let unasked = SnapshotId {
            end_offset,
            epoch: id.epoch,
        };
        report(&mut cluster, unasked, unasked);
        assert_eq!(
            held(&cluster),
            [SnapshotId::BOOTSTRAP, id],
            "{unasked} not asked for"
        );
    }
    // One asked for, reported as another.
    cluster.append(1, &[b"more"]).unwrap();
    cluster.replicate(3);
    let now = cluster.clock(1);
    let out = cluster.node_mut(1).take_snapshot_now(now);
    let [Effect::TakeSnapshot { id: asked, .. }] = out.effects.as_slice() else {
        panic!("one snapshot asked for: {:?}", out.effects);
    };
    let other = SnapshotId {
        end_offset: 2,
        epoch: id.epoch,
    };
    report(&mut cluster, *asked, other);
    assert_eq!(
        held(&cluster),
        [SnapshotId::BOOTSTRAP, id],
        "{other} reported for {asked}"
    );
}

#[test]
fn one_snapshot_is_written_at_a_time() {
    let mut cluster = Sim::new(1, 0, 5).unwrap();
    cluster.elect(1);
    cluster.append(1, &[b"r0"]).unwrap();
    cluster.replicate(2);
    let now = cluster.clock(1);
    let first = cluster.node_mut(1).take_snapshot_now(now);
    let [Effect::TakeSnapshot { id, .. }] = first.effects.as_slice() else {
        panic!("one snapshot asked for: {:?}", first.effects);
    };
    let id = *id;
    assert_eq!(Some(id.end_offset), cluster.node(1).high_watermark());
    // Until the shell answers, no other snapshot is asked for, even past a later HW.
    let again = cluster.node_mut(1).take_snapshot_now(now);
    assert_eq!(again.effects, [], "asked again while {id} is written");
    cluster.append(1, &[b"r1"]).unwrap();
    cluster.replicate(2);
    assert!(cluster.node(1).high_watermark() > Some(id.end_offset));
    let later = cluster.node_mut(1).take_snapshot_now(now);
    assert_eq!(later.effects, [], "asked past the HW while {id} is written");
    cluster.absorb(1, first);
    let held: Vec<SnapshotId> = cluster.node(1).snapshots().map(|m| m.id).collect();
    assert_eq!(held, [SnapshotId::BOOTSTRAP, id]);
    let next = cluster
        .take_snapshot(1)
        .expect("the next snapshot once the first is answered");
    assert_eq!(Some(next.end_offset), cluster.node(1).high_watermark());
    // Nothing committed past it: no snapshot to take.
    assert_eq!(cluster.take_snapshot(1), None, "{next} again");
}

#[test]
fn a_snapshot_asked_for_survives_a_leader_change_that_leaves_the_high_watermark_unknown() {
    // Static voters (kraft.version 0): the first batch, the leader's LeaderChange, ends at offset 1.
    let mut cluster = Sim::new_static(3, 7).unwrap();
    cluster.elect(1);
    cluster.replicate(3);
    assert_eq!(cluster.node(2).high_watermark(), Some(1));
    let now = cluster.clock(2);
    let out = cluster.node_mut(2).take_snapshot_now(now);
    let [Effect::TakeSnapshot { id, voters, .. }] = out.effects.as_slice() else {
        panic!("one snapshot asked for: {:?}", out.effects);
    };
    let id = *id;
    assert_eq!((id.end_offset, voters.clone()), (1, None));
    // While the shell writes it, node 2 is elected in a new epoch and knows no HW yet (Kafka's new
    // LeaderState); the snapshot was committed when it was asked for and stays so.
    cluster.crash(1);
    cluster.elect(2);
    assert_eq!(cluster.node(2).role(), Role::Leader);
    assert_eq!(cluster.node(2).high_watermark(), None);
    cluster.absorb(2, out);
    let held: Vec<SnapshotId> = cluster.node(2).snapshots().map(|m| m.id).collect();
    assert!(held.contains(&id), "{held:?}");
}

#[test]
fn a_log_that_starts_at_a_snapshot_answers_by_validate_offset_and_epoch() {
    let mut cluster = Sim::new(1, 0, 5).unwrap();
    cluster.elect(1);
    for i in 0..4 {
        cluster.append(1, &[format!("r{i}").as_bytes()]).unwrap();
    }
    cluster.replicate(2);
    let e1 = cluster.node(1).epoch();
    let id = SnapshotId {
        end_offset: cluster.node(1).high_watermark().unwrap(),
        epoch: e1,
    };
    assert_eq!(cluster.take_snapshot(1), Some(id), "a snapshot at the HW");
    // Restart from the snapshot and an empty log suffix that starts at it; lead again (a later epoch).
    cluster.crash(1);
    let sim_node = cluster.nodes.get_mut(&1).unwrap();
    sim_node.crashed_log = Some(kraft::log::MemoryLog::starting_at(id.end_offset, id.epoch));
    sim_node.snapshot_files.remove(&SnapshotId::BOOTSTRAP);
    cluster.restart(1).unwrap();
    assert_eq!(cluster.node(1).log().start_offset(), id.end_offset);
    cluster.elect(1);
    cluster.append(1, &[b"x"]).unwrap();
    cluster.replicate(2);
    let e2 = cluster.node(1).epoch();
    assert!(e2 > e1);
    let start = id.end_offset;
    let snap = Some((id.end_offset, id.epoch));
    assert_eq!(fetch_answer(&mut cluster, 0, 0).0, snap, "offset 0");
    assert_eq!(
        fetch_answer(&mut cluster, start - 1, e1).0,
        snap,
        "below the log start"
    );
    assert_eq!(
        fetch_answer(&mut cluster, start, e1 - 1).0,
        snap,
        "at the start, another epoch"
    );
    assert_eq!(
        fetch_answer(&mut cluster, start + 1, e1 - 1).0,
        snap,
        "an epoch older than the snapshot's"
    );
    let (s, records, diverging) = fetch_answer(&mut cluster, start, e1);
    assert_eq!(
        (s, records, diverging),
        (None, true, None),
        "at the start with the snapshot's epoch"
    );
    let end = cluster.node(1).log().end_offset();
    assert_eq!(
        fetch_answer(&mut cluster, end, e2),
        (None, false, None),
        "caught up"
    );
    // The voter set and committed set come from the snapshot at end − 1, then the log.
    let node = cluster.node(1);
    assert_eq!(
        node.history().entries().next().map(|(o, _)| o),
        Some(start - 1)
    );
    assert_eq!(
        committed_voter_set(node.history(), Some(start)),
        Some(&sim::voter_set(&[1])),
        "HW − 1 is the snapshot's last offset"
    );
}

#[test]
fn a_snapshot_being_written_when_a_fetched_one_is_installed_is_not_taken_on() {
    let mut configs: Vec<NodeConfig> = (1..=2)
        .map(|id| sim::config(id, Bootstrap::Checkpoint(sim::voter_set(&[1])), 9))
        .collect();
    // The leader moves its log start to its latest snapshot at each retention check.
    configs[0].snapshots.enabled = true;
    configs[0].snapshots.max_retention_bytes = 0;
    let mut cluster = Sim::with_configs(configs).unwrap();
    cluster.elect(1);
    cluster.append(1, &[b"r0"]).unwrap();
    cluster.replicate(3);
    // Observer 2 starts a snapshot of what it has, and falls behind while the shell writes it.
    let now = cluster.clock(2);
    let writing = cluster.node_mut(2).take_snapshot_now(now);
    let [Effect::TakeSnapshot { id: old, .. }] = writing.effects.as_slice() else {
        panic!("one snapshot asked for: {:?}", writing.effects);
    };
    let old = *old;
    for i in 1..4 {
        cluster.append(1, &[format!("r{i}").as_bytes()]).unwrap();
    }
    let leader_snapshot = cluster.take_snapshot(1).expect("the leader's snapshot");
    assert!(leader_snapshot.end_offset > old.end_offset);
    let now = cluster.clock(1);
    let out = cluster.node_mut(1).clean_now(now);
    cluster.absorb(1, out);
    assert_eq!(
        cluster.node(1).log().start_offset(),
        leader_snapshot.end_offset
    );
    // It fetches below the leader's log start, downloads and installs the leader's snapshot; the install
    // alone brings its HW up to the snapshot's end (Kafka's `truncateToLatestSnapshot`).
    let hw_before = cluster.node(2).high_watermark().expect("fetched before");
    assert!(hw_before < leader_snapshot.end_offset);
    cluster.fire(2, Timer::Fetch);
    for _ in 0..50 {
        if cluster.node(2).log().start_offset() == leader_snapshot.end_offset {
            break;
        }
        if cluster.network.is_empty() {
            cluster.fire(2, Timer::Fetch);
        } else {
            cluster.deliver(0);
        }
    }
    assert_eq!(
        cluster.node(2).log().start_offset(),
        leader_snapshot.end_offset
    );
    assert_eq!(
        cluster.node(2).high_watermark(),
        Some(leader_snapshot.end_offset)
    );
    cluster.replicate(3);
    // Then its own snapshot is written: of a log the install replaced, so not taken on.
    cluster.absorb(2, writing);
    let held: Vec<SnapshotId> = cluster.node(2).snapshots().map(|m| m.id).collect();
    assert_eq!(held, [leader_snapshot]);
}
