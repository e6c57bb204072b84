//! Snapshot files and downloads as a node meets them: any bytes as a `.checkpoint` read whole
//! (`read_snapshot_meta`) and served in chunks; any bytes downloaded in chunks (`MetadataLog`'s
//! `write_snapshot_chunk`/`complete_download`, which checks the file before it is used); and a data
//! directory holding such a file opened as Kafka's start-up does (`MetadataLog::open`). Input: a selector
//! byte, a chunk-size byte, then the file's bytes. Every outcome must be a value or a typed error.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use kraft::records::{SnapshotFileKind, SnapshotId};
use kraft::storage::{read_snapshot_meta, snapshot_path, MetadataLog, SnapshotReader};
use libfuzzer_sys::fuzz_target;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = std::path::Path::new("/dev/shm");
        let tmp = if base.is_dir() {
            tempfile::tempdir_in(base)
        } else {
            tempfile::tempdir()
        };
        tmp.expect("temp dir").keep()
    })
}

const ID: SnapshotId = SnapshotId {
    end_offset: 20,
    epoch: 1,
};

fuzz_target!(|data: &[u8]| {
    let [which, chunk, content @ ..] = data else {
        return;
    };
    let dir = dir().join("log");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let chunk = usize::from(*chunk).max(1) * 16;
    match which % 3 {
        0 => {
            let path = snapshot_path(&dir, ID, SnapshotFileKind::Checkpoint);
            std::fs::write(&path, content).expect("write");
            if let Ok(meta) = read_snapshot_meta(&path) {
                assert_eq!(meta.size, content.len() as u64);
                let reader = SnapshotReader::open(&dir, ID).expect("open");
                let mut served = Vec::new();
                while (served.len() as u64) < reader.size() {
                    served.extend_from_slice(&reader.chunk(served.len() as u64, chunk).expect("chunk"));
                }
                assert_eq!(served, content);
                assert!(reader.chunk(reader.size(), chunk).is_err());
            }
        }
        1 => {
            let mut log = MetadataLog::open(&dir).expect("empty dir");
            let mut position = 0;
            for piece in content.chunks(chunk) {
                log.write_snapshot_chunk(ID, position, piece).expect("in order");
                position += piece.len() as u64;
            }
            if content.is_empty() {
                return;
            }
            match log.complete_download(ID, content.len() as u64) {
                // A file that passed the check is loaded: the log starts at its end.
                Ok(_) => assert_eq!(kraft::log::RaftLog::start_offset(&log.log), ID.end_offset),
                // A refused file is gone, never loaded.
                Err(_) => assert!(log.snapshots().is_empty()),
            }
            drop(log);
            let _ = MetadataLog::open(&dir);
        }
        _ => {
            std::fs::write(snapshot_path(&dir, ID, SnapshotFileKind::Checkpoint), content)
                .expect("write");
            let _ = MetadataLog::open(&dir);
        }
    }
});
