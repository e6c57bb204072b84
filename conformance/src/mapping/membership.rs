//! Operator membership changes (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter) as the model's `Change`.

use kafka_protocol::messages::{
    AddRaftVoterRequest, RemoveRaftVoterRequest, UpdateRaftVoterRequest,
};
use kafka_protocol::protocol::StrBytes;
use kraft::voter_set::SupportedVersions;
use model::types::ChangeOp;

use super::{directory_id, endpoint, CLUSTER_ID, REQUEST_TIMEOUT_MS};

/// The request for an operator change, as the admin client sends it.
pub enum ChangeRequest {
    Add(AddRaftVoterRequest),
    Remove(RemoveRaftVoterRequest),
    /// As the voter sends it, with `CurrentLeaderEpoch` still 0: the sender sets the receiver's
    /// epoch (the model's update is never fenced).
    Update(UpdateRaftVoterRequest),
}

/// `op` as a request; `None` for the swap bug, which has no Kafka request.
pub fn change_request(op: ChangeOp) -> Option<ChangeRequest> {
    use kafka_protocol::messages::add_raft_voter_request::Listener;
    let cluster = Some(StrBytes::from_static_str(CLUSTER_ID));
    match op {
        ChangeOp::Add(j) => {
            let e = endpoint(j);
            let listener = Listener::default()
                .with_name(StrBytes::from_string(e.name))
                .with_host(StrBytes::from_string(e.host))
                .with_port(e.port);
            Some(ChangeRequest::Add(
                AddRaftVoterRequest::default()
                    .with_cluster_id(cluster)
                    .with_timeout_ms(REQUEST_TIMEOUT_MS as i32)
                    .with_voter_id(i32::from(j))
                    .with_voter_directory_id(directory_id(j))
                    .with_listeners(vec![listener]),
            ))
        }
        ChangeOp::Remove(j) => Some(ChangeRequest::Remove(
            RemoveRaftVoterRequest::default()
                .with_cluster_id(cluster)
                .with_voter_id(i32::from(j))
                .with_voter_directory_id(directory_id(j)),
        )),
        ChangeOp::Update(j) => {
            use kafka_protocol::messages::update_raft_voter_request::{
                KRaftVersionFeature, Listener,
            };
            let e = endpoint(j);
            let listener = Listener::default()
                .with_name(StrBytes::from_string(e.name))
                .with_host(StrBytes::from_string(e.host))
                .with_port(e.port);
            let v = SupportedVersions::CURRENT;
            Some(ChangeRequest::Update(
                UpdateRaftVoterRequest::default()
                    .with_cluster_id(cluster)
                    .with_voter_id(i32::from(j))
                    .with_voter_directory_id(directory_id(j))
                    .with_listeners(vec![listener])
                    .with_k_raft_version_feature(
                        KRaftVersionFeature::default()
                            .with_min_supported_version(v.min)
                            .with_max_supported_version(v.max),
                    ),
            ))
        }
        ChangeOp::Swap { .. } | ChangeOp::KraftVersionUpgrade => None,
    }
}
