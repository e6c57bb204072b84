//! `kraft describe --watch --metrics-listener`: the quorum as the watch's observer sees it, exported with
//! the node's names ([`crate::metrics`]), so one dashboard reads `kraft` nodes and any Kafka 4.x quorum.
//! The log gives leader, epoch, HW, the latest voter set, the committed voter set (computed as `describe`
//! computes it) and the latest VotersRecord; the leader's DescribeQuorum, asked every
//! [`DESCRIBE_PERIOD`] on a thread of its own, gives the observer count. Figures of a replica's own state
//! (`current-state`, `current-vote`, `log-end-*`) belong to no replica here and are not exported.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::admin::find_leader;
use super::observe::Observed;
use super::{DescribeArgs, Failure, EXIT_USAGE};
use crate::metrics::{http, Exporter, QuorumSample};

/// How often the leader is asked DescribeQuorum for its observers.
pub const DESCRIBE_PERIOD: Duration = Duration::from_secs(2);

pub struct WatchMetrics {
    exporter: Exporter,
    /// The leader's observer count at the last DescribeQuorum; `None` if it failed.
    observers: Arc<Mutex<Option<usize>>>,
}

impl WatchMetrics {
    /// Binds the listener (a bad or taken address is a usage error) and starts asking for observers.
    pub fn start(addr: &str, args: &DescribeArgs) -> Result<WatchMetrics, Failure> {
        let exporter = Exporter::new();
        http::spawn(addr, exporter.clone()).map_err(|e| Failure::new(EXIT_USAGE, e.to_string()))?;
        let observers = Arc::new(Mutex::new(None));
        let shared = observers.clone();
        let (connect, version) = (args.connect.clone(), args.api_version);
        std::thread::Builder::new()
            .name("kraft-watch-describe".into())
            .spawn(move || loop {
                let n = find_leader(&connect, version, Duration::from_secs(1))
                    .ok()
                    .map(|l| l.description.partition.observers.len());
                *shared.lock().unwrap_or_else(|e| e.into_inner()) = n;
                std::thread::sleep(DESCRIBE_PERIOD);
            })
            .map_err(|e| Failure::new(EXIT_USAGE, format!("cannot start a thread: {e}")))?;
        Ok(WatchMetrics {
            exporter,
            observers,
        })
    }

    /// Takes what the observer knows now (`last_voters_record`: its latest VotersRecord's offset).
    pub fn update(&self, o: &Observed, last_voters_record: Option<i64>) {
        let observers = *self.observers.lock().unwrap_or_else(|e| e.into_inner());
        self.exporter
            .update(sample(o, last_voters_record, observers), Instant::now());
    }
}

/// The exported figures of one observation.
fn sample(o: &Observed, last_voters_record: Option<i64>, observers: Option<usize>) -> QuorumSample {
    QuorumSample {
        leader_id: o.leader_id.unwrap_or(-1),
        epoch: o.epoch,
        high_watermark: o.high_watermark.unwrap_or(-1),
        voters: Some(o.current.len()),
        observers,
        // Kafka's figure is the leader's pending Add/Remove; seen from outside: the sets differ.
        uncommitted_voter_change: o.committed.as_ref().map(|c| *c != o.current),
        committed_voters: o.committed.as_ref().map(|c| c.ids().collect()),
        last_voters_record,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::voter_set::tests::node;
    use crate::voter_set::VoterSet;

    fn set(ids: &[i32]) -> VoterSet {
        VoterSet::new(ids.iter().map(|&i| node(i))).unwrap()
    }

    #[test]
    fn an_observed_add_is_an_uncommitted_change() {
        let o = Observed {
            leader_id: Some(1),
            epoch: 3,
            high_watermark: Some(15),
            log_end_offset: 16,
            current: set(&[1, 2, 3, 5]),
            committed: Some(set(&[1, 2, 3])),
        };
        let s = sample(&o, Some(15), Some(2));
        assert_eq!((s.leader_id, s.epoch, s.high_watermark), (1, 3, 15));
        assert_eq!((s.voters, s.observers), (Some(4), Some(2)));
        assert_eq!(s.uncommitted_voter_change, Some(true));
        assert_eq!(s.committed_voters, Some(vec![1, 2, 3]));
        assert_eq!(s.last_voters_record_committed(), Some(false));
        assert_eq!(s.state, None);
        let unknown = Observed {
            leader_id: None,
            high_watermark: None,
            committed: None,
            ..o
        };
        let s = sample(&unknown, Some(15), None);
        assert_eq!((s.leader_id, s.high_watermark), (-1, -1));
        assert_eq!(
            (s.committed_voters, s.uncommitted_voter_change),
            (None, None)
        );
    }
}
