//! The quorum-state file: the election state that must survive a crash (Kafka's `quorum-state`, JSON).

use std::path::Path;

use uuid::Uuid;

use super::{write_atomically, StorageError};
use crate::node::ElectionState;
use crate::voter_set::ReplicaKey;

const DATA_VERSION: i32 = 1;

/// Kafka's field names; −1 means "none" for ids and the nil UUID for directory ids.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct QuorumStateData {
    #[serde(rename = "leaderId")]
    leader_id: i32,
    #[serde(rename = "leaderEpoch")]
    leader_epoch: i32,
    #[serde(rename = "votedId")]
    voted_id: i32,
    #[serde(rename = "votedDirectoryId")]
    voted_directory_id: Uuid,
    data_version: i32,
}

/// Reads the election state; a missing file is a fresh node (epoch 0, no vote, no leader).
pub fn read_quorum_state(path: &Path) -> Result<ElectionState, StorageError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ElectionState::default()),
        Err(source) => {
            return Err(StorageError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let corrupt = |reason: String| StorageError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let data: QuorumStateData =
        serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    if data.data_version != DATA_VERSION {
        return Err(corrupt(format!(
            "unsupported data_version {}",
            data.data_version
        )));
    }
    if data.leader_epoch < 0 || data.leader_id < -1 || data.voted_id < -1 {
        return Err(corrupt(format!(
            "negative epoch or id (epoch {}, leader {}, voted {})",
            data.leader_epoch, data.leader_id, data.voted_id
        )));
    }
    Ok(ElectionState {
        epoch: data.leader_epoch,
        voted: (data.voted_id >= 0)
            .then(|| ReplicaKey::new(data.voted_id, data.voted_directory_id)),
        leader_id: (data.leader_id >= 0).then_some(data.leader_id),
    })
}

/// Replaces the election state atomically and durably (tmp, fsync, rename, fsync of the directory).
pub fn write_quorum_state(path: &Path, state: &ElectionState) -> Result<(), StorageError> {
    let data = QuorumStateData {
        leader_id: state.leader_id.unwrap_or(-1),
        leader_epoch: state.epoch,
        voted_id: state.voted.map_or(-1, |k| k.id),
        voted_directory_id: state.voted.map_or(Uuid::nil(), |k| k.directory_or_nil()),
        data_version: DATA_VERSION,
    };
    let json = serde_json::to_vec(&data).map_err(|e| StorageError::Corrupt {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    write_atomically(path, &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_missing_and_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quorum-state");
        assert_eq!(read_quorum_state(&path).unwrap(), ElectionState::default());
        let state = ElectionState {
            epoch: 7,
            voted: Some(ReplicaKey::new(2, Uuid::from_u128(5))),
            leader_id: None,
        };
        write_quorum_state(&path, &state).unwrap();
        assert_eq!(read_quorum_state(&path).unwrap(), state);
        assert!(!dir.path().join("quorum-state.tmp").exists());
        for bad in [&b"{"[..], b"{\"leaderId\":1}", b"", b"\xff\xfe"] {
            std::fs::write(&path, bad).unwrap();
            assert!(matches!(
                read_quorum_state(&path),
                Err(StorageError::Corrupt { .. })
            ));
        }
        let neg = br#"{"leaderId":1,"leaderEpoch":-3,"votedId":-1,"votedDirectoryId":"00000000-0000-0000-0000-000000000000","data_version":1}"#;
        std::fs::write(&path, neg).unwrap();
        assert!(matches!(
            read_quorum_state(&path),
            Err(StorageError::Corrupt { .. })
        ));
    }
}
