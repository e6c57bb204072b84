//! A small blocking admin client (std TCP, optionally TLS): ApiVersions, Metadata, DescribeQuorum,
//! Add/RemoveRaftVoter. Used by the CLI and the integration tests.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, ApiKey, ApiVersionsRequest, ApiVersionsResponse,
    DescribeClusterRequest, DescribeClusterResponse, MetadataRequest, MetadataResponse,
    RemoveRaftVoterRequest, RemoveRaftVoterResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::codec::{decode_client_response, request_frame, response_body, CodecError};
use super::tls::{self, Tls};
use crate::node::{ClientResponse, Message};
use crate::wire::describe_quorum::{DescribeQuorumRequest, DescribeQuorumResponse};
use crate::wire::frame::{begin_frame, finish_frame, read_frame_blocking, FrameReadError};

/// Largest response frame the client accepts.
const MAX_RESPONSE: usize = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach {addr}: {source}")]
    Unreachable {
        addr: String,
        source: std::io::Error,
    },
    #[error("no answer from {addr} within {timeout:?}")]
    Timeout { addr: String, timeout: Duration },
    #[error("connection to {addr} failed: {source}")]
    Io {
        addr: String,
        source: std::io::Error,
    },
    #[error("bad response from {addr}: {reason}")]
    Protocol { addr: String, reason: String },
    /// The TLS handshake failed, or the server refused our certificate (or the lack of one).
    #[error("TLS with {addr} failed: {reason}")]
    Tls { addr: String, reason: String },
    /// SASL authentication failed (refused mechanism, wrong credentials, a broken exchange).
    #[error("SASL with {addr}: {failure}")]
    Sasl {
        addr: String,
        failure: super::sasl::SaslFailure,
    },
}

/// How the CLI connects: TLS and SASL as `--command-config` asks.
#[derive(Clone, Debug, Default)]
pub struct ClientSecurity {
    pub tls: Option<Tls>,
    pub sasl: Option<super::sasl::SaslConfig>,
}

/// The byte stream under a client: plain TCP or rustls over it.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A TLS error carried inside an I/O error (an alert from the server, a certificate rustls refused).
fn tls_reason(e: &std::io::Error) -> Option<String> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .map(|t| t.to_string())
}

pub struct Client {
    addr: String,
    stream: Stream,
    timeout: Duration,
    correlation: i32,
    /// The peer's ApiVersions answer, asked once before the first [`Client::peer_request`].
    peer_versions: Option<super::api_versions::PeerVersions>,
}

impl Client {
    pub fn connect(addr: &str, timeout: Duration) -> Result<Client, ClientError> {
        Client::connect_with(addr, timeout, None)
    }

    /// Connects, over TLS when `tls` is given (the handshake completes here, so certificate problems are
    /// reported as [`ClientError::Tls`] by `connect`, or by the first request when the server refuses
    /// our certificate after a TLS 1.3 handshake).
    pub fn connect_with(
        addr: &str,
        timeout: Duration,
        tls: Option<&Tls>,
    ) -> Result<Client, ClientError> {
        let unreachable = |source| ClientError::Unreachable {
            addr: addr.to_string(),
            source,
        };
        let mut last = None;
        for sock in addr.to_socket_addrs().map_err(unreachable)? {
            match TcpStream::connect_timeout(&sock, timeout) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    stream
                        .set_read_timeout(Some(timeout))
                        .map_err(unreachable)?;
                    stream
                        .set_write_timeout(Some(timeout))
                        .map_err(unreachable)?;
                    let stream = match tls {
                        None => Stream::Plain(stream),
                        Some(tls) => {
                            Stream::Tls(Box::new(handshake(addr, tls.client.clone(), stream)?))
                        }
                    };
                    return Ok(Client {
                        addr: addr.to_string(),
                        stream,
                        timeout,
                        correlation: 0,
                        peer_versions: None,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    return Err(ClientError::Timeout {
                        addr: addr.to_string(),
                        timeout,
                    })
                }
                Err(e) => last = Some(e),
            }
        }
        Err(unreachable(
            last.unwrap_or_else(|| std::io::Error::other("no address")),
        ))
    }

    /// Connects as `security` asks: TLS first if set, then the SASL exchange if set.
    pub fn connect_secure(
        addr: &str,
        timeout: Duration,
        security: &ClientSecurity,
    ) -> Result<Client, ClientError> {
        let mut client = Client::connect_with(addr, timeout, security.tls.as_ref())?;
        if let Some(sasl) = &security.sasl {
            client.authenticate(sasl)?;
        }
        Ok(client)
    }

    /// Kafka's `SaslClientAuthenticator`: ApiVersions, SaslHandshake v1 naming the mechanism, then each
    /// token in a SaslAuthenticate request at the highest version both serve (0–2).
    pub fn authenticate(&mut self, config: &super::sasl::SaslConfig) -> Result<(), ClientError> {
        use super::sasl::Exchange;
        use kafka_protocol::messages::{
            SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
            SaslHandshakeResponse,
        };
        let fail = |addr: &str, failure| ClientError::Sasl {
            addr: addr.to_string(),
            failure,
        };
        let versions = self.api_versions(3)?;
        let served = |key: ApiKey| {
            versions
                .api_keys
                .iter()
                .find(|k| k.api_key == key as i16)
                .map(|k| (k.min_version, k.max_version))
        };
        let mechanism = config.mechanism.name();
        let (handshake_v, authenticate_v) = super::sasl::exchange_versions(
            served(ApiKey::SaslHandshake),
            served(ApiKey::SaslAuthenticate),
        )
        .map_err(|f| fail(&self.addr, f))?;
        let key = ApiKey::SaslHandshake as i16;
        let corr = self.next_correlation();
        let req =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
        let mut body = self.call(
            key,
            handshake_v,
            request_frame(key, handshake_v, corr, "kraft-cli", &req),
        )?;
        let hs =
            SaslHandshakeResponse::decode(&mut body, handshake_v).map_err(|e| self.protocol(e))?;
        super::sasl::handshake_outcome(&hs, mechanism).map_err(|f| fail(&self.addr, f))?;
        let mut exchange = Exchange::new(config);
        let mut server: Option<Bytes> = None;
        loop {
            let token = exchange
                .next(server.as_deref())
                .map_err(|f| fail(&self.addr, f))?;
            let Some(token) = token else {
                return Ok(());
            };
            let key = ApiKey::SaslAuthenticate as i16;
            let corr = self.next_correlation();
            let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
            let mut body = self.call(
                key,
                authenticate_v,
                request_frame(key, authenticate_v, corr, "kraft-cli", &req),
            )?;
            let r = SaslAuthenticateResponse::decode(&mut body, authenticate_v)
                .map_err(|e| self.protocol(e))?;
            server = Some(super::sasl::authenticate_outcome(r).map_err(|f| fail(&self.addr, f))?);
        }
    }

    /// Changes the read/write timeout of later calls (e.g. a long wait for a membership change).
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), ClientError> {
        self.timeout = timeout;
        self.stream
            .tcp()
            .set_read_timeout(Some(timeout))
            .map_err(|e| self.io(e))?;
        self.stream
            .tcp()
            .set_write_timeout(Some(timeout))
            .map_err(|e| self.io(e))
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    fn io(&self, source: std::io::Error) -> ClientError {
        if let Some(reason) = tls_reason(&source) {
            return ClientError::Tls {
                addr: self.addr.clone(),
                reason,
            };
        }
        match source.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => ClientError::Timeout {
                addr: self.addr.clone(),
                timeout: self.timeout,
            },
            _ => ClientError::Io {
                addr: self.addr.clone(),
                source,
            },
        }
    }

    fn protocol(&self, e: impl std::fmt::Display) -> ClientError {
        ClientError::Protocol {
            addr: self.addr.clone(),
            reason: e.to_string(),
        }
    }

    /// Sends a raw frame and returns the payload of the response frame.
    pub fn round_trip_raw(&mut self, frame: &[u8]) -> Result<Bytes, ClientError> {
        self.stream.write_all(frame).map_err(|e| self.io(e))?;
        match read_frame_blocking(&mut self.stream, MAX_RESPONSE) {
            Ok(payload) => Ok(payload),
            Err(FrameReadError::Io(e)) => Err(self.io(e)),
            Err(FrameReadError::Closed) => Err(self.io(std::io::ErrorKind::UnexpectedEof.into())),
            Err(e @ FrameReadError::Size(_)) => Err(self.protocol(e)),
        }
    }

    fn call(
        &mut self,
        key: i16,
        version: i16,
        frame: Result<Bytes, CodecError>,
    ) -> Result<Bytes, ClientError> {
        let frame = frame.map_err(|e| self.protocol(e))?;
        let correlation = self.correlation;
        let payload = self.round_trip_raw(&frame)?;
        // An UNSUPPORTED_VERSION answer always comes with response header v0 (ApiVersions v0 body).
        let (corr, body) = response_body(payload, key, version).map_err(|e| self.protocol(e))?;
        if corr != correlation {
            return Err(self.protocol(format!("correlation id {corr}, expected {correlation}")));
        }
        Ok(body)
    }

    fn next_correlation(&mut self) -> i32 {
        self.correlation = self.correlation.wrapping_add(1);
        self.correlation
    }

    pub fn api_versions(&mut self, version: i16) -> Result<ApiVersionsResponse, ClientError> {
        let corr = self.next_correlation();
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("kraft"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let key = ApiKey::ApiVersions as i16;
        let mut body = self.call(
            key,
            version,
            request_frame(key, version, corr, "kraft-cli", &req),
        )?;
        ApiVersionsResponse::decode(&mut body, version).map_err(|e| self.protocol(e))
    }

    pub fn metadata(&mut self, version: i16) -> Result<MetadataResponse, ClientError> {
        let corr = self.next_correlation();
        let req = MetadataRequest::default().with_topics(Some(Vec::new()));
        let key = ApiKey::Metadata as i16;
        let mut body = self.call(
            key,
            version,
            request_frame(key, version, corr, "kraft-cli", &req),
        )?;
        MetadataResponse::decode(&mut body, version).map_err(|e| self.protocol(e))
    }

    /// DescribeCluster asking for controllers (`endpoint_type` 2, KIP-919), as Kafka's admin client does
    /// with `bootstrap.controllers`: the cluster id, the active controller's id and the controllers'
    /// endpoints; or for brokers (1), as with `bootstrap.servers`.
    pub fn describe_cluster(
        &mut self,
        version: i16,
        endpoint_type: i8,
    ) -> Result<DescribeClusterResponse, ClientError> {
        let corr = self.next_correlation();
        let req = DescribeClusterRequest::default().with_endpoint_type(endpoint_type);
        let key = ApiKey::DescribeCluster as i16;
        let mut body = self.call(
            key,
            version,
            request_frame(key, version, corr, "kraft-cli", &req),
        )?;
        DescribeClusterResponse::decode(&mut body, version).map_err(|e| self.protocol(e))
    }

    pub fn describe_quorum(&mut self, version: i16) -> Result<DescribeQuorumResponse, ClientError> {
        let corr = self.next_correlation();
        let req = DescribeQuorumRequest::for_metadata_partition();
        let frame = describe_frame(version, corr, &req);
        let key = ApiKey::DescribeQuorum as i16;
        let body = self.call(key, version, frame)?;
        match decode_client_response(body, key, version).map_err(|e| self.protocol(e))? {
            ClientResponse::DescribeQuorum(r) => Ok(r),
            other => Err(self.protocol(format!("unexpected {other:?}"))),
        }
    }

    /// AddRaftVoter at `version` (0 or 1); v1 sends `AckWhenCommitted` true (KIP-1186: answered once
    /// the new voter set is committed, as v0 always is).
    pub fn add_voter(
        &mut self,
        req: &AddRaftVoterRequest,
        version: i16,
    ) -> Result<AddRaftVoterResponse, ClientError> {
        let corr = self.next_correlation();
        let key = ApiKey::AddRaftVoter as i16;
        let outgoing = crate::wire::add_raft_voter::OutgoingRequest {
            request: req.clone(),
            ack_when_committed: true,
        };
        let frame = request_frame(key, version, corr, "kraft-cli", &outgoing);
        let mut body = self.call(key, version, frame)?;
        // v1's response layout is v0's.
        let at = crate::wire::add_raft_voter::response_encoding_version(version);
        AddRaftVoterResponse::decode(&mut body, at).map_err(|e| self.protocol(e))
    }

    /// A Raft request the core built (e.g. an observer's Fetch) at the version the shell sends it; the
    /// answer decoded as a core message.
    /// Sends a peer RPC at the highest version both sides serve, as the node's peer links do (the
    /// ApiVersions round trip first, once per connection; fields the version lacks are left out).
    pub fn peer_request(&mut self, message: &Message) -> Result<Message, ClientError> {
        if super::codec::request_api(message).is_none() {
            return Err(self.protocol(format!("{message:?} is not a request")));
        }
        let versions = match self.peer_versions.take() {
            Some(v) => v,
            None => super::api_versions::PeerVersions::from_response(&self.api_versions(3)?),
        };
        let negotiated = versions.version(message.api_key());
        self.peer_versions = Some(versions);
        let version = negotiated.map_err(|e| self.protocol(e))?;
        let key = message.api_key() as i16;
        let corr = self.next_correlation();
        let frame = super::codec::peer_request_frame_at(message, version, corr, "kraft-observer");
        let body = self.call(key, version, frame)?;
        super::codec::decode_peer_response(body, key, version).map_err(|e| self.protocol(e))
    }

    pub fn remove_voter(
        &mut self,
        req: &RemoveRaftVoterRequest,
    ) -> Result<RemoveRaftVoterResponse, ClientError> {
        let corr = self.next_correlation();
        let key = ApiKey::RemoveRaftVoter as i16;
        let mut body = self.call(key, 0, request_frame(key, 0, corr, "kraft-cli", req))?;
        RemoveRaftVoterResponse::decode(&mut body, 0).map_err(|e| self.protocol(e))
    }
}

/// Completes a client TLS handshake on `tcp` (its timeouts already set).
fn handshake(
    addr: &str,
    config: Arc<rustls::ClientConfig>,
    mut tcp: TcpStream,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>, ClientError> {
    let failed = |reason: String| ClientError::Tls {
        addr: addr.to_string(),
        reason,
    };
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    let name = tls::server_name(host).map_err(|e| failed(e.to_string()))?;
    let mut conn =
        rustls::ClientConnection::new(config, name).map_err(|e| failed(e.to_string()))?;
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut tcp) {
            return Err(failed(tls_reason(&e).unwrap_or_else(|| e.to_string())));
        }
    }
    Ok(rustls::StreamOwned::new(conn, tcp))
}

/// A DescribeQuorum request frame: kafka-protocol header, body from our `wire` codec (v0–3).
pub fn describe_frame(
    version: i16,
    correlation: i32,
    req: &DescribeQuorumRequest,
) -> Result<Bytes, CodecError> {
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::DescribeQuorum as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation)
        .with_client_id(Some(StrBytes::from_static_str("kraft-cli")));
    let mut buf = begin_frame();
    // DescribeQuorum uses request header v2 at every version (the `wire` constant).
    header
        .encode(
            &mut buf,
            crate::wire::describe_quorum::REQUEST_HEADER_VERSION,
        )
        .map_err(|e| CodecError::Encode {
            what: "request header",
            reason: e.to_string(),
        })?;
    req.encode(version, &mut buf)
        .map_err(|e| CodecError::Encode {
            what: "DescribeQuorumRequest",
            reason: e.to_string(),
        })?;
    Ok(finish_frame(buf)?)
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::{FetchRequest, FetchResponse, ResponseHeader};
    use kafka_protocol::protocol::{Decodable, Encodable};

    use super::*;

    /// One frame off `s`: (api key, version, correlation id, body after the header).
    fn read_request(s: &mut TcpStream) -> (i16, i16, i32, Bytes) {
        let mut len = [0u8; 4];
        s.read_exact(&mut len).unwrap();
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        s.read_exact(&mut buf).unwrap();
        let key = i16::from_be_bytes([buf[0], buf[1]]);
        let version = i16::from_be_bytes([buf[2], buf[3]]);
        let header_version = ApiKey::try_from(key)
            .unwrap()
            .request_header_version(version);
        let mut body = Bytes::from(buf);
        let header = RequestHeader::decode(&mut body, header_version).unwrap();
        (key, version, header.correlation_id, body)
    }

    fn write_response<T: Encodable>(s: &mut TcpStream, key: ApiKey, v: i16, corr: i32, body: &T) {
        let mut buf = bytes::BytesMut::new();
        ResponseHeader::default()
            .with_correlation_id(corr)
            .encode(&mut buf, key.response_header_version(v))
            .unwrap();
        body.encode(&mut buf, v).unwrap();
        s.write_all(&(buf.len() as i32).to_be_bytes()).unwrap();
        s.write_all(&buf).unwrap();
    }

    /// A peer that serves Fetch v4–17, as Kafka 4.0 does (it closes the connection on a v18), gets a
    /// Fetch v17 without the v18-only follower HW.
    #[test]
    fn peer_requests_go_at_the_version_the_peer_serves() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let peer = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let (key, v, corr, _) = read_request(&mut s);
            assert_eq!(key, ApiKey::ApiVersions as i16);
            let served = ApiVersionsResponse::default().with_api_keys(vec![ApiVersion::default()
                .with_api_key(ApiKey::Fetch as i16)
                .with_min_version(4)
                .with_max_version(17)]);
            write_response(&mut s, ApiKey::ApiVersions, v, corr, &served);
            let (key, v, corr, mut body) = read_request(&mut s);
            assert_eq!((key, v), (ApiKey::Fetch as i16, 17));
            let fetch = FetchRequest::decode(&mut body, v).unwrap();
            write_response(&mut s, ApiKey::Fetch, v, corr, &FetchResponse::default());
            fetch
        });
        let mut client = Client::connect(&addr, Duration::from_secs(5)).unwrap();
        let partition = kafka_protocol::messages::fetch_request::FetchPartition::default()
            .with_high_watermark(42);
        let request = FetchRequest::default().with_topics(vec![
            kafka_protocol::messages::fetch_request::FetchTopic::default()
                .with_partitions(vec![partition]),
        ]);
        let answer = client
            .peer_request(&Message::FetchRequest(request))
            .unwrap();
        assert!(matches!(answer, Message::FetchResponse(_)));
        let sent = peer.join().unwrap();
        assert_eq!(sent.topics[0].partitions[0].high_watermark, i64::MAX);
    }

    /// A peer that does not serve the request's API gets nothing; the error names the API.
    #[test]
    fn a_request_the_peer_does_not_serve_is_refused_before_sending() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let peer = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let (_, v, corr, _) = read_request(&mut s);
            write_response(
                &mut s,
                ApiKey::ApiVersions,
                v,
                corr,
                &ApiVersionsResponse::default(),
            );
            let mut rest = Vec::new();
            s.read_to_end(&mut rest).unwrap();
            rest
        });
        let mut client = Client::connect(&addr, Duration::from_secs(5)).unwrap();
        let err = client
            .peer_request(&Message::FetchRequest(FetchRequest::default()))
            .unwrap_err();
        assert!(err.to_string().contains("does not serve Fetch"), "{err}");
        drop(client);
        assert!(peer.join().unwrap().is_empty());
    }
}
