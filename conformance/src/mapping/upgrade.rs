//! The `kraft.version` upgrade (`--start static`): static voters from `controller.quorum.voters`,
//! the leader's volatile voter set, and the operator's UpdateFeatures as the model's
//! `UpgradeKraftVersion` (see the module doc of `mapping`).

use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use kafka_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use kafka_protocol::protocol::StrBytes;
use kraft::node::{errors, Bootstrap, Message, Node, NodeConfig};
use kraft::voter_set::{ReplicaKey, SupportedVersions, VoterNode, VoterSet};
use model::types::{ids, ChangeOp, Id, Mask, PendingChange};

use uuid::Uuid;

use super::{endpoint, id_of, key_dir, model_dir, small, voters_of};

/// The UpdateFeatures version the admin client sends (Kafka 4.x: 2, the node's highest).
pub const UPDATE_FEATURES_VERSION: i16 = 2;
/// Kafka's `UpdateFeaturesRequest` default timeout, as `kafka-features.sh` leaves it.
const UPDATE_FEATURES_TIMEOUT_MS: i32 = 60_000;
/// `FeatureUpdate.UpgradeType.UPGRADE` on the wire (v1+).
const UPGRADE_TYPE_UPGRADE: i8 = 1;
/// The model's one INVALID_UPDATE_VERSION reason (`UpgradeRefusal::VotersNotReported`) in Kafka's
/// words (`LeaderState.maybeAppendUpgradedKRaftVersion`).
const NOT_ALL_VOTERS: &str =
    "Invalid upgrade of kraft.version to 1 because not all of the voters support it";

/// The static voter of model server `i` (`controller.quorum.voters`: no directory id, its one
/// listener, the range [0, 0] until it reports).
fn static_node(i: Id) -> VoterNode {
    VoterNode {
        key: ReplicaKey::without_directory(i32::from(i)),
        listeners: vec![endpoint(i)],
        supported: SupportedVersions::STATIC,
    }
}

/// The static voter set of a mask, as `kraft node` reads `controller.quorum.voters`.
pub fn static_voter_set(mask: Mask) -> Result<VoterSet, String> {
    VoterSet::new(ids(mask).map(static_node)).map_err(|e| format!("static voters {mask:#b}: {e}"))
}

/// `config` started from static voters instead of the bootstrap checkpoint: a data directory
/// formatted at `kraft.version` 0 (no KRaftVersion record, no VotersRecord).
pub fn static_config(mut config: NodeConfig, bootstrap: Mask) -> Result<NodeConfig, String> {
    config.bootstrap = Bootstrap::Static(static_voter_set(bootstrap)?);
    Ok(config)
}

/// A voter set as the model's: the static set (no directory ids, the model's directory id 0) or,
/// with every key known, [`voters_of`]. Anything between (a voter set with some directory ids
/// missing) is no set the model has.
pub fn voters_in_force(set: &VoterSet) -> Result<model::types::VoterSet, String> {
    if set.keys().all(|k| k.directory_id.is_none()) {
        let mask = set.ids().try_fold(0 as Mask, |m, id| {
            id_of(id, "static voter id").map(|i| m | model::types::bit(i))
        })?;
        if *set == static_voter_set(mask)? {
            return Ok(model::types::VoterSet::of(mask));
        }
    }
    voters_of(set)
}

/// A leader's volatile voter set as the model's (`Server::volatile_voters`): the voters whose key is
/// known (reported with UpdateRaftVoter, or the leader itself); empty once the upgrade is appended.
pub fn volatile_of(node: &Node) -> Result<model::types::VoterSet, String> {
    let mut v = model::types::VoterSet::default();
    for n in node.volatile_voters().into_iter().flat_map(VoterSet::nodes) {
        if n.key.directory_id.is_none() {
            continue;
        }
        let i = id_of(n.key.id, "volatile voter id")?;
        if !matches!(n.listeners.as_slice(), [e] if *e == endpoint(i)) {
            return Err(format!(
                "volatile voter {i} has listeners {:?}",
                n.listeners
            ));
        }
        v = v.with(i, key_dir(&n.key, i, "volatile voter directory id")?);
    }
    Ok(v)
}

/// The leader's upgrade awaiting its commit as the model's pending change: the offset of the
/// batch's VotersRecord, the record after the KRaftVersion record.
pub fn pending_upgrade(node: &Node) -> Result<Option<PendingChange>, String> {
    node.upgrade_waiting_for()
        .map(|base| {
            Ok(PendingChange {
                op: ChangeOp::KraftVersionUpgrade,
                offset: small(base + 1, "upgrade VotersRecord offset")?,
            })
        })
        .transpose()
}

/// The model directory id of the voter key a Vote or BeginQuorumEpoch names: a static voter's key
/// (no directory id, nil on the wire) is the model's directory id 0; that it is named so only when the
/// sender's voter set holds it so is [`check_voter_key`]'s.
pub fn voter_key_dir(u: Uuid, i: Id, what: &str) -> Result<u8, String> {
    if u.is_nil() {
        return Ok(0);
    }
    model_dir(u, i, what)
}

/// A Vote or BeginQuorumEpoch names voter `dst` without a directory id only if the sender's latest
/// voter set holds it so (a static voter at `kraft.version` 0).
pub fn check_voter_key(msg: &Message, sender_latest: &VoterSet, dst: i32) -> Result<(), String> {
    let named = match msg {
        Message::VoteRequest(m) => m
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| p.voter_directory_id),
        Message::BeginQuorumEpochRequest(m) => m
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| p.voter_directory_id),
        _ => None,
    };
    let static_key = sender_latest
        .voter(dst)
        .is_some_and(|n| n.key.directory_id.is_none());
    match named {
        Some(u) if u.is_nil() && !static_key => Err(format!(
            "{:?} names voter {dst} without a directory id; the sender's voter set has one",
            msg.api_key()
        )),
        _ => Ok(()),
    }
}

/// The model's records carry no batches, but its upgrade is one: in every batch of `node`'s log a
/// KRaftVersion record is followed by a VotersRecord (the upgrade's batch, and the start-of-epoch
/// batch of a leader at `kraft.version` 1 with no voter set yet), so the two are appended, replicated
/// and truncated together.
pub fn check_upgrade_batches(node: &Node) -> Result<(), String> {
    use kraft::log::Record;
    for b in node.log().batches() {
        let mut records = b.records.iter();
        while let Some(r) = records.next() {
            if matches!(r, Record::KRaftVersion(_))
                && !matches!(records.clone().next(), Some(Record::Voters(_)))
            {
                return Err(format!(
                    "the batch at {} holds a KRaftVersion record without the VotersRecord after it",
                    b.base_offset
                ));
            }
        }
    }
    Ok(())
}

/// The operator's `kafka-features.sh upgrade --feature kraft.version=1` as the admin client sends it.
pub fn upgrade_request() -> UpdateFeaturesRequest {
    UpdateFeaturesRequest::default()
        .with_timeout_ms(UPDATE_FEATURES_TIMEOUT_MS)
        .with_feature_updates(vec![FeatureUpdateKey::default()
            .with_feature(StrBytes::from_static_str(
                kraft::node::KRAFT_VERSION_FEATURE,
            ))
            .with_max_version_level(1)
            .with_upgrade_type(UPGRADE_TYPE_UPGRADE)])
}

/// The answer's error code, once its reason is one the model has: NONE, NOT_CONTROLLER, or
/// INVALID_UPDATE_VERSION because a voter has not reported (any other reason is a divergence).
pub fn features_code(r: &UpdateFeaturesResponse) -> Result<i16, String> {
    let message = r.error_message.as_ref().map(|m| m.as_str());
    match (r.error_code, message) {
        (errors::NONE | errors::NOT_CONTROLLER, _) => Ok(r.error_code),
        (errors::INVALID_UPDATE_VERSION, Some(NOT_ALL_VOTERS)) => Ok(r.error_code),
        (code, m) => Err(format!(
            "UpdateFeatures answered {code} ({m:?}): no reason the model has"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_static_set_is_the_models_bootstrap_and_nothing_in_between() {
        let set = static_voter_set(0b111).unwrap();
        assert_eq!(
            voters_in_force(&set).unwrap(),
            model::types::VoterSet::of(0b111)
        );
        // One voter reported: a set with a directory id beside static entries is no model set.
        let mixed = set
            .update_voter_ignoring_directory(super::super::voter_node(1))
            .unwrap();
        assert!(voters_in_force(&mixed).is_err());
        let keyed = super::super::voter_set(0b111).unwrap();
        assert_eq!(
            voters_in_force(&keyed).unwrap(),
            model::types::VoterSet::of(0b111)
        );
    }

    #[test]
    fn only_the_models_refusal_reason_maps() {
        let answer = |code, m: Option<&'static str>| {
            UpdateFeaturesResponse::default()
                .with_error_code(code)
                .with_error_message(m.map(StrBytes::from_static_str))
        };
        assert_eq!(features_code(&answer(0, None)), Ok(0));
        let not_all = answer(errors::INVALID_UPDATE_VERSION, Some(NOT_ALL_VOTERS));
        assert_eq!(features_code(&not_all), Ok(errors::INVALID_UPDATE_VERSION));
        let other = answer(
            errors::INVALID_UPDATE_VERSION,
            Some("Invalid upgrade of kraft.version from version 0 to 1"),
        );
        assert!(features_code(&other).is_err());
    }
}
