//! The leader's ApiVersions round trip to a voter being added (KIP-853, Kafka's `AddVoterHandler`).
//!
//! An AddRaftVoter that passes the checks on arrival ([`Node::check_request`]) is held while the leader
//! asks the new voter, on its default listener, which `kraft.version` range it supports. The answer (an
//! input from peer `voter id`) decides: an error → REQUEST_TIMED_OUT; no range or one without the
//! finalized `kraft.version` → INVALID_REQUEST; then the rest of [`Node::check_change`] (caught up) and
//! the VotersRecord, which records the answered range. No answer by the deadline → REQUEST_TIMED_OUT.
//! While held, the add counts as the pending change (other changes are refused), as in Kafka.

use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode};

use super::membership::{ChangeOp, ChangeOutcome, InvalidChange, Refusal};
use super::messages::errors;
use super::types::*;
use super::Node;

/// The feature whose range the leader asks for.
const KRAFT_VERSION: &str = "kraft.version";

/// An AddRaftVoter waiting for the new voter's ApiVersions answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AddCheck {
    pub client: ClientId,
    pub key: ReplicaKey,
    pub listeners: Vec<Endpoint>,
    pub ack_when_committed: bool,
    /// The request's deadline: its arrival plus the request timeout, for the whole operation (Kafka's
    /// `AddVoterHandlerState` timer also runs on after the record is appended).
    pub deadline: Millis,
}

/// The ApiVersions request the leader sends (this node's software name and version, as its admin
/// client sends them).
pub fn api_versions_request() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("kraft"))
        .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")))
}

impl Node {
    pub(super) fn start_add_check(&mut self, check: AddCheck, out: &mut Output) {
        let to = check.key.id;
        self.add_check = Some(check);
        out.requests
            .push((to, Message::ApiVersionsRequest(api_versions_request())));
    }

    /// Where the held add's new voter listens (its listener named as this node's default one): how the
    /// shell reaches a replica that is not a voter yet.
    pub(super) fn add_check_endpoint(&self, id: i32) -> Option<Endpoint> {
        let check = self.add_check.as_ref().filter(|c| c.key.id == id)?;
        let name = &self.config.listeners.first()?.name;
        check.listeners.iter().find(|l| &l.name == name).cloned()
    }

    /// The answer of peer `from` to the leader's ApiVersions request. Ignored unless an add of `from` is
    /// held (Kafka's `expectingApiResponse`); the held add exists only at a leader.
    pub(super) fn on_api_versions_response(
        &mut self,
        now: Millis,
        from: i32,
        resp: ApiVersionsResponse,
        out: &mut Output,
    ) {
        let Some(check) = self.add_check.take_if(|c| c.key.id == from) else {
            tracing::debug!(
                node = self.local.id,
                from,
                "ApiVersions answer not expected"
            );
            return;
        };
        let (client, key) = (check.client, check.key);
        if resp.error_code != errors::NONE {
            tracing::info!(
                node = self.local.id,
                voter = from,
                error = resp.error_code,
                "aborting add voter: its ApiVersions answer is an error"
            );
            let outcome = ChangeOutcome::ApiVersionsFailed;
            self.reply_change(client, ChangeKind::Add, key, outcome, out);
            return;
        }
        let range = resp
            .supported_features
            .iter()
            .find(|f| f.name.as_str() == KRAFT_VERSION)
            .map(|f| SupportedVersions {
                min: f.min_version,
                max: f.max_version,
            });
        let Some(supported) = range else {
            let why = Refusal::Invalid(InvalidChange::KraftVersionNotSupported);
            self.reply_change(
                client,
                ChangeKind::Add,
                key,
                ChangeOutcome::Refused(why),
                out,
            );
            return;
        };
        let node = VoterNode {
            key,
            listeners: check.listeners,
            supported,
        };
        // The arrival checks again: nothing could change them while the add was held (it blocks every
        // other change), so this only adds the range and catch-up checks. The cluster id was checked.
        match self.check_change(None, &ChangeOp::Add(node)) {
            Err(r) => {
                self.reply_change(client, ChangeKind::Add, key, ChangeOutcome::Refused(r), out)
            }
            Ok(set) => {
                self.append_change(now, client, ChangeKind::Add, key, set, check.deadline, out);
                if !check.ack_when_committed {
                    // Kafka's AddVoterHandler completes the request once the record is appended and
                    // keeps no pending operation; the next change waits for this record's commit
                    // (the uncommitted-VotersRecord rule).
                    if let Some(p) = self.pending.take_if(|p| p.client == client) {
                        self.reply_change(p.client, p.kind, p.key, ChangeOutcome::Appended, out);
                    }
                }
            }
        }
    }
}
