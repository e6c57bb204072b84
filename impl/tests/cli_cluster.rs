//! `kraft cluster`: formats and starts a local cluster, prints one line per node once there is a leader,
//! and stops cleanly on SIGTERM.

mod cluster_support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use cluster_support::*;

#[test]
fn cluster_command_starts_reports_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    // Three consecutive free ports: retry a few bases if something else holds one.
    let base = (0..20)
        .map(|_| free_ports(1)[0])
        .find(|p| {
            *p < 65_000 && (1..3).all(|i| std::net::TcpListener::bind(("127.0.0.1", p + i)).is_ok())
        })
        .expect("three consecutive free ports");
    let child = Command::new(BIN)
        .args([
            "cluster",
            "--nodes",
            "3",
            "--dir",
            dir.path().to_str().unwrap(),
            "--base-port",
            &base.to_string(),
        ])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut proc = Proc { child };
    let stdout = proc.child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut lines = Vec::new();
    while lines.len() < 4 {
        lines.push(
            rx.recv_timeout(Duration::from_secs(20))
                .expect("cluster start-up lines"),
        );
    }
    for (i, line) in lines[..3].iter().enumerate() {
        assert!(
            line.starts_with(&format!(
                "node {} listening on 127.0.0.1:{}",
                i + 1,
                base + i as u16
            )),
            "{line}"
        );
    }
    assert_eq!(
        lines.iter().filter(|l| l.ends_with("(leader)")).count(),
        1,
        "{lines:?}"
    );
    // The cluster answers the CLI.
    let bootstrap = (0..3)
        .map(|i| format!("127.0.0.1:{}", base + i))
        .collect::<Vec<_>>()
        .join(",");
    let out = run(&["describe", "--bootstrap-controller", &bootstrap, "--status"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("CommittedVoters:"));

    let pid = proc.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let stopped = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("a line after SIGTERM");
    assert_eq!(stopped, "cluster stopped");
    let status = wait_until(
        "the cluster process to exit",
        Duration::from_secs(10),
        || proc.child.try_wait().unwrap(),
    );
    assert!(status.success(), "{status:?}");
}

/// A reader that goes away (`kraft ... | head`) ends the command quietly with 141, as a tool killed by
/// SIGPIPE reports, never a panic in `println!`.
#[test]
fn a_closed_stdout_ends_the_command_quietly_with_141() {
    let dir = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(BIN)
        .args([
            "certs",
            "--dir",
            dir.path().to_str().unwrap(),
            "--node-ids",
            "1",
        ])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
