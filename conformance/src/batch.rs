//! Many traces replayed on worker threads, stopping early once enough divergences are found (the
//! binary's `--max-reports`: a mutation run's caught mutant then costs seconds, not the whole gate).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::replay::{self, Divergence, Options, TraceSpec};
use crate::wire::WireChecker;

/// What a batch replayed and found.
#[derive(Debug, Default)]
pub struct Batch {
    /// Traces replayed (all of them unless the limit stopped the batch).
    pub replayed: u64,
    pub steps: u64,
    /// Distinct encodings through every decoder.
    pub encodings: u64,
    /// DescribeQuorum responses checked against the model (every node, version and state).
    pub content: u64,
    /// Refusal reasons compared.
    pub refusals: u64,
    /// At most `limit` divergences, in trace order.
    pub divergences: Vec<Divergence>,
    /// True if the limit stopped the batch before every trace was replayed.
    pub stopped: bool,
}

/// Replays `traces` on `threads` workers, each with its own copy of the schemas. Once `limit` (at least
/// 1) divergences are found, no further trace is started.
pub fn replay_all(
    traces: &[TraceSpec],
    checker: &WireChecker,
    opts: &Options,
    threads: usize,
    limit: usize,
) -> Batch {
    let limit = limit.max(1);
    let next = AtomicUsize::new(0);
    let found = AtomicUsize::new(0);
    let total = Mutex::new((Batch::default(), Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut wire = WireChecker::new(checker.response.clone(), checker.request.clone());
                let mut mine = Batch::default();
                let mut divs = Vec::new();
                while found.load(Ordering::SeqCst) < limit {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(t) = traces.get(i) else { break };
                    mine.replayed += 1;
                    match replay::replay(t, &mut wire, opts) {
                        Ok(c) => {
                            mine.steps += c.steps;
                            mine.content += c.encodings;
                            mine.refusals += c.refusals;
                        }
                        Err(d) => {
                            mine.steps += d.step as u64;
                            divs.push((i, *d));
                            found.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
                let mut tot = total.lock().unwrap_or_else(|p| p.into_inner());
                tot.0.replayed += mine.replayed;
                tot.0.steps += mine.steps;
                tot.0.encodings += wire.checked;
                tot.0.content += mine.content;
                tot.0.refusals += mine.refusals;
                tot.1.extend(divs);
            });
        }
    });
    let (mut batch, mut divs) = total.into_inner().unwrap_or_else(|p| p.into_inner());
    // Workers racing past the limit may find a few more; keep the first `limit` in trace order.
    divs.sort_by_key(|(i, _)| *i);
    batch.divergences = divs.into_iter().take(limit).map(|(_, d)| d).collect();
    batch.stopped =
        batch.replayed < traces.len() as u64 || batch.divergences.len() < found.into_inner();
    batch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{sources, wire};
    use std::sync::OnceLock;

    fn checker() -> WireChecker {
        WireChecker::load(&wire::default_messages_dir()).expect("specs/messages loads")
    }

    /// Every bug variant's counterexample, each twice: all of them diverge from the implementation
    /// (at least 4 traces, so two workers stopping at 2 divergences leave one unreplayed).
    fn diverging() -> &'static [TraceSpec] {
        static TRACES: OnceLock<Vec<TraceSpec>> = OnceLock::new();
        TRACES.get_or_init(|| {
            let one: Vec<TraceSpec> = sources::bug_traces()
                .into_iter()
                .map(|(_, t)| t.expect("counterexample"))
                .collect();
            assert!(one.len() >= 2, "{} bug counterexamples", one.len());
            one.iter().chain(one.iter()).cloned().collect()
        })
    }

    #[test]
    fn the_first_divergence_stops_the_batch() {
        let traces = diverging();
        let b = replay_all(traces, &checker(), &Options::default(), 1, 1);
        assert_eq!(b.replayed, 1);
        assert_eq!(b.divergences.len(), 1);
        assert_eq!(b.divergences[0].label, traces[0].label);
        assert!(b.stopped);
    }

    #[test]
    fn a_limit_above_the_divergences_replays_everything() {
        let traces = diverging();
        let n = traces.len();
        let b = replay_all(traces, &checker(), &Options::default(), 2, n + 1);
        assert_eq!(b.replayed, n as u64);
        assert_eq!(b.divergences.len(), n);
        assert!(!b.stopped);
    }

    #[test]
    fn two_workers_keep_at_most_the_limit() {
        let traces = diverging();
        let b = replay_all(traces, &checker(), &Options::default(), 2, 2);
        assert_eq!(b.divergences.len(), 2);
        assert!(b.replayed < traces.len() as u64);
        assert!(b.stopped);
    }
}
