//! The `model` binary's bounds flags (shared by every subcommand) and the `explore` command line that
//! serves the model a check ran.

use clap::{Args, ValueEnum};
use model::config::{Bug, FetchMode, HwRule, ModelConfig, NetworkKind, Start};
use model::trace;

/// Bounds and knobs shared by every subcommand; unset values come from the subcommand's defaults.
#[derive(Args, Clone, Default)]
pub(crate) struct Bounds {
    /// Initial voters (the bootstrap set).
    #[arg(long)]
    pub(crate) voters: Option<u8>,
    /// Joiners (observers that may be added).
    #[arg(long)]
    pub(crate) joiners: Option<u8>,
    /// Highest epoch.
    #[arg(long)]
    pub(crate) max_epoch: Option<u8>,
    /// Longest log.
    #[arg(long)]
    pub(crate) max_log: Option<u8>,
    /// Most client appends.
    #[arg(long)]
    pub(crate) max_data: Option<u8>,
    /// Most membership changes.
    #[arg(long)]
    pub(crate) max_changes: Option<u8>,
    /// Most crash-restarts.
    #[arg(long)]
    pub(crate) crashes: Option<u8>,
    /// Most snapshots taken (0 = no snapshots, log start 0 throughout; needs --fetch sync).
    #[arg(long)]
    pub(crate) max_snapshots: Option<u8>,
    /// Most disk losses (a server restarts empty with a new directory id; at most 3).
    #[arg(long)]
    pub(crate) disk_losses: Option<u8>,
    /// Most messages in flight.
    #[arg(long)]
    pub(crate) max_in_flight: Option<u8>,
    /// Network semantics.
    #[arg(long, value_enum)]
    pub(crate) network: Option<NetworkKind>,
    /// Fetch granularity.
    #[arg(long, value_enum)]
    pub(crate) fetch: Option<FetchMode>,
    /// Initial state.
    #[arg(long, value_enum)]
    pub(crate) start: Option<Start>,
    /// HW rule (negative controls).
    #[arg(long, value_enum)]
    pub(crate) hw_rule: Option<HwRule>,
    /// Enable a bug variant.
    #[arg(long, value_enum)]
    pub(crate) bug: Option<Bug>,
    /// Check-quorum resignation of leaders (default: on).
    #[arg(long)]
    pub(crate) check_quorum: Option<bool>,
    /// KIP-996 pre-vote (default: on; `traces` follows the implementation, which has it too).
    #[arg(long)]
    pub(crate) pre_vote: Option<bool>,
    /// UpdateRaftVoter requests from voters (endpoint changes), each one of --max-changes
    /// (default: off).
    #[arg(long)]
    pub(crate) updates: Option<bool>,
    /// KIP-1186 auto-join on the joiners and the replicas that lost a disk: remove the stale key of
    /// the id, then add the own key, acknowledged at append (default: off).
    #[arg(long)]
    pub(crate) auto_join: Option<bool>,
    /// Most messages duplicated in a run (retried requests; needs a non-duplicating network).
    #[arg(long)]
    pub(crate) duplicates: Option<u8>,
}

impl Bounds {
    pub(crate) fn apply(&self, base: ModelConfig) -> ModelConfig {
        ModelConfig {
            voters: self.voters.unwrap_or(base.voters),
            joiners: self.joiners.unwrap_or(base.joiners),
            max_epoch: self.max_epoch.unwrap_or(base.max_epoch),
            max_log: self.max_log.unwrap_or(base.max_log),
            max_data: self.max_data.unwrap_or(base.max_data),
            max_changes: self.max_changes.unwrap_or(base.max_changes),
            max_crashes: self.crashes.unwrap_or(base.max_crashes),
            max_snapshots: self.max_snapshots.unwrap_or(base.max_snapshots),
            max_disk_losses: self.disk_losses.unwrap_or(base.max_disk_losses),
            max_in_flight: self.max_in_flight.unwrap_or(base.max_in_flight),
            network: self.network.unwrap_or(base.network),
            fetch: self.fetch.unwrap_or(base.fetch),
            start: self.start.unwrap_or(base.start),
            hw_rule: self.hw_rule.unwrap_or(base.hw_rule),
            bug: self.bug.or(base.bug),
            check_quorum: self.check_quorum.unwrap_or(base.check_quorum),
            pre_vote: self.pre_vote.unwrap_or(base.pre_vote),
            updates: self.updates.unwrap_or(base.updates),
            auto_join: self.auto_join.unwrap_or(base.auto_join),
            max_duplicates: self.duplicates.unwrap_or(base.max_duplicates),
            ..base
        }
    }
}

/// The Explorer's model: trace settings from a fresh start, or (`--as-check`) `check`'s settings.
/// `check`'s bounds all start from `ModelConfig::default()` and differ from it only in flags that
/// `explore_command` spells out, so the same flags give the same model.
pub(crate) fn explore_config(as_check: bool, bounds: &Bounds) -> ModelConfig {
    let base = if as_check {
        ModelConfig::default()
    } else {
        ModelConfig {
            pre_vote: ModelConfig::default().pre_vote,
            ..trace::trace_config(ModelConfig {
                start: Start::Fresh,
                ..ModelConfig::default()
            })
        }
    };
    bounds.apply(base)
}

/// The `explore` command that serves the model a check ran, every bound spelled out.
pub(crate) fn explore_command(cfg: &ModelConfig) -> String {
    fn name<T: ValueEnum>(v: T) -> String {
        v.to_possible_value()
            .map_or_else(String::new, |p| p.get_name().to_string())
    }
    let mut cmd = format!(
        "model explore --as-check --voters {} --joiners {} --max-epoch {} --max-log {} \
         --max-data {} --max-changes {} --crashes {} --max-snapshots {} --max-in-flight {} \
         --network {} --fetch {} \
         --start {} --hw-rule {} --check-quorum {} --pre-vote {}",
        cfg.voters,
        cfg.joiners,
        cfg.max_epoch,
        cfg.max_log,
        cfg.max_data,
        cfg.max_changes,
        cfg.max_crashes,
        cfg.max_snapshots,
        cfg.max_in_flight,
        name(cfg.network),
        name(cfg.fetch),
        name(cfg.start),
        name(cfg.hw_rule),
        cfg.check_quorum,
        cfg.pre_vote,
    );
    if let Some(bug) = cfg.bug {
        cmd += &format!(" --bug {}", name(bug));
    }
    if cfg.updates {
        cmd += " --updates true";
    }
    if cfg.max_disk_losses > 0 {
        cmd += &format!(" --disk-losses {}", cfg.max_disk_losses);
    }
    if cfg.auto_join {
        cmd += " --auto-join true";
    }
    if cfg.max_duplicates > 0 {
        cmd += &format!(" --duplicates {}", cfg.max_duplicates);
    }
    cmd
}
