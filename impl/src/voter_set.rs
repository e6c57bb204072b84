//! Replica keys, voter nodes and voter sets (KIP-853), with Kafka's add/remove/update rules.

use uuid::Uuid;

/// A replica's identity: node id plus an optional directory id. `None` is written as the zero UUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ReplicaKey {
    pub id: i32,
    pub directory_id: Option<Uuid>,
}

/// One listener endpoint of a voter. The first listener of a voter is its default listener.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
}

/// Supported `kraft.version` range of a voter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SupportedVersions {
    pub min: i16,
    pub max: i16,
}

/// A voter: key, listener endpoints, supported `kraft.version` range.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct VoterNode {
    pub key: ReplicaKey,
    pub listeners: Vec<Endpoint>,
    pub supported: SupportedVersions,
}

/// A non-empty set of voters with unique ids, ordered by id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct VoterSet {
    voters: std::collections::BTreeMap<i32, VoterNode>,
}
