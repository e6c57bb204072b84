//! Restart rules (Kafka's `QuorumState.initialize` and the first poll of the restored role): Resigned if
//! the stored leader is this node, Candidate if it voted for itself, Follower of a stored leader that is
//! a voter of the latest set, else Unattached; the voter history rebuilt from the log.

use kraft::log::MemoryLog;
use kraft::node::{Bootstrap, ElectionState, Message, Node, Role, Timer};
use kraft_sim::{self as sim, Sim};

#[test]
fn restart_rules() {
    let set = sim::voter_set(&[1, 2, 3]);
    let cfg = sim::config(1, Bootstrap::Checkpoint(set.clone()), 1);
    let leader = ElectionState {
        epoch: 4,
        voted: Some(sim::key(1)),
        leader_id: Some(1),
    };
    let n = Node::new(cfg.clone(), MemoryLog::new(), leader).unwrap();
    assert_eq!((n.role(), n.epoch()), (Role::Resigned, 4));
    let voted_self = ElectionState {
        epoch: 4,
        voted: Some(sim::key(1)),
        leader_id: None,
    };
    let n = Node::new(cfg.clone(), MemoryLog::new(), voted_self).unwrap();
    assert_eq!(n.role(), Role::Candidate);
    let follower = ElectionState {
        epoch: 4,
        voted: Some(sim::key(2)),
        leader_id: Some(2),
    };
    let mut n = Node::new(cfg.clone(), MemoryLog::new(), follower).unwrap();
    assert_eq!(
        (n.role(), n.leader_id(), n.election_state().voted),
        (Role::Follower, Some(2), Some(sim::key(2)))
    );
    assert_eq!(n.high_watermark(), None);
    // It fetches from its leader at its first tick.
    let out = n.tick(0);
    let fetches: Vec<i32> = out
        .requests
        .iter()
        .filter(|(_, m)| matches!(m, Message::FetchRequest(_)))
        .map(|(to, _)| *to)
        .collect();
    assert_eq!(fetches, vec![2]);
    // A stored leader outside the latest voter set (its endpoints unknown): Unattached, as Kafka's
    // `initialize` (whose `UnattachedState` keeps the id; this node does not).
    let unknown = ElectionState {
        epoch: 4,
        voted: None,
        leader_id: Some(7),
    };
    let n = Node::new(cfg.clone(), MemoryLog::new(), unknown).unwrap();
    assert_eq!((n.role(), n.leader_id()), (Role::Unattached, None));
    // A non-voter that voted for itself cannot be a candidate.
    let observer = sim::config(7, Bootstrap::Checkpoint(set), 1);
    let n = Node::new(
        observer,
        MemoryLog::new(),
        ElectionState {
            epoch: 2,
            voted: Some(sim::key(7)),
            leader_id: None,
        },
    )
    .unwrap();
    assert_eq!(n.role(), Role::Unattached);
}

/// (pre-vote, epoch, receiver) of each Vote request node `from` has in flight.
fn vote_requests_from(sim: &Sim, from: i32) -> Vec<(bool, i32, i32)> {
    sim.network
        .iter()
        .filter(|e| e.from == from)
        .filter_map(|e| match &e.msg {
            Message::VoteRequest(r) => {
                let p = &r.topics[0].partitions[0];
                Some((p.pre_vote, p.replica_epoch, e.to))
            }
            _ => None,
        })
        .collect()
}

/// Kafka 4.4: `QuorumState.initialize` makes a replica that voted for itself a Candidate at its
/// stored epoch, and its first `pollCandidate` asks every other voter for its vote again.
#[test]
fn a_restarted_candidate_asks_for_its_votes_again() {
    let mut sim = Sim::new(3, 0, 9).unwrap();
    sim.fire(1, Timer::Election);
    let pre_vote = sim.network.iter().position(|e| e.to == 2).unwrap();
    sim.deliver(pre_vote);
    let grant = sim.network.iter().position(|e| e.to == 1).unwrap();
    sim.deliver(grant);
    assert_eq!(
        (sim.node(1).role(), sim.node(1).epoch()),
        (Role::Candidate, 1)
    );
    // It crashes before any Vote request arrives; they are lost.
    sim.crash(1);
    sim.network.clear();
    sim.restart(1).unwrap();
    assert_eq!(
        (sim.node(1).role(), sim.node(1).epoch()),
        (Role::Candidate, 1)
    );
    assert!(
        sim.network.is_empty(),
        "nothing is sent before the first tick"
    );
    let now = sim.clock(1);
    sim.tick(1, now);
    assert_eq!(
        vote_requests_from(&sim, 1),
        vec![(false, 1, 2), (false, 1, 3)]
    );
    sim.tick(1, now);
    assert_eq!(vote_requests_from(&sim, 1).len(), 2, "sent once");
    // Node 2 grants: two of three, node 1 leads epoch 1.
    let vote = sim.network.iter().position(|e| e.to == 2).unwrap();
    sim.deliver(vote);
    let grant = sim.network.iter().position(|e| e.to == 1).unwrap();
    sim.deliver(grant);
    assert_eq!((sim.node(1).role(), sim.node(1).epoch()), (Role::Leader, 1));
}

/// (receiver, epoch, leader, preferred candidates, preferred successors, announced port) of each
/// EndQuorumEpoch request node `from` has in flight.
type EndRequest = (i32, i32, i32, Vec<i32>, Vec<i32>, Vec<u16>);

fn end_requests_from(sim: &Sim, from: i32) -> Vec<EndRequest> {
    sim.network
        .iter()
        .filter(|e| e.from == from)
        .filter_map(|e| match &e.msg {
            Message::EndQuorumEpochRequest(r) => {
                let p = &r.topics[0].partitions[0];
                let candidates = p.preferred_candidates.iter();
                Some((
                    e.to,
                    p.leader_epoch,
                    p.leader_id.0,
                    candidates.map(|c| c.candidate_id.0).collect(),
                    p.preferred_successors.clone(),
                    r.leader_endpoints.iter().map(|l| l.port).collect(),
                ))
            }
            _ => None,
        })
        .collect()
}

/// Kafka 4.4: `QuorumState.initialize` makes a replica whose stored leader id is its own a
/// `ResignedState` of its epoch, every other voter of the latest set unacknowledged and no preferred
/// successors (`List.of()`); its first `pollResigned` sends them EndQuorumEpoch with its endpoints.
#[test]
fn a_restarted_leader_resigns_and_sends_end_quorum_epoch() {
    let mut sim = Sim::new(3, 1, 9).unwrap();
    sim.elect(1);
    sim.replicate(5);
    sim.crash(1);
    sim.network.clear();
    sim.restart(1).unwrap();
    let n = sim.node(1);
    assert_eq!(
        (n.role(), n.epoch(), n.leader_id(), n.high_watermark()),
        (Role::Resigned, 1, Some(1), None)
    );
    assert!(
        sim.network.is_empty(),
        "nothing is sent before the first tick"
    );
    let now = sim.clock(1);
    sim.tick(1, now);
    let port = sim::listener(1).port;
    let expected: Vec<EndRequest> = [2, 3]
        .into_iter()
        .map(|to| (to, 1, 1, vec![], vec![], vec![port]))
        .collect();
    assert_eq!(end_requests_from(&sim, 1), expected, "voters only, not 4");
    sim.tick(1, now);
    assert_eq!(end_requests_from(&sim, 1).len(), 2, "sent once");
    // A follower of the resigned leader stands within one election timeout rather than its fetch
    // timeout (no preferred successors: a random backoff below the election timeout).
    let before = sim.node(2).timers().fetch_timeout.unwrap();
    let end = sim.network.iter().position(|e| e.to == 2).unwrap();
    sim.deliver(end);
    let after = sim.node(2).timers().fetch_timeout.unwrap();
    let election_ms = sim::config(2, Bootstrap::NoInitialVoters, 1).election_timeout_ms;
    assert!(
        after < before && after < sim.clock(2) + election_ms,
        "{before} -> {after}"
    );
}

/// A restarted single voter that voted for itself leads at its first tick (Kafka's
/// `onBecomeCandidate`), without asking anyone.
#[test]
fn a_restarted_single_candidate_leads_at_once() {
    let cfg = sim::config(1, Bootstrap::Checkpoint(sim::voter_set(&[1])), 1);
    let state = ElectionState {
        epoch: 3,
        voted: Some(sim::key(1)),
        leader_id: None,
    };
    let mut n = Node::new(cfg, MemoryLog::new(), state).unwrap();
    assert_eq!(n.role(), Role::Candidate);
    let out = n.tick(0);
    assert_eq!((n.role(), n.epoch()), (Role::Leader, 3));
    assert!(out
        .requests
        .iter()
        .all(|(_, m)| !matches!(m, Message::VoteRequest(_))));
}

#[test]
fn restart_rebuilds_the_voter_history_from_the_log() {
    let mut sim = Sim::new(3, 1, 2).unwrap();
    sim.elect(1);
    sim.replicate(10);
    assert!(sim.client(1, sim::add_voter_request(4)).is_empty());
    sim.crash(1);
    sim.restart(1).unwrap();
    let v = sim.node(1).view();
    assert_eq!(v.latest_voters.ids().collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    assert_eq!(v.latest_voters_offset, Some(3));
    assert_eq!(v.kraft_version, 1);
}
