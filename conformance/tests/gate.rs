//! The whole CI gate as a test, for the mutation run (`cargo mutants`, see the README): ignored by default
//! because `.ci/run` runs the gate itself. It stops at the first divergence, so a mutant the graph
//! catches costs little.
//!
//! `CONFORMANCE_GATE_ARGS` (whitespace-separated) replaces the gate's default sources and bounds, so the
//! mutation run can use a cheaper gate (the command it uses is in conformance/README.md).

#[test]
#[ignore]
fn the_gate_passes() {
    let extra = std::env::var("CONFORMANCE_GATE_ARGS").unwrap_or_default();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(["--max-reports", "1"])
        .args(extra.split_whitespace())
        .status()
        .expect("the conformance binary runs");
    assert!(status.success(), "the conformance gate failed: {status}");
}
