//! The storage thread: the only owner of the durable log and the quorum-state file. The node task hands it
//! the effects of each core output in order ([`Job`]); it performs them on its own thread, never on the
//! async runtime's workers, and reports back ([`Done`]) once they are durable.
//!
//! Group commit: jobs that queued up while the thread was busy are written together and made durable by
//! one `fsync`; each is reported done only after that.

use std::path::PathBuf;
use std::sync::mpsc as std_mpsc;

use tokio::sync::mpsc;

use crate::log::RaftLog;
use crate::node::Effect;
use crate::storage::{write_quorum_state, FileLog, StorageError};

/// The effects of one core output, numbered in the order the node task issued them.
#[derive(Debug)]
pub struct Job {
    pub seq: u64,
    pub effects: Vec<Effect>,
}

/// Every job up to `seq` is durable.
#[derive(Debug, PartialEq, Eq)]
pub struct Done {
    pub seq: u64,
}

/// The node task's end of the storage thread.
pub struct Store {
    jobs: std_mpsc::Sender<Job>,
}

impl Store {
    /// Starts the thread. Its reports (or the first storage error, after which it performs nothing more)
    /// arrive on `done`.
    pub fn spawn(
        log: FileLog,
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
    mut log: FileLog,
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
    log: &mut FileLog,
    quorum_state_path: &std::path::Path,
    jobs: Vec<Job>,
) -> Result<Done, StorageError> {
    let mut flush = false;
    let mut seq = 0;
    for job in jobs {
        seq = job.seq;
        for effect in job.effects {
            match effect {
                Effect::PersistElectionState(state) => {
                    write_quorum_state(quorum_state_path, &state)?
                }
                Effect::AppendLog(batches) => log.append_replicated(batches)?,
                Effect::TruncateLog(offset) => log.truncate_to(offset)?,
                Effect::FlushLog { .. } => flush = true,
                // Snapshot files are not stored by this shell yet: stop rather than diverge.
                other => {
                    return Err(StorageError::Log(crate::log::LogError::Io(
                        std::io::Error::other(format!("snapshot effect not supported: {other:?}")),
                    )))
                }
            }
        }
    }
    if flush {
        log.flush()?;
    }
    Ok(Done { seq })
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
        let store =
            Store::spawn(FileLog::open(dir.path()).unwrap(), state_path.clone(), tx).unwrap();
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
        assert_eq!(done.recv().await.unwrap().unwrap(), Done { seq: 1 });
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
        let log = FileLog::open(dir.path()).unwrap();
        assert_eq!((log.end_offset(), log.flushed_offset()), (1, 1));
    }
}
