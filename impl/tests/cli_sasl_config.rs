//! `--command-config` SASL keys and `--bootstrap-server` refused before any connection, each with its
//! documented exit code and a one-line error (the exchanges themselves run against Kafka in the
//! interop suite, scenario sa).

use std::process::{Command, Output};

fn kraft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kraft"))
        .args(args)
        .output()
        .expect("kraft runs")
}

fn describe_with(config: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.properties");
    std::fs::write(&path, config).unwrap();
    // Port 1: nothing listens, so only a refusal before connecting can give another exit code than 3.
    kraft(&[
        "describe",
        "--bootstrap-controller",
        "127.0.0.1:1",
        "--status",
        "--command-config",
        path.to_str().unwrap(),
    ])
}

fn one_line(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn refused_sasl_settings_have_their_exit_codes() {
    let scram = "org.apache.kafka.common.security.scram.ScramLoginModule";
    let out = describe_with(&format!(
        "security.protocol=SASL_PLAINTEXT\nsasl.jaas.config={scram} required username=\"a\" password=\"b\";\n"
    ));
    assert_eq!(out.status.code(), Some(10));
    assert!(one_line(&out).contains("sasl.mechanism=GSSAPI: not supported by kraft"));
    let out = describe_with(&format!(
        "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\nsasl.jaas.config={scram} required;\n"
    ));
    assert_eq!(out.status.code(), Some(10));
    let out = describe_with(&format!(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config={scram} required username=;\n"
    ));
    assert_eq!(out.status.code(), Some(6));
    assert!(one_line(&out).contains("Value not specified for key 'username' in JAAS config"));
    // Well-formed: the command goes on to connect (nothing listens there).
    let out = describe_with(&format!(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config={scram} required username=\"a\" password=\"b\";\n"
    ));
    assert_eq!(out.status.code(), Some(3), "{}", one_line(&out));
}

#[test]
fn bootstrap_server_and_bootstrap_controller_exclude_each_other() {
    let both = kraft(&[
        "describe",
        "--bootstrap-controller",
        "127.0.0.1:1",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--status",
    ]);
    assert_eq!(both.status.code(), Some(2));
    let neither = kraft(&["describe", "--status"]);
    assert_eq!(neither.status.code(), Some(2));
    let broker = kraft(&["describe", "--bootstrap-server", "127.0.0.1:1", "--status"]);
    assert_eq!(broker.status.code(), Some(3), "{}", one_line(&broker));
}
