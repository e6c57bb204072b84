//! The `kraft.version` upgrade on the implementation side (`--start static`): the operator's
//! UpdateFeatures and the voters' own UpdateRaftVoter reports (see `mapping::upgrade`).

use kafka_protocol::messages::UpdateRaftVoterRequest;
use kraft::node::{ClientRequest, Harness, Message, Output};
use model::types::{ChangeOp, Id};

use super::{Applied, Cluster};
use crate::mapping::upgrade::{upgrade_request, UPDATE_FEATURES_VERSION};

impl Cluster {
    /// The model's `UpgradeKraftVersion(i)`: `kafka-features.sh upgrade --feature kraft.version=1`
    /// sent to node `i`; its answer comes now (a refusal or a no-op) or once the HW passes the batch.
    pub(super) fn upgrade(&mut self, i: Id, applied: &mut Applied) -> Result<(), String> {
        let req = ClientRequest::UpdateFeatures {
            version: UPDATE_FEATURES_VERSION,
            request: upgrade_request(),
        };
        self.serve_change(i, ChangeOp::KraftVersionUpgrade, req, applied)
    }

    /// At `kraft.version` 0 a follower's own report rides on a Fetch once its period (a fetch timeout)
    /// has passed, a moment the model does not know: the report is the model's `UpdateVoter` step
    /// ([`Cluster::check_own_update`]), so the one sent with the Fetch is lost on the way (the node
    /// sends it again next period, as after any lost request).
    pub(super) fn drop_own_report(&self, i: Id, out: &mut Output) {
        if self.nodes[i as usize].kraft_version() == 0 {
            out.requests
                .retain(|(_, m)| !matches!(m, Message::UpdateRaftVoterRequest(_)));
        }
    }

    /// At `kraft.version` 0 the model's `UpdateVoter` at `server` is the report its voter sends by
    /// itself: the request the mapping builds must be the one that voter's node would send now, to
    /// `server` (at `kraft.version` 1 the update stands for an operator's endpoint change instead).
    pub(super) fn check_own_update(
        &self,
        server: Id,
        req: &UpdateRaftVoterRequest,
    ) -> Result<(), String> {
        if self.nodes[server as usize].kraft_version() != 0 {
            return Ok(());
        }
        let j = usize::try_from(req.voter_id)
            .ok()
            .filter(|j| *j < self.nodes.len())
            .ok_or_else(|| format!("UpdateRaftVoter of unknown voter {}", req.voter_id))?;
        match self.nodes[j].update_voter_request() {
            Some((to, own)) if to == i32::from(server) && own == *req => Ok(()),
            Some((to, own)) => Err(format!(
                "voter {j} sends {own:?} to {to}, the model's update to {server} is {req:?}"
            )),
            None => Err(format!(
                "voter {j} sends no UpdateRaftVoter, the model's goes to {server}"
            )),
        }
    }
}
