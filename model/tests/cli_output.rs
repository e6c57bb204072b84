//! The `model` command line when its reader goes away (`model check | head`): a quiet exit 141, as a
//! tool killed by SIGPIPE reports, never a panic in `println!`.

use std::process::{Command, Stdio};

#[test]
fn a_closed_stdout_ends_the_run_quietly_with_141() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_model"))
        .args([
            "check",
            "--max-changes",
            "0",
            "--crashes",
            "0",
            "--no-first-election",
        ])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
