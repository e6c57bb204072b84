//! Snapshot installs over the wire (KIP-630), beyond the model's lockstep: the kit's leader answers the
//! node's Fetch with a `SnapshotId` and serves the snapshot with FetchSnapshot in chunks; the node must
//! ask for every chunk at the position it has written, install the snapshot and fetch on from its end
//! offset with its epoch. The model stops at the `SnapshotId` (the kit's model has no snapshots), so
//! these steps are checked against Kafka's rules directly, each a report line.

use std::time::Instant;

use bytes::Bytes;
use kafka_protocol::messages::fetch_snapshot_response::{
    LeaderIdAndEpoch, PartitionSnapshot, SnapshotId as WireSnapshotId, TopicSnapshot,
};
use kafka_protocol::messages::{BrokerId, FetchSnapshotRequest, FetchSnapshotResponse};
use kraft::node::Message;
use kraft::records::SnapshotEncoder;
use kraft::server::codec;
use model::types::{FetchKey, FetchResponse, Id, Log, Msg, SnapshotId};

use super::{hex, Divergence, Kit, Line, R};
use crate::kit::encode;

/// The most bytes the kit's leader puts in one FetchSnapshot answer (below the node's MaxBytes, as a
/// leader may): a snapshot of control records then takes several chunks.
pub const KIT_CHUNK_BYTES: usize = 64;

/// What a follower install showed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Install {
    /// Snapshot size in bytes.
    pub size: u64,
    /// FetchSnapshot requests answered.
    pub chunks: u64,
    /// The node's MaxBytes.
    pub max_bytes: i32,
}

/// The played leader's answer to a Fetch of the node: no records, its HW, and a snapshot to fetch
/// when the node must install one.
#[derive(Clone, Copy, Debug)]
struct FetchAnswer {
    /// The node's request, as the model reads it.
    request: FetchKey,
    /// The played leader and its epoch.
    leader: Id,
    epoch: u8,
    high_watermark: u8,
    snapshot_id: Option<SnapshotId>,
}

impl Kit {
    /// The node follows played leader `leader` in epoch `epoch`: its next Fetch is answered with
    /// `SnapshotId` (end offset = the node's fetch offset + `ahead`, `epoch`); the node then downloads it
    /// chunk by chunk ([`KIT_CHUNK_BYTES`]) and its next Fetch must start at the end offset with the
    /// snapshot's epoch as last fetched epoch. That Fetch is answered with no records and the HW at the
    /// end offset.
    pub fn install_snapshot_from_kit(&mut self, leader: Id, ahead: u8) -> R<Install> {
        let epoch = self.state.servers[leader as usize].epoch;
        let (conn, reply, req) = self.next_request_to(leader, "the node's Fetch")?;
        let Message::FetchRequest(fetch) = &req else {
            return Err(self.kit_error(format!("expected a Fetch, got {}", encode::name(&req))));
        };
        let key = fetch_key(fetch)?;
        let end = key.fetch_offset.saturating_add(ahead);
        let id = SnapshotId { end, epoch };
        let what = format!(
            "node Fetch at {} (epoch {}): answered SnapshotId {end}@{epoch}",
            key.fetch_offset, key.last_fetched_epoch
        );
        let answer = FetchAnswer {
            request: key,
            leader,
            epoch,
            high_watermark: end,
            snapshot_id: Some(id),
        };
        self.answer_fetch(conn, &reply, &req, answer, what)?;
        let file = self.snapshot_file(id)?;
        let size = file.len() as u64;
        let mut written = 0u64;
        let mut install = Install {
            size,
            ..Install::default()
        };
        while written < size {
            let (conn, reply, req) = self.next_request_to(leader, "the node's FetchSnapshot")?;
            let Message::FetchSnapshotRequest(r) = &req else {
                return Err(self.kit_error(format!(
                    "expected FetchSnapshot at {written} of {size} bytes, got {}",
                    encode::name(&req)
                )));
            };
            let (asked, position) = fetch_snapshot_position(r)?;
            if asked != (i64::from(end), i32::from(epoch)) || position != written as i64 {
                return Err(self.mismatch(
                    format!("FetchSnapshot of {end}@{epoch} at position {written}"),
                    format!("FetchSnapshot of {asked:?} at position {position}"),
                ));
            }
            install.max_bytes = r.max_bytes;
            let len = KIT_CHUNK_BYTES
                .min(usize::try_from(r.max_bytes).unwrap_or(0))
                .min((size - written) as usize);
            let chunk = file.slice(written as usize..written as usize + len);
            let resp = fetch_snapshot_response(leader, epoch, id, size, written, chunk);
            self.write_answer(
                conn,
                &reply,
                &Message::FetchSnapshotResponse(resp),
                format!("node FetchSnapshot {end}@{epoch} at {written} (MaxBytes {}): {len} of {size} bytes", r.max_bytes),
            )?;
            written += len as u64;
            install.chunks += 1;
            if len == 0 {
                return Err(self.kit_error("the node asks for no bytes (MaxBytes 0)".into()));
            }
        }
        let (conn, reply, req) =
            self.next_request_to(leader, "the node's Fetch after the install")?;
        let Message::FetchRequest(fetch) = &req else {
            return Err(self.mismatch(
                format!("Fetch at {end} (last fetched epoch {epoch})"),
                encode::name(&req).to_string(),
            ));
        };
        let after = fetch_key(fetch)?;
        if (after.fetch_offset, after.last_fetched_epoch) != (end, epoch) {
            return Err(self.mismatch(
                format!("Fetch at {end} (last fetched epoch {epoch})"),
                format!(
                    "Fetch at {} (last fetched epoch {})",
                    after.fetch_offset, after.last_fetched_epoch
                ),
            ));
        }
        let what = format!("node Fetch at {end} after the install: no records, HW {end}");
        let answer = FetchAnswer {
            request: after,
            leader,
            epoch,
            high_watermark: end,
            snapshot_id: None,
        };
        self.answer_fetch(conn, &reply, &req, answer, what)?;
        Ok(install)
    }

    /// The snapshot the kit's leader serves: its control records (header, kraft.version 1, the voter
    /// set of the kit's model at the node's HW, footer), as `kraft` and Kafka write them.
    fn snapshot_file(&self, id: SnapshotId) -> R<Bytes> {
        let me = &self.state.servers[self.nut as usize];
        let mask = model::spec::committed_voters(self.state.bootstrap, &me.log, me.hw)
            .unwrap_or(model::types::VoterSet::of(self.state.bootstrap));
        let voters = self
            .eps
            .voter_set(mask)
            .map_err(|e| Box::new(Divergence::Kit(e)))?;
        let kid = kraft::node::SnapshotId {
            end_offset: i64::from(id.end),
            epoch: i32::from(id.epoch),
        };
        SnapshotEncoder::new(kid, 0, 1, Some(&voters), 0)
            .and_then(|e| e.finish(0))
            .map_err(|e| Box::new(Divergence::Kit(format!("snapshot {kid}: {e}"))))
    }

    /// Answers the node's Fetch `req` with `answer` (no records).
    fn answer_fetch(
        &mut self,
        conn: u64,
        reply: &codec::Reply,
        req: &Message,
        answer: FetchAnswer,
        what: String,
    ) -> R<()> {
        let FetchAnswer {
            request,
            leader,
            epoch,
            high_watermark,
            snapshot_id,
        } = answer;
        let answer = FetchResponse {
            request,
            error: model::types::ErrorCode::None,
            leader_epoch: epoch,
            leader_id: Some(leader),
            high_watermark: Some(high_watermark),
            diverging: None,
            records: Log::from_slice(&[]),
            snapshot_id,
        };
        let resp = encode::response(
            &self.eps,
            leader,
            req,
            Some(&Msg::FetchResponse(answer)),
            (epoch, Some(leader)),
        )
        .map_err(|e| Box::new(Divergence::Kit(e)))?;
        self.write_answer(conn, reply, &resp, what)
    }

    /// The node's next peer request to played replica `to` (handshakes answered on the way).
    fn next_request_to(&mut self, to: Id, what: &str) -> R<(u64, codec::Reply, Message)> {
        let start = Instant::now();
        let deadline = start + self.wait;
        loop {
            let Some(i) = self.listeners.next(deadline) else {
                let d = Divergence::Timeout {
                    waiting_for: what.to_string(),
                    waited_ms: start.elapsed().as_millis(),
                };
                return Err(self.fail(Line::new("kit", format!("wait: {what}")), d));
            };
            if i.conn < self.dead_below {
                continue;
            }
            let mut line = Line::new("node", String::new());
            let Some((reply, from, message)) =
                self.read_peer(i.replica, i.conn, i.payload, &mut line)?
            else {
                continue;
            };
            self.report
                .cover(format!("node→kit {}", encode::name(&message)));
            if i.replica != to || from != i32::from(self.nut) {
                let d = Divergence::Unexpected {
                    observed: format!(
                        "{} from {from} to {}, waiting for {what} to {to}",
                        encode::name(&message),
                        i.replica
                    ),
                };
                return Err(self.fail(line, d));
            }
            return Ok((i.conn, reply, message));
        }
    }

    fn write_answer(
        &mut self,
        conn: u64,
        reply: &codec::Reply,
        resp: &Message,
        action: String,
    ) -> R<()> {
        let frame = codec::peer_response(reply, resp)
            .map_err(|e| Box::new(Divergence::Kit(e.to_string())))?;
        self.listeners
            .reply(conn, &frame)
            .map_err(|e| Box::new(Divergence::Io(e)))?;
        self.report.cover(format!(
            "kit→node {} error {}",
            encode::name(resp),
            encode::error_code(resp)
        ));
        self.report.push(
            Line::new("node", action)
                .with_sent(hex(&frame))
                .verdict("ok".into()),
        );
        Ok(())
    }

    fn kit_error(&mut self, what: String) -> Box<Divergence> {
        self.fail(
            Line::new("kit", "snapshot install".into()),
            Divergence::Kit(what),
        )
    }

    fn mismatch(&mut self, expected: String, observed: String) -> Box<Divergence> {
        let mut line = Line::new("node", "snapshot install".into());
        line.expected = expected.clone();
        line.observed = observed.clone();
        self.fail(line, Divergence::Mismatch { expected, observed })
    }
}

/// The fetch position of a Fetch request of the node (offset and last fetched epoch, small).
fn fetch_key(fetch: &kafka_protocol::messages::FetchRequest) -> R<FetchKey> {
    let p = fetch
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or_else(|| Box::new(Divergence::Decode("Fetch without a partition".into())))?;
    let small = |v: i64, what: &str| {
        u8::try_from(v).map_err(|_| {
            Box::new(Divergence::Decode(format!(
                "{what} {v} outside the kit's bounds"
            )))
        })
    };
    Ok(FetchKey {
        epoch: small(i64::from(p.current_leader_epoch), "epoch")?,
        fetch_offset: small(p.fetch_offset, "fetch offset")?,
        last_fetched_epoch: small(i64::from(p.last_fetched_epoch), "last fetched epoch")?,
        replica_dir: 0,
    })
}

/// The snapshot id (end offset, epoch) and position a FetchSnapshot request asks for.
fn fetch_snapshot_position(r: &FetchSnapshotRequest) -> R<((i64, i32), i64)> {
    let p = r
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or_else(|| {
            Box::new(Divergence::Decode(
                "FetchSnapshot without a partition".into(),
            ))
        })?;
    Ok(((p.snapshot_id.end_offset, p.snapshot_id.epoch), p.position))
}

/// The leader's FetchSnapshot answer: `chunk` of snapshot `id` (of `size` bytes) at `position`.
fn fetch_snapshot_response(
    leader: Id,
    epoch: u8,
    id: SnapshotId,
    size: u64,
    position: u64,
    chunk: Bytes,
) -> FetchSnapshotResponse {
    let partition = PartitionSnapshot::default()
        .with_index(0)
        .with_snapshot_id(
            WireSnapshotId::default()
                .with_end_offset(i64::from(id.end))
                .with_epoch(i32::from(id.epoch)),
        )
        .with_current_leader(
            LeaderIdAndEpoch::default()
                .with_leader_id(BrokerId(i32::from(leader)))
                .with_leader_epoch(i32::from(epoch)),
        )
        .with_size(size as i64)
        .with_position(position as i64)
        .with_unaligned_records(chunk);
    FetchSnapshotResponse::default().with_topics(vec![TopicSnapshot::default()
        .with_name(kafka_protocol::messages::TopicName(
            kafka_protocol::protocol::StrBytes::from_static_str("__cluster_metadata"),
        ))
        .with_partitions(vec![partition])])
}
