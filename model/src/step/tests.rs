use super::*;

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
        vec![Kind::LeaderChange, Kind::KRaftVersion, Kind::Voters(0b111)]
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
