//! `check --engine timely` across processes: two `model` processes on loopback (a hostfile, free
//! ports) give the DFS's verdicts and state counts, and a shortest counterexample as long as
//! Stateright's BFS's.

use model::check::{self, CheckOptions};
use model::config::{Bug, FetchMode, ModelConfig, Start};
use model::engine::Cluster;
use model::KraftModel;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Small bounds (about 40,000 unique states): a fresh cluster, three voters, one election round.
const BOUNDS: [&str; 16] = [
    "--start",
    "fresh",
    "--joiners",
    "0",
    "--max-epoch",
    "2",
    "--max-log",
    "4",
    "--max-changes",
    "0",
    "--crashes",
    "0",
    "--max-in-flight",
    "4",
    "--no-first-election",
    "--json",
];

fn small() -> ModelConfig {
    ModelConfig {
        start: Start::Fresh,
        joiners: 0,
        max_epoch: 2,
        max_log: 4,
        max_changes: 0,
        max_crashes: 0,
        max_in_flight: 4,
        ..check::default_bounds()
    }
}

/// Runs `model check ARGS --engine timely` as two single-worker processes on 127.0.0.1; the
/// JSON report of process 0 and the exit codes.
fn two_processes(args: &[&str]) -> (Value, Option<i32>, Option<i32>) {
    let (report, c0, c1, _) = two_processes_with_stderr(args);
    (report, c0, c1)
}

/// [`two_processes`], and process 0's stderr.
fn two_processes_with_stderr(args: &[&str]) -> (Value, Option<i32>, Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let hostfile = dir.path().join("hosts");
    let ports: Vec<u16> = (0..2)
        .map(|_| {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        })
        .collect();
    let hosts: String = ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect();
    std::fs::write(&hostfile, hosts).unwrap();
    let spawn = |p: usize| {
        Command::new(env!("CARGO_BIN_EXE_model"))
            .arg("check")
            .args(args)
            .args(["--engine", "timely", "--workers", "1", "--processes", "2"])
            .args(["--process", &p.to_string(), "--hostfile"])
            .arg(&hostfile)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (mut p1, p0) = (spawn(1), spawn(0));
    let o0 = p0.wait_with_output().unwrap();
    // Process 1 retries its connection forever if process 0 never listened (its port taken
    // since it was picked): it gets a minute after process 0 ends.
    let deadline = Instant::now() + Duration::from_secs(60);
    while p1.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if p1.try_wait().unwrap().is_none() {
        p1.kill().unwrap();
    }
    let (o0, o1) = (o0, p1.wait_with_output().unwrap());
    // Timely prints its connection progress ("awaiting connections") on stdout, before the report.
    let text = String::from_utf8_lossy(&o0.stdout);
    let json = text.find("\n{").map_or(&*text, |i| &text[i + 1..]);
    let report = serde_json::from_str(json).unwrap_or_else(|e| {
        panic!(
            "{e}: {text}\nstderr 0: {}\nstderr 1: {}",
            String::from_utf8_lossy(&o0.stderr),
            String::from_utf8_lossy(&o1.stderr)
        )
    });
    let stderr = String::from_utf8_lossy(&o0.stderr).into_owned();
    (report, o0.status.code(), o1.status.code(), stderr)
}

#[test]
fn two_processes_count_what_the_dfs_counts() {
    let opts = CheckOptions {
        threads: 2,
        ..CheckOptions::default()
    };
    let dfs = check::run(KraftModel::new(small()).unwrap(), opts);
    assert!(dfs.exhaustive && dfs.ok());
    let one =
        model::engine::kraft::run(KraftModel::new(small()).unwrap(), &opts, &Cluster::local(2))
            .unwrap()
            .expect("process 0");
    assert_eq!(
        (one.unique_states, one.states),
        (dfs.unique_states, dfs.states),
        "1 process x 2 workers"
    );
    assert_eq!(one.properties, dfs.properties);
    let (two, c0, c1) = two_processes(&BOUNDS);
    assert_eq!((c0, c1), (Some(0), Some(0)));
    assert_eq!(two["result"], "ok");
    assert_eq!(two["exhaustive"], true);
    assert_eq!(
        two["unique_states"], dfs.unique_states,
        "2 processes x 1 worker"
    );
    assert_eq!(two["states"], dfs.states);
    assert_eq!(
        two["engine"],
        "timely BFS, 2 process(es) x 1 worker(s), symmetry on"
    );
}

/// A frontier budget of a few states per level: two processes write most of every level to spill
/// files and read it back, with the DFS's counts, and leave no file behind.
#[test]
fn two_processes_spilling_their_frontier_count_what_the_dfs_counts() {
    let opts = CheckOptions {
        threads: 2,
        ..CheckOptions::default()
    };
    let dfs = check::run(KraftModel::new(small()).unwrap(), opts);
    let spill = tempfile::tempdir().unwrap();
    let dir = spill.path().to_str().unwrap();
    let mut args = BOUNDS.to_vec();
    args.extend(["--spill-dir", dir, "--frontier-memory", "4K", "--progress"]);
    let (two, c0, c1, stderr) = two_processes_with_stderr(&args);
    assert_eq!((c0, c1), (Some(0), Some(0)));
    assert_eq!(two["result"], "ok");
    assert_eq!(two["exhaustive"], true);
    assert_eq!(two["unique_states"], dfs.unique_states);
    assert_eq!(two["states"], dfs.states);
    let spilled: u64 = stderr
        .lines()
        .filter_map(|l| l.split(", ").find_map(|f| f.strip_suffix(" spilled")))
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert!(
        spilled > dfs.unique_states as u64 / 2,
        "spilled {spilled}: {stderr}"
    );
    assert_eq!(std::fs::read_dir(spill.path()).unwrap().count(), 0);
}

#[test]
fn two_processes_walk_back_a_shortest_counterexample() {
    let shortest = check::bug_counterexample(Bug::SwapVoter, FetchMode::Sync).expect("caught");
    let (two, c0, c1) = two_processes(&["--bug", "swap-voter", "--json"]);
    assert_eq!((c0, c1), (Some(1), Some(0)));
    assert_eq!(two["result"], "violated");
    let steps = two["counterexample"].as_array().expect("a counterexample");
    assert_eq!(
        steps.len() - 1,
        shortest.actions.len(),
        "as short as the BFS's"
    );
    // The path is a run of the model that ends in a violation of the reported property.
    let model = KraftModel::new(check::bug_bounds(Bug::SwapVoter, FetchMode::Sync)).unwrap();
    let actions: Vec<model::Action> = steps[1..]
        .iter()
        .map(|s| serde_json::from_value(s["action"].clone()).unwrap())
        .collect();
    let t = model::trace::replay(&model, &actions).expect("replays from the initial state");
    let last = t.steps.last().map_or(&t.init, |s| &s.state);
    let name = two["counterexample_property"].as_str().unwrap();
    let p = stateright::Model::properties(&model)
        .into_iter()
        .find(|p| p.name == name)
        .unwrap();
    assert!(!(p.condition)(&model, last), "{name} holds at the end");
}
