//! Static voters (`controller.quorum.voters`, kraft.version 0), as Kafka 4.x configures them: the parser of
//! the list (Kafka's `QuorumConfig.parseVoterConnections`), the rule that a controller is in it, and how
//! the configured set and the bootstrap snapshot on disk combine into the node's [`Bootstrap`].

use crate::node::Bootstrap;
use crate::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};

/// Why a list of static voters, or its combination with a data directory, is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StaticVotersError {
    #[error(
        "entry {entry:?}: {reason}; each entry should be in the form {{id}}@{{host}}:{{port}}"
    )]
    BadEntry { entry: String, reason: &'static str },
    #[error("node id {id} is listed twice")]
    Duplicate { id: i32 },
    #[error("the list is empty")]
    Empty,
    /// Kafka's `KafkaConfig` rule for a controller.
    #[error(
        "the node id {node_id} must be included in the set of voters (process.roles contains the \
         'controller' role); the voters are {ids:?}"
    )]
    NotAVoter { node_id: i32, ids: Vec<i32> },
    #[error(
        "the directory was formatted with static voters (kraft.version 0, no voter set): \
         controller.quorum.voters (--voters) is required, or controller.quorum.bootstrap.servers \
         (--bootstrap-servers) to run as an observer"
    )]
    Missing,
    #[error(
        "the directory was formatted for a dynamic quorum without initial voters (kraft.version 1, \
         --no-initial-controllers) but controller.quorum.voters (--voters) is set: remove it and set \
         controller.quorum.bootstrap.servers"
    )]
    DynamicWithoutVoters,
}

/// Parses `ID@HOST:PORT,...` into a static voter set on listener `listener_name`: no directory ids,
/// kraft.version range [0, 0] (Kafka's `VoterSet.fromInetSocketAddresses`). As Kafka: the host must be
/// routable (not `0.0.0.0`); unlike Kafka, an id listed twice is refused rather than the last entry
/// taken (`impl/KAFKA-DIFFERENCES.md`).
pub fn parse(text: &str, listener_name: &str) -> Result<VoterSet, StaticVotersError> {
    let mut voters: Vec<VoterNode> = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = |reason| StaticVotersError::BadEntry {
            entry: entry.to_string(),
            reason,
        };
        let (id, address) = match entry.split('@').collect::<Vec<_>>().as_slice() {
            [id, address] => (*id, *address),
            _ => return Err(bad("not one '@'")),
        };
        let id = id
            .parse::<i32>()
            .ok()
            .filter(|id| *id >= 0)
            .ok_or_else(|| bad("the voter id is not a non-negative integer"))?;
        let (host, port) = address.rsplit_once(':').ok_or_else(|| bad("no port"))?;
        let port = port.parse::<u16>().map_err(|_| bad("bad port"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty()
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
        {
            return Err(bad("bad host name"));
        }
        if host == "0.0.0.0" {
            return Err(bad("the host is not routable"));
        }
        if voters.iter().any(|v| v.key.id == id) {
            return Err(StaticVotersError::Duplicate { id });
        }
        voters.push(VoterNode {
            key: ReplicaKey::without_directory(id),
            listeners: vec![Endpoint {
                name: listener_name.to_string(),
                host: host.to_string(),
                port,
            }],
            supported: SupportedVersions::STATIC,
        });
    }
    if voters.is_empty() {
        return Err(StaticVotersError::Empty);
    }
    VoterSet::new(voters).map_err(|_| StaticVotersError::Empty)
}

/// Kafka's rule for a controller with static voters: its own id is one of them.
pub fn check_member(voters: &VoterSet, node_id: i32) -> Result<(), StaticVotersError> {
    if voters.contains_id(node_id) {
        return Ok(());
    }
    Err(StaticVotersError::NotAVoter {
        node_id,
        ids: voters.ids().collect(),
    })
}

/// The node's first voter set from the bootstrap snapshot on disk (`disk`, as `DataDir::read_bootstrap`
/// reads it) and the configured static voters, as Kafka's `KafkaRaftClient` combines them: a voter set on
/// disk (kraft.version 1) wins and the static list is ignored (Kafka's
/// `testStaticVotersIgnoredWithBootstrapSnapshot`); a directory without one (kraft.version 0) takes the
/// configured set, or, with none configured, starts as an observer found through its bootstrap servers.
pub fn resolve(
    disk: Bootstrap,
    configured: Option<&VoterSet>,
    has_bootstrap_servers: bool,
) -> Result<Bootstrap, StaticVotersError> {
    match (disk, configured) {
        (Bootstrap::Checkpoint(set), _) => Ok(Bootstrap::Checkpoint(set)),
        (Bootstrap::NoInitialVoters, None) => Ok(Bootstrap::NoInitialVoters),
        (Bootstrap::NoInitialVoters, Some(_)) => Err(StaticVotersError::DynamicWithoutVoters),
        (Bootstrap::Static(_), Some(set)) => Ok(Bootstrap::Static(set.clone())),
        (Bootstrap::Static(_), None) if has_bootstrap_servers => Ok(Bootstrap::NoInitialVoters),
        (Bootstrap::Static(_), None) => Err(StaticVotersError::Missing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kafka_lists_and_refuses_bad_entries() {
        let set = parse("1@127.0.0.1:9001, 2@[::1]:9002,3@c3.example:9003", "CTL").unwrap();
        assert_eq!(set.ids().collect::<Vec<_>>(), [1, 2, 3]);
        let v2 = set.voter(2).unwrap();
        assert_eq!(v2.key, ReplicaKey::without_directory(2));
        assert_eq!(v2.supported, SupportedVersions::STATIC);
        assert_eq!(
            v2.listeners,
            [Endpoint {
                name: "CTL".into(),
                host: "::1".into(),
                port: 9002
            }]
        );
        for bad in [
            "1@h",
            "1h:1",
            "1@h@h:1",
            "x@h:1",
            "-1@h:1",
            "1@h:99999",
            "1@:1",
            "1@h h:1",
            "1@0.0.0.0:1",
        ] {
            assert!(
                matches!(parse(bad, "C"), Err(StaticVotersError::BadEntry { .. })),
                "{bad:?} must be refused"
            );
        }
        assert_eq!(
            parse("1@h:1,1@h:2", "C"),
            Err(StaticVotersError::Duplicate { id: 1 })
        );
        assert_eq!(parse(" , ", "C"), Err(StaticVotersError::Empty));
    }

    #[test]
    fn a_controller_must_be_listed() {
        let set = parse("1@h:1,2@h:2", "C").unwrap();
        assert!(check_member(&set, 2).is_ok());
        let err = check_member(&set, 4).unwrap_err();
        assert_eq!(
            err,
            StaticVotersError::NotAVoter {
                node_id: 4,
                ids: vec![1, 2]
            }
        );
        assert!(err.to_string().contains("node id 4 must be included"));
    }

    #[test]
    fn disk_and_configuration_combine_as_in_kafka() {
        let configured = parse("1@h:1,2@h:2,3@h:3", "C").unwrap();
        let formatted = crate::cli::format::parse_initial_controllers(
            "1@h:1:AAAAAAAAAAAAAAAAAAAAZA,2@h:2:AAAAAAAAAAAAAAAAAAAAZQ",
        )
        .unwrap();
        let on_disk = || Bootstrap::Static(VoterSet::empty());
        // A static directory takes the configured set.
        assert_eq!(
            resolve(on_disk(), Some(&configured), false),
            Ok(Bootstrap::Static(configured.clone()))
        );
        // A voter set on disk wins over the configured one.
        assert_eq!(
            resolve(
                Bootstrap::Checkpoint(formatted.clone()),
                Some(&configured),
                false
            ),
            Ok(Bootstrap::Checkpoint(formatted))
        );
        // Without static voters: an observer through its bootstrap servers, else refused.
        assert_eq!(
            resolve(on_disk(), None, true),
            Ok(Bootstrap::NoInitialVoters)
        );
        assert_eq!(
            resolve(on_disk(), None, false),
            Err(StaticVotersError::Missing)
        );
        assert_eq!(
            resolve(Bootstrap::NoInitialVoters, Some(&configured), true),
            Err(StaticVotersError::DynamicWithoutVoters)
        );
        assert_eq!(
            resolve(Bootstrap::NoInitialVoters, None, true),
            Ok(Bootstrap::NoInitialVoters)
        );
    }
}
