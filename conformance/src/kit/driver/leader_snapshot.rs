//! The node as a leader that serves a snapshot (KIP-630), beyond the model's lockstep: a played replica
//! fetches at offset 0 once the node holds a snapshot of its own, and the node must point it to that
//! snapshot (Kafka 4.4's `KafkaRaftClient.tryCompleteFetchRequest`: a fetch at 0 with a snapshot other
//! than the bootstrap one, or below the log start, is answered with the latest snapshot id and no
//! records); the replica downloads it with FetchSnapshot in chunks and fetches on from its end offset.
//! The kit's model has no snapshots, so these requests are outside it: each answer is checked against
//! Kafka's rules and the node's log as the model knows it, each a report line.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::fetch_snapshot_request::{
    PartitionSnapshot, SnapshotId as WireSnapshotId, TopicSnapshot,
};
use kafka_protocol::messages::{BrokerId, FetchSnapshotRequest, FetchSnapshotResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kraft::node::Message;
use model::types::{Action, Envelope, ErrorCode, FetchKey, FetchResponse, Id, Msg, SnapshotId};

use super::{added, is_response, Divergence, Kit, Line, R};
use crate::kit::encode;

/// `MaxBytes` of the kit's FetchSnapshot requests: far below a snapshot, so the download takes several
/// chunks, each of which the node must cut at `min(MaxBytes, Size − Position)`.
pub const KIT_SNAPSHOT_MAX_BYTES: i32 = 64;

/// The most FetchSnapshot round trips one download may take (an untrusted `Size` bounds nothing).
const MAX_CHUNKS: u64 = 4096;

/// What the node served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    pub id: SnapshotId,
    /// Snapshot size in bytes (FetchSnapshot's `Size`).
    pub size: u64,
    /// FetchSnapshot round trips.
    pub chunks: u64,
    /// Data records in the snapshot (a Kafka controller's metadata image; none from `kraft`).
    pub data_records: usize,
}

impl Kit {
    /// Played replica `replica` fetches at `offset` from the node, which leads (last fetched epoch:
    /// the epoch of the entry before `offset` in the node's log as the model knows it, 0 at offset 0):
    /// `Some(id)` when the answer points to snapshot `id`, `None` when it carries records (at 0: no
    /// snapshot of the node's own yet; above 0: the log still starts at or below `offset`). Either way
    /// the answer must come from the leader of the model's epoch with the model's HW; a snapshot id
    /// must end above `offset` and at or below that HW, on an entry of the node's log whose epoch it
    /// names, with no records beside it.
    pub fn probe_snapshot(&mut self, replica: Id, offset: u8) -> R<Option<SnapshotId>> {
        let me = self.state.servers[self.nut as usize];
        let last_fetched_epoch = match offset.checked_sub(1) {
            None => 0,
            Some(o) => me.log.get(o).map_or(0, |e| e.epoch),
        };
        let key = FetchKey {
            epoch: me.epoch,
            fetch_offset: offset,
            last_fetched_epoch,
            replica_dir: 0,
        };
        let action = format!(
            "replica {replica} fetches at offset {offset} (last fetched epoch \
             {last_fetched_epoch}; outside the model)"
        );
        let (f, mut line) = self.fetch_outside(replica, key, action)?;
        line.expected = format!(
            "leader {} of epoch {}, HW {:?}: records from {offset}, or a SnapshotId above {offset} \
             and at or below the HW, and no records",
            self.nut, me.epoch, me.hw
        );
        line.observed = format!("{f:?}");
        let from_leader = f.error == ErrorCode::None
            && f.leader_id == Some(self.nut)
            && f.leader_epoch == me.epoch
            && f.high_watermark == me.hw
            && f.diverging.is_none();
        let Some(id) = f.snapshot_id else {
            if !from_leader {
                return Err(self.mismatch_line(line));
            }
            self.report.push(line.verdict(format!(
                "ok (records from {offset}: no snapshot {})",
                if offset == 0 {
                    "of the node's own yet"
                } else {
                    "at this offset yet (the log starts at or below it)"
                }
            )));
            return Ok(None);
        };
        let hw = me.hw.unwrap_or(0);
        let entry_epoch = id.end.checked_sub(1).and_then(|o| me.log.get(o));
        let valid = id.end > offset
            && id.end <= hw
            && entry_epoch.is_some_and(|e| e.epoch == id.epoch)
            && f.records.is_empty();
        if !(from_leader && valid) {
            line.expected = format!(
                "{}; the entry at the snapshot's end offset − 1 has epoch {:?}",
                line.expected,
                entry_epoch.map(|e| e.epoch)
            );
            return Err(self.mismatch_line(line));
        }
        self.report.push(line.verdict(format!(
            "ok (SnapshotId {}@{}, no records)",
            id.end, id.epoch
        )));
        Ok(Some(id))
    }

    /// Played replica `replica` downloads snapshot `id` from the node with FetchSnapshot requests of
    /// [`KIT_SNAPSHOT_MAX_BYTES`], each at the position written so far. Every answer must name the
    /// metadata partition and `id`, the node as leader of its epoch, one `Size`, the position asked,
    /// and `min(MaxBytes, Size − Position)` bytes. Returns the snapshot's bytes and the round trips.
    pub fn download_snapshot(&mut self, replica: Id, id: SnapshotId) -> R<(Bytes, u64)> {
        let epoch = self.state.servers[self.nut as usize].epoch;
        let mut bytes = BytesMut::new();
        let mut size: Option<i64> = None;
        let mut chunks = 0;
        loop {
            let position = bytes.len() as i64;
            let req = fetch_snapshot_request(&self.eps, replica, epoch, id, position);
            let action = format!(
                "replica {replica} FetchSnapshot {}@{} at {position} (MaxBytes {KIT_SNAPSHOT_MAX_BYTES})",
                id.end, id.epoch
            );
            let (resp, mut line) =
                self.exchange(replica, &Message::FetchSnapshotRequest(req), action)?;
            let Message::FetchSnapshotResponse(r) = &resp else {
                line.observed = encode::name(&resp).to_string();
                line.expected = "FetchSnapshotResponse".into();
                return Err(self.mismatch_line(line));
            };
            let chunk = match check_chunk(r, self.nut, epoch, id, size, position) {
                Ok((s, chunk)) => {
                    size = Some(s);
                    chunk
                }
                Err((expected, observed)) => {
                    line.expected = expected;
                    line.observed = observed;
                    return Err(self.mismatch_line(line));
                }
            };
            chunks += 1;
            bytes.extend_from_slice(&chunk);
            let total = size.unwrap_or(0);
            self.report.push(line.verdict(format!(
                "ok ({} of {total} bytes at {position})",
                chunk.len()
            )));
            if bytes.len() as i64 >= total {
                return Ok((bytes.freeze(), chunks));
            }
            if chunks >= MAX_CHUNKS {
                return Err(self.snapshot_error(format!(
                    "{chunks} FetchSnapshot round trips and {} of {total} bytes",
                    bytes.len()
                )));
            }
        }
    }

    /// The downloaded bytes of snapshot `id` must be a snapshot (a header first, a footer last, every
    /// batch whole) with kraft.version 1 and the voter set in force at `id.end − 1` in the node's log
    /// as the model knows it (Kafka writes `voterSetAtOffset(end − 1)`). `chunks`: the download's round
    /// trips, for the result.
    pub fn check_snapshot(&mut self, id: SnapshotId, bytes: Bytes, chunks: u64) -> R<Served> {
        let size = bytes.len() as u64;
        let mut line = Line::new(
            "kit",
            format!("snapshot {}@{} ({size} bytes)", id.end, id.epoch),
        );
        let me = &self.state.servers[self.nut as usize];
        let want = model::spec::committed_voters(self.state.bootstrap, &me.log, Some(id.end))
            .map(crate::mapping::model_ids);
        line.expected =
            format!("a snapshot with kraft.version 1 and the voter set {want:?} at offset end − 1");
        let snap = match kraft::records::decode_snapshot(bytes) {
            Ok(s) => s,
            Err(e) => return Err(self.fail(line, Divergence::Decode(e.to_string()))),
        };
        let mask = snap.voters.as_ref().map(|v| self.eps.mask_of(v));
        line.observed = format!(
            "kraft.version {:?}, voters {mask:?}, {} batches, {} data records",
            snap.kraft_version,
            snap.batches.len(),
            snap.data_records
        );
        if snap.kraft_version != Some(1) || mask.clone().and_then(Result::ok) != want {
            return Err(self.mismatch_line(line));
        }
        self.report
            .push(line.verdict(format!("ok ({} data records)", snap.data_records)));
        Ok(Served {
            id,
            size,
            chunks,
            data_records: snap.data_records,
        })
    }

    /// After the download, played replica `replica` fetches at the snapshot's end offset with its
    /// epoch as last fetched epoch: the answer must be the one the model's leader gives such a fetch
    /// (records from the end offset on, the HW; computed on a copy of the model's state, as the kit's
    /// model has no snapshots), after the fewest records of the node's own that explain it.
    pub fn fetch_after_snapshot(&mut self, replica: Id, id: SnapshotId) -> R<()> {
        let key = FetchKey {
            epoch: self.state.servers[self.nut as usize].epoch,
            fetch_offset: id.end,
            last_fetched_epoch: id.epoch,
            replica_dir: 0,
        };
        let action = format!(
            "replica {replica} fetches at {} (last fetched epoch {}) after the snapshot",
            id.end, id.epoch
        );
        let (observed, mut line) = self.fetch_outside(replica, key, action)?;
        line.observed = format!("{observed:?}");
        let env = Envelope {
            src: replica,
            dst: self.nut,
            msg: Msg::FetchRequest(key),
        };
        let answer_after = |kit: &Kit, k: usize| -> Option<FetchResponse> {
            let mut base = kit.appended(&kit.state, k)?;
            let p = base.network.partition_point(|e| e < &env);
            base.network.insert(p, env);
            let step = kit.model.step(&base, Action::Deliver(env))?;
            let answers: Vec<Envelope> = added(&base, &step.state, kit.nut, replica)
                .into_iter()
                .filter(|e| is_response(&e.msg))
                .collect();
            match answers.as_slice() {
                [Envelope {
                    msg: Msg::FetchResponse(f),
                    ..
                }] => Some(*f),
                _ => None,
            }
        };
        let left = self.appends_left(&self.state);
        let expected = answer_after(self, 0);
        line.expected = format!("{expected:?}");
        let Some(k) = (0..=left).find(|&k| answer_after(self, k) == Some(observed)) else {
            return Err(self.mismatch_line(line));
        };
        if k > 0 {
            self.take_appends(k)?;
            line.action = format!("after {k} node-internal append(s): {}", line.action);
        }
        self.report.push(line.verdict("ok".into()));
        Ok(())
    }

    /// A Fetch of played replica `replica` outside the model, its answer read as the model's.
    fn fetch_outside(
        &mut self,
        replica: Id,
        key: FetchKey,
        action: String,
    ) -> R<(FetchResponse, Line)> {
        let hw = self.state.servers[replica as usize].hw;
        let msg = encode::request(&self.eps, replica, self.nut, &Msg::FetchRequest(key), hw)
            .map_err(|e| Box::new(Divergence::Kit(e)))?;
        let (resp, line) = self.exchange(replica, &msg, action)?;
        match encode::abstract_message(&self.eps, &resp, self.nut, Some(key)) {
            Ok(Msg::FetchResponse(f)) => Ok((f, line)),
            Ok(other) => Err(self.fail(
                line,
                Divergence::Unexpected {
                    observed: format!("{other:?} in answer to a Fetch"),
                },
            )),
            Err(e) => Err(self.fail(line, Divergence::Decode(e))),
        }
    }

    /// Sends `msg` as played replica `src` on its connection to the node and reads the answer.
    fn exchange(&mut self, src: Id, msg: &Message, action: String) -> R<(Message, Line)> {
        self.round_trip(src, msg, Line::new("kit", action))
    }

    fn mismatch_line(&mut self, line: Line) -> Box<Divergence> {
        let d = Divergence::Mismatch {
            expected: line.expected.clone(),
            observed: line.observed.clone(),
        };
        self.fail(line, d)
    }

    fn snapshot_error(&mut self, what: String) -> Box<Divergence> {
        self.fail(
            Line::new("kit", "snapshot download".into()),
            Divergence::Kit(what),
        )
    }
}

/// FetchSnapshot of `id` at `position` from played replica `replica`, in epoch `epoch`.
fn fetch_snapshot_request(
    eps: &encode::Endpoints,
    replica: Id,
    epoch: u8,
    id: SnapshotId,
    position: i64,
) -> FetchSnapshotRequest {
    let partition = PartitionSnapshot::default()
        .with_partition(0)
        .with_current_leader_epoch(i32::from(epoch))
        .with_snapshot_id(
            WireSnapshotId::default()
                .with_end_offset(i64::from(id.end))
                .with_epoch(i32::from(id.epoch)),
        )
        .with_position(position)
        .with_replica_directory_id(crate::mapping::directory_id(replica));
    FetchSnapshotRequest::default()
        .with_cluster_id(eps.cluster())
        .with_replica_id(BrokerId(i32::from(replica)))
        .with_max_bytes(KIT_SNAPSHOT_MAX_BYTES)
        .with_topics(vec![TopicSnapshot::default()
            .with_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
            .with_partitions(vec![partition])])
}

/// Checks one FetchSnapshot answer of the leader `leader` of `epoch` for `id` at `position`
/// (`size`: the `Size` of the answers before): `Ok((size, chunk))`, or `Err((expected, observed))`.
fn check_chunk(
    r: &FetchSnapshotResponse,
    leader: Id,
    epoch: u8,
    id: SnapshotId,
    size: Option<i64>,
    position: i64,
) -> Result<(i64, Bytes), (String, String)> {
    let max = i64::from(KIT_SNAPSHOT_MAX_BYTES);
    let expected = |s: Option<i64>| {
        format!(
            "error 0; partition 0 of __cluster_metadata, error 0, SnapshotId {}@{}, CurrentLeader \
             {leader}@{epoch}, Size {}, Position {position}, min({max}, Size − Position) bytes",
            id.end,
            id.epoch,
            s.map_or("> Position".into(), |s| s.to_string())
        )
    };
    let [t] = r.topics.as_slice() else {
        return Err((expected(size), format!("{} topics", r.topics.len())));
    };
    let [p] = t.partitions.as_slice() else {
        return Err((expected(size), format!("{} partitions", t.partitions.len())));
    };
    let observed = format!(
        "error {}; partition {} of {}, error {}, SnapshotId {}@{}, CurrentLeader {}@{}, Size {}, \
         Position {}, {} bytes",
        r.error_code,
        p.index,
        t.name.as_str(),
        p.error_code,
        p.snapshot_id.end_offset,
        p.snapshot_id.epoch,
        p.current_leader.leader_id.0,
        p.current_leader.leader_epoch,
        p.size,
        p.position,
        p.unaligned_records.len()
    );
    let want_len = max.min(p.size - position);
    let ok = r.error_code == 0
        && t.name.as_str() == "__cluster_metadata"
        && p.index == 0
        && p.error_code == 0
        && (p.snapshot_id.end_offset, p.snapshot_id.epoch)
            == (i64::from(id.end), i32::from(id.epoch))
        && (p.current_leader.leader_id.0, p.current_leader.leader_epoch)
            == (i32::from(leader), i32::from(epoch))
        && size.is_none_or(|s| s == p.size)
        && p.size > position
        && p.position == position
        && p.unaligned_records.len() as i64 == want_len;
    if ok {
        Ok((p.size, p.unaligned_records.clone()))
    } else {
        Err((expected(size), observed))
    }
}
