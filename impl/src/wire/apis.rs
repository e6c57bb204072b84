//! The one table of the APIs a node serves and their versions. The request decoder (`supports`), the
//! ApiVersions answer, the versions the node writes its own requests at (`max_version`) and the
//! conformance mapping all derive from it.

use kafka_protocol::messages::ApiKey;

/// An API this node serves: key and inclusive version range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServedApi {
    pub key: ApiKey,
    pub min: i16,
    pub max: i16,
}

const fn api(key: ApiKey, min: i16, max: i16) -> ServedApi {
    ServedApi { key, min, max }
}

/// Served APIs in api-key order. Fetch from v15 (replica id in ReplicaState; v17 adds the directory
/// id, v18 the follower's HW, KIP-1166), Vote with pre-vote (v2, KIP-996), Metadata as a minimal answer served by the shell, DescribeQuorum v3
/// with CommittedVoters (KIP-1204), DescribeCluster for controllers (KIP-919), AddRaftVoter v1 with
/// `AckWhenCommitted` (KIP-1186; decoded by `wire::add_raft_voter`, kafka-protocol 0.18 has v0 only),
/// FetchSnapshot v0–1 (KIP-630; v1 adds the directory id and NodeEndpoints, KIP-853), UpdateFeatures
/// v0–2 for `kraft.version` only (the static-to-dynamic upgrade, as Kafka 4.4's controllers serve it).
pub const SERVED_APIS: [ServedApi; 13] = [
    api(ApiKey::Fetch, 15, 18),
    api(ApiKey::Metadata, 0, 12),
    api(ApiKey::ApiVersions, 0, 4),
    api(ApiKey::Vote, 0, 2),
    api(ApiKey::BeginQuorumEpoch, 0, 1),
    api(ApiKey::EndQuorumEpoch, 0, 1),
    api(
        ApiKey::DescribeQuorum,
        0,
        super::describe_quorum::MAX_VERSION,
    ),
    api(ApiKey::UpdateFeatures, 0, 2),
    api(ApiKey::FetchSnapshot, 0, 1),
    api(ApiKey::DescribeCluster, 0, 2),
    api(ApiKey::AddRaftVoter, 0, 1),
    api(ApiKey::RemoveRaftVoter, 0, 0),
    api(ApiKey::UpdateRaftVoter, 0, 0),
];

/// The served entry of a raw api key, if it is served.
pub fn served(key: i16) -> Option<ServedApi> {
    SERVED_APIS.iter().copied().find(|a| a.key as i16 == key)
}

/// Does this node serve `key` at `version`?
pub fn supports(key: i16, version: i16) -> bool {
    served(key).is_some_and(|a| (a.min..=a.max).contains(&version))
}

/// The served APIs as an ApiVersions answer lists them.
pub fn api_versions() -> Vec<kafka_protocol::messages::api_versions_response::ApiVersion> {
    SERVED_APIS
        .iter()
        .map(|a| {
            kafka_protocol::messages::api_versions_response::ApiVersion::default()
                .with_api_key(a.key as i16)
                .with_min_version(a.min)
                .with_max_version(a.max)
        })
        .collect()
}

/// The highest version in both inclusive ranges, if they meet: the version a client sends when the server
/// lists `theirs` for an API of which it speaks `ours` (Kafka's `NetworkClient` rule).
pub fn common_version(theirs: (i16, i16), ours: (i16, i16)) -> Option<i16> {
    let max = theirs.1.min(ours.1);
    (max >= theirs.0.max(ours.0)).then_some(max)
}

/// The highest served version of `key` (what this node writes its own requests at); −1 if not served.
pub const fn max_version(key: ApiKey) -> i16 {
    let mut i = 0;
    while i < SERVED_APIS.len() {
        if SERVED_APIS[i].key as i16 == key as i16 {
            return SERVED_APIS[i].max;
        }
        i += 1;
    }
    -1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_consistent() {
        assert!(SERVED_APIS
            .windows(2)
            .all(|w| (w[0].key as i16) < (w[1].key as i16)));
        assert!(SERVED_APIS.iter().all(|a| a.min <= a.max));
        assert_eq!(max_version(ApiKey::Fetch), 18);
        assert_eq!(max_version(ApiKey::Vote), 2);
        assert_eq!(max_version(ApiKey::Produce), -1);
        assert!(supports(1, 15) && !supports(1, 14) && !supports(1, 19));
        assert!(!supports(999, 0));
        assert_eq!(common_version((4, 17), (15, 18)), Some(17));
        assert_eq!(common_version((0, 0), (0, 1)), Some(0));
        assert_eq!(common_version((4, 14), (15, 18)), None);
    }
}
