//! Real `kraft` processes: a 3-node quorum, adding an observer as a 4th voter (CommittedVoters lags, then
//! converges), and removing voters including the leader itself.

mod cluster_support;

use std::time::Duration;

use cluster_support::*;

/// Check-quorum (1.5 × fetch timeout) stays well above the pauses used below.
const TIMING: &[&str] = &[
    "--election-timeout-ms",
    "300",
    "--fetch-timeout-ms",
    "4000",
    "--fetch-interval-ms",
    "20",
];

fn json_ids(value: &serde_json::Value, key: &str) -> Vec<i64> {
    value[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

#[test]
fn add_observer_then_remove_voters_including_the_leader() {
    let mut c = Cluster::start(3, 1, 7, TIMING);
    c.wait_for_leader(Duration::from_secs(20));

    // 1. `describe --json` from the CLI: CommittedVoters equal CurrentVoters; node 4 observes.
    let observed = wait_until("node 4 observing", Duration::from_secs(10), || {
        let out = c.cli(&[
            "describe",
            "--bootstrap-controller",
            &c.bootstrap(),
            "--status",
            "--json",
        ]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (json_ids(&v, "currentObservers") == [4]).then_some(v)
    });
    assert_eq!(json_ids(&observed, "currentVoters"), [1, 2, 3]);
    assert_eq!(json_ids(&observed, "committedVoters"), [1, 2, 3]);
    assert_eq!(observed["apiVersion"], 3);
    assert!(observed["reconfiguration"].is_null());

    // 2. Add node 4 while two followers are paused: the VotersRecord cannot commit, so CommittedVoters
    //    visibly lags CurrentVoters; resuming them lets the two converge.
    let leader = c.describe().unwrap().partition.leader_id;
    let paused: Vec<i32> = [1, 2, 3].into_iter().filter(|i| *i != leader).collect();
    for p in &paused {
        c.signal(*p, "STOP");
    }
    // The leader first: a paused controller only answers after the pause.
    let bootstrap = c.addr(leader);
    let dir4 = c.nodes[&4].dir.to_str().unwrap().to_string();
    let endpoint4 = c.addr(4);
    let adder = std::thread::spawn(move || {
        run(&[
            "add-voter",
            "--bootstrap-controller",
            &bootstrap,
            "--data-dir",
            &dir4,
            "--endpoint",
            &endpoint4,
        ])
    });
    let lagging = wait_until(
        "CurrentVoters to include 4 before CommittedVoters",
        Duration::from_secs(10),
        || {
            let d = c.describe_via(&c.addr(leader))?;
            let (current, committed, _) = ids(&d);
            (current == [1, 2, 3, 4] && committed == [1, 2, 3]).then_some(d)
        },
    );
    assert!(
        lagging
            .status_text()
            .contains("Reconfiguration:        adding {\"id\": 4"),
        "{}",
        lagging.status_text()
    );
    for p in &paused {
        c.signal(*p, "CONT");
    }
    let out = adder.join().unwrap();
    assert!(
        out.status.success(),
        "add-voter: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Added voter 4"));
    wait_until(
        "CommittedVoters to converge to {1,2,3,4}",
        Duration::from_secs(10),
        || {
            let (current, committed, _) = ids(&c.describe()?);
            (current == [1, 2, 3, 4] && committed == [1, 2, 3, 4]).then_some(())
        },
    );

    // 3. Remove a follower.
    let leader = c.describe().unwrap().partition.leader_id;
    let follower = [1, 2, 3, 4].into_iter().find(|i| *i != leader).unwrap();
    let out = c.cli(&[
        "remove-voter",
        "--bootstrap-controller",
        &c.bootstrap(),
        "--node-id",
        &follower.to_string(),
    ]);
    assert!(
        out.status.success(),
        "remove-voter: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let remaining: Vec<i32> = [1, 2, 3, 4]
        .into_iter()
        .filter(|i| *i != follower)
        .collect();
    wait_until(
        "the follower's removal to commit",
        Duration::from_secs(10),
        || {
            let (current, committed, _) = ids(&c.describe()?);
            (current == remaining && committed == remaining).then_some(())
        },
    );

    // A Kafka error code is printed by name with exit code 1.
    let out = c.cli(&[
        "remove-voter",
        "--bootstrap-controller",
        &c.bootstrap(),
        "--node-id",
        "99",
        "--directory-id",
        "AAAAAAAAAAAAAAAAAAAAAQ",
        "--timeout-ms",
        "3000",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("VOTER_NOT_FOUND (127)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // 4. Remove the leader itself, with the others paused so the removal stays uncommitted for a while:
    //    `describe` keeps working although the leader is no longer in CurrentVoters (Kafka's tool crashes).
    let leader = c.describe().unwrap().partition.leader_id;
    let others: Vec<i32> = remaining.iter().copied().filter(|i| *i != leader).collect();
    for p in &others {
        c.signal(*p, "STOP");
    }
    let bootstrap = c.addr(leader);
    let remover = std::thread::spawn(move || {
        run(&[
            "remove-voter",
            "--bootstrap-controller",
            &bootstrap,
            "--node-id",
            &leader.to_string(),
        ])
    });
    wait_until(
        "the leader to be removed from CurrentVoters but not from CommittedVoters",
        Duration::from_secs(10),
        || {
            let d = c.describe_via(&c.addr(leader))?;
            let (current, committed, _) = ids(&d);
            (!current.contains(&leader) && committed.contains(&leader)).then_some(())
        },
    );
    let out = c.cli(&[
        "describe",
        "--bootstrap-controller",
        &c.addr(leader),
        "--status",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "describe while the leader removed itself: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("LeaderId:               {leader}\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Reconfiguration:        removing {{\"id\": {leader}"
        )),
        "{text}"
    );
    let out = c.cli(&[
        "describe",
        "--bootstrap-controller",
        &c.addr(leader),
        "--replication",
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .unwrap()
        .trim_end()
        .ends_with("Leader"));
    for p in &others {
        c.signal(*p, "CONT");
    }
    let out = remover.join().unwrap();
    assert!(
        out.status.success(),
        "remove-voter (leader): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = wait_until(
        "a new leader among the remaining voters",
        Duration::from_secs(20),
        || {
            let d = c.describe_via(&c.bootstrap_of(&others))?;
            let (current, committed, _) = ids(&d);
            (current == others && committed == others && others.contains(&d.partition.leader_id))
                .then_some(d)
        },
    );
    assert!(d.partition.high_watermark > 0);
    c.kill(4);
}

#[test]
fn cli_errors_have_documented_exit_codes() {
    let port = free_ports(1)[0];
    let addr = format!("127.0.0.1:{port}");
    let out = run(&["describe", "--bootstrap-controller", &addr, "--status"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "unreachable: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach"));
    let out = run(&["describe", "--bootstrap-controller", &addr]);
    assert_eq!(out.status.code(), Some(2), "usage");
    // A silent server: accepts but never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    let out = run(&[
        "describe",
        "--bootstrap-controller",
        &silent_addr,
        "--status",
        "--timeout-ms",
        "300",
    ]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "timeout: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(silent);
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "node",
        "--data-dir",
        dir.path().to_str().unwrap(),
        "--listener",
        &addr,
    ]);
    assert_eq!(
        out.status.code(),
        Some(6),
        "unformatted dir: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
