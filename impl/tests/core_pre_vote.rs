//! KIP-996 pre-vote (Vote v2), the leader endpoints a replica learns (BeginQuorumEpoch
//! `LeaderEndpoints`, Fetch `NodeEndpoints`) and the election state it records, one rule at a time.

use kafka_protocol::messages::begin_quorum_epoch_request::LeaderEndpoint;
use kafka_protocol::messages::VoteResponse;
use kafka_protocol::protocol::StrBytes;
use kraft::log::{MemoryLog, RaftLog};
use kraft::node::Harness;
use kraft::node::{errors, Bootstrap, ElectionState, Message, Node, Role, Timer};
use kraft::voter_set::ReplicaKey;
use kraft_sim::{self as sim, Envelope, Sim};

/// (pre_vote, epoch, last epoch) of a Vote request.
fn vote_request(msg: &Message) -> (bool, i32, i32) {
    match msg {
        Message::VoteRequest(r) => {
            let p = &r.topics[0].partitions[0];
            (p.pre_vote, p.replica_epoch, p.last_offset_epoch)
        }
        other => panic!("not a vote request: {other:?}"),
    }
}

/// (error, granted) of a Vote response.
fn vote_reply(msg: &Message) -> (i16, bool) {
    match msg {
        Message::VoteResponse(r) => {
            let p = &r.topics[0].partitions[0];
            (r.error_code.max(p.error_code), p.vote_granted)
        }
        other => panic!("not a vote response: {other:?}"),
    }
}

fn take(sim: &mut Sim, from: i32, to: i32) -> Message {
    let i = sim
        .network
        .iter()
        .position(|e| e.from == from && e.to == to)
        .unwrap_or_else(|| panic!("no message {from} -> {to}"));
    sim.network.remove(i).msg
}

#[test]
fn a_timed_out_voter_asks_for_pre_votes_without_bumping_its_epoch() {
    let mut sim = Sim::new(3, 0, 1).unwrap();
    sim.fire(1, Timer::Election);
    assert_eq!(
        (sim.node(1).role(), sim.node(1).epoch()),
        (Role::Prospective, 0)
    );
    assert_eq!(
        sim.node(1).election_state().voted,
        None,
        "nothing persisted"
    );
    let to2 = take(&mut sim, 1, 2);
    assert_eq!(vote_request(&to2), (true, 0, 0));
    // The receiver grants and records nothing.
    let out = sim.node_mut(2).handle(0, 1, to2);
    assert!(out.effects.is_empty(), "a pre-vote persists nothing");
    assert_eq!(vote_reply(&out.replies[0].1), (errors::NONE, true));
    assert_eq!(sim.node(2).election_state().voted, None);
    // One grant plus its own: a majority of 3, so node 1 stands at epoch 1 with real votes.
    let now = sim.clock(1);
    let out = sim.node_mut(1).handle(now, 2, out.replies[0].1.clone());
    assert_eq!(
        (sim.node(1).role(), sim.node(1).epoch()),
        (Role::Candidate, 1)
    );
    assert!(out.replies.is_empty());
    let votes: Vec<_> = out.requests.iter().map(|(_, m)| vote_request(m)).collect();
    assert_eq!(votes, vec![(false, 1, 0), (false, 1, 0)]);
    assert!(!out.effects.is_empty(), "the vote for itself is persisted");
}

#[test]
fn a_follower_that_fetched_refuses_pre_votes_and_the_prospective_goes_back() {
    let mut sim = Sim::new(3, 0, 2).unwrap();
    sim.elect(1);
    sim.replicate(5);
    let epoch = sim.node(1).epoch();
    // Node 3 is cut off from the leader: its fetch times out and it asks 2 for a pre-vote.
    sim.fire(3, Timer::FetchTimeout);
    assert_eq!(sim.node(3).role(), Role::Prospective);
    assert_eq!(sim.node(3).leader_id(), Some(1), "keeps the leader it knew");
    let to2 = take(&mut sim, 3, 2);
    let _ = take(&mut sim, 3, 1);
    let out = sim.node_mut(2).handle(0, 3, to2);
    assert_eq!(vote_reply(&out.replies[0].1), (errors::NONE, false));
    // Its election timeout ends the round: back to following 1 in the same epoch, nobody disturbed.
    sim.fire(3, Timer::Election);
    assert_eq!(
        (
            sim.node(3).role(),
            sim.node(3).epoch(),
            sim.node(3).leader_id()
        ),
        (Role::Follower, epoch, Some(1))
    );
    assert_eq!(
        (sim.node(1).role(), sim.node(1).epoch()),
        (Role::Leader, epoch)
    );
}

#[test]
fn pre_vote_epochs_are_validated_as_kafka_does() {
    let mut sim = Sim::new(3, 0, 3).unwrap();
    sim.elect(1);
    sim.replicate(5);
    // Node 2 follows 1 in epoch 1 with a record of epoch 1: its pre-vote says epoch 1, last epoch 1,
    // which is legal for a pre-vote and illegal for a vote.
    sim.fire(2, Timer::FetchTimeout);
    let pre = take(&mut sim, 2, 3);
    assert_eq!(vote_request(&pre), (true, 1, 1));
    let mut vote = pre.clone();
    if let Message::VoteRequest(r) = &mut vote {
        r.topics[0].partitions[0].pre_vote = false;
    }
    let out = sim.node_mut(3).handle(0, 2, vote);
    assert_eq!(
        vote_reply(&out.replies[0].1),
        (errors::INVALID_REQUEST, false)
    );
    let out = sim.node_mut(3).handle(0, 2, pre);
    assert_eq!(
        vote_reply(&out.replies[0].1),
        (errors::NONE, false),
        "valid, refused by a follower that has fetched"
    );
}

#[test]
fn unsupported_version_makes_a_prospective_stand_at_once() {
    let mut sim = Sim::new(3, 0, 4).unwrap();
    sim.fire(1, Timer::Election);
    sim.network.clear();
    let resp = VoteResponse::default().with_error_code(errors::UNSUPPORTED_VERSION);
    let now = sim.clock(1);
    let out = sim.node_mut(1).handle(now, 2, Message::VoteResponse(resp));
    assert_eq!(
        (sim.node(1).role(), sim.node(1).epoch()),
        (Role::Candidate, 1)
    );
    assert!(out.replies.is_empty());
    assert!(out.requests.iter().all(|(_, m)| !vote_request(m).0));
}

#[test]
fn a_leader_outside_the_voter_set_is_reached_at_the_endpoint_it_announced() {
    let mut sim = Sim::new(3, 1, 5).unwrap();
    sim.elect(1);
    // Node 4 (an observer) hears from a leader 9 it has no address for, in a newer epoch.
    let mut begin = match sim
        .network
        .iter()
        .find(|e| matches!(e.msg, Message::BeginQuorumEpochRequest(_)))
    {
        Some(Envelope { msg, .. }) => msg.clone(),
        None => {
            sim.fire(1, Timer::BeginQuorumEpoch);
            sim.network
                .iter()
                .find(|e| matches!(e.msg, Message::BeginQuorumEpochRequest(_)))
                .expect("a BeginQuorumEpoch request")
                .msg
                .clone()
        }
    };
    let Message::BeginQuorumEpochRequest(r) = &mut begin else {
        unreachable!()
    };
    r.voter_id.0 = -1;
    r.topics[0].partitions[0].voter_directory_id = uuid::Uuid::nil();
    r.topics[0].partitions[0].leader_id.0 = 9;
    r.topics[0].partitions[0].leader_epoch = 7;
    r.leader_endpoints = vec![
        LeaderEndpoint::default()
            .with_name(StrBytes::from_static_str("OTHER"))
            .with_host(StrBytes::from_static_str("elsewhere"))
            .with_port(1),
        LeaderEndpoint::default()
            .with_name(StrBytes::from_static_str("CONTROLLER"))
            .with_host(StrBytes::from_static_str("leader9.example"))
            .with_port(9099),
    ];
    assert_eq!(sim.node(4).endpoint_of(9), None);
    let out = sim.node_mut(4).handle(0, 9, begin);
    assert!(matches!(
        out.replies[0].1,
        Message::BeginQuorumEpochResponse(_)
    ));
    assert_eq!(sim.node(4).leader_id(), Some(9));
    let e = sim.node(4).endpoint_of(9).expect("learned");
    assert_eq!(
        (e.name.as_str(), e.host.as_str(), e.port),
        ("CONTROLLER", "leader9.example", 9099)
    );
    // Its Fetch responses name it the same way (NodeEndpoints).
    assert_eq!(
        sim.node(4).leader_endpoint().map(|(id, e)| (id, e.port)),
        Some((9, 9099))
    );
    let _ = sim::key(1);
}

/// A voter already in the leader's epoch (it granted the vote) takes the endpoint the leader announces in
/// that epoch's BeginQuorumEpoch, as Kafka's transition to follower carries the request's endpoints, not
/// the one of its voter set (stale when the leader moved, until its UpdateRaftVoter commits).
#[test]
fn a_voter_that_voted_in_the_leaders_epoch_takes_the_endpoint_it_announces() {
    let mut sim = Sim::new(3, 0, 5).unwrap();
    let held = |e: &Envelope| e.to == 2 && matches!(e.msg, Message::BeginQuorumEpochRequest(_));
    sim.fire(1, Timer::Election);
    for _ in 0..1000 {
        match sim.network.iter().position(|e| !held(e)) {
            Some(i) => sim.deliver(i),
            None => break,
        }
    }
    assert_eq!(sim.node(1).role(), Role::Leader);
    let epoch = sim.node(1).epoch();
    assert_eq!(
        (sim.node(2).epoch(), sim.node(2).leader_id()),
        (epoch, None)
    );
    let i = sim.network.iter().position(held).expect("held");
    let mut begin = sim.network.remove(i).msg;
    let Message::BeginQuorumEpochRequest(r) = &mut begin else {
        unreachable!()
    };
    r.leader_endpoints = vec![LeaderEndpoint::default()
        .with_name(StrBytes::from_static_str("CONTROLLER"))
        .with_host(StrBytes::from_static_str("leader1.moved"))
        .with_port(9191)];
    let now = sim.clock(2);
    let out = sim.node_mut(2).handle(now, 1, begin);
    sim.absorb(2, out);
    let (id, e) = sim.node(2).leader_endpoint().expect("a leader");
    assert_eq!((id, e.host.as_str(), e.port), (1, "leader1.moved", 9191));
}

/// `template` (a Vote request) as sent by `from` to `to` with these fields.
fn vote_from(
    template: &Message,
    (from, to): (i32, i32),
    pre_vote: bool,
    epoch: i32,
    (last_epoch, last_offset): (i32, i64),
) -> Message {
    let mut msg = template.clone();
    let Message::VoteRequest(r) = &mut msg else {
        panic!("not a vote request: {template:?}")
    };
    r.voter_id.0 = to;
    let p = &mut r.topics[0].partitions[0];
    p.replica_id.0 = from;
    p.replica_directory_id = sim::directory_id(from);
    p.voter_directory_id = sim::directory_id(to);
    p.pre_vote = pre_vote;
    p.replica_epoch = epoch;
    p.last_offset_epoch = last_epoch;
    p.last_offset = last_offset;
    msg
}

/// Delivers `msg` from `from` to `to`: (granted, nothing persisted).
fn ask(sim: &mut Sim, from: i32, to: i32, msg: Message) -> (bool, bool) {
    let now = sim.clock(to);
    let out = sim.node_mut(to).handle(now, from, msg);
    let (error, granted) = vote_reply(&out.replies[0].1);
    assert_eq!(error, errors::NONE);
    (granted, out.effects.is_empty())
}

/// Kafka 4.4's `canGrantVote` for the roles whose answer depends on the role, not only on the vote
/// and the log: a Leader refuses a pre-vote, a Resigned leader and a Candidate grant an up-to-date one
/// (and persist nothing), a Candidate refuses a vote.
#[test]
fn leader_resigned_and_candidate_answer_pre_votes_and_votes_as_kafka_4_4() {
    let mut sim = Sim::new(3, 0, 6).unwrap();
    sim.elect(1);
    sim.replicate(5);
    let log = sim.node(1).log();
    let (last, leo) = (log.last_epoch(), log.end_offset());
    assert_eq!((sim.node(3).epoch(), last), (1, 1));
    sim.fire(3, Timer::FetchTimeout);
    let pre = take(&mut sim, 3, 1);
    let _ = take(&mut sim, 3, 2);
    assert_eq!(vote_request(&pre), (true, 1, last));

    assert_eq!(ask(&mut sim, 3, 1, pre.clone()), (false, true), "a leader");
    sim.fire(1, Timer::CheckQuorum);
    assert_eq!(sim.node(1).role(), Role::Resigned);
    let stale = vote_from(&pre, (3, 1), true, 1, (last, leo - 1));
    assert_eq!(ask(&mut sim, 3, 1, stale), (false, true));
    let now = sim.clock(1);
    let out = sim.node_mut(1).handle(now, 3, pre);
    assert!(out.effects.is_empty());
    assert_eq!(vote_reply(&out.replies[0].1), (errors::NONE, true));
    assert_eq!(sim.node(1).role(), Role::Resigned, "nothing changes");

    // The resigned leader's grant is the second of three: node 3 stands at epoch 2.
    let now = sim.clock(3);
    let out = sim.node_mut(3).handle(now, 1, out.replies[0].1.clone());
    assert_eq!(
        (sim.node(3).role(), sim.node(3).epoch()),
        (Role::Candidate, 2)
    );
    sim.absorb(3, out);
    let vote = take(&mut sim, 3, 2);
    assert_eq!(vote_request(&vote), (false, 2, last));
    // Node 2 asks the candidate for a pre-vote, then for a vote, in the candidate's epoch.
    let up_to_date = vote_from(&vote, (2, 3), true, 2, (last, leo));
    assert_eq!(ask(&mut sim, 2, 3, up_to_date), (true, true));
    let stale = vote_from(&vote, (2, 3), true, 2, (last, leo - 1));
    assert_eq!(ask(&mut sim, 2, 3, stale), (false, true));
    let rival = vote_from(&vote, (2, 3), false, 2, (last, leo));
    assert_eq!(ask(&mut sim, 2, 3, rival), (false, true));
    assert_eq!(sim.node(3).election_state().voted, Some(sim::key(3)));
}

/// An Unattached replica that voted in its epoch: the same candidate gets the vote again without a
/// log check, any other is refused; pre-votes still go by the log alone (Kafka 4.4's
/// `unattachedOrProspectiveCanGrantVote`).
#[test]
fn a_replica_that_voted_grants_only_the_same_candidate_again() {
    let mut sim = Sim::new(3, 0, 7).unwrap();
    sim.elect(1);
    sim.replicate(5);
    let log = sim.node(1).log();
    let (last, leo) = (log.last_epoch(), log.end_offset());
    sim.fire(3, Timer::FetchTimeout);
    let template = take(&mut sim, 3, 2);
    let vote = vote_from(&template, (3, 2), false, 2, (last, leo));
    assert_eq!(
        ask(&mut sim, 3, 2, vote),
        (true, false),
        "the vote is persisted"
    );
    assert_eq!(
        (sim.node(2).role(), sim.node(2).epoch()),
        (Role::Unattached, 2)
    );
    let again_stale = vote_from(&template, (3, 2), false, 2, (last, leo - 1));
    assert_eq!(ask(&mut sim, 3, 2, again_stale), (true, true));
    let other = vote_from(&template, (1, 2), false, 2, (last, leo));
    assert_eq!(ask(&mut sim, 1, 2, other), (false, true));
    let other_pre = vote_from(&template, (1, 2), true, 2, (last, leo));
    assert_eq!(ask(&mut sim, 1, 2, other_pre), (true, true));
    let stale_pre = vote_from(&template, (1, 2), true, 2, (last, leo - 1));
    assert_eq!(ask(&mut sim, 1, 2, stale_pre), (false, true));
}

/// A vote stored without a directory id (a `quorum-state` written by a kraft.version 0 replica)
/// matches the candidate's id under any directory id, as Kafka's `ReplicaKey` comparison there does;
/// a stored directory id must match.
#[test]
fn a_stored_vote_without_directory_matches_any_directory_of_that_id() {
    let mut sim = Sim::new(3, 0, 8).unwrap();
    sim.fire(3, Timer::Election);
    let template = take(&mut sim, 3, 2);
    let set = sim::voter_set(&[1, 2, 3]);
    let restarted = |voted: ReplicaKey| {
        let config = sim::config(2, Bootstrap::Checkpoint(set.clone()), 8);
        let state = ElectionState {
            epoch: 1,
            voted: Some(voted),
            leader_id: None,
        };
        let mut node = Node::new(config, MemoryLog::new(), state).unwrap();
        node.start_clock(0);
        node
    };
    let mut other_dir = vote_from(&template, (3, 2), false, 1, (0, 0));
    if let Message::VoteRequest(r) = &mut other_dir {
        r.topics[0].partitions[0].replica_directory_id = uuid::Uuid::from_u128(99);
    }
    for (voted, granted) in [
        (ReplicaKey::without_directory(3), true),
        (sim::key(3), false),
    ] {
        let mut node = restarted(voted);
        assert_eq!(node.role(), Role::Unattached);
        let out = node.handle(0, 3, other_dir.clone());
        assert_eq!(
            vote_reply(&out.replies[0].1),
            (errors::NONE, granted),
            "{voted:?}"
        );
    }
}

/// A voter that granted its vote and then learns the winner in that epoch records both, as Kafka 4.4's
/// `FollowerState.election()` (`withElectedLeader(epoch, leaderId, votedKey, voters)`): the persisted
/// election state (the quorum-state file) names the leader and keeps the vote.
#[test]
fn a_voter_following_the_candidate_it_voted_for_records_leader_and_vote() {
    let mut sim = Sim::new(3, 0, 4).unwrap();
    sim.elect(1);
    let epoch = sim.node(1).epoch();
    for id in [2, 3] {
        assert_eq!(sim.node(id).role(), Role::Follower, "{id}");
        let expected = ElectionState {
            epoch,
            voted: Some(sim::key(1)),
            leader_id: Some(1),
        };
        assert_eq!(sim.node(id).election_state(), &expected, "{id}");
    }
}
