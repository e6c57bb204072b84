//! Real `kraft` processes: a voter restarted on a new port sends UpdateRaftVoter (KIP-853) once it follows
//! the leader, and `kraft describe --status` lists it at the new port within seconds.

mod cluster_support;

use std::time::Duration;

use cluster_support::*;

/// The update-voter period is one fetch timeout (Kafka 4.4): 1 s here.
const TIMING: &[&str] = &[
    "--election-timeout-ms",
    "300",
    "--fetch-timeout-ms",
    "1000",
    "--fetch-interval-ms",
    "20",
];

#[test]
fn a_voter_restarted_on_a_new_port_is_listed_there() {
    let mut c = Cluster::start(3, 0, 29, TIMING);
    let d = c.wait_for_leader(Duration::from_secs(20));
    let moved = [1, 2, 3]
        .into_iter()
        .find(|i| *i != d.partition.leader_id)
        .unwrap();
    let old = c.addr(moved);
    c.kill(moved);
    let new_port = free_ports(1)[0];
    c.nodes.get_mut(&moved).unwrap().port = new_port;
    c.start_node(moved);
    let new = format!("CONTROLLER://127.0.0.1:{new_port}");
    let others = c.bootstrap_of(
        &[1, 2, 3]
            .into_iter()
            .filter(|i| *i != moved)
            .collect::<Vec<_>>(),
    );
    let status = wait_until(
        "the moved voter listed at its new port",
        Duration::from_secs(20),
        || {
            let out = c.cli(&["describe", "--bootstrap-controller", &others, "--status"]);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let line = text
                .lines()
                .find(|l| l.starts_with("CurrentVoters:"))?
                .to_string();
            line.contains(&new).then_some(text)
        },
    );
    assert!(
        !status.contains(&format!("CONTROLLER://{old}\"")),
        "{status}"
    );
    assert!(
        c.log_text(moved).contains("sending UpdateRaftVoter"),
        "{}",
        c.log_text(moved)
    );
    // The change commits like any VotersRecord: CommittedVoters follows.
    wait_until(
        "CommittedVoters at the new port",
        Duration::from_secs(10),
        || {
            let out = c.cli(&["describe", "--bootstrap-controller", &others, "--status"]);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let line = text
                .lines()
                .find(|l| l.starts_with("CommittedVoters:"))?
                .to_string();
            line.contains(&new).then_some(())
        },
    );
}
