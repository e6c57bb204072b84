//! A Kafka controller's `controller.properties` (Java properties, read by [`super::properties`]) turned
//! into a node's settings, so `kraft format --config` and `kraft node --config` take the file a Kafka 4.x
//! controller takes. Keys read: [`IDENTITY_KEYS`], [`TIMEOUT_KEYS`], the TLS keys of `server::tls`
//! (also under Kafka's listener prefix `listener.name.<listener>.`) and the snapshot keys of
//! `snapshot_settings` and ours, [`METRICS_LISTENER`]. Every other key is returned in [`ControllerProperties::unused`].

use std::path::{Path, PathBuf};

use crate::server::sasl;
use crate::server::tls::{self, Properties};

use super::{snapshot_settings, static_voters, Failure, EXIT_STORAGE};
use crate::voter_set::VoterSet;

pub const PROCESS_ROLES: &str = "process.roles";
pub const NODE_ID: &str = "node.id";
pub const CONTROLLER_LISTENER_NAMES: &str = "controller.listener.names";
pub const LISTENERS: &str = "listeners";
pub const ADVERTISED_LISTENERS: &str = "advertised.listeners";
pub const SECURITY_PROTOCOL_MAP: &str = "listener.security.protocol.map";
pub const BOOTSTRAP_SERVERS: &str = "controller.quorum.bootstrap.servers";
pub const VOTERS: &str = "controller.quorum.voters";
pub const LOG_DIRS: &str = "log.dirs";
pub const METADATA_LOG_DIR: &str = "metadata.log.dir";
pub const ELECTION_TIMEOUT_MS: &str = "controller.quorum.election.timeout.ms";
pub const FETCH_TIMEOUT_MS: &str = "controller.quorum.fetch.timeout.ms";
pub const REQUEST_TIMEOUT_MS: &str = "controller.quorum.request.timeout.ms";
/// KIP-1186: an observer adds itself as a voter (`node/auto_join.rs`); `true` or `false`.
pub const AUTO_JOIN_ENABLE: &str = "controller.quorum.auto.join.enable";
/// Ours (Kafka exports its metrics over JMX): `HOST:PORT` of the Prometheus listener (`crate::metrics`).
pub const METRICS_LISTENER: &str = "kraft.metrics.listener";

/// The identity and listener keys.
pub const IDENTITY_KEYS: [&str; 10] = [
    PROCESS_ROLES,
    NODE_ID,
    CONTROLLER_LISTENER_NAMES,
    LISTENERS,
    ADVERTISED_LISTENERS,
    SECURITY_PROTOCOL_MAP,
    BOOTSTRAP_SERVERS,
    VOTERS,
    LOG_DIRS,
    METADATA_LOG_DIR,
];

/// The `controller.quorum.*` timeouts this node has (Kafka's other ones, e.g. `retry.backoff.ms`, are
/// listed as unused).
pub const TIMEOUT_KEYS: [&str; 3] = [ELECTION_TIMEOUT_MS, FETCH_TIMEOUT_MS, REQUEST_TIMEOUT_MS];

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ControllerConfigError {
    #[error("{key}={value}: {reason}")]
    BadValue {
        key: &'static str,
        value: String,
        reason: String,
    },
    #[error("{key} is required: {reason}")]
    Missing {
        key: &'static str,
        reason: &'static str,
    },
}

/// One `NAME://HOST:PORT` entry of `listeners` or `advertised.listeners` (host empty: all interfaces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerAddress {
    pub name: String,
    pub host: String,
    pub port: u16,
}

impl ListenerAddress {
    pub fn host_port(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// What a controller's properties say about this node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControllerProperties {
    pub node_id: Option<i32>,
    /// `metadata.log.dir`, else the first of `log.dirs` (where Kafka keeps the metadata log).
    pub data_dir: Option<PathBuf>,
    /// The first of `controller.listener.names`.
    pub listener_name: String,
    /// `HOST:PORT` to bind (`0.0.0.0` for an empty host).
    pub listener: Option<String>,
    /// `HOST:PORT` to advertise: `advertised.listeners`' entry, else `listeners`' when it has a host.
    pub advertised: Option<String>,
    /// `controller.quorum.bootstrap.servers`, else the endpoints of `controller.quorum.voters`.
    pub bootstrap_servers: Option<String>,
    /// `controller.quorum.voters` (static voters, kraft.version 0) on this node's listener, when set; it
    /// lists `node.id` (Kafka's rule for a controller).
    pub static_voters: Option<VoterSet>,
    pub election_timeout_ms: Option<u64>,
    pub fetch_timeout_ms: Option<u64>,
    pub request_timeout_ms: Option<u64>,
    /// `controller.quorum.auto.join.enable`.
    pub auto_join: Option<bool>,
    /// `kraft.metrics.listener`.
    pub metrics_listener: Option<String>,
    /// The TLS keys, with `security.protocol` from `listener.security.protocol.map`.
    pub tls: Properties,
    /// The snapshot and retention keys.
    pub snapshots: Properties,
    /// The SASL keys (`sasl.*`, and the listener's `listener.name.<listener>.` ones as written), read by
    /// `server::sasl::listener`.
    pub sasl: Properties,
    /// Keys this node does not read, sorted.
    pub unused: Vec<String>,
}

fn bad(key: &'static str, value: &str, reason: impl Into<String>) -> ControllerConfigError {
    ControllerConfigError::BadValue {
        key,
        value: value.to_string(),
        reason: reason.into(),
    }
}

fn list(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// Parses `NAME://HOST:PORT,...` (Kafka's listener list).
pub fn parse_listeners(
    key: &'static str,
    value: &str,
) -> Result<Vec<ListenerAddress>, ControllerConfigError> {
    list(value)
        .map(|item| {
            let (name, rest) = item
                .split_once("://")
                .ok_or_else(|| bad(key, value, format!("{item:?} is not NAME://HOST:PORT")))?;
            let (host, port) = rest
                .rsplit_once(':')
                .ok_or_else(|| bad(key, value, format!("{item:?} has no port")))?;
            let port = port
                .parse::<u16>()
                .map_err(|_| bad(key, value, format!("bad port in {item:?}")))?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if name.is_empty() {
                return Err(bad(key, value, format!("{item:?} has no listener name")));
            }
            Ok(ListenerAddress {
                name: name.to_string(),
                host: host.to_string(),
                port,
            })
        })
        .collect()
}

fn millis(props: &Properties, key: &'static str) -> Result<Option<u64>, ControllerConfigError> {
    props
        .get(key)
        .map(|v| {
            v.trim()
                .parse::<u64>()
                .ok()
                .filter(|ms| *ms > 0 && *ms <= i32::MAX as u64)
                .ok_or_else(|| bad(key, v, "not a positive int"))
        })
        .transpose()
}

/// A boolean key: `true` or `false` (any case), as Kafka's `ConfigDef` reads one.
fn boolean(props: &Properties, key: &'static str) -> Result<Option<bool>, ControllerConfigError> {
    props
        .get(key)
        .map(|v| match v.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(bad(key, v, "not true or false")),
        })
        .transpose()
}

/// The security protocol of listener `name`: its entry in `listener.security.protocol.map`, else the
/// name itself when it is a protocol, else PLAINTEXT (Kafka's rule for controller listeners when the map is
/// not set).
fn security_protocol(props: &Properties, name: &str) -> Result<String, ControllerConfigError> {
    let protocol = match props.get(SECURITY_PROTOCOL_MAP) {
        Some(map) => list(map)
            .find_map(|e| {
                e.split_once(':')
                    .filter(|(n, _)| *n == name)
                    .map(|(_, p)| p)
            })
            .map(str::to_string)
            .ok_or_else(|| bad(SECURITY_PROTOCOL_MAP, map, format!("no entry for {name}")))?,
        None if ["SSL", "SASL_PLAINTEXT", "SASL_SSL"].contains(&name) => name.to_string(),
        None => "PLAINTEXT".to_string(),
    };
    match protocol.as_str() {
        "PLAINTEXT" | "SSL" | "SASL_PLAINTEXT" | "SASL_SSL" => Ok(protocol),
        _ => Err(bad(
            SECURITY_PROTOCOL_MAP,
            props.get(SECURITY_PROTOCOL_MAP).map_or(name, |s| s),
            format!("{protocol} is not a security protocol"),
        )),
    }
}

/// Reads and parses a controller's properties file; an error names the file and the key.
pub fn read(path: &Path) -> Result<ControllerProperties, Failure> {
    let props = super::properties::read(path)?;
    ControllerProperties::parse(&props)
        .map_err(|e| Failure::new(EXIT_STORAGE, format!("{}: {e}", path.display())))
}

impl ControllerProperties {
    /// Reads a controller's properties; a bad value is an error naming its key.
    pub fn parse(props: &Properties) -> Result<ControllerProperties, ControllerConfigError> {
        let roles = props
            .get(PROCESS_ROLES)
            .ok_or(ControllerConfigError::Missing {
                key: PROCESS_ROLES,
                reason: "this node runs as process.roles=controller",
            })?;
        if list(roles).collect::<Vec<_>>() != ["controller"] {
            return Err(bad(
                PROCESS_ROLES,
                roles,
                "this node is a controller only (process.roles=controller)",
            ));
        }
        let node_id = props
            .get(NODE_ID)
            .map(|v| {
                v.trim()
                    .parse::<i32>()
                    .ok()
                    .filter(|id| *id >= 0)
                    .ok_or_else(|| bad(NODE_ID, v, "not a non-negative int"))
            })
            .transpose()?;
        let names = props
            .get(CONTROLLER_LISTENER_NAMES)
            .ok_or(ControllerConfigError::Missing {
                key: CONTROLLER_LISTENER_NAMES,
                reason: "it names the listener in `listeners` this node serves",
            })?;
        let listener_name = list(names)
            .next()
            .ok_or_else(|| bad(CONTROLLER_LISTENER_NAMES, names, "empty"))?
            .to_string();
        let find = |key: &'static str| -> Result<Option<ListenerAddress>, ControllerConfigError> {
            match props.get(key) {
                None => Ok(None),
                Some(v) => Ok(parse_listeners(key, v)?
                    .into_iter()
                    .find(|l| l.name == listener_name)),
            }
        };
        let bind = find(LISTENERS)?;
        let advertised = match find(ADVERTISED_LISTENERS)? {
            Some(a) if a.host.is_empty() => {
                return Err(bad(
                    ADVERTISED_LISTENERS,
                    &props[ADVERTISED_LISTENERS],
                    "the controller listener has no host",
                ))
            }
            Some(a) => Some(a.host_port()),
            None => bind
                .as_ref()
                .filter(|b| !b.host.is_empty())
                .map(|b| b.host_port()),
        };
        if props.contains_key(LISTENERS) && bind.is_none() {
            return Err(bad(
                LISTENERS,
                &props[LISTENERS],
                format!("no listener named {listener_name} (controller.listener.names)"),
            ));
        }
        let listener = bind.map(|b| {
            let host = if b.host.is_empty() {
                "0.0.0.0"
            } else {
                &b.host
            };
            ListenerAddress {
                host: host.to_string(),
                ..b
            }
            .host_port()
        });
        let static_voters = props
            .get(VOTERS)
            .filter(|v| !v.trim().is_empty())
            .map(|v| {
                let set = static_voters::parse(v, &listener_name)
                    .map_err(|e| bad(VOTERS, v, e.to_string()))?;
                if let Some(id) = node_id {
                    static_voters::check_member(&set, id)
                        .map_err(|e| bad(VOTERS, v, e.to_string()))?;
                }
                Ok(set)
            })
            .transpose()?;
        let bootstrap_servers = match (props.get(BOOTSTRAP_SERVERS), &static_voters) {
            (Some(b), _) => Some(b.clone()),
            (None, Some(set)) => Some(
                set.nodes()
                    .flat_map(|v| v.listeners.first())
                    .map(|e| {
                        ListenerAddress {
                            name: e.name.clone(),
                            host: e.host.clone(),
                            port: e.port,
                        }
                        .host_port()
                    })
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            (None, None) => None,
        };
        let data_dir = props
            .get(METADATA_LOG_DIR)
            .map(|d| d.trim().to_string())
            .or_else(|| {
                props
                    .get(LOG_DIRS)
                    .and_then(|d| list(d).next().map(str::to_string))
            })
            .filter(|d| !d.is_empty())
            .map(PathBuf::from);
        let mut tls_props = Properties::new();
        let prefix = format!("listener.name.{}.", listener_name.to_lowercase());
        for (key, value) in props {
            if tls::KEYS.contains(&key.as_str()) || key.starts_with(tls::PRINCIPALS_PREFIX) {
                tls_props.insert(key.clone(), value.clone());
            }
        }
        // Listener-prefixed keys win, as in Kafka.
        for (key, value) in props {
            if let Some(k) = key.strip_prefix(&prefix) {
                if tls::KEYS.contains(&k) {
                    tls_props.insert(k.to_string(), value.clone());
                }
            }
        }
        tls_props.insert(
            "security.protocol".into(),
            security_protocol(props, &listener_name)?,
        );
        let snapshots: Properties = props
            .iter()
            .filter(|(k, _)| snapshot_settings::KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let sasl: Properties = props
            .iter()
            .filter(|(k, _)| sasl::listener::is_sasl_key(k, &listener_name))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let used = |key: &str| {
            sasl.contains_key(key)
                || IDENTITY_KEYS.contains(&key)
                || TIMEOUT_KEYS.contains(&key)
                || key == AUTO_JOIN_ENABLE
                || key == METRICS_LISTENER
                || snapshot_settings::KEYS.contains(&key)
                || tls::KEYS.contains(&key)
                || key.starts_with(tls::PRINCIPALS_PREFIX)
                || key
                    .strip_prefix(&prefix)
                    .is_some_and(|k| tls::KEYS.contains(&k))
        };
        let mut unused: Vec<String> = props.keys().filter(|k| !used(k)).cloned().collect();
        unused.sort();
        Ok(ControllerProperties {
            node_id,
            data_dir,
            listener_name,
            listener,
            advertised,
            bootstrap_servers,
            static_voters,
            election_timeout_ms: millis(props, ELECTION_TIMEOUT_MS)?,
            fetch_timeout_ms: millis(props, FETCH_TIMEOUT_MS)?,
            request_timeout_ms: millis(props, REQUEST_TIMEOUT_MS)?,
            auto_join: boolean(props, AUTO_JOIN_ENABLE)?,
            metrics_listener: props.get(METRICS_LISTENER).map(|v| v.trim().to_string()),
            tls: tls_props,
            snapshots,
            sasl,
            unused,
        })
    }

    /// The one start-up line naming the keys this node does not read (none: `None`).
    pub fn unused_line(&self) -> Option<String> {
        (!self.unused.is_empty()).then(|| {
            format!(
                "{} key(s) of the controller properties are not used by this node: {}",
                self.unused.len(),
                self.unused.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::properties::parse;

    /// A file as `java.util.Properties.store` writes it (the Kafka suite's harness writes these).
    const STORED: &str = "#Apache Kafka controller 1\n#Sat Dec 05 17:00:00 UTC 2026\n\
        controller.listener.names=CONTROLLER\n\
        controller.quorum.bootstrap.servers=127.0.0.1\\:38639,127.0.0.1\\:38640\n\
        listener.security.protocol.map=CONTROLLER\\:PLAINTEXT\n\
        listeners=CONTROLLER\\://127.0.0.1\\:38639\n\
        log.dirs=/tmp/k/controller-1\n\
        metadata.max.idle.interval.ms=0\n\
        node.id=1\n\
        process.roles=controller\n\
        controller.quorum.election.timeout.ms=3000\n\
        metadata.log.max.snapshot.interval.ms=1000\n";

    #[test]
    fn a_stored_kafka_controller_file() {
        let c = ControllerProperties::parse(&parse(STORED).unwrap()).unwrap();
        assert_eq!(c.node_id, Some(1));
        assert_eq!(c.data_dir, Some(PathBuf::from("/tmp/k/controller-1")));
        assert_eq!(c.listener_name, "CONTROLLER");
        assert_eq!(c.listener.as_deref(), Some("127.0.0.1:38639"));
        assert_eq!(c.advertised.as_deref(), Some("127.0.0.1:38639"));
        assert_eq!(
            c.bootstrap_servers.as_deref(),
            Some("127.0.0.1:38639,127.0.0.1:38640")
        );
        assert_eq!(c.election_timeout_ms, Some(3000));
        assert_eq!(c.fetch_timeout_ms, None);
        assert_eq!(c.tls["security.protocol"], "PLAINTEXT");
        assert_eq!(
            c.snapshots[snapshot_settings::MAX_SNAPSHOT_INTERVAL_MS],
            "1000"
        );
        assert_eq!(c.unused, vec!["metadata.max.idle.interval.ms".to_string()]);
        assert!(c
            .unused_line()
            .unwrap()
            .contains("metadata.max.idle.interval.ms"));
    }

    #[test]
    fn metadata_log_dir_wins_and_advertised_listener_and_bind_all() {
        let c = ControllerProperties::parse(
            &parse(
                "process.roles = controller\nnode.id: 7\ncontroller.listener.names=CTL,OTHER\n\
                 listeners=CTL://:9093,OTHER://h:1\nadvertised.listeners=CTL://c7.example:9093\n\
                 listener.security.protocol.map=CTL:SSL,OTHER:PLAINTEXT\n\
                 log.dirs=/a,/b\nmetadata.log.dir=/m\n\
                 listener.name.ctl.ssl.keystore.location=/k.pem\nssl.keystore.location=/other.pem\n\
                 controller.quorum.voters=1@h1:9093,7@c7.example:9093\n",
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(c.data_dir, Some(PathBuf::from("/m")));
        assert_eq!(c.listener_name, "CTL");
        assert_eq!(c.listener.as_deref(), Some("0.0.0.0:9093"));
        assert_eq!(c.advertised.as_deref(), Some("c7.example:9093"));
        assert_eq!(c.tls["security.protocol"], "SSL");
        assert_eq!(c.tls["ssl.keystore.location"], "/k.pem");
        let voters = c.static_voters.as_ref().unwrap();
        assert_eq!(voters.ids().collect::<Vec<_>>(), [1, 7]);
        assert_eq!(voters.voter(7).unwrap().listeners[0].name, "CTL");
        assert_eq!(
            c.bootstrap_servers.as_deref(),
            Some("h1:9093,c7.example:9093")
        );
        assert!(c.unused.is_empty(), "{:?}", c.unused);
    }

    #[test]
    fn auto_join_is_read() {
        let read = |text: &str| ControllerProperties::parse(&parse(text).unwrap()).unwrap();
        let base = "process.roles=controller\ncontroller.listener.names=CONTROLLER\n";
        assert_eq!(read(base).auto_join, None);
        let on = read(&format!("{base}controller.quorum.auto.join.enable=TRUE\n"));
        assert_eq!((on.auto_join, on.unused.len()), (Some(true), 0));
        let off = read(&format!("{base}controller.quorum.auto.join.enable=false\n"));
        assert_eq!(off.auto_join, Some(false));
    }

    #[test]
    fn metrics_listener_is_read() {
        let read = |text: &str| ControllerProperties::parse(&parse(text).unwrap()).unwrap();
        let base = "process.roles=controller\ncontroller.listener.names=CONTROLLER\n";
        assert_eq!(read(base).metrics_listener, None);
        let on = read(&format!("{base}kraft.metrics.listener=127.0.0.1:9404\n"));
        assert_eq!(on.metrics_listener.as_deref(), Some("127.0.0.1:9404"));
        assert!(on.unused.is_empty(), "{:?}", on.unused);
    }

    #[test]
    fn bad_values_name_their_key() {
        let base = "process.roles=controller\ncontroller.listener.names=CONTROLLER\n";
        let err = |extra: &str| {
            ControllerProperties::parse(&parse(&format!("{base}{extra}")).unwrap()).unwrap_err()
        };
        let key_of = |e: ControllerConfigError| match e {
            ControllerConfigError::BadValue { key, .. }
            | ControllerConfigError::Missing { key, .. } => key,
        };
        assert_eq!(key_of(err("node.id=one\n")), NODE_ID);
        assert_eq!(key_of(err("node.id=-1\n")), NODE_ID);
        assert_eq!(key_of(err("listeners=CONTROLLER://h\n")), LISTENERS);
        assert_eq!(key_of(err("listeners=PLAIN://h:1\n")), LISTENERS);
        assert_eq!(
            key_of(err("controller.quorum.fetch.timeout.ms=soon\n")),
            FETCH_TIMEOUT_MS
        );
        assert_eq!(key_of(err("controller.quorum.voters=1@h\n")), VOTERS);
        assert_eq!(
            key_of(err("controller.quorum.voters=1@0.0.0.0:1\n")),
            VOTERS
        );
        assert_eq!(
            key_of(err("controller.quorum.voters=1@h:1,1@h:2\n")),
            VOTERS
        );
        // Kafka's rule: a controller is one of the static voters.
        let e = err("node.id=4\ncontroller.quorum.voters=1@h:1,2@h:2\n");
        assert!(e.to_string().contains("node id 4 must be included"), "{e}");
        assert_eq!(key_of(e), VOTERS);
        assert_eq!(
            key_of(err("controller.quorum.auto.join.enable=yes\n")),
            AUTO_JOIN_ENABLE
        );
        assert_eq!(
            key_of(err("listener.security.protocol.map=CONTROLLER:SASL_SSH\n")),
            SECURITY_PROTOCOL_MAP
        );
        let e = ControllerProperties::parse(
            &parse("process.roles=broker,controller\ncontroller.listener.names=C\n").unwrap(),
        )
        .unwrap_err();
        assert_eq!(key_of(e.clone()), PROCESS_ROLES);
        assert!(e
            .to_string()
            .starts_with("process.roles=broker,controller: "));
        assert_eq!(
            key_of(ControllerProperties::parse(&parse("node.id=1\n").unwrap()).unwrap_err()),
            PROCESS_ROLES
        );
    }
}
