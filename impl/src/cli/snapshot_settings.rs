//! A node's snapshot settings under Kafka's property names, defaults and ranges (Apache Kafka 4.4.0
//! `MetadataLogConfig` and `QuorumConfig`, read with `javap`). In the `--config` TOML they are dotted keys
//! (`metadata.log.max.snapshot.interval.ms = 1000`); as flags, `--metadata.log.max.snapshot.interval.ms 1000`.
//! Flags win over the file.

use crate::server::tls::Properties;

pub const MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS: &str =
    "metadata.log.max.record.bytes.between.snapshots";
pub const MAX_SNAPSHOT_INTERVAL_MS: &str = "metadata.log.max.snapshot.interval.ms";
pub const MAX_RETENTION_BYTES: &str = "metadata.max.retention.bytes";
pub const MAX_RETENTION_MS: &str = "metadata.max.retention.ms";
pub const FETCH_SNAPSHOT_MAX_BYTES: &str = "controller.quorum.fetch.snapshot.max.bytes";
/// Kafka's testing-only segment size (no minimum), so a test sees segments deleted below the log start.
pub const INTERNAL_SEGMENT_BYTES: &str = "internal.metadata.log.segment.bytes";

/// Every key this module reads.
pub const KEYS: [&str; 6] = [
    MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
    MAX_SNAPSHOT_INTERVAL_MS,
    MAX_RETENTION_BYTES,
    MAX_RETENTION_MS,
    FETCH_SNAPSHOT_MAX_BYTES,
    INTERNAL_SEGMENT_BYTES,
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotSettings {
    /// Bytes appended since the latest snapshot that trigger the next one (Kafka: LONG, ≥ 1, 20 MiB).
    pub max_record_bytes_between_snapshots: i64,
    /// Time since the latest snapshot that triggers the next one; 0 turns it off (LONG, ≥ 0, 1 h).
    pub max_snapshot_interval_ms: i64,
    /// Retention by size of log + snapshots; negative turns it off (LONG, 100 MiB).
    pub max_retention_bytes: i64,
    /// Retention by time of a snapshot; negative turns it off (LONG, 7 d).
    pub max_retention_ms: i64,
    /// MaxBytes this replica puts in a FetchSnapshot (INT, ≥ 1, 1 MiB).
    pub fetch_snapshot_max_bytes: i32,
    /// A new log segment starts once the active one reaches this size (INT, ≥ 1; default 8 MiB,
    /// `storage::DEFAULT_SEGMENT_BYTES`, where Kafka's `metadata.log.segment.bytes` is 1 GiB).
    pub segment_bytes: u64,
}

impl Default for SnapshotSettings {
    fn default() -> Self {
        SnapshotSettings {
            max_record_bytes_between_snapshots: 20 * 1024 * 1024,
            max_snapshot_interval_ms: 60 * 60 * 1000,
            max_retention_bytes: 100 * 1024 * 1024,
            max_retention_ms: 7 * 24 * 60 * 60 * 1000,
            fetch_snapshot_max_bytes: 1024 * 1024,
            segment_bytes: crate::storage::DEFAULT_SEGMENT_BYTES,
        }
    }
}

impl SnapshotSettings {
    /// The settings of `props` (the file's dotted keys, then the flags' values, later ones winning), each
    /// checked against Kafka's type and range; an error names the key and the value.
    pub fn resolve<'a>(
        sources: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<SnapshotSettings, String> {
        let mut s = SnapshotSettings::default();
        for (key, value) in sources {
            let long = |min: Option<i64>| -> Result<i64, String> {
                let v: i64 = value
                    .trim()
                    .parse()
                    .map_err(|_| format!("{key}={value}: not a long"))?;
                match min {
                    Some(min) if v < min => Err(format!("{key}={value}: must be at least {min}")),
                    _ => Ok(v),
                }
            };
            match key {
                MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS => {
                    s.max_record_bytes_between_snapshots = long(Some(1))?
                }
                MAX_SNAPSHOT_INTERVAL_MS => s.max_snapshot_interval_ms = long(Some(0))?,
                MAX_RETENTION_BYTES => s.max_retention_bytes = long(None)?,
                MAX_RETENTION_MS => s.max_retention_ms = long(None)?,
                FETCH_SNAPSHOT_MAX_BYTES => {
                    s.fetch_snapshot_max_bytes = i32::try_from(long(Some(1))?)
                        .map_err(|_| format!("{key}={value}: not an int"))?
                }
                INTERNAL_SEGMENT_BYTES => {
                    s.segment_bytes = i32::try_from(long(Some(1))?)
                        .map_err(|_| format!("{key}={value}: not an int"))?
                        as u64
                }
                other => return Err(format!("{other}: unknown key")),
            }
        }
        Ok(s)
    }

    /// The snapshot keys among `props` (a TOML file's flattened tables), in key order.
    pub fn keys_of(props: &Properties) -> Vec<(&str, &str)> {
        props
            .iter()
            .filter(|(k, _)| {
                KEYS.contains(&k.as_str())
                    || k.starts_with("metadata.")
                    || k.starts_with("internal.")
            })
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_defaults_and_ranges() {
        assert_eq!(
            SnapshotSettings::resolve([]).unwrap(),
            SnapshotSettings::default()
        );
        let s = SnapshotSettings::resolve([
            (MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS, "1"),
            (MAX_SNAPSHOT_INTERVAL_MS, "0"),
            (MAX_RETENTION_BYTES, "-1"),
            (MAX_RETENTION_MS, "2048"),
            (FETCH_SNAPSHOT_MAX_BYTES, "4096"),
        ])
        .unwrap();
        assert_eq!(s.max_record_bytes_between_snapshots, 1);
        assert_eq!(s.max_snapshot_interval_ms, 0);
        assert_eq!(s.max_retention_bytes, -1);
        assert_eq!(s.max_retention_ms, 2048);
        assert_eq!(s.fetch_snapshot_max_bytes, 4096);
        for (key, bad) in [
            (MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS, "0"),
            (MAX_SNAPSHOT_INTERVAL_MS, "-1"),
            (FETCH_SNAPSHOT_MAX_BYTES, "0"),
            (FETCH_SNAPSHOT_MAX_BYTES, "4294967296"),
            (MAX_RETENTION_MS, "7d"),
            ("metadata.log.segment.bytes", "1"),
        ] {
            let err = SnapshotSettings::resolve([(key, bad)]).unwrap_err();
            assert!(err.contains(key), "{err}");
        }
    }
}
