//! Bounded duplication (`--duplicates`): a retried Vote request is answered twice, and the
//! duplicated grant counts once.

use super::*;
use crate::config::NetworkKind;

/// Five voters (a majority is three), Kafka 3.9's election so a fetch timeout makes a candidate at
/// once; `gc` off, so both copies of an answer stay in flight.
fn model(gc: bool) -> KraftModel {
    KraftModel::new(ModelConfig {
        voters: 5,
        joiners: 0,
        pre_vote: false,
        max_duplicates: 2,
        gc,
        ..ModelConfig::default()
    })
    .unwrap()
}

fn env(src: Id, dst: Id, msg: Msg) -> Envelope {
    Envelope { src, dst, msg }
}

fn actions(m: &KraftModel, s: &State) -> Vec<Action> {
    let mut out = Vec::new();
    m.enabled_actions(s, &mut out);
    out
}

fn copies(s: &State, e: &Envelope) -> usize {
    s.network.iter().filter(|x| *x == e).count()
}

const GRANT: Msg = Msg::VoteResponse {
    epoch: 2,
    granted: true,
    error: ErrorCode::None,
    leader: None,
};

#[test]
fn retried_vote_request_answered_twice_and_counted_once() {
    let m = model(false);
    let step = |s: &State, a| m.step(s, a).expect("enabled").state;
    // Server 1 stands in epoch 2 and asks 2 for its vote; the request is retried.
    let s = step(&m.initial_state(), Action::FetchTimeout(1));
    assert_eq!(s.servers[1].role, Role::Candidate);
    let req = *s
        .network
        .iter()
        .find(|e| e.dst == 2 && matches!(e.msg, Msg::VoteRequest { .. }))
        .unwrap();
    assert!(actions(&m, &s).contains(&Action::Duplicate(req)));
    let s = step(&s, Action::Duplicate(req));
    assert_eq!((copies(&s, &req), s.history.duplicates), (2, 1));
    // Both copies are delivered: 2 grants twice (it voted for 1 in epoch 2).
    let s = step(&s, Action::Deliver(req));
    assert_eq!(copies(&s, &req), 1);
    let s = step(&s, Action::Deliver(req));
    let grant = env(2, 1, GRANT);
    assert_eq!((copies(&s, &req), copies(&s, &grant)), (0, 2));
    assert_eq!(s.servers[2].voted_for, Some(1));
    // The duplicated grant counts once: {1, 2} is no majority of five.
    let s = step(&s, Action::Deliver(grant));
    let s = step(&s, Action::Deliver(grant));
    assert_eq!(copies(&s, &grant), 0);
    assert_eq!(s.servers[1].votes, bit(1) | bit(2));
    assert_eq!(s.servers[1].role, Role::Candidate);
    // A third voter's grant makes the majority.
    let req3 = Envelope { dst: 3, ..req };
    let s = step(&s, Action::Deliver(req3));
    let s = step(&s, Action::Deliver(env(3, 1, GRANT)));
    assert_eq!(s.servers[1].role, Role::Leader);
}

#[test]
fn duplicates_are_bounded_and_not_where_one_copy_stands_for_all() {
    let m = model(true);
    let s = m
        .step(&m.initial_state(), Action::FetchTimeout(1))
        .unwrap()
        .state;
    let reqs: Vec<Envelope> = s.network.clone();
    assert!(!reqs.is_empty());
    let s = m.step(&s, Action::Duplicate(reqs[0])).unwrap().state;
    let s = m.step(&s, Action::Duplicate(reqs[1])).unwrap().state;
    assert_eq!(s.history.duplicates, 2);
    // The bound is spent.
    assert!(m.step(&s, Action::Duplicate(reqs[2])).is_none());
    assert!(!actions(&m, &s)
        .iter()
        .any(|a| matches!(a, Action::Duplicate(_))));
    // With `gc`, a vote answer is kept once: duplicating it is no step.
    let s = m.step(&s, Action::Deliver(reqs[0])).unwrap().state;
    let answer = *s.network.iter().find(|e| e.dst == 1).unwrap();
    let fresh = KraftModel::new(ModelConfig {
        max_duplicates: 3,
        ..m.cfg
    })
    .unwrap();
    assert!(fresh.step(&s, Action::Duplicate(answer)).is_none());
    // Not on a network that already keeps every message.
    let dup = ModelConfig {
        network: NetworkKind::Duplicating,
        ..m.cfg
    };
    assert!(KraftModel::new(dup).is_err());
}
