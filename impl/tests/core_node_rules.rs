//! Rules of the node one at a time: elections and votes, check-quorum, fetch matching and divergence,
//! ApiVersions, timers (restart: `core_restart.rs`).

use kraft::log::{MemoryLog, RaftLog, Record};
use kraft::node::Harness;
use kraft::node::{
    errors, Bootstrap, ClientRequest, ClientResponse, Effect, ElectionState, Message, Node,
    NodeError, Role, Timer,
};
use kraft_sim::{self as sim, Sim};

fn vote_code(msg: &Message) -> (i16, bool) {
    match msg {
        Message::VoteResponse(r) => {
            let p = &r.topics[0].partitions[0];
            (
                if r.error_code != 0 {
                    r.error_code
                } else {
                    p.error_code
                },
                p.vote_granted,
            )
        }
        other => panic!("not a vote response: {other:?}"),
    }
}

#[test]
fn bad_configuration_and_state_are_typed_errors() {
    let set = sim::voter_set(&[1]);
    let mut cfg = sim::config(1, Bootstrap::Checkpoint(set.clone()), 1);
    cfg.election_timeout_ms = 0;
    assert!(matches!(
        Node::new(cfg, MemoryLog::new(), ElectionState::default()),
        Err(NodeError::Config(_))
    ));
    let mut cfg = sim::config(1, Bootstrap::Checkpoint(set.clone()), 1);
    cfg.node_id = -3;
    assert!(matches!(
        Node::new(cfg, MemoryLog::new(), ElectionState::default()),
        Err(NodeError::Config(_))
    ));
    let cfg = sim::config(1, Bootstrap::Checkpoint(set), 1);
    let bad = ElectionState {
        epoch: -1,
        voted: None,
        leader_id: None,
    };
    assert!(matches!(
        Node::new(cfg, MemoryLog::new(), bad),
        Err(NodeError::ElectionState(_))
    ));
}

#[test]
fn start_clock_delays_restart_deadlines() {
    let set = sim::voter_set(&[1, 2, 3]);
    let mut n = Node::new(
        sim::config(1, Bootstrap::Checkpoint(set), 1),
        MemoryLog::new(),
        ElectionState::default(),
    )
    .unwrap();
    let relative = n.timers().election.unwrap();
    assert!((1000..2000).contains(&relative));
    n.start_clock(1_000_000);
    assert_eq!(n.timers().election, Some(1_000_000 + relative));
    let out = n.tick(1_000_000 + relative - 1);
    assert!(out.requests.is_empty() && out.replies.is_empty());
    let out = n.tick(1_000_000 + relative);
    assert_eq!(n.role(), Role::Prospective);
    assert!(out.effects.is_empty(), "a pre-vote round persists nothing");
    assert_eq!(
        (out.requests.len(), out.replies.len()),
        (2, 0),
        "pre-votes to 2 and 3"
    );
    // A granted pre-vote: Candidate, and the vote for itself is persisted.
    let reply = n.handle(1_000_000 + relative, 2, pre_vote_grant(0));
    assert_eq!(n.role(), Role::Candidate);
    assert_eq!(
        reply.effects,
        vec![Effect::PersistElectionState(ElectionState {
            epoch: 1,
            voted: Some(sim::key(1)),
            leader_id: None
        })]
    );
    assert_eq!(
        (reply.requests.len(), reply.replies.len()),
        (2, 0),
        "Vote to 2 and 3"
    );
}

/// Node `id` times out and wins its pre-vote round (a grant from `granter` is handed to it; its
/// pre-votes are dropped): it stands as Candidate, its Vote requests in the network.
fn stand(sim: &mut Sim, id: i32, granter: i32) {
    let timer = if sim.node(id).timers().election.is_some() {
        Timer::Election
    } else {
        Timer::FetchTimeout
    };
    sim.fire(id, timer);
    assert_eq!(sim.node(id).role(), Role::Prospective);
    sim.network.retain(|e| {
        !(e.from == id
            && matches!(&e.msg, Message::VoteRequest(r) if r.topics[0].partitions[0].pre_vote))
    });
    let (now, epoch) = (sim.clock(id), sim.node(id).epoch());
    let out = sim.node_mut(id).handle(now, granter, pre_vote_grant(epoch));
    sim.absorb(id, out);
    assert_eq!(sim.node(id).role(), Role::Candidate);
}

/// A VoteResponse granting at `epoch`, no leader known.
fn pre_vote_grant(epoch: i32) -> Message {
    use kafka_protocol::messages::vote_response::{PartitionData, TopicData};
    use kafka_protocol::messages::{BrokerId, TopicName, VoteResponse};
    use kafka_protocol::protocol::StrBytes;
    Message::VoteResponse(
        VoteResponse::default().with_topics(vec![TopicData::default()
            .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
            .with_partitions(vec![PartitionData::default()
                .with_leader_id(BrokerId(-1))
                .with_leader_epoch(epoch)
                .with_vote_granted(true)])]),
    )
}

#[test]
fn same_seed_same_run() {
    let run = |seed| {
        let mut sim = Sim::new(3, 0, seed).unwrap();
        for _ in 0..20 {
            sim.advance(700);
            sim.deliver_all(100);
        }
        (1..=3).map(|id| sim.node(id).view()).collect::<Vec<_>>()
    };
    assert_eq!(run(5), run(5));
}

#[test]
fn vote_granting_follows_kafka() {
    let mut sim = Sim::new(3, 0, 3).unwrap();
    // Node 1 becomes candidate in epoch 1 and asks 2 and 3.
    stand(&mut sim, 1, 3);
    let to2 = sim.network.iter().position(|e| e.to == 2).unwrap();
    let req = sim.network[to2].msg.clone();
    let out = sim.node_mut(2).handle(0, 1, req.clone());
    assert_eq!(vote_code(&out.replies[0].1), (errors::NONE, true));
    assert_eq!(
        out.effects.len(),
        1,
        "epoch and vote persisted before the response"
    );
    // The same candidate again: granted again; another candidate in the same epoch: refused.
    let out = sim.node_mut(2).handle(0, 1, req.clone());
    assert_eq!(vote_code(&out.replies[0].1), (errors::NONE, true));
    stand(&mut sim, 3, 1);
    let from3 = sim
        .network
        .iter()
        .rposition(|e| e.from == 3 && e.to == 2)
        .unwrap();
    let req3 = sim.network[from3].msg.clone();
    let out = sim.node_mut(2).handle(0, 3, req3);
    assert_eq!(vote_code(&out.replies[0].1), (errors::NONE, false));
    // A stale epoch is fenced.
    let mut stale = sim::Sim::new(3, 0, 3).unwrap();
    stand(&mut stale, 1, 3);
    stand(&mut stale, 1, 3); // epoch 2
    let to2: Vec<Message> = stale
        .network
        .iter()
        .filter(|e| e.to == 2)
        .map(|e| e.msg.clone())
        .collect();
    let (epoch1, epoch2) = (to2[0].clone(), to2[1].clone());
    // A request meant for another voter is refused with INVALID_VOTER_KEY.
    let to3 = stale
        .network
        .iter()
        .find(|e| e.to == 3)
        .unwrap()
        .msg
        .clone();
    let out = stale.node_mut(2).handle(0, 1, to3);
    assert_eq!(
        vote_code(&out.replies[0].1),
        (errors::INVALID_VOTER_KEY, false)
    );
    let out = stale.node_mut(2).handle(0, 1, epoch2);
    assert_eq!(vote_code(&out.replies[0].1), (errors::NONE, true));
    let out = stale.node_mut(2).handle(0, 1, epoch1);
    assert_eq!(
        vote_code(&out.replies[0].1),
        (errors::FENCED_LEADER_EPOCH, false)
    );
}

#[test]
fn a_candidate_with_a_shorter_log_is_refused() {
    let mut sim = Sim::new(3, 0, 4).unwrap();
    sim.elect(1);
    sim.replicate(5);
    sim.append(1, &[b"a"]).unwrap();
    sim.replicate(5);
    // Node 3 misses the next record; node 2 has it.
    sim.append(1, &[b"b"]).unwrap();
    sim.fire(2, Timer::Fetch);
    sim.deliver_all(100);
    sim.crash(1);
    stand(&mut sim, 3, 1);
    let to2 = sim
        .network
        .iter()
        .position(|e| e.to == 2 && matches!(e.msg, Message::VoteRequest(_)))
        .unwrap();
    sim.deliver(to2);
    let reply = sim.network.iter().find(|e| e.to == 3).unwrap();
    assert_eq!(vote_code(&reply.msg), (errors::NONE, false));
    assert_eq!(
        sim.node(2).epoch(),
        2,
        "the higher epoch is adopted even when the vote is refused"
    );
}

#[test]
fn check_quorum_expiry_resigns_and_sends_end_quorum_epoch() {
    let mut sim = Sim::new(3, 0, 5).unwrap();
    sim.elect(1);
    sim.replicate(5);
    sim.network.clear();
    sim.fire(1, Timer::CheckQuorum);
    assert_eq!(sim.node(1).role(), Role::Resigned);
    let ends: Vec<i32> = sim
        .network
        .iter()
        .filter(|e| matches!(e.msg, Message::EndQuorumEpochRequest(_)))
        .map(|e| e.to)
        .collect();
    assert_eq!(ends, vec![2, 3]);
    let d = sim.describe(1, 2);
    assert_eq!(
        d.topics[0].partitions[0].error_code,
        errors::NOT_LEADER_OR_FOLLOWER
    );
    // Fetches keep the leader alive: a window with a majority of fetches re-arms the timer.
    let mut sim = Sim::new(3, 0, 5).unwrap();
    sim.elect(1);
    let before = sim.node(1).timers().check_quorum.unwrap();
    let later = sim.clock(1) + 1000;
    sim.tick(1, later);
    sim.replicate(2);
    assert_eq!(sim.node(1).timers().check_quorum, Some(before + 1000));
    assert_eq!(sim.node(1).role(), Role::Leader);
}

#[test]
fn single_voter_leader_has_no_check_quorum() {
    let mut sim = Sim::new(1, 0, 5).unwrap();
    sim.elect(1);
    assert_eq!(sim.node(1).role(), Role::Leader);
    assert_eq!(sim.node(1).timers().check_quorum, None);
    assert_eq!(sim.node(1).high_watermark(), Some(3));
}

#[test]
fn stale_and_duplicated_fetch_responses_are_ignored() {
    let mut sim = Sim::new(3, 0, 6).unwrap();
    sim.elect(1);
    sim.fire(2, Timer::Fetch);
    sim.deliver(0); // request to the leader
    let response = sim.network[0].clone();
    sim.deliver(0);
    assert_eq!(sim.node(2).view().log_end_offset, 3);
    // A duplicate of the consumed response no longer matches anything outstanding.
    let before = sim.node(2).view();
    sim.network.push(response.clone());
    sim.deliver(0);
    assert_eq!(sim.node(2).view(), before);
    // Nor does it match the next outstanding fetch (different fetch offset).
    sim.fire(2, Timer::Fetch);
    sim.network.insert(0, response);
    sim.deliver(0);
    assert!(
        sim.node(2).view().outstanding_fetch.is_some(),
        "still waiting for the real response"
    );
}

/// A follower that gets its leader's EndQuorumEpoch stops waiting out its fetch timeout (Kafka's
/// `handleEndQuorumEpochRequest`: `overrideFetchTimeout` by the position in the preferred successors):
/// the first successor's fetch timeout is due at once, the second's is brought forward but not to now.
/// Timers are outside the model, so the gate cannot see this rule.
#[test]
fn end_quorum_epoch_brings_the_successors_fetch_timeouts_forward() {
    let mut sim = Sim::new(3, 0, 5).unwrap();
    sim.elect(1);
    sim.replicate(5);
    sim.network.clear();
    sim.fire(1, Timer::CheckQuorum);
    let successors = match &sim.network[0].msg {
        Message::EndQuorumEpochRequest(r) => r.topics[0].partitions[0].preferred_successors.clone(),
        other => panic!("not an EndQuorumEpoch: {other:?}"),
    };
    assert_eq!(successors, vec![2, 3]);
    let mut deadlines = Vec::new();
    for id in successors {
        let before = sim.node(id).timers().fetch_timeout.expect("a follower");
        let i = sim.network.iter().position(|e| e.to == id).unwrap();
        sim.deliver(i);
        assert_eq!(sim.node(id).role(), Role::Follower);
        let after = sim.node(id).timers().fetch_timeout.unwrap();
        assert!(after < before, "{id}: {after} not before {before}");
        deadlines.push(after - sim.clock(id));
    }
    assert_eq!(deadlines[0], 0, "the first successor runs at once");
    assert!(deadlines[1] > 0, "the second waits: {deadlines:?}");
}

/// An observer that follows the resigning leader also brings its fetch timeout forward (Kafka's
/// `handleEndQuorumEpochRequest` checks only that it follows that leader, not that it is a voter), so it
/// looks for the next leader sooner. Here it gets a copy of the leader's EndQuorumEpoch (a voter whose
/// own VotersRecord it has not fetched yet would get the real one).
#[test]
fn end_quorum_epoch_brings_an_observing_followers_fetch_timeout_forward() {
    let mut sim = Sim::new(3, 1, 5).unwrap();
    sim.elect(1);
    sim.replicate(5);
    assert_eq!(
        (sim.node(4).role(), sim.node(4).leader_id()),
        (Role::Follower, Some(1))
    );
    sim.network.clear();
    sim.fire(1, Timer::CheckQuorum);
    let mut copy = sim.network[0].clone();
    copy.to = 4;
    sim.network.clear();
    sim.network.push(copy);
    let before = sim.node(4).timers().fetch_timeout.expect("a follower");
    sim.deliver(0);
    assert_eq!(sim.node(4).role(), Role::Follower);
    let after = sim.node(4).timers().fetch_timeout.unwrap();
    assert!(after < before, "{after} not before {before}");
}

/// An observer whose fetch is refused (no leader yet) asks again after the fetch interval: the fetch
/// timer is re-armed at `now + fetch.interval`, neither left unset (the observer would never fetch
/// again) nor due at once (a hot loop).
#[test]
fn refused_fetch_is_retried_after_the_fetch_interval() {
    let mut sim = Sim::new(3, 1, 5).unwrap();
    sim.fire(4, Timer::Fetch);
    let sent_at = sim.clock(4);
    assert!(!sim.node(4).outstanding_fetch_is_none());
    sim.deliver_all(10);
    assert!(sim.node(4).outstanding_fetch_is_none(), "answered");
    assert_eq!(sim.node(4).leader_id(), None);
    let interval = sim.node(4).config().fetch_interval_ms;
    assert_eq!(sim.node(4).timers().fetch, Some(sent_at + interval));
}

/// A follower that knows the HW truncates to the diverging end offset it is sent (Kafka's
/// `truncateToEndOffset`: the smaller of that end and its own end for the epoch), not further: here that
/// is its HW, so the truncation is allowed, its uncommitted suffix is replaced and the logs converge.
#[test]
fn diverging_follower_with_a_known_hw_truncates_to_the_diverging_end() {
    let mut sim = Sim::new(5, 0, 8).unwrap();
    sim.elect(1);
    sim.replicate(10);
    let hw = sim.node(3).high_watermark().expect("3 knows the HW");
    // Leader 1 appends; only follower 3 fetches it, so it stays uncommitted (2 of 5).
    sim.append(1, &[b"lost"]).unwrap();
    sim.fire(3, Timer::Fetch);
    sim.deliver_all(100);
    assert_eq!(sim.node(3).log().end_offset(), hw + 1);
    assert_eq!(sim.node(1).high_watermark(), Some(hw));
    sim.crash(1);
    sim.elect(2);
    assert_eq!(sim.leader(), Some(2));
    sim.append(2, &[b"kept"]).unwrap();
    assert_eq!(sim.node(3).high_watermark(), Some(hw));
    // 3's first fetch in epoch 2 carries (offset hw + 1, epoch 1): diverging at (1, hw).
    sim.fire(3, Timer::Fetch);
    sim.deliver_all(100);
    assert_eq!(
        sim.node(3).log().end_offset(),
        hw,
        "truncated to the diverging end offset"
    );
    sim.replicate(10);
    assert_eq!(sim.node(3).view().log, sim.node(2).view().log);
}

/// A fetcher whose last fetched epoch is older than every record of the leader's log: nothing of epoch
/// ≤ 1 is there, so the divergence is at (epoch 0, log start), as the model's `diverging` and Kafka
/// (`KafkaMetadataLog.endOffsetForEpoch` answers with the snapshot at the log start, the bootstrap
/// checkpoint (0, 0)), not the epoch cache's own answer (the asked epoch, the first base offset).
#[test]
fn divergence_before_the_leaders_first_epoch_is_at_epoch_zero() {
    let mut log = MemoryLog::new();
    for v in [&b"a"[..], b"b"] {
        let data = vec![Record::Data(bytes::Bytes::copy_from_slice(v))];
        log.append_as_leader(2, 0, data).unwrap();
    }
    let cfg = sim::config(1, Bootstrap::Checkpoint(sim::voter_set(&[1, 2, 3])), 1);
    let state = ElectionState {
        epoch: 2,
        voted: None,
        leader_id: None,
    };
    let n = Node::new(cfg, log, state).unwrap();
    assert_eq!(n.diverging_epoch(3, 1), Some((0, 0)));
    assert_eq!(n.diverging_epoch(2, 2), None);
}

#[test]
fn diverging_follower_truncates_and_its_latest_voter_set_reverts() {
    let mut sim = Sim::new(3, 1, 8).unwrap();
    sim.elect(1);
    sim.replicate(10);
    sim.crash(2);
    sim.crash(3);
    // Only 1 holds the uncommitted VotersRecord and a data record.
    assert!(sim.client(1, sim::add_voter_request(4)).is_empty());
    sim.append(1, &[b"lost"]).unwrap();
    assert_eq!(
        sim.node(1).latest_voters().ids().collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    sim.crash(1);
    sim.restart(2).unwrap();
    sim.restart(3).unwrap();
    sim.elect(2);
    assert_eq!(sim.leader(), Some(2));
    sim.append(2, &[b"kept"]).unwrap();
    sim.replicate(10);
    sim.restart(1).unwrap();
    sim.fire(2, Timer::BeginQuorumEpoch);
    sim.deliver_all(100);
    sim.replicate(10);
    assert_eq!(
        sim.node(1).view().log,
        sim.node(2).view().log,
        "the diverging records were replaced"
    );
    assert_eq!(
        sim.node(1).latest_voters().ids().collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(sim.node(1).high_watermark(), sim.node(2).high_watermark());
}

#[test]
fn observer_finds_the_leader_through_a_non_leader() {
    let mut sim = Sim::new(3, 1, 9).unwrap();
    sim.elect(2);
    assert_eq!(sim.node(4).role(), Role::Unattached);
    sim.fire(4, Timer::Fetch); // to voter 1 first
    assert_eq!(sim.network.last().unwrap().to, 1);
    sim.deliver_all(10);
    assert_eq!(
        (sim.node(4).role(), sim.node(4).leader_id()),
        (Role::Follower, Some(2))
    );
    sim.replicate(10);
    assert_eq!(sim.node(4).high_watermark(), Some(3));
}

#[test]
fn api_versions_advertise_kraft_version() {
    let mut sim = Sim::new(1, 0, 1).unwrap();
    let r = sim.client(1, ClientRequest::ApiVersions(Default::default()));
    let ClientResponse::ApiVersions(r) = &r[0] else {
        panic!("{r:?}")
    };
    let f = &r.supported_features[0];
    assert_eq!(
        (f.name.as_str(), f.min_version, f.max_version),
        ("kraft.version", 0, 1)
    );
    assert_eq!(r.finalized_features[0].max_version_level, 1);
    assert!(r
        .api_keys
        .iter()
        .any(|k| k.api_key == 55 && k.max_version == 3));
    let mut st = Sim::new_static(1, 1).unwrap();
    let r = st.client(1, ClientRequest::ApiVersions(Default::default()));
    let ClientResponse::ApiVersions(r) = &r[0] else {
        panic!("{r:?}")
    };
    assert_eq!(r.finalized_features[0].max_version_level, 0);
}

#[test]
fn append_only_at_the_leader() {
    let mut sim = Sim::new(3, 0, 1).unwrap();
    assert!(sim.append(1, &[b"a"]).is_err());
    sim.elect(1);
    assert_eq!(sim.append(1, &[b"a", b"b"]).unwrap(), 3);
    let log = sim.node(1).log();
    assert_eq!(log.end_offset(), 5);
    assert!(matches!(log.batches()[1].records[0], Record::Data(_)));
}

fn update_request(id: i32, epoch: i32, port: u16) -> ClientRequest {
    update_request_range(id, epoch, port, (0, 1))
}

/// UpdateRaftVoter naming `kraft.version` range `(min, max)` as the voter's supported range.
fn update_request_range(id: i32, epoch: i32, port: u16, (min, max): (i16, i16)) -> ClientRequest {
    use kafka_protocol::messages::update_raft_voter_request::{KRaftVersionFeature, Listener};
    use kafka_protocol::messages::UpdateRaftVoterRequest;
    use kafka_protocol::protocol::StrBytes;
    ClientRequest::UpdateRaftVoter(
        UpdateRaftVoterRequest::default()
            .with_cluster_id(Some(StrBytes::from_static_str("sim-cluster")))
            .with_current_leader_epoch(epoch)
            .with_voter_id(id)
            .with_voter_directory_id(sim::directory_id(id))
            .with_listeners(vec![Listener::default()
                .with_name(StrBytes::from_static_str("CONTROLLER"))
                .with_host(StrBytes::from_static_str("localhost"))
                .with_port(port)])
            .with_k_raft_version_feature(
                KRaftVersionFeature::default()
                    .with_min_supported_version(min)
                    .with_max_supported_version(max),
            ),
    )
}

#[test]
fn update_voter_replies_at_once_and_blocks_changes_until_committed() {
    let mut sim = Sim::new(3, 1, 12).unwrap();
    sim.elect(1);
    sim.replicate(10);
    let codes = |r: Vec<ClientResponse>| r.iter().map(sim::change_error_code).collect::<Vec<_>>();
    assert_eq!(
        codes(sim.client(1, update_request(2, 0, 9999))),
        vec![Some(errors::FENCED_LEADER_EPOCH)]
    );
    assert_eq!(
        codes(sim.client(1, update_request(2, 5, 9999))),
        vec![Some(errors::UNKNOWN_LEADER_EPOCH)]
    );
    assert_eq!(
        codes(sim.client(2, update_request(2, 1, 9999))),
        vec![Some(errors::NOT_LEADER_OR_FOLLOWER)]
    );
    assert_eq!(
        codes(sim.client(1, update_request(7, 1, 9999))),
        vec![Some(errors::VOTER_NOT_FOUND)]
    );
    assert_eq!(
        codes(sim.client(1, update_request(2, 1, 9999))),
        vec![Some(errors::NONE)]
    );
    let latest = sim.node(1).latest_voters().clone();
    assert_eq!(latest.voter(2).unwrap().listeners[0].port, 9999);
    assert!(
        sim.node(1).pending_change().is_none(),
        "no pending state for an update"
    );
    // The uncommitted record blocks an add until it commits.
    assert_eq!(
        codes(sim.client(1, sim::add_voter_request(4))),
        vec![Some(errors::REQUEST_TIMED_OUT)]
    );
    sim.replicate(10);
    assert!(sim.client(1, sim::add_voter_request(4)).is_empty());
}

/// UpdateRaftVoter's `kraft.version` rules (Kafka's `UpdateVoterHandler`): a negative or inverted range is
/// INVALID_REQUEST, and so is a range that excludes the finalized `kraft.version` (1 here); a range that
/// includes it is accepted. Nothing is appended for a refusal.
#[test]
fn update_voter_checks_the_kraft_version_range() {
    let mut sim = Sim::new(3, 0, 12).unwrap();
    sim.elect(1);
    sim.replicate(10);
    let end = sim.node(1).log().end_offset();
    for range in [(-1, 1), (0, -1), (1, 0), (0, 0), (2, 3)] {
        let r = sim.client(1, update_request_range(2, 1, 9999, range));
        assert_eq!(
            r.iter().map(sim::change_error_code).collect::<Vec<_>>(),
            vec![Some(errors::INVALID_REQUEST)],
            "range {range:?}"
        );
    }
    assert_eq!(
        sim.node(1).log().end_offset(),
        end,
        "a refusal appends nothing"
    );
    let r = sim.client(1, update_request_range(2, 1, 9999, (1, 1)));
    assert_eq!(
        r.iter().map(sim::change_error_code).collect::<Vec<_>>(),
        vec![Some(errors::NONE)]
    );
    assert_eq!(
        sim.node(1).latest_voters().voter(2).unwrap().supported.max,
        1
    );
}

#[test]
fn wrong_cluster_id_is_refused() {
    let mut sim = Sim::new(3, 0, 13).unwrap();
    sim.elect(1);
    sim.replicate(10);
    let ClientRequest::AddRaftVoter { request: req, .. } = sim::add_voter_request(4) else {
        unreachable!()
    };
    let req = req.with_cluster_id(Some(kafka_protocol::protocol::StrBytes::from_static_str(
        "other",
    )));
    let r = sim.client(
        1,
        ClientRequest::AddRaftVoter {
            request: req,
            ack_when_committed: true,
        },
    );
    assert_eq!(
        r.iter().map(sim::change_error_code).collect::<Vec<_>>(),
        vec![Some(errors::INCONSISTENT_CLUSTER_ID)]
    );
}

/// KIP-1186 (AddRaftVoter v1): `AckWhenCommitted=false` is answered once the VotersRecord is appended,
/// before it commits (Kafka's `AddVoterHandler`); no operation stays pending, and the uncommitted record
/// still blocks the next change until it commits. `true` (and v0) answers at commit.
#[test]
fn add_voter_without_ack_when_committed_answers_at_append() {
    let mut sim = Sim::new(3, 1, 2).unwrap();
    sim.elect(1);
    sim.replicate(10);
    let ClientRequest::AddRaftVoter { request, .. } = sim::add_voter_request(4) else {
        unreachable!()
    };
    let hw = sim.node(1).high_watermark();
    let replies = sim.client(
        1,
        ClientRequest::AddRaftVoter {
            request,
            ack_when_committed: false,
        },
    );
    assert_eq!(
        replies
            .iter()
            .map(sim::change_error_code)
            .collect::<Vec<_>>(),
        vec![Some(errors::NONE)]
    );
    assert_eq!(
        sim.node(1).high_watermark(),
        hw,
        "answered before the commit"
    );
    assert_eq!(
        sim.node(1).latest_voters().ids().collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    assert!(sim.node(1).pending_change().is_none());
    assert_eq!(
        sim.client(1, sim::remove_voter_request(4))
            .iter()
            .map(sim::change_error_code)
            .collect::<Vec<_>>(),
        vec![Some(errors::REQUEST_TIMED_OUT)],
        "the uncommitted VotersRecord blocks the next change"
    );
    sim.replicate(10);
    assert!(sim.node(1).high_watermark() > hw);
    let last = sim.client_replies.len();
    sim.replicate(10);
    assert_eq!(sim.client_replies.len(), last, "no second reply at commit");
}
