//! Who may send what over a TLS listener: Raft RPCs only from the controller a certificate proves, and
//! membership changes only from `super.users` (when set).
//!
//! The check runs in the connection task, before the request reaches the node, so the core never sees a
//! refused request. A refused request gets Kafka's CLUSTER_AUTHORIZATION_FAILED answer (what a Kafka
//! controller with an authorizer answers a principal without CLUSTER_ACTION/ALTER), and a log line.

use kafka_protocol::messages::{
    AddRaftVoterResponse, RemoveRaftVoterResponse, UpdateRaftVoterResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::codec::Incoming;
use super::tls::Tls;
use crate::node::{ClientRequest, ClientResponse, Message};
use crate::wire::error_codes::CLUSTER_AUTHORIZATION_FAILED;

/// Who is on the other end of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// A plaintext listener: nobody is authenticated and everything is allowed (as before TLS).
    Plaintext,
    /// TLS without a client certificate (`ssl.client.auth` none or requested).
    Anonymous,
    /// The principal of a verified client certificate (its subject DN, Kafka's default rule).
    Principal(String),
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Plaintext => write!(f, "plaintext client"),
            Identity::Anonymous => write!(f, "TLS client without certificate"),
            Identity::Principal(p) => write!(f, "User:{p}"),
        }
    }
}

impl Identity {
    fn principal(&self) -> Option<&str> {
        match self {
            Identity::Principal(p) => Some(p),
            _ => None,
        }
    }
}

/// Why a request was refused (logged; the client gets CLUSTER_AUTHORIZATION_FAILED).
#[derive(Debug, PartialEq, Eq)]
pub struct Denied(pub String);

/// The access rule: `Ok` to serve `incoming` from `who`.
pub fn check(tls: Option<&Tls>, who: &Identity, incoming: &Incoming) -> Result<(), Denied> {
    let Some(tls) = tls else {
        return Ok(());
    };
    let super_user = || {
        who.principal()
            .is_some_and(|p| tls.super_users.iter().any(|s| s == p))
    };
    match incoming {
        Incoming::Peer { from, message } if tls.identities.is_configured() => {
            if who
                .principal()
                .is_some_and(|p| tls.identities.proves(p, *from))
            {
                Ok(())
            } else {
                Err(Denied(format!(
                    "{} from {who}, which does not prove node id {from} (expected {})",
                    message_name(message),
                    tls.identities
                        .principal_of(*from)
                        .map_or("no principal for that id".into(), |p| format!("User:{p}")),
                )))
            }
        }
        Incoming::Client(
            ClientRequest::AddRaftVoter { .. } | ClientRequest::RemoveRaftVoter(_),
        ) if !tls.super_users.is_empty() && !super_user() => Err(Denied(format!(
            "membership change from {who}, which is not in super.users"
        ))),
        Incoming::Client(ClientRequest::UpdateRaftVoter(r))
            if tls.identities.is_configured()
                && !super_user()
                && !who
                    .principal()
                    .is_some_and(|p| tls.identities.proves(p, r.voter_id)) =>
        {
            Err(Denied(format!(
                "UpdateRaftVoter for node {} from {who}, which does not prove that id",
                r.voter_id
            )))
        }
        _ => Ok(()),
    }
}

fn message_name(message: &Message) -> &'static str {
    match message {
        Message::VoteRequest(_) => "Vote",
        Message::BeginQuorumEpochRequest(_) => "BeginQuorumEpoch",
        Message::EndQuorumEpochRequest(_) => "EndQuorumEpoch",
        Message::FetchRequest(_) => "Fetch",
        Message::FetchSnapshotRequest(_) => "FetchSnapshot",
        _ => "response",
    }
}

/// The refusal answer to a peer request.
pub fn refused_peer(request: &Message) -> Option<Message> {
    request.error_answer(CLUSTER_AUTHORIZATION_FAILED)
}

/// The refusal answer to a client request (only membership changes are ever refused).
pub fn refused_client(request: &ClientRequest, reason: &Denied) -> Option<ClientResponse> {
    let code = CLUSTER_AUTHORIZATION_FAILED;
    let message = Some(StrBytes::from_string(reason.0.clone()));
    Some(match request {
        ClientRequest::AddRaftVoter { .. } => ClientResponse::AddRaftVoter(
            AddRaftVoterResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
        ClientRequest::RemoveRaftVoter(_) => ClientResponse::RemoveRaftVoter(
            RemoveRaftVoterResponse::default()
                .with_error_code(code)
                .with_error_message(message),
        ),
        ClientRequest::UpdateRaftVoter(_) => ClientResponse::UpdateRaftVoter(
            UpdateRaftVoterResponse::default().with_error_code(code),
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::tls::{ClientAuth, ControllerIdentities};
    use kafka_protocol::messages::{AddRaftVoterRequest, VoteRequest};
    use std::sync::Arc;

    fn tls(template: Option<&str>, super_users: &[&str]) -> Tls {
        let client = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
        Tls {
            server: None,
            client: Arc::new(client),
            client_auth: ClientAuth::Required,
            identities: ControllerIdentities {
                template: template.map(String::from),
                by_id: Default::default(),
            },
            super_users: super_users.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn vote(from: i32) -> Incoming {
        Incoming::Peer {
            from,
            message: Message::VoteRequest(VoteRequest::default()),
        }
    }

    #[test]
    fn raft_rpcs_need_the_certificate_of_the_sender_named_in_the_body() {
        let t = tls(Some("CN=node-{id}"), &[]);
        let node1 = Identity::Principal("CN=node-1".into());
        assert_eq!(check(Some(&t), &node1, &vote(1)), Ok(()));
        assert!(check(Some(&t), &node1, &vote(2)).is_err());
        assert!(check(Some(&t), &Identity::Anonymous, &vote(1)).is_err());
        assert!(check(Some(&t), &Identity::Principal("CN=admin".into()), &vote(1)).is_err());
        // Without a configured binding, a trusted certificate is enough (Kafka without an authorizer).
        let open = tls(None, &[]);
        assert_eq!(
            check(Some(&open), &Identity::Principal("CN=x".into()), &vote(1)),
            Ok(())
        );
        assert_eq!(check(None, &Identity::Plaintext, &vote(1)), Ok(()));
    }

    #[test]
    fn a_refused_snapshot_download_is_answered_not_dropped() {
        let t = tls(Some("CN=node-{id}"), &[]);
        let message = Message::FetchSnapshotRequest(Default::default());
        let incoming = Incoming::Peer {
            from: 2,
            message: message.clone(),
        };
        let denied = check(
            Some(&t),
            &Identity::Principal("CN=node-1".into()),
            &incoming,
        )
        .expect_err("node-1 cannot fetch as node 2");
        assert!(denied.0.starts_with("FetchSnapshot from"), "{}", denied.0);
        match refused_peer(&message) {
            Some(Message::FetchSnapshotResponse(r)) => {
                assert_eq!(r.error_code, CLUSTER_AUTHORIZATION_FAILED)
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            refused_peer(&Message::VoteResponse(Default::default())),
            None
        );
    }

    #[test]
    fn membership_changes_only_from_super_users_when_set() {
        let add = Incoming::Client(ClientRequest::AddRaftVoter {
            request: AddRaftVoterRequest::default(),
            ack_when_committed: true,
        });
        let t = tls(Some("CN=node-{id}"), &["CN=admin"]);
        assert_eq!(
            check(Some(&t), &Identity::Principal("CN=admin".into()), &add),
            Ok(())
        );
        assert!(check(Some(&t), &Identity::Principal("CN=node-1".into()), &add).is_err());
        assert!(check(Some(&t), &Identity::Anonymous, &add).is_err());
        let anyone = tls(None, &[]);
        assert_eq!(check(Some(&anyone), &Identity::Anonymous, &add), Ok(()));
    }
}
