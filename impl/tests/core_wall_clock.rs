//! The wall clock as an input of the core: the CreateTime a leader gives its batches and the
//! LastContainedLogTimestamp of every replica's snapshot of them.

use kraft::log::{RaftLog, SnapshotId};
use kraft::node::{Effect, Harness};
use kraft_sim::Sim;

/// Leader 1 of three voters, its wall clock at 2026-12-07T08:00:00Z; followers 2 and 3 with clocks an hour
/// behind and a day ahead. Returns what each replica's own snapshot at the HW says.
fn snapshots_of_one_id() -> Vec<(i32, SnapshotId, i64, i64)> {
    let mut cluster = Sim::new(3, 0, 5).unwrap();
    for (id, wall) in [
        (1, 1_765_094_400_000),
        (2, 1_765_090_800_000),
        (3, 1_765_180_800_000),
    ] {
        let now = cluster.clock(id);
        cluster.node_mut(id).set_wall_clock(now, wall);
    }
    cluster.elect(1);
    cluster.append(1, &[b"a", b"b"]).unwrap();
    cluster.replicate(5);
    let mut taken = Vec::new();
    for id in 1..=3 {
        let now = cluster.clock(id);
        let out = cluster.node_mut(id).take_snapshot_now(now);
        for e in &out.effects {
            if let Effect::TakeSnapshot {
                id: snap,
                last_contained_log_timestamp,
                append_time,
                ..
            } = e
            {
                taken.push((id, *snap, *last_contained_log_timestamp, *append_time));
            }
        }
        cluster.absorb(id, out);
    }
    taken
}

#[test]
fn every_replica_snapshots_one_id_with_the_leaders_create_time_and_stamps_its_batches_with_its_own_clock(
) {
    let taken = snapshots_of_one_id();
    assert_eq!(taken.len(), 3, "{taken:?}");
    let leader = taken[0];
    for &(id, snap, last, append_time) in &taken {
        assert_eq!(snap, leader.1, "node {id}");
        // The last contained batch is the leader's data batch: its CreateTime, whoever snapshots it.
        assert_eq!(last, leader.2, "node {id}");
        assert!(
            (1_765_094_400_000..1_765_094_460_000).contains(&last),
            "the leader's clock: {last}"
        );
        // The snapshot's own batches: the snapshotting replica's wall clock now.
        let base = [1_765_094_400_000, 1_765_090_800_000, 1_765_180_800_000][id as usize - 1];
        assert!(
            (base..base + 60_000).contains(&append_time),
            "node {id}: {append_time}"
        );
    }
}

#[test]
fn the_leaders_batches_carry_its_wall_clock_as_they_reach_the_followers() {
    let mut cluster = Sim::new(3, 0, 5).unwrap();
    let now = cluster.clock(1);
    cluster.node_mut(1).set_wall_clock(now, 1_765_094_400_000);
    cluster.elect(1);
    cluster.advance(700);
    cluster.append(1, &[b"x"]).unwrap();
    cluster.replicate(5);
    let elected = cluster.nodes[&1].storage.batches()[0].append_time;
    for id in 1..=3 {
        let batches = cluster.nodes[&id].storage.batches();
        let times: Vec<i64> = batches.iter().map(|b| b.append_time).collect();
        assert_eq!(times.len(), 2, "node {id}: {times:?}");
        assert!(elected >= 1_765_094_400_000, "{elected}");
        assert_eq!(times, vec![elected, elected + 700], "node {id}");
        let bytes = cluster.nodes[&id]
            .storage
            .read_bytes(0, usize::MAX)
            .unwrap();
        let decoded = kraft::records::decode_batches(bytes).unwrap();
        assert_eq!(
            decoded.iter().map(|b| b.append_time).collect::<Vec<_>>(),
            times
        );
    }
}
