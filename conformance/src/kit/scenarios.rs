//! The scenarios the kit drives: model paths whose timing the kit can force.
//!
//! Node under test = model server 0; the kit plays voters 1 and 2 and the joiner 3 (an observer).

use model::types::{Action, ChangeOp, Envelope, Id, Msg, Role};

use super::driver::{Divergence, Kit};

type R<T> = Result<T, Box<Divergence>>;

/// Scenario names, in the order `all` runs them.
pub const ALL: [&str; 8] = [
    "first-election",
    "add-voter",
    "follow",
    "install-snapshot",
    "leader-snapshot",
    "leader-log-start",
    "disk-loss",
    "auto-join",
];

/// The scenarios `all` runs: every one but `leader-log-start`, which waits for the node's 60 s
/// retention clock, and `disk-loss` and `auto-join`, runs of their own with other model bounds (run
/// them by name).
pub fn in_all(scenario: &str) -> bool {
    !matches!(scenario, "leader-log-start" | "disk-loss" | "auto-join")
}

/// The fetch timeout of the `auto-join` node: also its update-voter-set period (Kafka's
/// `FollowerState`), the wait before each of its auto-join requests.
pub const AUTO_JOIN_FETCH_MS: u64 = 1000;

/// Timers the node under test is started with for a scenario: `(election, fetch)` timeouts in ms.
/// A timer the scenario waits for is short; one it must not see is far beyond the scenario's length.
pub fn timers(scenario: &str) -> (u64, u64) {
    match scenario {
        "follow" | "install-snapshot" => (60_000, 60_000),
        "auto-join" => (60_000, AUTO_JOIN_FETCH_MS),
        _ => (300, 60_000),
    }
}

/// Kafka properties the node under test is started with for a run that begins with `scenario` (as
/// `kraft node` flags, or for a `--node-script` in `KIT_NODE_PROPS`): `leader-snapshot` needs a node that
/// snapshots its own log as soon as a committed batch allows (`metadata.log.max.record.bytes.between.snapshots`
/// at its minimum, 1); `leader-log-start` also needs it to move its log start to that snapshot at its
/// next retention check (`metadata.max.retention.bytes` 1: the log and snapshots always exceed it).
/// Every other run keeps the defaults, under which the node takes no snapshot.
pub fn node_properties(scenario: &str) -> &'static [(&'static str, &'static str)] {
    match scenario {
        "leader-snapshot" => &[("metadata.log.max.record.bytes.between.snapshots", "1")],
        "leader-log-start" => &[
            ("metadata.log.max.record.bytes.between.snapshots", "1"),
            ("metadata.max.retention.bytes", "1"),
        ],
        _ => &[],
    }
}

/// How long `leader-log-start` waits at least for the node's log start to move: Kafka checks
/// retention every 60 s (`KafkaRaftLog.maybeClean`, a fixed interval; `kraft` too), the first time
/// up to 60 s after its start.
pub const LOG_START_WAIT: std::time::Duration = std::time::Duration::from_secs(90);

/// The Kafka properties of the `auto-join` node beside [`node_properties`]: auto-join on, and played
/// replica 1 (the leader to be) as its one bootstrap server (with no voter set it asks no one else).
pub fn auto_join_properties(eps: &super::encode::Endpoints) -> Vec<(String, String)> {
    vec![
        (
            "controller.quorum.bootstrap.servers".into(),
            format!("127.0.0.1:{}", eps.ports[1]),
        ),
        ("controller.quorum.auto.join.enable".into(), "true".into()),
    ]
}

/// The first in-flight message from a played replica, if any.
fn kit_message(k: &Kit) -> Option<Envelope> {
    k.state.network.iter().find(|e| e.src != k.nut).copied()
}

/// Delivers every message the played replicas have in flight (to each other in the model, to the node
/// over the wire), until none is left.
pub fn settle(k: &mut Kit) -> R<()> {
    for _ in 0..64 {
        let Some(env) = kit_message(k) else {
            return Ok(());
        };
        if env.dst == k.nut {
            k.deliver_to_node(env)?;
        } else {
            k.kit(Action::Deliver(env))?;
        }
    }
    Err(Box::new(Divergence::Kit(
        "settle: more than 64 messages".into(),
    )))
}

/// Played replica `r` fetches from the node (request over the wire, response checked and applied).
pub fn fetch_from_node(k: &mut Kit, r: Id) -> R<()> {
    k.kit(Action::Fetch {
        replica: r,
        leader: k.nut,
    })?;
    let env = k
        .state
        .network
        .iter()
        .find(|e| e.src == r && e.dst == k.nut && matches!(e.msg, Msg::FetchRequest(_)))
        .copied()
        .ok_or_else(|| Box::new(Divergence::Kit(format!("no fetch from {r} in flight"))))?;
    k.deliver_to_node(env)
}

/// DescribeQuorum at every version in `versions`.
pub fn describe_all(k: &mut Kit, versions: std::ops::RangeInclusive<i16>) -> R<()> {
    for v in versions {
        k.describe(v)?;
    }
    Ok(())
}

/// The node's first election: it times out, asks the kit's replicas for pre-votes and votes, wins
/// epoch 1, announces itself; then the kit's voters fetch until its start-of-epoch records commit.
pub fn first_election(k: &mut Kit, dq: std::ops::RangeInclusive<i16>) -> R<()> {
    let me = k.nut as usize;
    k.until(
        "the node's election timeout, its (pre-)votes and BeginQuorumEpoch (node leads)",
        |k| k.state.servers[me].role == Role::Leader && k.node_quiet(),
    )?;
    describe_all(k, dq.clone())?;
    for _round in 0..2 {
        for r in [1, 2] {
            fetch_from_node(k, r)?;
        }
    }
    if k.state.servers[me].hw.is_none() {
        return Err(Box::new(Divergence::Kit(
            "the model's leader has no HW after two rounds".into(),
        )));
    }
    describe_all(k, dq)
}

/// After [`first_election`]: observer 3 catches up, AddRaftVoter(3) is sent, the voters' fetches
/// commit it; the node's answer and DescribeQuorum (CommittedVoters from v3) are checked.
pub fn add_voter(k: &mut Kit, dq: std::ops::RangeInclusive<i16>) -> R<()> {
    for _ in 0..3 {
        fetch_from_node(k, 3)?;
    }
    describe_all(k, dq.clone())?;
    k.change(ChangeOp::Add(3))?;
    describe_all(k, dq.clone())?;
    for _round in 0..3 {
        for r in [1, 2, 3] {
            fetch_from_node(k, r)?;
        }
    }
    let me = k.nut as usize;
    let committed = model::spec::committed_voters(
        k.state.bootstrap,
        &k.state.servers[me].log,
        k.state.servers[me].hw,
    );
    if committed != Some(model::types::VoterSet::of(0b1111)) {
        return Err(Box::new(Divergence::Kit(format!(
            "the model did not commit the addition ({committed:?})"
        ))));
    }
    describe_all(k, dq)
}

/// After [`first_election`]: voter 1 loses its disk (the kit's replica 1 starts again empty under its
/// next directory id) and fetches from the node as an observer; RemoveRaftVoter of its stale key is
/// sent and committed by voter 2's fetches, then AddRaftVoter of its new key, committed with the new
/// key's fetches. The node's Fetch answers (HW, records, epoch), replies and DescribeQuorum (from v2
/// each row's directory id) are checked against the model throughout: the new key's fetches are not
/// voter 1's.
pub fn disk_loss(k: &mut Kit, dq: std::ops::RangeInclusive<i16>) -> R<()> {
    k.kit(Action::DiskLoss(1))?;
    // Its epoch, then its records from offset 0: voter 1's row keeps the old key's offset.
    for _ in 0..2 {
        fetch_from_node(k, 1)?;
    }
    describe_all(k, dq.clone())?;
    // A fetch at the node's log end.
    fetch_from_node(k, 1)?;
    describe_all(k, dq.clone())?;
    k.change(ChangeOp::Remove(1))?;
    for _round in 0..2 {
        for r in [2, 1] {
            fetch_from_node(k, r)?;
        }
    }
    describe_all(k, dq.clone())?;
    k.change(ChangeOp::Add(1))?;
    for _round in 0..3 {
        for r in [2, 1] {
            fetch_from_node(k, r)?;
        }
    }
    let me = k.nut as usize;
    let committed = model::spec::committed_voters(
        k.state.bootstrap,
        &k.state.servers[me].log,
        k.state.servers[me].hw,
    );
    let want = model::types::VoterSet::of(0b101).with(1, 1);
    if committed != Some(want) {
        return Err(Box::new(Divergence::Kit(format!(
            "the model did not commit voter 1 under its new key ({committed:?})"
        ))));
    }
    describe_all(k, dq)
}

/// The node follows a kit-played leader: replica 1 stands (pre-vote, vote), is elected with the
/// node's vote, announces itself; the node fetches the leader's records and HW.
pub fn follow(k: &mut Kit, dq: std::ops::RangeInclusive<i16>) -> R<()> {
    k.kit(Action::ElectionTimeout(1))?;
    settle(k)?;
    settle(k)?;
    if k.state.servers[1].role != Role::Leader {
        return Err(Box::new(Divergence::Kit(format!(
            "replica 1 did not become leader in the model ({:?})",
            k.state.servers[1].role
        ))));
    }
    let me = k.nut as usize;
    k.until("the node fetches the leader's records and HW", |k| {
        let s = &k.state.servers[me];
        s.role == Role::Follower && s.hw.is_some() && s.hw == k.state.servers[1].hw
    })?;
    // One more fetch shows the node applied what it was sent (its offset and epoch are checked).
    let seen = k.node_steps;
    k.until("the node's next fetch", |k| k.node_steps > seen)?;
    describe_all(k, dq)
}

/// After [`follow`]: the kit's leader answers the node's next Fetch with a `SnapshotId` 3 offsets past
/// the node's log end and serves it with FetchSnapshot in chunks of at most
/// [`KIT_CHUNK_BYTES`](super::driver::snapshot::KIT_CHUNK_BYTES); the node must ask for each chunk at
/// the position it has written, and fetch on from the snapshot's end offset and epoch (see
/// `Kit::install_snapshot_from_kit`). The model's lockstep ends here.
pub fn install_snapshot(k: &mut Kit) -> R<()> {
    let install = k.install_snapshot_from_kit(1, 3)?;
    if install.chunks < 2 {
        return Err(Box::new(Divergence::Kit(format!(
            "the snapshot went in {} chunk(s), expected at least 2: {install:?}",
            install.chunks
        ))));
    }
    Ok(())
}

/// After [`first_election`] on a node started with [`node_properties`]`("leader-snapshot")`: the
/// node leads and snapshots its own log once a batch commits. Observer 3 fetches at offset 0 outside the
/// model until the node answers with a `SnapshotId` (between tries the voters fetch in the model, which
/// commits what the node writes on its own), then installs it as [`serve_snapshot`] says.
pub fn leader_snapshot(k: &mut Kit) -> R<()> {
    let wait = k.wait;
    serve_snapshot(k, 0, wait, std::time::Duration::from_millis(50))
}

/// As [`leader_snapshot`] on a node started with [`node_properties`]`("leader-log-start")`, but
/// observer 3 fetches at offset 1, which a snapshot answers only once the node has moved its log
/// start past it (Kafka's `validateOffsetAndEpoch`: a fetch below the log start gets the latest
/// snapshot id); it waits up to [`LOG_START_WAIT`] (or the kit's wait, if longer), trying every
/// 500 ms.
pub fn leader_log_start(k: &mut Kit) -> R<()> {
    let wait = k.wait.max(LOG_START_WAIT);
    serve_snapshot(k, 1, wait, std::time::Duration::from_millis(500))
}

/// Observer 3 fetches at `offset` outside the model every `every` until the node answers with a
/// `SnapshotId` (at most `wait`; between tries voters 1 and 2 fetch in the model), downloads that
/// snapshot with FetchSnapshot in chunks of at most
/// [`KIT_SNAPSHOT_MAX_BYTES`](super::driver::leader_snapshot::KIT_SNAPSHOT_MAX_BYTES) (at least two),
/// checks its bytes, fetches at its end offset, and the voters fetch once more in the model (see
/// `driver/leader_snapshot.rs`).
fn serve_snapshot(
    k: &mut Kit,
    offset: u8,
    wait: std::time::Duration,
    every: std::time::Duration,
) -> R<()> {
    const OBSERVER: Id = 3;
    let start = std::time::Instant::now();
    let id = loop {
        if let Some(id) = k.probe_snapshot(OBSERVER, offset)? {
            break id;
        }
        if start.elapsed() >= wait {
            return Err(Box::new(Divergence::Timeout {
                waiting_for: format!("a SnapshotId answer to a fetch at offset {offset}"),
                waited_ms: start.elapsed().as_millis(),
            }));
        }
        for r in [1, 2] {
            fetch_from_node(k, r)?;
        }
        k.serve_for(every)?;
    };
    let (bytes, chunks) = k.download_snapshot(OBSERVER, id)?;
    let served = k.check_snapshot(id, bytes, chunks)?;
    if served.chunks < 2 {
        return Err(Box::new(Divergence::Kit(format!(
            "the snapshot went in {} chunk(s), expected at least 2: {served:?}",
            served.chunks
        ))));
    }
    k.fetch_after_snapshot(OBSERVER, id)?;
    for r in [1, 2] {
        fetch_from_node(k, r)?;
    }
    Ok(())
}

/// The node lost its disk and joins again by itself (KIP-1186; a run of its own). It is formatted with
/// no voter set under its next directory id (the model's `DiskLoss` of the node) while the played
/// voters still hold its old key, and started with auto-join on and replica 1 as its bootstrap server.
/// Replica 1 is elected by 1 and 2 and commits its epoch's start; the node fetches as an observer,
/// asks replica 1 to remove its stale key (its id, the old directory id; answered once voter 2's
/// fetches commit it), then to add its own key with its listener (AddRaftVoter v1, `AckWhenCommitted
/// = false`: answered at append), in that order; it fetches that record and on as a voter until its
/// HW covers it. Then, its key a voter, it sends no auto-join request for two update-voter-set
/// periods (any would be a divergence: the model enables none).
pub fn auto_join(k: &mut Kit, dq: std::ops::RangeInclusive<i16>) -> R<()> {
    let me = k.nut;
    let bootstrap = k.model.cfg.bootstrap();
    k.kit(Action::DiskLoss(me))?;
    k.kit(Action::ElectionTimeout(1))?;
    k.settle_played()?;
    if k.state.servers[1].role != Role::Leader {
        return Err(Box::new(Divergence::Kit(format!(
            "replica 1 did not become leader in the model ({:?})",
            k.state.servers[1].role
        ))));
    }
    for _ in 0..2 {
        k.played_fetch(2, 1)?;
    }
    k.until(
        "the node's RemoveRaftVoter of its stale key, answered once committed",
        |k| !k.join_answers.is_empty(),
    )?;
    k.until(
        "the node's AddRaftVoter of its own key, answered at append",
        |k| k.join_answers.len() >= 2,
    )?;
    if k.join_answers[..2] != [ChangeOp::Remove(me), ChangeOp::Add(me)] {
        return Err(Box::new(Divergence::Kit(format!(
            "auto-join answered in the order {:?}",
            k.join_answers
        ))));
    }
    let dir = k.state.servers[me as usize].dir;
    k.until(
        "the node fetches the record that names it and its HW covers it (a voter)",
        |k| {
            let (s, l) = (&k.state.servers[me as usize], &k.state.servers[1]);
            let committed = model::spec::committed_voters(bootstrap, &l.log, l.hw);
            model::spec::latest_voters(bootstrap, &s.log).is_voter(me, dir)
                && committed.is_some_and(|c| c.is_voter(me, dir))
                && s.hw == l.hw
        },
    )?;
    describe_all(k, dq)?;
    let (answered, steps) = (k.join_answers.len(), k.node_steps);
    k.serve_for(std::time::Duration::from_millis(2 * AUTO_JOIN_FETCH_MS))?;
    if k.join_answers.len() != answered || k.node_steps == steps {
        return Err(Box::new(Divergence::Kit(format!(
            "as a voter the node sent {} auto-join request(s) and took {} steps in two periods",
            k.join_answers.len() - answered,
            k.node_steps - steps
        ))));
    }
    Ok(())
}
