//! Fetch requests and responses as model messages.

use bytes::Bytes;
use kafka_protocol::messages::{FetchRequest, FetchResponse};
use kraft::node::{FetchEcho, FETCH_ECHO_TAG};
use model::types::{Entry, FetchKey, Id, Log};

use super::election::code;
use super::state::record_kind;
use super::{id_of, model_dir, small};

pub(super) fn fetch_request(m: &FetchRequest, src: Id) -> Result<FetchKey, String> {
    let p = m
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("FetchRequest without a partition")?;
    Ok(FetchKey {
        epoch: small(p.current_leader_epoch, "Fetch epoch")?,
        fetch_offset: small(p.fetch_offset, "fetch offset")?,
        last_fetched_epoch: small(p.last_fetched_epoch, "last fetched epoch")?,
        replica_dir: model_dir(p.replica_directory_id, src, "Fetch replica directory id")?,
    })
}

/// The records of a Fetch response from offset `from` on, as model entries. The leader serves whole
/// stored batches, as Kafka does, so the first may start below the fetch offset; the model's reply
/// starts at it.
pub fn records_of(bytes: Option<&Bytes>, from: i64) -> Result<Log, String> {
    let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
        return Ok(Log::default());
    };
    let batches = kraft::records::decode_batches(bytes.clone())
        .map_err(|e| format!("fetched records: {e}"))?;
    let mut entries = Vec::new();
    for b in &batches {
        for (offset, r) in (b.base_offset..).zip(&b.records) {
            if offset < from {
                continue;
            }
            entries.push(Entry {
                epoch: small(b.epoch, "batch epoch")?,
                kind: record_kind(r)?,
            });
        }
    }
    if entries.len() > model::types::MAX_LOG {
        return Err(format!(
            "{} fetched records exceed the model's log",
            entries.len()
        ));
    }
    Ok(Log::from_slice(&entries))
}

pub(super) fn fetch_response(m: &FetchResponse) -> Result<model::types::FetchResponse, String> {
    let p = m
        .responses
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("FetchResponse without a partition")?;
    let echo = p
        .unknown_tagged_fields
        .get(&FETCH_ECHO_TAG)
        .ok_or("FetchResponse without the request echo")?;
    let echo = FetchEcho::decode(echo.clone())
        .ok_or_else(|| format!("FetchResponse echo of {} bytes", echo.len()))?;
    let request = FetchKey {
        epoch: small(echo.epoch, "echoed epoch")?,
        fetch_offset: small(echo.fetch_offset, "echoed fetch offset")?,
        last_fetched_epoch: small(echo.last_fetched_epoch, "echoed last fetched epoch")?,
        replica_dir: 0,
    };
    let d = &p.diverging_epoch;
    let diverging = if d.epoch >= 0 && d.end_offset >= 0 {
        Some((
            small(d.epoch, "diverging epoch")?,
            small(d.end_offset, "diverging end offset")?,
        ))
    } else {
        None
    };
    let leader = p.current_leader.leader_id.0;
    Ok(model::types::FetchResponse {
        request,
        error: code(m.error_code, Some(p.error_code))?,
        leader_epoch: small(p.current_leader.leader_epoch, "Fetch leader epoch")?,
        leader_id: if leader < 0 {
            None
        } else {
            Some(id_of(leader, "Fetch leader id")?)
        },
        high_watermark: if p.high_watermark < 0 {
            None
        } else {
            Some(small(p.high_watermark, "Fetch HW")?)
        },
        diverging,
        records: records_of(p.records.as_ref(), echo.fetch_offset)?,
        snapshot_id: if p.snapshot_id.end_offset >= 0 && p.snapshot_id.epoch >= 0 {
            Some(model::types::SnapshotId {
                end: small(p.snapshot_id.end_offset, "snapshot end offset")?,
                epoch: small(p.snapshot_id.epoch, "snapshot epoch")?,
            })
        } else {
            None
        },
    })
}
