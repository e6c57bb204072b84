//! The network shell (tokio): a KRaft node serving Kafka's wire protocol over TCP.
//!
//! One task owns the core ([`driver`]); connection tasks ([`conn`]) decode frames and hand requests to it;
//! peer links ([`peer`]) carry the core's outgoing requests; a
//! non-leader sends a client's DescribeQuorum on to the leader ([`forward`]); one thread ([`store`]) owns the log segments
//! and the quorum-state file. Effects are durable before any message of the same output is released. See `impl/README.md` for the limits and their
//! defaults.

mod api_versions;
pub mod auth;
pub mod client;
pub mod codec;
mod conn;
pub mod driver;
mod event;
mod forward;
mod peer;
pub mod sasl;
pub mod store;
pub mod tls;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::node::Node;
use crate::storage::StorageError;

pub use codec::BrokerInfo;
pub use driver::Status;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Writing the election state or the log failed: the node stops (nothing that waited for it is sent).
    #[error("storage failed, the node stops: {0}")]
    Persist(StorageError),
    #[error("the storage thread stopped")]
    StorageStopped,
    #[error("cannot start the storage thread: {0}")]
    StorageThread(std::io::Error),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
}

/// Limits of incoming connections.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest request frame accepted; checked on the size prefix, before any allocation.
    pub max_frame_bytes: usize,
    /// A connection with no new request for this long is closed.
    pub idle_timeout: Duration,
    /// A request frame, once started, must arrive completely within this time; a response must be taken
    /// by the client within it too.
    pub frame_timeout: Duration,
    /// Requests of one connection being served at once; the connection is not read beyond it.
    pub max_in_flight: usize,
    /// Incoming connections served at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: 8 << 20,
            idle_timeout: Duration::from_secs(600),
            frame_timeout: Duration::from_secs(10),
            max_in_flight: 64,
            max_connections: 1024,
        }
    }
}

/// Limits of outgoing peer links.
#[derive(Clone, Debug)]
pub struct LinkConfig {
    pub connect_timeout: Duration,
    pub io_timeout: Duration,
    pub max_frame_bytes: usize,
    /// A non-leader sends a client's DescribeQuorum on to the leader ([`forward`]), as a Kafka broker
    /// does; off, it answers NOT_LEADER_OR_FOLLOWER itself, as a Kafka controller does.
    pub forward_describe_quorum: bool,
    /// SASL credentials the links (and forwards) authenticate with after ApiVersions; `None`: none.
    pub sasl: Option<sasl::SaslConfig>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            connect_timeout: Duration::from_millis(500),
            io_timeout: Duration::from_secs(5),
            max_frame_bytes: 64 << 20,
            forward_describe_quorum: true,
            sasl: None,
        }
    }
}

/// A running node's handles.
pub struct Running {
    pub status: watch::Receiver<Status>,
    /// The node task's idle time, for `poll-idle-ratio-avg` (`crate::metrics`).
    pub poll_idle: crate::metrics::stats::PollIdle,
    pub local_addr: std::net::SocketAddr,
    pub task: tokio::task::JoinHandle<Result<(), ServerError>>,
}

/// Serves `node` on `listener` until `shutdown` resolves or the node task fails. `log` is the durable log
/// `node`'s view was loaded from (see [`MetadataLog::load_view`](crate::storage::MetadataLog::load_view)). With `tls`, the listener and the peer links
/// speak TLS (see [`tls`]) and requests are checked by [`auth`]. With `sasl`, every connection to the
/// listener authenticates first ([`sasl::server`]); the links authenticate with `links.sasl`.
#[allow(clippy::too_many_arguments)]
pub async fn serve(
    node: Node,
    log: crate::storage::MetadataLog,
    quorum_state_path: std::path::PathBuf,
    listener: TcpListener,
    broker: BrokerInfo,
    limits: Limits,
    links: LinkConfig,
    tls: Option<Arc<tls::Tls>>,
    sasl: Option<Arc<sasl::listener::ListenerSasl>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Running, ServerError> {
    let local_addr = listener
        .local_addr()
        .map_err(|source| ServerError::Listen {
            addr: format!("{}:{}", broker.host, broker.port),
            source,
        })?;
    let acceptor = match &tls {
        None => None,
        Some(t) => {
            let server = t.server.clone().ok_or_else(|| {
                ServerError::Tls("a node needs a key store (ssl.keystore.location)".into())
            })?;
            Some((tokio_rustls::TlsAcceptor::from(server), t.clone()))
        }
    };
    let (events_tx, events_rx) = mpsc::channel(1024);
    let status = Status {
        leader_id: node.leader_id(),
        epoch: node.epoch(),
        high_watermark: node.high_watermark(),
        quorum: crate::metrics::QuorumSample::of_node(&node),
    };
    let (status_tx, status_rx) = watch::channel(status);
    let peers = peer::PeerLinks::new(node.node_id(), events_tx.clone(), links, tls);
    let (stored_tx, stored) = mpsc::unbounded_channel();
    let snapshot_dir = log.dir().to_path_buf();
    let store = store::Store::spawn(log, quorum_state_path, stored_tx)
        .map_err(ServerError::StorageThread)?;
    let driver = driver::Driver::new(
        node,
        store,
        stored,
        events_rx,
        peers,
        status_tx,
        snapshot_dir,
    );
    let ctx = Arc::new(conn::ConnContext {
        events: events_tx,
        limits,
        broker,
        tls: acceptor,
        sasl,
    });
    let poll_idle = driver.poll_idle();
    let node_task = tokio::spawn(driver.run());
    let connections = Arc::new(tokio::sync::Semaphore::new(ctx.limits.max_connections));
    let accept = tokio::spawn(async move {
        let mut refusals = RefusalLog::default();
        loop {
            match listener.accept().await {
                Ok((stream, addr)) => match connections.clone().try_acquire_owned() {
                    Ok(permit) => {
                        let ctx = ctx.clone();
                        tokio::spawn(async move {
                            conn::serve(stream, ctx).await;
                            drop(permit);
                        });
                    }
                    // Accepted and dropped at once: the client sees the connection closed.
                    Err(_) => refusals.refused(addr, ctx.limits.max_connections),
                },
                Err(e) => {
                    // e.g. EMFILE: keep serving existing connections, retry shortly.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    let task = tokio::spawn(async move {
        tokio::select! {
            result = node_task => {
                accept.abort();
                match result {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::error!("node task ended abnormally: {e}");
                        Ok(())
                    }
                }
            }
            _ = shutdown => {
                accept.abort();
                Ok(())
            }
        }
    });
    Ok(Running {
        status: status_rx,
        poll_idle,
        local_addr,
        task,
    })
}

/// Logs refused connections: the first at once, then at most one line a second with the count, so a
/// connection flood cannot flood the log too.
#[derive(Default)]
struct RefusalLog {
    last: Option<std::time::Instant>,
    since_last: u64,
}

impl RefusalLog {
    fn refused(&mut self, addr: std::net::SocketAddr, max: usize) {
        self.since_last += 1;
        let now = std::time::Instant::now();
        if self
            .last
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1))
        {
            tracing::warn!(
                peer = %addr,
                refused = self.since_last,
                "refusing connection: max_connections ({max}) reached"
            );
            self.last = Some(now);
            self.since_last = 0;
        }
    }
}
