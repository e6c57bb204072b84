//! `kraft node`'s settings: the flags merged over a TOML file or a Kafka controller properties file.

use std::path::PathBuf;
use std::time::Duration;

use super::format::{parse_bootstrap_servers_on, parse_host_port, usage, LISTENER_NAME};
use super::snapshot_settings::{self, SnapshotSettings};
use super::{Failure, NodeArgs, EXIT_STORAGE};
use crate::server::sasl::listener::ListenerSasl;
use crate::server::tls::{Properties, Tls};
use crate::server::Limits;
use crate::voter_set::{Endpoint, VoterSet};

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
    /// Kafka's `controller.quorum.voters` (`--voters`): static voters on this node's listener name, for a
    /// directory formatted with them (`static_voters::resolve`).
    pub static_voters: Option<VoterSet>,
    pub node_id: Option<i32>,
    pub cluster_id: Option<String>,
    pub election_timeout_ms: u64,
    pub fetch_timeout_ms: u64,
    pub fetch_interval_ms: u64,
    pub request_timeout_ms: u64,
    pub limits: Limits,
    pub seed: u64,
    /// See `NodeArgs::describe_quorum_forwarding`.
    pub describe_quorum_forwarding: bool,
    /// TLS on the listener and peer links (`security.protocol = "SSL"` and `ssl.*` keys, see
    /// `server::tls`); `None`: plaintext.
    pub tls: Option<std::sync::Arc<Tls>>,
    /// SASL on the listener and the links (`SASL_PLAINTEXT`/`SASL_SSL`, from a Kafka controller
    /// properties file, see `server::sasl::listener`); `None`: no SASL.
    pub sasl: Option<std::sync::Arc<ListenerSasl>>,
    /// Kafka's snapshot and retention properties.
    pub snapshots: SnapshotSettings,
    /// Kafka's `controller.quorum.auto.join.enable` (KIP-1186): as an observer, add itself as a voter.
    pub auto_join: bool,
    /// HOST:PORT of the metrics listener (`crate::metrics::http`); `None`: off.
    pub metrics_listener: Option<String>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    data_dir: Option<PathBuf>,
    listener: Option<String>,
    bootstrap_servers: Option<String>,
    voters: Option<String>,
    node_id: Option<i32>,
    cluster_id: Option<String>,
    election_timeout_ms: Option<u64>,
    fetch_timeout_ms: Option<u64>,
    fetch_interval_ms: Option<u64>,
    request_timeout_ms: Option<u64>,
    auto_join: Option<bool>,
    max_frame_bytes: Option<usize>,
    idle_timeout_ms: Option<u64>,
    frame_timeout_ms: Option<u64>,
    max_in_flight: Option<usize>,
    max_connections: Option<usize>,
    seed: Option<u64>,
    describe_quorum_forwarding: Option<bool>,
    metrics_listener: Option<String>,
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
    /// SASL keys of a Kafka controller properties file.
    #[serde(skip)]
    kafka_sasl: Properties,
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
                    auto_join: k.auto_join,
                    metrics_listener: k.metrics_listener.clone(),
                    kafka_tls: k.tls.clone(),
                    kafka_snapshots: k.snapshots.clone(),
                    kafka_sasl: k.sasl.clone(),
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
        let tls_properties = file.tls_properties(&args);
        let tls = Tls::for_node(&tls_properties)?;
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
        let static_voters = match args.voters.as_deref().or(file.voters.as_deref()) {
            Some(text) => Some(
                super::static_voters::parse(text, &listener_name)
                    .map_err(|e| usage(format!("--voters: {e}")))?,
            ),
            None => kafka.as_ref().and_then(|k| k.static_voters.clone()),
        };
        let mut sasl_properties = file.kafka_sasl.clone();
        if let Some(p) = tls_properties.get("security.protocol") {
            sasl_properties.insert("security.protocol".into(), p.clone());
        }
        let sasl = ListenerSasl::for_node(&sasl_properties, &listener_name)?;
        let settings = NodeSettings {
            sasl: sasl.map(std::sync::Arc::new),
            advertised,
            static_voters,
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
            describe_quorum_forwarding: args
                .describe_quorum_forwarding
                .or(file.describe_quorum_forwarding)
                .unwrap_or(true),
            tls: tls.map(std::sync::Arc::new),
            snapshots,
            auto_join: args.auto_join || file.auto_join.unwrap_or(false),
            metrics_listener: args.metrics_listener.or(file.metrics_listener),
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
        if let Some(m) = &settings.metrics_listener {
            parse_host_port(m)?;
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EXIT_USAGE;

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
