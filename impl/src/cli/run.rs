//! `kraft format`, `kraft node` and `kraft cluster`: the commands that own a data directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::TcpListener;
use uuid::Uuid;

use super::snapshot_settings::{self, SnapshotSettings};
use super::{
    ClusterArgs, Failure, FormatArgs, NodeArgs, EXIT_NODE_FAILED, EXIT_STORAGE, EXIT_USAGE,
};
use crate::node::{Node, NodeConfig};
use crate::server::tls::{Properties, Tls};
use crate::server::{self, BrokerInfo, Limits, LinkConfig, Running};
use crate::storage::{
    format_directory_id, is_reserved_directory_id, new_directory_id, parse_directory_id,
    read_quorum_state, write_bootstrap_snapshot, DataDir, MetaProperties, MetadataLog,
};
use crate::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};

/// The listener name this node uses for its one listener.
pub const LISTENER_NAME: &str = "CONTROLLER";

fn usage(message: impl Into<String>) -> Failure {
    Failure::new(EXIT_USAGE, message)
}

/// Splits `HOST:PORT` (the last colon separates the port).
pub fn parse_host_port(text: &str) -> Result<(String, u16), Failure> {
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| usage(format!("{text:?} is not HOST:PORT")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = port
        .parse::<u16>()
        .map_err(|_| usage(format!("bad port in {text:?}")))?;
    if host.is_empty() {
        return Err(usage(format!("missing host in {text:?}")));
    }
    Ok((host.to_string(), port))
}

/// Why a reserved directory id is refused at format time (a listed difference: `impl/KAFKA-DIFFERENCES.md`).
const RESERVED: &str =
    "reserved directory id (Kafka's DirectoryId.reserved: a controller refuses to start on it)";

/// Parses `--bootstrap-servers` (Kafka's `controller.quorum.bootstrap.servers`): `HOST:PORT,...`, as
/// endpoints on this node's listener name; empty: none.
pub fn parse_bootstrap_servers(text: &str) -> Result<Vec<Endpoint>, Failure> {
    parse_bootstrap_servers_on(text, LISTENER_NAME)
}

/// [`parse_bootstrap_servers`] on listener `name`.
pub fn parse_bootstrap_servers_on(text: &str, name: &str) -> Result<Vec<Endpoint>, Failure> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (host, port) = parse_host_port(item)
                .map_err(|f| usage(format!("--bootstrap-servers: {}", f.message)))?;
            Ok(Endpoint {
                name: name.into(),
                host,
                port,
            })
        })
        .collect()
}

/// Parses `--initial-controllers`: `ID@HOST:PORT:DIRECTORY_ID,...`, as `kafka-storage format` takes it.
pub fn parse_initial_controllers(text: &str) -> Result<VoterSet, Failure> {
    parse_initial_controllers_on(text, LISTENER_NAME)
}

/// [`parse_initial_controllers`] on listener `name`.
pub fn parse_initial_controllers_on(text: &str, name: &str) -> Result<VoterSet, Failure> {
    let mut voters = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = |why: &str| {
            usage(format!(
                "initial controller {item:?}: {why} (expected ID@HOST:PORT:DIRECTORY_ID)"
            ))
        };
        let (id, rest) = item.split_once('@').ok_or_else(|| bad("missing '@'"))?;
        let id = id
            .parse::<i32>()
            .ok()
            .filter(|i| *i >= 0)
            .ok_or_else(|| bad("bad node id"))?;
        let (address, directory) = rest
            .rsplit_once(':')
            .ok_or_else(|| bad("missing directory id"))?;
        let directory = parse_directory_id(directory).map_err(|e| bad(&e))?;
        if is_reserved_directory_id(directory) {
            return Err(bad(RESERVED));
        }
        let (host, port) = parse_host_port(address).map_err(|f| bad(&f.message))?;
        voters.push(VoterNode {
            key: ReplicaKey::new(id, directory),
            listeners: vec![Endpoint {
                name: name.into(),
                host,
                port,
            }],
            supported: SupportedVersions::CURRENT,
        });
    }
    VoterSet::new(voters).map_err(|e| usage(format!("--initial-controllers: {e}")))
}

/// Writes identity and bootstrap checkpoint unless the directory is already formatted.
/// `voters`: the `--initial-controllers` set, or `None` for `--no-initial-controllers`.
pub fn format_dir(
    dir: &Path,
    cluster_id: &str,
    node_id: i32,
    voters: Option<&VoterSet>,
    directory_id: Option<Uuid>,
    ignore_formatted: bool,
) -> Result<MetaProperties, Failure> {
    if cluster_id.is_empty() {
        return Err(usage("--cluster-id must not be empty"));
    }
    if node_id < 0 {
        return Err(usage("--node-id must be non-negative"));
    }
    let data = DataDir::new(dir);
    if data.is_formatted() {
        let existing = MetaProperties::read(&data.meta_path())?;
        if ignore_formatted && existing.cluster_id == cluster_id && existing.node_id == node_id {
            return Ok(existing);
        }
        return Err(Failure::new(
            EXIT_STORAGE,
            format!(
                "{} is already formatted (cluster {}, node {}); use a fresh directory",
                dir.display(),
                existing.cluster_id,
                existing.node_id
            ),
        ));
    }
    let listed = voters
        .and_then(|v| v.voter(node_id))
        .and_then(|v| v.key.directory_id);
    let directory_id = match (listed, directory_id) {
        (Some(listed), Some(given)) if listed != given => {
            return Err(usage(format!(
                "--directory-id {} differs from node {node_id}'s entry {} in --initial-controllers",
                format_directory_id(given),
                format_directory_id(listed)
            )))
        }
        (Some(listed), _) => listed,
        (None, Some(given)) => given,
        (None, None) => new_directory_id(),
    };
    if is_reserved_directory_id(directory_id) {
        return Err(usage(format!(
            "--directory-id {}: {RESERVED}",
            format_directory_id(directory_id)
        )));
    }
    let meta = MetaProperties {
        cluster_id: cluster_id.to_string(),
        node_id,
        directory_id,
    };
    let io = |source| crate::storage::StorageError::Io {
        path: data.log_dir(),
        source,
    };
    std::fs::create_dir_all(data.log_dir()).map_err(io)?;
    write_bootstrap_snapshot(&data.bootstrap_path(), voters)?;
    // meta.properties last: its presence means "formatted".
    meta.write(&data.meta_path())?;
    Ok(meta)
}

pub fn format(args: &FormatArgs) -> Result<(), Failure> {
    let kafka = args
        .config
        .as_deref()
        .map(super::controller_properties::read)
        .transpose()?;
    let name = kafka.as_ref().map_or(LISTENER_NAME, |k| &k.listener_name);
    if kafka.as_ref().is_some_and(|k| k.static_voters) {
        return Err(usage(format!(
            "{} is set: static voters (kraft.version 0) are not formatted by this tool; set \
             controller.quorum.bootstrap.servers instead",
            super::controller_properties::VOTERS,
        )));
    }
    let data_dir = args
        .data_dir
        .clone()
        .or_else(|| kafka.as_ref().and_then(|k| k.data_dir.clone()))
        .ok_or_else(|| {
            usage("--data-dir (or metadata.log.dir / log.dirs in --config) is required")
        })?;
    let node_id = args
        .node_id
        .or(kafka.as_ref().and_then(|k| k.node_id))
        .ok_or_else(|| usage("--node-id (or node.id in --config) is required"))?;
    let mut directory_id = args
        .directory_id
        .as_deref()
        .map(parse_directory_id)
        .transpose()
        .map_err(usage)?;
    let voters = match (
        &args.initial_controllers,
        args.no_initial_controllers,
        args.standalone,
    ) {
        (Some(list), false, false) => Some(parse_initial_controllers_on(list, name)?),
        (None, true, false) => None,
        (None, false, true) => {
            let advertised = kafka
                .as_ref()
                .and_then(|k| k.advertised.clone())
                .ok_or_else(|| {
                    usage("--standalone needs the controller listener's host and port in --config")
                })?;
            let id = *directory_id.get_or_insert_with(new_directory_id);
            Some(parse_initial_controllers_on(
                &format!("{node_id}@{advertised}:{}", format_directory_id(id)),
                name,
            )?)
        }
        _ => return Err(usage(
            "give exactly one of --standalone, --initial-controllers and --no-initial-controllers",
        )),
    };
    let meta = format_dir(
        &data_dir,
        &args.cluster_id,
        node_id,
        voters.as_ref(),
        directory_id,
        args.ignore_formatted,
    )?;
    let role = if voters.as_ref().is_some_and(|v| v.contains_id(meta.node_id)) {
        "initial voter"
    } else {
        "observer"
    };
    out!(
        "Formatted {} for cluster {} as node {} ({role}), directory id {}, {} bootstrap voter(s)",
        data_dir.display(),
        meta.cluster_id,
        meta.node_id,
        format_directory_id(meta.directory_id),
        voters.as_ref().map_or(0, VoterSet::len)
    );
    Ok(())
}

/// Node settings after merging the config file and the flags (flags win).
#[derive(Clone, Debug)]
pub struct NodeSettings {
    pub data_dir: PathBuf,
    /// HOST:PORT to bind.
    pub listener: String,
    /// HOST:PORT to advertise in the voter set (Kafka's `advertised.listeners`); `None`: `listener`.
    pub advertised: Option<String>,
    /// The name of this node's listener (Kafka's first `controller.listener.names`).
    pub listener_name: String,
    /// Kafka's `controller.quorum.bootstrap.servers` (see `NodeConfig::bootstrap_servers`).
    pub bootstrap_servers: Vec<Endpoint>,
    pub node_id: Option<i32>,
    pub cluster_id: Option<String>,
    pub election_timeout_ms: u64,
    pub fetch_timeout_ms: u64,
    pub fetch_interval_ms: u64,
    pub request_timeout_ms: u64,
    pub limits: Limits,
    pub seed: u64,
    /// TLS on the listener and peer links (`security.protocol = "SSL"` and `ssl.*` keys, see
    /// `server::tls`); `None`: plaintext.
    pub tls: Option<std::sync::Arc<Tls>>,
    /// Kafka's snapshot and retention properties.
    pub snapshots: SnapshotSettings,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    data_dir: Option<PathBuf>,
    listener: Option<String>,
    bootstrap_servers: Option<String>,
    node_id: Option<i32>,
    cluster_id: Option<String>,
    election_timeout_ms: Option<u64>,
    fetch_timeout_ms: Option<u64>,
    fetch_interval_ms: Option<u64>,
    request_timeout_ms: Option<u64>,
    max_frame_bytes: Option<usize>,
    idle_timeout_ms: Option<u64>,
    frame_timeout_ms: Option<u64>,
    max_in_flight: Option<usize>,
    max_connections: Option<usize>,
    seed: Option<u64>,
    /// Kafka's dotted TLS keys as TOML tables: `security.protocol = "SSL"`, `ssl.keystore.location = ...`,
    /// `controller.principal.template = ...`, `super.users = ...`.
    security: Option<toml::Table>,
    ssl: Option<toml::Table>,
    controller: Option<toml::Table>,
    /// Kafka's `metadata.*` snapshot and retention keys (see `snapshot_settings`).
    metadata: Option<toml::Table>,
    /// `internal.metadata.log.segment.bytes` (Kafka's testing-only segment size).
    internal: Option<toml::Table>,
    #[serde(rename = "super")]
    super_: Option<toml::Table>,
    /// TLS keys of a Kafka controller properties file.
    #[serde(skip)]
    kafka_tls: Properties,
    /// Snapshot keys of a Kafka controller properties file.
    #[serde(skip)]
    kafka_snapshots: Properties,
}

impl FileConfig {
    /// The TLS keys of the file and the flags (flags win), as one property map.
    fn tls_properties(&self, args: &NodeArgs) -> Properties {
        let mut props = self.kafka_tls.clone();
        for (prefix, table) in [
            ("security", &self.security),
            ("ssl", &self.ssl),
            ("controller", &self.controller),
            ("super", &self.super_),
        ] {
            if let Some(t) = table {
                super::properties::flatten_toml(prefix, t, &mut props);
            }
        }
        props.retain(|k, _| !snapshot_settings::KEYS.contains(&k.as_str()));
        for (key, flag) in [
            ("security.protocol", &args.security_protocol),
            ("ssl.keystore.location", &args.ssl_keystore_location),
            ("ssl.truststore.location", &args.ssl_truststore_location),
            ("ssl.client.auth", &args.ssl_client_auth),
            (
                "controller.principal.template",
                &args.controller_principal_template,
            ),
            ("super.users", &args.super_users),
        ] {
            if let Some(v) = flag {
                props.insert(key.to_string(), v.clone());
            }
        }
        props
    }
}

impl FileConfig {
    /// The snapshot settings of the file and the flags (flags win).
    fn snapshot_settings(&self, args: &NodeArgs) -> Result<SnapshotSettings, Failure> {
        let mut props = self.kafka_snapshots.clone();
        for (prefix, table) in [
            ("metadata", &self.metadata),
            ("controller", &self.controller),
            ("internal", &self.internal),
        ] {
            if let Some(t) = table {
                super::properties::flatten_toml(prefix, t, &mut props);
            }
        }
        let flags = [
            (
                snapshot_settings::MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
                &args.metadata_log_max_record_bytes_between_snapshots,
            ),
            (
                snapshot_settings::MAX_SNAPSHOT_INTERVAL_MS,
                &args.metadata_log_max_snapshot_interval_ms,
            ),
            (
                snapshot_settings::MAX_RETENTION_BYTES,
                &args.metadata_max_retention_bytes,
            ),
            (
                snapshot_settings::MAX_RETENTION_MS,
                &args.metadata_max_retention_ms,
            ),
            (
                snapshot_settings::FETCH_SNAPSHOT_MAX_BYTES,
                &args.controller_quorum_fetch_snapshot_max_bytes,
            ),
            (
                snapshot_settings::INTERNAL_SEGMENT_BYTES,
                &args.internal_metadata_log_segment_bytes,
            ),
        ];
        let from_flags = flags
            .iter()
            .filter_map(|(k, v)| v.as_deref().map(|v| (*k, v)));
        SnapshotSettings::resolve(
            SnapshotSettings::keys_of(&props)
                .into_iter()
                .chain(from_flags),
        )
        .map_err(usage)
    }
}

impl NodeSettings {
    pub fn resolve(args: NodeArgs) -> Result<NodeSettings, Failure> {
        let mut kafka = None;
        let file = match &args.config {
            Some(path) if path.extension() != Some(std::ffi::OsStr::new("toml")) => {
                let k = super::controller_properties::read(path)?;
                if let Some(line) = k.unused_line() {
                    tracing::info!("{}: {line}", path.display());
                }
                let file = FileConfig {
                    data_dir: k.data_dir.clone(),
                    listener: k.listener.clone(),
                    bootstrap_servers: k.bootstrap_servers.clone(),
                    node_id: k.node_id,
                    election_timeout_ms: k.election_timeout_ms,
                    fetch_timeout_ms: k.fetch_timeout_ms,
                    request_timeout_ms: k.request_timeout_ms,
                    kafka_tls: k.tls.clone(),
                    kafka_snapshots: k.snapshots.clone(),
                    ..FileConfig::default()
                };
                kafka = Some(k);
                file
            }
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Failure::new(EXIT_STORAGE, format!("{}: {e}", path.display())))?;
                toml::from_str::<FileConfig>(&text)
                    .map_err(|e| Failure::new(EXIT_STORAGE, format!("{}: {e}", path.display())))?
            }
            None => FileConfig::default(),
        };
        let tls = Tls::for_node(&file.tls_properties(&args))?;
        let snapshots = file.snapshot_settings(&args)?;
        if let Some(t) = &tls {
            if t.client_auth == crate::server::tls::ClientAuth::Required
                && !t.identities.is_configured()
            {
                tracing::warn!(
                    "ssl.client.auth=required without controller.principal.template: any trusted \
                     certificate may send Raft requests in the name of any node"
                );
            }
        }
        let defaults = Limits::default();
        let ms = Duration::from_millis;
        let listener_name = kafka
            .as_ref()
            .map_or(LISTENER_NAME.to_string(), |k| k.listener_name.clone());
        // A --listener flag is also what the node advertises.
        let advertised = kafka
            .as_ref()
            .and_then(|k| k.advertised.clone())
            .filter(|_| args.listener.is_none());
        let settings = NodeSettings {
            advertised,
            data_dir: args
                .data_dir
                .or(file.data_dir)
                .ok_or_else(|| {
                    usage("--data-dir (or data_dir, or Kafka's metadata.log.dir / log.dirs, in --config) is required")
                })?,
            listener: args
                .listener
                .or(file.listener)
                .ok_or_else(|| {
                    usage("--listener (or listener, or Kafka's listeners, in --config) is required")
                })?,
            bootstrap_servers: parse_bootstrap_servers_on(
                args.bootstrap_servers
                    .as_deref()
                    .or(file.bootstrap_servers.as_deref())
                    .unwrap_or(""),
                &listener_name,
            )?,
            listener_name,
            node_id: args.node_id.or(file.node_id),
            cluster_id: args.cluster_id.or(file.cluster_id),
            election_timeout_ms: args
                .election_timeout_ms
                .or(file.election_timeout_ms)
                .unwrap_or(1000),
            fetch_timeout_ms: args
                .fetch_timeout_ms
                .or(file.fetch_timeout_ms)
                .unwrap_or(2000),
            fetch_interval_ms: args
                .fetch_interval_ms
                .or(file.fetch_interval_ms)
                .unwrap_or(50),
            // Kafka's controller.quorum.request.timeout.ms; also how long a lost Fetch waits for a retry.
            request_timeout_ms: args
                .request_timeout_ms
                .or(file.request_timeout_ms)
                .unwrap_or(2000),
            limits: Limits {
                max_frame_bytes: args
                    .max_frame_bytes
                    .or(file.max_frame_bytes)
                    .unwrap_or(defaults.max_frame_bytes),
                idle_timeout: args
                    .idle_timeout_ms
                    .or(file.idle_timeout_ms)
                    .map_or(defaults.idle_timeout, ms),
                frame_timeout: args
                    .frame_timeout_ms
                    .or(file.frame_timeout_ms)
                    .map_or(defaults.frame_timeout, ms),
                max_in_flight: args
                    .max_in_flight
                    .or(file.max_in_flight)
                    .unwrap_or(defaults.max_in_flight),
                max_connections: args
                    .max_connections
                    .or(file.max_connections)
                    .unwrap_or(defaults.max_connections),
            },
            seed: args.seed.or(file.seed).unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            }),
            tls: tls.map(std::sync::Arc::new),
            snapshots,
        };
        if settings.election_timeout_ms == 0
            || settings.fetch_timeout_ms == 0
            || settings.request_timeout_ms == 0
        {
            return Err(usage("timeouts must be positive"));
        }
        if settings.limits.max_frame_bytes < 64
            || settings.limits.max_in_flight == 0
            || settings.limits.max_connections == 0
        {
            return Err(usage(
                "max_frame_bytes must be at least 64, max_in_flight and max_connections at least 1",
            ));
        }
        parse_host_port(&settings.listener)?;
        if let Some(a) = &settings.advertised {
            parse_host_port(a)?;
        }
        Ok(settings)
    }
}

/// The core's snapshot settings: own snapshots on, as every Kafka controller takes them.
fn snapshot_config(s: &SnapshotSettings) -> crate::node::SnapshotConfig {
    crate::node::SnapshotConfig {
        enabled: true,
        max_record_bytes_between_snapshots: s.max_record_bytes_between_snapshots.max(1) as u64,
        max_snapshot_interval_ms: s.max_snapshot_interval_ms.max(0) as u64,
        max_retention_bytes: s.max_retention_bytes,
        max_retention_ms: s.max_retention_ms,
        fetch_snapshot_max_bytes: s.fetch_snapshot_max_bytes,
        ..Default::default()
    }
}

/// Opens the data directory, recovers the log and starts serving.
pub async fn start_node(
    settings: &NodeSettings,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Running, Failure> {
    let data = DataDir::new(&settings.data_dir);
    let meta = data.open(settings.node_id, settings.cluster_id.as_deref())?;
    let bootstrap = data.read_bootstrap()?;
    if bootstrap == crate::node::Bootstrap::NoInitialVoters && settings.bootstrap_servers.is_empty()
    {
        // Kafka: "Missing kraft bootstrap servers. Must specify a value for
        // controller.quorum.bootstrap.servers."
        return Err(usage(format!(
            "{} was formatted with --no-initial-controllers: --bootstrap-servers (or bootstrap_servers in \
             --config) is required to find the quorum",
            settings.data_dir.display()
        )));
    }
    // Kafka's start-up of the metadata log: snapshots checked, leftovers deleted, the log truncated fully
    // to a snapshot newer than it.
    let log =
        MetadataLog::open_with_segment_bytes(&data.log_dir(), settings.snapshots.segment_bytes)?;
    let snapshots = log.snapshots().iter().map(|s| s.meta()).collect();
    let view = log
        .load_view()
        .map_err(|e| Failure::new(EXIT_STORAGE, e.to_string()))?;
    let state = read_quorum_state(&data.quorum_state_path())?;
    let (host, port) = parse_host_port(&settings.listener)?;
    let (adv_host, adv_port) = match &settings.advertised {
        Some(a) => parse_host_port(a)?,
        None => (host.clone(), port),
    };
    let config = NodeConfig {
        cluster_id: meta.cluster_id.clone(),
        node_id: meta.node_id,
        directory_id: meta.directory_id,
        listeners: vec![Endpoint {
            name: settings.listener_name.clone(),
            host: adv_host.clone(),
            port: adv_port,
        }],
        bootstrap,
        bootstrap_servers: settings.bootstrap_servers.clone(),
        election_timeout_ms: settings.election_timeout_ms,
        fetch_timeout_ms: settings.fetch_timeout_ms,
        fetch_interval_ms: settings.fetch_interval_ms,
        fetch_max_wait_ms: crate::node::FETCH_MAX_WAIT_MS,
        check_quorum_timeout_ms: settings.fetch_timeout_ms * 3 / 2,
        request_timeout_ms: settings.request_timeout_ms,
        observer_expiry_ms: 300_000,
        seed: settings.seed ^ (meta.node_id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        snapshots: snapshot_config(&settings.snapshots),
    };
    let node = Node::with_snapshots(config, view, state, snapshots)
        .map_err(|e| Failure::new(EXIT_STORAGE, e.to_string()))?;
    let listener = TcpListener::bind((host.as_str(), port))
        .await
        .map_err(|e| {
            Failure::new(
                EXIT_NODE_FAILED,
                format!("cannot listen on {}: {e}", settings.listener),
            )
        })?;
    tracing::info!(
        node_id = meta.node_id,
        cluster_id = %meta.cluster_id,
        directory_id = %format_directory_id(meta.directory_id),
        listener = %settings.listener,
        tls = settings.tls.is_some(),
        "node starting"
    );
    let broker = BrokerInfo {
        node_id: meta.node_id,
        host: adv_host,
        port: adv_port,
        cluster_id: meta.cluster_id,
    };
    server::serve(
        node,
        log,
        data.quorum_state_path(),
        listener,
        broker,
        settings.limits.clone(),
        LinkConfig::default(),
        settings.tls.clone(),
        shutdown,
    )
    .await
    .map_err(|e| Failure::new(EXIT_NODE_FAILED, e.to_string()))
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            tracing::warn!("cannot watch SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::new(EXIT_NODE_FAILED, format!("cannot start the runtime: {e}")))
}

async fn wait(running: Running) -> Result<(), Failure> {
    match running.task.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Failure::new(EXIT_NODE_FAILED, e.to_string())),
        Err(e) => Err(Failure::new(
            EXIT_NODE_FAILED,
            format!("node task failed: {e}"),
        )),
    }
}

pub fn node(args: NodeArgs) -> Result<(), Failure> {
    let settings = NodeSettings::resolve(args)?;
    runtime()?.block_on(async {
        let running = start_node(&settings, stop_signal()).await?;
        let result = wait(running).await;
        tracing::info!("node stopped");
        result
    })
}

pub fn cluster(args: ClusterArgs) -> Result<(), Failure> {
    if !(1..=9).contains(&args.nodes) {
        return Err(usage("--nodes must be between 1 and 9"));
    }
    if u32::from(args.base_port) + args.nodes as u32 > 65_536 {
        return Err(usage("--base-port too high for that many nodes"));
    }
    let port = |i: i32| args.base_port + (i - 1) as u16;
    let dir = |i: i32| args.dir.join(format!("node-{i}"));
    // Existing directories keep their identity; new ones get fresh directory ids.
    let mut ids = Vec::new();
    for i in 1..=args.nodes {
        let data = DataDir::new(dir(i));
        let id = if data.is_formatted() {
            MetaProperties::read(&data.meta_path())?.directory_id
        } else {
            new_directory_id()
        };
        ids.push(id);
    }
    let initial = (1..=args.nodes)
        .map(|i| {
            format!(
                "{i}@127.0.0.1:{}:{}",
                port(i),
                format_directory_id(ids[(i - 1) as usize])
            )
        })
        .collect::<Vec<_>>()
        .join(",");
    let voters = parse_initial_controllers(&initial)?;
    for i in 1..=args.nodes {
        format_dir(&dir(i), &args.cluster_id, i, Some(&voters), None, true)?;
    }
    let tls = if args.tls {
        let ids: Vec<i32> = (1..=args.nodes).collect();
        let files = super::certs::write_cluster_tls(&args.dir.join("tls"), &ids).map_err(|e| {
            Failure::new(
                EXIT_STORAGE,
                format!("{}: {e}", args.dir.join("tls").display()),
            )
        })?;
        Some(files)
    } else {
        None
    };
    runtime()?.block_on(async {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut nodes = Vec::new();
        for i in 1..=args.nodes {
            let mut settings = NodeSettings::resolve(NodeArgs {
                data_dir: Some(dir(i)),
                listener: Some(format!("127.0.0.1:{}", port(i))),
                ..NodeArgs::default()
            })?;
            if let Some(files) = &tls {
                settings.tls = Tls::for_node(&files.node_properties(i))?.map(std::sync::Arc::new);
            }
            let mut stop = stop_rx.clone();
            let running = start_node(&settings, async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await?;
            nodes.push((i, running));
        }
        let mut leader = None;
        tokio::select! {
            _ = async {
                loop {
                    if let Some(l) = nodes.iter().find_map(|(_, r)| r.status.borrow().leader_id) {
                        leader = Some(l);
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            } => {}
            _ = stop_signal() => {}
        }
        if let Some(leader) = leader {
            for (i, _) in &nodes {
                let role = if *i == leader { " (leader)" } else { "" };
                out!("node {i} listening on 127.0.0.1:{}{role}", port(*i));
            }
            if let Some(files) = &tls {
                out!(
                    "mutual TLS: admin clients use --command-config {}",
                    files.admin_config.display()
                );
            }
            out!("cluster {} is up; press Ctrl-C to stop", args.cluster_id);
            stop_signal().await;
        }
        let _ = stop_tx.send(true);
        let mut result = Ok(());
        for (_, running) in nodes {
            if let Err(e) = wait(running).await {
                result = Err(e);
            }
        }
        out!("cluster stopped");
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_controllers_parse_and_refuse_bad_input() {
        let set = parse_initial_controllers(
            "1@localhost:9093:ILZ5MPTeRWakmJu99uBJCA,2@127.0.0.1:9094:AAAAAAAAAAAAAAAAAAAAZA",
        )
        .unwrap();
        assert_eq!(set.len(), 2);
        let v1 = set.voter(1).unwrap();
        assert_eq!(
            v1.listeners[0],
            Endpoint {
                name: "CONTROLLER".into(),
                host: "localhost".into(),
                port: 9093
            }
        );
        assert_eq!(
            format_directory_id(v1.key.directory_id.unwrap()),
            "ILZ5MPTeRWakmJu99uBJCA"
        );
        for bad in [
            "",
            "1localhost:9093:ILZ5MPTeRWakmJu99uBJCA",
            "x@localhost:9093:ILZ5MPTeRWakmJu99uBJCA",
            "1@localhost:99999:ILZ5MPTeRWakmJu99uBJCA",
            "1@localhost:9093:AAAAAAAAAAAAAAAAAAAAAA",
            // Kafka's reserved ids: msb 0 and lsb < 100 (signed), e.g. 1, 99 and lsb 2^63.
            "1@localhost:9093:AAAAAAAAAAAAAAAAAAAAAQ",
            "1@localhost:9093:AAAAAAAAAAAAAAAAAAAAYw",
            "1@localhost:9093:AAAAAAAAAACAAAAAAAAAAA",
            "1@localhost:9093",
            "1@h:1:ILZ5MPTeRWakmJu99uBJCA,1@h:2:AAAAAAAAAAAAAAAAAAAAZA",
        ] {
            assert!(
                parse_initial_controllers(bad).is_err(),
                "{bad:?} must be refused"
            );
        }
    }

    #[test]
    fn format_writes_identity_and_refuses_a_second_format() {
        let dir = tempfile::tempdir().unwrap();
        let voters = parse_initial_controllers("1@127.0.0.1:9001:AAAAAAAAAAAAAAAAAAAAZA").unwrap();
        let meta = format_dir(dir.path(), "c", 1, Some(&voters), None, false).unwrap();
        assert_eq!(meta.directory_id, Uuid::from_u128(100));
        assert_eq!(
            DataDir::new(dir.path()).open(Some(1), Some("c")).unwrap(),
            meta
        );
        assert_eq!(
            format_dir(dir.path(), "c", 1, Some(&voters), None, false)
                .unwrap_err()
                .code,
            EXIT_STORAGE
        );
        assert_eq!(
            format_dir(dir.path(), "c", 1, Some(&voters), None, true).unwrap(),
            meta
        );
        assert_eq!(
            format_dir(dir.path(), "other", 1, Some(&voters), None, true)
                .unwrap_err()
                .code,
            EXIT_STORAGE
        );
        // An observer gets a fresh directory id.
        let other = tempfile::tempdir().unwrap();
        let observer = format_dir(other.path(), "c", 4, Some(&voters), None, false).unwrap();
        assert!(!is_reserved_directory_id(observer.directory_id));
        // A reserved --directory-id is refused, and nothing is written.
        let third = tempfile::tempdir().unwrap();
        let err = format_dir(
            third.path(),
            "c",
            5,
            Some(&voters),
            Some(Uuid::from_u128(7)),
            false,
        )
        .unwrap_err();
        assert_eq!(err.code, EXIT_USAGE, "{}", err.message);
        assert!(err.message.contains("reserved"), "{}", err.message);
        assert!(!DataDir::new(third.path()).is_formatted());
    }

    #[test]
    fn no_initial_controllers_format_and_bootstrap_servers() {
        let dir = tempfile::tempdir().unwrap();
        let meta = format_dir(dir.path(), "c", 4, None, None, false).unwrap();
        assert!(!is_reserved_directory_id(meta.directory_id));
        let data = DataDir::new(dir.path());
        assert_eq!(
            crate::storage::read_bootstrap(&data.bootstrap_file()).unwrap(),
            crate::node::Bootstrap::NoInitialVoters
        );
        // Kafka 4.0's layout: no bootstrap snapshot, its metadata.version bootstrap beside meta.properties.
        std::fs::remove_file(data.bootstrap_path()).unwrap();
        assert!(data.read_bootstrap().is_err());
        std::fs::write(dir.path().join("bootstrap.checkpoint"), b"").unwrap();
        assert_eq!(
            data.read_bootstrap().unwrap(),
            crate::node::Bootstrap::NoInitialVoters
        );
        assert_eq!(
            parse_bootstrap_servers(" 127.0.0.1:9091, [::1]:9092 ,").unwrap(),
            vec![
                Endpoint {
                    name: LISTENER_NAME.into(),
                    host: "127.0.0.1".into(),
                    port: 9091
                },
                Endpoint {
                    name: LISTENER_NAME.into(),
                    host: "::1".into(),
                    port: 9092
                }
            ]
        );
        assert!(parse_bootstrap_servers("127.0.0.1").is_err());
        // Without bootstrap servers the quorum cannot be found: refused, as Kafka refuses to start.
        let err = start_refused(dir.path(), "no bootstrap servers must be refused");
        assert_eq!(err.code, EXIT_USAGE, "{}", err.message);
        assert!(
            err.message.contains("--bootstrap-servers"),
            "{}",
            err.message
        );
    }

    /// Starts a node on `dir` (listener on an ephemeral port) and returns the error it must refuse with.
    fn start_refused(dir: &Path, why: &str) -> Failure {
        let settings = NodeSettings::resolve(NodeArgs {
            data_dir: Some(dir.to_path_buf()),
            listener: Some("127.0.0.1:0".into()),
            ..NodeArgs::default()
        })
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(start_node(&settings, std::future::pending()))
            .err()
            .expect(why)
    }

    #[test]
    fn a_node_refuses_a_directory_with_a_reserved_id() {
        // As Kafka's controller does ("Invalid reserved directory ID ... found in ..."), e.g. on a directory
        // Kafka's storage tool formatted with such an id in --initial-controllers (it does not refuse it).
        let dir = tempfile::tempdir().unwrap();
        let voters = parse_initial_controllers("1@127.0.0.1:9001:AAAAAAAAAAAAAAAAAAAAZA").unwrap();
        format_dir(dir.path(), "c", 1, Some(&voters), None, false).unwrap();
        let data = DataDir::new(dir.path());
        let text = std::fs::read_to_string(data.meta_path()).unwrap();
        std::fs::write(
            data.meta_path(),
            text.replace("AAAAAAAAAAAAAAAAAAAAZA", "AAAAAAAAAAAAAAAAAAAAAg"),
        )
        .unwrap();
        let err = start_refused(dir.path(), "a reserved directory id must be refused");
        assert_eq!(err.code, EXIT_STORAGE, "{}", err.message);
        assert!(
            err.message
                .contains("invalid reserved directory id AAAAAAAAAAAAAAAAAAAAAg"),
            "{}",
            err.message
        );
        // `kraft format --ignore-formatted` on it is refused too (Kafka's format verifies the existing one).
        assert!(format_dir(dir.path(), "c", 1, Some(&voters), None, true).is_err());
    }

    #[test]
    fn config_file_and_flags_merge() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node.toml");
        std::fs::write(
            &path,
            "data_dir = \"/tmp/x\"\nlistener = \"127.0.0.1:1\"\nelection_timeout_ms = 77\n",
        )
        .unwrap();
        let s = NodeSettings::resolve(NodeArgs {
            config: Some(path.clone()),
            listener: Some("127.0.0.1:2".into()),
            ..NodeArgs::default()
        })
        .unwrap();
        assert_eq!(
            (s.listener.as_str(), s.election_timeout_ms),
            ("127.0.0.1:2", 77)
        );
        std::fs::write(&path, "data_dir = \"/tmp/x\"\nlistner = \"typo\"\n").unwrap();
        let err = NodeSettings::resolve(NodeArgs {
            config: Some(path),
            ..NodeArgs::default()
        })
        .unwrap_err();
        assert_eq!(err.code, EXIT_STORAGE);
    }

    #[test]
    fn tls_keys_in_the_config_file_as_kafka_names_them() {
        let dir = tempfile::tempdir().unwrap();
        let files = crate::cli::certs::write_cluster_tls(&dir.path().join("tls"), &[1]).unwrap();
        let path = dir.path().join("node.toml");
        std::fs::write(
            &path,
            format!(
                "data_dir = \"/tmp/x\"\nlistener = \"127.0.0.1:1\"\n\
                 security.protocol = \"SSL\"\nssl.keystore.type = \"PEM\"\n\
                 ssl.keystore.location = \"{}\"\nssl.truststore.location = \"{}\"\n\
                 ssl.client.auth = \"required\"\n\
                 controller.principal.template = \"CN=kraft-node-{{id}}\"\n\
                 super.users = \"User:CN=kraft-admin\"\n\
                 controller.quorum.fetch.snapshot.max.bytes = 4096\n",
                files.keystore(1).display(),
                files.ca().display()
            ),
        )
        .unwrap();
        let args = || NodeArgs {
            config: Some(path.clone()),
            ..NodeArgs::default()
        };
        let settings = NodeSettings::resolve(args()).unwrap();
        assert_eq!(settings.snapshots.fetch_snapshot_max_bytes, 4096);
        let tls = settings.tls.unwrap();
        assert_eq!(tls.client_auth, crate::server::tls::ClientAuth::Required);
        assert!(tls.identities.proves("CN=kraft-node-2", 2));
        assert_eq!(tls.super_users, ["CN=kraft-admin"]);
        // A flag wins over the file: PLAINTEXT with ssl.* keys set is refused, not silently plaintext.
        let err = NodeSettings::resolve(NodeArgs {
            security_protocol: Some("PLAINTEXT".into()),
            ..args()
        })
        .unwrap_err();
        assert_eq!(err.code, EXIT_STORAGE, "{}", err.message);
    }

    #[test]
    fn snapshot_keys_in_the_config_file_as_kafka_names_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node.toml");
        std::fs::write(
            &path,
            "data_dir = \"/tmp/x\"\nlistener = \"127.0.0.1:1\"\n\
             metadata.log.max.snapshot.interval.ms = 1000\n\
             metadata.log.max.record.bytes.between.snapshots = 1\n\
             metadata.max.retention.bytes = 2048\n",
        )
        .unwrap();
        let args = || NodeArgs {
            config: Some(path.clone()),
            ..NodeArgs::default()
        };
        let s = NodeSettings::resolve(NodeArgs {
            metadata_max_retention_ms: Some("-1".into()),
            metadata_max_retention_bytes: Some("4096".into()),
            ..args()
        })
        .unwrap()
        .snapshots;
        assert_eq!(
            s,
            SnapshotSettings {
                max_record_bytes_between_snapshots: 1,
                max_snapshot_interval_ms: 1000,
                max_retention_bytes: 4096,
                max_retention_ms: -1,
                ..SnapshotSettings::default()
            }
        );
        // Kafka's ranges: no snapshot trigger of 0 bytes; an unknown metadata key is refused.
        let err = NodeSettings::resolve(NodeArgs {
            metadata_log_max_record_bytes_between_snapshots: Some("0".into()),
            ..args()
        })
        .unwrap_err();
        assert_eq!(err.code, EXIT_USAGE, "{}", err.message);
        std::fs::write(&path, "metadata.log.max.snapshot.intervl.ms = 1\n").unwrap();
        assert!(NodeSettings::resolve(args()).is_err());
    }
}
