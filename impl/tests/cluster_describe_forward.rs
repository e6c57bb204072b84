//! Real `kraft` processes: DescribeQuorum asked of any node of a 3-node quorum gives the leader's answer
//! (a follower sends it on to the leader, as a Kafka broker does), at every version 0–3.

mod cluster_support;

use std::time::Duration;

use cluster_support::*;
use kraft::server::client::Client;

#[test]
fn describe_quorum_from_every_node_gives_the_leaders_answer() {
    let c = Cluster::start(3, 0, 31, &[]);
    let d = c.wait_for_leader(Duration::from_secs(20));
    let leader = d.partition.leader_id;
    let voters = |r: &kraft::wire::describe_quorum::DescribeQuorumResponse| {
        let mut ids: Vec<i32> = r.topics[0].partitions[0]
            .current_voters
            .iter()
            .map(|v| v.replica_id)
            .collect();
        ids.sort_unstable();
        ids
    };
    for id in [1, 2, 3] {
        for version in 0..=3i16 {
            // A leader change meanwhile is answered as one: ask again until the answer is the leader's.
            let r = wait_until(
                &format!("node {id}'s DescribeQuorum v{version}"),
                Duration::from_secs(10),
                || {
                    let mut client = Client::connect(&c.addr(id), Duration::from_secs(6)).ok()?;
                    let r = client.describe_quorum(version).ok()?;
                    (r.error_code == 0 && r.topics[0].partitions[0].error_code == 0).then_some(r)
                },
            );
            let p = &r.topics[0].partitions[0];
            assert_eq!(p.leader_id, leader, "node {id} v{version}");
            assert_eq!(voters(&r), vec![1, 2, 3], "node {id} v{version}");
            assert!(p.high_watermark >= 0, "node {id} v{version}");
            if version >= 2 {
                assert_eq!(r.nodes.len(), 3, "node {id} v{version}: {:?}", r.nodes);
            }
            if version >= 3 {
                let mut committed: Vec<i32> =
                    p.committed_voters.iter().map(|v| v.replica_id).collect();
                committed.sort_unstable();
                assert_eq!(committed, vec![1, 2, 3], "node {id} v{version}");
            }
        }
    }
}

/// With the leader gone and no new one yet, a follower answers with an error code, never by closing.
#[test]
fn a_follower_without_a_reachable_leader_answers_with_an_error_code() {
    let mut c = Cluster::start(3, 0, 37, &[]);
    let d = c.wait_for_leader(Duration::from_secs(20));
    let leader = d.partition.leader_id;
    let others: Vec<i32> = [1, 2, 3].into_iter().filter(|i| *i != leader).collect();
    c.kill(leader);
    c.kill(others[1]);
    let mut client = Client::connect(&c.addr(others[0]), Duration::from_secs(8)).unwrap();
    for _ in 0..3 {
        let r = client.describe_quorum(3).unwrap();
        let code = match r.topics.first().and_then(|t| t.partitions.first()) {
            Some(p) if r.error_code == 0 => p.error_code,
            _ => r.error_code,
        };
        assert!(
            code == kraft::node::errors::NOT_LEADER_OR_FOLLOWER
                || code == kraft::node::errors::REQUEST_TIMED_OUT,
            "{r:?}"
        );
    }
}

/// `--describe-quorum-forwarding false`: a follower answers NOT_LEADER_OR_FOLLOWER at once, as a Kafka
/// controller does, and the leader still answers.
#[test]
fn without_forwarding_a_follower_answers_not_leader() {
    let c = Cluster::start(3, 0, 41, &["--describe-quorum-forwarding", "false"]);
    let d = c.wait_for_leader(Duration::from_secs(20));
    let leader = d.partition.leader_id;
    let follower = [1, 2, 3].into_iter().find(|i| *i != leader).unwrap();
    let mut client = Client::connect(&c.addr(follower), Duration::from_secs(6)).unwrap();
    for version in 0..=3i16 {
        let r = client.describe_quorum(version).unwrap();
        let p = &r.topics[0].partitions[0];
        assert_eq!(
            (r.error_code, p.error_code),
            (0, kraft::node::errors::NOT_LEADER_OR_FOLLOWER),
            "v{version}: {r:?}"
        );
    }
    let mut client = Client::connect(&c.addr(leader), Duration::from_secs(6)).unwrap();
    assert_eq!(
        client.describe_quorum(3).unwrap().topics[0].partitions[0].error_code,
        0
    );
}
