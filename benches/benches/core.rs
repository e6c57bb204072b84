//! The deterministic core: committed-voter-set lookup against history length, the leader's HW update per
//! Fetch and its DescribeQuorum lists against voter count, and committed appends through an in-memory
//! 3-node cluster (no sockets, no clocks).

use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use benches::fixtures::{history, leader, spread_queries, VOTER_COUNTS};
use kraft::history::committed_voter_set;
use kraft_sim::{self as sim, Sim};

/// One lookup per iteration, in one group so the before/after ratio comes from one run:
/// - `search_*`: the plain binary search every lookup did before the committed entry was kept
///   (`value_at_or_before(hw − 1)`, still the fallback);
/// - `kept_*`: [`committed_voter_set`], which first checks the entry it answered last time;
/// - `*_rising`: the HW moves forward by one per lookup through the whole history, as a node's HW does (it
///   passes a VotersRecord every 10 lookups here, far more often than a real log);
/// - `*_spread`: 4096 HWs spread over the whole history (a fixed LCG), the kept entry's worst case.
fn committed_lookup(c: &mut Criterion) {
    let mut group = c.benchmark_group("committed_voter_set");
    for len in [1usize, 10, 100, 1_000, 10_000, 100_000] {
        let (h, last) = history(len);
        let queries = spread_queries(last + 1, 4096);
        let wrap = last + 2;
        group.bench_function(BenchmarkId::new("search_rising", len), |b| {
            let mut hw = 0;
            b.iter(|| {
                hw = if hw + 1 == wrap { 0 } else { hw + 1 };
                black_box(&h).value_at_or_before(hw - 1).map(|s| s.len())
            })
        });
        group.bench_function(BenchmarkId::new("kept_rising", len), |b| {
            let mut hw = 0;
            b.iter(|| {
                hw = if hw + 1 == wrap { 0 } else { hw + 1 };
                committed_voter_set(black_box(&h), Some(hw)).map(|s| s.len())
            })
        });
        group.bench_function(BenchmarkId::new("search_spread", len), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) & 4095;
                black_box(&h)
                    .value_at_or_before(queries[i] - 1)
                    .map(|s| s.len())
            })
        });
        group.bench_function(BenchmarkId::new("kept_spread", len), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) & 4095;
                committed_voter_set(black_box(&h), Some(queries[i])).map(|s| s.len())
            })
        });
    }
    group.finish();
}

/// One follower Fetch per iteration, followers in turn, each fetching past the previous HW: every
/// iteration records progress and recomputes the HW (it advances on every majority-th fetch).
fn hw_per_fetch(c: &mut Criterion) {
    let mut group = c.benchmark_group("leader_hw_per_fetch");
    for n in VOTER_COUNTS {
        let (mut state, _) = leader(n);
        let followers: Vec<_> = (2..=n as i32).map(sim::key).collect();
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            let mut fetch_offset = 1i64;
            let mut next = 0usize;
            let mut now = 0u64;
            b.iter(|| {
                let follower = followers[next];
                next += 1;
                if next == followers.len() {
                    next = 0;
                    fetch_offset += 1;
                    now += 1;
                }
                state.update_replica(follower, now, black_box(fetch_offset))
            })
        });
        assert!(
            state.high_watermark().is_some(),
            "the bench moved the HW (n={n})"
        );
    }
    group.finish();
}

/// The leader's DescribeQuorum lists at v3 (current voters, observers, committed voters, nodes).
fn describe_lists(c: &mut Criterion) {
    let mut group = c.benchmark_group("leader_describe_v3");
    for n in VOTER_COUNTS {
        let (mut state, set) = leader(n);
        for id in 2..=n as i32 {
            state.update_replica(sim::key(id), 5, 100);
        }
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| state.describe(black_box(10), 3, Some(&set)))
        });
    }
    group.finish();
}

/// A 3-node cluster with leader 1 and an initial HW.
fn elected_cluster() -> Sim {
    let mut sim = Sim::new(3, 0, 7).expect("valid cluster");
    sim.elect(1);
    sim.replicate(5);
    assert!(sim.node(1).high_watermark().is_some(), "cluster elected");
    sim
}

/// One client append of `records` on the leader, then fetch rounds until the leader's HW covers it.
fn append_committed(sim: &mut Sim, payload: &[&[u8]]) {
    let offset = sim.append(1, payload).expect("leader accepts");
    let last = offset + payload.len() as i64 - 1;
    for _ in 0..10 {
        sim.replicate(1);
        if sim.node(1).high_watermark().is_some_and(|hw| hw > last) {
            return;
        }
    }
    panic!("append at {offset} not committed after 10 fetch rounds");
}

/// Committed appends: each iteration is one append of a batch of 1 or 100 records of 64 bytes, replicated
/// and committed. The cluster is rebuilt (untimed) every 2000 appends so memory stays bounded.
fn committed_appends(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim_committed_appends");
    let record = [0xABu8; 64];
    for batch in [1usize, 100] {
        let payload: Vec<&[u8]> = vec![&record[..]; batch];
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_function(BenchmarkId::new("records_per_batch", batch), |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let mut sim = elected_cluster();
                    let chunk = (iters - done).min(2000);
                    let start = Instant::now();
                    for _ in 0..chunk {
                        append_committed(&mut sim, &payload);
                    }
                    timed += start.elapsed();
                    done += chunk;
                }
                timed
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    committed_lookup,
    hw_per_fetch,
    describe_lists,
    committed_appends
);
criterion_main!(benches);
