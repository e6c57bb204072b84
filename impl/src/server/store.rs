//! The storage thread: the only owner of the durable log and the quorum-state file. The node task hands it
//! the effects of each core output in order ([`Job`]); it performs them on its own thread, never on the
//! async runtime's workers, and reports back ([`Done`]) once they are durable.
//!
//! Group commit: jobs that queued up while the thread was busy are written together and made durable by
//! one `fsync`; each is reported done only after that.
//!
//! Snapshots (KIP-630): the thread also owns the snapshot files ([`MetadataLog`]). A completed download and
//! a snapshot of our own come back with the report as a [`SnapshotOutcome`], which the node task hands to the
//! core (`Node::snapshot_loaded`, `Node::snapshot_taken`); a downloaded file that fails its check, or a
//! snapshot that cannot be written, is such an outcome (the core starts over), not a storage failure.

use std::path::PathBuf;
use std::sync::mpsc as std_mpsc;

use tokio::sync::mpsc;

use crate::log::{RaftLog, SnapshotId, SnapshotMeta};
use crate::node::Effect;
use crate::storage::{write_quorum_state, MetadataLog, SnapshotError, StorageError};

/// The effects of one core output, numbered in the order the node task issued them.
#[derive(Debug)]
pub struct Job {
    pub seq: u64,
    pub effects: Vec<Effect>,
}

/// Every job up to `seq` is durable; `snapshots` are the outcomes of their snapshot effects, in order.
#[derive(Debug, PartialEq, Eq)]
pub struct Done {
    pub seq: u64,
    pub snapshots: Vec<SnapshotOutcome>,
}

/// What became of a `CompleteSnapshot` or `TakeSnapshot` effect (Err: why the file was refused or not
/// written; the error names the file).
#[derive(Debug, PartialEq, Eq)]
pub enum SnapshotOutcome {
    Loaded {
        id: SnapshotId,
        result: Result<SnapshotMeta, String>,
    },
    Taken {
        id: SnapshotId,
        result: Result<SnapshotMeta, String>,
    },
}

/// A snapshot error the node goes on after (a bad or unwritable file); I/O errors stop it.
fn refusal(e: StorageError) -> Result<String, StorageError> {
    match e {
        StorageError::Snapshot(SnapshotError::Io { .. }) => Err(e),
        StorageError::Snapshot(_) => Ok(e.to_string()),
        other => Err(other),
    }
}

/// The node task's end of the storage thread.
pub struct Store {
    jobs: std_mpsc::Sender<Job>,
}

impl Store {
    /// Starts the thread. Its reports (or the first storage error, after which it performs nothing more)
    /// arrive on `done`.
    pub fn spawn(
        log: MetadataLog,
        quorum_state_path: PathBuf,
        done: mpsc::UnboundedSender<Result<Done, StorageError>>,
    ) -> std::io::Result<Store> {
        let (jobs, rx) = std_mpsc::channel();
        std::thread::Builder::new()
            .name("kraft-storage".into())
            .spawn(move || run(log, quorum_state_path, rx, done))?;
        Ok(Store { jobs })
    }

    /// Queues one output's effects. A stopped thread has already reported why.
    pub fn submit(&self, job: Job) {
        let _ = self.jobs.send(job);
    }
}

fn run(
    mut log: MetadataLog,
    quorum_state_path: PathBuf,
    jobs: std_mpsc::Receiver<Job>,
    done: mpsc::UnboundedSender<Result<Done, StorageError>>,
) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        batch.extend(jobs.try_iter());
        let report = perform(&mut log, &quorum_state_path, batch);
        let failed = report.is_err();
        if done.send(report).is_err() || failed {
            return;
        }
    }
}

/// Performs `jobs` in order with at most one log flush, at the end.
pub fn perform(
    meta: &mut MetadataLog,
    quorum_state_path: &std::path::Path,
    jobs: Vec<Job>,
) -> Result<Done, StorageError> {
    let mut flush = false;
    let mut seq = 0;
    let mut snapshots = Vec::new();
    for job in jobs {
        seq = job.seq;
        for effect in job.effects {
            match effect {
                Effect::PersistElectionState(state) => {
                    write_quorum_state(quorum_state_path, &state)?
                }
                Effect::AppendLog(batches) => meta.log.append_replicated(batches)?,
                Effect::TruncateLog(offset) => meta.log.truncate_to(offset)?,
                Effect::FlushLog { .. } => flush = true,
                Effect::WriteSnapshotChunk {
                    id,
                    position,
                    bytes,
                } => meta.write_snapshot_chunk(id, position, &bytes)?,
                Effect::AbortSnapshotDownload { id } => meta.abort_download(id)?,
                Effect::CompleteSnapshot { id, size } => {
                    let result = match meta.complete_download(id, size) {
                        Ok(info) => {
                            tracing::info!(snapshot = %id, size, "snapshot downloaded and installed");
                            Ok(info.meta())
                        }
                        Err(e) => {
                            let reason = refusal(e)?;
                            tracing::error!(snapshot = %id, "downloaded snapshot refused: {reason}");
                            Err(reason)
                        }
                    };
                    snapshots.push(SnapshotOutcome::Loaded { id, result });
                }
                Effect::TakeSnapshot {
                    id,
                    last_contained_log_timestamp,
                    kraft_version,
                    voters,
                    append_time,
                } => {
                    let result = match meta.take_snapshot(
                        id,
                        last_contained_log_timestamp,
                        kraft_version,
                        voters.as_ref(),
                        append_time,
                    ) {
                        Ok(info) => {
                            tracing::info!(snapshot = %id, size = info.size, "snapshot written");
                            Ok(info.meta())
                        }
                        Err(e) => {
                            let reason = refusal(e)?;
                            tracing::warn!(snapshot = %id, "snapshot not written: {reason}");
                            Err(reason)
                        }
                    };
                    snapshots.push(SnapshotOutcome::Taken { id, result });
                }
                Effect::MoveLogStart { offset } => {
                    if let Err(e) = meta.move_log_start(offset) {
                        let reason = refusal(e)?;
                        tracing::error!(offset, "log start not moved: {reason}");
                    }
                }
            }
        }
    }
    if flush {
        meta.log.flush()?;
    }
    Ok(Done { seq, snapshots })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Batch, Record, Replicated};
    use crate::node::ElectionState;

    fn batch(base_offset: i64, epoch: i32) -> Replicated {
        Replicated {
            batch: Batch {
                base_offset,
                epoch,
                append_time: 0,
                records: vec![Record::Data(bytes::Bytes::from_static(b"x"))],
            },
            bytes: None,
        }
    }

    #[tokio::test]
    async fn jobs_are_durable_in_order_and_the_first_error_stops_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let state_path = dir.path().join("quorum-state");
        let (tx, mut done) = mpsc::unbounded_channel();
        let store = Store::spawn(
            MetadataLog::open(dir.path()).unwrap(),
            state_path.clone(),
            tx,
        )
        .unwrap();
        let state = ElectionState {
            epoch: 3,
            ..Default::default()
        };
        store.submit(Job {
            seq: 1,
            effects: vec![
                Effect::PersistElectionState(state.clone()),
                Effect::AppendLog(vec![batch(0, 3)]),
                Effect::FlushLog { up_to: 1 },
            ],
        });
        assert_eq!(
            done.recv().await.unwrap().unwrap(),
            Done {
                seq: 1,
                snapshots: Vec::new()
            }
        );
        assert_eq!(
            crate::storage::read_quorum_state(&state_path).unwrap(),
            state
        );
        // A batch that does not continue the log: a typed error, then nothing more is performed.
        store.submit(Job {
            seq: 2,
            effects: vec![Effect::AppendLog(vec![batch(5, 3)])],
        });
        assert!(matches!(
            done.recv().await,
            Some(Err(StorageError::Log(
                crate::log::LogError::NonContiguous {
                    expected: 1,
                    got: 5
                }
            )))
        ));
        store.submit(Job {
            seq: 3,
            effects: vec![Effect::TruncateLog(0)],
        });
        assert!(done.recv().await.is_none(), "the thread has stopped");
        let log = crate::storage::FileLog::open(dir.path()).unwrap();
        assert_eq!((log.end_offset(), log.flushed_offset()), (1, 1));
    }

    /// A download (Kafka 4.4.0's snapshot (20, 1)) and its install; a damaged one refused without stopping
    /// the thread; a snapshot of our own and the log start moved to it.
    #[test]
    fn snapshot_effects_report_their_outcomes() {
        const KAFKA: &[u8] = include_bytes!(
            "../../tests/testdata/kafka-4.4.0-00000000000000000020-0000000001.checkpoint"
        );
        let id = SnapshotId {
            end_offset: 20,
            epoch: 1,
        };
        let dir = tempfile::tempdir().unwrap();
        let state_path = dir.path().join("quorum-state");
        let mut meta = MetadataLog::open(dir.path()).unwrap();
        let chunk = |position: usize, end: usize, bytes: &[u8]| Effect::WriteSnapshotChunk {
            id,
            position: position as u64,
            bytes: bytes::Bytes::copy_from_slice(&bytes[position..end]),
        };
        let mut damaged = KAFKA.to_vec();
        damaged[500] ^= 1;
        let size = KAFKA.len() as u64;
        let job = |seq, effects| Job { seq, effects };
        let done = perform(
            &mut meta,
            &state_path,
            vec![job(
                1,
                vec![
                    chunk(0, 300, &damaged),
                    chunk(300, KAFKA.len(), &damaged),
                    Effect::CompleteSnapshot { id, size },
                ],
            )],
        )
        .unwrap();
        match &done.snapshots[..] {
            [SnapshotOutcome::Loaded { result: Err(e), .. }] => {
                assert!(
                    e.contains("00000000000000000020-0000000001.checkpoint.part"),
                    "{e}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            meta.log.end_offset(),
            0,
            "a refused snapshot is not installed"
        );
        let done = perform(
            &mut meta,
            &state_path,
            vec![
                job(2, vec![chunk(0, 300, KAFKA)]),
                job(
                    3,
                    vec![
                        chunk(300, KAFKA.len(), KAFKA),
                        Effect::CompleteSnapshot { id, size },
                        Effect::AppendLog(vec![batch(20, 1), batch(21, 1)]),
                        Effect::FlushLog { up_to: 22 },
                    ],
                ),
            ],
        )
        .unwrap();
        assert_eq!(done.seq, 3);
        let loaded = SnapshotOutcome::Loaded {
            id,
            result: Ok(meta.snapshots()[0].meta()),
        };
        assert_eq!(done.snapshots, vec![loaded]);
        assert_eq!((meta.log.start_offset(), meta.log.end_offset()), (20, 22));
        let own = SnapshotId {
            end_offset: 22,
            epoch: 1,
        };
        let voters = meta.snapshots()[0].voters.clone();
        let done = perform(
            &mut meta,
            &state_path,
            vec![job(
                4,
                vec![
                    Effect::TakeSnapshot {
                        id: own,
                        last_contained_log_timestamp: 0,
                        kraft_version: 1,
                        voters,
                        append_time: 0,
                    },
                    Effect::MoveLogStart { offset: 22 },
                ],
            )],
        )
        .unwrap();
        match &done.snapshots[..] {
            [SnapshotOutcome::Taken { result: Ok(m), .. }] => assert_eq!(m.id, own),
            other => panic!("{other:?}"),
        }
        assert_eq!(meta.log.start_offset(), 22);
        assert_eq!(meta.snapshots().len(), 1);
        // Kafka's 8 metadata records carried over, plus the two "x" records of the log.
        assert_eq!(meta.snapshots()[0].data_records, 10);
    }
}
