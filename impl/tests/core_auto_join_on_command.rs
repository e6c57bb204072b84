//! Auto-join on command (`Harness::auto_join_on_command_only`, `Harness::auto_join_now`): the hooks the
//! conformance replay drives auto-join with. Switched to on-command, an observer's period never sends
//! the request by itself; `auto_join_now` sends exactly what the period would have sent.

use kraft::node::{Bootstrap, Harness, Message};
use kraft_sim::{config, voter_set, Sim};

/// Voters 1–3 and observer 4 (with auto-join if `auto_join`), node 1 elected and everyone caught up.
fn cluster(auto_join: bool) -> Sim {
    let set = voter_set(&[1, 2, 3]);
    let mut sim = Sim::with_configs((1..=4).map(|id| {
        let mut c = config(id, Bootstrap::Checkpoint(set.clone()), 11);
        c.auto_join = auto_join && id == 4;
        c
    }))
    .unwrap();
    sim.elect(1);
    sim.replicate(20);
    assert_eq!(sim.leader(), Some(1));
    sim
}

/// Lets the cluster run for `rounds` seconds, delivering everything.
fn run(sim: &mut Sim, rounds: usize) {
    for _ in 0..rounds {
        sim.advance(1000);
        sim.deliver_all(100);
    }
}

#[test]
fn the_period_sends_unless_switched_to_on_command() {
    let mut periodic = cluster(true);
    run(&mut periodic, 10);
    assert!(periodic.node(1).latest_voters().contains_id(4));

    let mut on_command = cluster(true);
    on_command.node_mut(4).auto_join_on_command_only();
    run(&mut on_command, 10);
    assert!(!on_command.node(1).latest_voters().contains_id(4));
    assert_eq!(on_command.leader(), Some(1));
}

#[test]
fn auto_join_now_sends_the_request_of_the_period() {
    let mut sim = cluster(true);
    sim.node_mut(4).auto_join_on_command_only();
    let now = sim.clock(4) + 1;
    let out = sim.node_mut(4).auto_join_now(now);
    let [(1, Message::AddRaftVoterRequest(r))] = out.requests.as_slice() else {
        panic!(
            "expected one AddRaftVoter to the leader: {:?}",
            out.requests
        );
    };
    assert_eq!(r.voter_id, 4);
    assert_eq!(r.voter_directory_id, kraft_sim::directory_id(4));
    assert_eq!(out.replies.len() + out.client_replies.len(), 0);
    // A voter has nothing to ask, and neither has a node without auto-join.
    assert!(sim.node_mut(2).auto_join_now(now).requests.is_empty());
    let mut off = cluster(false);
    assert!(off.node_mut(4).auto_join_now(now).requests.is_empty());
}
