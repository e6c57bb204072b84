//! Divergence reports: the trace, the step, the action, model and implementation side by side with the
//! differing fields marked, and the command that reproduces it.

use std::fmt::Write;

use model::types::State;

use crate::mapping::Abstract;
use crate::replay::{Divergence, DivergenceKind};

/// The summary line's account of the graphs: only a graph explored to the end without divergence is
/// named after "100% of the graph"; one stopped early (`--max-states`, the divergence limit) or with a
/// divergence is named as not complete, and a run where no graph completed says so.
pub fn coverage(complete: &[String], incomplete: &[String]) -> String {
    let part = || format!("not complete: {}", incomplete.join(" + "));
    match (complete.is_empty(), incomplete.is_empty()) {
        (false, true) => format!("100% of the graph at {}", complete.join(" + ")),
        (false, false) => format!("100% of the graph at {}; {}", complete.join(" + "), part()),
        (true, false) => format!("no graph explored completely; {}", part()),
        (true, true) => "no graph explored".into(),
    }
}

/// Marks a differing row.
const MARK: &str = ">>";

/// A multi-line report of a divergence.
pub fn render(d: &Divergence) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "DIVERGENCE in trace {}", d.label);
    let where_ = if d.step == 0 {
        "initial state".to_string()
    } else if d.step <= d.prefix_len {
        format!(
            "step {} (election prefix step {} of {})",
            d.step, d.step, d.prefix_len
        )
    } else {
        format!(
            "step {} (trace action {} after a {}-step election prefix)",
            d.step,
            d.step - d.prefix_len,
            d.prefix_len
        )
    };
    let _ = writeln!(out, "  at {where_}");
    if let Some(a) = &d.action {
        let _ = writeln!(out, "  action: {}", model::story::action(a));
    }
    match &d.kind {
        DivergenceKind::Input(e) => {
            let _ = writeln!(out, "  the implementation could not take this step: {e}");
        }
        DivergenceKind::ModelRefused => {
            let _ = writeln!(
                out,
                "  the model does not allow this action here (the trace is not a model path)"
            );
        }
        DivergenceKind::RecordedState => {
            let _ = writeln!(
                out,
                "  the recorded model state differs from the model's own step"
            );
        }
        DivergenceKind::Replies {
            model,
            implementation,
        } => {
            let _ = writeln!(out, "  operator replies differ:");
            let _ = writeln!(out, "    model:          {model:?}");
            let _ = writeln!(out, "    implementation: {implementation:?}");
        }
        DivergenceKind::Refusals {
            model,
            implementation,
        } => {
            let _ = writeln!(out, "  equal codes, different refusal reasons:");
            let _ = writeln!(out, "    model:          {model:?}");
            let _ = writeln!(out, "    implementation: {implementation:?}");
        }
        DivergenceKind::AppendAcks {
            model,
            implementation,
        } => {
            let _ = writeln!(
                out,
                "  auto-join adds acknowledged at append differ, (offset, epoch) of each VotersRecord:"
            );
            let _ = writeln!(out, "    model:          {model:?}");
            let _ = writeln!(out, "    implementation: {implementation:?}");
        }
        DivergenceKind::State {
            server,
            model,
            implementation,
        } => {
            let _ = writeln!(out, "  server {server}: abstract state differs");
            match implementation {
                Ok(i) => out.push_str(&side_by_side(model, i)),
                Err(e) => {
                    let _ = writeln!(
                        out,
                        "    the implementation's state cannot be abstracted: {e}"
                    );
                    out.push_str(&side_by_side(model, model));
                }
            }
        }
        DivergenceKind::Network {
            model,
            implementation,
        } => {
            let _ = writeln!(
                out,
                "  messages in flight differ (only in one side marked {MARK}):"
            );
            for e in model {
                let mark = if implementation.contains(e) {
                    "  "
                } else {
                    MARK
                };
                let _ = writeln!(out, "    {mark} model:          {}", envelope(e));
            }
            for e in implementation {
                if !model.contains(e) {
                    let _ = writeln!(out, "    {MARK} implementation: {}", envelope(e));
                }
            }
        }
        DivergenceKind::DescribeQuorum {
            server,
            version,
            reason,
        } => {
            let _ = writeln!(
                out,
                "  DescribeQuorum v{version} at server {server}: {reason}"
            );
        }
    }
    if let Some(s) = &d.model_state {
        out.push_str(&model_summary(s));
    }
    let _ = writeln!(out, "  reproduce: {}", d.reproduce);
    out
}

/// Two abstract states, one row per field, differing rows marked.
pub fn side_by_side(model: &Abstract, implementation: &Abstract) -> String {
    let mut out = String::new();
    let m = model.fields();
    let i = implementation.fields();
    let width = m
        .iter()
        .map(|(_, v)| v.len())
        .max()
        .unwrap_or(5)
        .clamp(5, 60);
    let _ = writeln!(
        out,
        "       {:<16} {:<width$} | implementation",
        "field", "model"
    );
    for ((name, mv), (_, iv)) in m.iter().zip(&i) {
        let mark = if mv != iv { MARK } else { "  " };
        let _ = writeln!(out, "    {mark} {name:<16} {mv:<width$} | {iv}");
    }
    out
}

fn model_summary(s: &State) -> String {
    let mut out = String::from("  model state after the step:\n");
    for (i, sv) in s.servers.iter().enumerate() {
        let _ = writeln!(
            out,
            "    {i}: {:?} epoch {} leader {:?} voted {:?} hw {:?} log {}",
            sv.role,
            sv.epoch,
            sv.leader,
            sv.voted_for,
            sv.hw,
            model::story::log(&sv.log)
        );
    }
    out
}

/// The one-line name of what differs (mutation tests look for property or field names here).
pub fn headline(d: &Divergence) -> String {
    let what = match &d.kind {
        DivergenceKind::Input(e) => format!("input refused: {e}"),
        DivergenceKind::ModelRefused => "model refused the action".into(),
        DivergenceKind::RecordedState => "recorded state differs".into(),
        DivergenceKind::Replies { .. } => "replies differ".into(),
        DivergenceKind::Refusals { .. } => "refusal reasons differ".into(),
        DivergenceKind::AppendAcks { .. } => "acknowledgements at append differ".into(),
        DivergenceKind::State {
            server,
            model,
            implementation,
        } => match implementation {
            Ok(i) => {
                let fields: Vec<&str> = model
                    .fields()
                    .iter()
                    .zip(i.fields())
                    .filter(|(a, b)| a.1 != b.1)
                    .map(|(a, _)| a.0)
                    .collect();
                format!("server {server} state differs in {}", fields.join(", "))
            }
            Err(e) => format!("server {server} state not abstractable: {e}"),
        },
        DivergenceKind::Network { .. } => "network differs".into(),
        DivergenceKind::DescribeQuorum {
            server,
            version,
            reason,
        } => {
            format!("DescribeQuorum v{version} at server {server}: {reason}")
        }
    };
    format!("{} step {}: {what}", d.label, d.step)
}

fn envelope(e: &model::types::Envelope) -> String {
    format!("{} → {}: {:?}", e.src, e.dst, e.msg)
}

#[cfg(test)]
mod tests {
    use super::coverage;

    #[test]
    fn only_complete_graphs_are_claimed() {
        let (a, b) = (vec!["a[x=1]".to_string()], vec!["b[y=2]".to_string()]);
        assert_eq!(coverage(&a, &[]), "100% of the graph at a[x=1]");
        assert_eq!(
            coverage(&a, &b),
            "100% of the graph at a[x=1]; not complete: b[y=2]"
        );
        assert_eq!(
            coverage(&[], &b),
            "no graph explored completely; not complete: b[y=2]"
        );
        assert_eq!(coverage(&[], &[]), "no graph explored");
    }
}
