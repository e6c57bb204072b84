//! The model checker at small bounds (the first-election configuration `model check` also runs), one
//! thread, with and without symmetry reduction. Throughput is unique states per second; the default-bound
//! figures come from the `model` CLI (see the README).

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};

use model::check::{self, first_election_bounds, CheckOptions};
use model::KraftModel;

fn options(symmetry: bool) -> CheckOptions {
    CheckOptions {
        threads: 1,
        symmetry,
        ..CheckOptions::default()
    }
}

fn small_check(c: &mut Criterion) {
    let mut group = c.benchmark_group("model_check_first_election");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    for symmetry in [true, false] {
        let model = || KraftModel::new(first_election_bounds()).expect("valid bounds");
        let report = check::run(model(), options(symmetry));
        assert!(
            report.exhaustive && report.ok(),
            "small check passes (symmetry={symmetry})"
        );
        group.throughput(Throughput::Elements(report.unique_states as u64));
        let name = if symmetry { "symmetry" } else { "no_symmetry" };
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let r = check::run(model(), options(symmetry));
                assert_eq!(r.unique_states, report.unique_states, "deterministic count");
                r.unique_states
            })
        });
    }
    group.finish();
}

criterion_group!(benches, small_check);
criterion_main!(benches);
