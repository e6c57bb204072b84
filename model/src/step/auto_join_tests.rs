//! Auto-join (KIP-1186): a replaced voter removes its stale key, then adds its new one, acknowledged
//! at append; a joiner adds itself; the leader checks a removal's whole key.

use super::*;
use crate::spec::{committed_voters, describe_quorum, latest_voters};
use crate::types::{AutoJoinRequest, VoterSet};

fn model(cfg: ModelConfig) -> KraftModel {
    KraftModel::new(cfg).unwrap()
}

fn bounds() -> ModelConfig {
    crate::check::auto_join_bounds()
}

fn step(m: &KraftModel, s: &State, a: Action) -> Step {
    m.step(s, a).unwrap_or_else(|| panic!("{a:?} not enabled"))
}

fn fetch(r: Id) -> Action {
    Action::Fetch {
        replica: r,
        leader: 0,
    }
}

fn join(r: Id) -> Action {
    Action::AutoJoin {
        replica: r,
        leader: 0,
    }
}

/// Takes `a` if it changes anything.
fn settle(m: &KraftModel, s: State, a: Action) -> State {
    m.step(&s, a).map_or(s, |st| st.state)
}

fn enabled(m: &KraftModel, s: &State) -> Vec<Action> {
    let mut acts = Vec::new();
    m.enabled_actions(s, &mut acts);
    acts
}

/// Server 1 loses its disk and catches up with leader 0 as an observer.
fn replaced(m: &KraftModel) -> State {
    let s = step(m, &m.initial_state(), Action::DiskLoss(1)).state;
    (0..3).fold(s, |s, _| settle(m, s, fetch(1)))
}

#[test]
fn a_replaced_voter_removes_its_stale_key_then_adds_itself_acknowledged_at_append() {
    let m = model(bounds());
    let s = replaced(&m);
    assert_eq!(
        m.auto_join_request(&s.servers[1], 1),
        Some(AutoJoinRequest::RemoveStale { dir: 0 })
    );
    // The removal is answered at commit, as an operator's.
    let st = step(&m, &s, join(1));
    assert!(st.replies.is_empty());
    let s = st.state;
    assert_eq!(latest_voters(0b111, &s.servers[0].log), VoterSet::of(0b101));
    assert!(s.servers[0].pending.is_some());
    let st = step(&m, &s, fetch(2));
    let st = step(&m, &st.state, fetch(2));
    assert_eq!(
        st.replies,
        vec![Reply {
            server: 0,
            op: ChangeOp::Remove(1),
            error: ErrorCode::None
        }]
    );
    // The observer reads the removal, then asks to be added (it has caught up with the new key).
    let s = (0..2).fold(st.state, |s, _| settle(&m, s, fetch(1)));
    assert_eq!(
        m.auto_join_request(&s.servers[1], 1),
        Some(AutoJoinRequest::Add)
    );
    let st = step(&m, &s, join(1));
    let l = &st.state.servers[0];
    let offset = l.log.len() - 1;
    assert_eq!(
        st.replies,
        vec![Reply {
            server: 0,
            op: ChangeOp::Add(1),
            error: ErrorCode::None
        }],
        "acknowledged at append"
    );
    assert_eq!(
        l.pending, None,
        "nothing pending after an acknowledgement at append"
    );
    assert!(l.hw.unwrap() <= offset, "not committed yet");
    assert_eq!(&*st.state.history.append_acks, &[(offset, 1)]);
    // DescribeQuorum: CurrentVoters has the new key, CommittedVoters not until the HW passes it.
    let view = describe_quorum(&m.cfg, 0, l).unwrap();
    let rows = |r: &[crate::spec::ReplicaState]| r.iter().map(|x| x.replica_id).collect::<Vec<_>>();
    assert_eq!(rows(&view.current_voters), vec![0, 1, 2]);
    assert_eq!(rows(&view.committed_voters), vec![0, 2]);
    // The next change waits for the record's commit (REQUEST_TIMED_OUT, uncommitted VotersRecord).
    assert_eq!(
        check_change(&m.cfg, l, ChangeOp::Remove(2), 0),
        Err(crate::spec::Refusal::UncommittedVoters)
    );
    let s = settle(&m, settle(&m, st.state, fetch(2)), fetch(2));
    let l = &s.servers[0];
    assert_eq!(
        committed_voters(0b111, &l.log, l.hw),
        Some(VoterSet::of(0b101).with(1, 1))
    );
    assert!(crate::properties::auto_join_committed(&m, &s));
    assert!(crate::properties::replaced_voter_rejoined(&m, &s));
    // A voter under its new key: auto-join has nothing more to ask once it reads the record.
    let s = settle(&m, s, fetch(1));
    assert_eq!(m.auto_join_request(&s.servers[1], 1), None);
    assert!(!enabled(&m, &s).contains(&join(1)));
}

#[test]
fn a_removal_names_the_stale_key_and_never_removes_the_new_one() {
    let m = model(bounds());
    let s = replaced(&m);
    let s = step(&m, &s, join(1)).state;
    let s = (0..2).fold(s, |s, _| settle(&m, s, fetch(2)));
    let s = (0..2).fold(s, |s, _| settle(&m, s, fetch(1)));
    let s = step(&m, &s, join(1)).state;
    // Once the add commits, the leader's latest set holds (1, 1). A RemoveRaftVoter of the stale key (1, 0), as a replica
    // still reading an older set would send it, is VOTER_NOT_FOUND, not a removal of (1, 1).
    let stale = AutoJoinRequest::RemoveStale { dir: 0 };
    let s = (0..2).fold(s, |s, _| settle(&m, s, fetch(2)));
    assert_eq!(
        m.auto_join_change(&s, 1, 0, stale),
        Err(crate::spec::Refusal::VoterNotFound)
    );
    // An operator's removal of id 1 names the key the set holds: it would remove the new key.
    assert!(check_change(&m.cfg, &s.servers[0], ChangeOp::Remove(1), 0).is_ok());
}

#[test]
fn a_joiner_adds_itself_and_voters_with_their_first_disk_do_not_auto_join() {
    let m = model(ModelConfig {
        auto_join: true,
        ..ModelConfig::default()
    });
    let s = m.initial_state();
    let acts = enabled(&m, &s);
    assert!(acts.contains(&join(3)), "{acts:?}");
    assert!(!acts
        .iter()
        .any(|a| matches!(a, Action::AutoJoin { replica, .. } if *replica < 3)));
    let st = step(&m, &s, join(3));
    assert_eq!(st.replies[0].op, ChangeOp::Add(3));
    assert_eq!(st.replies[0].error, ErrorCode::None);
    // Without --auto-join nothing auto-joins.
    let off = model(ModelConfig::default());
    assert!(!enabled(&off, &s)
        .iter()
        .any(|a| matches!(a, Action::AutoJoin { .. })));
    assert!(off.step(&s, join(3)).is_none());
}

#[test]
fn keeps_stale_adds_over_the_stale_key_in_one_record() {
    let m = model(ModelConfig {
        bug: Some(Bug::AutoJoinKeepsStale),
        ..bounds()
    });
    let s = replaced(&m);
    assert_eq!(
        m.auto_join_request(&s.servers[1], 1),
        Some(AutoJoinRequest::Add)
    );
    let s = step(&m, &s, join(1)).state;
    // One record swaps the keys of id 1: (1, 0) out, (1, 1) in.
    assert_eq!(
        latest_voters(0b111, &s.servers[0].log),
        VoterSet::of(0b111).with(1, 1)
    );
}

#[test]
fn ack_commits_moves_the_high_watermark_past_the_acknowledged_record() {
    let cfg = crate::check::bug_bounds(Bug::AutoJoinAckCommits, FetchMode::Sync);
    let s = model(cfg).initial_state();
    let bugged = step(&model(cfg), &s, join(3)).state;
    let l = &bugged.servers[0];
    assert_eq!(l.hw, Some(l.log.len()));
    let fixed = model(ModelConfig { bug: None, ..cfg });
    let l = &step(&fixed, &s, join(3)).state.servers[0];
    assert!(l.hw < Some(l.log.len()));
}

#[test]
fn every_property_holds_with_auto_join_at_small_bounds() {
    // The joiner's auto-join, exhaustively (log ≤ 4 leaves room for its record only), including a
    // new leader truncating an add that was acknowledged at append.
    let cfg = ModelConfig {
        auto_join: true,
        max_log: 4,
        ..ModelConfig::default()
    };
    let r = crate::check::run(
        model(cfg),
        crate::check::CheckOptions {
            threads: 1,
            ..crate::check::CheckOptions::default()
        },
    );
    assert!(r.exhaustive);
    assert!(r.violated().is_empty(), "{:?}", r.violated());
    let found = |name: &str| {
        r.properties
            .iter()
            .any(|p| p.name == name && p.status == crate::check::Status::ExampleFound)
    };
    assert!(found("AutoJoinCommitted") && found("AutoJoinAckTruncated"));
}

/// The shortest path to a state where only `property` fails, at `cfg`.
fn caught(cfg: ModelConfig, property: &'static [&'static str]) -> Option<usize> {
    let mut m = model(cfg);
    m.only = Some(property);
    let r = crate::check::run(
        m,
        crate::check::CheckOptions {
            strategy: crate::check::Strategy::Bfs,
            threads: 1,
            symmetry: false,
            stop_at_first_violation: true,
            ..crate::check::CheckOptions::default()
        },
    );
    r.counterexample.map(|c| c.actions.len())
}

#[test]
fn an_acknowledgement_reported_committed_before_the_high_watermark_is_caught() {
    // The leader reports its latest set as CommittedVoters: right after the acknowledgement.
    let cfg = ModelConfig {
        auto_join: true,
        max_log: 4,
        bug: Some(Bug::CommittedFromLatest),
        ..ModelConfig::default()
    };
    let only: &[&str] = &["AppendAckCommittedOnlyPastHighWatermark"];
    assert_eq!(caught(cfg, only), Some(1));
    assert_eq!(caught(ModelConfig { bug: None, ..cfg }, only), None);
}

#[test]
fn a_truncated_acknowledgement_shown_committed_is_caught() {
    // The leader takes its acknowledgement for the commit; voters 1 and 2 elect a leader without
    // the record, and every copy is truncated.
    let cfg = ModelConfig {
        max_log: 4,
        ..crate::check::bug_bounds(Bug::AutoJoinAckCommits, FetchMode::Sync)
    };
    let only: &[&str] = &["TruncatedAutoJoinNeverCommitted"];
    assert!(caught(cfg, only).is_some());
    assert_eq!(caught(ModelConfig { bug: None, ..cfg }, only), None);
}

/// Delivers the first message in flight from `src` to `dst` that `pick` accepts.
fn deliver(m: &KraftModel, s: &State, src: Id, dst: Id, pick: fn(&Msg) -> bool) -> State {
    let env = *s
        .network
        .iter()
        .find(|e| e.src == src && e.dst == dst && pick(&e.msg))
        .unwrap_or_else(|| panic!("no message {src} -> {dst} in {:?}", s.network));
    step(m, s, Action::Deliver(env)).state
}

/// The harm search's path for `auto-join-keeps-stale` (`check --bug auto-join-keeps-stale --harm`):
/// voter 2 grants its epoch-2 vote to 1, then loses its disk; the key swap commits with the new
/// key's fetches; the old key's vote, still in flight, elects 1, whose log lacks the committed set.
fn stale_vote_in_flight(m: &KraftModel) -> State {
    let s = step(m, &m.initial_state(), Action::FetchTimeout(1)).state;
    let s = step(m, &s, Action::FetchTimeout(2)).state;
    let s = deliver(m, &s, 1, 2, |x| matches!(x, Msg::PreVoteRequest { .. }));
    let s = deliver(m, &s, 2, 1, |x| matches!(x, Msg::VoteResponse { .. }));
    let s = deliver(m, &s, 1, 2, |x| matches!(x, Msg::VoteRequest { .. }));
    let s = step(m, &s, Action::DiskLoss(2)).state;
    let s = (0..2).fold(s, |s, _| settle(m, s, fetch(2)));
    let s = step(m, &s, join(2)).state;
    (0..2).fold(s, |s, _| settle(m, s, fetch(2)))
}

#[test]
fn keeping_the_stale_key_lets_its_vote_in_flight_roll_back_a_committed_voter_set() {
    let bug = model(ModelConfig {
        bug: Some(Bug::AutoJoinKeepsStale),
        ..bounds()
    });
    let s = stale_vote_in_flight(&bug);
    let swapped = VoterSet::of(0b111).with(2, 1);
    let l = &s.servers[0];
    assert_eq!(committed_voters(0b111, &l.log, l.hw), Some(swapped));
    let s = deliver(&bug, &s, 2, 1, |x| matches!(x, Msg::VoteResponse { .. }));
    assert_eq!((s.servers[1].role, s.servers[1].epoch), (Role::Leader, 2));
    assert!(!crate::properties::committed_voter_set_durable(&bug, &s));
    // Remove-then-add: the removal of (2, 0) needs 1's fetch to commit (the set {0, 1}), which the
    // candidate never sends, so 1's election truncates nothing committed.
    let m = model(bounds());
    let s = stale_vote_in_flight(&m);
    let l = &s.servers[0];
    assert_eq!(latest_voters(0b111, &l.log), VoterSet::of(0b011));
    assert_eq!(
        committed_voters(0b111, &l.log, l.hw),
        Some(VoterSet::of(0b111))
    );
    let s = deliver(&m, &s, 2, 1, |x| matches!(x, Msg::VoteResponse { .. }));
    assert_eq!(s.servers[1].role, Role::Leader);
    assert!(crate::properties::committed_voter_set_durable(&m, &s));
}
