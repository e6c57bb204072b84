//! DescribeCluster answered by controllers (KIP-919, `node/describe_cluster.rs`).

use kafka_protocol::messages::DescribeClusterRequest;
use kraft::node::{errors, ENDPOINT_TYPE_CONTROLLER};
use kraft::wire::error_codes::{MISMATCHED_ENDPOINT_TYPE, UNSUPPORTED_ENDPOINT_TYPE};
use kraft_sim::Sim;

/// `ClusterAuthorizedOperations` when the client did not ask for them (the schema default).
const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

#[test]
fn controllers_are_listed_and_the_leader_is_named_once_elected() {
    let mut cluster = Sim::new(3, 0, 7).unwrap();
    let before = cluster.node(1).describe_cluster(1, &controller_request());
    assert_eq!(before.error_code, 0);
    assert_eq!(before.endpoint_type, ENDPOINT_TYPE_CONTROLLER);
    assert_eq!(before.controller_id.0, -1, "no leader known yet");
    let ids: Vec<i32> = before.brokers.iter().map(|b| b.broker_id.0).collect();
    assert_eq!(ids, vec![1, 2, 3]);
    assert_eq!(
        before.cluster_authorized_operations,
        AUTHORIZED_OPERATIONS_OMITTED
    );
    cluster.elect(1);
    cluster.replicate(3);
    let leader = cluster.leader().unwrap();
    for id in 1..=3 {
        let r = cluster.node(id).describe_cluster(2, &controller_request());
        assert_eq!(r.controller_id.0, leader, "asked node {id}");
    }
}

#[test]
fn broker_endpoint_type_is_refused_like_kafka() {
    let cluster = Sim::new(1, 0, 7).unwrap();
    let node = cluster.node(1);
    let r = node.describe_cluster(1, &DescribeClusterRequest::default().with_endpoint_type(1));
    assert_eq!(r.error_code, MISMATCHED_ENDPOINT_TYPE);
    let r = node.describe_cluster(0, &DescribeClusterRequest::default());
    assert_eq!(r.error_code, errors::INVALID_REQUEST);
    let r = node.describe_cluster(1, &DescribeClusterRequest::default().with_endpoint_type(9));
    assert_eq!(r.error_code, UNSUPPORTED_ENDPOINT_TYPE);
    let r = node.describe_cluster(
        1,
        &controller_request().with_include_cluster_authorized_operations(true),
    );
    assert_eq!(
        r.cluster_authorized_operations, 8096,
        "what Kafka 4.4 answers"
    );
}

fn controller_request() -> DescribeClusterRequest {
    DescribeClusterRequest::default().with_endpoint_type(ENDPOINT_TYPE_CONTROLLER)
}
