//! `meta.properties` (the data directory's identity) and the bootstrap snapshot written by `kraft format`
//! (Kafka's `00000000000000000000-0000000000.checkpoint`; the older `bootstrap.checkpoint` is still read).

use std::path::Path;

use bytes::Bytes;
use uuid::Uuid;

use super::{write_atomically, StorageError, BOOTSTRAP_FILE};
use crate::log::Record;
use crate::node::Bootstrap;
use crate::records;
use crate::voter_set::VoterSet;

/// Identity of a data directory, like Kafka's `meta.properties` (version 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaProperties {
    pub cluster_id: String,
    pub node_id: i32,
    pub directory_id: Uuid,
}

impl MetaProperties {
    pub fn to_properties(&self) -> String {
        format!(
            "#\n# written by kraft format\nversion=1\ncluster.id={}\nnode.id={}\ndirectory.id={}\n",
            self.cluster_id,
            self.node_id,
            format_directory_id(self.directory_id)
        )
    }

    pub fn parse(text: &str) -> Result<MetaProperties, String> {
        let (mut version, mut cluster_id, mut node_id, mut directory_id) = (None, None, None, None);
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| format!("line {}: expected key=value", number + 1))?;
            let value = value.trim();
            match key.trim() {
                "version" => version = Some(value.to_string()),
                "cluster.id" => cluster_id = Some(value.to_string()),
                "node.id" => {
                    node_id = Some(
                        value
                            .parse::<i32>()
                            .ok()
                            .filter(|id| *id >= 0)
                            .ok_or_else(|| {
                                format!("node.id {value:?} is not a non-negative int")
                            })?,
                    )
                }
                "directory.id" => directory_id = Some(parse_directory_id(value)?),
                _ => {} // Kafka tolerates other keys too.
            }
        }
        if version.as_deref() != Some("1") {
            return Err(format!("unsupported version {version:?}, expected 1"));
        }
        let cluster_id = cluster_id
            .filter(|c| !c.is_empty())
            .ok_or("missing cluster.id")?;
        let node_id = node_id.ok_or("missing node.id")?;
        let directory_id = directory_id.ok_or("missing directory.id")?;
        Ok(MetaProperties {
            cluster_id,
            node_id,
            directory_id,
        })
    }

    /// Reads and checks `meta.properties`. Like Kafka's `MetaPropertiesEnsemble.verify`, a reserved
    /// directory id ([`is_reserved_directory_id`]) is refused: "Invalid reserved directory ID ... found in".
    pub fn read(path: &Path) -> Result<MetaProperties, StorageError> {
        let text = std::fs::read_to_string(path).map_err(|source| StorageError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let meta = MetaProperties::parse(&text).map_err(|reason| StorageError::Corrupt {
            path: path.to_path_buf(),
            reason,
        })?;
        if is_reserved_directory_id(meta.directory_id) {
            return Err(StorageError::ReservedDirectoryId {
                path: path.to_path_buf(),
                id: format_directory_id(meta.directory_id),
            });
        }
        Ok(meta)
    }

    pub fn write(&self, path: &Path) -> Result<(), StorageError> {
        write_atomically(path, self.to_properties().as_bytes())
    }
}

/// Kafka's `DirectoryId.reserved` (4.4.0, read in the jar's bytecode): the most significant 64 bits are 0
/// and the least significant 64, as a *signed* long, are below 100. Kafka reserves them for UNASSIGNED (0),
/// LOST (1), MIGRATING (2) and future markers; the zero UUID is one of them.
pub fn is_reserved_directory_id(id: Uuid) -> bool {
    let (msb, lsb) = id.as_u64_pair();
    msb == 0 && (lsb as i64) < 100
}

/// A fresh directory id as Kafka's `MetaPropertiesEnsemble.Copier.generateValidDirectoryId` makes one: random,
/// not reserved, and whose string form does not start with '-' (which command lines would take for an option).
pub fn new_directory_id() -> Uuid {
    loop {
        let id = Uuid::new_v4();
        if !is_reserved_directory_id(id) && !format_directory_id(id).starts_with('-') {
            return id;
        }
    }
}

/// Kafka's `Uuid.toString`: URL-safe base64 of the 16 bytes, no padding (22 characters).
pub fn format_directory_id(id: Uuid) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = id.as_bytes();
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Parses a directory id in Kafka's base64 form (22 characters) or as a hyphenated UUID.
pub fn parse_directory_id(text: &str) -> Result<Uuid, String> {
    if let Ok(uuid) = Uuid::parse_str(text) {
        return Ok(uuid);
    }
    let bad = || format!("{text:?} is not a directory id (22-character base64url or UUID)");
    if text.len() != 22 {
        return Err(bad());
    }
    let mut n: u128 = 0;
    for (i, c) in text.bytes().enumerate() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return Err(bad()),
        };
        if i == 21 {
            // The last character carries 2 bits; the 4 padding bits must be zero (canonical form).
            if v & 0xf != 0 {
                return Err(bad());
            }
            n = (n << 2) | u128::from(v >> 4);
        } else {
            n = (n << 6) | u128::from(v);
        }
    }
    Ok(Uuid::from_u128(n))
}

/// Writes the bootstrap snapshot Kafka's `kafka-storage format --initial-controllers` writes (header,
/// KRaftVersion(1), Voters, footer; no metadata records), atomically, stamped with the current time.
pub fn write_bootstrap(path: &Path, voters: &VoterSet) -> Result<(), StorageError> {
    write_bootstrap_snapshot(path, Some(voters))
}

/// As [`write_bootstrap`]; `None` writes what `kafka-storage format --no-initial-controllers` writes
/// (KRaftVersion(1), no voter set), read back as [`Bootstrap::NoInitialVoters`].
pub fn write_bootstrap_snapshot(
    path: &Path,
    voters: Option<&VoterSet>,
) -> Result<(), StorageError> {
    write_encoded_bootstrap(path, |now_ms| match voters {
        Some(voters) => records::encode_bootstrap_snapshot(voters, now_ms),
        None => records::encode_bootstrap_snapshot_without_voters(now_ms),
    })
}

/// Writes the bootstrap snapshot Kafka's `kafka-storage format` writes with `controller.quorum.voters` set
/// (kraft.version 0: no KRaftVersion record, no voter set; no metadata records), read back as
/// [`Bootstrap::Static`] with an empty set: the voters are configured, not formatted.
pub fn write_static_bootstrap_snapshot(path: &Path) -> Result<(), StorageError> {
    write_encoded_bootstrap(path, records::encode_static_bootstrap_snapshot)
}

/// Writes the bootstrap snapshot `encode` makes, stamped with the current time (its header's
/// LastContainedLogTimestamp, as Kafka's storage tool stamps it).
fn write_encoded_bootstrap(
    path: &Path,
    encode: impl FnOnce(i64) -> Result<Bytes, records::RecordsError>,
) -> Result<(), StorageError> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let bytes = encode(now_ms).map_err(|e| StorageError::Corrupt {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    write_atomically(path, &bytes)
}

/// Reads a bootstrap file (CRC checked): the voter set at offset −1 with `kraft.version` 1,
/// [`Bootstrap::NoInitialVoters`] for a snapshot with `kraft.version` 1 and no voter set (Kafka's
/// `--no-initial-controllers`), or [`Bootstrap::Static`] with an empty set for one with neither
/// (`kraft.version` 0: static voters, whose set the caller takes from the configuration). A file named
/// `bootstrap.checkpoint` is the one control batch {KRaftVersion(1), Voters} older `kraft format` wrote;
/// any other is a Kafka snapshot (Kafka's storage tool or `kraft format`), whose metadata records are
/// skipped.
pub fn read_bootstrap(path: &Path) -> Result<Bootstrap, StorageError> {
    let bytes = std::fs::read(path).map_err(|source| StorageError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let corrupt = |reason: String| StorageError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let (version, voters) = if path.file_name() == Some(std::ffi::OsStr::new(BOOTSTRAP_FILE)) {
        let batches =
            records::decode_batches(Bytes::from(bytes)).map_err(|e| corrupt(e.to_string()))?;
        let (mut version, mut voters) = (None, None);
        for record in batches.into_iter().flat_map(|b| b.records) {
            match record {
                Record::KRaftVersion(v) => version = Some(v),
                Record::Voters(set) => voters = Some(set),
                other => return Err(corrupt(format!("unexpected record {other:?}"))),
            }
        }
        (version, voters)
    } else {
        let snapshot =
            records::decode_snapshot(Bytes::from(bytes)).map_err(|e| corrupt(e.to_string()))?;
        (snapshot.kraft_version, snapshot.voters)
    };
    match (version, voters) {
        (Some(1), Some(set)) => Ok(Bootstrap::Checkpoint(set)),
        (Some(1), None) if path.file_name() != Some(std::ffi::OsStr::new(BOOTSTRAP_FILE)) => {
            Ok(Bootstrap::NoInitialVoters)
        }
        // kraft.version 0 (no KRaftVersion record) and no voter set: a static quorum's directory
        // (Kafka's storage tool with `controller.quorum.voters`); the voters come from the configuration.
        (None, None) if path.file_name() != Some(std::ffi::OsStr::new(BOOTSTRAP_FILE)) => {
            Ok(Bootstrap::Static(VoterSet::empty()))
        }
        (version, voters) => Err(corrupt(format!(
            "expected kraft.version 1 and a voter set, found version {version:?}, voters present: {}",
            voters.is_some()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode};
    use proptest::prelude::*;

    #[test]
    fn kafka_uuid_strings() {
        // Kafka prints the zero UUID as 22 'A's; Uuid.fromString("ILZ5MPTeRWakmJu99uBJCA") round-trips.
        assert_eq!(format_directory_id(Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
        let id = parse_directory_id("ILZ5MPTeRWakmJu99uBJCA").unwrap();
        assert_eq!(format_directory_id(id), "ILZ5MPTeRWakmJu99uBJCA");
        assert_eq!(id.as_bytes()[0], 0x20);
        assert!(parse_directory_id("ILZ5MPTeRWakmJu99uBJC!").is_err());
        assert!(parse_directory_id("ILZ5MPTeRWakmJu99uBJCB").is_err()); // non-canonical tail bits
        assert!(parse_directory_id("short").is_err());
    }

    proptest! {
        #[test]
        fn directory_id_round_trip(n in any::<u128>()) {
            let id = Uuid::from_u128(n);
            let text = format_directory_id(id);
            prop_assert_eq!(text.len(), 22);
            prop_assert_eq!(parse_directory_id(&text).unwrap(), id);
        }
    }

    #[test]
    fn meta_properties_round_trip_and_errors() {
        let meta = MetaProperties {
            cluster_id: "c1".into(),
            node_id: 3,
            directory_id: Uuid::from_u128(9),
        };
        assert_eq!(MetaProperties::parse(&meta.to_properties()).unwrap(), meta);
        assert!(MetaProperties::parse(
            "version=1\ncluster.id=c\nnode.id=-1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAQ"
        )
        .unwrap_err()
        .contains("node.id"));
        assert!(MetaProperties::parse(
            "version=0\ncluster.id=c\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAQ"
        )
        .is_err());
        assert!(
            MetaProperties::parse("version=1\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAQ")
                .is_err()
        );
        assert!(MetaProperties::parse("garbage").is_err());
    }

    #[test]
    fn reserved_directory_ids_as_kafka_defines_them() {
        for reserved in [0u128, 1, 2, 99, u128::from(u64::MAX), 1 << 63] {
            // msb 0 and lsb < 100 as a signed long: 0..=99 and every lsb with the top bit set.
            assert!(
                is_reserved_directory_id(Uuid::from_u128(reserved)),
                "{reserved:#x}"
            );
        }
        for free in [100u128, 0x1000, (1 << 64) | 1, u128::MAX] {
            assert!(
                !is_reserved_directory_id(Uuid::from_u128(free)),
                "{free:#x}"
            );
        }
        for _ in 0..200 {
            let id = new_directory_id();
            assert!(!is_reserved_directory_id(id) && !format_directory_id(id).starts_with('-'));
        }
    }

    #[test]
    fn meta_properties_with_a_reserved_directory_id_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.properties");
        for text in [
            "AAAAAAAAAAAAAAAAAAAAAA",
            "AAAAAAAAAAAAAAAAAAAAAQ",
            "AAAAAAAAAAAAAAAAAAAAYw",
        ] {
            std::fs::write(
                &path,
                format!("version=1\ncluster.id=c\nnode.id=1\ndirectory.id={text}\n"),
            )
            .unwrap();
            match MetaProperties::read(&path) {
                Err(StorageError::ReservedDirectoryId { id, .. }) => assert_eq!(id, text),
                other => panic!("{text}: {other:?}"),
            }
        }
        // 100 is the first free id.
        std::fs::write(
            &path,
            "version=1\ncluster.id=c\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAZA\n",
        )
        .unwrap();
        assert_eq!(
            MetaProperties::read(&path).unwrap().directory_id,
            Uuid::from_u128(100)
        );
    }

    #[test]
    fn bootstrap_round_trip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(records::BOOTSTRAP_SNAPSHOT_FILE);
        let set = VoterSet::new([VoterNode {
            key: ReplicaKey::new(1, Uuid::from_u128(1)),
            listeners: vec![Endpoint {
                name: "CONTROLLER".into(),
                host: "127.0.0.1".into(),
                port: 9093,
            }],
            supported: SupportedVersions { min: 0, max: 1 },
        }])
        .unwrap();
        write_bootstrap(&path, &set).unwrap();
        assert_eq!(
            read_bootstrap(&path).unwrap(),
            Bootstrap::Checkpoint(set.clone())
        );
        // The control batch older `kraft format` wrote as bootstrap.checkpoint is still read.
        let legacy = dir.path().join(BOOTSTRAP_FILE);
        let batch = crate::log::Batch {
            base_offset: 0,
            epoch: 0,
            append_time: 0,
            records: vec![Record::KRaftVersion(1), Record::Voters(set.clone())],
        };
        std::fs::write(&legacy, records::encode_batches(&[batch]).unwrap()).unwrap();
        assert_eq!(
            read_bootstrap(&legacy).unwrap(),
            Bootstrap::Checkpoint(set.clone())
        );
        // The same bytes under Kafka's name are not a snapshot (no header).
        std::fs::copy(&legacy, &path).unwrap();
        assert!(matches!(
            read_bootstrap(&path),
            Err(StorageError::Corrupt { .. })
        ));
        // --no-initial-controllers: KRaftVersion(1) without voters.
        write_bootstrap_snapshot(&path, None).unwrap();
        assert_eq!(read_bootstrap(&path).unwrap(), Bootstrap::NoInitialVoters);
        write_bootstrap(&path, &set).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            read_bootstrap(&path),
            Err(StorageError::Corrupt { .. })
        ));
    }
}
