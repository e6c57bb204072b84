//! Snapshots (KIP-630), the follower's side, as Kafka 4.4's `KafkaRaftClient`: a Fetch answered with a
//! `SnapshotId` starts a download (`handleFetchResponse`), FetchSnapshot requests replace Fetch until it is
//! complete (`maybeSendFetchOrFetchSnapshot`), each chunk must continue the bytes written so far
//! (`handleFetchSnapshotResponse`), and the complete snapshot is installed: the log truncated fully and
//! started at its end offset, kraft.version and the voter-set history reloaded from its control records
//! at end offset − 1. The bytes go to the shell as effects; the shell validates the file and hands the
//! outcome back ([`Node::snapshot_loaded`]). Until then the replica sends no Fetch and its election and
//! fetch timers wait (Kafka installs within one poll).

use kafka_protocol::messages::fetch_snapshot_request::TopicSnapshot;
use kafka_protocol::messages::{BrokerId, FetchSnapshotRequest, FetchSnapshotResponse};
use kafka_protocol::protocol::StrBytes;

use crate::log::{MemoryLog, SnapshotId, SnapshotMeta};

use super::messages::{self, errors, METADATA_PARTITION};
use super::snapshot::fetch_snapshot_partition;
use super::types::*;
use super::{Node, RoleState};

/// The partition errors Kafka's `maybeHandleCommonResponse` settles before the snapshot's own rules (the
/// epoch and the leader, a replica not ready, a request it could not take): an answer carrying one
/// keeps the download.
const COMMON_RESPONSE_ERRORS: [i16; 6] = [
    errors::UNKNOWN_LEADER_EPOCH,
    errors::FENCED_LEADER_EPOCH,
    errors::NOT_LEADER_OR_FOLLOWER,
    errors::BROKER_NOT_AVAILABLE,
    errors::INVALID_VOTER_KEY,
    errors::INVALID_REQUEST,
];

/// A snapshot being fetched from the leader (Kafka's `FollowerState.fetchingSnapshot`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Download {
    pub id: SnapshotId,
    /// Bytes written so far: the next request's Position.
    pub written: u64,
    /// The Size the leader first answered; later answers must agree.
    pub size: Option<u64>,
}

/// The FetchSnapshot request a follower waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SentSnapshotFetch {
    pub to: i32,
    pub epoch: i32,
    pub id: SnapshotId,
    pub position: u64,
    pub sent_at: Millis,
}

/// Why a FetchSnapshot answer was refused (the download goes on from where it was).
#[derive(Debug, thiserror::Error)]
enum ChunkRefused {
    #[error("no download of snapshot {0} in progress")]
    NotDownloading(SnapshotId),
    #[error("position {got} does not continue the {written} bytes written")]
    Position { got: i64, written: u64 },
    #[error("size {got} is not the size {size:?} answered before (or not positive)")]
    Size { got: i64, size: Option<u64> },
    #[error("a chunk of {len} bytes at {written} overruns the size {size}")]
    Overrun { len: u64, written: u64, size: u64 },
    #[error("a chunk of {len} bytes is longer than the MaxBytes {max} asked for")]
    TooLong { len: u64, max: i32 },
}

impl Node {
    /// A Fetch answer named a snapshot: fetch it (Kafka's `createNewSnapshotUnchecked`; a snapshot
    /// already held is not fetched again).
    pub(super) fn start_download(&mut self, id: SnapshotId, out: &mut Output) {
        if self.snapshots.get(id).is_some() {
            tracing::info!(node = self.local.id, %id, "leader names a snapshot already held");
            return;
        }
        self.abort_download(out);
        tracing::info!(node = self.local.id, %id, "fetching snapshot from the leader");
        self.download = Some(Download {
            id,
            written: 0,
            size: None,
        });
    }

    /// Drops the download in progress, if any, and has the shell delete its partial file.
    pub(super) fn abort_download(&mut self, out: &mut Output) {
        self.sent_snapshot_fetch = None;
        if let Some(d) = self.download.take() {
            out.effects.push(Effect::AbortSnapshotDownload { id: d.id });
        }
    }

    /// A follower that is downloading asks for the next chunk instead of fetching records.
    pub(super) fn send_fetch_snapshot(
        &mut self,
        now: Millis,
        to: i32,
        d: Download,
        out: &mut Output,
    ) {
        let req = FetchSnapshotRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(self.config.cluster_id.clone())))
            .with_replica_id(BrokerId(self.local.id))
            .with_max_bytes(self.config.snapshots.fetch_snapshot_max_bytes)
            .with_topics(vec![TopicSnapshot::default()
                .with_name(messages::topic_name())
                .with_partitions(vec![fetch_snapshot_partition(
                    self.election.epoch,
                    d.id,
                    d.written,
                    self.local.directory_or_nil(),
                )])]);
        self.sent_snapshot_fetch = Some(SentSnapshotFetch {
            to,
            epoch: self.election.epoch,
            id: d.id,
            position: d.written,
            sent_at: now,
        });
        self.next_fetch_at = None;
        out.requests.push((to, Message::FetchSnapshotRequest(req)));
    }

    pub(super) fn on_fetch_snapshot_response(
        &mut self,
        now: Millis,
        from: i32,
        resp: FetchSnapshotResponse,
        out: &mut Output,
    ) {
        let Some(sent) = self.sent_snapshot_fetch else {
            return;
        };
        if from != sent.to {
            return;
        }
        if resp.error_code != errors::NONE {
            // Kafka's `handleTopLevelError`: retried after a backoff.
            self.sent_snapshot_fetch = None;
            self.next_fetch_at = Some(now + self.config.fetch_interval_ms);
            return;
        }
        // Kafka reads the partition of the metadata topic and ignores any other answer.
        let Some(p) = resp
            .topics
            .iter()
            .filter(|t| messages::is_metadata_topic(&t.name.0))
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.index == METADATA_PARTITION)
        else {
            return;
        };
        let id =
            (p.snapshot_id.end_offset >= 0 && p.snapshot_id.epoch >= 0).then_some(SnapshotId {
                end_offset: p.snapshot_id.end_offset,
                epoch: p.snapshot_id.epoch,
            });
        // A stale or duplicated answer (another chunk than the one asked for) is not this request's.
        if p.error_code == errors::NONE
            && (id != Some(sent.id) || u64::try_from(p.position).ok() != Some(sent.position))
        {
            return;
        }
        self.sent_snapshot_fetch = None;
        let (leader_id, leader_epoch) =
            (p.current_leader.leader_id.0, p.current_leader.leader_epoch);
        if let Some(e) = resp
            .node_endpoints
            .iter()
            .find(|e| e.node_id.0 == leader_id && leader_id >= 0)
        {
            self.learn_leader_endpoint(leader_epoch, leader_id, e.host.to_string(), e.port);
        }
        // Kafka's `handleFetchSnapshotResponse`: after the epoch and leader errors
        // (`maybeHandleCommonResponse`), SNAPSHOT_NOT_FOUND or an answer without a snapshot id, whatever
        // its error, starts the download over from a Fetch.
        if (p.error_code == errors::SNAPSHOT_NOT_FOUND
            || (id.is_none() && !COMMON_RESPONSE_ERRORS.contains(&p.error_code)))
            && leader_epoch == self.election.epoch
        {
            tracing::info!(node = self.local.id, id = %sent.id, error = p.error_code, "leader has no such snapshot; fetching again");
            self.abort_download(out);
            self.timers.fetch_timeout = Some(now + self.config.fetch_timeout_ms);
            self.next_fetch_at = Some(now);
            return;
        }
        if p.error_code != errors::NONE {
            let before = (self.role(), self.election.epoch, self.leader_id());
            self.maybe_transition(now, leader_epoch, leader_id, out);
            if before == (self.role(), self.election.epoch, self.leader_id()) {
                self.next_fetch_at = Some(now + self.config.fetch_interval_ms);
            }
            return;
        }
        if !self.maybe_transition(now, leader_epoch, from, out) || leader_epoch != sent.epoch {
            return;
        }
        let bytes = p.unaligned_records.clone();
        match self.accept_chunk(sent.id, p.position, p.size, bytes, out) {
            Ok(progressed) => {
                self.timers.fetch_timeout = Some(now + self.config.fetch_timeout_ms);
                self.next_fetch_at = if self.installing.is_some() {
                    None
                } else if progressed {
                    Some(now)
                } else {
                    Some(now + self.config.fetch_interval_ms)
                };
            }
            Err(e) => {
                // Kafka throws (its raft client stops); this node keeps the bytes it has and asks again.
                tracing::warn!(node = self.local.id, id = %sent.id, error = %e, "snapshot chunk refused");
                self.next_fetch_at = Some(now + self.config.fetch_interval_ms);
            }
        }
    }

    /// Writes a chunk that continues the download; completes it at its size. Returns whether bytes
    /// were written.
    fn accept_chunk(
        &mut self,
        id: SnapshotId,
        position: i64,
        size: i64,
        bytes: bytes::Bytes,
        out: &mut Output,
    ) -> Result<bool, ChunkRefused> {
        let Some(mut d) = self.download.filter(|d| d.id == id) else {
            return Err(ChunkRefused::NotDownloading(id));
        };
        if u64::try_from(position).ok() != Some(d.written) {
            return Err(ChunkRefused::Position {
                got: position,
                written: d.written,
            });
        }
        let size = match u64::try_from(size) {
            Ok(s) if s > 0 && d.size.is_none_or(|known| known == s) => s,
            _ => {
                return Err(ChunkRefused::Size {
                    got: size,
                    size: d.size,
                })
            }
        };
        let len = bytes.len() as u64;
        let max = self.config.snapshots.fetch_snapshot_max_bytes;
        if len > u64::try_from(max).unwrap_or(0) {
            return Err(ChunkRefused::TooLong { len, max });
        }
        if d.written + len > size {
            return Err(ChunkRefused::Overrun {
                len,
                written: d.written,
                size,
            });
        }
        if len > 0 {
            out.effects.push(Effect::WriteSnapshotChunk {
                id,
                position: d.written,
                bytes,
            });
        }
        d.written += len;
        d.size = Some(size);
        if d.written == size {
            tracing::info!(node = self.local.id, %id, size, "snapshot fetched; installing");
            self.download = None;
            self.installing = Some(id);
            out.effects.push(Effect::CompleteSnapshot { id, size });
        } else {
            self.download = Some(d);
        }
        Ok(len > 0)
    }

    /// The shell's answer to [`Effect::CompleteSnapshot`]: the file is stored and the log starts at its
    /// end offset (`Ok`, with what its control records say), or the file was refused and deleted (`Err`,
    /// the reason naming the file: the next Fetch starts the download again).
    pub fn snapshot_loaded(
        &mut self,
        now: Millis,
        id: SnapshotId,
        result: Result<SnapshotMeta, String>,
    ) -> Output {
        self.adopt_clock(now);
        let mut out = Output::default();
        if self.installing == Some(id) {
            self.installing = None;
        }
        match result {
            Ok(meta) if meta.id == id => {
                if let Err(e) = self.install_snapshot(meta) {
                    tracing::error!(node = self.local.id, %id, error = %e, "snapshot control records refused");
                }
                tracing::info!(node = self.local.id, %id, "log fully truncated to the fetched snapshot");
            }
            Ok(meta) => {
                tracing::error!(node = self.local.id, %id, got = %meta.id, "shell loaded another snapshot")
            }
            Err(reason) => {
                tracing::error!(node = self.local.id, %id, %reason, "fetched snapshot refused")
            }
        }
        if self.role() == Role::Follower {
            self.timers.fetch_timeout = Some(now + self.config.fetch_timeout_ms);
            self.next_fetch_at = Some(now);
        }
        self.finish(now, &mut out);
        out
    }

    /// The log view starts at the snapshot's end (Kafka's `truncateToLatestSnapshot`), older snapshots
    /// are forgotten, kraft.version and the voter-set history are the snapshot's at end offset − 1, and
    /// the HW is at least the snapshot's end.
    pub(super) fn install_snapshot(
        &mut self,
        meta: SnapshotMeta,
    ) -> Result<(), crate::history::HistoryError> {
        let id = meta.id;
        self.log = MemoryLog::starting_at(id.end_offset, id.epoch);
        self.snapshots.forget_before(id);
        self.snapshots.insert(meta.clone());
        self.history_next_offset = id.end_offset;
        // A snapshot still being written of the log just replaced is not taken on when it is answered.
        self.taking = None;
        if self.hw.is_none_or(|hw| hw < id.end_offset) {
            self.hw = Some(id.end_offset);
        }
        self.outstanding_fetch = None;
        self.load_snapshot_histories(&meta)
    }

    /// Kafka's `maybeLoadSnapshot`: both histories hold only the snapshot's entries, at end offset − 1.
    pub(super) fn load_snapshot_histories(
        &mut self,
        meta: &SnapshotMeta,
    ) -> Result<(), crate::history::HistoryError> {
        let at = meta.id.end_offset - 1;
        self.history.load_snapshot(at, meta.voters.clone())?;
        self.kraft_versions.clear();
        self.kraft_versions.add_at(at, meta.kraft_version)
    }

    /// Whether a fetched snapshot waits for the shell's [`Node::snapshot_loaded`].
    pub fn installing_snapshot(&self) -> Option<SnapshotId> {
        self.installing
    }

    /// The snapshot being fetched and the bytes written so far.
    pub fn snapshot_download(&self) -> Option<(SnapshotId, u64)> {
        self.download.map(|d| (d.id, d.written))
    }

    pub(super) fn downloading(&self) -> Option<Download> {
        match self.role {
            RoleState::Follower { .. } => self.download,
            _ => None,
        }
    }
}
