//! One incoming connection: read frames under the limits, dispatch, write responses in request order.
//!
//! The reader takes a permit before reading each frame and the writer returns it once the response is
//! written, so at most `max_in_flight` requests of one connection are in the node at once; the writer takes
//! the queued response futures in order, so responses leave in request order whatever order they complete in.

use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

use super::auth::{self, Identity};
use super::codec::{self, BrokerInfo, Incoming, Reply};
use super::event::Event;
use super::sasl::listener::ListenerSasl;
use super::sasl::server::{self as sasl_server, Authenticator, Step};
use super::tls::{self, Tls};
use super::Limits;
use crate::node::{ClientRequest, ClientResponse};
use crate::wire::frame::{self, FrameReadError};

/// A response frame that may not be ready yet; `Err` closes the connection.
type Pending = oneshot::Receiver<Option<Bytes>>;

pub struct ConnContext {
    pub events: mpsc::Sender<Event>,
    pub limits: Limits,
    pub broker: BrokerInfo,
    /// TLS on this listener: its acceptor and the access rules (`auth`). `None`: plaintext.
    pub tls: Option<(tokio_rustls::TlsAcceptor, Arc<Tls>)>,
    /// SASL on this listener (`SASL_PLAINTEXT`, or `SASL_SSL` with `tls`): every connection
    /// authenticates before its first other request. `None`: no SASL.
    pub sasl: Option<Arc<ListenerSasl>>,
}

#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error("connection closed")]
    Closed,
    #[error("idle for {0:?}")]
    Idle(std::time::Duration),
    #[error("frame not received within {0:?} (slow client)")]
    Slow(std::time::Duration),
    #[error("{0}")]
    Frame(#[from] FrameReadError),
    #[error("read: {0}")]
    Io(#[from] std::io::Error),
}

/// One request frame: the first byte under the idle timeout, the rest under the slow-client timeout;
/// sizes and memory as `wire::frame` rules them (no reservation beyond the bytes that arrived).
async fn read_frame<R: AsyncRead + Unpin>(
    read: &mut R,
    limits: &Limits,
) -> Result<Bytes, ReadError> {
    let mut first = [0u8; 1];
    match tokio::time::timeout(limits.idle_timeout, read.read(&mut first)).await {
        Err(_) => return Err(ReadError::Idle(limits.idle_timeout)),
        Ok(Ok(0)) => return Err(ReadError::Closed),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(e.into()),
    }
    let rest = frame::read_frame_rest(read, first[0], limits.max_frame_bytes);
    match tokio::time::timeout(limits.frame_timeout, rest).await {
        Err(_) => Err(ReadError::Slow(limits.frame_timeout)),
        Ok(r) => Ok(r?),
    }
}

pub async fn serve(stream: TcpStream, ctx: Arc<ConnContext>) {
    let peer_addr = stream.peer_addr().ok();
    let _ = stream.set_nodelay(true);
    let Some((acceptor, _)) = &ctx.tls else {
        let (read, write) = stream.into_split();
        return serve_stream(read, write, Identity::Plaintext, peer_addr, ctx).await;
    };
    // The handshake is bounded like a frame; bytes that are not TLS (a plaintext Kafka client) fail it,
    // so they are never parsed as frames.
    let handshake = tokio::time::timeout(ctx.limits.frame_timeout, acceptor.accept(stream)).await;
    let stream = match handshake {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::warn!(peer = ?peer_addr, "TLS handshake refused: {e}");
            return;
        }
        Err(_) => {
            tracing::warn!(peer = ?peer_addr, "TLS handshake not completed within {:?}", ctx.limits.frame_timeout);
            return;
        }
    };
    let identity = match stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
    {
        None => Identity::Anonymous,
        Some(cert) => match tls::principal(cert) {
            Ok(p) => Identity::Principal(p),
            Err(e) => {
                tracing::warn!(peer = ?peer_addr, "closing: {e}");
                return;
            }
        },
    };
    tracing::debug!(peer = ?peer_addr, %identity, "TLS connection");
    let (read, write) = tokio::io::split(stream);
    serve_stream(read, write, identity, peer_addr, ctx).await
}

async fn serve_stream<R, W>(
    mut read: R,
    mut write: W,
    identity: Identity,
    peer_addr: Option<std::net::SocketAddr>,
    ctx: Arc<ConnContext>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let identity = match &ctx.sasl {
        None => identity,
        Some(sasl) => match authenticate(&mut read, &mut write, sasl, &ctx, peer_addr).await {
            Some(user) => {
                tracing::debug!(peer = ?peer_addr, user, "SASL authenticated");
                Identity::Principal(user)
            }
            None => return,
        },
    };
    // A permit per request, held from before its frame is read until its response is written.
    let permits = Arc::new(Semaphore::new(ctx.limits.max_in_flight.max(1)));
    let (queue, mut responses) = mpsc::unbounded_channel::<(Pending, OwnedSemaphorePermit)>();
    let write_timeout = ctx.limits.frame_timeout;
    let writer = tokio::spawn(async move {
        while let Some((pending, permit)) = responses.recv().await {
            let Ok(Some(frame)) = pending.await else {
                return; // the request could not be answered: close
            };
            // Flush: over TLS, `write_all` can return with the last record still in rustls' buffer (the
            // socket write returned Pending, e.g. on tokio's cooperative budget); unflushed, that response
            // waited for the next one, which a client waiting for it never sends (seen: a TLS connection
            // stalled after a few thousand DescribeQuorum round trips).
            let sent = async {
                write.write_all(&frame).await?;
                write.flush().await
            };
            match tokio::time::timeout(write_timeout, sent).await {
                Ok(Ok(())) => drop(permit),
                _ => return, // a client that does not read its responses is dropped
            }
        }
        let _ = write.shutdown().await;
    });
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        let payload = match read_frame(&mut read, &ctx.limits).await {
            Ok(payload) => payload,
            Err(ReadError::Closed) => break,
            Err(e) => {
                tracing::info!(peer = ?peer_addr, "closing connection: {e}");
                break;
            }
        };
        if ctx.sasl.is_some() && is_sasl_request(&payload) {
            // Kafka's controller answers the SASL requests after authentication so.
            let reply = reply_of(&payload);
            match sasl_server::illegal_state(&reply) {
                Some(frame) => {
                    if queue.send((ready(frame), permit)).is_err() {
                        break;
                    }
                    continue;
                }
                None => break,
            }
        }
        let pending = match codec::decode_request(payload) {
            Ok((reply, incoming)) => {
                let tls = ctx.tls.as_ref().map(|(_, t)| t.as_ref());
                match auth::check(tls, &identity, &incoming) {
                    Ok(()) => dispatch(&ctx, reply, incoming).await,
                    Err(denied) => {
                        tracing::warn!(peer = ?peer_addr, "refused: {}", denied.0);
                        refuse(&reply, &incoming, &denied)
                    }
                }
            }
            Err(e) => {
                tracing::warn!(peer = ?peer_addr, "closing connection after malformed request: {e}");
                break;
            }
        };
        if queue.send((pending, permit)).is_err() {
            break; // the writer gave up on this connection
        }
    }
    drop(queue);
    let _ = writer.await;
}

/// Whether a frame (at least a header's fixed part) is SaslHandshake or SaslAuthenticate.
fn is_sasl_request(payload: &[u8]) -> bool {
    use kafka_protocol::messages::ApiKey;
    payload.len() >= 8
        && [
            ApiKey::SaslHandshake as i16,
            ApiKey::SaslAuthenticate as i16,
        ]
        .contains(&i16::from_be_bytes([payload[0], payload[1]]))
}

/// The reply address of a frame of at least 8 bytes.
fn reply_of(payload: &[u8]) -> Reply {
    Reply {
        api_key: i16::from_be_bytes([payload[0], payload[1]]),
        api_version: i16::from_be_bytes([payload[2], payload[3]]),
        correlation_id: i32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]),
    }
}

/// The SASL exchange that opens a connection on a SASL listener ([`sasl_server`]); the authenticated
/// user, or `None` once the connection is to be closed (the reason is logged).
async fn authenticate<R, W>(
    read: &mut R,
    write: &mut W,
    sasl: &ListenerSasl,
    ctx: &ConnContext,
    peer_addr: Option<std::net::SocketAddr>,
) -> Option<String>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let limits = Limits {
        max_frame_bytes: ctx.limits.max_frame_bytes.min(sasl_server::MAX_RECEIVE),
        ..ctx.limits.clone()
    };
    let mut authenticator = Authenticator::new(sasl);
    loop {
        let payload = match read_frame(read, &limits).await {
            Ok(payload) => payload,
            Err(ReadError::Closed) => return None,
            Err(e) => {
                tracing::info!(peer = ?peer_addr, "closing connection during SASL authentication: {e}");
                return None;
            }
        };
        let (frame, user) = match authenticator.on_request(payload) {
            Step::ApiVersions { reply, served } => {
                let versions = sasl_server::sasl_apis(core_api_versions(ctx).await?);
                let frame = if served {
                    codec::client_response(&reply, &ClientResponse::ApiVersions(versions))
                } else {
                    codec::unsupported_response(&reply, versions)
                };
                match frame {
                    Ok(frame) => (frame, None),
                    Err(e) => {
                        tracing::error!("cannot encode response: {e}");
                        return None;
                    }
                }
            }
            Step::Continue(frame) => (frame, None),
            Step::Authenticated { frame, user } => (frame, Some(user)),
            Step::Close { frame, error } => {
                tracing::warn!(peer = ?peer_addr, "SASL: closing connection: {error}");
                if let Some(frame) = frame {
                    // Kafka delays the answer and the close of a failed authentication.
                    tokio::time::sleep(sasl_server::FAILED_AUTHENTICATION_DELAY).await;
                    let _ = send(write, frame, limits.frame_timeout).await;
                }
                let _ = write.shutdown().await;
                return None;
            }
        };
        if send(write, frame, limits.frame_timeout).await.is_err() {
            return None;
        }
        if user.is_some() {
            return user;
        }
    }
}

/// Writes one frame within `timeout`.
async fn send<W: AsyncWrite + Unpin>(
    write: &mut W,
    frame: Bytes,
    timeout: std::time::Duration,
) -> Result<(), ()> {
    let sent = async {
        write.write_all(&frame).await?;
        write.flush().await
    };
    match tokio::time::timeout(timeout, sent).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

/// The core's ApiVersions answer (the served ranges), or `None` once the node stopped.
async fn core_api_versions(
    ctx: &ConnContext,
) -> Option<kafka_protocol::messages::ApiVersionsResponse> {
    let request = ClientRequest::ApiVersions(Default::default());
    let (tx, rx) = oneshot::channel();
    ctx.events
        .send(Event::Client { request, reply: tx })
        .await
        .ok()?;
    match rx.await {
        Ok(ClientResponse::ApiVersions(versions)) => Some(versions),
        _ => None,
    }
}

/// The CLUSTER_AUTHORIZATION_FAILED answer to a refused request.
fn refuse(reply: &Reply, incoming: &Incoming, denied: &auth::Denied) -> Pending {
    let frame = match incoming {
        Incoming::Peer { message, .. } => auth::refused_peer(message)
            .map(|m| codec::peer_response(reply, &m))
            .unwrap_or_else(|| Err(not_refusable())),
        Incoming::Client(request) => auth::refused_client(request, denied)
            .map(|r| codec::client_response(reply, &r))
            .unwrap_or_else(|| Err(not_refusable())),
        _ => Err(not_refusable()),
    };
    ready(frame)
}

fn not_refusable() -> codec::CodecError {
    codec::CodecError::Encode {
        what: "refusal",
        reason: "no refusal answer for this request".into(),
    }
}

fn ready(frame: Result<Bytes, codec::CodecError>) -> Pending {
    let (tx, rx) = oneshot::channel();
    let _ = tx.send(match frame {
        Ok(frame) => Some(frame),
        Err(e) => {
            tracing::error!("cannot encode response: {e}");
            None
        }
    });
    rx
}

/// Hands the request to the node task (or answers it here) and returns the future response frame.
async fn dispatch(ctx: &ConnContext, reply: Reply, incoming: Incoming) -> Pending {
    match incoming {
        Incoming::Metadata(_) => ready(codec::metadata_response(&reply, &ctx.broker)),
        Incoming::Unsupported => {
            // The supported ranges come from the core's ApiVersions answer.
            let request = ClientRequest::ApiVersions(Default::default());
            let (tx, rx) = oneshot::channel();
            if ctx
                .events
                .send(Event::Client { request, reply: tx })
                .await
                .is_err()
            {
                return ready(Err(codec::CodecError::Encode {
                    what: "response",
                    reason: "node stopped".into(),
                }));
            }
            let sasl = ctx.sasl.is_some();
            respond_later(async move {
                match rx.await {
                    Ok(ClientResponse::ApiVersions(versions)) => {
                        let versions = if sasl {
                            sasl_server::sasl_apis(versions)
                        } else {
                            versions
                        };
                        codec::unsupported_response(&reply, versions).ok()
                    }
                    _ => None,
                }
            })
        }
        Incoming::Client(request) => {
            let (tx, rx) = oneshot::channel();
            if ctx
                .events
                .send(Event::Client { request, reply: tx })
                .await
                .is_err()
            {
                return ready(Err(codec::CodecError::Encode {
                    what: "response",
                    reason: "node stopped".into(),
                }));
            }
            let sasl = ctx.sasl.is_some();
            respond_later(async move {
                let response = match rx.await.ok()? {
                    ClientResponse::ApiVersions(v) if sasl => {
                        ClientResponse::ApiVersions(sasl_server::sasl_apis(v))
                    }
                    response => response,
                };
                codec::client_response(&reply, &response)
                    .map_err(|e| tracing::error!("cannot encode response: {e}"))
                    .ok()
            })
        }
        Incoming::Peer { from, message } => {
            let (tx, rx) = oneshot::channel();
            if ctx
                .events
                .send(Event::PeerRequest {
                    from,
                    message,
                    reply: tx,
                })
                .await
                .is_err()
            {
                return ready(Err(codec::CodecError::Encode {
                    what: "response",
                    reason: "node stopped".into(),
                }));
            }
            respond_later(async move {
                let response = rx.await.ok()?;
                codec::peer_response(&reply, &response)
                    .map_err(|e| tracing::error!("cannot encode response: {e}"))
                    .ok()
            })
        }
    }
}

fn respond_later(
    work: impl std::future::Future<Output = Option<Bytes>> + Send + 'static,
) -> Pending {
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let _ = tx.send(work.await);
    });
    rx
}
