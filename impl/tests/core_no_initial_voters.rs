//! A replica formatted without initial voters (Kafka's `kafka-storage format --no-initial-controllers`):
//! `kraft.version` 1 and no voter set. It starts as an observer, asks its bootstrap servers (Kafka's
//! `controller.quorum.bootstrap.servers`, peers −2, −3, …) while it knows no leader, follows the leader they
//! name, learns the voter set from the replicated VotersRecord, and can then be added with AddRaftVoter.
//! Deterministic: every message is handed over by the test.

use kraft::log::RaftLog;
use kraft::node::Harness;
use kraft::node::{
    bootstrap_server_id, errors, Bootstrap, Message, Millis, NodeError, Output, Role, Timer,
};
use kraft_sim::{self as sim, Sim};

const JOINER: i32 = 4;

/// Voters 1–3 led by 1 and caught up, plus node 4 formatted without initial voters whose bootstrap
/// servers are the listeners of `bootstrap` (in order).
fn cluster(bootstrap: &[i32]) -> Sim {
    let voters = sim::voter_set(&[1, 2, 3]);
    let mut configs: Vec<_> = (1..=3)
        .map(|id| sim::config(id, Bootstrap::Checkpoint(voters.clone()), 3))
        .collect();
    let mut joiner = sim::config(JOINER, Bootstrap::NoInitialVoters, 3);
    joiner.bootstrap_servers = bootstrap.iter().map(|id| sim::listener(*id)).collect();
    configs.push(joiner);
    let mut sim = Sim::with_configs(configs).unwrap();
    sim.elect(1);
    sim.replicate(20);
    assert_eq!(sim.node(1).role(), Role::Leader);
    sim
}

/// The one Fetch request in `out`: (destination, request).
fn fetch_in(out: &Output) -> (i32, Message) {
    let fetches: Vec<_> = out
        .requests
        .iter()
        .filter(|(_, m)| matches!(m, Message::FetchRequest(_)))
        .cloned()
        .collect();
    assert_eq!(fetches.len(), 1, "{:?}", out.requests);
    fetches[0].clone()
}

/// Node `server` answers the joiner's Fetch (sent to bootstrap peer `to`); the joiner reads the answer as
/// coming from `to`. Returns the answer's error code.
fn via_bootstrap(sim: &mut Sim, now: Millis, server: i32, to: i32, req: Message) -> i16 {
    let answer = sim.node_mut(server).handle(now, JOINER, req);
    let (dest, resp) = answer
        .replies
        .iter()
        .find(|(_, m)| matches!(m, Message::FetchResponse(_)))
        .cloned()
        .expect("a Fetch answer");
    assert_eq!(dest, JOINER);
    let Message::FetchResponse(r) = &resp else {
        unreachable!()
    };
    let code = r.responses[0].partitions[0].error_code;
    let out = sim.node_mut(JOINER).handle(now, to, resp);
    sim.absorb(JOINER, out);
    code
}

#[test]
fn without_bootstrap_servers_the_node_is_refused() {
    let config = sim::config(JOINER, Bootstrap::NoInitialVoters, 1);
    let err = kraft::node::Node::new(config, kraft::log::MemoryLog::new(), Default::default())
        .err()
        .expect("refused");
    assert!(matches!(err, NodeError::Config(_)), "{err}");
}

#[test]
fn an_observer_finds_the_leader_through_a_bootstrap_server_and_learns_the_voters() {
    let mut sim = cluster(&[2, 3]);
    let joiner = sim.node(JOINER);
    assert!(!joiner.is_voter());
    assert!(joiner.latest_voters().is_empty());
    assert_eq!(joiner.kraft_version(), 1);
    assert_eq!(joiner.endpoint_of(-2), Some(sim::listener(2)));
    assert_eq!(joiner.endpoint_of(-3), Some(sim::listener(3)));
    assert_eq!(joiner.endpoint_of(-4), None);
    assert_eq!(bootstrap_server_id(1), -3);

    // It knows no leader: its Fetch goes to the first bootstrap server, a follower, which names leader 1
    // (and its endpoint) in NOT_LEADER_OR_FOLLOWER... or FENCED_LEADER_EPOCH, the joiner being at epoch 0.
    let now = sim.clock(JOINER) + 1;
    let out = sim.node_mut(JOINER).fire(now, Timer::Fetch);
    let (to, req) = fetch_in(&out);
    assert_eq!(to, -2);
    let code = via_bootstrap(&mut sim, now, 2, -2, req);
    assert_ne!(code, errors::NONE);
    let joiner = sim.node(JOINER);
    assert_eq!(
        (joiner.role(), joiner.leader_id(), joiner.epoch()),
        (Role::Follower, Some(1), sim.node(1).epoch())
    );
    assert_eq!(joiner.endpoint_of(1), Some(sim::listener(1)));

    // It fetches from the leader and learns the voters from the replicated VotersRecord.
    sim.replicate(20);
    let joiner = sim.node(JOINER);
    assert_eq!(
        joiner.latest_voters().ids().collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    // The converse of the empty start above, so that check can fail.
    assert!(!joiner.latest_voters().is_empty());
    assert_eq!(
        joiner
            .committed_voters()
            .map(|s| s.ids().collect::<Vec<_>>()),
        Some(vec![1, 2, 3])
    );
    assert_eq!(joiner.log().end_offset(), sim.node(1).log().end_offset());
    assert!(!joiner.is_voter());

    // AddRaftVoter makes it a voter; it survives a restart from its own log.
    let replies = sim.client(1, sim::add_voter_request(JOINER));
    assert!(replies.is_empty(), "answered at commit: {replies:?}");
    sim.replicate(20);
    assert!(sim.node(JOINER).is_voter());
    assert_eq!(sim.node(1).latest_voters().len(), 4);
    sim.crash(JOINER);
    sim.restart(JOINER).unwrap();
    let joiner = sim.node(JOINER);
    assert!(joiner.is_voter());
    assert_eq!(joiner.latest_voters().len(), 4);
}

#[test]
fn a_bootstrap_server_that_leads_is_followed_by_the_leader_it_names() {
    let mut sim = cluster(&[1]);
    let leader_epoch = sim.node(1).epoch();
    // First contact: FENCED_LEADER_EPOCH (the joiner is at epoch 0) names leader 1.
    let now = sim.clock(JOINER) + 1;
    let out = sim.node_mut(JOINER).fire(now, Timer::Fetch);
    let (to, req) = fetch_in(&out);
    assert_eq!(to, -2);
    assert_eq!(
        via_bootstrap(&mut sim, now, 1, -2, req),
        errors::FENCED_LEADER_EPOCH
    );
    assert_eq!(sim.node(JOINER).leader_id(), Some(1));
    sim.replicate(20);

    // Its fetch timeout makes it Unattached in the same epoch: it asks the bootstrap server again, which
    // answers with records; the answer names leader 1 (CurrentLeader), not peer −2.
    sim.fire(JOINER, Timer::FetchTimeout);
    assert_eq!(sim.node(JOINER).role(), Role::Unattached);
    sim.append(1, &[b"after"]).unwrap();
    let now = sim.clock(JOINER) + 1;
    let out = sim.node_mut(JOINER).fire(now, Timer::Fetch);
    let (to, req) = fetch_in(&out);
    assert_eq!(to, -2);
    sim.nodes.get_mut(&1).unwrap().clock = sim.clock(1).max(now);
    assert_eq!(via_bootstrap(&mut sim, now, 1, -2, req), errors::NONE);
    let joiner = sim.node(JOINER);
    assert_eq!(
        (joiner.role(), joiner.leader_id(), joiner.epoch()),
        (Role::Follower, Some(1), leader_epoch)
    );
    assert_eq!(joiner.log().end_offset(), sim.node(1).log().end_offset());
}
