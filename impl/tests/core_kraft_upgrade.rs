//! The `kraft.version` upgrade from static voters (KIP-853, Kafka 4.4's `KRaftVersionUpgrade`): what the
//! scenario files (`testdata/static_upgrade*.txt`) do not print. The followers' UpdateRaftVoter reports
//! (once per leader at `kraft.version` 0), the VotersRecord the upgrade writes (directory ids, listeners,
//! supported ranges as reported), ApiVersions' finalized level, UpdateFeatures' per-feature results by
//! version, and a leader that loses its leadership while an upgrade waits for its commit.

use kafka_protocol::messages::ApiVersionsRequest;
use kraft::node::{errors, ClientRequest, ClientResponse, EntryKind, Message};
use kraft::voter_set::SupportedVersions;
use kraft_sim::{self as sim, Sim};

/// UpdateFeatures `kraft.version` = `level` at request `version`.
fn upgrade(version: i16, level: i16) -> ClientRequest {
    use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
    use kafka_protocol::protocol::StrBytes;
    ClientRequest::UpdateFeatures {
        version,
        request: kafka_protocol::messages::UpdateFeaturesRequest::default().with_feature_updates(
            vec![FeatureUpdateKey::default()
                .with_feature(StrBytes::from_static_str("kraft.version"))
                .with_max_version_level(level)
                .with_upgrade_type(1)],
        ),
    }
}

fn features(r: &[ClientResponse]) -> &kafka_protocol::messages::UpdateFeaturesResponse {
    match r {
        [ClientResponse::UpdateFeatures(f)] => f,
        other => panic!("one UpdateFeatures answer expected: {other:?}"),
    }
}

/// `ms` of a healthy network in 100 ms steps; returns the UpdateRaftVoter requests sent, as (from, to).
fn run(sim: &mut Sim, ms: u64) -> Vec<(i32, i32)> {
    let mut sent = Vec::new();
    for _ in 0..ms / 100 {
        sim.advance(100);
        for env in &sim.network {
            if matches!(env.msg, Message::UpdateRaftVoterRequest(_)) {
                sent.push((env.from, env.to));
            }
        }
        sim.deliver_all(10_000);
    }
    sent
}

fn finalized_kraft_version(sim: &mut Sim, id: i32) -> Option<i16> {
    let r = sim.client(
        id,
        ClientRequest::ApiVersions(ApiVersionsRequest::default()),
    );
    let [ClientResponse::ApiVersions(a)] = r.as_slice() else {
        panic!("ApiVersions answer expected: {r:?}");
    };
    a.finalized_features
        .iter()
        .find(|f| f.name.as_str() == "kraft.version")
        .map(|f| f.max_version_level)
}

#[test]
fn followers_report_once_per_leader_and_the_upgrade_writes_what_they_reported() {
    let mut sim = Sim::new_static(3, 21).unwrap();
    sim.elect(1);
    let sent = run(&mut sim, 20_000);
    assert_eq!(
        sent,
        vec![(2, 1), (3, 1)],
        "one report per follower and leader"
    );
    assert_eq!(finalized_kraft_version(&mut sim, 1), Some(0));

    let r = sim.client(1, upgrade(2, 1));
    assert!(r.is_empty(), "answered once committed: {r:?}");
    let before = sim.client_replies.len();
    run(&mut sim, 1_000);
    let r: Vec<_> = sim.client_replies[before..]
        .iter()
        .map(|(_, _, r)| r.clone())
        .collect();
    assert_eq!(features(&r).error_code, errors::NONE);
    assert!(
        features(&r).results.is_empty(),
        "v2 carries no per-feature results"
    );

    for id in 1..=3 {
        let log = sim.node(id).view().log;
        let kinds: Vec<_> = log.iter().map(|e| e.kind.clone()).collect();
        // One batch: KRaftVersion then Voters, right after the epoch's LeaderChange.
        assert!(matches!(kinds[1], EntryKind::KRaftVersion(1)), "{kinds:?}");
        let EntryKind::Voters(set) = &kinds[2] else {
            panic!("VotersRecord expected: {kinds:?}");
        };
        assert_eq!(log[1].epoch, log[2].epoch);
        for v in set.nodes() {
            assert_eq!(v.key, sim::key(v.key.id), "directory id as reported");
            assert_eq!(v.listeners, vec![sim::listener(v.key.id)]);
            assert_eq!(v.supported, SupportedVersions::CURRENT);
        }
        assert_eq!(finalized_kraft_version(&mut sim, id), Some(1));
    }
    // Dynamic from now on: no more reports while the entries match.
    assert!(run(&mut sim, 20_000).is_empty());
}

#[test]
fn older_versions_carry_one_result_per_feature() {
    for version in [0, 1] {
        let mut sim = Sim::new_static(3, 22).unwrap();
        sim.elect(1);
        sim.replicate(10);
        let r = sim.client(1, upgrade(version, 1));
        let f = features(&r);
        assert_eq!(f.error_code, errors::INVALID_UPDATE_VERSION);
        assert_eq!(f.results.len(), 1);
        assert_eq!(f.results[0].feature.as_str(), "kraft.version");
        assert_eq!(f.results[0].error_code, f.error_code);
        assert_eq!(f.results[0].error_message, f.error_message);
    }
}

#[test]
fn a_deposed_leader_answers_a_waiting_upgrade_not_controller() {
    let mut sim = Sim::new_static(3, 23).unwrap();
    sim.elect(1);
    run(&mut sim, 8_000);
    let before = sim.client_replies.len();
    assert!(sim.client(1, upgrade(2, 1)).is_empty());
    sim.network.clear();
    sim.elect(2);
    let r: Vec<_> = sim.client_replies[before..]
        .iter()
        .filter(|(from, _, _)| *from == 1)
        .map(|(_, _, r)| r.clone())
        .collect();
    assert_eq!(features(&r).error_code, errors::NOT_CONTROLLER);
}
