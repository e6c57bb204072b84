//! Durable state of a node: the data directory, its identity, the bootstrap checkpoint, the quorum-state file
//! and the log segments.
//!
//! Layout (after Kafka's):
//! ```text
//! D/meta.properties                                   node id, directory id, cluster id
//! D/__cluster_metadata-0/bootstrap.checkpoint          kraft.version + initial voter set (record batches)
//! D/__cluster_metadata-0/quorum-state                  epoch, voted key, leader (JSON, replaced atomically)
//! D/__cluster_metadata-0/<20-digit base offset>.log    log segments: Kafka v2 record batches
//! ```
//!
//! Durability policy: the core does no I/O; it returns every change of the log and of the election state
//! as an effect, and the shell's storage thread (`server::store`) performs them in order: the quorum-state
//! file is replaced and fsynced (file and directory), log batches are written at once and fsynced by
//! [`FileLog::flush`] for each `FlushLog` effect (jobs queued meanwhile share one fsync), truncations are
//! fsynced at once. No message of an output leaves before its effects and every earlier output's are
//! durable, so a leader counts its own end toward the HW as it appends (as Kafka's). Cost: one `fdatasync`
//! per batch of queued jobs that appended, plus a directory fsync when a segment is created.

mod file_log;
mod meta;
mod metadata_log;
mod quorum_state;
mod snapshot_file;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

pub use file_log::{FileLog, DEFAULT_SEGMENT_BYTES};
pub use meta::{
    format_directory_id, is_reserved_directory_id, new_directory_id, parse_directory_id,
    read_bootstrap, write_bootstrap, write_bootstrap_snapshot, write_static_bootstrap_snapshot,
    MetaProperties,
};
pub use metadata_log::{kept_at_start, MetadataLog};
pub use quorum_state::{read_quorum_state, write_quorum_state};
pub use snapshot_file::{
    delete_snapshot, list_snapshots, read_snapshot_meta, scan_snapshot, snapshot_path, DataRule,
    PartialSnapshot, SnapshotError, SnapshotReader, SnapshotWriter, SNAPSHOT_BATCH_BYTES,
};

use crate::log::LogError;

/// The metadata log partition's directory inside a data directory.
pub const LOG_DIR_NAME: &str = "__cluster_metadata-0";
pub const META_FILE: &str = "meta.properties";
/// The bootstrap file older `kraft format` wrote (still read when Kafka's snapshot is absent).
pub const BOOTSTRAP_FILE: &str = "bootstrap.checkpoint";
pub use crate::records::BOOTSTRAP_SNAPSHOT_FILE;
pub const QUORUM_STATE_FILE: &str = "quorum-state";

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("data directory {0} is not formatted (run `kraft format` first)")]
    NotFormatted(PathBuf),
    #[error("data directory {dir} belongs to {field} {found}, not {expected}")]
    Foreign {
        dir: PathBuf,
        field: &'static str,
        expected: String,
        found: String,
    },
    /// Kafka's "Invalid reserved directory ID ... found in ...": `meta.properties` holds an id that Kafka's
    /// `DirectoryId.reserved` sets aside.
    #[error("invalid reserved directory id {id} found in {path}")]
    ReservedDirectoryId { path: PathBuf, id: String },
    #[error("corrupt {path}: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
}

impl StorageError {
    fn io(path: &Path) -> impl FnOnce(io::Error) -> StorageError + '_ {
        move |source| StorageError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The paths of one data directory.
#[derive(Clone, Debug)]
pub struct DataDir {
    pub root: PathBuf,
}

impl DataDir {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DataDir { root: root.into() }
    }
    pub fn meta_path(&self) -> PathBuf {
        self.root.join(META_FILE)
    }
    pub fn log_dir(&self) -> PathBuf {
        self.root.join(LOG_DIR_NAME)
    }
    /// Kafka's bootstrap snapshot, which `kraft format` and `kafka-storage format` write.
    pub fn bootstrap_path(&self) -> PathBuf {
        self.log_dir().join(BOOTSTRAP_SNAPSHOT_FILE)
    }
    /// The bootstrap file to read: Kafka's snapshot, else an older `kraft format`'s `bootstrap.checkpoint`
    /// if only that exists.
    pub fn bootstrap_file(&self) -> PathBuf {
        let legacy = self.log_dir().join(BOOTSTRAP_FILE);
        if !self.bootstrap_path().exists() && legacy.exists() {
            legacy
        } else {
            self.bootstrap_path()
        }
    }
    /// The bootstrap voters of this directory, as [`meta::read_bootstrap`] reads them. Kafka 4.0's
    /// `kafka-storage format` writes no bootstrap snapshot with `--no-initial-controllers` or static
    /// voters, only its metadata.version bootstrap (`bootstrap.checkpoint` beside `meta.properties`):
    /// kraft.version 0 and no voter set, read as [`crate::node::Bootstrap::Static`] with an empty set
    /// (`cli::static_voters::resolve` makes it an observer's start without static voters configured).
    pub fn read_bootstrap(&self) -> Result<crate::node::Bootstrap, StorageError> {
        let path = self.bootstrap_file();
        if !path.exists() && self.root.join(BOOTSTRAP_FILE).exists() {
            return Ok(crate::node::Bootstrap::Static(
                crate::voter_set::VoterSet::empty(),
            ));
        }
        meta::read_bootstrap(&path)
    }
    pub fn quorum_state_path(&self) -> PathBuf {
        self.log_dir().join(QUORUM_STATE_FILE)
    }
    pub fn is_formatted(&self) -> bool {
        self.meta_path().exists()
    }

    /// Reads the identity and checks it against the expected node id and cluster id, if given.
    pub fn open(
        &self,
        expect_node_id: Option<i32>,
        expect_cluster_id: Option<&str>,
    ) -> Result<MetaProperties, StorageError> {
        if !self.is_formatted() {
            return Err(StorageError::NotFormatted(self.root.clone()));
        }
        let meta = MetaProperties::read(&self.meta_path())?;
        if let Some(expected) = expect_node_id.filter(|id| *id != meta.node_id) {
            return Err(StorageError::Foreign {
                dir: self.root.clone(),
                field: "node id",
                expected: expected.to_string(),
                found: meta.node_id.to_string(),
            });
        }
        if let Some(expected) = expect_cluster_id.filter(|c| *c != meta.cluster_id) {
            return Err(StorageError::Foreign {
                dir: self.root.clone(),
                field: "cluster id",
                expected: expected.to_string(),
                found: meta.cluster_id.clone(),
            });
        }
        Ok(meta)
    }
}

/// fsync of a directory, so created, renamed and deleted entries survive a crash.
pub fn sync_dir(dir: &Path) -> Result<(), io::Error> {
    File::open(dir)?.sync_all()
}

/// Writes `bytes` to `path` atomically: temporary file, fsync, rename, fsync of the directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = dir.join(tmp_name);
    let mut file = File::create(&tmp).map_err(StorageError::io(&tmp))?;
    file.write_all(bytes).map_err(StorageError::io(&tmp))?;
    file.sync_all().map_err(StorageError::io(&tmp))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(StorageError::io(path))?;
    sync_dir(dir).map_err(StorageError::io(dir))
}
