//! Prometheus metrics of the quorum, for operators: Kafka 4.4's `raft-metrics` (`KafkaRaftMetrics`) under
//! the names the Prometheus JMX exporter gives them with no rules, plus the committed voter set of KIP-1204.
//!
//! The shells fill a [`QuorumSample`] (plain data: `kraft node` from the core's view after each step,
//! `kraft describe --watch` from what its observer and DescribeQuorum see) and hand it to [`Exporter::update`];
//! the exporter keeps the clock facts the core has no business with (since when the last VotersRecord has
//! been uncommitted; Kafka's windowed latencies and rates, [`stats`]) and encodes the latest sample with `prometheus-client` at each scrape of
//! [`http`]'s `/metrics`. The core gains no clock and no I/O.
//!
//! Naming: Kafka registers these metrics in group `raft-metrics` with no tags, which JMX shows as attributes
//! of the MBean `kafka.server:type=raft-metrics`; prometheus/jmx_exporter's default rendering (no `rules`)
//! is `<domain>_<type value>_<attribute>` with every other character turned into `_`, so `current-leader`
//! becomes [`PREFIX`]`_current_leader`. The KIP-1204 figures have no Kafka counterpart; they are ours,
//! under the same prefix so one dashboard selector takes both.

pub mod http;
pub mod stats;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::node::{ChangeKind, Node, Role};

/// `kafka.server:type=raft-metrics` as the JMX exporter renders it by default.
pub const PREFIX: &str = "kafka_server_raft_metrics";

/// The quorum as one replica or one observer sees it at one moment. `None`: not known to this source,
/// and not exported (as Kafka registers `number-of-observers` and `uncommitted-voter-change` on the
/// leader only).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuorumSample {
    /// `current-leader`: −1 when unknown.
    pub leader_id: i32,
    /// `current-epoch`.
    pub epoch: i32,
    /// `high-watermark`: −1 when unknown.
    pub high_watermark: i64,
    /// `current-state`, Kafka 4.4's name for this replica's state ([`kafka_state`]).
    pub state: Option<&'static str>,
    /// `current-vote`: the local id when leader or candidate, else the id voted for, else −1.
    pub vote: Option<i32>,
    /// `current-vote-directory-id`: the directory id that goes with `vote` (the local one when leader or
    /// candidate), the zero UUID when there is none.
    pub vote_directory_id: Option<uuid::Uuid>,
    /// `number-unknown-voter-connections`: voters of the latest set, other than this node, with no endpoint
    /// this node could reach them at.
    pub unknown_voter_connections: Option<usize>,
    /// `log-end-offset`, `log-end-epoch`.
    pub log_end: Option<(i64, i32)>,
    /// `number-of-voters`: the latest voter set's size.
    pub voters: Option<usize>,
    /// `number-of-observers`.
    pub observers: Option<usize>,
    /// `uncommitted-voter-change`: an AddRaftVoter or RemoveRaftVoter waits for its commit.
    pub uncommitted_voter_change: Option<bool>,
    /// KIP-1204's committed voter set (ids, ascending); `None` while the HW is unknown.
    pub committed_voters: Option<Vec<i32>>,
    /// Offset of the latest VotersRecord (−1: the bootstrap checkpoint's set); `None`: static voters.
    pub last_voters_record: Option<i64>,
}

/// Kafka 4.4's `current-state` value (`KafkaRaftMetrics`): a follower that is not a voter is an
/// `observer`; Kafka's Resigned state has no name of its own and reads `unattached`.
pub fn kafka_state(role: Role, voted: bool, is_voter: bool) -> &'static str {
    match role {
        Role::Leader => "leader",
        Role::Prospective if voted => "prospective-voted",
        Role::Prospective => "prospective",
        Role::Candidate => "candidate",
        Role::Unattached if voted => "unattached-voted",
        Role::Follower if is_voter => "follower",
        Role::Follower => "observer",
        Role::Unattached | Role::Resigned => "unattached",
    }
}

/// Whether the record at `offset` lies below the HW, i.e. is committed (the rule of
/// [`committed_voter_set`](crate::history::committed_voter_set): the set at HW − 1).
fn below_high_watermark(offset: i64, high_watermark: i64) -> bool {
    high_watermark >= 0 && offset < high_watermark
}

impl QuorumSample {
    /// A replica's own view, read from the core after a step (`kraft node`).
    pub fn of_node(node: &Node) -> QuorumSample {
        let role = node.role();
        let vote_key = match role {
            Role::Leader | Role::Candidate => Some(node.local_key()),
            _ => node.election_state().voted,
        };
        let vote = vote_key.map(|k| k.id);
        let leader = node.leader_state();
        let log = node.log();
        QuorumSample {
            leader_id: node.leader_id().unwrap_or(-1),
            epoch: node.epoch(),
            high_watermark: node.high_watermark().unwrap_or(-1),
            state: Some(kafka_state(
                role,
                node.election_state().voted.is_some(),
                node.is_voter(),
            )),
            vote: Some(vote.unwrap_or(-1)),
            vote_directory_id: Some(
                vote_key
                    .and_then(|k| k.directory_id)
                    .unwrap_or(uuid::Uuid::nil()),
            ),
            unknown_voter_connections: Some(
                node.latest_voters()
                    .ids()
                    .filter(|&id| id != node.node_id() && node.endpoint_of(id).is_none())
                    .count(),
            ),
            log_end: Some((
                crate::log::RaftLog::end_offset(log),
                crate::log::RaftLog::last_epoch(log),
            )),
            voters: Some(node.latest_voters().len()),
            observers: leader.map(|l| l.observer_states().count()),
            uncommitted_voter_change: leader.map(|_| {
                node.pending_change()
                    .is_some_and(|p| matches!(p.kind, ChangeKind::Add | ChangeKind::Remove))
            }),
            committed_voters: node.committed_voters().map(|s| s.ids().collect()),
            last_voters_record: node.history().latest_entry().map(|(offset, _)| offset),
        }
    }

    /// Whether the latest VotersRecord is committed; `None` for static voters.
    pub fn last_voters_record_committed(&self) -> Option<bool> {
        self.last_voters_record
            .map(|o| below_high_watermark(o, self.high_watermark))
    }
}

#[derive(Debug, Default)]
struct State {
    sample: QuorumSample,
    /// The uncommitted latest VotersRecord's offset and when this process first saw it so.
    uncommitted_since: Option<(i64, Instant)>,
    /// Kafka's windowed statistics, from a replica's own samples.
    stats: stats::RaftStats,
}

/// The latest sample and the age of an uncommitted voter change; cloned handles share it. Registered in a
/// `prometheus-client` [`Registry`] as a collector.
#[derive(Clone, Debug, Default)]
pub struct Exporter {
    state: Arc<Mutex<State>>,
    /// The node task's idle time (`poll-idle-ratio-avg`); `None` where there is no node task.
    poll_idle: Option<stats::PollIdle>,
}

impl Exporter {
    pub fn new() -> Exporter {
        Exporter::default()
    }

    /// Also exports `poll-idle-ratio-avg` from what the node task records in `poll_idle`.
    pub fn with_poll_idle(mut self, poll_idle: stats::PollIdle) -> Exporter {
        self.poll_idle = Some(poll_idle);
        self
    }

    /// Takes a new sample, seen at `now`: the uncommitted-change clock starts when a VotersRecord is first
    /// seen above the HW and stops when the HW passes it (or a new leader truncates it away).
    pub fn update(&self, sample: QuorumSample, now: Instant) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.uncommitted_since = match sample.last_voters_record {
            Some(o) if sample.last_voters_record_committed() != Some(true) => {
                match state.uncommitted_since {
                    Some((seen, since)) if seen == o => Some((o, since)),
                    _ => Some((o, now)),
                }
            }
            _ => None,
        };
        if sample.state.is_some() {
            state.stats.observe(&sample, now);
        }
        state.sample = sample;
    }

    /// Seconds since the latest VotersRecord was first seen uncommitted, at `now`; 0 if it is committed.
    pub fn uncommitted_age(&self, now: Instant) -> f64 {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.uncommitted_since.map_or(0.0, |(_, since)| {
            now.saturating_duration_since(since).as_secs_f64()
        })
    }

    /// A registry holding this exporter and nothing else.
    pub fn registry(&self) -> Registry {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.clone()));
        registry
    }

    /// The OpenMetrics text of a scrape.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry());
        out
    }
}

/// Writes one gauge without labels.
fn gauge<N>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    value: N,
) -> Result<(), std::fmt::Error>
where
    ConstGauge<N>: EncodeMetric,
{
    let metric = ConstGauge::new(value);
    metric.encode(encoder.encode_descriptor(name, help, unit, metric.metric_type())?)
}

/// Writes one gauge family: each label set with its value.
fn family(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    label: &'static str,
    series: impl IntoIterator<Item = (String, i64)>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (value, v) in series {
        let labels = [(label, value)];
        ConstGauge::new(v).encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

impl Collector for Exporter {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now = Instant::now();
        let age = self.uncommitted_age(now);
        let (s, stats) = {
            let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            (state.sample.clone(), state.stats.clone())
        };
        let e = &mut encoder;
        let name = |n: &str| format!("{PREFIX}_{n}");
        gauge(
            e,
            &name("current_leader"),
            "The current quorum leader's id; -1 indicates unknown (Kafka: current-leader)",
            None,
            s.leader_id as i64,
        )?;
        gauge(
            e,
            &name("current_epoch"),
            "The current quorum epoch (Kafka: current-epoch)",
            None,
            s.epoch as i64,
        )?;
        gauge(
            e,
            &name("high_watermark"),
            "The high watermark; -1 if it is unknown (Kafka: high-watermark)",
            None,
            s.high_watermark,
        )?;
        if let Some(state) = s.state {
            family(
                e,
                &name("current_state"),
                "The current state of this member, as a label (Kafka: current-state)",
                "state",
                [(state.to_string(), 1)],
            )?;
        }
        if let Some(vote) = s.vote {
            gauge(
                e,
                &name("current_vote"),
                "The current voted id; -1 indicates not voted for anyone (Kafka: current-vote)",
                None,
                vote as i64,
            )?;
        }
        if let Some(directory_id) = s.vote_directory_id {
            family(
                e,
                &name("current_vote_directory_id"),
                "The current voted directory id, as a label; AAAAAAAAAAAAAAAAAAAAAA (the zero UUID) indicates not voted for a directory id (Kafka: current-vote-directory-id)",
                "directory_id",
                [(crate::storage::format_directory_id(directory_id), 1)],
            )?;
        }
        if let Some(n) = s.unknown_voter_connections {
            gauge(
                e,
                &name("number_unknown_voter_connections"),
                "Number of unknown voters whose connection information is not cached; would never be larger than quorum-size (Kafka: number-unknown-voter-connections)",
                None,
                n as i64,
            )?;
        }
        // Each scrape reads (and restarts) the ratio, as each read of Kafka's metric does.
        let poll_idle = self
            .poll_idle
            .as_ref()
            .map(|p| p.lock().unwrap_or_else(|e| e.into_inner()).measure());
        if let Some(ratio) = poll_idle {
            gauge(
                e,
                &name("poll_idle_ratio_avg"),
                "The ratio of time the Raft IO thread is idle as opposed to doing work (e.g. handling requests or replicating from the leader) (Kafka: poll-idle-ratio-avg)",
                None,
                ratio,
            )?;
        }
        if let Some((offset, epoch)) = s.log_end {
            gauge(
                e,
                &name("log_end_offset"),
                "The current raft log end offset (Kafka: log-end-offset)",
                None,
                offset,
            )?;
            gauge(
                e,
                &name("log_end_epoch"),
                "The current raft log end epoch (Kafka: log-end-epoch)",
                None,
                epoch as i64,
            )?;
        }
        if s.state.is_some() {
            let windowed = [
                ("commit_latency_avg", "The average time in milliseconds to commit an entry in the raft log (Kafka: commit-latency-avg)", stats.commit_latency.avg(now)),
                ("commit_latency_max", "The maximum time in milliseconds to commit an entry in the raft log (Kafka: commit-latency-max)", stats.commit_latency.max(now)),
                ("election_latency_avg", "The average time in milliseconds spent on electing a new leader (Kafka: election-latency-avg)", stats.election_latency.avg(now)),
                ("election_latency_max", "The maximum time in milliseconds spent on electing a new leader (Kafka: election-latency-max)", stats.election_latency.max(now)),
                ("append_records_rate", "Records appended per second as the leader (Kafka: append-records-rate)", stats.append_records.rate_per_second(now)),
                ("fetch_records_rate", "Records fetched per second from the leader (Kafka: fetch-records-rate)", stats.fetch_records.rate_per_second(now)),
            ];
            for (n, help, v) in windowed {
                gauge(e, &name(n), help, None, v)?;
            }
        }
        if let Some(n) = s.voters {
            gauge(
                e,
                &name("number_of_voters"),
                "Number of voters in the latest voter set (Kafka: number-of-voters)",
                None,
                n as i64,
            )?;
        }
        if let Some(n) = s.observers {
            gauge(
                e,
                &name("number_of_observers"),
                "Number of observers the leader tracks (Kafka: number-of-observers)",
                None,
                n as i64,
            )?;
        }
        if let Some(pending) = s.uncommitted_voter_change {
            gauge(e, &name("uncommitted_voter_change"), "1 while an AddRaftVoter or RemoveRaftVoter waits for its commit (Kafka: uncommitted-voter-change)", None, pending as i64)?;
        }
        if let Some(ids) = &s.committed_voters {
            gauge(e, &name("committed_voters"), "Number of voters in the committed voter set, the set at HW - 1 (KIP-1204 CommittedVoters)", None, ids.len() as i64)?;
            family(
                e,
                &name("committed_voter"),
                "1 for each voter id of the committed voter set (KIP-1204 CommittedVoters)",
                "id",
                ids.iter().map(|id| (id.to_string(), 1)),
            )?;
        }
        if let (Some(offset), Some(committed)) =
            (s.last_voters_record, s.last_voters_record_committed())
        {
            gauge(
                e,
                &name("last_voters_record_offset"),
                "Offset of the latest VotersRecord; -1: the bootstrap checkpoint's voter set",
                None,
                offset,
            )?;
            gauge(
                e,
                &name("last_voters_record_committed"),
                "1 if the latest VotersRecord is below the high watermark",
                None,
                committed as i64,
            )?;
            gauge(e, &name("uncommitted_voter_change_age"), "Seconds since the latest VotersRecord was seen above the high watermark; 0 once committed", Some(&Unit::Seconds), age)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample(hw: i64, last: i64) -> QuorumSample {
        QuorumSample {
            leader_id: 1,
            epoch: 2,
            high_watermark: hw,
            voters: Some(4),
            committed_voters: Some(vec![1, 2, 3]),
            last_voters_record: Some(last),
            ..Default::default()
        }
    }

    #[test]
    fn age_counts_from_the_first_uncommitted_sample_until_the_commit() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let x = Exporter::new();
        x.update(sample(10, 5), at(0));
        assert_eq!(x.uncommitted_age(at(3)), 0.0, "committed: 5 < 10");
        x.update(sample(10, 10), at(1));
        x.update(sample(10, 10), at(2));
        assert_eq!(
            x.uncommitted_age(at(5)),
            4.0,
            "since the first sample at HW 10"
        );
        x.update(sample(-1, 10), at(6));
        assert_eq!(
            x.uncommitted_age(at(6)),
            5.0,
            "an unknown HW does not commit it"
        );
        x.update(sample(10, 12), at(7));
        assert_eq!(
            x.uncommitted_age(at(8)),
            1.0,
            "a newer record restarts the clock"
        );
        x.update(sample(13, 12), at(9));
        assert_eq!(x.uncommitted_age(at(20)), 0.0);
        x.update(QuorumSample::default(), at(21));
        assert_eq!(x.uncommitted_age(at(30)), 0.0, "static voters: no record");
    }

    #[test]
    fn the_bootstrap_set_is_committed_once_the_high_watermark_is_known() {
        assert_eq!(sample(-1, -1).last_voters_record_committed(), Some(false));
        assert_eq!(sample(0, -1).last_voters_record_committed(), Some(true));
        assert_eq!(sample(5, 5).last_voters_record_committed(), Some(false));
        assert_eq!(sample(6, 5).last_voters_record_committed(), Some(true));
    }

    #[test]
    fn kafka_state_names() {
        assert_eq!(kafka_state(Role::Follower, true, false), "observer");
        assert_eq!(kafka_state(Role::Follower, false, true), "follower");
        assert_eq!(
            kafka_state(Role::Unattached, true, true),
            "unattached-voted"
        );
        assert_eq!(
            kafka_state(Role::Prospective, true, true),
            "prospective-voted"
        );
        assert_eq!(kafka_state(Role::Resigned, false, true), "unattached");
    }

    #[test]
    fn exposition_has_kafka_names_and_only_known_figures() {
        let x = Exporter::new();
        let mut s = sample(10, 10);
        s.state = Some("leader");
        s.observers = Some(1);
        x.update(s.clone(), Instant::now());
        let text = x.encode();
        assert!(!text.contains("poll_idle"), "{text}");
        // A node's exporter: its vote's directory id, unknown voter connections, the poll idle ratio.
        let poll_idle = stats::PollIdle::default();
        let node = Exporter::new().with_poll_idle(poll_idle.clone());
        s.vote_directory_id = Some(uuid::Uuid::nil());
        s.unknown_voter_connections = Some(0);
        node.update(s, Instant::now());
        let t0 = Instant::now();
        let ms = std::time::Duration::from_millis;
        for (idle, at) in [(0, 0), (30, 100), (45, 200)] {
            poll_idle.lock().unwrap().record(ms(idle), t0 + ms(at));
        }
        let node_text = node.encode();
        for line in [
            "kafka_server_raft_metrics_current_vote_directory_id{directory_id=\"AAAAAAAAAAAAAAAAAAAAAA\"} 1\n",
            "kafka_server_raft_metrics_number_unknown_voter_connections 0\n",
            "kafka_server_raft_metrics_poll_idle_ratio_avg 0.375\n",
        ] {
            assert!(node_text.contains(line), "{line:?} missing from\n{node_text}");
        }
        // Each scrape reads and restarts the ratio.
        assert!(node
            .encode()
            .contains("kafka_server_raft_metrics_poll_idle_ratio_avg 1.0\n"));
        for line in [
            "# TYPE kafka_server_raft_metrics_current_leader gauge",
            "kafka_server_raft_metrics_current_leader 1\n",
            "kafka_server_raft_metrics_current_epoch 2\n",
            "kafka_server_raft_metrics_high_watermark 10\n",
            "kafka_server_raft_metrics_current_state{state=\"leader\"} 1\n",
            "kafka_server_raft_metrics_commit_latency_avg NaN\n",
            "kafka_server_raft_metrics_append_records_rate 0.0\n",
            "kafka_server_raft_metrics_number_of_voters 4\n",
            "kafka_server_raft_metrics_number_of_observers 1\n",
            "kafka_server_raft_metrics_committed_voters 3\n",
            "kafka_server_raft_metrics_committed_voter{id=\"2\"} 1\n",
            "kafka_server_raft_metrics_last_voters_record_offset 10\n",
            "kafka_server_raft_metrics_last_voters_record_committed 0\n",
            "# UNIT kafka_server_raft_metrics_uncommitted_voter_change_age_seconds seconds",
            "kafka_server_raft_metrics_uncommitted_voter_change_age_seconds ",
        ] {
            assert!(text.contains(line), "{line:?} missing from\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
        for absent in [
            "current_vote",
            "log_end_offset",
            "uncommitted_voter_change ",
        ] {
            assert!(
                !text.contains(absent),
                "{absent} is not known here:\n{text}"
            );
        }
    }
}
