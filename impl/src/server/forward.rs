//! DescribeQuorum from any node: a node that is not the leader sends a client's DescribeQuorum on to the
//! leader it knows and answers with the leader's answer, as a Kafka broker does (it forwards the request to
//! the active controller). The core is not involved: it knows the leader and its endpoint, the shell asks.
//!
//! Each forward opens its own connection to the leader (TLS and the leader's identity proof as on the peer
//! links), opens it with an ApiVersions round trip and sends DescribeQuorum at the client's version, or the
//! highest version both serve if the leader serves less. At most [`MAX_IN_FLIGHT`] forwards run at once;
//! each, waiting for its turn included, is bounded by the link's I/O timeout. A leader that cannot be
//! reached, refuses, or does not answer in time gives the client REQUEST_TIMED_OUT (Kafka's forwarding
//! answer when the controller does not answer), never a closed connection.
//!
//! No loop: a node forwards only to a leader other than itself that it knows in its current epoch, so
//! along any chain of forwards the epochs grow strictly; the timeout bounds every chain anyway.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Semaphore};

use super::api_versions;
use super::client::describe_frame;
use super::codec::{decode_client_response, response_body};
use super::tls::{self, Tls};
use super::LinkConfig;
use crate::node::{errors, ClientResponse};
use crate::voter_set::Endpoint;
use crate::wire::describe_quorum::{DescribeQuorumRequest, DescribeQuorumResponse};
use crate::wire::frame;

/// Forwards running at once; more wait for a turn (within the same bounded wait).
pub const MAX_IN_FLIGHT: usize = 4;

/// Why a forward got no answer from the leader (logged; the client gets REQUEST_TIMED_OUT).
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("cannot connect to the leader: {0}")]
    Connect(std::io::Error),
    #[error("TLS with the leader failed: {0}")]
    Tls(String),
    #[error("ApiVersions with the leader failed: {0}")]
    Handshake(String),
    #[error("the leader serves no common DescribeQuorum version: {0}")]
    Version(api_versions::VersionError),
    #[error("I/O with the leader failed: {0}")]
    Io(std::io::Error),
    #[error("bad answer from the leader: {0}")]
    Protocol(String),
    #[error("no answer from the leader within {0:?}")]
    Timeout(Duration),
}

/// The forwarding side of a node: its link settings and TLS, and the in-flight bound.
#[derive(Clone)]
pub struct Forwarder {
    client_id: String,
    config: LinkConfig,
    tls: Option<Arc<Tls>>,
    turns: Arc<Semaphore>,
}

impl Forwarder {
    pub fn new(local_id: i32, config: LinkConfig, tls: Option<Arc<Tls>>) -> Self {
        Forwarder {
            client_id: format!("kraft-node-{local_id}-forward"),
            config,
            tls,
            turns: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        }
    }

    /// Whether this node forwards at all (`LinkConfig::forward_describe_quorum`).
    pub fn enabled(&self) -> bool {
        self.config.forward_describe_quorum
    }

    /// Asks `leader` at `endpoint` for DescribeQuorum at the client's `version`; its answer (or
    /// REQUEST_TIMED_OUT) goes to `reply`. Returns at once.
    pub fn describe_quorum(
        &self,
        leader: i32,
        endpoint: Endpoint,
        version: i16,
        request: DescribeQuorumRequest,
        reply: oneshot::Sender<ClientResponse>,
    ) {
        let this = self.clone();
        tokio::spawn(async move {
            let wait = this.config.io_timeout;
            let work = async {
                let _turn = this.turns.acquire().await.ok();
                this.exchange(leader, &endpoint, version, &request).await
            };
            let answer = match tokio::time::timeout(wait, work).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(e)) => {
                    tracing::info!(leader, host = %endpoint.host, port = endpoint.port, "DescribeQuorum not forwarded: {e}");
                    timed_out()
                }
                Err(_) => {
                    let e = ForwardError::Timeout(wait);
                    tracing::info!(leader, host = %endpoint.host, port = endpoint.port, "DescribeQuorum not forwarded: {e}");
                    timed_out()
                }
            };
            let _ = reply.send(ClientResponse::DescribeQuorum(answer));
        });
    }

    async fn exchange(
        &self,
        leader: i32,
        endpoint: &Endpoint,
        version: i16,
        request: &DescribeQuorumRequest,
    ) -> Result<DescribeQuorumResponse, ForwardError> {
        let (mut read, mut write) = self.connect(leader, endpoint).await?;
        let max_frame = self.config.max_frame_bytes;
        let versions = api_versions::handshake(
            &mut read,
            &mut write,
            &self.client_id,
            self.config.io_timeout,
            max_frame,
        )
        .await
        .map_err(|e| ForwardError::Handshake(e.to_string()))?;
        if let Some(sasl) = &self.config.sasl {
            super::sasl::link::authenticate(
                &mut read,
                &mut write,
                &versions,
                sasl,
                &self.client_id,
                self.config.io_timeout,
                max_frame,
            )
            .await
            .map_err(|e| ForwardError::Handshake(e.to_string()))?;
        }
        let common = versions
            .version(ApiKey::DescribeQuorum)
            .map_err(ForwardError::Version)?;
        let sent_at = version.min(common);
        let key = ApiKey::DescribeQuorum as i16;
        let correlation = 1_000;
        let frame = describe_frame(sent_at, correlation, request)
            .map_err(|e| ForwardError::Protocol(e.to_string()))?;
        write.write_all(&frame).await.map_err(ForwardError::Io)?;
        write.flush().await.map_err(ForwardError::Io)?;
        let payload = frame::read_frame(&mut read, max_frame)
            .await
            .map_err(|e| ForwardError::Protocol(e.to_string()))?;
        let (corr, body) = response_body(payload, key, sent_at)
            .map_err(|e| ForwardError::Protocol(e.to_string()))?;
        if corr != correlation {
            return Err(ForwardError::Protocol(format!(
                "correlation id {corr}, expected {correlation}"
            )));
        }
        match decode_client_response(body, key, sent_at) {
            Ok(ClientResponse::DescribeQuorum(r)) => Ok(r),
            Ok(other) => Err(ForwardError::Protocol(format!("unexpected {other:?}"))),
            Err(e) => Err(ForwardError::Protocol(e.to_string())),
        }
    }

    /// A connection to the leader: TCP, then TLS when the links speak it (the leader's certificate must
    /// prove its node id when controller identities are configured, as on the peer links).
    async fn connect(
        &self,
        leader: i32,
        endpoint: &Endpoint,
    ) -> Result<
        (
            Box<dyn AsyncRead + Send + Unpin>,
            Box<dyn AsyncWrite + Send + Unpin>,
        ),
        ForwardError,
    > {
        let addr = (endpoint.host.as_str(), endpoint.port);
        let timeout = self.config.connect_timeout;
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(ForwardError::Connect(e)),
            Err(_) => return Err(ForwardError::Timeout(timeout)),
        };
        let _ = stream.set_nodelay(true);
        let Some(tls) = &self.tls else {
            let (r, w) = stream.into_split();
            return Ok((Box::new(r), Box::new(w)));
        };
        let name =
            tls::server_name(&endpoint.host).map_err(|e| ForwardError::Tls(e.to_string()))?;
        let connector = tokio_rustls::TlsConnector::from(tls.client.clone());
        let stream = match tokio::time::timeout(timeout, connector.connect(name, stream)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(ForwardError::Tls(e.to_string())),
            Err(_) => return Err(ForwardError::Timeout(timeout)),
        };
        tls.identities
            .check_server(&stream, leader)
            .map_err(ForwardError::Tls)?;
        let (r, w) = tokio::io::split(stream);
        Ok((Box::new(r), Box::new(w)))
    }
}

/// The answer when the leader could not be asked: REQUEST_TIMED_OUT at the top level.
fn timed_out() -> DescribeQuorumResponse {
    let code = errors::REQUEST_TIMED_OUT;
    DescribeQuorumResponse {
        error_code: code,
        error_message: Some(StrBytes::from_static_str(
            crate::wire::error_codes::error_message(code).unwrap_or(""),
        )),
        topics: Vec::new(),
        nodes: Vec::new(),
        unknown_tagged_fields: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(port: u16) -> Endpoint {
        Endpoint {
            name: "CONTROLLER".into(),
            host: "127.0.0.1".into(),
            port,
        }
    }

    fn config() -> LinkConfig {
        LinkConfig {
            connect_timeout: Duration::from_millis(200),
            io_timeout: Duration::from_millis(500),
            ..LinkConfig::default()
        }
    }

    async fn ask(forwarder: &Forwarder, port: u16) -> DescribeQuorumResponse {
        let (tx, rx) = oneshot::channel();
        let request = DescribeQuorumRequest::for_metadata_partition();
        forwarder.describe_quorum(2, endpoint(port), 3, request, tx);
        match rx.await.unwrap() {
            ClientResponse::DescribeQuorum(r) => r,
            other => panic!("{other:?}"),
        }
    }

    /// Nobody listens: the client gets REQUEST_TIMED_OUT, not a closed connection.
    #[tokio::test]
    async fn an_unreachable_leader_gives_request_timed_out() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let r = ask(&Forwarder::new(1, config(), None), port).await;
        assert_eq!(r.error_code, errors::REQUEST_TIMED_OUT);
    }

    /// A leader that accepts and never answers: bounded by the I/O timeout, same answer.
    #[tokio::test]
    async fn a_silent_leader_gives_request_timed_out_within_the_bound() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((s, _)) = listener.accept().await {
                open.push(s);
            }
        });
        let forwarder = Forwarder::new(1, config(), None);
        let started = std::time::Instant::now();
        let answers: Vec<_> = futures_join(&forwarder, port, MAX_IN_FLIGHT + 2).await;
        assert!(answers
            .iter()
            .all(|r| r.error_code == errors::REQUEST_TIMED_OUT));
        assert!(started.elapsed() < Duration::from_secs(3), "bounded wait");
    }

    async fn futures_join(
        forwarder: &Forwarder,
        port: u16,
        n: usize,
    ) -> Vec<DescribeQuorumResponse> {
        let mut waits = Vec::new();
        for _ in 0..n {
            let (tx, rx) = oneshot::channel();
            let request = DescribeQuorumRequest::for_metadata_partition();
            forwarder.describe_quorum(2, endpoint(port), 3, request, tx);
            waits.push(rx);
        }
        let mut out = Vec::new();
        for rx in waits {
            match rx.await.unwrap() {
                ClientResponse::DescribeQuorum(r) => out.push(r),
                other => panic!("{other:?}"),
            }
        }
        out
    }
}
