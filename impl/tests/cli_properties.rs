//! `kraft format --config` and `kraft node --config` with a Kafka controller's properties file, written
//! as `java.util.Properties.store` writes it (escaped `:` and `=`, comments) plus a continuation line.

mod cluster_support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use cluster_support::*;
use kraft::cli::ConnectArgs;
use kraft::storage::format_directory_id;

/// `id`'s controller properties; `bootstrap` is `HOST:PORT,...`.
fn write_properties(dir: &Path, id: i32, port: u16, bootstrap: &str) -> std::path::PathBuf {
    let escaped = bootstrap.replace(':', "\\:");
    let text = format!(
        "#Apache Kafka controller {id}\n#Sat Dec 05 17:00:00 UTC 2026\n\
         process.roles=controller\nnode.id={id}\ncontroller.listener.names=CONTROLLER\n\
         listeners=CONTROLLER\\://127.0.0.1\\:{port}\n\
         listener.security.protocol.map=CONTROLLER\\:PLAINTEXT\n\
         controller.quorum.bootstrap.servers={escaped}\n\
         log.dirs={}\n\
         ! Kafka's timeouts, one of them continued on a second line\n\
         controller.quorum.election.timeout.ms=1000\n\
         controller.quorum.fetch.timeout.ms=\\\n    2000\n\
         metadata.max.idle.interval.ms=0\n",
        dir.join(format!("controller-{id}")).display()
    );
    let path = dir.join(format!("controller-{id}.properties"));
    std::fs::write(&path, text).unwrap();
    path
}

fn start(config: &Path, log: &Path) -> Proc {
    let log = std::fs::File::create(log).unwrap();
    Proc {
        child: Command::new(BIN)
            .args(["node", "--config", config.to_str().unwrap()])
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    }
}

fn describe(bootstrap: &str) -> Option<kraft::cli::describe::QuorumDescription> {
    let connect = ConnectArgs {
        bootstrap_controller: Some(bootstrap.to_string()),
        bootstrap_server: None,
        timeout_ms: 1000,
        command_config: None,
    };
    kraft::cli::admin::find_leader(&connect, Some(3), Duration::from_millis(1000))
        .ok()
        .map(|l| l.description)
}

#[test]
fn three_nodes_formatted_and_started_from_kafka_controller_properties() {
    let root = tempfile::tempdir().unwrap();
    let ports = free_ports(3);
    let bootstrap = ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let initial = (1..=3)
        .map(|i| {
            let dir = uuid::Uuid::from_u128(0x2000 + i as u128);
            format!(
                "{i}@127.0.0.1:{}:{}",
                ports[i - 1],
                format_directory_id(dir)
            )
        })
        .collect::<Vec<_>>()
        .join(",");
    let mut procs = Vec::new();
    for id in 1..=3 {
        let config = write_properties(root.path(), id, ports[id as usize - 1], &bootstrap);
        let out = run(&[
            "format",
            "--config",
            config.to_str().unwrap(),
            "--cluster-id",
            "props",
            "--initial-controllers",
            &initial,
        ]);
        assert!(out.status.success(), "{out:?}");
        assert!(root
            .path()
            .join(format!("controller-{id}/meta.properties"))
            .exists());
        let log = root.path().join(format!("node-{id}.log"));
        procs.push((start(&config, &log), log));
    }
    let d = wait_until("a leader of three voters", Duration::from_secs(30), || {
        describe(&bootstrap)
            .filter(|d| d.partition.high_watermark >= 0 && d.partition.current_voters.len() == 3)
    });
    assert_eq!(d.partition.current_voters.len(), 3);
    for (_, log) in &procs {
        let text = std::fs::read_to_string(log).unwrap();
        let unused: Vec<_> = text
            .lines()
            .filter(|l| l.contains("not used by this node"))
            .collect();
        assert_eq!(unused.len(), 1, "{text}");
        assert!(unused[0].contains("metadata.max.idle.interval.ms"));
    }
}

#[test]
fn standalone_format_and_a_bad_value_named_by_its_key() {
    let root = tempfile::tempdir().unwrap();
    let port = free_ports(1)[0];
    let address = format!("127.0.0.1:{port}");
    let config = write_properties(root.path(), 5, port, &address);
    let out = run(&[
        "format",
        "-c",
        config.to_str().unwrap(),
        "-t",
        "props",
        "--standalone",
    ]);
    assert!(out.status.success(), "{out:?}");
    let log = root.path().join("node-5.log");
    let _node = start(&config, &log);
    let d = wait_until("node 5 leading alone", Duration::from_secs(30), || {
        describe(&address).filter(|d| d.partition.high_watermark >= 0)
    });
    assert_eq!(d.partition.leader_id, 5);
    assert_eq!(d.partition.current_voters.len(), 1);

    let bad = root.path().join("bad.properties");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("fetch.timeout.ms=", "fetch.timeout.ms=soon");
    std::fs::write(&bad, text).unwrap();
    let out = run(&["node", "--config", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(6), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("controller.quorum.fetch.timeout.ms=soon2000"),
        "{err}"
    );
    let out = run(&[
        "format",
        "--config",
        config.to_str().unwrap(),
        "--cluster-id",
        "props",
        "--standalone",
        "--no-initial-controllers",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
