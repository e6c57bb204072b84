//! The leader's ApiVersions round trip to a voter being added (KIP-853, Kafka 4.4's `AddVoterHandler`):
//! the request goes to the new voter's default listener; an error answer or none in time is
//! REQUEST_TIMED_OUT, a `kraft.version` range without the finalized level INVALID_REQUEST, and the
//! VotersRecord records the answered range. While it waits, the add blocks other changes.

use kafka_protocol::messages::api_versions_response::SupportedFeatureKey;
use kafka_protocol::messages::ApiVersionsResponse;
use kafka_protocol::protocol::StrBytes;
use kraft::log::RaftLog;
use kraft::node::{
    errors, ChangeOutcome, ClientId, ClientResponse, InvalidChange, Message, Refusal, Timer,
};
use kraft::voter_set::SupportedVersions;
use kraft_sim::{self as sim, Envelope, Sim};

/// Leader 1 of {1, 2, 3}, observer 4 caught up; an add of 4 sent and held at its ApiVersions request.
fn held_add(seed: u64) -> (Sim, ClientId) {
    let mut sim = Sim::new(3, 1, seed).unwrap();
    sim.elect(1);
    sim.replicate(10);
    let client = sim.client_held(1, sim::add_voter_request(4));
    (sim, client)
}

/// Removes the leader's ApiVersions request from the network (checking there is exactly one, to 4).
fn take_request(sim: &mut Sim) {
    let held: Vec<usize> = (0..sim.network.len())
        .filter(|i| matches!(sim.network[*i].msg, Message::ApiVersionsRequest(_)))
        .collect();
    assert_eq!(held.len(), 1, "one ApiVersions request: {:?}", sim.network);
    let env = sim.network.remove(held[0]);
    assert_eq!((env.from, env.to), (1, 4));
}

/// Delivers `resp` to leader 1 as node `from`'s answer.
fn answer(sim: &mut Sim, from: i32, resp: ApiVersionsResponse) {
    sim.network.push(Envelope {
        from,
        to: 1,
        msg: Message::ApiVersionsResponse(resp),
    });
    sim.deliver(sim.network.len() - 1);
}

fn with_range(min: i16, max: i16) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_supported_features(vec![SupportedFeatureKey::default()
        .with_name(StrBytes::from_static_str("kraft.version"))
        .with_min_version(min)
        .with_max_version(max)])
}

fn codes(replies: Vec<ClientResponse>) -> Vec<Option<i16>> {
    replies.iter().map(sim::change_error_code).collect()
}

fn outcome(sim: &Sim) -> ChangeOutcome {
    sim.node(1).last_change_reply().expect("a reply").outcome
}

fn voter_ids(sim: &Sim) -> Vec<i32> {
    sim.node(1).latest_voters().ids().collect()
}

#[test]
fn the_leader_asks_the_new_voter_on_its_default_listener_before_adding_it() {
    let (mut sim, client) = held_add(1);
    let end = sim.node(1).log().end_offset();
    assert!(sim.replies_to(client).is_empty());
    assert_eq!(sim.node(1).log().end_offset(), end, "nothing appended yet");
    assert_eq!(sim.node(1).endpoint_of(4), Some(sim::listener(4)));
    let deadline = sim.clock(1) + 2000;
    assert_eq!(sim.node(1).timers().pending_change, Some(deadline));
    let delivered = sim.deliver_api_versions(0);
    let kinds: Vec<(i32, i32, bool)> = delivered
        .iter()
        .map(|e| {
            (
                e.from,
                e.to,
                matches!(e.msg, Message::ApiVersionsRequest(_)),
            )
        })
        .collect();
    assert_eq!(kinds, vec![(1, 4, true), (4, 1, false)]);
    assert_eq!(voter_ids(&sim), vec![1, 2, 3, 4]);
    // Node 4 answers its own range; the record keeps it, and the request's deadline runs on.
    let added = sim.node(1).latest_voters().voter(4).unwrap().clone();
    assert_eq!(added.supported, SupportedVersions::CURRENT);
    assert_eq!(
        sim.node(1).pending_change().map(|p| p.deadline),
        Some(deadline)
    );
    sim.replicate(10);
    assert_eq!(codes(sim.replies_to(client)), vec![Some(errors::NONE)]);
}

#[test]
fn an_error_answer_is_request_timed_out_and_ends_the_add() {
    let (mut sim, client) = held_add(2);
    let end = sim.node(1).log().end_offset();
    take_request(&mut sim);
    let error = ApiVersionsResponse::default().with_error_code(errors::BROKER_NOT_AVAILABLE);
    answer(&mut sim, 4, error);
    assert_eq!(
        codes(sim.replies_to(client)),
        vec![Some(errors::REQUEST_TIMED_OUT)]
    );
    assert_eq!(outcome(&sim), ChangeOutcome::ApiVersionsFailed);
    assert_eq!(sim.node(1).log().end_offset(), end);
    assert_eq!(sim.node(1).timers().pending_change, None);
    // Nothing is held any more: the next add goes ahead.
    assert!(sim.client(1, sim::add_voter_request(4)).is_empty());
    assert_eq!(voter_ids(&sim), vec![1, 2, 3, 4]);
}

#[test]
fn a_range_without_the_finalized_kraft_version_is_invalid_request() {
    let refused = |resp: ApiVersionsResponse| {
        let (mut sim, client) = held_add(3);
        let end = sim.node(1).log().end_offset();
        take_request(&mut sim);
        answer(&mut sim, 4, resp);
        assert_eq!(sim.node(1).log().end_offset(), end, "nothing appended");
        (codes(sim.replies_to(client)), outcome(&sim))
    };
    let invalid = (
        vec![Some(errors::INVALID_REQUEST)],
        ChangeOutcome::Refused(Refusal::Invalid(InvalidChange::KraftVersionNotSupported)),
    );
    // The finalized kraft.version is 1.
    for (min, max) in [(0, 0), (2, 3)] {
        assert_eq!(refused(with_range(min, max)), invalid, "range {min}-{max}");
    }
    assert_eq!(refused(ApiVersionsResponse::default()), invalid, "no range");
}

#[test]
fn the_answered_range_is_what_the_voters_record_holds() {
    let (mut sim, client) = held_add(4);
    take_request(&mut sim);
    answer(&mut sim, 4, with_range(1, 3));
    assert!(sim.replies_to(client).is_empty(), "waits for the commit");
    let added = sim.node(1).latest_voters().voter(4).unwrap().supported;
    assert_eq!(added, SupportedVersions { min: 1, max: 3 });
}

#[test]
fn no_answer_times_out_and_a_late_answer_is_ignored() {
    let (mut sim, client) = held_add(5);
    let end = sim.node(1).log().end_offset();
    take_request(&mut sim);
    sim.fire(1, Timer::PendingChange);
    assert_eq!(
        codes(sim.replies_to(client)),
        vec![Some(errors::REQUEST_TIMED_OUT)]
    );
    assert_eq!(outcome(&sim), ChangeOutcome::TimedOut);
    answer(&mut sim, 4, with_range(0, 1));
    assert_eq!(sim.replies_to(client).len(), 1, "one reply per request");
    assert_eq!(
        sim.node(1).log().end_offset(),
        end,
        "the late answer adds nothing"
    );
}

#[test]
fn a_held_add_blocks_other_changes_and_ignores_other_answers() {
    let (mut sim, client) = held_add(6);
    take_request(&mut sim);
    assert_eq!(
        codes(sim.client(1, sim::remove_voter_request(3))),
        vec![Some(errors::REQUEST_TIMED_OUT)]
    );
    assert_eq!(outcome(&sim), ChangeOutcome::Refused(Refusal::Pending));
    // An answer from another replica is not the new voter's.
    answer(&mut sim, 2, with_range(0, 1));
    assert!(sim.replies_to(client).is_empty());
    assert_eq!(voter_ids(&sim), vec![1, 2, 3]);
    answer(&mut sim, 4, with_range(0, 1));
    assert_eq!(voter_ids(&sim), vec![1, 2, 3, 4]);
}

#[test]
fn losing_leadership_while_held_is_not_leader_or_follower() {
    let (mut sim, client) = held_add(7);
    take_request(&mut sim);
    sim.fire(1, Timer::CheckQuorum);
    assert_eq!(
        codes(sim.replies_to(client)),
        vec![Some(errors::NOT_LEADER_OR_FOLLOWER)]
    );
    assert_eq!(sim.node(1).endpoint_of(4), None, "4 is no longer reachable");
    answer(&mut sim, 4, with_range(0, 1));
    assert_eq!(voter_ids(&sim), vec![1, 2, 3]);
}
