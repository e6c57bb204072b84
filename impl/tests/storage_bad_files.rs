//! Bad files in a data directory, at process level: `kraft node` on a truncated or garbage
//! quorum-state, meta.properties or bootstrap checkpoint exits with code 6 and an error naming the file,
//! never a panic. A torn or garbage log segment is recovered as Kafka recovers one (the invalid tail is
//! truncated with a warning naming the segment) and the node serves; a segment layout recovery cannot
//! repair exits with code 6 naming the file.

mod cluster_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cluster_support::*;
use kraft::cli::EXIT_STORAGE;

/// A formatted single-voter data directory in `root`, and its listener address.
fn formatted(root: &Path) -> (PathBuf, String) {
    let port = free_ports(1)[0];
    let dir = root.join("node-1");
    let dir_id = kraft::storage::format_directory_id(uuid::Uuid::from_u128(0x1001));
    let out = run(&[
        "format",
        "--data-dir",
        dir.to_str().unwrap(),
        "--cluster-id",
        "bad-files",
        "--node-id",
        "1",
        "--initial-controllers",
        &format!("1@127.0.0.1:{port}:{dir_id}"),
        "--directory-id",
        &dir_id,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, format!("127.0.0.1:{port}"))
}

fn spawn_node(dir: &Path, listener: &str) -> std::process::Child {
    Command::new(BIN)
        .args([
            "node",
            "--data-dir",
            dir.to_str().unwrap(),
            "--listener",
            listener,
        ])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn output_text(child: std::process::Child) -> String {
    let out = child.wait_with_output().unwrap();
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    text
}

/// Runs `kraft node` on a data directory that must be refused: returns (exit code, output) once it
/// exits; `None` with what it logged if it is still running after `within` (a generous deadline that
/// only stops a hang, never a measure of speed).
fn run_node(dir: &Path, listener: &str, within: Duration) -> (Option<i32>, String) {
    let mut child = spawn_node(dir, listener);
    let deadline = Instant::now() + within;
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return (None, output_text(child));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, output_text(child))
}

/// Runs `kraft node` on a data directory it must recover: waits until it serves as leader with a known
/// high watermark (its own LeaderChange committed, so HW >= 1), then stops it and returns its output.
/// Fails if it exits first.
fn run_node_until_it_leads(dir: &Path, listener: &str) -> String {
    let mut child = spawn_node(dir, listener);
    let connect = kraft::cli::ConnectArgs {
        bootstrap_controller: Some(listener.to_string()),
        bootstrap_server: None,
        timeout_ms: 1000,
        command_config: None,
    };
    let exited = wait_until(
        "the recovered node to lead with HW >= 1 (or to exit)",
        Duration::from_secs(60),
        || {
            if child.try_wait().unwrap().is_some() {
                return Some(true);
            }
            kraft::cli::admin::find_leader(&connect, Some(3), Duration::from_millis(1000))
                .ok()
                .filter(|l| l.description.partition.high_watermark >= 1)
                .map(|_| false)
        },
    );
    if !exited {
        let _ = child.kill();
    }
    let text = output_text(child);
    assert!(!exited, "the node exited instead of recovering:\n{text}");
    text
}

/// Contents a bad file may have: cut in the middle, cut to nothing, random bytes, text of another kind.
fn bad_contents(good: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut garbage = vec![0u8; 257];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for b in garbage.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    vec![
        ("truncated", good[..good.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("garbage", garbage),
        ("huge length prefix", {
            // What a record batch with a claimed length of i32::MAX looks like.
            let mut b = vec![0u8; 8];
            b.extend_from_slice(&i32::MAX.to_be_bytes());
            b.extend_from_slice(&[0xff; 49]);
            b
        }),
    ]
}

fn assert_storage_failure(file: &Path, case: &str, (code, text): (Option<i32>, String)) {
    assert!(!text.contains("panicked"), "{case}: panicked:\n{text}");
    assert_eq!(
        code,
        Some(EXIT_STORAGE),
        "{case}: exit code; output:\n{text}"
    );
    assert!(
        text.contains(&file.display().to_string()),
        "{case}: the error must name {}:\n{text}",
        file.display()
    );
}

#[test]
fn bad_identity_checkpoint_or_quorum_state_exits_6_naming_the_file() {
    let root = tempfile::tempdir().unwrap();
    let (dir, listener) = formatted(root.path());
    let data = data_dir(&dir);
    let quorum_state = br#"{"leaderId":1,"leaderEpoch":3,"votedId":1,"votedDirectoryId":"00000000-0000-0000-0000-000000000000","data_version":1}"#.to_vec();
    let files = [
        (data.meta_path(), std::fs::read(data.meta_path()).unwrap()),
        (
            data.bootstrap_path(),
            std::fs::read(data.bootstrap_path()).unwrap(),
        ),
        (data.quorum_state_path(), quorum_state),
    ];
    let mut checked = 0;
    for (path, good) in &files {
        for (kind, bytes) in bad_contents(good) {
            // A missing quorum-state is a fresh node, not an error (Kafka's rule too).
            if path == &data.quorum_state_path() && bytes.is_empty() {
                continue;
            }
            std::fs::write(path, &bytes).unwrap();
            let case = format!("{} {kind}", path.file_name().unwrap().to_string_lossy());
            assert_storage_failure(
                path,
                &case,
                run_node(&dir, &listener, Duration::from_secs(30)),
            );
            checked += 1;
        }
        std::fs::write(path, good).unwrap();
    }
    assert_eq!(checked, 11);
}

#[test]
fn unrecoverable_segment_layout_exits_6_naming_the_file() {
    let root = tempfile::tempdir().unwrap();
    let (dir, listener) = formatted(root.path());
    let log_dir = data_dir(&dir).log_dir();
    // A log that starts past 0 needs a snapshot that reaches its start (Kafka's "Inconsistent snapshot
    // state"); there is none here.
    let late = log_dir.join("00000000000000000042.log");
    std::fs::write(&late, b"").unwrap();
    for entry in std::fs::read_dir(&log_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "log") && path != late {
            std::fs::remove_file(path).unwrap();
        }
    }
    assert_storage_failure(
        &late,
        "late first segment",
        run_node(&dir, &listener, Duration::from_secs(30)),
    );
    // A segment that cannot be read at all (here: a directory).
    std::fs::remove_file(&late).unwrap();
    let unreadable = log_dir.join("00000000000000000000.log");
    std::fs::create_dir(&unreadable).unwrap();
    assert_storage_failure(
        &unreadable,
        "unreadable segment",
        run_node(&dir, &listener, Duration::from_secs(30)),
    );
}

#[test]
fn torn_or_garbage_segment_is_truncated_like_kafka_and_the_node_serves() {
    let root = tempfile::tempdir().unwrap();
    let (dir, listener) = formatted(root.path());
    let segment = data_dir(&dir).log_dir().join("00000000000000000000.log");
    for (kind, bytes) in bad_contents(&[0u8; 64]) {
        std::fs::write(&segment, &bytes).unwrap();
        let text = run_node_until_it_leads(&dir, &listener);
        assert!(!text.contains("panicked"), "{kind}: panicked:\n{text}");
        if !bytes.is_empty() {
            assert!(
                text.contains("truncating torn or corrupt tail")
                    && text.contains(&segment.display().to_string()),
                "{kind}: recovery must say what it dropped and where:\n{text}"
            );
        }
        // The garbage is gone: the segment now holds only whole, valid batches from offset 0 (what the
        // node appended as leader after recovery).
        let scan = kraft::records::scan_batches(std::fs::read(&segment).unwrap().into());
        assert!(scan.error.is_none(), "{kind}: {:?}", scan.error);
        assert_eq!(
            scan.batches.first().map(|b| b.base_offset),
            Some(0),
            "{kind}"
        );
    }
}
