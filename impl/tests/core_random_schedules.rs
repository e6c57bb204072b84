//! Property tests over 3–5 in-memory nodes: random schedules of delivery, loss, duplication,
//! crash/restart, timeouts, client appends and membership requests, with the named invariants of
//! `specs/invariants.md` checked after every step; and garbage or out-of-state messages injected into
//! every role (no panic, Kafka's error codes where Kafka gives one).

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::messages::{
    begin_quorum_epoch_request, end_quorum_epoch_request, fetch_request, vote_request,
    vote_response, BeginQuorumEpochRequest, BrokerId, EndQuorumEpochRequest, FetchRequest,
    TopicName, VoteRequest, VoteResponse,
};
use kafka_protocol::protocol::StrBytes;
use proptest::prelude::*;

use kraft::history::committed_voter_set;
use kraft::log::{Batch, RaftLog, Record};
use kraft::node::{errors, EntryKind, Message, NodeView, Role, Timer, ALL_TIMERS};
use kraft::voter_set::{quorums_overlap, VoterSet};
use kraft_sim::{self as sim, Sim};

#[derive(Clone, Debug)]
enum Action {
    Deliver(usize),
    Drop(usize),
    Duplicate(usize),
    Fire(usize, usize),
    Advance(u64),
    Crash(usize),
    Restart(usize),
    Append(usize),
    Add(usize, usize),
    Remove(usize, usize),
    /// Every follower fetches and the network is drained (a few rounds): lets changes commit.
    Sync,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        8 => any::<usize>().prop_map(Action::Deliver),
        1 => any::<usize>().prop_map(Action::Drop),
        1 => any::<usize>().prop_map(Action::Duplicate),
        4 => (any::<usize>(), any::<usize>()).prop_map(|(n, t)| Action::Fire(n, t)),
        1 => (1u64..3000).prop_map(Action::Advance),
        1 => any::<usize>().prop_map(Action::Crash),
        2 => any::<usize>().prop_map(Action::Restart),
        2 => any::<usize>().prop_map(Action::Append),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(n, t)| Action::Add(n, t)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(n, t)| Action::Remove(n, t)),
        3 => Just(Action::Sync),
    ]
}

/// An entry as the invariants compare it: epoch and kind (data contents are equal when epochs match).
type Entry = (i32, EntryKind);

fn entries(log: &impl RaftLog) -> Vec<Entry> {
    let mut out = Vec::new();
    for b in log.read(log.start_offset(), usize::MAX).unwrap_or_default() {
        for r in &b.records {
            out.push((b.epoch, kind(r)));
        }
    }
    out
}

fn kind(r: &Record) -> EntryKind {
    match r {
        Record::Data(_) => EntryKind::Data,
        Record::LeaderChange { .. } => EntryKind::LeaderChange,
        Record::KRaftVersion(v) => EntryKind::KRaftVersion(*v),
        Record::Voters(s) => EntryKind::Voters(s.clone()),
    }
}

fn ids(s: &VoterSet) -> BTreeSet<i32> {
    s.ids().collect()
}

/// Per-replica memory between steps, reset when the replica restarts.
#[derive(Default)]
struct Seen {
    hw: Option<i64>,
    prefix: Vec<Entry>,
    committed_at: Option<i64>,
}

#[derive(Default)]
struct Checker {
    leaders: BTreeMap<i32, i32>,
    committed: Vec<Entry>,
    seen: BTreeMap<i32, Seen>,
    /// Highest HW known by a leader of each epoch (HighWatermarkMonotonic across leaders).
    leader_hw: BTreeMap<i32, i64>,
}

impl Checker {
    fn restarted(&mut self, id: i32) {
        self.seen.remove(&id);
    }

    fn check(&mut self, sim: &mut Sim) -> Result<(), TestCaseError> {
        let running: Vec<i32> = sim
            .nodes
            .keys()
            .copied()
            .filter(|&id| sim.is_running(id))
            .collect();
        let views: BTreeMap<i32, NodeView> = running
            .iter()
            .map(|&id| (id, sim.node(id).view()))
            .collect();
        let logs: BTreeMap<i32, Vec<Entry>> = sim
            .nodes
            .keys()
            .filter_map(|&id| sim.durable_log(id).map(|l| (id, entries(l))))
            .collect();

        // LogMatching: the last offset with equal epochs implies equal prefixes.
        let all: Vec<&Vec<Entry>> = logs.values().collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                let n = a.len().min(b.len());
                if let Some(o) = (0..n).rev().find(|&o| a[o].0 == b[o].0) {
                    prop_assert_eq!(&a[..=o], &b[..=o], "LogMatching");
                }
            }
        }

        for (&id, v) in &views {
            let log = &logs[&id];
            // ElectionSafety.
            if v.role == Role::Leader {
                let prev = *self.leaders.entry(v.epoch).or_insert(id);
                prop_assert_eq!(prev, id, "ElectionSafety in epoch {}", v.epoch);
            }
            // CommittedEntriesNeverLost: every known HW prefix agrees with the committed prefix C.
            if let Some(hw) = v.high_watermark {
                let hw = hw as usize;
                prop_assert!(
                    hw <= log.len(),
                    "HW {} beyond LEO {} at {}",
                    hw,
                    log.len(),
                    id
                );
                let n = hw.min(self.committed.len());
                prop_assert_eq!(
                    &log[..n],
                    &self.committed[..n],
                    "CommittedEntriesNeverLost at node {}",
                    id
                );
                if hw > self.committed.len() {
                    self.committed = log[..hw].to_vec();
                }
            }
            // Per replica: HighWatermarkMonotonic, NoTruncationBelowHighWatermark, CommittedVoterSetMonotonic.
            let seen = self.seen.entry(id).or_default();
            if let (Some(old), Some(new)) = (seen.hw, v.high_watermark) {
                prop_assert!(
                    new >= old,
                    "HighWatermarkMonotonic at {}: {} -> {}",
                    id,
                    old,
                    new
                );
            }
            prop_assert!(
                log.len() >= seen.prefix.len(),
                "NoTruncationBelowHighWatermark at {}",
                id
            );
            prop_assert_eq!(
                &log[..seen.prefix.len()],
                &seen.prefix[..],
                "NoTruncationBelowHighWatermark at {}",
                id
            );
            let committed_at = v.high_watermark.map(|hw| {
                sim.node(id)
                    .history()
                    .at_or_before(hw - 1)
                    .map_or(-1, |(o, _)| o)
            });
            if let (Some(old), Some(new)) = (seen.committed_at, committed_at) {
                prop_assert!(new >= old, "CommittedVoterSetMonotonic at {}", id);
            }
            if v.high_watermark.is_some() {
                seen.hw = v.high_watermark;
                seen.prefix = log[..v.high_watermark.unwrap_or(0) as usize].to_vec();
                seen.committed_at = committed_at;
            }
            // The committed voter set in the view is THE function's answer.
            prop_assert_eq!(
                v.committed_voters.as_ref(),
                committed_voter_set(sim.node(id).history(), v.high_watermark),
                "one committed voter set"
            );
        }

        for (&id, v) in &views {
            if v.role != Role::Leader {
                continue;
            }
            let Some(hw) = v.high_watermark else { continue };
            let start = sim
                .node(id)
                .leader_state()
                .map(|l| l.epoch_start_offset)
                .unwrap_or(-1);
            prop_assert!(hw > start, "HighWatermarkInCurrentEpoch");
            for (&e, &h) in self.leader_hw.range(..v.epoch) {
                prop_assert!(
                    hw >= h,
                    "HighWatermarkMonotonic across leaders: epoch {} HW {} < epoch {} HW {}",
                    v.epoch,
                    hw,
                    e,
                    h
                );
            }
            let best = self.leader_hw.entry(v.epoch).or_insert(hw);
            *best = (*best).max(hw);
            let committed = v.committed_voters.clone().expect("HW known");
            let (latest, committed_ids) = (ids(&v.latest_voters), ids(&committed));
            prop_assert!(
                latest.symmetric_difference(&committed_ids).count() <= 1,
                "SingleUncommittedChange"
            );
            prop_assert!(quorums_overlap(&latest, &committed_ids), "QuorumOverlap");
            // HighWatermarkMajority over durable logs.
            let leader_log = &logs[&id];
            let holds = |set: &BTreeSet<i32>| {
                let n = set
                    .iter()
                    .filter(|r| {
                        logs.get(r).is_some_and(|l| {
                            l.len() >= hw as usize && l[..hw as usize] == leader_log[..hw as usize]
                        })
                    })
                    .count();
                2 * n > set.len()
            };
            prop_assert!(
                holds(&latest) || holds(&committed_ids),
                "HighWatermarkMajority"
            );
            // DescribeQuorumConsistent (v3) and every version encodes.
            for version in 0..=3 {
                let r = sim.describe(id, version);
                prop_assert!(
                    r.to_bytes(version).is_ok(),
                    "DescribeQuorum v{} encodes",
                    version
                );
                if version < 3 {
                    continue;
                }
                let p = &r.topics[0].partitions[0];
                prop_assert_eq!(
                    (p.leader_id, p.leader_epoch, p.high_watermark),
                    (id, v.epoch, hw)
                );
                let cur: BTreeSet<i32> = p.current_voters.iter().map(|x| x.replica_id).collect();
                prop_assert_eq!(&cur, &latest, "DescribeQuorumConsistent CurrentVoters");
                let com: BTreeSet<i32> = p.committed_voters.iter().map(|x| x.replica_id).collect();
                prop_assert_eq!(
                    &com,
                    &committed_ids,
                    "DescribeQuorumConsistent CommittedVoters"
                );
                for x in &p.committed_voters {
                    let same = p.current_voters.iter().chain(&p.observers).find(|y| {
                        y.replica_id == x.replica_id
                            && y.replica_directory_id == x.replica_directory_id
                    });
                    match same {
                        Some(y) => prop_assert_eq!(x, y),
                        None => prop_assert_eq!(
                            (
                                x.log_end_offset,
                                x.last_fetch_timestamp,
                                x.last_caught_up_timestamp
                            ),
                            (-1, -1, -1)
                        ),
                    }
                }
                let nodes: BTreeSet<i32> = r.nodes.iter().map(|n| n.node_id).collect();
                prop_assert_eq!(
                    nodes,
                    latest
                        .union(&committed_ids)
                        .copied()
                        .collect::<BTreeSet<i32>>()
                );
            }
        }
        Ok(())
    }
}

/// What a run reached, so a test can show the schedules are not trivial.
#[derive(Default, Debug)]
struct Coverage {
    steps_with_committing_leader: usize,
    max_epoch: i32,
    changes_completed: usize,
    restarts: usize,
}

fn run(
    voters: i32,
    observers: i32,
    seed: u64,
    actions: &[Action],
) -> Result<Coverage, TestCaseError> {
    let mut cov = Coverage::default();
    let mut sim = Sim::new(voters, observers, seed).expect("valid cluster");
    let all: Vec<i32> = sim.nodes.keys().copied().collect();
    let pick = |i: usize| all[i % all.len()];
    let mut checker = Checker::default();
    for a in actions {
        let len = sim.network.len();
        match *a {
            Action::Deliver(i) if len > 0 => sim.deliver(i % len),
            Action::Drop(i) if len > 0 => sim.drop_message(i % len),
            Action::Duplicate(i) if len > 0 && len < 64 => sim.duplicate(i % len),
            Action::Fire(n, t) => sim.fire(pick(n), ALL_TIMERS[t % ALL_TIMERS.len()]),
            Action::Advance(ms) => sim.advance(ms),
            Action::Crash(n) => sim.crash(pick(n)),
            Action::Restart(n) => {
                let id = pick(n);
                if !sim.is_running(id) {
                    sim.restart(id).expect("restart from durable state");
                    checker.restarted(id);
                    cov.restarts += 1;
                }
            }
            Action::Append(n) if sim.is_running(pick(n)) => {
                let _ = sim.append(pick(n), &[b"x"]);
            }
            Action::Add(n, t) if sim.is_running(pick(n)) => {
                sim.client(pick(n), sim::add_voter_request(pick(t)));
            }
            Action::Remove(n, t) if sim.is_running(pick(n)) => {
                sim.client(pick(n), sim::remove_voter_request(pick(t)));
            }
            Action::Sync => sim.replicate(3),
            _ => {}
        }
        checker.check(&mut sim)?;
        if let Some(l) = sim.leader() {
            if sim.node(l).high_watermark().is_some() {
                cov.steps_with_committing_leader += 1;
            }
            cov.max_epoch = cov.max_epoch.max(sim.node(l).epoch());
        }
    }
    cov.changes_completed = sim
        .client_replies
        .iter()
        .filter(|(_, _, r)| matches!(sim::change_error_code(r), Some(0)))
        .count();
    Ok(cov)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_under_random_schedules(
        voters in 3i32..=4,
        observers in 0i32..=1,
        seed in any::<u64>(),
        actions in proptest::collection::vec(action(), 1..120),
    ) {
        run(voters, observers, seed, &actions)?;
    }
}

// A guided run that reaches membership changes and elections often: elect, replicate, then random.
proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_after_a_stable_start(
        seed in any::<u64>(),
        actions in proptest::collection::vec(action(), 1..100),
    ) {
        let mut prefix = vec![Action::Fire(0, 3)];
        for _ in 0..12 {
            prefix.push(Action::Deliver(0));
        }
        for n in 0..5 {
            prefix.push(Action::Fire(n, 5));
            prefix.push(Action::Deliver(0));
            prefix.push(Action::Deliver(0));
        }
        prefix.extend(actions);
        run(4, 1, seed, &prefix)?;
    }
}

/// The generated schedules reach committing leaders, several epochs, restarts and completed
/// membership changes (else the invariant checks above would be vacuous).
#[test]
fn random_schedules_reach_interesting_states() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let strategy = proptest::collection::vec(action(), 100..120);
    let mut total = Coverage::default();
    for seed in 0..60u64 {
        let actions = strategy.new_tree(&mut runner).unwrap().current();
        let mut prefix = vec![Action::Fire(0, 3)];
        prefix.extend((0..12).map(|_| Action::Deliver(0)));
        for n in 0..5 {
            prefix.extend([Action::Fire(n, 5), Action::Deliver(0), Action::Deliver(0)]);
        }
        prefix.extend(actions);
        let c = run(4, 1, seed, &prefix).unwrap();
        total.steps_with_committing_leader += c.steps_with_committing_leader;
        total.max_epoch = total.max_epoch.max(c.max_epoch);
        total.changes_completed += c.changes_completed;
        total.restarts += c.restarts;
    }
    eprintln!("coverage over 60 schedules: {total:?}");
    assert!(total.steps_with_committing_leader > 1000, "{total:?}");
    assert!(total.max_epoch >= 3, "{total:?}");
    assert!(total.restarts > 10, "{total:?}");
    assert!(total.changes_completed > 0, "{total:?}");
}

// ----- garbage and out-of-state messages ------------------------------------------------------------

#[derive(Clone, Debug)]
enum Garbage {
    Vote {
        epoch: i32,
        candidate: i32,
        last_epoch: i32,
        last_offset: i64,
        voter: i32,
        topic_ok: bool,
    },
    VoteResp {
        epoch: i32,
        leader: i32,
        granted: bool,
        error: i16,
    },
    Begin {
        epoch: i32,
        leader: i32,
        voter: i32,
        topic_ok: bool,
    },
    End {
        epoch: i32,
        leader: i32,
        successors: Vec<i32>,
    },
    Fetch {
        epoch: i32,
        replica: i32,
        offset: i64,
        last_epoch: i32,
        topic_ok: bool,
        cluster_ok: bool,
    },
    FetchRespFor {
        junk: Vec<u8>,
        hw: i64,
    },
}

fn garbage() -> impl Strategy<Value = Garbage> {
    let small = -2i32..6;
    prop_oneof![
        (
            small.clone(),
            -1i32..6,
            -1i32..6,
            -2i64..12,
            -1i32..6,
            any::<bool>()
        )
            .prop_map(
                |(epoch, candidate, last_epoch, last_offset, voter, topic_ok)| Garbage::Vote {
                    epoch,
                    candidate,
                    last_epoch,
                    last_offset,
                    voter,
                    topic_ok
                }
            ),
        (
            small.clone(),
            -1i32..6,
            any::<bool>(),
            prop_oneof![Just(0i16), Just(74i16), Just(-1i16)]
        )
            .prop_map(|(epoch, leader, granted, error)| Garbage::VoteResp {
                epoch,
                leader,
                granted,
                error
            }),
        (small.clone(), -1i32..6, -1i32..6, any::<bool>()).prop_map(
            |(epoch, leader, voter, topic_ok)| Garbage::Begin {
                epoch,
                leader,
                voter,
                topic_ok
            }
        ),
        (
            small.clone(),
            -1i32..6,
            proptest::collection::vec(-1i32..6, 0..4)
        )
            .prop_map(|(epoch, leader, successors)| Garbage::End {
                epoch,
                leader,
                successors
            }),
        (
            small,
            -1i32..6,
            -2i64..12,
            -1i32..6,
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(
                |(epoch, replica, offset, last_epoch, topic_ok, cluster_ok)| Garbage::Fetch {
                    epoch,
                    replica,
                    offset,
                    last_epoch,
                    topic_ok,
                    cluster_ok
                }
            ),
        (proptest::collection::vec(any::<u8>(), 0..80), -2i64..12)
            .prop_map(|(junk, hw)| Garbage::FetchRespFor { junk, hw }),
    ]
}

fn topic(ok: bool) -> TopicName {
    TopicName(StrBytes::from_static_str(if ok {
        "__cluster_metadata"
    } else {
        "other"
    }))
}

fn to_message(g: &Garbage, sim: &Sim, target: i32) -> Message {
    let cluster = Some(StrBytes::from_static_str("sim-cluster"));
    match g {
        Garbage::Vote {
            epoch,
            candidate,
            last_epoch,
            last_offset,
            voter,
            topic_ok,
        } => Message::VoteRequest(
            VoteRequest::default()
                .with_cluster_id(cluster)
                .with_voter_id(BrokerId(*voter))
                .with_topics(vec![vote_request::TopicData::default()
                    .with_topic_name(topic(*topic_ok))
                    .with_partitions(vec![vote_request::PartitionData::default()
                        .with_replica_epoch(*epoch)
                        .with_replica_id(BrokerId(*candidate))
                        .with_last_offset_epoch(*last_epoch)
                        .with_last_offset(*last_offset)])]),
        ),
        Garbage::VoteResp {
            epoch,
            leader,
            granted,
            error,
        } => Message::VoteResponse(VoteResponse::default().with_topics(vec![
            vote_response::TopicData::default().with_topic_name(topic(true)).with_partitions(vec![
                vote_response::PartitionData::default()
                    .with_error_code(*error)
                    .with_leader_id(BrokerId(*leader))
                    .with_leader_epoch(*epoch)
                    .with_vote_granted(*granted),
            ]),
        ])),
        Garbage::Begin {
            epoch,
            leader,
            voter,
            topic_ok,
        } => Message::BeginQuorumEpochRequest(
            BeginQuorumEpochRequest::default()
                .with_cluster_id(cluster)
                .with_voter_id(BrokerId(*voter))
                .with_topics(vec![begin_quorum_epoch_request::TopicData::default()
                    .with_topic_name(topic(*topic_ok))
                    .with_partitions(vec![
                        begin_quorum_epoch_request::PartitionData::default()
                            .with_leader_id(BrokerId(*leader))
                            .with_leader_epoch(*epoch),
                    ])]),
        ),
        Garbage::End {
            epoch,
            leader,
            successors,
        } => Message::EndQuorumEpochRequest(
            EndQuorumEpochRequest::default()
                .with_cluster_id(cluster)
                .with_topics(vec![end_quorum_epoch_request::TopicData::default()
                    .with_topic_name(topic(true))
                    .with_partitions(vec![
                        end_quorum_epoch_request::PartitionData::default()
                            .with_leader_id(BrokerId(*leader))
                            .with_leader_epoch(*epoch)
                            .with_preferred_successors(successors.clone()),
                    ])]),
        ),
        Garbage::Fetch {
            epoch,
            replica,
            offset,
            last_epoch,
            topic_ok,
            cluster_ok,
        } => Message::FetchRequest(
            FetchRequest::default()
                .with_cluster_id(if *cluster_ok {
                    cluster
                } else {
                    Some(StrBytes::from_static_str("other-cluster"))
                })
                .with_replica_state(
                    fetch_request::ReplicaState::default().with_replica_id(BrokerId(*replica)),
                )
                .with_topics(vec![fetch_request::FetchTopic::default()
                    .with_topic(topic(*topic_ok))
                    .with_partitions(vec![fetch_request::FetchPartition::default()
                        .with_current_leader_epoch(*epoch)
                        .with_fetch_offset(*offset)
                        .with_last_fetched_epoch(*last_epoch)])]),
        ),
        Garbage::FetchRespFor { junk, hw } => {
            // A response that matches the target's outstanding fetch (if any) but carries junk records.
            let view = sim.node(target).view();
            let (epoch, offset, last) = view
                .outstanding_fetch
                .map_or((view.epoch, view.log_end_offset, view.last_epoch), |f| {
                    (f.epoch, f.fetch_offset, f.last_fetched_epoch)
                });
            let mut resp = kafka_protocol::messages::FetchResponse::default().with_responses(vec![
                kafka_protocol::messages::fetch_response::FetchableTopicResponse::default()
                    .with_topic(topic(true))
                    .with_partitions(vec![
                    kafka_protocol::messages::fetch_response::PartitionData::default()
                        .with_high_watermark(*hw)
                        .with_current_leader(
                            kafka_protocol::messages::fetch_response::LeaderIdAndEpoch::default()
                                .with_leader_id(BrokerId(view.leader_id.unwrap_or(-1)))
                                .with_leader_epoch(epoch),
                        )
                        .with_records(Some(Bytes::from(junk.clone()))),
                ]),
            ]);
            let echo = kraft::node::FetchEcho {
                epoch,
                fetch_offset: offset,
                last_fetched_epoch: last,
            };
            resp.responses[0].partitions[0]
                .unknown_tagged_fields
                .insert(kraft::node::FETCH_ECHO_TAG, echo.encode());
            Message::FetchResponse(resp)
        }
    }
}

/// The error code Kafka gives for a garbage request, when it is determined by the request alone.
fn expected_code(g: &Garbage, view: &NodeView) -> Option<i16> {
    match g {
        Garbage::Vote {
            topic_ok: false, ..
        }
        | Garbage::Begin {
            topic_ok: false, ..
        } => Some(errors::INVALID_REQUEST),
        Garbage::Vote {
            epoch,
            candidate,
            last_epoch,
            last_offset,
            ..
        } if *candidate < 0 || *last_offset < 0 || *last_epoch < 0 || last_epoch >= epoch => {
            Some(errors::INVALID_REQUEST)
        }
        Garbage::Vote { epoch, .. } if *epoch < view.epoch => Some(errors::FENCED_LEADER_EPOCH),
        Garbage::Fetch {
            cluster_ok: false, ..
        } => Some(errors::INCONSISTENT_CLUSTER_ID),
        Garbage::Fetch {
            topic_ok: false, ..
        } => Some(errors::INVALID_REQUEST),
        // Kafka's `handleFetchRequest` checks: a last fetched epoch above the request's epoch is invalid.
        // A negative replica id is a reader (served, not tracked); the leader's own id is refused.
        Garbage::Fetch {
            epoch,
            replica,
            offset,
            last_epoch,
            ..
        } if *offset < 0 || *last_epoch < 0 || last_epoch > epoch || *replica == view.node_id => {
            Some(errors::INVALID_REQUEST)
        }
        Garbage::Fetch { epoch, .. } if *epoch < view.epoch => Some(errors::FENCED_LEADER_EPOCH),
        Garbage::Fetch { epoch, .. } if *epoch > view.epoch => Some(errors::UNKNOWN_LEADER_EPOCH),
        Garbage::Fetch { .. } if view.role != Role::Leader => Some(errors::NOT_LEADER_OR_FOLLOWER),
        // Kafka's `validateVoterOnlyRequest`: an older epoch is fenced, then a negative leader id invalid.
        Garbage::End { epoch, .. } if *epoch < view.epoch => Some(errors::FENCED_LEADER_EPOCH),
        Garbage::End { leader, .. } if *leader < 0 => Some(errors::INVALID_REQUEST),
        _ => None,
    }
}

fn response_code(msg: &Message) -> Option<i16> {
    let first = |top: i16, part: Option<i16>| if top != 0 { Some(top) } else { part };
    match msg {
        Message::VoteResponse(r) => first(
            r.error_code,
            r.topics
                .first()
                .and_then(|t| t.partitions.first())
                .map(|p| p.error_code),
        ),
        Message::BeginQuorumEpochResponse(r) => first(
            r.error_code,
            r.topics
                .first()
                .and_then(|t| t.partitions.first())
                .map(|p| p.error_code),
        ),
        Message::EndQuorumEpochResponse(r) => first(
            r.error_code,
            r.topics
                .first()
                .and_then(|t| t.partitions.first())
                .map(|p| p.error_code),
        ),
        Message::FetchResponse(r) => first(
            r.error_code,
            r.responses
                .first()
                .and_then(|t| t.partitions.first())
                .map(|p| p.error_code),
        ),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Garbage into every role: never a panic; the request's own error code where Kafka gives one.
    #[test]
    fn garbage_messages_get_errors_not_panics(
        seed in any::<u64>(),
        setup in proptest::collection::vec(action(), 0..40),
        junk in proptest::collection::vec((garbage(), 0usize..4, 0i32..6), 1..30),
    ) {
        let mut sim = Sim::new(3, 1, seed).expect("valid cluster");
        sim.elect(1);
        sim.replicate(5);
        for a in &setup {
            let len = sim.network.len();
            match *a {
                Action::Deliver(i) if len > 0 => sim.deliver(i % len),
                Action::Fire(n, t) => sim.fire(1 + (n % 4) as i32, ALL_TIMERS[t % ALL_TIMERS.len()]),
                Action::Crash(n) if n % 4 != 0 => sim.crash(1 + (n % 4) as i32),
                Action::Restart(n) => { let id = 1 + (n % 4) as i32; if !sim.is_running(id) { sim.restart(id).unwrap(); } }
                _ => {}
            }
        }
        for (g, target, from) in &junk {
            let target = 1 + *target as i32;
            if !sim.is_running(target) {
                continue;
            }
            let view = sim.node(target).view();
            let expect = expected_code(g, &view);
            let msg = to_message(g, &sim, target);
            let now = sim.clock(target);
            let out = sim.node_mut(target).handle(now, *from, msg);
            if let Some(code) = expect {
                let reply = out.replies.iter().find(|(to, m)| *to == *from && response_code(m).is_some());
                prop_assert_eq!(reply.and_then(|(_, m)| response_code(m)), Some(code), "{:?} to {:?}", g, view.role);
            }
            sim.absorb(target, out);
            // The node still serves DescribeQuorum at every version.
            for v in 0..=3 {
                prop_assert!(sim.describe(target, v).to_bytes(v).is_ok());
            }
        }
    }
}

#[test]
fn corrupt_log_batches_are_refused_by_the_follower() {
    // A follower whose fetch is answered with a batch that does not continue its log keeps its log.
    let mut sim = Sim::new(3, 0, 1).unwrap();
    sim.elect(1);
    sim.replicate(5);
    let before = sim.node(2).view().log;
    let bad = kraft::records::encode_batches(&[Batch {
        base_offset: 10,
        epoch: 1,
        append_time: 0,
        records: vec![Record::Data(Bytes::from_static(b"x"))],
    }])
    .unwrap();
    sim.fire(2, Timer::Fetch);
    let req = sim.network.remove(0);
    let Message::FetchRequest(_) = req.msg else {
        panic!("a fetch")
    };
    let f = sim.node(2).view().outstanding_fetch.unwrap();
    let g = Garbage::FetchRespFor {
        junk: bad.to_vec(),
        hw: 2,
    };
    let msg = to_message(&g, &sim, 2);
    let out = sim.node_mut(2).handle(0, 1, msg);
    sim.absorb(2, out);
    assert_eq!(sim.node(2).view().log, before);
    assert!(
        sim.node(2).view().outstanding_fetch.is_none(),
        "the matching response was consumed: {f:?}"
    );
}
