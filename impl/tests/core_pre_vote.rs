//! KIP-996 pre-vote (Vote v2) and the leader endpoints a replica learns (BeginQuorumEpoch
//! `LeaderEndpoints`, Fetch `NodeEndpoints`), one rule at a time.

use kafka_protocol::messages::begin_quorum_epoch_request::LeaderEndpoint;
use kafka_protocol::messages::VoteResponse;
use kafka_protocol::protocol::StrBytes;
use kraft::node::sim::{self, Envelope, Sim};
use kraft::node::{errors, Message, Role, Timer};

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
