//! Scenario tests of the quorum core: each checks leader, epoch, HW, current voters, committed
//! voters and the DescribeQuorum response at v0–v3 (encoded through the wire codec).

use kraft::node::{errors, ClientResponse, Role, Timer};
use kraft::voter_set::VoterSet;
use kraft::wire::describe_quorum::{DescribeQuorumRequest, PartitionRequest, TopicRequest};
use kraft_sim::{self as sim, change_error_code, Sim};

fn ids(set: &VoterSet) -> Vec<i32> {
    set.ids().collect()
}

/// The leader's state and its DescribeQuorum answer at every version.
fn check(
    sim: &mut Sim,
    leader: i32,
    epoch: i32,
    hw: Option<i64>,
    current: &[i32],
    committed: Option<&[i32]>,
) {
    let v = sim.node(leader).view();
    assert_eq!(v.role, Role::Leader, "node {leader} leads");
    assert_eq!(sim.leader(), Some(leader));
    assert_eq!(v.epoch, epoch, "epoch");
    assert_eq!(v.high_watermark, hw, "HW");
    assert_eq!(ids(&v.latest_voters), current, "current voters");
    assert_eq!(
        v.committed_voters.as_ref().map(ids),
        committed.map(|c| c.to_vec()),
        "committed voters"
    );
    for version in 0..=3 {
        let r = sim.describe(leader, version);
        r.to_bytes(version)
            .unwrap_or_else(|e| panic!("v{version} encodes: {e}"));
        assert_eq!(r.error_code, 0);
        let p = &r.topics[0].partitions[0];
        assert_eq!(
            (p.error_code, p.leader_id, p.leader_epoch),
            (0, leader, epoch),
            "v{version}"
        );
        assert_eq!(p.high_watermark, hw.unwrap_or(-1), "v{version} HW");
        let current_ids: Vec<i32> = p.current_voters.iter().map(|r| r.replica_id).collect();
        assert_eq!(current_ids, current, "v{version} CurrentVoters");
        let committed_ids: Vec<i32> = p.committed_voters.iter().map(|r| r.replica_id).collect();
        let expect: Vec<i32> = if version >= 3 {
            committed.unwrap_or(&[]).to_vec()
        } else {
            vec![]
        };
        assert_eq!(committed_ids, expect, "v{version} CommittedVoters");
        let node_ids: Vec<i32> = r.nodes.iter().map(|n| n.node_id).collect();
        let mut expect_nodes: Vec<i32> = current.to_vec();
        if version >= 3 {
            expect_nodes.extend(committed.unwrap_or(&[]));
        }
        expect_nodes.sort();
        expect_nodes.dedup();
        assert_eq!(
            node_ids,
            if version >= 2 { expect_nodes } else { vec![] },
            "v{version} Nodes"
        );
        // A committed voter that is also current reports the same state in both lists.
        for c in &p.committed_voters {
            if let Some(cur) = p
                .current_voters
                .iter()
                .find(|r| r.replica_id == c.replica_id)
            {
                assert_eq!(c, cur);
            }
        }
    }
}

/// Fires node `id`'s fetch timer and delivers everything until quiet.
fn fetch(sim: &mut Sim, id: i32) {
    sim.fire(id, Timer::Fetch);
    sim.deliver_all(1000);
}

fn single_reply(replies: Vec<ClientResponse>) -> i16 {
    assert_eq!(replies.len(), 1, "one immediate reply: {replies:?}");
    change_error_code(&replies[0]).expect("a membership reply")
}

/// Leader 1 of voters 1..=3 (plus observers), every voter caught up, HW 3.
fn elected(observers: i32) -> Sim {
    let mut sim = Sim::new(3, observers, 11).unwrap();
    sim.elect(1);
    sim.replicate(10);
    sim
}

#[test]
fn first_election_hw_unknown_until_a_majority_holds_a_current_epoch_record() {
    let mut sim = Sim::new(3, 0, 1).unwrap();
    sim.elect(1);
    // LeaderChange@0, KRaftVersion@1, Voters@2.
    let log = sim.node(1).view().log;
    assert_eq!(log.len(), 3);
    check(&mut sim, 1, 1, None, &[1, 2, 3], None);
    // Node 2's first fetch (offset 0) does not reach the epoch's records.
    sim.fire(2, Timer::Fetch);
    sim.deliver(0); // the request reaches the leader
    check(&mut sim, 1, 1, None, &[1, 2, 3], None);
    sim.deliver_all(10); // the response carries all three records to node 2
    assert_eq!(sim.node(2).view().log_end_offset, 3);
    fetch(&mut sim, 2); // now the leader learns 2 holds offset 3
    check(&mut sim, 1, 1, Some(3), &[1, 2, 3], Some(&[1, 2, 3]));
    // The follower learns the HW from the next response.
    fetch(&mut sim, 2);
    assert_eq!(sim.node(2).high_watermark(), Some(3));
    assert_eq!(sim.node(2).committed_voters().map(ids), Some(vec![1, 2, 3]));
}

#[test]
fn add_voter_committed_set_changes_only_when_hw_passes_the_record() {
    let mut sim = elected(1);
    assert_eq!(
        sim.node(4).role(),
        Role::Follower,
        "the observer found the leader"
    );
    check(&mut sim, 1, 1, Some(3), &[1, 2, 3], Some(&[1, 2, 3]));
    let replies = sim.client(1, sim::add_voter_request(4));
    assert!(
        replies.is_empty(),
        "the reply waits for the commit: {replies:?}"
    );
    let client = sim.last_client_id();
    check(&mut sim, 1, 1, Some(3), &[1, 2, 3, 4], Some(&[1, 2, 3]));
    // One more voter (2) holding the record is not a majority of four.
    fetch(&mut sim, 2);
    fetch(&mut sim, 2);
    check(&mut sim, 1, 1, Some(3), &[1, 2, 3, 4], Some(&[1, 2, 3]));
    assert!(sim.replies_to(client).is_empty());
    fetch(&mut sim, 3);
    fetch(&mut sim, 3);
    check(&mut sim, 1, 1, Some(4), &[1, 2, 3, 4], Some(&[1, 2, 3, 4]));
    assert_eq!(
        sim.replies_to(client)
            .iter()
            .map(change_error_code)
            .collect::<Vec<_>>(),
        vec![Some(0)]
    );
    assert_eq!(
        sim.node(1).view().last_change_reply.map(|r| r.error_code()),
        Some(errors::NONE)
    );
}

#[test]
fn add_lagging_voter_times_out() {
    let mut sim = Sim::new(3, 1, 5).unwrap();
    sim.crash(4);
    sim.elect(1);
    sim.replicate(10);
    check(&mut sim, 1, 1, Some(3), &[1, 2, 3], Some(&[1, 2, 3]));
    // 4 is down: the leader's ApiVersions request to it is lost, and the add times out.
    assert!(sim.client(1, sim::add_voter_request(4)).is_empty());
    let client = sim.last_client_id();
    sim.fire(1, Timer::PendingChange);
    assert_eq!(
        sim.replies_to(client)
            .iter()
            .map(sim::change_error_code)
            .collect::<Vec<_>>(),
        vec![Some(errors::REQUEST_TIMED_OUT)]
    );
    // Fetching from the start is not caught up while the leader has more.
    sim.restart(4).unwrap();
    sim.fire(4, Timer::Fetch);
    sim.deliver(0); // 4 → 2 (a non-leader): NOT_LEADER_OR_FOLLOWER names leader 1
    sim.deliver_all(1);
    assert_eq!(sim.node(4).role(), Role::Follower);
    sim.fire(4, Timer::Fetch);
    sim.deliver(0); // fetch at offset 0 reaches leader 1, which is at 3
    assert_eq!(
        single_reply(sim.client(1, sim::add_voter_request(4))),
        errors::REQUEST_TIMED_OUT
    );
    sim.deliver_all(10);
    fetch(&mut sim, 4); // fetch at offset 3 = leader LEO: caught up
    let replies = sim.client(1, sim::add_voter_request(4));
    assert!(
        replies.is_empty(),
        "accepted: the reply waits for the commit"
    );
    check(&mut sim, 1, 1, Some(3), &[1, 2, 3, 4], Some(&[1, 2, 3]));
}

#[test]
fn remove_follower() {
    let mut sim = elected(0);
    assert!(sim.client(1, sim::remove_voter_request(3)).is_empty());
    let client = sim.last_client_id();
    check(&mut sim, 1, 1, Some(3), &[1, 2], Some(&[1, 2, 3]));
    // Only 2 counts now: its fetch at the new LEO commits the removal.
    fetch(&mut sim, 2);
    fetch(&mut sim, 2);
    check(&mut sim, 1, 1, Some(4), &[1, 2], Some(&[1, 2]));
    assert_eq!(
        sim.replies_to(client)
            .iter()
            .map(change_error_code)
            .collect::<Vec<_>>(),
        vec![Some(0)]
    );
    // The removed voter replicates its own removal and is an observer now.
    fetch(&mut sim, 3);
    fetch(&mut sim, 3);
    assert!(!sim.node(3).is_voter());
    let d = sim.describe(1, 3);
    assert!(d.topics[0].partitions[0]
        .observers
        .iter()
        .any(|o| o.replica_id == 3));
}

#[test]
fn leader_removes_itself_resigns_after_commit_and_a_new_leader_is_elected() {
    let mut sim = elected(0);
    assert!(sim.client(1, sim::remove_voter_request(1)).is_empty());
    let client = sim.last_client_id();
    // Still leading, not a voter; HW counts only 2 and 3.
    check(&mut sim, 1, 1, Some(3), &[2, 3], Some(&[1, 2, 3]));
    let d = sim.describe(1, 3);
    let p = &d.topics[0].partitions[0];
    assert!(
        p.observers.iter().any(|o| o.replica_id == 1),
        "a removed leader is an observer"
    );
    assert!(p.committed_voters.iter().any(|o| o.replica_id == 1));
    fetch(&mut sim, 2);
    fetch(&mut sim, 2);
    check(&mut sim, 1, 1, Some(3), &[2, 3], Some(&[1, 2, 3]));
    // 3's fetch at LEO 4 commits the removal: reply NONE, then resign.
    fetch(&mut sim, 3);
    sim.fire(3, Timer::Fetch);
    sim.deliver(0);
    assert_eq!(
        sim.replies_to(client)
            .iter()
            .map(change_error_code)
            .collect::<Vec<_>>(),
        vec![Some(0)]
    );
    assert_eq!(sim.node(1).role(), Role::Resigned);
    assert_eq!(sim.leader(), None);
    sim.deliver_all(100); // EndQuorumEpoch to 2 and 3
    sim.elect(2);
    sim.replicate(10);
    check(&mut sim, 2, 2, Some(5), &[2, 3], Some(&[2, 3]));
    // The old leader, not a voter, moves to epoch 2 on its election timeout (or follows 2).
    sim.fire(1, Timer::Election);
    sim.replicate(10);
    assert_eq!(sim.node(1).epoch(), 2);
    assert_ne!(sim.node(1).role(), Role::Candidate);
}

#[test]
fn uncommitted_voters_record_is_truncated_after_the_leader_crashes() {
    let mut sim = elected(1);
    assert!(sim.client(1, sim::add_voter_request(4)).is_empty());
    let client = sim.last_client_id();
    check(&mut sim, 1, 1, Some(3), &[1, 2, 3, 4], Some(&[1, 2, 3]));
    sim.crash(1);
    sim.elect(2);
    sim.replicate(10);
    check(&mut sim, 2, 2, Some(4), &[1, 2, 3], Some(&[1, 2, 3]));
    sim.restart(1).unwrap();
    assert_eq!(sim.node(1).role(), Role::Resigned);
    assert_eq!(ids(sim.node(1).latest_voters()), vec![1, 2, 3, 4]);
    assert_eq!(
        sim.node(1).committed_voters(),
        None,
        "HW unknown after restart"
    );
    // The new leader re-sends BeginQuorumEpoch to the voter that never fetched.
    sim.fire(2, Timer::BeginQuorumEpoch);
    sim.deliver_all(10);
    assert_eq!(sim.node(1).role(), Role::Follower);
    sim.replicate(10);
    assert_eq!(
        ids(sim.node(1).latest_voters()),
        vec![1, 2, 3],
        "the latest set reverted"
    );
    assert_eq!(sim.node(1).committed_voters().map(ids), Some(vec![1, 2, 3]));
    assert!(
        sim.replies_to(client).is_empty(),
        "a crashed leader never answers"
    );
    check(&mut sim, 2, 2, Some(4), &[1, 2, 3], Some(&[1, 2, 3]));
}

#[test]
fn second_change_while_one_is_pending_times_out_and_the_timeout_keeps_the_record() {
    let mut sim = elected(1);
    assert!(sim.client(1, sim::add_voter_request(4)).is_empty());
    let first = sim.last_client_id();
    assert_eq!(
        single_reply(sim.client(1, sim::remove_voter_request(3))),
        errors::REQUEST_TIMED_OUT
    );
    // The pending add times out: REQUEST_TIMED_OUT, but the record stays and still blocks changes.
    sim.fire(1, Timer::PendingChange);
    let codes: Vec<_> = sim
        .replies_to(first)
        .iter()
        .map(change_error_code)
        .collect();
    assert_eq!(codes, vec![Some(errors::REQUEST_TIMED_OUT)]);
    check(&mut sim, 1, 1, Some(3), &[1, 2, 3, 4], Some(&[1, 2, 3]));
    assert_eq!(
        single_reply(sim.client(1, sim::remove_voter_request(3))),
        errors::REQUEST_TIMED_OUT
    );
    sim.replicate(10);
    check(&mut sim, 1, 1, Some(4), &[1, 2, 3, 4], Some(&[1, 2, 3, 4]));
    assert_eq!(
        sim.replies_to(first).len(),
        1,
        "no second reply after the timeout"
    );
}

#[test]
fn change_before_the_hw_is_known_times_out() {
    let mut sim = Sim::new(3, 1, 3).unwrap();
    sim.elect(1);
    check(&mut sim, 1, 1, None, &[1, 2, 3], None);
    assert_eq!(
        single_reply(sim.client(1, sim::add_voter_request(4))),
        errors::REQUEST_TIMED_OUT
    );
    assert_eq!(
        single_reply(sim.client(1, sim::remove_voter_request(3))),
        errors::REQUEST_TIMED_OUT
    );
    check(&mut sim, 1, 1, None, &[1, 2, 3], None);
}

#[test]
fn hw_never_decreases_when_a_voter_is_added() {
    let mut sim = Sim::new(1, 1, 9).unwrap();
    sim.elect(1);
    check(&mut sim, 1, 1, Some(3), &[1], Some(&[1]));
    sim.replicate(10); // observer 2 catches up to 3
    for i in 0..5u8 {
        sim.append(1, &[&[i]]).unwrap();
    }
    check(&mut sim, 1, 1, Some(8), &[1], Some(&[1]));
    // 2 is at 3 (caught up once) when it is added: {1, 2} would put the candidate at 3 < 8.
    assert!(sim.client(1, sim::add_voter_request(2)).is_empty());
    check(&mut sim, 1, 1, Some(8), &[1, 2], Some(&[1]));
    sim.replicate(10);
    check(&mut sim, 1, 1, Some(9), &[1, 2], Some(&[1, 2]));
}

#[test]
fn duplicate_voter_voter_not_found_and_last_voter() {
    let mut sim = elected(0);
    assert_eq!(
        single_reply(sim.client(1, sim::add_voter_request(2))),
        errors::DUPLICATE_VOTER
    );
    assert_eq!(
        single_reply(sim.client(1, sim::remove_voter_request(9))),
        errors::VOTER_NOT_FOUND
    );
    assert_eq!(
        single_reply(sim.client(2, sim::add_voter_request(9))),
        errors::NOT_LEADER_OR_FOLLOWER
    );
    check(&mut sim, 1, 1, Some(3), &[1, 2, 3], Some(&[1, 2, 3]));
    let mut one = Sim::new(1, 0, 2).unwrap();
    one.elect(1);
    assert_eq!(
        single_reply(one.client(1, sim::remove_voter_request(1))),
        errors::VOTER_NOT_FOUND
    );
    check(&mut one, 1, 1, Some(3), &[1], Some(&[1]));
}

#[test]
fn committed_voter_the_leader_no_longer_tracks_gets_sentinels() {
    let mut sim = Sim::new(3, 0, 4).unwrap();
    sim.crash(3);
    sim.elect(1);
    sim.replicate(10);
    assert!(sim.client(1, sim::remove_voter_request(3)).is_empty());
    check(&mut sim, 1, 1, Some(3), &[1, 2], Some(&[1, 2, 3]));
    let d = sim.describe(1, 3);
    let p = &d.topics[0].partitions[0];
    let three = p
        .committed_voters
        .iter()
        .find(|r| r.replica_id == 3)
        .expect("3 is committed");
    assert_eq!(
        (
            three.log_end_offset,
            three.last_fetch_timestamp,
            three.last_caught_up_timestamp
        ),
        (-1, -1, -1)
    );
    assert_eq!(three.replica_directory_id, sim::directory_id(3));
    assert!(
        p.observers.iter().all(|o| o.replica_id != 3),
        "never fetched: expired from the observers"
    );
    assert!(
        d.nodes
            .iter()
            .any(|n| n.node_id == 3 && !n.listeners.is_empty()),
        "v3 Nodes cover committed voters"
    );
}

#[test]
fn describe_quorum_to_a_non_leader_and_for_an_unknown_partition() {
    let mut sim = elected(0);
    for version in 0..=3 {
        let r = sim.describe(2, version);
        r.to_bytes(version).unwrap();
        let p = &r.topics[0].partitions[0];
        assert_eq!(r.error_code, 0);
        assert_eq!(
            (p.error_code, p.leader_id, p.leader_epoch, p.high_watermark),
            (errors::NOT_LEADER_OR_FOLLOWER, 0, 0, 0)
        );
        assert!(
            p.current_voters.is_empty() && p.observers.is_empty() && p.committed_voters.is_empty()
        );
    }
    let request = DescribeQuorumRequest {
        topics: vec![
            TopicRequest {
                topic_name: "other".into(),
                partitions: vec![PartitionRequest {
                    partition_index: 4,
                    unknown_tagged_fields: Default::default(),
                }],
                unknown_tagged_fields: Default::default(),
            },
            TopicRequest {
                topic_name: "__cluster_metadata".into(),
                partitions: vec![PartitionRequest {
                    partition_index: 0,
                    unknown_tagged_fields: Default::default(),
                }],
                unknown_tagged_fields: Default::default(),
            },
        ],
        unknown_tagged_fields: Default::default(),
    };
    let r = match sim
        .client(
            1,
            kraft::node::ClientRequest::DescribeQuorum {
                version: 3,
                request,
            },
        )
        .pop()
    {
        Some(ClientResponse::DescribeQuorum(r)) => r,
        other => panic!("{other:?}"),
    };
    let echoed: Vec<(String, i32, i16)> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_name.to_string(), p.partition_index, p.error_code))
        })
        .collect();
    assert_eq!(
        echoed,
        vec![
            ("other".into(), 4, errors::UNKNOWN_TOPIC_OR_PARTITION),
            (
                "__cluster_metadata".into(),
                0,
                errors::UNKNOWN_TOPIC_OR_PARTITION
            )
        ]
    );
    r.to_bytes(3).unwrap();
}

#[test]
fn static_voters_refuse_changes_with_unsupported_version() {
    let mut sim = Sim::new_static(3, 6).unwrap();
    sim.elect(1);
    // kraft.version 0: LeaderChange only.
    assert_eq!(sim.node(1).view().log_end_offset, 1);
    assert_eq!(sim.node(1).view().latest_voters_offset, None);
    sim.replicate(10);
    check(&mut sim, 1, 1, Some(1), &[1, 2, 3], Some(&[1, 2, 3]));
    assert_eq!(
        single_reply(sim.client(1, sim::add_voter_request(4))),
        errors::UNSUPPORTED_VERSION
    );
    assert_eq!(
        single_reply(sim.client(1, sim::remove_voter_request(3))),
        errors::UNSUPPORTED_VERSION
    );
}
