//! SASL_PLAINTEXT with PLAIN, process level: `kraft node`s configured by a Kafka controller properties
//! file (`listener.security.protocol.map`, `listener.name.controller.plain.sasl.jaas.config`,
//! `sasl.mechanism.controller.protocol`) elect a leader and replicate over authenticated links; clients
//! without the right credentials are refused as Kafka refuses them. Every wait is bounded.

mod cluster_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cluster_support::*;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest};
use kraft::cli::certs::write_cluster_tls;
use kraft::server::client::Client;
use kraft::server::codec::request_frame;

const TIMING: &[&str] = &[
    "--election-timeout-ms",
    "300",
    "--fetch-timeout-ms",
    "600",
    "--fetch-interval-ms",
    "20",
    "--request-timeout-ms",
    "300",
];

const PLAIN: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

/// A controller's properties: the listener requires SASL_PLAINTEXT PLAIN; the node authenticates to
/// the others as `controller` with `password`.
fn controller_properties(dir: &Path, id: i32, password: &str) -> PathBuf {
    controller_properties_with(dir, id, password, "SASL_PLAINTEXT", "")
}

/// The same with another security protocol and `extra` lines (e.g. the TLS keys).
fn controller_properties_with(
    dir: &Path,
    id: i32,
    password: &str,
    protocol: &str,
    extra: &str,
) -> PathBuf {
    let text = format!(
        "process.roles=controller\n\
         controller.listener.names=CONTROLLER\n\
         listener.security.protocol.map=CONTROLLER:{protocol}\n{extra}\
         sasl.enabled.mechanisms=PLAIN\n\
         sasl.mechanism.controller.protocol=PLAIN\n\
         listener.name.controller.plain.sasl.jaas.config={PLAIN} required username=\"controller\" \
         password=\"{password}\" user_controller=\"controller-secret\" user_admin=\"admin-secret\";\n"
    );
    let path = dir.join(format!("controller-{id}.properties"));
    std::fs::write(&path, text).unwrap();
    path
}

fn client_properties(dir: &Path, name: &str, user: &str, password: &str) -> PathBuf {
    let text = format!(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n\
         sasl.jaas.config={PLAIN} required username=\"{user}\" password=\"{password}\";\n"
    );
    let path = dir.join(format!("{name}.properties"));
    std::fs::write(&path, text).unwrap();
    path
}

/// `voters` voters and `observers` observers; node `bad_links` (if any) sends a wrong password.
fn sasl_cluster(voters: i32, observers: i32, seed: u64, bad_links: Option<i32>) -> Cluster {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().to_path_buf();
    let mut c = Cluster::start_with(voters, observers, seed, TIMING, root, move |id| {
        let password = if Some(id) == bad_links {
            "wrong"
        } else {
            "controller-secret"
        };
        let config = controller_properties(&dir, id, password);
        vec!["--config".into(), config.to_str().unwrap().into()]
    });
    c.command_config = Some(client_properties(
        c.root.path(),
        "admin",
        "admin",
        "admin-secret",
    ));
    c
}

#[test]
fn two_nodes_elect_and_replicate_over_sasl_plaintext_plain() {
    let c = sasl_cluster(2, 0, 11, None);
    let d = c.wait_for_leader(Duration::from_secs(30));
    assert_eq!(ids(&d).0, vec![1, 2]);
    // Both voters fetch from the leader: each reaches the HW (the leader's epoch entry at least).
    wait_until(
        "both voters at the high watermark",
        Duration::from_secs(20),
        || {
            let d = c.describe()?;
            let hw = d.partition.high_watermark;
            (hw > 0
                && d.partition.current_voters.len() == 2
                && d.partition
                    .current_voters
                    .iter()
                    .all(|v| v.log_end_offset >= hw))
            .then_some(())
        },
    );
    // The CLI authenticates with the admin's credentials.
    let admin = c.command_config.clone().unwrap();
    let out = c.cli(&[
        "describe",
        "--bootstrap-controller",
        &c.bootstrap(),
        "--status",
        "--command-config",
        admin.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A wrong password: Kafka's SASL_AUTHENTICATION_FAILED, exit code 9.
    let wrong = client_properties(c.root.path(), "wrong", "admin", "not-the-password");
    let out = describe_status(&c, &wrong);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(
        err.contains("Authentication failed: Invalid username or password"),
        "{err}"
    );
}

#[test]
fn unauthenticated_requests_close_the_connection() {
    let c = sasl_cluster(1, 0, 12, None);
    c.wait_for_leader(Duration::from_secs(30));
    // A plaintext client's ApiVersions is answered (the SASL APIs listed), its next request closes.
    let mut client = Client::connect(&c.addr(1), Duration::from_secs(5)).unwrap();
    let frame = request_frame(
        ApiKey::ApiVersions as i16,
        3,
        1,
        "test",
        &ApiVersionsRequest::default(),
    )
    .unwrap();
    let answer = client.round_trip_raw(&frame).unwrap();
    assert!(answer.len() > 8);
    let describe = c.cli(&["describe", "--bootstrap-controller", &c.addr(1), "--status"]);
    assert_ne!(describe.status.code(), Some(0));
    // The node logs why it closed the connection.
    wait_until("the refusal in the log", Duration::from_secs(5), || {
        c.log_text(1)
            .contains("during SASL handshake")
            .then_some(())
    });
}

#[test]
fn a_node_with_the_wrong_password_is_refused_by_its_peers() {
    // Node 2 authenticates with a wrong password: its Vote and Fetch never reach node 1, and it logs
    // Kafka's answer.
    let c = sasl_cluster(2, 0, 13, Some(2));
    wait_until("node 2 refused by node 1", Duration::from_secs(20), || {
        c.log_text(2)
            .contains("Authentication failed: Invalid username or password")
            .then_some(())
    });
    // Without node 2 fetching, nothing is committed: the high watermark stays unknown.
    assert!(c.describe().is_none_or(|d| d.partition.high_watermark < 0));
}

#[test]
fn scram_between_controllers_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = controller_properties(dir.path(), 1, "controller-secret");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "sasl.mechanism.controller.protocol=PLAIN",
        "sasl.mechanism.controller.protocol=SCRAM-SHA-512",
    );
    std::fs::write(&config, text).unwrap();
    let out = run(&[
        "node",
        "--config",
        config.to_str().unwrap(),
        "--data-dir",
        dir.path().join("data").to_str().unwrap(),
        "--listener",
        "127.0.0.1:0",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(
        err.contains("sasl.mechanism.controller.protocol=SCRAM-SHA-512")
            && err.contains("KAFKA-15513"),
        "{err}"
    );
}

#[test]
fn two_nodes_over_sasl_ssl() {
    let root = tempfile::tempdir().unwrap();
    let tls = write_cluster_tls(&root.path().join("tls"), &[1, 2]).unwrap();
    let (ca, dir) = (tls.ca(), root.path().to_path_buf());
    let keystores: Vec<PathBuf> = (1..=2).map(|id| tls.keystore(id)).collect();
    let ssl = move |keystore: Option<&PathBuf>| {
        let mut text = format!(
            "ssl.truststore.type=PEM\nssl.truststore.location={}\n",
            ca.display()
        );
        if let Some(k) = keystore {
            text.push_str(&format!(
                "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
                k.display()
            ));
        }
        text
    };
    let client_ssl = ssl(None);
    let mut c = Cluster::start_with(2, 0, 14, TIMING, root, move |id| {
        let extra = ssl(Some(&keystores[(id - 1) as usize]));
        let config = controller_properties_with(&dir, id, "controller-secret", "SASL_SSL", &extra);
        vec!["--config".into(), config.to_str().unwrap().into()]
    });
    let admin = c.root.path().join("admin-ssl.properties");
    let plain = client_properties(c.root.path(), "admin", "admin", "admin-secret");
    let text = std::fs::read_to_string(&plain)
        .unwrap()
        .replace("SASL_PLAINTEXT", "SASL_SSL");
    std::fs::write(&admin, format!("{text}{client_ssl}")).unwrap();
    c.command_config = Some(admin);
    // The two nodes elect over TLS links that authenticate with SASL, and the CLI reads them so.
    let d = c.wait_for_leader(Duration::from_secs(30));
    assert_eq!(ids(&d).0, vec![1, 2]);
    // SASL without TLS is refused: the listener speaks TLS first.
    let out = describe_status(&c, &plain);
    assert_ne!(out.status.code(), Some(0));
}

/// `kraft describe --status` through node 1 with `config` as `--command-config`.
fn describe_status(c: &Cluster, config: &Path) -> std::process::Output {
    c.cli(&[
        "describe",
        "--bootstrap-controller",
        &c.addr(1),
        "--status",
        "--command-config",
        config.to_str().unwrap(),
    ])
}
