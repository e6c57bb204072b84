//! DescribeCluster answered by a controller (KIP-919): how Kafka's admin client, bootstrapped with
//! `bootstrap.controllers`, learns the cluster id and finds the active controller from any one of them.
//!
//! Kafka (`ControllerApis.handleDescribeCluster`, `AuthHelper.computeDescribeClusterResponse`): the
//! request must ask for endpoint type 2 (controllers); the answer lists the controllers with their
//! endpoint on the listener the request came in on, and `ControllerId` is the Raft leader when that
//! leader is in the list, else −1. Differences (listed in `impl/README.md`): Kafka lists the controllers
//! registered in the metadata log (`ControllerRegistrationRecord`); this node has no metadata log and lists
//! what its Raft state knows: the voters of its latest voter set and itself, on their default listener.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use super::{errors, Node};
use crate::voter_set::Endpoint;
use crate::wire::error_codes::{MISMATCHED_ENDPOINT_TYPE, UNSUPPORTED_ENDPOINT_TYPE};

/// `EndpointType` values of DescribeCluster v1+ (`EndpointType.java`).
pub const ENDPOINT_TYPE_BROKER: i8 = 1;
pub const ENDPOINT_TYPE_CONTROLLER: i8 = 2;

/// `ClusterAuthorizedOperations` when the client did not ask for them (the schema default).
const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;
/// Without an authorizer Kafka reports every operation that applies to the cluster resource
/// (`AclEntry.supportedOperations(CLUSTER)`): CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
/// DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12 (bit = `AclOperation` code). The interop
/// suite (`conformance/kafka`) checks it against a Kafka 4.4 controller, which answers 8096.
const CLUSTER_OPERATIONS: i32 =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

impl Node {
    /// DescribeCluster at `version` (0–2) as a Kafka controller answers it.
    pub fn describe_cluster(
        &self,
        version: i16,
        req: &DescribeClusterRequest,
    ) -> DescribeClusterResponse {
        // v0 has no EndpointType field: it means brokers (the schema default 1).
        let requested = if version >= 1 {
            req.endpoint_type
        } else {
            ENDPOINT_TYPE_BROKER
        };
        let refuse = |v1_code: i16, message: String| {
            let code = if version == 0 {
                errors::INVALID_REQUEST
            } else {
                v1_code
            };
            DescribeClusterResponse::default()
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message)))
                .with_endpoint_type(ENDPOINT_TYPE_CONTROLLER)
        };
        match requested {
            ENDPOINT_TYPE_CONTROLLER => {}
            ENDPOINT_TYPE_BROKER => {
                return refuse(
                    MISMATCHED_ENDPOINT_TYPE,
                    "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER".into(),
                )
            }
            other => {
                return refuse(
                    UNSUPPORTED_ENDPOINT_TYPE,
                    format!("Unsupported endpoint type {other}"),
                )
            }
        }
        let brokers: Vec<DescribeClusterBroker> = self
            .known_controllers()
            .into_iter()
            .map(|(id, endpoint)| {
                DescribeClusterBroker::default()
                    .with_broker_id(BrokerId(id))
                    .with_host(StrBytes::from_string(endpoint.host))
                    .with_port(i32::from(endpoint.port))
                    .with_rack(None)
            })
            .collect();
        let controller_id = self
            .leader_id()
            .filter(|id| brokers.iter().any(|b| b.broker_id.0 == *id))
            .unwrap_or(-1);
        let operations = if req.include_cluster_authorized_operations {
            CLUSTER_OPERATIONS
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        };
        DescribeClusterResponse::default()
            .with_error_code(errors::NONE)
            .with_error_message(None)
            .with_endpoint_type(ENDPOINT_TYPE_CONTROLLER)
            .with_cluster_id(StrBytes::from_string(self.config.cluster_id.clone()))
            .with_controller_id(BrokerId(controller_id))
            .with_brokers(brokers)
            .with_cluster_authorized_operations(operations)
    }

    /// Controllers this node can name with an endpoint: the voters of its latest set (default listener)
    /// and itself (its default listener), by id.
    fn known_controllers(&self) -> BTreeMap<i32, Endpoint> {
        let mut known: BTreeMap<i32, Endpoint> = self
            .history
            .latest()
            .nodes()
            .filter_map(|n| Some((n.key.id, n.default_listener()?.clone())))
            .collect();
        if let Some(own) = self.config.listeners.first() {
            known.insert(self.local.id, own.clone());
        }
        known
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::sim;

    #[test]
    fn controllers_are_listed_and_the_leader_is_named_once_elected() {
        let mut cluster = sim::Sim::new(3, 0, 7).unwrap();
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
        let cluster = sim::Sim::new(1, 0, 7).unwrap();
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
}
