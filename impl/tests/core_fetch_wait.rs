//! Fetch long-poll (Kafka's fetch purgatory): a leader parks a Fetch that finds nothing new until its
//! log grows, its HW moves, it stops leading, or the request's MaxWaitMs passes; and it honours the
//! request's MaxBytes (at least one whole batch). Time is an input: every wait ends on a `tick` at or
//! after its deadline, never on a clock.

use kafka_protocol::messages::{FetchRequest, FetchResponse};
use kraft::log::RaftLog;
use kraft::node::Harness;
use kraft::node::{
    errors, Bootstrap, Message, Millis, Node, Output, Role, Timer, FETCH_MAX_WAIT_MS,
};
use kraft_sim::{self as sim, Sim};

/// A 3-voter cluster (plus `observers`) led by 1, everyone caught up, and the time after which the
/// leader has no parked fetch left (the followers' last fetches waited and were answered, unread).
fn cluster(observers: i32) -> (Sim, Millis) {
    let voters = sim::voter_set(&[1, 2, 3]);
    let mut sim = Sim::with_configs((1..=3 + observers).map(|id| {
        let mut config = sim::config(id, Bootstrap::Checkpoint(voters.clone()), 7);
        config.fetch_max_wait_ms = FETCH_MAX_WAIT_MS;
        config
    }))
    .unwrap();
    sim.elect(1);
    assert_eq!(sim.node(1).role(), Role::Leader);
    sim.replicate(20);
    assert!(
        sim.node(1).parked_fetch_count() > 0,
        "the followers' last fetches wait"
    );
    let t = sim.clock(1) + FETCH_MAX_WAIT_MS;
    sim.node_mut(1).tick(t);
    assert_eq!(sim.node(1).parked_fetch_count(), 0);
    assert_eq!(sim.node(1).role(), Role::Leader);
    (sim, t + 1)
}

/// The Fetch request `follower` would send to the leader now (taken from its own output).
fn fetch_of(sim: &mut Sim, follower: i32) -> FetchRequest {
    let now = sim.clock(follower) + 1;
    let out = sim.node_mut(follower).fetch_from(now, 1);
    assert!(out.replies.is_empty(), "{:?}", out.replies);
    match out.requests.as_slice() {
        [(1, Message::FetchRequest(r))] => r.clone(),
        other => panic!("{follower} sent {other:?}"),
    }
}

/// The Fetch responses of `out`, by destination.
fn responses(out: &Output) -> Vec<(i32, FetchResponse)> {
    out.replies
        .iter()
        .filter_map(|(to, m)| match m {
            Message::FetchResponse(r) => Some((*to, r.clone())),
            _ => None,
        })
        .collect()
}

fn partition(r: &FetchResponse) -> &kafka_protocol::messages::fetch_response::PartitionData {
    &r.responses[0].partitions[0]
}

fn record_bytes(r: &FetchResponse) -> usize {
    partition(r).records.as_ref().map_or(0, |b| b.len())
}

fn leader(sim: &mut Sim) -> &mut Node {
    sim.node_mut(1)
}

#[test]
fn a_fetch_with_nothing_new_waits_for_the_next_append() {
    let (mut sim, t0) = cluster(0);
    let req = fetch_of(&mut sim, 2);
    assert_eq!(req.max_wait_ms, FETCH_MAX_WAIT_MS as i32, "Kafka's 500 ms");
    // Kafka's `KafkaRaftClient.MAX_FETCH_SIZE_BYTES` (= `MAX_BATCH_SIZE_BYTES`), written out: a test
    // against the constant itself cannot see the constant change.
    assert_eq!(req.max_bytes, 8 * 1024 * 1024, "Kafka's 8 MiB");
    let now: Millis = t0;
    let out = leader(&mut sim).handle(now, 2, Message::FetchRequest(req));
    assert!(responses(&out).is_empty(), "parked: {out:?}");
    assert_eq!(sim.node(1).parked_fetch_count(), 1);
    assert!(sim.node(1).next_deadline().unwrap() <= now + FETCH_MAX_WAIT_MS);
    // Before the deadline nothing is answered; an append answers at once, with the new batch.
    let out = leader(&mut sim).tick(now + 100);
    assert!(responses(&out).is_empty());
    let (_, out) = leader(&mut sim)
        .append(now + 200, vec![bytes::Bytes::from_static(b"x")])
        .unwrap();
    let answered = responses(&out);
    assert_eq!(answered.len(), 1, "{out:?}");
    assert_eq!(answered[0].0, 2);
    assert_eq!(partition(&answered[0].1).error_code, errors::NONE);
    assert!(record_bytes(&answered[0].1) > 0);
    assert_eq!(sim.node(1).parked_fetch_count(), 0);
}

#[test]
fn a_parked_fetch_is_answered_at_its_max_wait_with_its_original_answer() {
    let (mut sim, t0) = cluster(0);
    let req = fetch_of(&mut sim, 2);
    let now: Millis = t0;
    let out = leader(&mut sim).handle(now, 2, Message::FetchRequest(req.clone()));
    assert!(responses(&out).is_empty());
    // The same request with MaxWaitMs 0 from another voter: the answer the wait ends with.
    let mut at_once = fetch_of(&mut sim, 3);
    at_once.max_wait_ms = 0;
    let out = leader(&mut sim).handle(now, 3, Message::FetchRequest(at_once));
    let immediate = responses(&out);
    assert_eq!(immediate.len(), 1, "MaxWaitMs 0 is answered at once");
    let out = leader(&mut sim).tick(now + FETCH_MAX_WAIT_MS - 1);
    assert!(responses(&out).is_empty(), "not before MaxWaitMs");
    let out = leader(&mut sim).tick(now + FETCH_MAX_WAIT_MS);
    let answered = responses(&out);
    assert_eq!(answered.len(), 1);
    let p = partition(&answered[0].1);
    assert_eq!(
        (p.error_code, record_bytes(&answered[0].1)),
        (errors::NONE, 0)
    );
    assert_eq!(p.high_watermark, partition(&immediate[0].1).high_watermark);
    assert_eq!(sim.node(1).parked_fetch_count(), 0);
    assert_eq!(sim.node(1).next_deadline(), sim.node(1).timers().earliest());
}

#[test]
fn a_moving_high_watermark_ends_the_wait() {
    // Observer 4 fetched the new batch and waits at the LEO; voter 2's fetch commits it: 4 learns the
    // new HW at once instead of after MaxWaitMs (Kafka completes every parked fetch on a HW move).
    let (mut sim, t0) = cluster(1);
    let now: Millis = t0;
    let (_, out) = leader(&mut sim)
        .append(now, vec![bytes::Bytes::from_static(b"x")])
        .unwrap();
    assert!(responses(&out).is_empty());
    let hw_before = sim.node(1).high_watermark();
    // Observer 4 gets the batch, then fetches again at the LEO with the old HW: parked.
    let req = fetch_of(&mut sim, 4);
    let out = leader(&mut sim).handle(now + 1, 4, Message::FetchRequest(req));
    assert_eq!(responses(&out).len(), 1);
    let resp = responses(&out).remove(0).1;
    let out = sim
        .node_mut(4)
        .handle(now + 2, 1, Message::FetchResponse(resp));
    drop(out);
    let req = fetch_of(&mut sim, 4);
    let out = leader(&mut sim).handle(now + 3, 4, Message::FetchRequest(req));
    assert!(responses(&out).is_empty(), "parked at the LEO");
    assert_eq!(sim.node(1).high_watermark(), hw_before);
    // Voter 2 fetches the batch (answered at once), then at the new LEO: the HW moves.
    let req = fetch_of(&mut sim, 2);
    let out = leader(&mut sim).handle(now + 4, 2, Message::FetchRequest(req));
    let resp = responses(&out).remove(0).1;
    sim.node_mut(2)
        .handle(now + 5, 1, Message::FetchResponse(resp));
    let req = fetch_of(&mut sim, 2);
    let out = leader(&mut sim).handle(now + 6, 2, Message::FetchRequest(req));
    let new_hw = sim.node(1).high_watermark();
    assert!(new_hw > hw_before);
    let answered = responses(&out);
    let to_observer: Vec<_> = answered.iter().filter(|(to, _)| *to == 4).collect();
    assert_eq!(to_observer.len(), 1, "{answered:?}");
    assert_eq!(
        Some(partition(&to_observer[0].1).high_watermark),
        new_hw,
        "the observer learns the new HW"
    );
}

#[test]
fn a_follower_behind_the_leaders_high_watermark_is_answered_at_once() {
    // KIP-1166: the request's HW below the leader's ends the fetch at once, with no records.
    let (mut sim, t0) = cluster(0);
    let mut req = fetch_of(&mut sim, 2);
    let hw = sim.node(1).high_watermark().unwrap();
    assert!(hw > 0);
    req.topics[0].partitions[0].high_watermark = hw - 1;
    let out = leader(&mut sim).handle(t0, 2, Message::FetchRequest(req.clone()));
    assert_eq!(responses(&out).len(), 1);
    // Below Fetch v18 the field is absent (i64::MAX): the fetch waits.
    req.topics[0].partitions[0].high_watermark = i64::MAX;
    let out = leader(&mut sim).handle(t0 + 1, 2, Message::FetchRequest(req));
    assert!(responses(&out).is_empty());
}

#[test]
fn a_leader_that_resigns_answers_its_parked_fetches_not_leader() {
    let (mut sim, t0) = cluster(0);
    let now: Millis = t0;
    for f in [2, 3] {
        let req = fetch_of(&mut sim, f);
        let out = leader(&mut sim).handle(now, f, Message::FetchRequest(req));
        assert!(responses(&out).is_empty());
    }
    assert_eq!(sim.node(1).parked_fetch_count(), 2);
    let out = leader(&mut sim).fire(now + 1, Timer::CheckQuorum);
    assert_eq!(sim.node(1).role(), Role::Resigned);
    let answered = responses(&out);
    assert_eq!(answered.len(), 2, "{out:?}");
    for (_, r) in &answered {
        assert_eq!(partition(r).error_code, errors::NOT_LEADER_OR_FOLLOWER);
    }
    assert_eq!(sim.node(1).parked_fetch_count(), 0);
}

#[test]
fn a_newer_fetch_answers_the_same_requesters_parked_one_first() {
    let (mut sim, t0) = cluster(0);
    let req = fetch_of(&mut sim, 2);
    let now: Millis = t0;
    let out = leader(&mut sim).handle(now, 2, Message::FetchRequest(req.clone()));
    assert!(responses(&out).is_empty());
    let mut second = req;
    second.max_wait_ms = 0;
    let out = leader(&mut sim).handle(now + 1, 2, Message::FetchRequest(second));
    let answered = responses(&out);
    assert_eq!(answered.len(), 2, "the parked one, then the new one");
    assert_eq!(sim.node(1).parked_fetch_count(), 0);
}

#[test]
fn max_bytes_limits_a_response_to_whole_batches_but_at_least_one() {
    let (mut sim, t0) = cluster(0);
    let from = sim.node(1).log().end_offset();
    for v in [&b"first batch"[..], b"second batch"] {
        leader(&mut sim)
            .append(t0, vec![bytes::Bytes::copy_from_slice(v)])
            .unwrap();
    }
    let mut req = fetch_of(&mut sim, 2);
    assert_eq!(req.topics[0].partitions[0].fetch_offset, from);
    req.max_bytes = 1;
    let out = leader(&mut sim).handle(t0 + 1, 2, Message::FetchRequest(req.clone()));
    let one = responses(&out).remove(0).1;
    let batches = kraft::records::decode_batches(partition(&one).records.clone().unwrap()).unwrap();
    assert_eq!(batches.len(), 1, "MaxBytes 1: still one whole batch");
    req.max_bytes = kraft::node::MAX_FETCH_BYTES as i32;
    let out = leader(&mut sim).handle(t0 + 2, 2, Message::FetchRequest(req.clone()));
    let all = responses(&out).remove(0).1;
    let batches = kraft::records::decode_batches(partition(&all).records.clone().unwrap()).unwrap();
    assert_eq!(batches.len(), 2);
    req.max_bytes = -1;
    let out = leader(&mut sim).handle(t0 + 3, 2, Message::FetchRequest(req));
    let neg = responses(&out).remove(0).1;
    assert_eq!(
        record_bytes(&neg),
        record_bytes(&one),
        "negative MaxBytes: one batch"
    );
}

#[test]
fn a_negative_max_wait_is_an_invalid_request() {
    let (mut sim, t0) = cluster(0);
    let mut req = fetch_of(&mut sim, 2);
    req.max_wait_ms = -1;
    let out = leader(&mut sim).handle(t0, 2, Message::FetchRequest(req));
    let answered = responses(&out);
    assert_eq!(answered.len(), 1);
    assert_eq!(
        partition(&answered[0].1).error_code,
        errors::INVALID_REQUEST
    );
}

#[test]
fn parked_fetches_are_bounded() {
    let (mut sim, t0) = cluster(0);
    let base = fetch_of(&mut sim, 2);
    let now: Millis = t0;
    let max = kraft::node::MAX_PARKED_FETCHES;
    for i in 0..=max {
        let id = 100 + i as i32;
        let mut req = base.clone();
        req.replica_state.replica_id = kafka_protocol::messages::BrokerId(id);
        req.topics[0].partitions[0].replica_directory_id = sim::directory_id(id);
        let out = leader(&mut sim).handle(now, id, Message::FetchRequest(req));
        assert_eq!(responses(&out).len(), usize::from(i == max), "fetch {i}");
    }
    assert_eq!(sim.node(1).parked_fetch_count(), max);
    let out = leader(&mut sim).tick(now + FETCH_MAX_WAIT_MS);
    assert_eq!(responses(&out).len(), max);
}

#[test]
fn a_follower_fetches_again_at_once_after_a_waited_answer() {
    // With a waiting leader the follower does not pace itself: the next fetch leaves with the answer.
    let (mut sim, t0) = cluster(0);
    let req = fetch_of(&mut sim, 2);
    let now: Millis = t0;
    leader(&mut sim).handle(now, 2, Message::FetchRequest(req));
    let out = leader(&mut sim).tick(now + FETCH_MAX_WAIT_MS);
    let resp = responses(&out).remove(0).1;
    let t = sim.clock(2).max(now + FETCH_MAX_WAIT_MS) + 1;
    sim.node_mut(2).handle(t, 1, Message::FetchResponse(resp));
    assert_eq!(sim.node(2).timers().fetch, Some(t));
}
