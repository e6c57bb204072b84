use super::*;
use crate::types::VoterSet;

fn model(cfg: ModelConfig) -> KraftModel {
    KraftModel::new(cfg).unwrap()
}

#[test]
fn elected_start_matches_the_contract_bootstrap() {
    let m = model(ModelConfig::default());
    let s = m.initial_state();
    let l = &s.servers[0];
    assert_eq!(l.role, Role::Leader);
    assert_eq!(l.epoch, 1);
    let kinds: Vec<Kind> = l.log.as_slice().iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        vec![
            Kind::LeaderChange,
            Kind::KRaftVersion,
            Kind::Voters(VoterSet::of(0b111))
        ]
    );
    assert_eq!(l.hw, Some(3));
    for f in &s.servers[1..3] {
        assert_eq!(
            (f.role, f.leader, f.hw, f.log),
            (Role::Follower, Some(0), Some(3), l.log)
        );
    }
    let j = &s.servers[3];
    assert_eq!(
        (j.role, j.leader, j.hw, j.log),
        (Role::Follower, Some(0), Some(3), l.log)
    );
    assert_eq!(
        l.caught_up & bit(3),
        bit(3),
        "the joiner starts caught up as an observer"
    );
    assert!(s.network.is_empty());
    assert_eq!(s.history.committed.len(), 3);
}

#[test]
fn change_commits_and_replies_none() {
    let m = model(ModelConfig {
        refusal_steps: true,
        ..ModelConfig::default()
    });
    let s = m.initial_state();
    let add = Action::Change {
        server: 0,
        op: ChangeOp::Add(3),
    };
    // Only the leader accepts: a follower answers NOT_LEADER_OR_FOLLOWER.
    let st = m
        .step(
            &s,
            Action::Change {
                server: 1,
                op: ChangeOp::Add(3),
            },
        )
        .unwrap();
    assert_eq!(st.replies[0].error, ErrorCode::NotLeaderOrFollower);
    assert_eq!(st.state, s);
    let st = m.step(&s, add).unwrap();
    assert!(st.replies.is_empty());
    let s = st.state;
    assert_eq!(s.servers[0].pending.map(|p| p.offset), Some(3));
    let st = m
        .step(
            &s,
            Action::Fetch {
                replica: 1,
                leader: 0,
            },
        )
        .unwrap();
    assert!(st.replies.is_empty(), "a majority of {{0,1,2,3}} needs 3");
    let st = m
        .step(
            &st.state,
            Action::Fetch {
                replica: 1,
                leader: 0,
            },
        )
        .unwrap();
    let st2 = m
        .step(
            &st.state,
            Action::Fetch {
                replica: 2,
                leader: 0,
            },
        )
        .unwrap();
    let st2 = m
        .step(
            &st2.state,
            Action::Fetch {
                replica: 2,
                leader: 0,
            },
        )
        .unwrap();
    assert_eq!(
        st2.replies,
        vec![Reply {
            server: 0,
            op: ChangeOp::Add(3),
            error: ErrorCode::None
        }]
    );
    assert_eq!(st2.state.servers[0].hw, Some(4));
}

/// The elected start with `extra` put in flight (kept sorted, as the model keeps it).
fn with_in_flight(m: &KraftModel, extra: &[Envelope]) -> State {
    let mut s = m.initial_state();
    s.network.extend_from_slice(extra);
    s.network.sort_unstable();
    s
}

#[test]
fn gc_drops_what_the_receiver_can_no_longer_use() {
    let grant_to_leader = Envelope {
        src: 1,
        dst: 0,
        msg: Msg::VoteResponse {
            epoch: 1,
            granted: true,
            error: ErrorCode::None,
            leader: None,
        },
    };
    let begin_to_follower = Envelope {
        src: 0,
        dst: 1,
        msg: Msg::BeginQuorumEpoch {
            epoch: 1,
            voter_dir: 0,
        },
    };
    let fetch = Action::Fetch {
        replica: 2,
        leader: 0,
    };
    // No change or crash left: follower 1 keeps leader 0 for the whole epoch, so the announcement
    // can teach it nothing; the leader never counts a vote of its own epoch again.
    let spent = model(ModelConfig {
        max_changes: 0,
        ..ModelConfig::default()
    });
    let s = with_in_flight(&spent, &[grant_to_leader, begin_to_follower]);
    let next = spent.step(&s, fetch).unwrap().state;
    assert!(next.network.is_empty(), "{:?}", next.network);
    // A change left (it may remove server 1, which then loses its leader): the announcement stays.
    let m = model(ModelConfig::default());
    let s = with_in_flight(&m, &[grant_to_leader, begin_to_follower]);
    let next = m.step(&s, fetch).unwrap().state;
    assert_eq!(next.network, vec![begin_to_follower]);
    // Without gc (conformance), both stay: the up-to-date follower's fetch changes nothing.
    let plain = model(ModelConfig {
        gc: false,
        max_changes: 0,
        ..ModelConfig::default()
    });
    let s = with_in_flight(&plain, &[grant_to_leader, begin_to_follower]);
    assert!(plain.step(&s, fetch).is_none());
}

#[test]
fn gc_restart_loses_responses_and_skips_no_op_restarts() {
    let m = model(ModelConfig {
        max_crashes: 1,
        ..ModelConfig::default()
    });
    let answer = Envelope {
        src: 2,
        dst: 1,
        msg: Msg::VoteResponse {
            epoch: 1,
            granted: false,
            error: ErrorCode::None,
            leader: Some(0),
        },
    };
    let request = Envelope {
        src: 2,
        dst: 1,
        msg: Msg::PreVoteRequest {
            epoch: 1,
            voter_dir: 0,
            last_epoch: 1,
            last_offset: 3,
        },
    };
    let s = with_in_flight(&m, &[answer, request]);
    let next = m.step(&s, Action::Restart(1)).unwrap().state;
    assert_eq!(next.network, vec![request], "the answer to 1 is lost");
    assert_eq!(next.servers[1].role, Role::Follower);
    // A fresh server restarts into the state it is in: nothing but the crash count would change.
    let fresh = model(ModelConfig {
        max_crashes: 1,
        start: Start::Fresh,
        ..ModelConfig::default()
    });
    assert!(fresh
        .step(&fresh.fresh_state(), Action::Restart(1))
        .is_none());
    let plain = model(ModelConfig {
        gc: false,
        ..fresh.cfg
    });
    assert!(plain
        .step(&plain.fresh_state(), Action::Restart(1))
        .is_some());
}

#[test]
fn gc_a_transition_forgets_its_answers_and_effectless_requests() {
    let m = model(ModelConfig::default());
    let old_grant = Envelope {
        src: 2,
        dst: 1,
        msg: Msg::VoteResponse {
            epoch: 1,
            granted: true,
            error: ErrorCode::None,
            leader: None,
        },
    };
    let pre_vote = |epoch, last_offset| Envelope {
        src: 1,
        dst: 2,
        msg: Msg::PreVoteRequest {
            epoch,
            voter_dir: 0,
            last_epoch: 1,
            last_offset,
        },
    };
    // An old round's pre-vote of 2's own epoch (changes nothing at 2) and one of a later epoch
    // (moves 2 to it: kept).
    let old_same_epoch = pre_vote(1, 2);
    let later_epoch = pre_vote(2, 2);
    let s = with_in_flight(&m, &[old_grant, old_same_epoch, later_epoch]);
    let next = m.step(&s, Action::FetchTimeout(1)).unwrap().state;
    assert_eq!(next.servers[1].role, Role::Prospective);
    let to_0 = Envelope {
        dst: 0,
        ..pre_vote(1, 3)
    };
    let mut expected = vec![to_0, pre_vote(1, 3), later_epoch];
    expected.sort_unstable();
    assert_eq!(
        next.network, expected,
        "Kafka ignores answers after a transition"
    );
    // Without gc (conformance) everything stays.
    let plain = model(ModelConfig {
        gc: false,
        ..ModelConfig::default()
    });
    let s = with_in_flight(&plain, &[old_grant, old_same_epoch, later_epoch]);
    let next = plain.step(&s, Action::FetchTimeout(1)).unwrap().state;
    assert_eq!(next.network.len(), 5);
}

#[test]
fn gc_drops_requests_whose_answer_a_final_epoch_sender_ignores() {
    // max_epoch 1: the elected start is already at the last epoch, so no answer can move anyone.
    let m = model(ModelConfig {
        max_epoch: 1,
        ..ModelConfig::default()
    });
    let stale_pre_vote = Envelope {
        src: 1,
        dst: 2,
        msg: Msg::PreVoteRequest {
            epoch: 0,
            voter_dir: 0,
            last_epoch: 0,
            last_offset: 0,
        },
    };
    let fenced = Envelope {
        src: 2,
        dst: 1,
        msg: Msg::VoteResponse {
            epoch: 1,
            granted: false,
            error: ErrorCode::FencedLeaderEpoch,
            leader: Some(0),
        },
    };
    let s = with_in_flight(&m, &[stale_pre_vote, fenced]);
    let next = m
        .step(
            &s,
            Action::Change {
                server: 0,
                op: ChangeOp::Add(3),
            },
        )
        .unwrap()
        .state;
    assert!(next.network.is_empty(), "{:?}", next.network);
}

#[test]
fn gc_drops_answers_the_receivers_current_role_ignores() {
    // A change and a crash left, so `may_lose_leader` keeps every server's leader losable: the
    // answers below are dropped because a receiver uses an answer only in its current role (a role
    // change or restart drops the answers to it), not because its leader is final.
    let m = model(ModelConfig {
        max_crashes: 1,
        ..ModelConfig::default()
    });
    let answer = |dst, granted, leader| Envelope {
        src: 0,
        dst,
        msg: Msg::VoteResponse {
            epoch: 1,
            granted,
            error: ErrorCode::None,
            leader,
        },
    };
    // Follower 2 knows leader 0: a refusal naming 0, or a grant, changes nothing there.
    let refusal_to_follower = answer(2, false, Some(0));
    let grant_to_follower = answer(2, true, None);
    // The same answers at voter 1, Prospective without a known leader: the refusal makes it
    // follow 0, the grant counts.
    let refusal_to_prospective = answer(1, false, Some(0));
    let grant_to_prospective = answer(1, true, None);
    let mut s = with_in_flight(
        &m,
        &[
            refusal_to_follower,
            grant_to_follower,
            refusal_to_prospective,
            grant_to_prospective,
        ],
    );
    s.servers[1].role = Role::Prospective;
    s.servers[1].leader = None;
    s.servers[1].pre_votes = bit(1);
    let add = Action::Change {
        server: 0,
        op: ChangeOp::Add(3),
    };
    let next = m.step(&s, add).unwrap().state;
    let mut kept = vec![refusal_to_prospective, grant_to_prospective];
    kept.sort_unstable();
    assert_eq!(next.network, kept);
    // Delivered instead, the dropped answers leave follower 2 as it was.
    let plain = model(ModelConfig { gc: false, ..m.cfg });
    for env in [refusal_to_follower, grant_to_follower] {
        let after = plain.step(&s, Action::Deliver(env)).unwrap().state;
        assert_eq!(after.servers, s.servers, "{env:?}");
    }
}

#[test]
fn a_restarted_leader_resigns_and_sends_end_quorum_epoch() {
    // Leader 0 of epoch 1 crashes: as Kafka 4.4's `QuorumState.initialize` it comes back Resigned in
    // its epoch, still naming itself, with no HW, and tells the other voters of its latest set (not
    // observer 3) that it ended the epoch. A second restart sends them again (Kafka resends on restart).
    let m = model(ModelConfig {
        gc: false,
        max_crashes: 2,
        ..ModelConfig::default()
    });
    let st = m
        .step(&m.initial_state(), Action::Restart(0))
        .unwrap()
        .state;
    let r = &st.servers[0];
    assert_eq!(
        (r.role, r.epoch, r.leader, r.hw, r.voted_for),
        (Role::Resigned, 1, Some(0), None, Some(0))
    );
    let end = Msg::EndQuorumEpoch { epoch: 1 };
    let sent: Vec<_> = st.network.iter().map(|e| (e.src, e.dst, e.msg)).collect();
    assert_eq!(sent, vec![(0, 1, end), (0, 2, end)]);
    let again = m.step(&st, Action::Restart(0)).unwrap().state;
    assert_eq!(again.servers[0], st.servers[0]);
    assert_eq!(again.network.len(), 4, "{:?}", again.network);
}

#[test]
fn a_restarted_follower_follows_its_stored_leader_if_a_voter() {
    // Kafka 4.4's `QuorumState.initialize`: a stored leader whose endpoints the latest voter set has
    // is followed again, with no HW and no fetch yet; observer 3 too. One outside the latest set
    // (endpoints unknown) leaves the replica Unattached.
    let m = model(ModelConfig {
        gc: false,
        max_crashes: 2,
        ..ModelConfig::default()
    });
    let s = m.initial_state();
    for i in [1, 3] {
        let st = m.step(&s, Action::Restart(i)).unwrap().state;
        let r = &st.servers[i as usize];
        assert_eq!(
            (r.role, r.epoch, r.leader, r.hw, r.fetched),
            (Role::Follower, 1, Some(0), None, false),
            "server {i}"
        );
        assert!(st.network.is_empty());
    }
    let mut outside = s.clone();
    outside.servers[1].leader = Some(3);
    let st = m.step(&outside, Action::Restart(1)).unwrap().state;
    let r = &st.servers[1];
    assert_eq!((r.role, r.epoch, r.leader), (Role::Unattached, 1, None));
}

#[test]
fn update_voter_appends_the_same_voters_and_answers_at_once() {
    let m = model(ModelConfig {
        refusal_steps: true,
        updates: true,
        max_changes: 2,
        ..ModelConfig::default()
    });
    let s = m.initial_state();
    let update = |server, j| Action::Change {
        server,
        op: ChangeOp::Update(j),
    };
    // A non-voter's entry cannot be updated; a leader does not update itself over the wire.
    let st = m.step(&s, update(0, 3)).unwrap();
    assert_eq!(st.replies[0].error, ErrorCode::VoterNotFound);
    assert_eq!(st.state, s);
    assert!(m.step(&s, update(0, 0)).is_none());
    let mut enabled = Vec::new();
    m.enabled_actions(&s, &mut enabled);
    assert!(!enabled.contains(&update(0, 0)));
    assert!(enabled.contains(&update(0, 1)));
    // Voter 1's update: a VotersRecord with the same set, NONE before it commits, nothing pending.
    let st = m.step(&s, update(0, 1)).unwrap();
    assert_eq!(st.replies.len(), 1);
    assert_eq!(st.replies[0].error, ErrorCode::None);
    let s = st.state;
    let l = &s.servers[0];
    assert_eq!(
        l.log.get(3).map(|e| e.kind),
        Some(Kind::Voters(VoterSet::of(0b111)))
    );
    assert_eq!((l.pending, l.hw), (None, Some(3)));
    assert_eq!(s.history.changes, 1);
    // One change at a time: the uncommitted update holds back the next change.
    let st = m
        .step(
            &s,
            Action::Change {
                server: 0,
                op: ChangeOp::Add(3),
            },
        )
        .unwrap();
    assert_eq!(st.replies[0].error, ErrorCode::RequestTimedOut);
    let st = m.step(&s, update(0, 2)).unwrap();
    assert_eq!(st.replies[0].error, ErrorCode::RequestTimedOut);
    // Once a majority has it (the leader learns a follower's LEO from its next fetch), it is
    // committed and the committed voters are unchanged.
    let fetch = Action::Fetch {
        replica: 1,
        leader: 0,
    };
    let s = m.step(&s, fetch).unwrap().state;
    let s = m.step(&s, fetch).unwrap().state;
    assert_eq!(s.servers[0].hw, Some(4));
    assert!(crate::properties::voter_update_committed(&m, &s));
    assert!(!crate::properties::add_committed(&m, &s));
}
