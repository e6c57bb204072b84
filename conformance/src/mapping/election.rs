//! Elections: Vote, BeginQuorumEpoch and EndQuorumEpoch as model messages.

use kafka_protocol::messages::{
    BeginQuorumEpochRequest, EndQuorumEpochRequest, VoteRequest, VoteResponse,
};
use model::types::{ErrorCode, Id, Msg};

use super::upgrade::voter_key_dir;
use super::{error_code, id_of, small};

pub(super) fn code(top: i16, partition: Option<i16>) -> Result<ErrorCode, String> {
    let c = if top != 0 {
        top
    } else {
        partition.unwrap_or(0)
    };
    error_code(c).ok_or_else(|| format!("error code {c} has no model counterpart"))
}

pub(super) fn vote_request(m: &VoteRequest) -> Result<Msg, String> {
    let p = m
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("VoteRequest without a partition")?;
    let epoch = small(p.replica_epoch, "VoteRequest epoch")?;
    let last_epoch = small(p.last_offset_epoch, "VoteRequest last epoch")?;
    let last_offset = small(p.last_offset, "VoteRequest last offset")?;
    let voter = id_of(m.voter_id.0, "VoteRequest voter id")?;
    let voter_dir = voter_key_dir(
        p.voter_directory_id,
        voter,
        "VoteRequest voter directory id",
    )?;
    Ok(if p.pre_vote {
        Msg::PreVoteRequest {
            epoch,
            voter_dir,
            last_epoch,
            last_offset,
        }
    } else {
        Msg::VoteRequest {
            epoch,
            voter_dir,
            last_epoch,
            last_offset,
        }
    })
}

pub(super) fn vote_response(m: &VoteResponse) -> Result<Msg, String> {
    let p = m
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("VoteResponse without a partition")?;
    Ok(Msg::VoteResponse {
        epoch: small(p.leader_epoch, "VoteResponse epoch")?,
        granted: p.vote_granted,
        error: code(m.error_code, Some(p.error_code))?,
        leader: if p.leader_id.0 < 0 {
            None
        } else {
            Some(id_of(p.leader_id.0, "VoteResponse leader id")?)
        },
    })
}

pub(super) fn begin(m: &BeginQuorumEpochRequest, src: Id) -> Result<Msg, String> {
    let p = m
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("BeginQuorumEpoch without a partition")?;
    if p.leader_id.0 != i32::from(src) {
        return Err(format!(
            "BeginQuorumEpoch from {src} names leader {}",
            p.leader_id.0
        ));
    }
    Ok(Msg::BeginQuorumEpoch {
        epoch: small(p.leader_epoch, "BeginQuorumEpoch epoch")?,
        voter_dir: voter_key_dir(
            p.voter_directory_id,
            id_of(m.voter_id.0, "BeginQuorumEpoch voter id")?,
            "BeginQuorumEpoch voter directory id",
        )?,
    })
}

pub(super) fn end(m: &EndQuorumEpochRequest, src: Id) -> Result<Msg, String> {
    let p = m
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("EndQuorumEpoch without a partition")?;
    if p.leader_id.0 != i32::from(src) {
        return Err(format!(
            "EndQuorumEpoch from {src} names leader {}",
            p.leader_id.0
        ));
    }
    Ok(Msg::EndQuorumEpoch {
        epoch: small(p.leader_epoch, "EndQuorumEpoch epoch")?,
    })
}
