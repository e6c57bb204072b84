//! Prints the medians criterion saved under `<target>/criterion` as Markdown tables, with the ratio
//! kraft / kafka-protocol wherever both ran on the same input.
//!
//! Usage: `cargo run -p benches --bin bench-report [-- <criterion dir>]` (default:
//! `$CARGO_TARGET_DIR/criterion`, else `target/criterion`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

/// One benchmark's saved result.
struct Row {
    group: String,
    function: String,
    parameter: String,
    median_ns: f64,
    /// Elements or bytes per iteration, if the bench declared a throughput.
    throughput: Option<(String, f64)>,
}

fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

fn rows(dir: &Path, out: &mut Vec<Row>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let new = path.join("new");
        if let (Some(bench), Some(est)) = (
            read_json(&new.join("benchmark.json")),
            read_json(&new.join("estimates.json")),
        ) {
            let text = |v: &Value| v.as_str().map(str::to_owned).unwrap_or_default();
            let throughput = bench["throughput"].as_object().and_then(|t| {
                t.iter()
                    .next()
                    .and_then(|(k, v)| v.as_f64().map(|n| (k.clone(), n)))
            });
            if let Some(median_ns) = est["median"]["point_estimate"].as_f64() {
                out.push(Row {
                    group: text(&bench["group_id"]),
                    function: text(&bench["function_id"]),
                    parameter: text(&bench["value_str"]),
                    median_ns,
                    throughput,
                });
            }
        } else {
            rows(&path, out);
        }
    }
}

fn human_time(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.1} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

fn human_rate(per_second: f64, unit: &str) -> String {
    if per_second >= 1e9 {
        format!("{:.2} G{unit}/s", per_second / 1e9)
    } else if per_second >= 1e6 {
        format!("{:.2} M{unit}/s", per_second / 1e6)
    } else if per_second >= 1e3 {
        format!("{:.1} k{unit}/s", per_second / 1e3)
    } else {
        format!("{per_second:.1} {unit}/s")
    }
}

fn main() -> ExitCode {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("target"))
                .join("criterion")
        });
    let mut all = Vec::new();
    rows(&dir, &mut all);
    if all.is_empty() {
        eprintln!("no criterion results under {}", dir.display());
        return ExitCode::FAILURE;
    }
    // group → parameter → function → row, so peers of one input sit side by side.
    let mut groups: BTreeMap<&str, BTreeMap<&str, BTreeMap<&str, &Row>>> = BTreeMap::new();
    for row in &all {
        groups
            .entry(&row.group)
            .or_default()
            .entry(&row.parameter)
            .or_default()
            .insert(&row.function, row);
    }
    println!("| group | input | bench | median | rate | kraft / kafka-protocol |");
    println!("|---|---|---|---|---|---|");
    for (group, params) in &groups {
        let mut params: Vec<_> = params.iter().collect();
        // Numeric inputs in numeric order.
        params.sort_by_key(|(p, _)| (p.parse::<f64>().unwrap_or(f64::MAX) as u64, p.to_string()));
        for (param, functions) in params {
            let peer = functions.get("kafka-protocol").map(|r| r.median_ns);
            for (function, row) in functions {
                let rate = match &row.throughput {
                    Some((kind, n)) if kind == "Bytes" => human_rate(n / row.median_ns * 1e9, "B"),
                    Some((_, n)) => human_rate(n / row.median_ns * 1e9, "elem"),
                    None => human_rate(1e9 / row.median_ns, "op"),
                };
                let ratio = match (peer, *function) {
                    (Some(p), "kraft") => format!("{:.2}", row.median_ns / p),
                    _ => String::new(),
                };
                println!(
                    "| {group} | {param} | {function} | {} | {rate} | {ratio} |",
                    human_time(row.median_ns)
                );
            }
        }
    }
    ExitCode::SUCCESS
}
