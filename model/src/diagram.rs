//! A path as an SVG sequence diagram (the Explorer's `as_svg`): one lane per server, one row per
//! step; a delivered message is an arrow from sender to receiver, a sync fetch a request arrow and a
//! dashed response arrow, a local step (timer, crash, operator request) a note on its lane. After each
//! step the lanes whose role or epoch changed are labelled with the new `Role@epoch`.

use crate::types::{Action, ChangeOp, Msg, Role, State};
use std::fmt::Write;

const LANE: usize = 170;
const LEFT: usize = 90;
const ROW: usize = 46;
const TOP: usize = 50;

fn x(i: u8) -> usize {
    LEFT + LANE * i as usize
}

/// Short message label for an arrow.
fn msg_label(m: &Msg) -> String {
    match m {
        Msg::VoteRequest { epoch, .. } => format!("Vote e{epoch}"),
        Msg::PreVoteRequest { epoch, .. } => format!("PreVote e{epoch}"),
        Msg::VoteResponse { epoch, granted, .. } => {
            format!("VoteResp e{epoch} {}", if *granted { "yes" } else { "no" })
        }
        Msg::BeginQuorumEpoch { epoch, .. } => format!("BeginQuorumEpoch e{epoch}"),
        Msg::EndQuorumEpoch { epoch } => format!("EndQuorumEpoch e{epoch}"),
        Msg::FetchRequest(k) => format!("Fetch @{} e{}", k.fetch_offset, k.epoch),
        Msg::FetchResponse(r) => format!(
            "FetchResp {:?} hw {}",
            r.error,
            r.high_watermark.map_or(-1, i64::from)
        ),
    }
}

/// Label for a local step, with the lane it belongs to.
fn local_label(a: &Action) -> Option<(u8, String)> {
    Some(match a {
        Action::ElectionTimeout(i) => (*i, "election timeout".into()),
        Action::FetchTimeout(i) => (*i, "fetch timeout".into()),
        Action::CheckQuorumTimeout(i) => (*i, "check-quorum expiry".into()),
        Action::ChangeTimeout(i) => (*i, "change times out".into()),
        Action::Resign(i) => (*i, "resigns (removed)".into()),
        Action::Restart(i) => (*i, "crash + restart".into()),
        Action::DiskLoss(i) => (*i, "disk lost".into()),
        Action::ClientAppend(i) => (*i, "client append".into()),
        Action::AutoJoin { replica, leader } => (*replica, format!("auto-join via {leader}")),
        Action::Change { server, op } => (
            *server,
            match op {
                ChangeOp::Add(j) => format!("AddVoter({j})"),
                ChangeOp::Remove(j) => format!("RemoveVoter({j})"),
                ChangeOp::Update(j) => format!("UpdateVoter({j})"),
                ChangeOp::Swap { out, add } => format!("Swap(-{out} +{add})"),
                ChangeOp::KraftVersionUpgrade => "UpdateFeatures(kraft.version=1)".into(),
            },
        ),
        Action::UpgradeKraftVersion(i) => (*i, "UpdateFeatures(kraft.version=1)".into()),
        Action::TakeSnapshot(i) => (*i, "takes snapshot".into()),
        Action::AdvanceLogStart(i) => (*i, "log start → snapshot".into()),
        Action::Fetch { .. }
        | Action::FetchSnapshot { .. }
        | Action::Deliver(_)
        | Action::Drop(_)
        | Action::Duplicate(_) => return None,
    })
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn arrow(out: &mut String, from: u8, to: u8, y: usize, label: &str, dashed: bool) {
    let (x1, x2) = (x(from), x(to));
    let dash = if dashed {
        " stroke-dasharray=\"5,3\""
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "<line x1=\"{x1}\" y1=\"{y}\" x2=\"{x2}\" y2=\"{y}\" stroke=\"#1f4e8c\"{dash} marker-end=\"url(#arrow)\"/>"
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"msg\">{}</text>",
        (x1 + x2) / 2,
        y - 4,
        esc(label)
    );
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Unattached => "Unattached",
        Role::Follower => "Follower",
        Role::Candidate => "Candidate",
        Role::Prospective => "Prospective",
        Role::Leader => "Leader",
        Role::Resigned => "Resigned",
    }
}

/// The diagram of `steps` (each state with the action taken from it; the last has none).
pub fn svg(steps: &[(State, Option<Action>)]) -> String {
    let n = steps.first().map_or(0, |(s, _)| s.servers.len()) as u8;
    let rows = steps.len();
    let width = LEFT + LANE * n as usize;
    let height = TOP + ROW * (rows + 1);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"11\">"
    );
    out.push_str(
        "<style>.msg{fill:#1f4e8c}.note{fill:#6b3d00}.role{fill:#2d6a2d;font-weight:bold}\
         .step{fill:#888}</style>\n<defs><marker id=\"arrow\" markerWidth=\"8\" markerHeight=\"8\" \
         refX=\"8\" refY=\"4\" orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#1f4e8c\"/>\
         </marker></defs>\n",
    );
    // Its own white background: the Explorer's page is dark, and the colours above are for paper.
    let _ = writeln!(
        out,
        "<rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#ffffff\"/>"
    );
    for i in 0..n {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-weight=\"bold\">server {i}</text>\
             <line x1=\"{0}\" y1=\"24\" x2=\"{0}\" y2=\"{height}\" stroke=\"#bbb\"/>",
            x(i)
        );
    }
    let label_roles = |out: &mut String, prev: Option<&State>, cur: &State, y: usize| {
        for (i, v) in cur.servers.iter().enumerate() {
            let changed = prev.is_none_or(|p| {
                let o = &p.servers[i];
                o.role != v.role || o.epoch != v.epoch
            });
            if changed {
                let _ = writeln!(
                    out,
                    "<text x=\"{}\" y=\"{y}\" text-anchor=\"start\" class=\"role\">{}@{}</text>",
                    x(i as u8) + 4,
                    role_name(v.role),
                    v.epoch
                );
            }
        }
    };
    if let Some((init, _)) = steps.first() {
        label_roles(&mut out, None, init, TOP - 8);
    }
    for (k, w) in steps.windows(2).enumerate() {
        let (before, after) = (&w[0].0, &w[1].0);
        let Some(a) = &w[0].1 else { continue };
        let y = TOP + ROW * (k + 1) - 14;
        let _ = writeln!(
            out,
            "<text x=\"6\" y=\"{y}\" class=\"step\">{}.</text>",
            k + 1
        );
        match a {
            Action::Deliver(e) => arrow(&mut out, e.src, e.dst, y, &msg_label(&e.msg), false),
            Action::Drop(e) => arrow(
                &mut out,
                e.src,
                e.dst,
                y,
                &format!("lost: {}", msg_label(&e.msg)),
                true,
            ),
            Action::Fetch { replica, leader } => {
                arrow(&mut out, *replica, *leader, y - 8, "Fetch", false);
                let hw = after.servers[*replica as usize].hw;
                arrow(
                    &mut out,
                    *leader,
                    *replica,
                    y + 8,
                    &match after.servers[*replica as usize].fetching_snapshot {
                        Some(id) => format!("snapshot {}@{}", id.end, id.epoch),
                        None => format!("records, hw {}", hw.map_or(-1, i64::from)),
                    },
                    true,
                );
            }
            Action::FetchSnapshot { replica, leader } => {
                arrow(&mut out, *replica, *leader, y - 8, "FetchSnapshot", false);
                let log = &after.servers[*replica as usize].log;
                arrow(
                    &mut out,
                    *leader,
                    *replica,
                    y + 8,
                    &format!("install: log start {}", log.start()),
                    true,
                );
            }
            other => {
                if let Some((i, label)) = local_label(other) {
                    let _ = writeln!(
                        out,
                        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"16\" fill=\"#fff4e0\" stroke=\"#6b3d00\"/>\
                         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"note\">{}</text>",
                        x(i) - 62,
                        y - 12,
                        124,
                        x(i),
                        y,
                        esc(&label)
                    );
                }
            }
        }
        label_roles(&mut out, Some(before), after, y + 22);
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelConfig;
    use crate::step::KraftModel;

    #[test]
    fn a_path_draws_lanes_arrows_and_notes() {
        let m = KraftModel::new(ModelConfig::default()).unwrap();
        let s0 = m.initial_state();
        let a = Action::FetchTimeout(1);
        let s1 = m.step(&s0, a).unwrap().state;
        let env = s1.network[0];
        let s2 = m.step(&s1, Action::Deliver(env)).unwrap().state;
        let svg = svg(&[(s0, Some(a)), (s1, Some(Action::Deliver(env))), (s2, None)]);
        assert!(svg.starts_with("<svg"));
        assert_eq!(svg.matches("server ").count(), 4);
        assert!(svg.contains("fetch timeout"));
        assert!(svg.contains("PreVote e1"));
        assert!(svg.contains("Prospective@1"));
    }
}
