//! The kit's report: one JSON line per step (schema `kraft-kit-report/1`), and coverage counters.
//!
//! A line: `{"schema", "trace", "step", "actor" ("kit" | "node"), "action" (the model action, in the
//! model's story words), "sent" (hex of the frame the kit wrote, size prefix included), "received" (hex
//! of the frame payload the kit read), "expected" (the model's message or view), "observed" (the node's,
//! mapped to the model), "verdict" ("ok..." or "divergence (<kind>): ...")}`.

use std::collections::BTreeMap;
use std::io::Write;

use model::types::{Action, ChangeOp, Id, Msg};

pub const SCHEMA: &str = "kraft-kit-report/1";

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Line {
    pub schema: &'static str,
    pub trace: String,
    pub step: usize,
    pub actor: &'static str,
    pub action: String,
    pub sent: String,
    pub received: String,
    pub expected: String,
    pub observed: String,
    pub verdict: String,
}

impl Line {
    pub fn new(actor: &'static str, action: String) -> Line {
        Line {
            schema: SCHEMA,
            actor,
            action,
            ..Line::default()
        }
    }
    pub fn with_sent(mut self, sent: String) -> Line {
        self.sent = sent;
        self
    }
    pub fn verdict(mut self, v: String) -> Line {
        self.verdict = v;
        self
    }
}

/// Lines of every trace of a run, written as they come, plus coverage.
#[derive(Default)]
pub struct Report {
    pub trace: String,
    pub lines: Vec<Line>,
    pub out: Option<Box<dyn Write + Send>>,
    /// RPC (direction, name, error code) → count.
    pub coverage: BTreeMap<String, u64>,
    /// Model transitions taken (see [`transition_key`]) → count.
    pub transitions: BTreeMap<String, u64>,
    pub divergences: u64,
}

impl Report {
    pub fn push(&mut self, mut line: Line) {
        line.trace = self.trace.clone();
        line.step = self.lines.iter().filter(|l| l.trace == self.trace).count();
        if line.verdict.starts_with("divergence") {
            self.divergences += 1;
        }
        if let Some(out) = self.out.as_mut() {
            if let Ok(json) = serde_json::to_string(&line) {
                let _ = writeln!(out, "{json}");
            }
        }
        self.lines.push(line);
    }

    pub fn cover(&mut self, key: String) {
        *self.coverage.entry(key).or_default() += 1;
    }

    pub fn transition(&mut self, nut: Id, a: &Action) {
        *self.transitions.entry(transition_key(nut, a)).or_default() += 1;
    }
}

/// A model transition by kind, naming who acts (`node` = the node under test, `kit` = a played
/// replica) and, for deliveries, the message kind and its error code.
pub fn transition_key(nut: Id, a: &Action) -> String {
    let who = |i: Id| if i == nut { "node" } else { "kit" };
    match *a {
        Action::ElectionTimeout(i) => format!("ElectionTimeout at {}", who(i)),
        Action::FetchTimeout(i) => format!("FetchTimeout at {}", who(i)),
        Action::CheckQuorumTimeout(i) => format!("CheckQuorumTimeout at {}", who(i)),
        Action::ChangeTimeout(i) => format!("ChangeTimeout at {}", who(i)),
        Action::Resign(i) => format!("Resign at {}", who(i)),
        Action::Restart(i) => format!("Restart at {}", who(i)),
        Action::DiskLoss(i) => format!("DiskLoss at {}", who(i)),
        Action::ClientAppend(i) => format!("ClientAppend at {}", who(i)),
        Action::AutoJoin { replica, leader } => {
            format!("AutoJoin from {} to {}", who(replica), who(leader))
        }
        Action::Change { server, op } => {
            let op = match op {
                ChangeOp::Add(_) => "Add",
                ChangeOp::Remove(_) => "Remove",
                ChangeOp::Update(_) => "Update",
                ChangeOp::Swap { .. } => "Swap",
                ChangeOp::KraftVersionUpgrade => "KraftVersionUpgrade",
            };
            format!("Change {op} at {}", who(server))
        }
        Action::TakeSnapshot(i) => format!("TakeSnapshot at {}", who(i)),
        Action::AdvanceLogStart(i) => format!("AdvanceLogStart at {}", who(i)),
        Action::UpgradeKraftVersion(i) => format!("UpgradeKraftVersion at {}", who(i)),
        Action::FetchSnapshot { replica, leader } => {
            format!("FetchSnapshot by {} from {}", who(replica), who(leader))
        }
        Action::Fetch { replica, leader } => {
            format!("Fetch by {} from {}", who(replica), who(leader))
        }
        Action::Deliver(e) | Action::Drop(e) | Action::Duplicate(e) => {
            let verb = match a {
                Action::Drop(_) => "Drop",
                Action::Duplicate(_) => "Duplicate",
                _ => "Deliver",
            };
            let m = match e.msg {
                Msg::VoteRequest { .. } => "VoteRequest".to_string(),
                Msg::PreVoteRequest { .. } => "PreVoteRequest".to_string(),
                Msg::VoteResponse { granted, error, .. } => format!(
                    "VoteResponse {} {error:?}",
                    if granted { "granted" } else { "refused" }
                ),
                Msg::BeginQuorumEpoch { .. } => "BeginQuorumEpoch".to_string(),
                Msg::EndQuorumEpoch { .. } => "EndQuorumEpoch".to_string(),
                Msg::FetchRequest(_) => "FetchRequest".to_string(),
                Msg::FetchResponse(r) => format!(
                    "FetchResponse {:?}{}",
                    r.error,
                    if r.diverging.is_some() {
                        " diverging"
                    } else {
                        ""
                    }
                ),
            };
            format!("{verb} {m} {}→{}", who(e.src), who(e.dst))
        }
    }
}
