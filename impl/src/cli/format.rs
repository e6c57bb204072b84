//! `kraft format`: a data directory's identity and bootstrap checkpoint, as `kafka-storage format` writes
//! them, and the parsers of the endpoints and controllers it is given.

use std::path::Path;

use uuid::Uuid;

use super::{Failure, FormatArgs, EXIT_STORAGE, EXIT_USAGE};
use crate::storage::{
    format_directory_id, is_reserved_directory_id, new_directory_id, parse_directory_id,
    write_bootstrap_snapshot, write_static_bootstrap_snapshot, DataDir, MetaProperties,
};
use crate::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};

/// The listener name this node uses for its one listener.
pub const LISTENER_NAME: &str = "CONTROLLER";

pub(crate) fn usage(message: impl Into<String>) -> Failure {
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
    let listed = voters
        .and_then(|v| v.voter(node_id))
        .and_then(|v| v.key.directory_id);
    let identity = Identity {
        cluster_id,
        node_id,
        listed,
        directory_id,
        ignore_formatted,
    };
    identity.write(dir, |path| write_bootstrap_snapshot(path, voters))
}

/// [`format_dir`] for static voters (Kafka's `controller.quorum.voters`): kraft.version 0, no voter set
/// in the bootstrap snapshot, a fresh directory id unless one is given.
pub fn format_static_dir(
    dir: &Path,
    cluster_id: &str,
    node_id: i32,
    directory_id: Option<Uuid>,
    ignore_formatted: bool,
) -> Result<MetaProperties, Failure> {
    let identity = Identity {
        cluster_id,
        node_id,
        listed: None,
        directory_id,
        ignore_formatted,
    };
    identity.write(dir, write_static_bootstrap_snapshot)
}

/// What `meta.properties` will say, and the directory id the voter list gives this node, if any.
struct Identity<'a> {
    cluster_id: &'a str,
    node_id: i32,
    listed: Option<Uuid>,
    directory_id: Option<Uuid>,
    ignore_formatted: bool,
}

impl Identity<'_> {
    fn write(
        &self,
        dir: &Path,
        bootstrap: impl FnOnce(&Path) -> Result<(), crate::storage::StorageError>,
    ) -> Result<MetaProperties, Failure> {
        let (cluster_id, node_id) = (self.cluster_id, self.node_id);
        if cluster_id.is_empty() {
            return Err(usage("--cluster-id must not be empty"));
        }
        if node_id < 0 {
            return Err(usage("--node-id must be non-negative"));
        }
        let data = DataDir::new(dir);
        if data.is_formatted() {
            let existing = MetaProperties::read(&data.meta_path())?;
            if self.ignore_formatted
                && existing.cluster_id == cluster_id
                && existing.node_id == node_id
            {
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
        let directory_id = match (self.listed, self.directory_id) {
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
        bootstrap(&data.bootstrap_path())?;
        // meta.properties last: its presence means "formatted".
        meta.write(&data.meta_path())?;
        Ok(meta)
    }
}

pub fn format(args: &FormatArgs) -> Result<(), Failure> {
    let kafka = args
        .config
        .as_deref()
        .map(super::controller_properties::read)
        .transpose()?;
    let name = kafka.as_ref().map_or(LISTENER_NAME, |k| &k.listener_name);
    let static_voters = match &args.voters {
        Some(list) => Some(
            super::static_voters::parse(list, name).map_err(|e| usage(format!("--voters: {e}")))?,
        ),
        None => kafka.as_ref().and_then(|k| k.static_voters.clone()),
    };
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
    if let Some(set) = &static_voters {
        return format_static(args, set, &data_dir, node_id, directory_id);
    }
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
            "give exactly one of --standalone, --initial-controllers and --no-initial-controllers \
             (or static voters: --voters, or controller.quorum.voters in --config)",
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

/// `kraft format` with static voters, as `kafka-storage format` with `controller.quorum.voters`: kraft.version
/// 0, `--no-initial-controllers` allowed and changing nothing, `--standalone` and `--initial-controllers`
/// refused with Kafka's message, the node one of the voters.
fn format_static(
    args: &FormatArgs,
    voters: &VoterSet,
    data_dir: &Path,
    node_id: i32,
    directory_id: Option<Uuid>,
) -> Result<(), Failure> {
    if args.standalone || args.initial_controllers.is_some() {
        return Err(usage(
            "You cannot specify controller.quorum.voters and format the node with --initial-controllers \
             or --standalone. If you want to use dynamic quorum, please remove controller.quorum.voters \
             and specify controller.quorum.bootstrap.servers instead.",
        ));
    }
    super::static_voters::check_member(voters, node_id)
        .map_err(|e| usage(format!("controller.quorum.voters: {e}")))?;
    let meta = format_static_dir(
        data_dir,
        &args.cluster_id,
        node_id,
        directory_id,
        args.ignore_formatted,
    )?;
    out!(
        "Formatted {} for cluster {} as node {} (static voter, kraft.version 0), directory id {}, \
         static voters {:?}",
        data_dir.display(),
        meta.cluster_id,
        meta.node_id,
        format_directory_id(meta.directory_id),
        voters.ids().collect::<Vec<_>>()
    );
    Ok(())
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
    fn static_voters_format_kraft_version_0() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d");
        let args = |voters: &str| FormatArgs {
            config: None,
            data_dir: Some(data.clone()),
            cluster_id: "c".into(),
            node_id: Some(2),
            initial_controllers: None,
            no_initial_controllers: false,
            standalone: false,
            voters: Some(voters.into()),
            directory_id: None,
            ignore_formatted: false,
        };
        // Kafka's rule: the node is one of the voters; nothing is written otherwise.
        let err = format(&args("1@h:1,3@h:3")).unwrap_err();
        assert_eq!(err.code, EXIT_USAGE);
        assert!(
            err.message.contains("node id 2 must be included"),
            "{}",
            err.message
        );
        assert!(!DataDir::new(&data).is_formatted());
        let err = format(&args("1@h")).unwrap_err();
        assert!(err.message.starts_with("--voters: "), "{}", err.message);
        // --no-initial-controllers changes nothing, as in Kafka's storage tool.
        format(&FormatArgs {
            no_initial_controllers: true,
            ..args("1@h:1,2@h:2,3@h:3")
        })
        .unwrap();
        let d = DataDir::new(&data);
        assert!(!is_reserved_directory_id(
            d.open(Some(2), Some("c")).unwrap().directory_id
        ));
        assert_eq!(
            d.read_bootstrap().unwrap(),
            crate::node::Bootstrap::Static(VoterSet::empty())
        );
        // Kafka's refusal of a dynamic flag beside static voters.
        let err = format(&FormatArgs {
            standalone: true,
            data_dir: Some(dir.path().join("e")),
            ..args("1@h:1,2@h:2")
        })
        .unwrap_err();
        assert!(err
            .message
            .starts_with("You cannot specify controller.quorum.voters"));
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
}
