//! The `kraft.version` upgrade from 0 (static voters, `controller.quorum.voters`) to 1 (KIP-853), as
//! Kafka 4.4 does it (`LeaderState.maybeAppendUpgradedKRaftVersion`, `KRaftVersionUpgrade`,
//! `FeatureControlManager.updateFeature`):
//!
//! 1. A leader at `kraft.version` 0 keeps a volatile voter set ([`Upgrade::Voters`]): the static set
//!    with its own entry filled in (directory id, listeners, supported range). Nothing of it is written.
//! 2. A follower that is a voter sends UpdateRaftVoter once per leader at `kraft.version` 0
//!    (`update_voter.rs`); the leader puts the reported entry, directory id included, in the volatile
//!    set (`membership.rs`, Kafka's `updateVoterIgnoringDirectoryId`). A new leader starts over.
//! 3. UpdateFeatures (API 57) for `kraft.version` = 1 is allowed once every voter's reported range
//!    contains 1 and every directory id is known. The leader then appends one control batch, a
//!    KRaftVersionRecord(1) and the volatile set as a VotersRecord, and answers once the HW passes it
//!    (Kafka answers when the controller's NoOpRecord behind it commits).
//!
//! Every rule is here; the shell only decodes the request and encodes the response.

use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use kafka_protocol::protocol::StrBytes;

use crate::log::Record;
use crate::voter_set::{SupportedVersions, VoterNode, VoterSet};

use super::messages::{error_message, errors};
use super::types::*;
use super::{Node, RoleState};

/// The feature this node finalizes.
pub const KRAFT_VERSION_FEATURE: &str = "kraft.version";

/// At most this many UpdateFeatures requests wait for one upgrade's commit; more are answered
/// REQUEST_TIMED_OUT (the wait list is bounded whatever clients send).
pub const MAX_FEATURE_WAITERS: usize = 64;

/// The leader's upgrade state (Kafka's `KRaftVersionUpgrade`); `None` on a non-leader and on a leader
/// that started at `kraft.version` 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Upgrade {
    /// `kraft.version` 0: the static set with every entry a voter has reported.
    Voters(VoterSet),
    /// The upgrade to this level is appended.
    Version(i16),
}

/// An UpdateFeatures request waiting for the HW to pass `offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FeatureWaiter {
    client: ClientId,
    version: i16,
    features: Vec<StrBytes>,
    offset: i64,
}

/// Kafka's `FeatureUpdate.UpgradeType` (v0's `AllowDowngrade` is a safe downgrade).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpgradeType {
    Upgrade,
    SafeDowngrade,
    UnsafeDowngrade,
    Unknown,
}

impl UpgradeType {
    fn of(version: i16, allow_downgrade: bool, code: i8) -> UpgradeType {
        match (version, code) {
            (0, _) if allow_downgrade => UpgradeType::SafeDowngrade,
            (0, _) => UpgradeType::Upgrade,
            (_, 1) => UpgradeType::Upgrade,
            (_, 2) => UpgradeType::SafeDowngrade,
            (_, 3) => UpgradeType::UnsafeDowngrade,
            _ => UpgradeType::Unknown,
        }
    }
}

/// Why an UpdateFeatures request is refused: INVALID_UPDATE_VERSION with Kafka's message, except
/// [`FeatureRefusal::NotController`] (NOT_CONTROLLER) and [`FeatureRefusal::Busy`] (REQUEST_TIMED_OUT).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeatureRefusal {
    NotController,
    Busy,
    /// `FeatureControlManager.updateFeature`'s reasons, each with the feature and level.
    InvalidUpdateVersion {
        feature: String,
        level: i16,
        reason: String,
    },
    /// `LeaderState.maybeAppendUpgradedKRaftVersion`'s `InvalidUpdateVersionException`s (the message is
    /// the exception's alone).
    Upgrade(String),
}

impl FeatureRefusal {
    pub fn error_code(&self) -> i16 {
        match self {
            FeatureRefusal::NotController => errors::NOT_CONTROLLER,
            FeatureRefusal::Busy => errors::REQUEST_TIMED_OUT,
            FeatureRefusal::InvalidUpdateVersion { .. } | FeatureRefusal::Upgrade(_) => {
                errors::INVALID_UPDATE_VERSION
            }
        }
    }

    pub fn message(&self) -> String {
        match self {
            FeatureRefusal::NotController | FeatureRefusal::Busy => {
                error_message(self.error_code()).unwrap_or("").to_string()
            }
            FeatureRefusal::InvalidUpdateVersion {
                feature,
                level,
                reason,
            } => format!("Invalid update version {level} for feature {feature}. {reason}"),
            FeatureRefusal::Upgrade(m) => m.clone(),
        }
    }
}

/// What an accepted `kraft.version` update does.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Accepted {
    /// Nothing to write (the level is already finalized or requested, or validate-only).
    Noop,
    /// Append this batch.
    Append(Vec<Record>),
}

impl Node {
    /// This node's own voter entry as configured (listeners, supported range, directory id).
    pub(super) fn local_voter_node(&self) -> VoterNode {
        VoterNode {
            key: self.local,
            listeners: self.config.listeners.clone(),
            supported: SupportedVersions::CURRENT,
        }
    }

    /// A new leader's upgrade state: at `kraft.version` 0 the volatile set starts as the static set with
    /// this leader's entry filled in (Kafka's `LeaderState` constructor).
    pub(super) fn start_upgrade_state(&mut self) {
        self.upgrade = (self.kraft_version() == 0).then(|| {
            let latest = self.history.latest();
            let voters = latest
                .update_voter_ignoring_directory(self.local_voter_node())
                .unwrap_or_else(|_| latest.clone());
            Upgrade::Voters(voters)
        });
    }

    /// Leaving the leader role: the volatile set is dropped and waiting UpdateFeatures requests are
    /// answered NOT_CONTROLLER (Kafka's controller fails its pending writes so when it resigns).
    pub(super) fn drop_upgrade_state(&mut self, out: &mut Output) {
        self.upgrade = None;
        for w in std::mem::take(&mut self.feature_waiters) {
            let resp =
                features_response(w.version, &w.features, Some(&FeatureRefusal::NotController));
            out.client_replies
                .push((w.client, ClientResponse::UpdateFeatures(resp)));
        }
    }

    /// The volatile voter set, while this leader is at `kraft.version` 0 and has not appended an upgrade.
    pub fn volatile_voters(&self) -> Option<&VoterSet> {
        match &self.upgrade {
            Some(Upgrade::Voters(v)) => Some(v),
            _ => None,
        }
    }

    /// Stores an UpdateRaftVoter accepted at `kraft.version` 0.
    pub(super) fn store_volatile_voters(&mut self, voters: VoterSet) {
        tracing::info!(node = self.local.id, voters = ?voters.keys().collect::<Vec<_>>(), "updated in-memory voters");
        self.upgrade = Some(Upgrade::Voters(voters));
    }

    /// UpdateFeatures (API 57) from an admin client: `kraft.version` is the only feature this node has.
    pub(super) fn on_update_features(
        &mut self,
        now: Millis,
        client: ClientId,
        version: i16,
        req: UpdateFeaturesRequest,
        out: &mut Output,
    ) {
        let features: Vec<StrBytes> = req
            .feature_updates
            .iter()
            .map(|u| u.feature.clone())
            .collect();
        let mut append = None;
        let mut refusal = None;
        for u in &req.feature_updates {
            let kind = UpgradeType::of(version, u.allow_downgrade, u.upgrade_type);
            match self.check_feature_update(u.feature.as_str(), u.max_version_level, kind) {
                Err(r) => {
                    refusal = Some(r);
                    break;
                }
                Ok(Accepted::Append(records)) if !req.validate_only => append = Some(records),
                Ok(_) => {}
            }
        }
        let reply = |out: &mut Output, r: Option<&FeatureRefusal>| {
            let resp = features_response(version, &features, r);
            out.client_replies
                .push((client, ClientResponse::UpdateFeatures(resp)));
        };
        if let Some(r) = refusal {
            tracing::info!(node = self.local.id, reason = %r.message(), "UpdateFeatures refused");
            return reply(out, Some(&r));
        }
        let wait_for = match append {
            Some(records) => match self.leader_append(now, records, out) {
                Ok(offset) => {
                    self.upgrade = Some(Upgrade::Version(1));
                    tracing::info!(
                        node = self.local.id,
                        offset,
                        "appended kraft.version 1 and the voter set"
                    );
                    Some(offset)
                }
                Err(e) => {
                    tracing::error!(node = self.local.id, error = %e, "kraft.version append failed");
                    let code = FeatureRefusal::Upgrade(format!(
                        "Unable to append {KRAFT_VERSION_FEATURE}: {e}"
                    ));
                    return reply(out, Some(&code));
                }
            },
            // A no-op waits for a requested upgrade that is not committed yet.
            None => self.uncommitted_upgrade_offset(),
        };
        match wait_for {
            None => reply(out, None),
            Some(_) if self.feature_waiters.len() >= MAX_FEATURE_WAITERS => {
                reply(out, Some(&FeatureRefusal::Busy))
            }
            Some(offset) => self.feature_waiters.push(FeatureWaiter {
                client,
                version,
                features,
                offset,
            }),
        }
    }

    /// The base offset of the upgrade batch the oldest waiting UpdateFeatures request waits for.
    pub fn upgrade_waiting_for(&self) -> Option<i64> {
        self.feature_waiters.iter().map(|w| w.offset).min()
    }

    /// The offset of this leader's latest KRaftVersionRecord while it is not below the HW.
    fn uncommitted_upgrade_offset(&self) -> Option<i64> {
        let (offset, _) = self.kraft_versions.last_entry()?;
        (self.high_watermark().is_none_or(|hw| offset >= hw)).then_some(offset)
    }

    /// The HW moved: UpdateFeatures requests whose records it passed are answered NONE.
    pub(super) fn on_features_hw(&mut self, hw: i64, out: &mut Output) {
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.feature_waiters)
            .into_iter()
            .partition(|w| hw > w.offset);
        self.feature_waiters = waiting;
        for w in done {
            let resp = features_response(w.version, &w.features, None);
            out.client_replies
                .push((w.client, ClientResponse::UpdateFeatures(resp)));
        }
    }

    /// One feature update, in `FeatureControlManager.updateFeature`'s order; for `kraft.version` the
    /// upgrade itself follows `LeaderState.maybeAppendUpgradedKRaftVersion`.
    fn check_feature_update(
        &self,
        feature: &str,
        level: i16,
        kind: UpgradeType,
    ) -> Result<Accepted, FeatureRefusal> {
        let invalid = |reason: String| FeatureRefusal::InvalidUpdateVersion {
            feature: feature.to_string(),
            level,
            reason,
        };
        // Kafka's controller is active once its raft leader has committed in its epoch.
        if !matches!(self.role, RoleState::Leader(_)) || self.high_watermark().is_none() {
            return Err(FeatureRefusal::NotController);
        }
        if kind == UpgradeType::Unknown {
            return Err(invalid(
                "The controller does not support the given upgrade type.".into(),
            ));
        }
        if level < 0 {
            return Err(invalid("A feature version cannot be less than 0.".into()));
        }
        let local = format!("Local controller {}", self.local.id);
        if feature != KRAFT_VERSION_FEATURE {
            return Err(invalid(format!("{local} does not support this feature.")));
        }
        let supported = SupportedVersions::CURRENT;
        if !supported.contains(level) {
            return Err(invalid(format!(
                "{local} only supports versions {}-{}",
                supported.min, supported.max
            )));
        }
        let current = self.kraft_version();
        if level < current && kind == UpgradeType::Upgrade {
            return Err(invalid(
                "Can't downgrade the version of this feature without setting the upgrade type to \
                 either safe or unsafe downgrade."
                    .into(),
            ));
        }
        if level > current && kind != UpgradeType::Upgrade {
            return Err(invalid("Can't downgrade to a newer version.".into()));
        }
        if kind != UpgradeType::Upgrade {
            return if level == current {
                Ok(Accepted::Noop)
            } else {
                Err(invalid(
                    "Can't downgrade the version of this feature.".into(),
                ))
            };
        }
        self.check_kraft_upgrade(level, current)
    }

    /// Kafka's `maybeAppendUpgradedKRaftVersion` for `level` over the finalized `current`.
    fn check_kraft_upgrade(&self, level: i16, current: i16) -> Result<Accepted, FeatureRefusal> {
        let name = KRAFT_VERSION_FEATURE;
        if let Some(Upgrade::Version(pending)) = &self.upgrade {
            return if *pending == level {
                Ok(Accepted::Noop)
            } else {
                Err(FeatureRefusal::Upgrade(format!(
                    "Invalid concurrent upgrade of {name} from version {pending} to {level}"
                )))
            };
        }
        if current == level {
            return Ok(Accepted::Noop);
        }
        let Some(voters) = self.volatile_voters() else {
            return Err(FeatureRefusal::Upgrade(format!(
                "Invalid upgrade of {name} from version {current} to {level}"
            )));
        };
        if !voters.supports_version(level) {
            tracing::info!(node = self.local.id, level, voters = ?voters.nodes().collect::<Vec<_>>(), "not all voters support the kraft.version");
            return Err(FeatureRefusal::Upgrade(format!(
                "Invalid upgrade of {name} to {level} because not all of the voters support it"
            )));
        }
        if !voters.directories_known() {
            // Kafka throws IllegalStateException here; unreachable while an entry without a directory
            // id is a static one, whose range [0, 0] fails the check above.
            return Err(FeatureRefusal::Upgrade(format!(
                "Directory id must be known for all of the voters: {:?}",
                voters.keys().collect::<Vec<_>>()
            )));
        }
        let mut records = vec![Record::KRaftVersion(level)];
        if voters != self.history.latest() {
            records.push(Record::Voters(voters.clone()));
        }
        Ok(Accepted::Append(records))
    }
}

/// Kafka's `UpdateFeaturesResponse.createWithErrors`: the top-level error and, below v2, one result per
/// requested feature carrying the same error.
pub fn features_response(
    version: i16,
    features: &[StrBytes],
    refusal: Option<&FeatureRefusal>,
) -> UpdateFeaturesResponse {
    let (code, message) = match refusal {
        None => (errors::NONE, None),
        Some(r) => (r.error_code(), Some(StrBytes::from_string(r.message()))),
    };
    let results = if version < 2 {
        features
            .iter()
            .map(|f| {
                UpdatableFeatureResult::default()
                    .with_feature(f.clone())
                    .with_error_code(code)
                    .with_error_message(message.clone())
            })
            .collect()
    } else {
        Vec::new()
    };
    UpdateFeaturesResponse::default()
        .with_error_code(code)
        .with_error_message(message)
        .with_results(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upgrade_type_by_request_version() {
        assert_eq!(UpgradeType::of(0, false, 0), UpgradeType::Upgrade);
        assert_eq!(UpgradeType::of(0, true, 0), UpgradeType::SafeDowngrade);
        assert_eq!(UpgradeType::of(1, true, 1), UpgradeType::Upgrade);
        assert_eq!(UpgradeType::of(2, false, 2), UpgradeType::SafeDowngrade);
        assert_eq!(UpgradeType::of(2, false, 3), UpgradeType::UnsafeDowngrade);
        assert_eq!(UpgradeType::of(1, false, 0), UpgradeType::Unknown);
        assert_eq!(UpgradeType::of(2, false, -1), UpgradeType::Unknown);
    }

    #[test]
    fn refusals_carry_kafkas_codes_and_messages() {
        let r = FeatureRefusal::InvalidUpdateVersion {
            feature: "kraft.version".into(),
            level: 2,
            reason: "Local controller 1 only supports versions 0-1".into(),
        };
        assert_eq!(r.error_code(), errors::INVALID_UPDATE_VERSION);
        assert_eq!(
            r.message(),
            "Invalid update version 2 for feature kraft.version. Local controller 1 only supports versions 0-1"
        );
        assert_eq!(
            FeatureRefusal::NotController.error_code(),
            errors::NOT_CONTROLLER
        );
        assert_eq!(FeatureRefusal::Busy.error_code(), errors::REQUEST_TIMED_OUT);
        assert_eq!(FeatureRefusal::Upgrade("x".into()).message(), "x");
    }

    #[test]
    fn responses_list_results_below_v2_only() {
        let names = [StrBytes::from_static_str("kraft.version")];
        for v in 0..=1 {
            let ok = features_response(v, &names, None);
            assert_eq!(
                (ok.error_code, ok.error_message.clone()),
                (errors::NONE, None)
            );
            assert_eq!(ok.results.len(), 1);
            assert_eq!(ok.results[0].error_code, errors::NONE);
        }
        let refused = features_response(2, &names, Some(&FeatureRefusal::NotController));
        assert_eq!(refused.error_code, errors::NOT_CONTROLLER);
        assert!(refused.error_message.is_some() && refused.results.is_empty());
    }
}
