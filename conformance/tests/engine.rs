//! The graph replay on the distributed engine counts what the single-process search counts: two
//! processes over loopback (one worker each, so every other pair crosses processes as its path and is
//! rebuilt there) against `--engine local`, at bounds small enough for seconds.

use std::net::TcpListener;
use std::process::{Command, Output};

const GRAPH: [&str; 6] = [
    "--only",
    "graph",
    "--graph",
    "membership",
    "--in-flight",
    "1",
];

fn summary(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find(|l| l.starts_with("conformance: "))
        .unwrap_or_else(|| panic!("no summary line in {stdout}"))
        .to_string()
}

/// The summary's counts that do not depend on how the work was spread: transitions, model states, the
/// graphs covered, refusal reasons and divergences (distinct encodings depend on each worker's cache).
fn counts(line: &str) -> (String, String) {
    let (head, tail) = line.split_once(", 0 walks, ").expect("the summary's shape");
    let refusals = tail
        .split_once(" DescribeQuorum encodings checked, ")
        .expect("the summary's shape")
        .1;
    (head.to_string(), refusals.to_string())
}

#[test]
fn two_processes_count_what_one_process_counts() {
    let bin = env!("CARGO_BIN_EXE_conformance");
    let local = Command::new(bin)
        .args(GRAPH)
        .args(["--threads", "1"])
        .output()
        .expect("the conformance binary runs");
    // Two free loopback ports for the two processes.
    let ports: Vec<u16> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect::<Vec<_>>()
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    let hostfile = std::env::temp_dir().join(format!("conformance-hosts-{}", std::process::id()));
    std::fs::write(
        &hostfile,
        format!("127.0.0.1:{}\n127.0.0.1:{}\n", ports[0], ports[1]),
    )
    .unwrap();
    let other = Command::new(bin)
        .args(GRAPH)
        .args(["--engine", "timely", "--workers", "1", "--processes", "2"])
        .args(["--process", "1", "--hostfile"])
        .arg(&hostfile)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("process 1 starts");
    let first = Command::new(bin)
        .args(GRAPH)
        .args(["--engine", "timely", "--workers", "1", "--processes", "2"])
        .args(["--process", "0", "--hostfile"])
        .arg(&hostfile)
        .output()
        .expect("process 0 runs");
    let other = other.wait_with_output().expect("process 1 ends");
    let _ = std::fs::remove_file(&hostfile);
    let one = summary(&local);
    let two = summary(&first);
    assert!(summary(&other).contains("process 1 of 2"));
    assert!(one.contains("100% of the graph at membership["), "{one}");
    assert_eq!(counts(&one), counts(&two), "\n{one}\n{two}");
    // Pairs crossed processes and were rebuilt from their paths.
    let stdout = String::from_utf8_lossy(&first.stdout);
    let rebuilt = stdout
        .lines()
        .find_map(|l| {
            l.split_once(" pairs rebuilt here")
                .map(|(a, _)| a.to_string())
        })
        .and_then(|a| a.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()))
        .expect("the engine line");
    assert!(rebuilt > 0, "{stdout}");
}

/// What a pair costs when it crosses processes, on the first states of a graph (breadth-first):
/// its bytes as timely writes them (bincode of `engine::Sent`) and the time to rebuild it from its
/// path. `CONFORMANCE_TRAVEL_GRAPH` (default `membership`) and `CONFORMANCE_TRAVEL_STATES` (default
/// 2000) choose; run with `--release --ignored --nocapture`.
#[test]
#[ignore]
fn print_travel_cost() {
    use conformance::engine::{GateSpace, Sent, Travel};
    use model::engine::Space;
    let name = std::env::var("CONFORMANCE_TRAVEL_GRAPH").unwrap_or("membership".into());
    let n: usize = std::env::var("CONFORMANCE_TRAVEL_STATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let cfg = conformance::sources::graph_config(&name).expect("a named graph");
    let wire = conformance::wire::WireChecker::load(&conformance::wire::default_messages_dir())
        .expect("the schemas");
    let space = GateSpace::new(&conformance::graph::GraphOptions::new(cfg), &wire)
        .unwrap()
        .unwrap_or_else(|d| panic!("the root diverges: {d:?}"));
    let mut queue = std::collections::VecDeque::from(space.roots());
    let mut seen = std::collections::HashSet::new();
    let (mut bytes, mut actions, mut pairs, mut nanos) = (0usize, 0usize, 0usize, 0u128);
    let (mut out, mut found) = (Vec::new(), Vec::new());
    while let Some(t) = queue.pop_front() {
        if pairs >= n {
            break;
        }
        if let Travel::Pair { path, .. } = &t {
            let sent = bincode::serialize(&Sent::from(t.clone())).unwrap();
            bytes += sent.len();
            actions += path.len();
            pairs += 1;
            let started = std::time::Instant::now();
            let back = space.rebuilt(path).expect("the path rebuilds");
            nanos += started.elapsed().as_nanos();
            assert_eq!(back.model_fingerprint(), space.fingerprint(&t));
        }
        space.expand(&t, &mut out, &mut found);
        for (_, s) in out.drain(..) {
            if seen.insert(space.fingerprint(&s)) {
                queue.push_back(s);
            }
        }
    }
    let per = |x: f64| x / pairs.max(1) as f64;
    println!(
        "{name}: {pairs} pairs, {:.1} actions on the path, {:.1} bytes as bincode, {:.1} µs to rebuild, per pair",
        per(actions as f64),
        per(bytes as f64),
        per(nanos as f64 / 1e3)
    );
}
