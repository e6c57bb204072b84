//! The black-box kit against a real `kraft node` process (in CI), and against a
//! node that answers garbage or nothing (typed divergences, no panic, no hang).

use std::io::{Read, Write};
use std::net::TcpListener;

use clap::Parser;
use conformance::kit::{self, KitArgs};

fn args(extra: &[&str]) -> KitArgs {
    let mut v = vec!["node"];
    v.extend_from_slice(extra);
    KitArgs::parse_from(v)
}

/// The kit against a fresh `kraft node` (30 s waits) with `extra` arguments: every scenario and every
/// report line ok.
fn run_against_kraft(extra: &[&str]) -> kit::Outcome {
    let mut v = vec![
        "--kraft-bin",
        env!("CARGO_BIN_EXE_kit-kraft"),
        "--wait-ms",
        "30000",
    ];
    v.extend_from_slice(extra);
    let o = kit::run(&args(&v)).expect("the kit starts");
    for (s, r) in &o.scenarios {
        assert!(r.is_ok(), "scenario {s}: {r:?}");
    }
    assert!(o.report.lines.iter().all(|l| l.verdict.starts_with("ok")));
    o
}

/// Voter 1 loses its disk: its new key fetches as an observer, the operator removes the stale key and
/// adds the new one, and `kraft` answers every step as the model says.
#[test]
fn kraft_leader_replaces_a_voter_that_lost_its_disk() {
    let o = run_against_kraft(&["--scenario", "disk-loss"]);
    let names: Vec<&str> = o.scenarios.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["first-election", "disk-loss"]);
    let t = &o.report.transitions;
    for key in ["DiskLoss at kit", "Fetch by kit from node"] {
        assert!(t.contains_key(key), "missing {key}: {t:?}");
    }
}

/// The node lost its disk and auto-joins: formatted with no voter set under a new directory id, it
/// asks the kit's leader to remove its stale key, then to add its own (v1, AckWhenCommitted false,
/// its listener), in that order, fetches on as a voter, and asks nothing more.
#[test]
fn kraft_node_that_lost_its_disk_joins_again_by_itself() {
    let o = run_against_kraft(&["--scenario", "auto-join"]);
    let names: Vec<&str> = o.scenarios.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["auto-join"]);
    let t = &o.report.transitions;
    assert_eq!(t.get("AutoJoin from node to kit"), Some(&2), "{t:?}");
    let c = &o.report.coverage;
    for key in [
        "kit→node RemoveRaftVoterResponse error 0",
        "kit→node AddRaftVoterResponse error 0",
    ] {
        assert_eq!(c.get(key), Some(&1), "{key}: {c:?}");
    }
    let requests: Vec<&str> = o
        .report
        .lines
        .iter()
        .filter(|l| l.action.contains("auto-join"))
        .map(|l| l.observed.as_str())
        .collect();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(
        requests[0].starts_with("RemoveRaftVoterRequest v0 (id 0"),
        "{requests:?}"
    );
    assert!(
        requests[0].ends_with("RemoveStale { dir: 0 }"),
        "{requests:?}"
    );
    assert!(
        requests[1].contains("AddRaftVoterRequest v1 (id 0")
            && requests[1].contains("AckWhenCommitted false")
            && requests[1].ends_with(": Add"),
        "{requests:?}"
    );
}

/// The auto-join node is formatted by the kit itself (no voter set): a node given with `--bootstrap`
/// is refused before anything starts.
#[test]
fn auto_join_is_refused_with_bootstrap() {
    let a = args(&["--bootstrap", "127.0.0.1:1", "--scenario", "auto-join"]);
    let e = kit::run(&a).err().expect("refused");
    assert!(e.contains("not with --bootstrap"), "{e}");
}

#[test]
fn kraft_node_follows_the_model_over_the_wire() {
    let o = run_against_kraft(&[]);
    let names: Vec<&str> = o.scenarios.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "first-election",
            "add-voter",
            "follow",
            "install-snapshot",
            "first-election",
            "leader-snapshot"
        ]
    );
    // What the slice must have exercised: the node's own election, votes both ways, the node as leader
    // serving fetches (including a fenced observer), as follower fetching, and a committed addition.
    let t = &o.report.transitions;
    for key in [
        "ElectionTimeout at node",
        "Deliver PreVoteRequest node→kit",
        "Deliver VoteRequest node→kit",
        "Deliver VoteRequest kit→node",
        "Deliver BeginQuorumEpoch node→kit",
        "Deliver BeginQuorumEpoch kit→node",
        "Fetch by kit from node",
        "Fetch by node from kit",
        "Deliver FetchResponse FencedLeaderEpoch node→kit",
        "Change Add at node",
    ] {
        assert!(t.contains_key(key), "transition {key} not driven: {t:?}");
    }
    assert!(o
        .report
        .coverage
        .contains_key("node→kit AddRaftVoterResponse error 0"));
    // The install from the kit's leader: a SnapshotId answer, the download in chunks, the Fetch after.
    let c = &o.report.coverage;
    assert!(
        c.get("node→kit FetchSnapshotRequest")
            .is_some_and(|n| *n >= 2),
        "{c:?}"
    );
    assert!(
        c.contains_key("kit→node FetchSnapshotResponse error 0"),
        "{c:?}"
    );
    assert!(o
        .report
        .coverage
        .contains_key("node→kit DescribeQuorumResponse v3 leader"));
    // The node as the leader serving its own snapshot: a SnapshotId answer to the observer's fetch at
    // 0, the download in chunks, the snapshot's bytes checked.
    assert!(
        c.get("kit→node FetchSnapshotRequest")
            .is_some_and(|n| *n >= 2),
        "{c:?}"
    );
    assert!(
        c.contains_key("node→kit FetchSnapshotResponse error 0"),
        "{c:?}"
    );
    for verdict in ["ok (SnapshotId 3@1, no records)", "ok (0 data records)"] {
        assert!(
            o.report.lines.iter().any(|l| l.verdict == verdict),
            "no report line {verdict:?}"
        );
    }
}

/// The node as a leader that moved its log start: a fetch at offset 1 is answered with the snapshot
/// the log now starts at (3@1), once the node's retention check has run, 60 s after its start; too
/// long for CI (`cargo test -p conformance --test kit -- --ignored`).
#[test]
#[ignore = "waits 60 s for the node's retention clock"]
fn kraft_leader_serves_a_snapshot_below_its_moved_log_start() {
    let o = run_against_kraft(&["--scenario", "leader-log-start"]);
    let names: Vec<&str> = o.scenarios.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["first-election", "leader-log-start"]);
    let c = &o.report.coverage;
    assert!(
        c.get("kit→node FetchSnapshotRequest")
            .is_some_and(|n| *n >= 2),
        "{c:?}"
    );
    assert!(o
        .report
        .lines
        .iter()
        .any(|l| l.action.contains("fetches at offset 1")
            && l.verdict == "ok (SnapshotId 3@1, no records)"));
}

/// Paths generated from the model's first-election and membership graphs (6 each, seed 1), each
/// against a fresh `kraft node`: 0 divergences, and the membership walks reach the node's operator
/// answers (AddRaftVoter / RemoveRaftVoter, refusals included) and DescribeQuorum v3.
#[test]
fn graph_walks_of_first_election_and_membership_have_no_divergence() {
    let o = run_against_kraft(&[
        "--walk",
        "first-election",
        "--walk",
        "membership",
        "--walk-paths",
        "6",
    ]);
    assert_eq!(o.scenarios.len(), 12);
    assert_eq!(o.walks.len(), 2);
    for (g, w) in &o.walks {
        assert_eq!(w.paths, 6, "{g}");
        assert!(w.choices > 0 && w.distinct > 0, "{g}: {w:?}");
    }
    let t = &o.report.transitions;
    for key in ["ElectionTimeout at node", "Fetch by kit from node"] {
        assert!(t.contains_key(key), "transition {key} not driven: {t:?}");
    }
    let c = &o.report.coverage;
    assert!(
        c.keys()
            .any(|k| k.starts_with("node→kit AddRaftVoterResponse"))
            || c.keys()
                .any(|k| k.starts_with("node→kit RemoveRaftVoterResponse")),
        "no operator answer: {c:?}"
    );
}

/// A fake node: accepts connections and answers every request frame with `answer` (or nothing).
fn fake_node(answer: Option<Vec<u8>>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    if let Some(a) = &answer {
                        let _ = s.write_all(a);
                    }
                }
            });
        }
    });
    addr
}

fn run_against(addr: &str, scenario: &str) -> String {
    let a = args(&[
        "--bootstrap",
        addr,
        "--kit-port",
        "0",
        "--scenario",
        scenario,
        "--wait-ms",
        "500",
    ]);
    let o = kit::run(&a).expect("the kit starts");
    assert_eq!(o.divergences(), 1, "{:?}", o.scenarios);
    let line = o.report.lines.last().expect("a report line");
    assert!(line.verdict.starts_with("divergence"), "{line:?}");
    o.scenarios[0].1.clone().expect_err("diverged")
}

#[test]
fn garbage_from_the_node_is_a_typed_divergence() {
    // A frame of 8 bytes: correlation id 1 and four bytes that are no VoteResponse.
    let e = run_against(
        &fake_node(Some(vec![0, 0, 0, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff])),
        "follow",
    );
    assert!(
        e.contains("undecodable") || e.contains("correlation"),
        "{e}"
    );
    // A size prefix far beyond the kit's frame bound.
    let e = run_against(&fake_node(Some(vec![0x7f, 0xff, 0xff, 0xff])), "follow");
    assert!(e.contains("connection to the node"), "{e}");
}

#[test]
fn a_silent_node_times_out() {
    let e = run_against(&fake_node(None), "follow");
    assert!(e.contains("no response within"), "{e}");
    // A node that never stands for election: the kit's wait for its timer ends.
    let e = run_against(&fake_node(None), "first-election");
    assert!(e.contains("timed out"), "{e}");
}

/// `--elected-appends` batches beyond `--node-appends` are refused before anything starts (they
/// would show up mid-run as appends the model does not allow).
#[test]
fn elected_appends_beyond_node_appends_are_refused() {
    let a = args(&[
        "--tour",
        "membership",
        "--node-appends",
        "3",
        "--elected-appends",
        "3,1",
    ]);
    assert_eq!(
        a.check(),
        Err(kit::ArgError::ElectedAppendsBeyondNodeAppends {
            elected: 4,
            node: 3
        })
    );
    let e = kit::run(&a).err().expect("refused");
    assert!(e.contains("--elected-appends adds up to 4"), "{e}");
    let big = args(&["--node-appends", "255", "--elected-appends", "255,255"]);
    assert!(big.check().is_err());
    let fits = args(&["--node-appends", "4", "--elected-appends", "3,1"]);
    assert_eq!(fits.check(), Ok(()));
    assert_eq!(args(&[]).check(), Ok(()));
}

/// The tours' path covers (model only, no process): every path starts at the graph's start and is
/// connected, and together they take every drivable transition, the node's first election and its
/// operator changes included.
#[test]
fn tour_paths_cover_every_drivable_transition() {
    use model::types::Action;
    for name in kit::tour::TOURS {
        let g = kit::tour::TourGraph::build(name).expect("the tour graph builds");
        let paths = g.cover(&vec![true; g.edges.len()], 40);
        let mut hit = vec![false; g.edges.len()];
        for p in &paths {
            let mut at = 0;
            for &e in p {
                assert_eq!(g.edges[e].from, at, "{name}: a path jumps");
                at = g.edges[e].to;
                hit[e] = true;
            }
        }
        let missed = hit.iter().filter(|h| !**h).count();
        assert_eq!(missed, 0, "{name}: {missed} transitions no path takes");
        eprintln!(
            "{name}: {} states, {} transitions, {} paths, {} steps",
            g.vertices.len(),
            g.edges.len(),
            paths.len(),
            paths.iter().map(Vec::len).sum::<usize>()
        );
        let acts: Vec<Action> = g.edges.iter().map(|e| e.action).collect();
        let wanted = if name == "first-election" {
            vec![Action::ElectionTimeout(kit::NUT), Action::Restart(kit::NUT)]
        } else {
            vec![Action::Change {
                server: kit::NUT,
                op: model::types::ChangeOp::Add(3),
            }]
        };
        for w in wanted {
            assert!(acts.contains(&w), "{name}: no {w:?}");
        }
    }
}

/// The membership tour of a Kafka controller (`--elected-appends 3,1`: its 3 bootstrap metadata
/// records once elected, its RegisterControllerRecord once those are committed): it starts after
/// them, with every replica caught up and the HW past them, and still reaches the operator changes.
#[test]
fn membership_tour_starts_after_the_nodes_own_records() {
    use model::types::{Action, Kind};
    let g = kit::tour::TourGraph::build_for("membership", &[3, 1]).expect("the tour graph builds");
    let start = &g.vertices[0].state;
    let leader = &start.servers[kit::NUT as usize];
    let data = leader
        .log
        .as_slice()
        .iter()
        .filter(|e| e.kind == Kind::Data)
        .count();
    assert_eq!(data, 4, "{:?}", leader.log);
    for (i, s) in start.servers.iter().enumerate() {
        assert_eq!(s.log, leader.log, "server {i}");
        assert_eq!(s.hw, Some(leader.log.len()), "server {i}");
    }
    assert!(start.network.is_empty());
    let written: Vec<u8> = g.start_stages.iter().map(|s| s.0).collect();
    assert_eq!(written, [3, 4]);
    assert!(g.start_stages[0].1.contains(&3), "{:?}", g.start_stages);
    let adds = g
        .edges
        .iter()
        .filter(|e| matches!(e.action, Action::Change { server: 0, .. }))
        .count();
    assert!(adds > 0, "no operator change");
    eprintln!(
        "membership after 3 + 1 records: {} states, {} transitions, start {:?}",
        g.vertices.len(),
        g.edges.len(),
        g.start_stages
    );
}

/// The first-election tour of a node that writes records of its own once elected (3, then 1): each
/// batch comes as the node's eager step once its HW passes what came before, and paths go on after.
#[test]
fn first_election_tour_takes_the_nodes_own_records_as_an_eager_step() {
    use model::types::Kind;
    let plain = kit::tour::TourGraph::build("first-election").expect("builds");
    let g = kit::tour::TourGraph::build_for("first-election", &[3, 1]).expect("builds");
    let with = |g: &kit::tour::TourGraph, n: usize| {
        g.vertices
            .iter()
            .filter(|v| usize::from(v.state.history.data) == n)
            .count()
    };
    assert_eq!(with(&plain, 0), plain.vertices.len());
    assert!(with(&g, 3) > 0 && with(&g, 4) > 0);
    for v in &g.vertices {
        let s = &v.state.servers[kit::NUT as usize];
        let data = s
            .log
            .as_slice()
            .iter()
            .filter(|e| e.kind == Kind::Data)
            .count();
        // Whole batches only: the node writes a batch in one eager settle.
        assert!([0, 3, 4].contains(&data), "{:?}", s.log);
        let due = kit::driver::hold::appends_due(&v.state, kit::NUT, &[3, 1]);
        assert_eq!(due, None, "{:?}", v.state);
    }
    eprintln!(
        "first-election with 3 + 1 records: {} states, {} transitions ({} and {} states with 3 and 4)",
        g.vertices.len(),
        g.edges.len(),
        with(&g, 3),
        with(&g, 4)
    );
}

/// The transition tours over TCP: every drivable transition of both
/// graphs taken on the wire with the predicted state before and after, the node's restarts included,
/// and 0 divergences.
#[test]
fn kraft_node_takes_every_drivable_transition_of_the_tours() {
    let o = run_against_kraft(&["--tour", "first-election", "--tour", "membership"]);
    assert_eq!(o.tours.len(), 2);
    for (g, t) in &o.tours {
        assert!(t.transitions > 0, "{g}");
        assert_eq!(t.covered, t.transitions, "{g}: {t:?}");
    }
    let tr = &o.report.transitions;
    for key in [
        "Restart at node",
        "ElectionTimeout at node",
        "Change Remove at node",
    ] {
        assert!(tr.contains_key(key), "transition {key} not driven: {tr:?}");
    }
}

/// The node's timer racing the kit, provoked: a 5 ms election timeout fires again while the kit
/// still holds the node's pre-votes (on 921ac81: 27 to 37 of 60 to 72 paths cut). Such a path
/// is cut, never a divergence, and the next round's node stands with a doubled timeout, so the tour
/// still covers every transition however slow the machine.
#[test]
fn a_node_whose_timer_races_the_kit_is_cut_not_diverged() {
    let o = run_against_kraft(&["--tour", "first-election", "--election-ms", "5"]);
    let t = &o.tours[0].1;
    assert_eq!(t.covered, t.transitions, "{t:?}");
    assert!(t.election_ms >= 5, "{t:?}");
}
