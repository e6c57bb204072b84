//! Mutual TLS, process level: real `kraft` processes with certificates generated here (rcgen, through
//! `kraft::cli::certs`), so no key or expiring file is committed. Every wait is bounded.

mod cluster_support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cluster_support::*;
use kafka_protocol::messages::vote_request::{PartitionData, TopicData};
use kafka_protocol::messages::{ApiKey, BrokerId, TopicName, VoteRequest, VoteResponse};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kraft::cli::certs::{write_cluster_tls_with, Authority, ClusterTls, Validity};
use kraft::server::client::{Client, ClientError};
use kraft::server::codec::{request_frame, response_body};
use kraft::server::tls::{Properties, Tls};

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

fn node_flags(tls: &ClusterTls, id: i32) -> Vec<String> {
    let p = tls.node_properties(id);
    [
        ("--security-protocol", "security.protocol"),
        ("--ssl-keystore-location", "ssl.keystore.location"),
        ("--ssl-truststore-location", "ssl.truststore.location"),
        ("--ssl-client-auth", "ssl.client.auth"),
        (
            "--controller-principal-template",
            "controller.principal.template",
        ),
        ("--super-users", "super.users"),
    ]
    .iter()
    .flat_map(|(flag, key)| [flag.to_string(), p[*key].clone()])
    .collect()
}

/// `voters` TLS voters and `observers` TLS observers, with the files of `kraft cluster --tls`.
/// Also returns the CA, to issue more certificates from it.
fn tls_cluster(voters: i32, observers: i32, seed: u64) -> (Cluster, ClusterTls, Authority) {
    let root = tempfile::tempdir().unwrap();
    let ids: Vec<i32> = (1..=voters + observers).collect();
    let ca = Authority::new("test-ca").unwrap();
    let tls = write_cluster_tls_with(&ca, &root.path().join("tls"), &ids).unwrap();
    let t = tls.clone();
    let mut c = Cluster::start_with(voters, observers, seed, TIMING, root, move |id| {
        node_flags(&t, id)
    });
    c.command_config = Some(tls.admin_config.clone());
    (c, tls, ca)
}

/// A command config presenting `keystore` (a PEM key + certificate) and trusting `ca`.
fn client_config(dir: &Path, name: &str, keystore: Option<&str>, ca: &Path) -> PathBuf {
    let mut text = format!(
        "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={}\n",
        ca.display()
    );
    if let Some(pem) = keystore {
        let ks = dir.join(format!("{name}.pem"));
        std::fs::write(&ks, pem).unwrap();
        text.push_str(&format!(
            "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
            ks.display()
        ));
    }
    let path = dir.join(format!("{name}.properties"));
    std::fs::write(&path, text).unwrap();
    path
}

fn load(config: &Path) -> Tls {
    let props: Properties = kraft::cli::properties::read(config).unwrap();
    Tls::for_client(&props).unwrap().unwrap()
}

/// The epoch-overflow Vote: `ReplicaEpoch = i32::MAX` in the name of voter `from`.
fn hostile_vote(from: i32) -> bytes::Bytes {
    let dir = uuid::Uuid::from_u128(0x1000 + from as u128);
    let req = VoteRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str("itest")))
        .with_voter_id(BrokerId(-1))
        .with_topics(vec![TopicData::default()
            .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
            .with_partitions(vec![PartitionData::default()
                .with_partition_index(0)
                .with_replica_epoch(i32::MAX)
                .with_replica_id(BrokerId(from))
                .with_replica_directory_id(dir)
                .with_last_offset_epoch(i32::MAX)
                .with_last_offset(i64::MAX / 2)])]);
    request_frame(ApiKey::Vote as i16, 1, 7, "hostile", &req).unwrap()
}

fn cli_with(config: &Path, args: &[&str]) -> std::process::Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--command-config", config.to_str().unwrap()]);
    run(&all)
}

#[test]
fn a_mutual_tls_quorum_elects_replicates_and_changes_membership() {
    let (c, tls, _) = tls_cluster(3, 1, 19);
    let before = c.wait_for_leader(Duration::from_secs(30));
    assert!(before.partition.leader_epoch >= 1);
    // Node 4 (an observer with its own certificate) fetches over TLS; the operator adds it.
    let b = c.bootstrap();
    let out = cli_with(
        &tls.admin_config,
        &[
            "add-voter",
            "--bootstrap-controller",
            &b,
            "--data-dir",
            c.nodes[&4].dir.to_str().unwrap(),
            "--endpoint",
            &c.addr(4),
            "--timeout-ms",
            "20000",
        ],
    );
    assert!(
        out.status.success(),
        "add-voter over TLS: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = wait_until(
        "node 4 committed as a voter",
        Duration::from_secs(20),
        || {
            c.describe()
                .filter(|d| ids(d).1.contains(&4) && ids(d).0.contains(&4))
        },
    );
    assert_eq!(ids(&d).0, vec![1, 2, 3, 4]);
    // Plaintext Kafka frames to the TLS listener are not served.
    let plain = Command::new(BIN)
        .args(["describe", "--bootstrap-controller", &b, "--status"])
        .args(["--timeout-ms", "2000"])
        .output()
        .unwrap();
    assert!(!plain.status.success());
    // The client can see the refusal before the node has written its log line: wait for it.
    wait_until(
        "a node logs the refused plaintext handshake",
        Duration::from_secs(10),
        || {
            (1..=4)
                .any(|id| c.log_text(id).contains("TLS handshake refused"))
                .then_some(())
        },
    );
}

#[test]
fn the_epoch_overflow_vote_changes_nothing_without_the_voters_certificate() {
    let (c, tls, _) = tls_cluster(3, 0, 7);
    let before = c.wait_for_leader(Duration::from_secs(30));
    let leader = before.partition.leader_id;
    let victim = (1..=3).find(|i| *i != leader).unwrap();
    let claimed = (1..=3).find(|i| *i != leader && *i != victim).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let t = Duration::from_secs(3);

    // 1. Plaintext: the bytes fail the handshake; no answer, the connection is closed.
    let mut plain = Client::connect(&c.addr(victim), t).unwrap();
    assert!(plain.round_trip_raw(&hostile_vote(claimed)).is_err());

    // 2. A certificate from another CA: the handshake is refused.
    let rogue_ca = Authority::new("rogue-ca").unwrap();
    let rogue = rogue_ca
        .issue(
            &format!("kraft-node-{claimed}"),
            &["localhost"],
            Validity::current(),
        )
        .unwrap();
    let rogue_config = client_config(
        scratch.path(),
        "rogue",
        Some(&rogue.keystore_pem()),
        &tls.ca(),
    );
    let refused = Client::connect_with(&c.addr(victim), t, Some(&load(&rogue_config)))
        .and_then(|mut client| client.round_trip_raw(&hostile_vote(claimed)));
    assert!(
        matches!(refused, Err(ClientError::Tls { .. })),
        "{refused:?}"
    );

    // 3. Trusted certificates that do not prove the claimed id: the operator's, and another node's.
    let admin = load(&tls.admin_config);
    let other_node = client_config(
        scratch.path(),
        "other-node",
        Some(&std::fs::read_to_string(tls.keystore(victim)).unwrap()),
        &tls.ca(),
    );
    for config in [admin, load(&other_node)] {
        let mut client = Client::connect_with(&c.addr(victim), t, Some(&config)).unwrap();
        let payload = client.round_trip_raw(&hostile_vote(claimed)).unwrap();
        let (_, mut body) = response_body(payload, ApiKey::Vote as i16, 1).unwrap();
        let response = VoteResponse::decode(&mut body, 1).unwrap();
        assert_eq!(
            response.error_code,
            kraft::wire::error_codes::CLUSTER_AUTHORIZATION_FAILED
        );
    }

    // Nothing moved: same leader, same epoch, on every node.
    let after = c.wait_for_leader(Duration::from_secs(10));
    assert_eq!(
        (after.partition.leader_id, after.partition.leader_epoch),
        (leader, before.partition.leader_epoch)
    );
    let log = c.log_text(victim);
    assert!(
        log.contains("refused: Vote from User:CN=kraft-admin, which does not prove node id"),
        "{log}"
    );
    assert!(!log.contains("2147483647"), "{log}");
}

#[test]
fn expired_untrusted_and_missing_client_certificates_are_refused_with_a_clear_log_line() {
    let (c, tls, ca) = tls_cluster(1, 0, 3);
    c.wait_for_leader(Duration::from_secs(30));
    let scratch = tempfile::tempdir().unwrap();
    let b = c.bootstrap();
    let describe = |config: &Path| {
        cli_with(
            config,
            &[
                "describe",
                "--bootstrap-controller",
                &b,
                "--status",
                "--timeout-ms",
                "3000",
            ],
        )
    };
    assert!(describe(&tls.admin_config).status.success());
    let refused = |name: &str, keystore: Option<String>, expected_log: &[&str]| {
        let config = client_config(scratch.path(), name, keystore.as_deref(), &tls.ca());
        let out = describe(&config);
        assert_eq!(
            out.status.code(),
            Some(8),
            "{name}: exit code 8 (TLS): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The node logs the refusal on its own task, possibly after the client has exited.
        wait_until(
            &format!("{name}: one of {expected_log:?} in node 1's log"),
            Duration::from_secs(10),
            || {
                let log = c.log_text(1);
                expected_log.iter().any(|e| log.contains(e)).then_some(())
            },
        );
    };
    let expired = ca
        .issue(
            "kraft-admin",
            &["localhost"],
            Validity {
                from: 2000,
                to: 2001,
            },
        )
        .unwrap();
    refused(
        "expired",
        Some(expired.keystore_pem()),
        &["certificate expired"],
    );
    let other_ca = Authority::new("other-ca").unwrap();
    let untrusted = other_ca
        .issue("kraft-admin", &["localhost"], Validity::current())
        .unwrap();
    refused(
        "untrusted",
        Some(untrusted.keystore_pem()),
        &["UnknownIssuer", "unknown issuer"],
    );
    refused(
        "no-certificate",
        None,
        &["NoCertificatesPresented", "no certificate"],
    );
    assert!(c.log_text(1).contains("TLS handshake refused"));
}

#[test]
fn membership_changes_need_a_super_user_certificate() {
    let (c, tls, ca) = tls_cluster(3, 0, 11);
    c.wait_for_leader(Duration::from_secs(30));
    let scratch = tempfile::tempdir().unwrap();
    let operator = ca
        .issue("kraft-operator", &["localhost"], Validity::current())
        .unwrap();
    let config = client_config(
        scratch.path(),
        "operator",
        Some(&operator.keystore_pem()),
        &tls.ca(),
    );
    let b = c.bootstrap();
    // Reading is allowed to any trusted certificate; removing a voter is not.
    assert!(cli_with(
        &config,
        &["describe", "--bootstrap-controller", &b, "--status"]
    )
    .status
    .success());
    let out = cli_with(
        &config,
        &[
            "remove-voter",
            "--bootstrap-controller",
            &b,
            "--node-id",
            "3",
            "--timeout-ms",
            "5000",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(11), "{stderr}");
    assert!(stderr.contains("CLUSTER_AUTHORIZATION_FAILED"), "{stderr}");
    let d = c.wait_for_leader(Duration::from_secs(10));
    assert_eq!(ids(&d).0, vec![1, 2, 3]);
}

/// Three consecutive free ports (for `kraft cluster --base-port`).
fn consecutive_ports() -> u16 {
    for _ in 0..50 {
        let base = free_ports(1)[0];
        if base > 65_000 {
            continue;
        }
        let held: Vec<_> = (0..3)
            .map_while(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).ok())
            .collect();
        if held.len() == 3 {
            return base;
        }
    }
    panic!("no three consecutive free ports");
}

#[test]
fn kraft_cluster_tls_starts_a_mutual_tls_quorum_in_one_command() {
    let dir = tempfile::tempdir().unwrap();
    let base = consecutive_ports();
    let child = Command::new(BIN)
        .args(["cluster", "--nodes", "3", "--tls", "--dir"])
        .arg(dir.path())
        .args(["--base-port", &base.to_string()])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed on drop, also when an assertion fails.
    let mut cluster = Proc { child };
    let stdout = cluster.child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let up = loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => {
                let done = line.contains("is up");
                lines.push(line);
                if done {
                    break true;
                }
            }
            Err(_) => break false,
        }
    };
    if !up {
        panic!("kraft cluster --tls did not come up: {lines:?}");
    }
    let admin = dir.path().join("tls").join("admin.properties");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&admin.display().to_string())),
        "{lines:?}"
    );
    let out = cli_with(
        &admin,
        &[
            "describe",
            "--bootstrap-controller",
            &format!("127.0.0.1:{base}"),
            "--status",
        ],
    );
    let plain = run(&[
        "describe",
        "--bootstrap-controller",
        &format!("127.0.0.1:{base}"),
        "--status",
        "--timeout-ms",
        "2000",
    ]);
    drop(cluster);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("LeaderId:"));
    assert!(!plain.status.success(), "plaintext must not be served");
}
