//! Human-readable rendering of actions, states and counterexamples.

use crate::config::ModelConfig;
use crate::spec::{committed_voters, latest_voters};
use crate::types::{
    ids, Action, ChangeOp, Entry, Envelope, ErrorCode, Kind, Log, Mask, Msg, Reply, Snapshot, State,
};
use std::fmt::Write;

/// `{0,1,2}`.
pub fn set(m: Mask) -> String {
    let v: Vec<String> = ids(m).map(|i| i.to_string()).collect();
    format!("{{{}}}", v.join(","))
}

/// `{0,1',2}`: a voter set with each voter's directory id as primes (`1'` = server 1 after one
/// disk loss); `2?` is voter 2 with no directory id.
pub fn voters(v: crate::types::VoterSet) -> String {
    let keys: Vec<String> = ids(v.ids())
        .map(|i| match v.unknown_dirs() & crate::types::bit(i) {
            0 => format!("{i}{}", "'".repeat(v.dir(i).unwrap_or(0) as usize)),
            _ => format!("{i}?"),
        })
        .collect();
    format!("{{{}}}", keys.join(","))
}

/// `[LC@1 KV@1 V{0,1,2}@1 D@2]`; a log that starts at a snapshot begins with it:
/// `[snapshot 4@2 {0,1,2} | D@2]` (end offset @ epoch, voter set).
pub fn log(l: &Log) -> String {
    let base = l.base().map_or(String::new(), |b| {
        format!(
            "snapshot {} |{}",
            snapshot(&b),
            if l.is_empty() { "" } else { " " }
        )
    });
    format!("[{base}{}]", entries(l.as_slice()))
}

/// `LC@1 KV@1 V{0,1,2}@1 D@2`: log entries, kind @ epoch.
pub fn entries(es: &[Entry]) -> String {
    let v: Vec<String> = es
        .iter()
        .map(|e| {
            let k = match e.kind {
                Kind::Data => "D".to_string(),
                Kind::LeaderChange => "LC".to_string(),
                Kind::KRaftVersion => "KV".to_string(),
                Kind::Voters(m) => format!("V{}", voters(m)),
            };
            format!("{k}@{}", e.epoch)
        })
        .collect();
    v.join(" ")
}

/// `4@2 {0,1,2}`: a snapshot's end offset, epoch and voter set.
pub fn snapshot(s: &Snapshot) -> String {
    format!("{}@{} {}", s.id.end, s.id.epoch, voters(s.voters))
}

fn op(o: &ChangeOp) -> String {
    match o {
        ChangeOp::Add(j) => format!("AddVoter({j})"),
        ChangeOp::Remove(j) => format!("RemoveVoter({j})"),
        ChangeOp::Update(j) => format!("UpdateVoter({j})"),
        ChangeOp::Swap { out, add } => format!("SwapVoter(-{out} +{add})"),
        ChangeOp::KraftVersionUpgrade => "UpdateFeatures(kraft.version=1)".into(),
    }
}

/// `, voter 1'`: the voter key a request names, shown once a directory id is not 0.
fn key(id: crate::types::Id, dir: u8) -> String {
    if dir == 0 {
        String::new()
    } else if dir == crate::types::NO_DIR {
        format!(", voter {id} with no directory id")
    } else {
        format!(", voter {id}{}", "'".repeat(dir as usize))
    }
}

fn envelope(e: &Envelope) -> String {
    let body = match &e.msg {
        Msg::VoteRequest {
            epoch,
            voter_dir,
            last_epoch,
            last_offset,
        } => {
            format!(
                "VoteRequest(epoch {epoch}, last epoch {last_epoch}, LEO {last_offset}{})",
                key(e.dst, *voter_dir)
            )
        }
        Msg::PreVoteRequest {
            epoch,
            voter_dir,
            last_epoch,
            last_offset,
        } => {
            format!(
                "PreVoteRequest(epoch {epoch}, last epoch {last_epoch}, LEO {last_offset}{})",
                key(e.dst, *voter_dir)
            )
        }
        Msg::VoteResponse {
            epoch,
            granted,
            error,
            leader,
        } => {
            let error = match error {
                ErrorCode::None => String::new(),
                e => format!(", {}", error_name(*e)),
            };
            format!(
                "VoteResponse(epoch {epoch}, {}{error}, leader {})",
                if *granted { "granted" } else { "refused" },
                leader.map_or("-".to_string(), |l| l.to_string())
            )
        }
        Msg::BeginQuorumEpoch { epoch, voter_dir } => {
            format!("BeginQuorumEpoch(epoch {epoch}{})", key(e.dst, *voter_dir))
        }
        Msg::EndQuorumEpoch { epoch } => format!("EndQuorumEpoch(epoch {epoch})"),
        Msg::FetchRequest(k) => format!(
            "FetchRequest(epoch {}, offset {}, last fetched epoch {})",
            k.epoch, k.fetch_offset, k.last_fetched_epoch
        ),
        Msg::FetchResponse(r) => format!(
            "FetchResponse({}, leader {}@{}, hw {}, diverging {}, {})",
            error_name(r.error),
            r.leader_id.map_or("-".to_string(), |l| l.to_string()),
            r.leader_epoch,
            r.high_watermark.map_or(-1, i64::from),
            r.diverging
                .map_or("-".to_string(), |(e, o)| format!("epoch {e} end {o}")),
            match r.snapshot_id {
                Some(id) => format!("snapshot id {}@{}", id.end, id.epoch),
                None => format!("records {}", log(&r.records)),
            }
        ),
    };
    format!("{} -> {}: {body}", e.src, e.dst)
}

/// Kafka's name of an error code.
fn error_name(e: ErrorCode) -> &'static str {
    match e {
        ErrorCode::None => "NONE",
        ErrorCode::NotLeaderOrFollower => "NOT_LEADER_OR_FOLLOWER",
        ErrorCode::RequestTimedOut => "REQUEST_TIMED_OUT",
        ErrorCode::UnsupportedVersion => "UNSUPPORTED_VERSION",
        ErrorCode::FencedLeaderEpoch => "FENCED_LEADER_EPOCH",
        ErrorCode::UnknownLeaderEpoch => "UNKNOWN_LEADER_EPOCH",
        ErrorCode::DuplicateVoter => "DUPLICATE_VOTER",
        ErrorCode::VoterNotFound => "VOTER_NOT_FOUND",
        ErrorCode::InvalidVoterKey => "INVALID_VOTER_KEY",
        ErrorCode::NotController => "NOT_CONTROLLER",
        ErrorCode::InvalidUpdateVersion => "INVALID_UPDATE_VERSION",
    }
}

/// One action in words.
pub fn action(a: &Action) -> String {
    match a {
        Action::ElectionTimeout(i) => format!("server {i}: election timeout"),
        Action::FetchTimeout(i) => format!("server {i}: fetch timeout"),
        Action::CheckQuorumTimeout(i) => format!("server {i}: check-quorum expiry (resign)"),
        Action::ChangeTimeout(i) => format!("server {i}: pending change times out"),
        Action::Resign(i) => format!("server {i}: resigns (its removal is committed)"),
        Action::Restart(i) => format!("server {i}: crash and restart"),
        Action::DiskLoss(i) => {
            format!("server {i}: disk replaced, restarts empty with a new directory id")
        }
        Action::ClientAppend(i) => format!("server {i}: client append"),
        Action::AutoJoin { replica, leader } => {
            format!("server {replica}: auto-join request to {leader}")
        }
        Action::Change { server, op: o } => format!("server {server}: operator {}", op(o)),
        Action::UpgradeKraftVersion(i) => {
            format!("server {i}: operator UpdateFeatures(kraft.version=1)")
        }
        Action::Fetch { replica, leader } => format!("server {replica}: fetch from {leader}"),
        Action::Deliver(e) => format!("deliver {}", envelope(e)),
        Action::Drop(e) => format!("drop {}", envelope(e)),
        Action::Duplicate(e) => format!("duplicate {} (a retry)", envelope(e)),
        Action::TakeSnapshot(i) => format!("server {i}: takes a snapshot"),
        Action::AdvanceLogStart(i) => format!("server {i}: log start moves to its snapshot"),
        Action::FetchSnapshot { replica, leader } => {
            format!("server {replica}: FetchSnapshot from {leader} (install)")
        }
    }
}

/// A reply in words.
pub fn reply(r: &Reply) -> String {
    format!(
        "server {} answers {} with {}",
        r.server,
        op(&r.op),
        error_name(r.error)
    )
}

/// Every server's role, epoch, log, HW, latest and committed voter sets, then the network.
pub fn state(cfg: &ModelConfig, s: &State) -> String {
    state_with(cfg.bootstrap(), s)
}

/// [`state`] with the bootstrap voter set given directly (the state carries it).
pub fn state_with(bootstrap: Mask, s: &State) -> String {
    let mut out = String::new();
    for (i, v) in s.servers.iter().enumerate() {
        let latest = latest_voters(bootstrap, &v.log);
        let committed = committed_voters(bootstrap, &v.log, v.hw).map_or("-".into(), voters);
        let snap = match (v.snapshot, v.fetching_snapshot) {
            (None, None) => String::new(),
            (s, f) => format!(
                "{}{}",
                s.map_or(String::new(), |s| format!(" snapshot {}", snapshot(&s))),
                f.map_or(String::new(), |f| format!(
                    " fetching snapshot {}@{}",
                    f.end, f.epoch
                ))
            ),
        };
        // The leader's volatile voter set at kraft.version 0 (`--start static`).
        let snap = if v.volatile_voters.is_empty() {
            snap
        } else {
            format!("{snap} volatile {}", voters(v.volatile_voters))
        };
        let _ = writeln!(
            out,
            "    {i}{}: {:?}{} epoch {} vote {} hw {} log {} latest {} committed {}{}{}{snap}",
            "'".repeat(v.dir as usize),
            v.role,
            v.leader.map_or(String::new(), |l| format!("(leader {l})")),
            v.epoch,
            v.voted_for.map_or("-".into(), |c| c.to_string()),
            v.hw.map_or(-1, i64::from),
            log(&v.log),
            voters(latest),
            committed,
            v.pending.map_or(String::new(), |p| format!(
                " pending {}@{}",
                op(&p.op),
                p.offset
            )),
            match v.role {
                crate::types::Role::Prospective => format!(" pre-votes {}", set(v.pre_votes)),
                crate::types::Role::Candidate => format!(" votes {}", set(v.votes)),
                crate::types::Role::Follower if v.fetched => " (fetched)".into(),
                _ => String::new(),
            },
        );
    }
    for e in &s.network {
        let _ = writeln!(out, "    in flight: {}", envelope(e));
    }
    out
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&state_with(self.bootstrap, self))
    }
}

/// A numbered story: the initial state, then each action with the state after it.
pub fn path(cfg: &ModelConfig, steps: &[(State, Option<Action>)]) -> String {
    let mut out = String::new();
    if let Some((init, _)) = steps.first() {
        let _ = writeln!(out, "  0. initial state");
        out.push_str(&state(cfg, init));
    }
    for (k, w) in steps.windows(2).enumerate() {
        if let Some(a) = &w[0].1 {
            let _ = writeln!(out, "  {}. {}", k + 1, action(a));
            out.push_str(&state(cfg, &w[1].0));
        }
    }
    out
}
