//! Kafka's windowed raft statistics, measured by the shell from consecutive samples of a replica
//! (`commit-latency-avg/max`, `election-latency-avg/max`, `append-records-rate`, `fetch-records-rate`). The
//! windows are Kafka's `SampledStat` at its defaults (`metrics.num.samples` 2, `metrics.sample.window.ms`
//! 30 000): a value lands in the current 30 s sample, at most two samples are kept, a sample older than 60 s
//! is reset before reading; an average or maximum with no value in the kept samples is NaN, as Kafka's.

use std::time::{Duration, Instant};

use super::QuorumSample;

const WINDOW: Duration = Duration::from_secs(30);
const SAMPLES: usize = 2;
/// Uncommitted appends remembered for the commit latency; beyond it the oldest are dropped (a leader that
/// cannot commit must not grow without bound).
const MAX_PENDING_APPENDS: usize = 4096;

#[derive(Clone, Copy, Debug)]
struct Sample {
    start: Instant,
    count: u64,
    sum: f64,
    max: f64,
}

impl Sample {
    fn new(start: Instant) -> Sample {
        Sample {
            start,
            count: 0,
            sum: 0.0,
            max: f64::NEG_INFINITY,
        }
    }
}

/// Kafka raft's `TimeRatio` (`poll-idle-ratio-avg`, default 1.0): the idle time recorded since the last
/// read over the time between the last recordings before the two reads; each read starts a new interval,
/// the first recording only opens the first one.
#[derive(Clone, Debug, Default)]
pub struct TimeRatio {
    interval_start: Option<Instant>,
    last_recorded: Option<Instant>,
    recorded: Duration,
}

impl TimeRatio {
    /// One poll of the node task: `idle` spent waiting for work, ending at `now`.
    pub fn record(&mut self, idle: Duration, now: Instant) {
        if self.interval_start.is_none() {
            self.interval_start = Some(now);
        } else {
            self.recorded += idle;
            self.last_recorded = Some(now);
        }
    }

    /// The ratio of the interval ending now, which then restarts.
    pub fn measure(&mut self) -> f64 {
        let (Some(start), Some(last)) = (self.interval_start, self.last_recorded) else {
            return 1.0;
        };
        let interval = last.saturating_duration_since(start);
        // An empty interval reads as the default; more idle than elapsed (clock granularity) as 1.
        let ratio = if interval.is_zero() || self.recorded > interval {
            1.0
        } else {
            self.recorded.as_nanos() as f64 / interval.as_nanos() as f64
        };
        self.interval_start = Some(last);
        self.recorded = Duration::ZERO;
        ratio
    }
}

/// The node task's [`TimeRatio`], shared with the exporter that reads it.
pub type PollIdle = std::sync::Arc<std::sync::Mutex<TimeRatio>>;

/// One sensor: Kafka's `SampledStat` feeding `Avg`, `Max` and `Rate(WindowedSum)` at once.
#[derive(Clone, Debug, Default)]
pub struct Windowed {
    samples: Vec<Sample>,
    current: usize,
}

impl Windowed {
    pub fn record(&mut self, value: f64, now: Instant) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now));
        } else if now.saturating_duration_since(self.samples[self.current].start) >= WINDOW {
            self.current = (self.current + 1) % SAMPLES;
            if self.current >= self.samples.len() {
                self.samples.push(Sample::new(now));
            } else {
                self.samples[self.current] = Sample::new(now);
            }
        }
        let s = &mut self.samples[self.current];
        s.count += 1;
        s.sum += value;
        s.max = s.max.max(value);
    }

    /// The samples still in force at `now` (Kafka's `purgeObsoleteSamples`: older than 2 windows reset).
    fn live(&self, now: Instant) -> impl Iterator<Item = &Sample> + '_ {
        self.samples
            .iter()
            .filter(move |s| now.saturating_duration_since(s.start) < WINDOW * SAMPLES as u32)
    }

    pub fn avg(&self, now: Instant) -> f64 {
        let (sum, count) = self
            .live(now)
            .fold((0.0, 0), |(s, c), x| (s + x.sum, c + x.count));
        if count == 0 {
            f64::NAN
        } else {
            sum / count as f64
        }
    }

    pub fn max(&self, now: Instant) -> f64 {
        self.live(now)
            .filter(|s| s.count > 0)
            .map(|s| s.max)
            .fold(f64::NAN, f64::max)
    }

    /// Kafka's `Rate(SECONDS, WindowedSum)`: the kept sum over the time since the oldest kept sample began,
    /// counted as at least one full window plus the current one (`Rate.windowSize`), at least 1 ms.
    pub fn rate_per_second(&self, now: Instant) -> f64 {
        // A fold from +0.0: `Sum` of no floats is −0.0.
        let sum = self.live(now).fold(0.0, |acc, s| acc + s.sum);
        let oldest = self.live(now).map(|s| s.start).min().unwrap_or(now);
        let mut elapsed = now.saturating_duration_since(oldest);
        let full = (elapsed.as_millis() / WINDOW.as_millis()) as u32;
        let min_full = (SAMPLES - 1) as u32;
        if full < min_full {
            elapsed += WINDOW * (min_full - full);
        }
        sum / elapsed.as_secs_f64().max(0.001)
    }
}

/// Kafka's four raft sensors, fed with a replica's consecutive samples.
#[derive(Clone, Debug, Default)]
pub struct RaftStats {
    pub commit_latency: Windowed,
    pub election_latency: Windowed,
    pub append_records: Windowed,
    pub fetch_records: Windowed,
    /// Since when an election runs: the latest entry into prospective or candidate.
    election_start: Option<Instant>,
    /// Appends of the current leadership not committed yet: (end offset, when appended, records).
    appended: Vec<(i64, Instant, i64)>,
    last: Option<QuorumSample>,
}

fn electing(state: Option<&str>) -> bool {
    matches!(
        state,
        Some("prospective" | "prospective-voted" | "candidate")
    )
}

impl RaftStats {
    /// Takes the replica's next sample (only samples with a `state`, a replica's own, are measured).
    pub fn observe(&mut self, sample: &QuorumSample, now: Instant) {
        let Some(prev) = self.last.replace(sample.clone()) else {
            return;
        };
        let (state, was) = (sample.state, prev.state);
        if state.is_none() {
            return;
        }
        // Election latency: from the latest entry into prospective or candidate to leader or follower.
        if electing(state) && state != was {
            self.election_start = Some(now);
        } else if matches!(state, Some("leader" | "follower" | "observer")) {
            if let Some(start) = self.election_start.take() {
                self.election_latency.record(
                    now.saturating_duration_since(start).as_secs_f64() * 1000.0,
                    now,
                );
            }
        }
        let leading = state == Some("leader");
        if !leading || was != Some("leader") || sample.epoch != prev.epoch {
            self.appended.clear();
        }
        // Records appended since the last sample, as leader or as follower.
        if let (Some((end, _)), Some((before, _))) = (sample.log_end, prev.log_end) {
            let added = end - before;
            if added > 0 && sample.epoch == prev.epoch {
                if leading {
                    self.append_records.record(added as f64, now);
                    if self.appended.len() == MAX_PENDING_APPENDS {
                        self.appended.remove(0);
                    }
                    self.appended.push((end, now, added));
                } else if matches!(state, Some("follower" | "observer")) {
                    self.fetch_records.record(added as f64, now);
                }
            }
        }
        // Commit latency per record of each append the HW passed, as Kafka's leader records it.
        if leading {
            let hw = sample.high_watermark;
            let done = self
                .appended
                .iter()
                .take_while(|(e, _, _)| *e <= hw)
                .count();
            for (_, at, n) in self.appended.drain(..done) {
                let ms = now.saturating_duration_since(at).as_secs_f64() * 1000.0;
                self.commit_latency.record(ms / n as f64, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_ratio_as_kafkas() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut r = TimeRatio::default();
        // Nothing recorded: Kafka's default.
        assert_eq!(r.measure(), 1.0);
        // The first recording opens the interval; its own duration is not counted.
        r.record(ms(500), t0);
        assert_eq!(r.measure(), 1.0);
        r.record(ms(30), t0 + ms(100));
        r.record(ms(45), t0 + ms(200));
        assert!((r.measure() - 0.375).abs() < 1e-9);
        // The next interval starts at the last recording: 10 ms idle of 100 ms.
        r.record(ms(10), t0 + ms(300));
        assert!((r.measure() - 0.1).abs() < 1e-9);
        // No recording since the last read: an empty interval reads as the default.
        assert_eq!(r.measure(), 1.0);
        // More idle than elapsed (clock granularity) is capped at 1.
        r.record(ms(500), t0 + ms(400));
        assert_eq!(r.measure(), 1.0);
    }

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn windows_as_kafka_sampled_stat() {
        let t0 = Instant::now();
        let mut w = Windowed::default();
        assert!(w.avg(t0).is_nan() && w.max(t0).is_nan());
        assert_eq!(w.rate_per_second(t0), 0.0);
        w.record(10.0, t0);
        w.record(30.0, at(t0, 1_000));
        assert_eq!((w.avg(at(t0, 2_000)), w.max(at(t0, 2_000))), (20.0, 30.0));
        // Rate: 40 records over one full window plus the 2 s elapsed.
        assert!((w.rate_per_second(at(t0, 2_000)) - 40.0 / 32.0).abs() < 1e-9);
        w.record(2.0, at(t0, 31_000));
        assert_eq!(w.max(at(t0, 40_000)), 30.0, "two samples kept");
        w.record(4.0, at(t0, 62_000));
        assert_eq!(w.avg(at(t0, 62_000)), 3.0, "the first sample was replaced");
        assert!(w.avg(at(t0, 200_000)).is_nan(), "all expired");
    }

    fn sample(state: &str, epoch: i32, end: i64, hw: i64) -> QuorumSample {
        QuorumSample {
            state: Some(match state {
                "leader" => "leader",
                "candidate" => "candidate",
                "prospective" => "prospective",
                "follower" => "follower",
                _ => "unattached",
            }),
            epoch,
            high_watermark: hw,
            log_end: Some((end, epoch)),
            ..Default::default()
        }
    }

    #[test]
    fn election_append_fetch_and_commit_as_kafka_measures_them() {
        let t0 = Instant::now();
        let mut s = RaftStats::default();
        s.observe(&sample("unattached", 0, 0, -1), t0);
        s.observe(&sample("prospective", 0, 0, -1), at(t0, 100));
        s.observe(&sample("candidate", 1, 0, -1), at(t0, 300));
        s.observe(&sample("leader", 1, 1, -1), at(t0, 350));
        assert_eq!(
            s.election_latency.max(at(t0, 350)),
            50.0,
            "from the latest entry"
        );
        s.observe(&sample("leader", 1, 4, -1), at(t0, 400));
        s.observe(&sample("leader", 1, 4, 2), at(t0, 410));
        // The first append (LEO 0 -> 1, one record, at 350) is committed by HW 2: 60 ms.
        assert_eq!(s.commit_latency.max(at(t0, 410)), 60.0);
        s.observe(&sample("leader", 1, 4, 4), at(t0, 460));
        // The second (LEO 1 -> 4, three records, at 400) by HW 4 at 460: 60 ms / 3 records = 20 ms.
        assert_eq!(s.commit_latency.avg(at(t0, 460)), 40.0);
        assert_eq!(s.commit_latency.max(at(t0, 460)), 60.0);
        assert_eq!(s.append_records.avg(at(t0, 460)), 2.0);
        s.observe(&sample("follower", 2, 4, 4), at(t0, 500));
        s.observe(&sample("follower", 2, 9, 4), at(t0, 600));
        assert_eq!(s.fetch_records.max(at(t0, 600)), 5.0);
        assert_eq!(
            s.append_records.max(at(t0, 600)),
            3.0,
            "a follower's appends are fetches"
        );
    }
}
