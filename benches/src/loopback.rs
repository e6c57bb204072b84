//! A local cluster of `kraft` nodes in this process (tokio, real TCP on 127.0.0.1, real data directories)
//! and a small blocking client that speaks Kafka's framing: DescribeQuorum through our `wire` codec,
//! AddRaftVoter/RemoveRaftVoter through kafka-protocol's message types.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    add_raft_voter_request, AddRaftVoterRequest, AddRaftVoterResponse, RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kraft::cli::certs::write_cluster_tls;
use kraft::cli::format::{format_dir, parse_initial_controllers};
use kraft::cli::node_settings::NodeSettings;
use kraft::cli::run::start_node;
use kraft::cli::NodeArgs;
use kraft::server::tls::Tls;
use kraft::server::Running;
use kraft::storage::format_directory_id;
use kraft::wire::describe_quorum::{
    DescribeQuorumRequest, DescribeQuorumResponse, REQUEST_HEADER_VERSION, RESPONSE_HEADER_VERSION,
};
use kraft::wire::frame::read_frame_blocking;
use kraft::wire::{Reader, RequestHeader, ResponseHeader};
use uuid::Uuid;

/// Why a bench client or cluster step failed.
#[derive(Debug)]
pub struct LoopbackError(pub String);

impl std::fmt::Display for LoopbackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoopbackError {}

fn err(what: impl std::fmt::Display) -> LoopbackError {
    LoopbackError(what.to_string())
}

/// Largest response frame the client accepts.
const MAX_FRAME: usize = 16 << 20;

/// One blocking connection; one request in flight at a time.
pub struct Client {
    stream: TcpStream,
    correlation: i32,
    frame: BytesMut,
}

impl Client {
    pub fn connect(addr: &str) -> Result<Client, LoopbackError> {
        let stream = TcpStream::connect(addr).map_err(|e| err(format!("connect {addr}: {e}")))?;
        stream.set_nodelay(true).map_err(err)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(err)?;
        Ok(Client {
            stream,
            correlation: 0,
            frame: BytesMut::with_capacity(256),
        })
    }

    fn header(&mut self, api_key: i16, api_version: i16) -> RequestHeader {
        self.correlation = self.correlation.wrapping_add(1);
        RequestHeader {
            api_key,
            api_version,
            correlation_id: self.correlation,
            client_id: Some("kraft-bench".into()),
            unknown_tagged_fields: Default::default(),
        }
    }

    /// Sends the frame in `self.frame` (size prefix included) and returns the response body after the
    /// response header v1, checking the correlation id.
    fn round_trip(&mut self) -> Result<Bytes, LoopbackError> {
        self.stream.write_all(&self.frame).map_err(err)?;
        let payload = read_frame_blocking(&mut self.stream, MAX_FRAME).map_err(err)?;
        let mut r = Reader::new(&payload);
        let header = ResponseHeader::decode_from(&mut r, RESPONSE_HEADER_VERSION).map_err(err)?;
        if header.correlation_id != self.correlation {
            return Err(err(format!(
                "correlation id {} ≠ {}",
                header.correlation_id, self.correlation
            )));
        }
        let body = r.position();
        Ok(payload.slice(body..))
    }

    /// Writes size prefix, request header v2 and `body` into the frame buffer.
    fn frame_with(
        &mut self,
        header: &RequestHeader,
        body_size: usize,
        body: impl FnOnce(&mut BytesMut) -> Result<(), LoopbackError>,
    ) -> Result<(), LoopbackError> {
        let header_size = header.encoded_size(REQUEST_HEADER_VERSION).map_err(err)?;
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        frame.extend_from_slice(&((header_size + body_size) as i32).to_be_bytes());
        header
            .encode(REQUEST_HEADER_VERSION, &mut frame)
            .map_err(err)?;
        let result = body(&mut frame);
        self.frame = frame;
        result
    }

    /// DescribeQuorum for `__cluster_metadata`-0 at `version`.
    pub fn describe_quorum(
        &mut self,
        version: i16,
    ) -> Result<DescribeQuorumResponse, LoopbackError> {
        let header = self.header(55, version);
        let req = DescribeQuorumRequest::for_metadata_partition();
        let size = req.encoded_size(version).map_err(err)?;
        self.frame_with(&header, size, |buf| req.encode(version, buf).map_err(err))?;
        let body = self.round_trip()?;
        DescribeQuorumResponse::decode(&body, version).map_err(err)
    }

    fn kafka_call<Req: Encodable, Resp: Decodable>(
        &mut self,
        api_key: i16,
        req: &Req,
    ) -> Result<Resp, LoopbackError> {
        let header = self.header(api_key, 0);
        let size = req.compute_size(0).map_err(err)?;
        self.frame_with(&header, size, |buf| req.encode(buf, 0).map_err(err))?;
        let mut body = self.round_trip()?;
        Resp::decode(&mut body, 0).map_err(err)
    }

    /// AddRaftVoter v0 (answered once the new voter set is committed).
    pub fn add_voter(
        &mut self,
        cluster_id: &str,
        id: i32,
        directory_id: Uuid,
        port: u16,
    ) -> Result<AddRaftVoterResponse, LoopbackError> {
        let listener = add_raft_voter_request::Listener::default()
            .with_name(StrBytes::from_static_str("CONTROLLER"))
            .with_host(StrBytes::from_static_str("127.0.0.1"))
            .with_port(port);
        let req = AddRaftVoterRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(cluster_id.to_owned())))
            .with_timeout_ms(30_000)
            .with_voter_id(id)
            .with_voter_directory_id(directory_id)
            .with_listeners(vec![listener]);
        self.kafka_call(80, &req)
    }

    /// RemoveRaftVoter v0 (answered once the new voter set is committed).
    pub fn remove_voter(
        &mut self,
        cluster_id: &str,
        id: i32,
        directory_id: Uuid,
    ) -> Result<RemoveRaftVoterResponse, LoopbackError> {
        let req = RemoveRaftVoterRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(cluster_id.to_owned())))
            .with_voter_id(id)
            .with_voter_directory_id(directory_id);
        self.kafka_call(81, &req)
    }
}

/// Directory id of local node `id` (deterministic).
pub fn directory_id(id: i32) -> Uuid {
    Uuid::from_u128(0xB0_0000 + id as u128)
}

/// `voters` voter nodes (ids 1..) and `observers` more, each with its own data directory and port.
pub struct LocalCluster {
    pub cluster_id: String,
    pub ports: Vec<u16>,
    runtime: tokio::runtime::Runtime,
    stop: tokio::sync::watch::Sender<bool>,
    nodes: Vec<Running>,
    _root: tempfile::TempDir,
}

fn free_ports(n: usize) -> Result<Vec<u16>, LoopbackError> {
    // Bound and released at once: a small race with other processes, acceptable for a bench.
    let listeners = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").map_err(err))
        .collect::<Result<Vec<_>, _>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()).map_err(err))
        .collect()
}

impl LocalCluster {
    /// Formats and starts the nodes with the node defaults except `fetch_interval_ms`, and waits until a
    /// leader has a high watermark.
    pub fn start(
        voters: i32,
        observers: i32,
        fetch_interval_ms: u64,
    ) -> Result<LocalCluster, LoopbackError> {
        Self::start_with(voters, observers, fetch_interval_ms, false).map(|(c, _)| c)
    }

    /// [`LocalCluster::start`] with mutual TLS as `kraft cluster --tls` sets it up (certificates generated
    /// now); also returns the operator's client TLS setup.
    pub fn start_tls(
        voters: i32,
        observers: i32,
        fetch_interval_ms: u64,
    ) -> Result<(LocalCluster, Tls), LoopbackError> {
        let (cluster, tls) = Self::start_with(voters, observers, fetch_interval_ms, true)?;
        Ok((cluster, tls.ok_or_else(|| err("no TLS setup"))?))
    }

    fn start_with(
        voters: i32,
        observers: i32,
        fetch_interval_ms: u64,
        tls: bool,
    ) -> Result<(LocalCluster, Option<Tls>), LoopbackError> {
        let cluster_id = "kraft-bench".to_owned();
        let root = tempfile::tempdir().map_err(err)?;
        let total = voters + observers;
        let ports = free_ports(total as usize)?;
        let initial = (1..=voters)
            .map(|i| {
                format!(
                    "{i}@127.0.0.1:{}:{}",
                    ports[(i - 1) as usize],
                    format_directory_id(directory_id(i))
                )
            })
            .collect::<Vec<_>>()
            .join(",");
        let set = parse_initial_controllers(&initial).map_err(|f| err(f.message))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(err)?;
        let ids: Vec<i32> = (1..=total).collect();
        let files = if tls {
            Some(write_cluster_tls(&root.path().join("tls"), &ids).map_err(err)?)
        } else {
            None
        };
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let mut nodes = Vec::new();
        for i in 1..=total {
            let dir = root.path().join(format!("node-{i}"));
            format_dir(
                &dir,
                &cluster_id,
                i,
                Some(&set),
                Some(directory_id(i)),
                false,
            )
            .map_err(|f| err(f.message))?;
            let mut settings = NodeSettings::resolve(NodeArgs {
                data_dir: Some(dir),
                listener: Some(format!("127.0.0.1:{}", ports[(i - 1) as usize])),
                fetch_interval_ms: Some(fetch_interval_ms),
                seed: Some(i as u64),
                ..NodeArgs::default()
            })
            .map_err(|f| err(f.message))?;
            if let Some(files) = &files {
                settings.tls = Tls::for_node(&files.node_properties(i))
                    .map_err(err)?
                    .map(std::sync::Arc::new);
            }
            let mut stop = stop_rx.clone();
            let running = runtime
                .block_on(start_node(&settings, async move {
                    let _ = stop.wait_for(|s| *s).await;
                }))
                .map_err(|f| err(f.message))?;
            nodes.push(running);
        }
        let cluster = LocalCluster {
            cluster_id,
            ports,
            runtime,
            stop,
            nodes,
            _root: root,
        };
        cluster.wait_for_leader(Duration::from_secs(30))?;
        let client_tls = match &files {
            None => None,
            Some(files) => {
                let props = kraft::cli::properties::read(&files.admin_config).map_err(err)?;
                Tls::for_client(&props).map_err(err)?
            }
        };
        Ok((cluster, client_tls))
    }

    pub fn addr(&self, id: i32) -> String {
        format!("127.0.0.1:{}", self.ports[(id - 1) as usize])
    }

    /// The leader's id once some node reports a leader with a known HW.
    pub fn wait_for_leader(&self, timeout: Duration) -> Result<i32, LoopbackError> {
        let deadline = Instant::now() + timeout;
        loop {
            for running in &self.nodes {
                let status = running.status.borrow().clone();
                if let (Some(leader), Some(_)) = (status.leader_id, status.high_watermark) {
                    if let Some(leader_status) = self
                        .nodes
                        .get((leader - 1) as usize)
                        .map(|r| r.status.borrow().clone())
                    {
                        if leader_status.leader_id == Some(leader)
                            && leader_status.high_watermark.is_some()
                        {
                            return Ok(leader);
                        }
                    }
                }
            }
            if Instant::now() > deadline {
                return Err(err(format!("no leader with a HW within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        for running in self.nodes.drain(..) {
            let _ = self.runtime.block_on(running.task);
        }
    }
}
