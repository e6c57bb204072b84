//! `poll-idle-ratio-avg`: the fraction of time the node task waits for work, as Kafka's raft IO thread
//! measures it (`KafkaRaftMetrics.updatePollStart/End` feeding a `TimeRatio(1.0)`). The node task records each
//! wait when it ends; a read (a scrape) returns the waits recorded since the previous read over the time
//! between the previous read's last wait end and the latest one, then starts a new interval. Nothing
//! recorded: 1.0 (Kafka's default ratio); more wait than interval: 1.0.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
struct TimeRatio {
    interval_start: Option<Instant>,
    last_recorded: Option<Instant>,
    recorded: Duration,
}

/// The node task's wait clock; cloned handles share it (the task records, the exporter reads).
#[derive(Clone, Debug, Default)]
pub struct PollIdle {
    ratio: Arc<Mutex<TimeRatio>>,
}

impl PollIdle {
    pub fn new() -> PollIdle {
        PollIdle::default()
    }

    /// A wait of `waited` that ended at `end`.
    pub fn record(&self, waited: Duration, end: Instant) {
        let mut r = self.ratio.lock().unwrap_or_else(|e| e.into_inner());
        if r.interval_start.is_none() {
            r.interval_start = Some(end.checked_sub(waited).unwrap_or(end));
        }
        r.recorded += waited;
        r.last_recorded = Some(end);
    }

    /// The ratio since the previous read (Kafka's `TimeRatio.measure`, which also starts the next interval).
    pub fn measure(&self) -> f64 {
        let mut r = self.ratio.lock().unwrap_or_else(|e| e.into_inner());
        let (Some(start), Some(last)) = (r.interval_start, r.last_recorded) else {
            return 1.0;
        };
        let interval = last.saturating_duration_since(start);
        let ratio = if interval.is_zero() {
            1.0
        } else {
            (r.recorded.as_secs_f64() / interval.as_secs_f64()).min(1.0)
        };
        r.interval_start = Some(last);
        r.recorded = Duration::ZERO;
        ratio
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_recorded_reads_one() {
        assert_eq!(PollIdle::new().measure(), 1.0);
    }

    #[test]
    fn waits_over_the_interval_since_the_previous_read() {
        let t0 = Instant::now();
        let ms = |n: u64| Duration::from_millis(n);
        let p = PollIdle::new();
        // Waited 300 ms, worked 100, waited 500, worked 100: the interval is 0..900 from the first wait's start.
        p.record(ms(300), t0 + ms(300));
        p.record(ms(500), t0 + ms(900));
        assert!((p.measure() - 800.0 / 900.0).abs() < 1e-9);
        // The next interval starts at the last wait's end: 900..1000, waited 50 of it.
        p.record(ms(50), t0 + ms(1000));
        assert!((p.measure() - 0.5).abs() < 1e-9);
        // No wait since: the interval is empty, Kafka's default.
        assert_eq!(p.measure(), 1.0);
    }

    #[test]
    fn never_above_one() {
        let t0 = Instant::now();
        let p = PollIdle::new();
        p.record(Duration::from_millis(10), t0 + Duration::from_millis(10));
        let q = p.clone();
        q.record(Duration::from_millis(30), t0 + Duration::from_millis(20));
        assert_eq!(p.measure(), 1.0);
    }
}
