//! Scenario tests of the conformance gate at small bounds: the correct implementation replays model
//! paths without divergence, and every bug-variant counterexample diverges.

use conformance::replay::{self, Options};
use conformance::{report, sources, vectors, wire};

fn checker() -> wire::WireChecker {
    wire::WireChecker::load(&wire::default_messages_dir()).expect("specs/messages loads")
}

#[test]
fn exhaustive_depth_one_and_a_few_walks_conform() {
    let mut w = checker();
    let mut traces = sources::exhaustive(sources::exhaustive_config(), 1).unwrap();
    traces.extend(sources::random_walks(8, 60, 11).unwrap());
    let opts = Options::default();
    let mut steps = 0;
    for t in &traces {
        match replay::replay(t, &mut w, &opts) {
            Ok(c) => steps += c.steps,
            Err(d) => panic!("{}", report::render(&d)),
        }
    }
    assert!(steps > 500, "{steps} steps");
    assert!(w.checked > 0);
}

#[test]
fn committed_trace_files_conform() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut w = checker();
    let files = sources::trace_files(&dir).unwrap();
    assert!(!files.is_empty());
    for f in files {
        for t in sources::read_trace_file(&f).unwrap() {
            if let Err(d) = replay::replay(&t, &mut w, &Options::default()) {
                panic!("{}", report::render(&d));
            }
        }
    }
}

#[test]
fn every_bug_counterexample_diverges() {
    let mut w = checker();
    for (bug, t) in sources::bug_traces() {
        let t = t.unwrap_or_else(|e| panic!("{e}"));
        let d = replay::replay(&t, &mut w, &Options::default())
            .err()
            .unwrap_or_else(|| panic!("bug {} replays without divergence", bug.name()));
        // It diverges inside the trace, not in the shared election prefix.
        assert!(d.step > d.prefix_len, "{}", report::headline(&d));
    }
}

#[test]
fn golden_vectors_agree_with_the_interpreter() {
    let mut w = checker();
    let n = vectors::check_dir(&wire::default_vectors_dir(), &mut w).unwrap();
    // DescribeQuorum v0-3 (a request and 5 responses each), FetchSnapshot v0-1 (a request and 3 each).
    assert_eq!(n, 4 * 6 + 2 * 4);
}

#[test]
fn a_fetch_snapshot_vector_whose_json_differs_from_its_bytes_is_refused() {
    let w = checker();
    let dir = std::env::temp_dir().join(format!("fs-vectors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stem = "fetch_snapshot_response_v1_chunk";
    for ext in ["json", "body.hex", "frame.hex"] {
        let name = format!("{stem}.{ext}");
        std::fs::copy(wire::default_vectors_dir().join(&name), dir.join(&name)).unwrap();
    }
    let json_path = dir.join(format!("{stem}.json"));
    assert_eq!(vectors::check_vector(&json_path, &w), Ok(()));
    // One byte of the chunk changed in the JSON only.
    let text = std::fs::read_to_string(&json_path).unwrap();
    let changed = text.replacen(
        "\"unaligned_records\": \"00",
        "\"unaligned_records\": \"01",
        1,
    );
    assert_ne!(text, changed);
    std::fs::write(&json_path, changed).unwrap();
    let err = vectors::check_vector(&json_path, &w).unwrap_err();
    assert!(err.contains("different bytes"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
