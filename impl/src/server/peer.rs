//! Outgoing links to peers: one task per destination node, one pipelined TCP connection at a time.
//!
//! Each connection opens with an ApiVersions round trip ([`api_versions`]); every request on it is sent
//! at the highest version both sides serve, with what that version can carry. A peer that refuses
//! (closes on a request, answers garbage, serves no common version) is logged at warn once, with the
//! reason, and at debug until it answers again.
//!
//! Requests that cannot be sent (peer down, connect timeout) are dropped: the core re-sends on its timers.
//! Except the leader's ApiVersions to a voter being added, which the core does not resend: it is answered
//! BROKER_NOT_AVAILABLE at once, as Kafka's network channel answers a request whose connection failed.
//! Responses are matched to requests by correlation id and handed to the node task as `PeerResponse`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::api_versions::{self, PeerVersions};
use super::codec::{decode_peer_response, peer_request_frame_at, response_body, CodecError};
use super::event::Event;
use super::tls::{self, Tls};
use super::LinkConfig;
use kafka_protocol::messages::ApiVersionsResponse;

use crate::node::{errors, Message};
use crate::voter_set::Endpoint;
use crate::wire::frame::{self, FrameReadError};

/// Queue depth per peer; beyond it new requests are dropped (the core retries).
const QUEUE: usize = 256;

pub struct PeerLinks {
    local_id: i32,
    events: mpsc::Sender<Event>,
    config: LinkConfig,
    tls: Option<Arc<Tls>>,
    links: HashMap<i32, mpsc::Sender<(Endpoint, Message)>>,
    /// DescribeQuorum sent on to the leader, with the same link settings and TLS.
    pub forward: super::forward::Forwarder,
}

impl PeerLinks {
    pub fn new(
        local_id: i32,
        events: mpsc::Sender<Event>,
        config: LinkConfig,
        tls: Option<Arc<Tls>>,
    ) -> Self {
        PeerLinks {
            local_id,
            events,
            forward: super::forward::Forwarder::new(local_id, config.clone(), tls.clone()),
            config,
            tls,
            links: HashMap::new(),
        }
    }

    /// Links opened so far (one per destination that was sent a request).
    #[cfg(test)]
    pub fn links(&self) -> usize {
        self.links.len()
    }

    pub fn send(&mut self, to: i32, endpoint: Endpoint, message: Message) {
        let link = self.links.entry(to).or_insert_with(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            let task = PeerTask {
                peer: to,
                client_id: format!("kraft-node-{}", self.local_id),
                events: self.events.clone(),
                config: self.config.clone(),
                tls: self.tls.clone(),
                tls_failing: AtomicBool::new(false),
                refusals: Arc::new(Refusals {
                    peer: to,
                    refusing: AtomicBool::new(false),
                }),
            };
            tokio::spawn(task.run(rx));
            tx
        });
        if link.try_send((endpoint, message)).is_err() {
            tracing::debug!(to, "peer queue full; dropping request");
        }
    }
}

struct PeerTask {
    peer: i32,
    client_id: String,
    events: mpsc::Sender<Event>,
    config: LinkConfig,
    tls: Option<Arc<Tls>>,
    /// A TLS handshake with this peer failed since the last one that succeeded: the core reconnects at
    /// its timers (every fetch interval), so only the first failure is logged at warn, repeats at debug.
    tls_failing: AtomicBool,
    refusals: Arc<Refusals>,
}

/// Log-once of a peer's refusals: the core resends at its timers (every fetch interval), so only the
/// first refusal since start or since the peer last answered is logged at warn, repeats at debug.
struct Refusals {
    peer: i32,
    refusing: AtomicBool,
}

impl Refusals {
    fn refused(&self, endpoint: &Endpoint, reason: std::fmt::Arguments<'_>) {
        let peer = self.peer;
        if self.refusing.swap(true, Ordering::Relaxed) {
            tracing::debug!(peer, host = %endpoint.host, port = endpoint.port, "peer refused: {reason}");
        } else {
            tracing::warn!(peer, host = %endpoint.host, port = endpoint.port, "peer refused: {reason} (repeats are logged at debug until it answers)");
        }
    }

    fn answered(&self) {
        if self.refusing.swap(false, Ordering::Relaxed) {
            tracing::info!(peer = self.peer, "peer answers again");
        }
    }
}

type Inflight = Arc<Mutex<VecDeque<(i32, i16, i16)>>>;

struct Connection {
    endpoint: Endpoint,
    versions: PeerVersions,
    writer: Box<dyn AsyncWrite + Send + Unpin>,
    inflight: Inflight,
    reader: tokio::task::JoinHandle<()>,
}

impl PeerTask {
    async fn run(self, mut rx: mpsc::Receiver<(Endpoint, Message)>) {
        let mut conn: Option<Connection> = None;
        let mut correlation = 0i32;
        while let Some((endpoint, message)) = rx.recv().await {
            if conn
                .as_ref()
                .is_some_and(|c| c.reader.is_finished() || c.endpoint != endpoint)
            {
                if let Some(c) = conn.take() {
                    c.reader.abort();
                }
            }
            if conn.is_none() {
                conn = self.connect(&endpoint).await;
            }
            let Some(c) = conn.as_mut() else {
                self.unsent(&message).await;
                continue; // unreachable now; the core will ask again
            };
            let api = message.api_key();
            let api_version = match c.versions.version(api) {
                Ok(v) => v,
                Err(e) => {
                    self.unsendable(&endpoint, &message, e).await;
                    continue;
                }
            };
            correlation = correlation.wrapping_add(1);
            let frame =
                match peer_request_frame_at(&message, api_version, correlation, &self.client_id) {
                    Ok(frame) => frame,
                    Err(CodecError::Version(e)) => {
                        self.unsendable(&endpoint, &message, e).await;
                        continue;
                    }
                    Err(e) => {
                        tracing::error!(peer = self.peer, "cannot encode request: {e}");
                        continue;
                    }
                };
            let api_key = api as i16;
            if let Ok(mut q) = c.inflight.lock() {
                q.push_back((correlation, api_key, api_version));
            }
            // Flushed: over TLS a record can otherwise stay in rustls' buffer (see `conn.rs`).
            let sent = async {
                c.writer.write_all(&frame).await?;
                c.writer.flush().await
            };
            let write = tokio::time::timeout(self.config.io_timeout, sent).await;
            if !matches!(write, Ok(Ok(()))) {
                tracing::debug!(
                    peer = self.peer,
                    "write to peer failed; reconnecting on next request"
                );
                if let Some(c) = conn.take() {
                    c.reader.abort();
                }
                self.unsent(&message).await;
            }
        }
        if let Some(c) = conn {
            c.reader.abort();
        }
    }

    /// A request that did not leave: the core's ApiVersions probe gets its error answer (module docs).
    async fn unsent(&self, message: &Message) {
        if let Message::ApiVersionsRequest(_) = message {
            let resp = ApiVersionsResponse::default().with_error_code(errors::BROKER_NOT_AVAILABLE);
            let event = Event::PeerResponse {
                from: self.peer,
                message: Message::ApiVersionsResponse(resp),
            };
            let _ = self.events.send(event).await;
        }
    }

    /// A request no version the peer serves can carry: logged (once), and the core gets its
    /// UNSUPPORTED_VERSION answer ([`api_versions::unsupported_answer`]).
    async fn unsendable(
        &self,
        endpoint: &Endpoint,
        message: &Message,
        e: api_versions::VersionError,
    ) {
        self.refusals
            .refused(endpoint, format_args!("not sent: {e}"));
        if let Some(message) = api_versions::unsupported_answer(message) {
            let event = Event::PeerResponse {
                from: self.peer,
                message,
            };
            let _ = self.events.send(event).await;
        }
    }

    /// TLS to a peer: its certificate must be trusted, name the host dialled (unless
    /// `ssl.endpoint.identification.algorithm` is empty) and, with controller identities configured, prove
    /// the node id this link is for (not for a bootstrap server, whose id is unknown).
    async fn handshake(
        &self,
        tls: &Tls,
        endpoint: &Endpoint,
        stream: TcpStream,
    ) -> Option<tokio_rustls::client::TlsStream<TcpStream>> {
        let peer = self.peer;
        let name = match tls::server_name(&endpoint.host) {
            Ok(name) => name,
            Err(e) => {
                self.handshake_failed(endpoint, format_args!("{e}"));
                return None;
            }
        };
        let connector = tokio_rustls::TlsConnector::from(tls.client.clone());
        let stream = match tokio::time::timeout(
            self.config.connect_timeout,
            connector.connect(name, stream),
        )
        .await
        {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                self.handshake_failed(
                    endpoint,
                    format_args!("TLS handshake with peer failed: {e}"),
                );
                return None;
            }
            Err(_) => {
                tracing::debug!(peer, "TLS handshake timed out");
                return None;
            }
        };
        // A bootstrap server (peer id ≤ −2: its node id is not known yet) is only checked as trusted and
        // named by the host dialled; its answers only point at the leader, whose link proves its id.
        if peer >= 0 {
            if let Err(e) = tls.identities.check_server(&stream, peer) {
                self.handshake_failed(endpoint, format_args!("peer {e}"));
                return None;
            }
        }
        if self.tls_failing.swap(false, Ordering::Relaxed) {
            tracing::info!(peer, host = %endpoint.host, port = endpoint.port, "TLS handshake with peer succeeded again");
        }
        Some(stream)
    }

    /// Logs a failed handshake: at warn the first time since start or since the last success, else at
    /// debug (the core retries at its timers; a wrong certificate would otherwise log ~20 lines a second).
    fn handshake_failed(&self, endpoint: &Endpoint, message: std::fmt::Arguments<'_>) {
        let peer = self.peer;
        if self.tls_failing.swap(true, Ordering::Relaxed) {
            tracing::debug!(peer, host = %endpoint.host, port = endpoint.port, "{message}");
        } else {
            tracing::warn!(peer, host = %endpoint.host, port = endpoint.port, "{message} (repeats are logged at debug until a handshake with this peer succeeds)");
        }
    }

    async fn connect(&self, endpoint: &Endpoint) -> Option<Connection> {
        let addr = (endpoint.host.as_str(), endpoint.port);
        let stream = match tokio::time::timeout(
            self.config.connect_timeout,
            TcpStream::connect(addr),
        )
        .await
        {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                tracing::debug!(peer = self.peer, host = %endpoint.host, port = endpoint.port, "connect failed: {e}");
                return None;
            }
            Err(_) => {
                tracing::debug!(peer = self.peer, "connect timed out");
                return None;
            }
        };
        let _ = stream.set_nodelay(true);
        let (read, writer): (
            Box<dyn AsyncRead + Send + Unpin>,
            Box<dyn AsyncWrite + Send + Unpin>,
        ) = match &self.tls {
            None => {
                let (r, w) = stream.into_split();
                (Box::new(r), Box::new(w))
            }
            Some(t) => {
                let stream = self.handshake(t, endpoint, stream).await?;
                let (r, w) = tokio::io::split(stream);
                (Box::new(r), Box::new(w))
            }
        };
        let (mut read, mut writer) = (read, writer);
        let handshake = api_versions::handshake(
            &mut read,
            &mut writer,
            &self.client_id,
            self.config.io_timeout,
            self.config.max_frame_bytes,
        );
        let versions = match handshake.await {
            Ok(versions) => versions,
            Err(e) => {
                self.refusals.refused(endpoint, format_args!("{e}"));
                return None;
            }
        };
        if let Some(sasl) = &self.config.sasl {
            let authenticated = super::sasl::link::authenticate(
                &mut read,
                &mut writer,
                &versions,
                sasl,
                &self.client_id,
                self.config.io_timeout,
                self.config.max_frame_bytes,
            );
            if let Err(e) = authenticated.await {
                self.refusals.refused(endpoint, format_args!("{e}"));
                return None;
            }
        }
        let inflight: Inflight = Arc::default();
        let queue = inflight.clone();
        let events = self.events.clone();
        let peer = self.peer;
        let max_frame = self.config.max_frame_bytes;
        let refusals = self.refusals.clone();
        let at = endpoint.clone();
        let reader = tokio::spawn(async move {
            loop {
                let payload = match frame::read_frame(&mut read, max_frame).await {
                    Ok(payload) => payload,
                    Err(FrameReadError::Closed) => {
                        // Kafka closes the connection on a request it cannot parse (an unserved version).
                        let first = queue.lock().ok().and_then(|q| q.front().copied());
                        if let Some((_, key, version)) = first {
                            let api = kafka_protocol::messages::ApiKey::try_from(key)
                                .map_or_else(|_| format!("api key {key}"), |a| format!("{a:?}"));
                            refusals.refused(
                                &at,
                                format_args!(
                                    "closed the connection with {api} v{version} unanswered"
                                ),
                            );
                        }
                        return;
                    }
                    Err(e) => {
                        refusals.refused(
                            &at,
                            format_args!("cannot read a response frame: {e}; closing"),
                        );
                        return;
                    }
                };
                let expected = queue.lock().ok().and_then(|mut q| q.pop_front());
                let Some((correlation, api_key, api_version)) = expected else {
                    refusals.refused(&at, format_args!("unsolicited response; closing"));
                    return;
                };
                let message =
                    response_body(payload, api_key, api_version).and_then(|(corr, body)| {
                        if corr != correlation {
                            return Err(super::codec::CodecError::Malformed {
                                what: "response header",
                                reason: format!("correlation id {corr}, expected {correlation}"),
                            });
                        }
                        decode_peer_response(body, api_key, api_version)
                    });
                match message {
                    Ok(message) => {
                        refusals.answered();
                        if events
                            .send(Event::PeerResponse {
                                from: peer,
                                message,
                            })
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    Err(e) => {
                        refusals.refused(&at, format_args!("bad response: {e}; closing"));
                        return;
                    }
                }
            }
        });
        Some(Connection {
            endpoint: endpoint.clone(),
            versions,
            writer,
            inflight,
            reader,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log lines of a test, captured at debug level.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A subscriber capturing every line at debug level.
    fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        (captured, tracing::subscriber::set_default(subscriber))
    }

    /// Plays a peer's side of the ApiVersions round trip: serves what this crate serves, but `max` as the
    /// highest version of the APIs it names.
    async fn answer_api_versions<S>(stream: &mut S, max: &[(kafka_protocol::messages::ApiKey, i16)])
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        use kafka_protocol::messages::api_versions_response::ApiVersion;
        use kafka_protocol::messages::ApiKey;
        let payload = frame::read_frame(stream, 1 << 20).await.unwrap();
        let (reply, _) = super::super::codec::decode_request(payload).unwrap();
        assert_eq!(reply.api_key, ApiKey::ApiVersions as i16);
        let keys = crate::wire::apis::SERVED_APIS
            .iter()
            .map(|a| {
                let max = max.iter().find(|(k, _)| *k == a.key).map_or(a.max, |m| m.1);
                ApiVersion::default()
                    .with_api_key(a.key as i16)
                    .with_min_version(a.min)
                    .with_max_version(max)
            })
            .collect();
        let answer = ApiVersionsResponse::default().with_api_keys(keys);
        let frame = super::super::codec::client_response(
            &reply,
            &crate::node::ClientResponse::ApiVersions(answer),
        )
        .unwrap();
        stream.write_all(&frame).await.unwrap();
    }

    fn fetch_request() -> Message {
        Message::FetchRequest(kafka_protocol::messages::FetchRequest::default())
    }

    fn task(events: mpsc::Sender<Event>, tls: Option<Arc<Tls>>) -> PeerTask {
        PeerTask {
            peer: 2,
            client_id: "kraft-node-1".into(),
            events,
            config: LinkConfig::default(),
            tls,
            tls_failing: AtomicBool::new(false),
            refusals: Arc::new(Refusals {
                peer: 2,
                refusing: AtomicBool::new(false),
            }),
        }
    }

    /// A peer that serves Fetch up to v17 (Kafka 4.0) is sent Fetch v17, and its answer reaches the core.
    #[tokio::test]
    async fn requests_go_at_the_version_the_peer_serves() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let peer = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            answer_api_versions(&mut s, &[(kafka_protocol::messages::ApiKey::Fetch, 17)]).await;
            let payload = frame::read_frame(&mut s, 1 << 20).await.unwrap();
            let (reply, _) = super::super::codec::decode_request(payload).unwrap();
            let response = Message::FetchResponse(Default::default());
            let frame = super::super::codec::peer_response(&reply, &response).unwrap();
            s.write_all(&frame).await.unwrap();
            reply.api_version
        });
        let (events, mut rx) = mpsc::channel(8);
        let (tx, requests) = mpsc::channel(8);
        tokio::spawn(task(events, None).run(requests));
        tx.send((endpoint(port), fetch_request())).await.unwrap();
        assert_eq!(peer.await.unwrap(), 17);
        let got = rx.recv().await.unwrap();
        assert!(
            matches!(
                got,
                Event::PeerResponse {
                    from: 2,
                    message: Message::FetchResponse(_)
                }
            ),
            "{got:?}"
        );
    }

    /// A pre-vote to a peer without Vote v2 is not sent: the core gets UNSUPPORTED_VERSION (Kafka's
    /// network channel does the same), and the refusal is logged.
    #[tokio::test]
    async fn a_request_the_peers_version_cannot_carry_is_answered_unsupported() {
        use kafka_protocol::messages::vote_request::{PartitionData, TopicData};
        let (captured, _guard) = capture();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            answer_api_versions(&mut s, &[(kafka_protocol::messages::ApiKey::Vote, 1)]).await;
            let _ = frame::read_frame(&mut s, 1 << 20).await;
        });
        let (events, mut rx) = mpsc::channel(8);
        let (tx, requests) = mpsc::channel(8);
        tokio::spawn(task(events, None).run(requests));
        let pre_vote = kafka_protocol::messages::VoteRequest::default()
            .with_topics(vec![TopicData::default()
                .with_partitions(vec![PartitionData::default().with_pre_vote(true)])]);
        tx.send((endpoint(port), Message::VoteRequest(pre_vote)))
            .await
            .unwrap();
        match rx.recv().await.unwrap() {
            Event::PeerResponse {
                from: 2,
                message: Message::VoteResponse(r),
            } => assert_eq!(r.error_code, errors::UNSUPPORTED_VERSION),
            other => panic!("{other:?}"),
        }
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.contains("not sent: Vote v1 cannot carry PreVote"),
            "{text}"
        );
    }

    /// A peer that closes the connection on every Fetch: one warn line naming the request, then debug.
    #[tokio::test]
    async fn a_peer_that_closes_on_a_request_is_logged_at_warn_once() {
        let (captured, _guard) = capture();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                answer_api_versions(&mut s, &[]).await;
                let _ = frame::read_frame(&mut s, 1 << 20).await;
            }
        });
        let (events, _rx) = mpsc::channel(8);
        let task = task(events, None);
        for _ in 0..3 {
            let mut c = task.connect(&endpoint(port)).await.unwrap();
            let frame = peer_request_frame_at(&fetch_request(), 18, 1, "t").unwrap();
            c.inflight.lock().unwrap().push_back((1, 1, 18));
            c.writer.write_all(&frame).await.unwrap();
            (&mut c.reader).await.unwrap();
        }
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let lines = |level: &str| {
            text.lines()
                .filter(|l| {
                    l.contains(level)
                        && l.contains("closed the connection with Fetch v18 unanswered")
                })
                .count()
        };
        assert_eq!((lines("WARN"), lines("DEBUG")), (1, 2), "{text}");
    }

    fn endpoint(port: u16) -> Endpoint {
        Endpoint {
            name: "CONTROLLER".into(),
            host: "127.0.0.1".into(),
            port,
        }
    }

    #[tokio::test]
    async fn a_failing_tls_handshake_is_logged_at_warn_once_until_one_succeeds() {
        let (captured, _guard) = capture();
        let dir = tempfile::tempdir().unwrap();
        let files = crate::cli::certs::write_cluster_tls(dir.path(), &[1, 2]).unwrap();
        let tls = |id| Arc::new(Tls::for_node(&files.node_properties(id)).unwrap().unwrap());
        // A listener that closes every connection (the handshake fails) and node 2's TLS listener.
        let closing = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let closing_port = closing.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((s, _)) = closing.accept().await {
                drop(s);
            }
        });
        let good = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let good_port = good.local_addr().unwrap().port();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls(2).server.clone().unwrap());
        tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((s, _)) = good.accept().await {
                if let Ok(mut s) = acceptor.accept(s).await {
                    answer_api_versions(&mut s, &[]).await;
                    open.push(s);
                }
            }
        });

        let (events, _rx) = mpsc::channel(8);
        let task = task(events, Some(tls(1)));
        for _ in 0..3 {
            assert!(task.connect(&endpoint(closing_port)).await.is_none());
        }
        assert!(task.connect(&endpoint(good_port)).await.is_some());
        for _ in 0..2 {
            assert!(task.connect(&endpoint(closing_port)).await.is_none());
        }
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let count = |level: &str| {
            text.lines()
                .filter(|l| l.contains(level) && l.contains("TLS handshake with peer failed"))
                .count()
        };
        // Failures 1 and 4 (the first after the success) at warn, failures 2, 3 and 5 at debug.
        assert_eq!((count("WARN"), count("DEBUG")), (2, 3), "{text}");
        assert_eq!(text.matches("succeeded again").count(), 1, "{text}");
    }
}
