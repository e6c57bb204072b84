//! `kraft describe` computing CommittedVoters from the log (`--api-version 2`, as against a Kafka leader)
//! agrees with what a `kraft` leader serves at v3, through an uncommitted change, its truncation after the
//! leader's SIGKILL, and a committed one; `--watch` shows each step and never a truncated set as committed.

mod cluster_support;

use std::process::{Command, Stdio};
use std::time::Duration;

use cluster_support::*;
use serde_json::Value;

const TIMING: &[&str] = &[
    "--election-timeout-ms",
    "300",
    // Check-quorum (1.5 × this) outlasts the pauses below, so the leader does not resign in them.
    "--fetch-timeout-ms",
    "5000",
    "--fetch-interval-ms",
    "20",
];

/// (current, committed) keys as `id:directory` of a `describe --json` answer.
type Keys = (Vec<String>, Vec<String>);

fn keys(v: &Value) -> Keys {
    let list = |name: &str| -> Vec<String> {
        v[name]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|r| format!("{}:{}", r["id"], r["directoryId"]))
                    .collect()
            })
            .unwrap_or_default()
    };
    (list("currentVoters"), list("committedVoters"))
}

fn describe_json(addr: &str, version: &str) -> Option<Value> {
    let out = run(&[
        "describe",
        "--bootstrap-controller",
        addr,
        "--status",
        "--json",
        "--api-version",
        version,
        "--timeout-ms",
        "3000",
    ]);
    if !out.status.success() {
        eprintln!(
            "describe v{version}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

/// Computed (v2) and served (v3) answers of the leader at `addr` with the same HW, leader and epoch.
fn computed_and_served(addr: &str) -> Option<(Value, Value)> {
    let served = describe_json(addr, "3")?;
    let computed = describe_json(addr, "2")?;
    let again = describe_json(addr, "3")?;
    let same = |a: &Value, b: &Value| {
        ["highWatermark", "leaderId", "leaderEpoch"]
            .iter()
            .all(|k| a[k] == b[k])
    };
    (same(&served, &computed) && same(&served, &again)).then_some((computed, served))
}

/// Waits until the computed and the served answers agree on a stable quorum whose (current, committed)
/// ids are `want`; returns them.
fn agree(addr: &str, want: (&[i32], &[i32])) -> Keys {
    wait_until(
        "computed CommittedVoters = served",
        Duration::from_secs(20),
        || {
            let Some((computed, served)) = computed_and_served(addr) else {
                eprintln!("no stable pair from {addr}");
                return None;
            };
            let ids = |v: &Value, name: &str| -> Vec<i32> {
                let mut ids: Vec<i32> = v[name]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["id"].as_i64().map(|i| i as i32))
                    .collect();
                ids.sort();
                ids
            };
            if (
                ids(&served, "currentVoters").as_slice(),
                ids(&served, "committedVoters").as_slice(),
            ) != want
            {
                eprintln!("not yet {want:?}: {served}");
                return None;
            }
            assert_eq!(computed["committedVotersSource"], "computed", "{computed}");
            assert_eq!(served["committedVotersSource"], "served", "{served}");
            assert_eq!(keys(&computed), keys(&served), "{computed}\n{served}");
            Some(keys(&computed))
        },
    )
}

#[test]
fn computed_committed_voters_follow_a_change_its_truncation_and_its_commit() {
    let mut c = Cluster::start(3, 1, 7, TIMING);
    let first = c.wait_for_leader(Duration::from_secs(20));
    let leader = first.partition.leader_id;
    wait_until("observer 4 to catch up", Duration::from_secs(10), || {
        let d = c.describe()?;
        let p = &d.partition;
        p.observers
            .iter()
            .any(|o| o.replica_id == 4 && o.log_end_offset > 0)
            .then_some(())
    });
    agree(&c.addr(leader), (&[1, 2, 3], &[1, 2, 3]));
    let watch_file = c.root.path().join("watch.txt");
    let _watch = Proc {
        child: Command::new(BIN)
            .args([
                "describe",
                "--watch",
                "--bootstrap-controller",
                &c.bootstrap_of(&[1, 2, 3]),
            ])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&watch_file).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    };
    let watched = || std::fs::read_to_string(&watch_file).unwrap_or_default();
    wait_until("the watch's first line", Duration::from_secs(10), || {
        watched()
            .contains("CurrentVoters: [1, 2, 3] CommittedVoters: [1, 2, 3]")
            .then_some(())
    });

    // Both followers paused: the leader appends VotersRecord {1,2,3,4} and cannot commit it.
    let followers: Vec<i32> = [1, 2, 3].into_iter().filter(|i| *i != leader).collect();
    for f in &followers {
        c.signal(*f, "STOP");
    }
    let addr = c.addr(leader);
    let adder = {
        let (addr, dir4, endpoint4) = (
            addr.clone(),
            c.nodes[&4].dir.to_str().unwrap().to_string(),
            c.addr(4),
        );
        std::thread::spawn(move || {
            run(&[
                "add-voter",
                "--bootstrap-controller",
                &addr,
                "--data-dir",
                &dir4,
                "--endpoint",
                &endpoint4,
                "--timeout-ms",
                "20000",
            ])
        })
    };
    agree(&addr, (&[1, 2, 3, 4], &[1, 2, 3]));
    wait_until(
        "the watch shows the change uncommitted",
        Duration::from_secs(10),
        || {
            watched()
            .contains("CurrentVoters: [1, 2, 3, 4] CommittedVoters: [1, 2, 3] Reconfiguration: adding 4")
            .then_some(())
        },
    );
    // Resumed, they replicate it and it commits.
    for f in &followers {
        c.signal(*f, "CONT");
    }
    assert!(adder.join().unwrap().status.success());
    agree(&addr, (&[1, 2, 3, 4], &[1, 2, 3, 4]));
    wait_until(
        "the watch shows the commit",
        Duration::from_secs(10),
        || {
            watched()
                .contains("CurrentVoters: [1, 2, 3, 4] CommittedVoters: [1, 2, 3, 4]")
                .then_some(())
        },
    );

    // Every follower paused: the leader alone holds VotersRecord without `gone`; after its SIGKILL the
    // other three (a majority of the committed set) elect a leader without it, and it is truncated.
    let leader = c
        .wait_for_leader(Duration::from_secs(20))
        .partition
        .leader_id;
    let addr = c.addr(leader);
    let followers: Vec<i32> = [1, 2, 3, 4].into_iter().filter(|i| *i != leader).collect();
    let gone = followers[0];
    for f in &followers {
        c.signal(*f, "STOP");
    }
    // A fetch parked at the leader when its follower stopped would carry the new record into that
    // follower's socket: let every parked fetch expire first (MaxWaitMs 500).
    std::thread::sleep(Duration::from_millis(1000));
    let remover = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            run(&[
                "remove-voter",
                "--bootstrap-controller",
                &addr,
                "--node-id",
                &gone.to_string(),
                "--timeout-ms",
                "1500",
            ])
        })
    };
    let smaller: Vec<i32> = [1, 2, 3, 4].into_iter().filter(|i| *i != gone).collect();
    agree(&addr, (&smaller, &[1, 2, 3, 4]));
    wait_until(
        "the watch shows the removal uncommitted",
        Duration::from_secs(10),
        || {
            watched()
                .contains(&format!("Reconfiguration: removing {gone} "))
                .then_some(())
        },
    );
    c.kill(leader);
    for f in &followers {
        c.signal(*f, "CONT");
    }
    let _ = remover.join();
    let next = wait_until("a new leader", Duration::from_secs(20), || {
        c.describe_via(&c.bootstrap_of(&followers))
            .filter(|d| d.partition.high_watermark >= 0 && d.partition.leader_id != leader)
    });
    let next_leader = next.partition.leader_id;
    agree(&c.addr(next_leader), (&[1, 2, 3, 4], &[1, 2, 3, 4]));
    wait_until(
        "the watch follows the new leader",
        Duration::from_secs(10),
        || {
            let text = watched();
            let last = text.lines().last()?;
            (last.contains(&format!("LeaderId: {next_leader} "))
                && last.contains("CurrentVoters: [1, 2, 3, 4] CommittedVoters: [1, 2, 3, 4]"))
            .then_some(())
        },
    );
    // The truncated removal was shown in CurrentVoters, never in CommittedVoters.
    let text = watched();
    let truncated = format!(
        "CommittedVoters: [{}]",
        smaller
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(!text.contains(&truncated), "{truncated} shown:\n{text}");
    assert!(text.lines().count() >= 5, "{text}");
}
