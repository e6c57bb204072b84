//! The whole CI gate as a test, for the mutation run (`cargo mutants`, see the README): ignored by default
//! because `.ci/run` runs the gate itself. It stops at the first divergence, so a mutant the graph
//! catches costs little.

#[test]
#[ignore]
fn the_gate_passes() {
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(["--max-reports", "1"])
        .status()
        .expect("the conformance binary runs");
    assert!(status.success(), "the conformance gate failed: {status}");
}
