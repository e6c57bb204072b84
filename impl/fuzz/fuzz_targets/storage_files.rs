//! The files a node reads at start: quorum-state, meta.properties, the bootstrap snapshot and a log
//! segment (recovered by `FileLog::open`). Input: a selector byte, then the file's bytes. Files live in
//! a directory on /dev/shm when it exists (tmpfs: the log's fsyncs cost nothing).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use kraft::storage::{read_bootstrap, read_quorum_state, FileLog, MetaProperties};
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

fuzz_target!(|data: &[u8]| {
    let Some((&which, content)) = data.split_first() else {
        return;
    };
    let dir = dir();
    match which % 4 {
        0 => {
            let path = dir.join("quorum-state");
            std::fs::write(&path, content).expect("write");
            let _ = read_quorum_state(&path);
        }
        1 => {
            let path = dir.join("meta.properties");
            std::fs::write(&path, content).expect("write");
            let _ = MetaProperties::read(&path);
        }
        2 => {
            let path = dir.join(kraft::storage::BOOTSTRAP_SNAPSHOT_FILE);
            std::fs::write(&path, content).expect("write");
            let _ = read_bootstrap(&path);
        }
        _ => {
            let log_dir = dir.join("log");
            let _ = std::fs::remove_dir_all(&log_dir);
            std::fs::create_dir_all(&log_dir).expect("mkdir");
            std::fs::write(log_dir.join(format!("{:020}.log", 0)), content).expect("write");
            let _ = FileLog::open(&log_dir);
        }
    }
});
