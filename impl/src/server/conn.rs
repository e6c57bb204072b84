//! One incoming connection: read frames under the limits, dispatch, write responses in request order.
//!
//! The reader takes a permit before reading each frame and the writer returns it once the response is
//! written, so at most `max_in_flight` requests of one connection are in the node at once; the writer takes
//! the queued response futures in order, so responses leave in request order whatever order they complete in.

use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

use super::codec::{self, BrokerInfo, Incoming, Reply};
use super::driver::Event;
use super::Limits;
use crate::node::{ClientRequest, ClientResponse};
use crate::wire::frame::{self, FrameReadError};

/// A response frame that may not be ready yet; `Err` closes the connection.
type Pending = oneshot::Receiver<Option<Bytes>>;

pub struct ConnContext {
    pub events: mpsc::Sender<Event>,
    pub limits: Limits,
    pub broker: BrokerInfo,
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
async fn read_frame(read: &mut OwnedReadHalf, limits: &Limits) -> Result<Bytes, ReadError> {
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
    let (mut read, mut write) = stream.into_split();
    // A permit per request, held from before its frame is read until its response is written.
    let permits = Arc::new(Semaphore::new(ctx.limits.max_in_flight.max(1)));
    let (queue, mut responses) = mpsc::unbounded_channel::<(Pending, OwnedSemaphorePermit)>();
    let write_timeout = ctx.limits.frame_timeout;
    let writer = tokio::spawn(async move {
        while let Some((pending, permit)) = responses.recv().await {
            let Ok(Some(frame)) = pending.await else {
                return; // the request could not be answered: close
            };
            match tokio::time::timeout(write_timeout, write.write_all(&frame)).await {
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
        let pending = match codec::decode_request(payload) {
            Ok((reply, incoming)) => dispatch(&ctx, reply, incoming).await,
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
            respond_later(async move {
                match rx.await {
                    Ok(ClientResponse::ApiVersions(versions)) => {
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
            respond_later(async move {
                let response = rx.await.ok()?;
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
