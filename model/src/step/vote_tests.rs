//! The vote and pre-vote rules per receiving role, as Kafka 4.4's `canGrantVote` implementations
//! (`UnattachedState`/`ProspectiveState` via `QuorumState.unattachedOrProspectiveCanGrantVote`,
//! `CandidateState`, `FollowerState`, `LeaderState`, `ResignedState`; read with `javap -c` on
//! kafka-raft 4.4.0) and `KafkaRaftClient.handleVoteRequest`.

use super::*;

/// The elected start with server 1 put directly into `role` at epoch 2 (its log, of epoch 1, is the
/// leader's: LEO 3). A rule test: states are built, not reached.
fn receiver(role: Role, voted_for: Option<Id>, leader: Option<Id>, fetched: bool) -> State {
    let m = KraftModel::new(ModelConfig::default()).unwrap();
    let mut s = m.initial_state();
    let r = &mut s.servers[1];
    Tx::reset_volatile(r);
    r.epoch = 2;
    r.role = role;
    r.voted_for = voted_for;
    r.leader = leader;
    r.fetched = fetched;
    s
}

/// The state after delivering `msg` from server 2 to server 1 (`gc` off: every answer stays).
fn deliver(s: &State, msg: Msg) -> State {
    let m = KraftModel::new(ModelConfig {
        gc: false,
        ..ModelConfig::default()
    })
    .unwrap();
    let env = Envelope {
        src: 2,
        dst: 1,
        msg,
    };
    let mut s = s.clone();
    s.network.push(env);
    s.network.sort_unstable();
    m.step(&s, Action::Deliver(env)).expect("delivered").state
}

/// Delivers `msg` from server 2 to server 1: (granted, server 1 after the step).
fn answer(s: &State, msg: Msg) -> (bool, Server) {
    let after = deliver(s, msg);
    let replies: Vec<_> = after
        .network
        .iter()
        .filter_map(|e| match e.msg {
            Msg::VoteResponse {
                epoch: 2,
                granted,
                error: ErrorCode::None,
                ..
            } if (e.src, e.dst) == (1, 2) => Some(granted),
            _ => None,
        })
        .collect();
    assert_eq!(replies.len(), 1, "one answer of epoch 2: {replies:?}");
    (replies[0], after.servers[1])
}

const PRE_VOTE: Msg = Msg::PreVoteRequest {
    epoch: 2,
    voter_dir: 0,
    last_epoch: 1,
    last_offset: 3,
};
const STALE_PRE_VOTE: Msg = Msg::PreVoteRequest {
    epoch: 2,
    voter_dir: 0,
    last_epoch: 1,
    last_offset: 2,
};
const VOTE: Msg = Msg::VoteRequest {
    epoch: 2,
    voter_dir: 0,
    last_epoch: 1,
    last_offset: 3,
};
const STALE_VOTE: Msg = Msg::VoteRequest {
    epoch: 2,
    voter_dir: 0,
    last_epoch: 1,
    last_offset: 2,
};

#[test]
fn every_role_grants_and_refuses_as_kafka_4_4() {
    use Role::*;
    // (role, voted for, known leader, fetched) → granted (pre-vote, stale pre-vote, vote, stale vote)
    // from server 2, all at the receiver's epoch.
    #[rustfmt::skip]
    let table = [
        ((Unattached, None, None, false), (true, false, true, false)),
        ((Unattached, Some(2), None, false), (true, false, true, true)),
        ((Unattached, Some(3), None, false), (true, false, false, false)),
        ((Prospective, None, None, false), (true, false, true, false)),
        ((Prospective, None, Some(0), false), (true, false, false, false)),
        ((Prospective, Some(2), Some(0), false), (true, false, true, true)),
        ((Prospective, Some(3), None, false), (true, false, false, false)),
        ((Candidate, Some(1), None, false), (true, false, false, false)),
        ((Follower, None, Some(0), false), (true, false, false, false)),
        ((Follower, None, Some(0), true), (false, false, false, false)),
        ((Leader, Some(1), Some(1), false), (false, false, false, false)),
        ((Resigned, Some(1), Some(1), false), (true, false, false, false)),
    ];
    for ((role, voted, leader, fetched), expected) in table {
        let s = receiver(role, voted, leader, fetched);
        let before = s.servers[1];
        let case = format!("{role:?} voted {voted:?} leader {leader:?} fetched {fetched}");
        let mut got = [false; 4];
        for (k, msg) in [PRE_VOTE, STALE_PRE_VOTE, VOTE, STALE_VOTE]
            .into_iter()
            .enumerate()
        {
            let (granted, after) = answer(&s, msg);
            got[k] = granted;
            let mut expect_after = before;
            if granted && matches!(msg, Msg::VoteRequest { .. }) {
                expect_after.voted_for = Some(2);
            }
            assert_eq!(
                after, expect_after,
                "{case}: only a granted vote records anything"
            );
        }
        let (a, b, c, d) = expected;
        assert_eq!(got, [a, b, c, d], "{case}");
    }
}

#[test]
fn a_newer_epoch_makes_the_receiver_unattached_before_the_rule_applies() {
    // A leader of epoch 2 asked for a pre-vote of epoch 3 (log up to date) moves to epoch 3,
    // Unattached without a vote, and grants; the same for a vote, which it records.
    for (msg, voted) in [
        (
            Msg::PreVoteRequest {
                epoch: 3,
                voter_dir: 0,
                last_epoch: 1,
                last_offset: 3,
            },
            None,
        ),
        (
            Msg::VoteRequest {
                epoch: 3,
                voter_dir: 0,
                last_epoch: 1,
                last_offset: 3,
            },
            Some(2),
        ),
    ] {
        let s = receiver(Role::Leader, Some(1), Some(1), false);
        let st = deliver(&s, msg);
        let r = &st.servers[1];
        assert_eq!((r.role, r.epoch, r.voted_for), (Role::Unattached, 3, voted));
        assert!(st.network.iter().any(|e| e.src == 1
            && matches!(
                e.msg,
                Msg::VoteResponse {
                    epoch: 3,
                    granted: true,
                    ..
                }
            )));
    }
}

#[test]
fn a_restarted_candidate_asks_for_its_votes_again() {
    // Server 1 voted for itself in epoch 2 and learned leader 0 there (it lost); after a crash it is
    // Candidate again, as Kafka's `QuorumState.initialize` makes it, and sends its Vote requests.
    let m = KraftModel::new(ModelConfig {
        gc: false,
        max_crashes: 1,
        ..ModelConfig::default()
    })
    .unwrap();
    let s = receiver(Role::Follower, Some(1), Some(0), true);
    let st = m.step(&s, Action::Restart(1)).unwrap().state;
    let r = &st.servers[1];
    assert_eq!(
        (r.role, r.epoch, r.voted_for, r.votes, r.leader),
        (Role::Candidate, 2, Some(1), bit(1), None)
    );
    let vote = Msg::VoteRequest {
        epoch: 2,
        voter_dir: 0,
        last_epoch: 1,
        last_offset: 3,
    };
    let sent: Vec<_> = st.network.iter().map(|e| (e.src, e.dst, e.msg)).collect();
    assert_eq!(sent, vec![(1, 0, vote), (1, 2, vote)]);
}
