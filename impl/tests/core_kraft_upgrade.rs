//! The `kraft.version` upgrade from static voters (KIP-853, Kafka 4.4's `KRaftVersionUpgrade`): what the
//! scenario files (`testdata/static_upgrade*.txt`) do not print. The followers' UpdateRaftVoter reports
//! (once per leader at `kraft.version` 0), the VotersRecord the upgrade writes (directory ids, listeners,
//! supported ranges as reported), ApiVersions' finalized level, UpdateFeatures' per-feature results by
//! version, a leader that loses its leadership while an upgrade waits for its commit, and the level a
//! snapshot records on a replica formatted at another level than the log it follows.

use kafka_protocol::messages::ApiVersionsRequest;
use kraft::log::{RaftLog, SnapshotId};
use kraft::node::{
    errors, Bootstrap, ClientRequest, ClientResponse, Effect, EntryKind, Harness, Message,
    SnapshotConfig, Timer,
};
use kraft::voter_set::{SupportedVersions, VoterSet};
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

const JOINER: i32 = 4;

/// Static voters 1–3 (`kraft.version` 0) led by 1, caught up and reported, and node 4 formatted without
/// initial voters (`--no-initial-controllers`: `kraft.version` 1, no voter set) whose bootstrap server is
/// node 1. Snapshots are taken and retention checked only on command; retention keeps 0 bytes, so a check
/// moves the log start to the latest snapshot.
fn static_cluster_and_joiner(seed: u64) -> Sim {
    let set = sim::static_voter_set(&[1, 2, 3]);
    let snapshots = SnapshotConfig {
        enabled: true,
        max_record_bytes_between_snapshots: u64::MAX,
        max_snapshot_interval_ms: 0,
        max_retention_bytes: 0,
        max_retention_ms: -1,
        clean_interval_ms: 3_600_000,
        ..SnapshotConfig::default()
    };
    let mut configs: Vec<_> = (1..=3)
        .map(|id| sim::config(id, Bootstrap::Static(set.clone()), seed))
        .collect();
    configs.push(sim::config(JOINER, Bootstrap::NoInitialVoters, seed));
    configs[3].bootstrap_servers = vec![sim::listener(1)];
    for c in &mut configs {
        c.snapshots = snapshots.clone();
    }
    let mut sim = Sim::with_configs(configs).unwrap();
    sim.elect(1);
    run(&mut sim, 8_000);
    sim
}

/// Node `id` takes a snapshot now (Harness); returns what it asked the shell to write.
fn snapshot_now(sim: &mut Sim, id: i32) -> Option<(SnapshotId, i16, Option<VoterSet>)> {
    let now = sim.clock(id);
    let out = sim.node_mut(id).take_snapshot_now(now);
    let asked = out.effects.iter().find_map(|e| match e {
        Effect::TakeSnapshot {
            id,
            kraft_version,
            voters,
            ..
        } => Some((*id, *kraft_version, voters.clone())),
        _ => None,
    });
    sim.absorb(id, out);
    asked
}

/// Node `id` checks retention now; returns the log start.
fn clean_now(sim: &mut Sim, id: i32) -> i64 {
    let now = sim.clock(id);
    let out = sim.node_mut(id).clean_now(now);
    sim.absorb(id, out);
    sim.node(id).log().start_offset()
}

/// A snapshot records the `kraft.version` of the log at its last offset, whatever level the replica was
/// formatted with. Node 4 was formatted at level 1 (no initial voters) but follows a static quorum whose
/// log runs at 0: it installs the leader's level-0 snapshot, takes its own at `s`, and the log start moves
/// there while its log already holds the upgrade batch (KRaftVersion 1) at `s + 1`, right after a
/// one-record batch at `s`. Its next snapshot ends at `s + 1`, so it records the level at `s`: 0, the
/// level of the log, not the replica's formatted 1. Moving the log start must keep the level in force
/// at `s` (Kafka's `truncateOldEntries` keeps the entry at or below the start).
#[test]
fn a_snapshot_records_the_level_of_the_log_not_the_level_the_replica_was_formatted_with() {
    let mut sim = static_cluster_and_joiner(24);
    // The leader's log starts past 0: two snapshots at level 0 (no KRaftVersion record, no voters),
    // then retention.
    for batch in [b"a", b"b"] {
        sim.append(1, &[batch]).unwrap();
        sim.replicate(5);
        let (_, level, voters) = snapshot_now(&mut sim, 1).expect("a snapshot point");
        assert_eq!((level, voters), (0, None));
    }
    let leader_start = clean_now(&mut sim, 1);
    assert!(leader_start > 0);

    // Node 4 finds the leader through its bootstrap server, fetches at 0 and installs the snapshot.
    let now = sim.clock(JOINER) + 1;
    sim.nodes.get_mut(&1).unwrap().clock = sim.clock(1).max(now);
    let out = sim.node_mut(JOINER).fire(now, Timer::Fetch);
    let (to, req) = out
        .requests
        .iter()
        .find(|(_, m)| matches!(m, Message::FetchRequest(_)))
        .cloned()
        .expect("a Fetch to the bootstrap server");
    assert_eq!(to, -2);
    let answer = sim.node_mut(1).handle(now, JOINER, req);
    let (_, resp) = answer
        .replies
        .into_iter()
        .find(|(_, m)| matches!(m, Message::FetchResponse(_)))
        .expect("a Fetch answer");
    let out = sim.node_mut(JOINER).handle(now, to, resp);
    sim.absorb(JOINER, out);
    assert_eq!(sim.node(JOINER).leader_id(), Some(1));
    assert_eq!(sim.node(JOINER).kraft_version(), 1, "formatted at 1");
    sim.replicate(20);
    let joiner = sim.node(JOINER);
    assert_eq!(joiner.log().start_offset(), leader_start, "installed");
    assert_eq!(joiner.kraft_version(), 0, "the installed snapshot's level");

    // Its own snapshot at s, then a one-record batch at s.
    sim.append(1, &[b"c"]).unwrap();
    sim.replicate(5);
    let (at_s, level, _) = snapshot_now(&mut sim, JOINER).expect("a snapshot point");
    assert_eq!(level, 0);
    let s = at_s.end_offset;
    assert_eq!(sim.append(1, &[b"d"]).unwrap(), s);
    sim.replicate(5);
    assert_eq!(sim.node(JOINER).high_watermark(), Some(s + 1));

    // The upgrade batch at s + 1 reaches node 4 but is not committed (2 and 3 are down).
    sim.crash(2);
    sim.crash(3);
    assert!(
        sim.client(1, upgrade(2, 1)).is_empty(),
        "waits for its commit"
    );
    let log = sim.node(1).view().log;
    assert_eq!(log.last().map(|e| e.offset), Some(s + 2));
    assert!(matches!(
        log[log.len() - 2].kind,
        EntryKind::KRaftVersion(1)
    ));
    assert_eq!(log[log.len() - 2].offset, s + 1);
    sim.replicate(5);
    let joiner = sim.node(JOINER);
    assert_eq!(joiner.log().end_offset(), s + 3);
    assert_eq!(joiner.high_watermark(), Some(s + 1));
    assert_eq!(joiner.kraft_version(), 1, "the log's latest level");

    // Retention moves its log start to s; its next snapshot ends at s + 1 and records the level at s.
    assert_eq!(clean_now(&mut sim, JOINER), s);
    let (id, level, voters) = snapshot_now(&mut sim, JOINER).expect("a snapshot point");
    assert_eq!(id.end_offset, s + 1);
    assert_eq!(
        (level, voters),
        (0, None),
        "the level of the log at s, not the formatted level"
    );
    let file = &sim.nodes[&JOINER].snapshot_files[&id];
    let decoded = kraft::records::decode_snapshot(file.clone()).unwrap();
    assert_eq!(
        decoded.kraft_version, None,
        "no KRaftVersion record at level 0"
    );
}
