//! Operator membership changes (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter) as the model's `Change`.

use kafka_protocol::messages::{
    AddRaftVoterRequest, RemoveRaftVoterRequest, UpdateRaftVoterRequest,
};
use kafka_protocol::protocol::StrBytes;
use kraft::voter_set::SupportedVersions;
use model::types::{ChangeOp, Id, Mask, State};

use super::{directory_id_at, endpoint, CLUSTER_ID, REQUEST_TIMEOUT_MS};

/// The request for an operator change, as the admin client sends it.
pub enum ChangeRequest {
    Add(AddRaftVoterRequest),
    Remove(RemoveRaftVoterRequest),
    /// As the voter sends it, with `CurrentLeaderEpoch` still 0: the sender sets the receiver's
    /// epoch (the model's update is never fenced).
    Update(UpdateRaftVoterRequest),
}

/// The model directory id of the key an operator's `op` at `server` names: the replica's current
/// one for an add or update, the one `server`'s latest set holds for a removal (the model's
/// `KraftModel::op_dir` and `spec::check_change`).
pub fn request_dir(st: &State, bootstrap: Mask, server: Id, op: ChangeOp) -> u8 {
    match op {
        ChangeOp::Remove(j) => st
            .servers
            .get(usize::from(server))
            .and_then(|s| model::spec::latest_voters(bootstrap, &s.log).dir(j))
            .unwrap_or(0),
        _ => model::KraftModel::op_dir(st, op),
    }
}

/// `op` as a request naming the key (its id, model directory id `dir`); `None` for the swap bug,
/// which has no Kafka request.
pub fn change_request(op: ChangeOp, dir: u8) -> Option<ChangeRequest> {
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
                    .with_voter_directory_id(directory_id_at(j, dir))
                    .with_listeners(vec![listener]),
            ))
        }
        ChangeOp::Remove(j) => Some(ChangeRequest::Remove(
            RemoveRaftVoterRequest::default()
                .with_cluster_id(cluster)
                .with_voter_id(i32::from(j))
                .with_voter_directory_id(directory_id_at(j, dir)),
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
                    .with_voter_directory_id(directory_id_at(j, dir))
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
