//! `kraft describe --watch`: one line per change of (leader, HW, CurrentVoters, CommittedVoters), as an
//! in-memory observer of the metadata log sees them ([`super::observe`]): a reconfiguration appears when
//! its VotersRecord is appended, stays uncommitted while CurrentVoters ≠ CommittedVoters, and either
//! commits or disappears from CurrentVoters when a new leader truncates it away.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::admin::{client_security, find_leader};
use super::committed::log_sources;
use super::observe::{ObserveError, Observed, Observer};
use super::{DescribeArgs, Failure, EXIT_KAFKA_ERROR, EXIT_PROTOCOL};
use crate::storage::format_directory_id;
use crate::voter_set::{ReplicaKey, VoterSet};

/// What a printed line is about; a new line is printed when it changes.
type Key = (
    Option<i32>,
    i32,
    Option<i64>,
    Vec<ReplicaKey>,
    Option<Vec<ReplicaKey>>,
);

fn key(o: &Observed) -> Key {
    (
        o.leader_id,
        o.epoch,
        o.high_watermark,
        o.current.keys().collect(),
        o.committed.as_ref().map(|c| c.keys().collect()),
    )
}

/// Runs until the process is stopped (or the observer meets a log it cannot read).
pub fn watch(args: &DescribeArgs) -> Result<(), Failure> {
    let timeout = Duration::from_millis(args.connect.timeout_ms);
    let deadline = Instant::now() + timeout;
    let leader = loop {
        match find_leader(&args.connect, args.api_version, timeout) {
            Ok(leader) => break leader,
            Err(f) if f.code == EXIT_KAFKA_ERROR && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200))
            }
            Err(f) => return Err(f),
        }
    };
    let security = client_security(args.connect.command_config.as_deref())?;
    let bootstrap = log_sources(&leader, &args.connect, &security, timeout)
        .map_err(|why| Failure::new(super::EXIT_UNREACHABLE, why))?;
    let cluster_id = leader.description.cluster_id.clone();
    drop(leader);
    let mut observer = Observer::new(&cluster_id, &bootstrap, security, timeout)
        .map_err(|e| Failure::new(EXIT_PROTOCOL, e.to_string()))?;
    let mut last: Option<Key> = None;
    let metrics = match &args.metrics_listener {
        Some(addr) => Some(super::watch_metrics::WatchMetrics::start(addr, args)?),
        None => None,
    };
    loop {
        if let Err(e) = observer.step() {
            return Err(Failure::new(
                match e {
                    ObserveError::Client(_) => super::EXIT_UNREACHABLE,
                    ObserveError::Denied { .. } => super::EXIT_AUTHORIZATION,
                    _ => EXIT_PROTOCOL,
                },
                e.to_string(),
            ));
        }
        let o = observer.observed();
        let k = key(&o);
        // Lines start once the observer has the leader's log (no replay of history while catching up);
        // after that a lost leader is printed too.
        let live = observer.caught_up() || (last.is_some() && o.leader_id.is_none());
        if let (Some(m), true) = (&metrics, live || last.is_some()) {
            m.update(&o, observer.last_voters_record());
        }
        if live && last.as_ref() != Some(&k) {
            if args.json {
                out!("{}", watch_json(&o, now_ms()));
            } else {
                out!("{}", watch_line(&o, now_ms()));
            }
            last = Some(k);
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// `HH:MM:SS.mmm` (UTC) of a wall-clock time in ms since the epoch.
fn clock(ms: i64) -> String {
    let day_ms = ms.rem_euclid(86_400_000);
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        day_ms / 3_600_000,
        day_ms / 60_000 % 60,
        day_ms / 1000 % 60,
        day_ms % 1000
    )
}

fn ids(set: &VoterSet) -> String {
    let ids: Vec<String> = set.ids().map(|i| i.to_string()).collect();
    format!("[{}]", ids.join(", "))
}

fn named(k: &ReplicaKey) -> String {
    format!(
        "{} (directory {})",
        k.id,
        format_directory_id(k.directory_or_nil())
    )
}

/// Voters being added (current, not committed) and removed (committed, not current).
fn in_flight(o: &Observed) -> Vec<String> {
    let Some(committed) = &o.committed else {
        return Vec::new();
    };
    let adding = o.current.keys().filter(|k| !committed.is_voter(k));
    let removing = committed.keys().filter(|k| !o.current.is_voter(k));
    adding
        .map(|k| format!("adding {}", named(&k)))
        .chain(removing.map(|k| format!("removing {}", named(&k))))
        .collect()
}

/// One text line of the watch.
pub fn watch_line(o: &Observed, now_ms: i64) -> String {
    let committed = o.committed.as_ref().map_or("[]".to_string(), ids);
    let mut line = format!(
        "{} LeaderId: {} LeaderEpoch: {} HighWatermark: {} CurrentVoters: {} CommittedVoters: {}",
        clock(now_ms),
        o.leader_id.unwrap_or(-1),
        o.epoch,
        o.high_watermark.unwrap_or(-1),
        ids(&o.current),
        committed
    );
    let changes = in_flight(o);
    if !changes.is_empty() {
        line.push_str(&format!(" Reconfiguration: {}", changes.join(", ")));
    }
    line
}

/// One JSON line of `--watch --json`.
pub fn watch_json(o: &Observed, now_ms: i64) -> Value {
    let keys = |s: &VoterSet| -> Vec<Value> {
        s.keys()
            .map(|k| json!({"id": k.id, "directoryId": k.directory_id.map(format_directory_id)}))
            .collect()
    };
    json!({
        "timeMs": now_ms,
        "leaderId": o.leader_id.unwrap_or(-1),
        "leaderEpoch": o.epoch,
        "highWatermark": o.high_watermark.unwrap_or(-1),
        "logEndOffset": o.log_end_offset,
        "currentVoters": keys(&o.current),
        "committedVoters": o.committed.as_ref().map_or_else(Vec::new, keys),
        "committedVotersSource": "computed",
        "reconfiguration": in_flight(o),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::voter_set::tests::node;

    fn set(ids: &[i32]) -> VoterSet {
        VoterSet::new(ids.iter().map(|&i| node(i))).unwrap()
    }

    #[test]
    fn line_names_the_voter_in_flight() {
        let o = Observed {
            leader_id: Some(1),
            epoch: 3,
            high_watermark: Some(42),
            log_end_offset: 43,
            current: set(&[1, 2, 3, 5]),
            committed: Some(set(&[1, 2, 3])),
        };
        let line = watch_line(&o, 3_600_000 + 61_005);
        assert!(line.starts_with("01:01:01.005 LeaderId: 1 LeaderEpoch: 3 HighWatermark: 42 CurrentVoters: [1, 2, 3, 5] CommittedVoters: [1, 2, 3] Reconfiguration: adding 5"), "{line}");
        let v = watch_json(&o, 7);
        assert_eq!(v["committedVoters"].as_array().unwrap().len(), 3);
        let unknown = Observed {
            high_watermark: None,
            committed: None,
            ..o
        };
        assert!(watch_line(&unknown, 0)
            .contains("HighWatermark: -1 CurrentVoters: [1, 2, 3, 5] CommittedVoters: []"));
        assert!(!watch_line(&unknown, 0).contains("Reconfiguration"));
    }
}
