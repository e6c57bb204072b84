//! Disk loss and directory ids (KIP-853 voter keys): a replaced disk comes back as another key of
//! the same id, which neither votes nor counts toward the HW as the old key, and which an operator
//! brings back by removing the stale key and adding the new one.

use super::*;
use crate::types::VoterSet;

fn model(cfg: ModelConfig) -> KraftModel {
    KraftModel::new(cfg).unwrap()
}

fn bounds() -> ModelConfig {
    ModelConfig {
        joiners: 0,
        max_disk_losses: 1,
        max_changes: 2,
        max_data: 1,
        max_log: 6,
        ..ModelConfig::default()
    }
}

/// A step that changes nothing leaves the state as it was (a fetch with nothing new).
fn settle(m: &KraftModel, s: &State, a: Action) -> State {
    m.step(s, a).map_or_else(|| s.clone(), |st| st.state)
}

/// `replica` fetches from leader 0.
fn fetch(replica: Id) -> Action {
    Action::Fetch { replica, leader: 0 }
}

/// An operator's `op` at leader 0.
fn change(op: ChangeOp) -> Action {
    Action::Change { server: 0, op }
}

fn step(m: &KraftModel, s: &State, a: Action) -> State {
    m.step(s, a)
        .unwrap_or_else(|| panic!("{a:?} not enabled"))
        .state
}

#[test]
fn a_disk_loss_restarts_empty_under_a_new_directory_id_as_an_observer() {
    let m = model(bounds());
    let s = step(&m, &m.initial_state(), Action::DiskLoss(1));
    let r = &s.servers[1];
    assert_eq!(
        (r.dir, r.epoch, r.voted_for, r.role, r.hw, r.log.len()),
        (1, 0, None, Role::Unattached, None, 0)
    );
    // Not a voter of the bootstrap set under its new key: it never stands, it finds the leader.
    let mut acts = Vec::new();
    m.enabled_actions(&s, &mut acts);
    assert!(!acts.contains(&Action::ElectionTimeout(1)));
    assert!(acts.contains(&Action::Fetch {
        replica: 1,
        leader: 0
    }));
    // One disk loss only.
    assert!(!acts.iter().any(|a| matches!(a, Action::DiskLoss(_))));
    assert!(m.step(&s, Action::DiskLoss(2)).is_none());
}

#[test]
fn a_vote_for_the_old_key_is_refused_invalid_voter_key() {
    // Without garbage collection, which drops an error answer of the receiver's epoch at once.
    let m = model(ModelConfig {
        gc: false,
        ..bounds()
    });
    let s = step(&m, &m.initial_state(), Action::DiskLoss(1));
    let s = step(&m, &s, Action::FetchTimeout(2));
    let req = *s
        .network
        .iter()
        .find(|e| e.dst == 1 && matches!(e.msg, Msg::PreVoteRequest { voter_dir: 0, .. }))
        .expect("2 asks 1's old key for a pre-vote");
    let s = step(&m, &s, Action::Deliver(req));
    // Kafka 4.4 moves to the request's epoch first, then refuses the key.
    assert_eq!(s.servers[1].epoch, 1);
    let answer = s.network.iter().find(|e| e.src == 1 && e.dst == 2);
    assert!(
        matches!(
            answer.map(|e| e.msg),
            Some(Msg::VoteResponse {
                granted: false,
                error: ErrorCode::InvalidVoterKey,
                ..
            })
        ),
        "{answer:?}"
    );
    // The vote bug grants it: a grant under a key the granter does not hold.
    let bug = model(ModelConfig {
        bug: Some(Bug::VoteIgnoresDirectoryId),
        ..m.cfg
    });
    let t = step(&bug, &s_before_delivery(&bug), Action::Deliver(req));
    assert_ne!(
        t.history.violations & violation::KEY_NOT_HELD_COUNTED,
        0,
        "the grant is flagged"
    );
}

fn s_before_delivery(m: &KraftModel) -> State {
    let s = step(m, &m.initial_state(), Action::DiskLoss(1));
    step(m, &s, Action::FetchTimeout(2))
}

#[test]
fn a_fetch_from_the_new_key_is_not_the_old_voters() {
    let m = model(bounds());
    let s = step(&m, &m.initial_state(), Action::ClientAppend(0));
    let s = step(&m, &s, Action::DiskLoss(1));
    let fetch = Action::Fetch {
        replica: 1,
        leader: 0,
    };
    let s = step(&m, &step(&m, &s, fetch), fetch);
    let s = settle(&m, &s, fetch);
    let l = &s.servers[0];
    // Voter 1's state stays the old key's (offset 3 from the elected start); the HW stays below
    // the new record, which only the new key (not a voter) holds besides the leader.
    assert_eq!((l.end[1], l.peer_dir(1), l.hw), (Some(3), 0, Some(3)));
    assert_eq!(s.servers[1].log.len(), 4);
    let bug = model(ModelConfig {
        bug: Some(Bug::FetchIgnoresDirectoryId),
        ..bounds()
    });
    let s = step(&bug, &bug.initial_state(), Action::ClientAppend(0));
    let s = step(&bug, &s, Action::DiskLoss(1));
    let s = settle(&bug, &step(&bug, &step(&bug, &s, fetch), fetch), fetch);
    assert_eq!(s.servers[0].hw, Some(4), "the bug commits with the new key");
    assert_ne!(s.history.violations & violation::KEY_NOT_HELD_COUNTED, 0);
}

#[test]
fn the_operator_replaces_the_stale_key_with_the_new_one() {
    let m = model(ModelConfig {
        refusal_steps: true,
        ..bounds()
    });
    let s = step(&m, &m.initial_state(), Action::DiskLoss(1));
    let s = step(&m, &step(&m, &s, fetch(1)), fetch(1));
    // The id is a voter under its old key: adding the new key is DUPLICATE_VOTER.
    let st = m.step(&s, change(ChangeOp::Add(1))).unwrap();
    assert_eq!(st.replies[0].error, ErrorCode::DuplicateVoter);
    let s = step(&m, &s, change(ChangeOp::Remove(1)));
    let s = step(&m, &s, fetch(2));
    let s = step(&m, &s, fetch(2));
    assert_eq!(
        crate::spec::committed_voters(0b111, &s.servers[0].log, s.servers[0].hw),
        Some(VoterSet::of(0b101))
    );
    let s = step(&m, &step(&m, &s, fetch(1)), fetch(1));
    let s = step(&m, &s, change(ChangeOp::Add(1)));
    let latest = crate::spec::latest_voters(0b111, &s.servers[0].log);
    assert_eq!(latest, VoterSet::of(0b101).with(1, 1));
    assert!(latest.is_voter(1, 1) && !latest.is_voter(1, 0));
    let s = step(&m, &step(&m, &s, fetch(1)), fetch(1));
    let s = settle(&m, &s, fetch(1));
    assert_eq!(
        crate::spec::committed_voters(0b111, &s.servers[0].log, s.servers[0].hw),
        Some(latest),
        "committed with the new key's fetches"
    );
    assert!(crate::properties::replaced_voter_rejoined(&m, &s));
    // Now a voter under its new key, it may stand.
    assert!(m.is_voter(&s.servers[1], 1));
}

#[test]
fn every_property_holds_across_a_disk_loss_at_small_bounds() {
    // No membership change (the preset adds them): a disk loss of any server at any point, with a
    // client record to lose.
    let cfg = ModelConfig {
        max_changes: 0,
        ..bounds()
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
    assert!(r.unique_states > 1000, "{} states", r.unique_states);
}

#[test]
fn the_new_key_caught_up_while_the_old_one_was_the_voter_may_be_added() {
    // Kafka keeps the observer state of the new key beside the voter's: once the stale key is
    // removed, an AddVoter of the new key needs no further fetch (the kraft gate's `disk-loss` graph).
    let m = model(ModelConfig {
        refusal_steps: true,
        ..bounds()
    });
    let s = step(&m, &m.initial_state(), Action::DiskLoss(1));
    // Its epoch, its records, then a fetch at the leader's LEO.
    let s = step(&m, &step(&m, &step(&m, &s, fetch(1)), fetch(1)), fetch(1));
    let l = &s.servers[0];
    assert_eq!(
        (l.peer_dir(1), crate::spec::other_caught_up(l, 1)),
        (0, Some(1)),
        "the voter's state, and the new key's catch-up beside it"
    );
    let s = step(&m, &s, change(ChangeOp::Remove(1)));
    let s = step(&m, &step(&m, &s, fetch(2)), fetch(2));
    let st = m.step(&s, change(ChangeOp::Add(1))).unwrap();
    assert!(st.replies.is_empty(), "{:?}", st.replies);
    let latest = crate::spec::latest_voters(0b111, &st.state.servers[0].log);
    assert_eq!(latest, VoterSet::of(0b101).with(1, 1));
    // Its next fetch records the new key without losing the catch-up; the old key's is kept.
    let s = step(&m, &s, fetch(1));
    let l = &s.servers[0];
    assert_eq!((l.peer_dir(1), l.caught_up & bit(1)), (1, bit(1)));
    assert_eq!(crate::spec::other_caught_up(l, 1), Some(0));
}
