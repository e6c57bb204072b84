//! Conformance trace replay: model and implementation in lockstep, with every state compared and
//! DescribeQuorum v0–3 of every node checked by three decoders at every step. Throughput is replayed
//! steps (actions, election prefix included) per second over 16 seeded random walks of 30 actions.

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

use conformance::replay::{replay, Options};
use conformance::sources::random_walks;
use conformance::wire::{default_messages_dir, WireChecker};

fn trace_replay(c: &mut Criterion) {
    let traces = random_walks(16, 30, 0).expect("walks");
    let mut wire = WireChecker::load(&default_messages_dir()).expect("schemas load");
    let opts = Options::default();
    let steps: u64 = traces
        .iter()
        .map(|t| {
            replay(t, &mut wire, &opts)
                .unwrap_or_else(|d| panic!("trace {} diverges: {:?}", t.label, d.kind))
                .steps
        })
        .sum();
    let mut group = c.benchmark_group("conformance_replay");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    group.throughput(Throughput::Elements(steps));
    group.bench_function("random_walks_16x30", |b| {
        b.iter(|| {
            let mut replayed = 0;
            for t in &traces {
                replayed += replay(t, &mut wire, &opts).expect("replays").steps;
            }
            assert_eq!(replayed, steps);
            replayed
        })
    });
    group.finish();
}

criterion_group!(benches, trace_replay);
criterion_main!(benches);
