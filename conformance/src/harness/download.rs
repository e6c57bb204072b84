//! Snapshot downloads on the implementation side: the model's atomic `FetchSnapshot` step as
//! FetchSnapshot round trips, and a restart that cuts a download short (see `mapping`).

use std::sync::Arc;

use kraft::node::{Harness, Message, Role as KRole, SnapshotId};
use model::types::Id;

use super::{Applied, Cluster};
use crate::mapping;

impl Cluster {
    /// The model's `FetchSnapshot{replica, leader}`: FetchSnapshot round trips ([`Self::snapshot_round`])
    /// until the download is installed (`Effect::CompleteSnapshot`, `Node::snapshot_loaded`, within the
    /// step) or ends otherwise (the leader no longer holds it). The model's step is atomic: after every
    /// chunk but the last, the abstract state of both nodes must still be the one before the step.
    pub(super) fn fetch_snapshot(
        &mut self,
        replica: Id,
        leader: Id,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let before = [self.abstract_of(replica)?, self.abstract_of(leader)?];
        let (mut chunks, installs) = (0u64, applied.downloads.installs);
        loop {
            let Some((id, written)) = self.nodes[replica as usize].snapshot_download() else {
                return Err(format!("{replica} downloads no snapshot"));
            };
            chunks += self.snapshot_round(replica, leader, applied)?;
            match self.nodes[replica as usize].snapshot_download() {
                Some((now_id, now_written)) if now_id == id && now_written > written => {
                    let after = [self.abstract_of(replica)?, self.abstract_of(leader)?];
                    if after != before {
                        return Err(format!(
                            "a chunk of {id} changed the abstract state mid-download: {after:?}, was {before:?}"
                        ));
                    }
                }
                // Installed, dropped, or stuck (the comparison after the step tells which).
                _ => break,
            }
        }
        if applied.downloads.installs > installs {
            let d = &mut applied.downloads;
            d.min_chunks = if d.min_chunks == 0 {
                chunks
            } else {
                d.min_chunks.min(chunks)
            };
        }
        Ok(())
    }

    /// Restart of a follower mid-download: one chunk of the snapshot it downloads, which must not
    /// complete it (the `.checkpoint.part` the restart finds) nor change its abstract state.
    pub(super) fn cut_download_short(
        &mut self,
        replica: Id,
        leader: Id,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let before = self.abstract_of(replica)?;
        self.snapshot_round(replica, leader, applied)?;
        match (&self.parts[replica as usize], self.nodes[replica as usize].snapshot_download()) {
            (Some((id, bytes)), Some((downloading, written)))
                if *id == downloading && bytes.len() as u64 == written && written > 0 => {}
            other => {
                return Err(format!(
                    "one chunk at {replica} left {other:?}, expected a partial download (chunks of {} bytes)",
                    mapping::SNAPSHOT_CHUNK_BYTES
                ))
            }
        }
        let after = self.abstract_of(replica)?;
        if after != before {
            return Err(format!(
                "a chunk changed the abstract state of {replica} mid-download: {after:?}, was {before:?}"
            ));
        }
        applied.downloads.part_restarts += 1;
        Ok(())
    }

    /// The leader that would serve `replica`'s download now: `replica` follows it in its epoch, has
    /// written nothing yet (between model steps a download has no bytes), and it holds the file.
    pub(super) fn serving_leader(&self, replica: Id) -> Option<Id> {
        let r = &self.nodes[replica as usize];
        let (id, 0) = r.snapshot_download()? else {
            return None;
        };
        let leader = Id::try_from(r.leader_id()?).ok()?;
        let l = self.nodes.get(leader as usize)?;
        (r.role() == KRole::Follower
            && l.role() == KRole::Leader
            && l.epoch() == r.epoch()
            && self.files[leader as usize].contains_key(&id))
        .then_some(leader)
    }

    /// One FetchSnapshot round trip: the replica's fetch (`fetch_from`) must be one FetchSnapshotRequest to
    /// `leader` for the snapshot it downloads, at the position it has written; the leader's answer (its
    /// chunk filled from its file, as a shell does) goes back at once. Both cross the wire codec
    /// ([`mapping::through_wire`]). Returns 1 if the answer carried bytes.
    pub(super) fn snapshot_round(
        &mut self,
        replica: Id,
        leader: Id,
        applied: &mut Applied,
    ) -> Result<u64, String> {
        let downloading = self.nodes[replica as usize].snapshot_download();
        let now = self.tick_clock(replica);
        let mut out =
            Arc::make_mut(&mut self.nodes[replica as usize]).fetch_from(now, i32::from(leader));
        let sent = std::mem::take(&mut out.requests);
        self.absorb(replica, out, None, applied)?;
        let req = match sent.as_slice() {
            [(to, Message::FetchSnapshotRequest(r))] if *to == i32::from(leader) => r.clone(),
            other => {
                return Err(format!(
                    "the fetch of {replica} sent {other:?}, expected one FetchSnapshotRequest to {leader}"
                ))
            }
        };
        let p = req
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .ok_or("FetchSnapshotRequest without a partition")?;
        let asked = SnapshotId {
            end_offset: p.snapshot_id.end_offset,
            epoch: p.snapshot_id.epoch,
        };
        if downloading.map(|(id, written)| (id, written as i64)) != Some((asked, p.position)) {
            return Err(format!(
                "FetchSnapshot of {asked} at {} from {replica}, which downloads {downloading:?}",
                p.position
            ));
        }
        let req = mapping::through_wire(&Message::FetchSnapshotRequest(req))?;
        let now = self.tick_clock(leader);
        let mut out =
            Arc::make_mut(&mut self.nodes[leader as usize]).handle(now, i32::from(replica), req);
        let replies = std::mem::take(&mut out.replies);
        self.absorb(leader, out, None, applied)?;
        let mut resp = match replies.as_slice() {
            [(to, Message::FetchSnapshotResponse(r))] if *to == i32::from(replica) => r.clone(),
            other => {
                return Err(format!(
                    "leader {leader} answered {other:?}, expected one FetchSnapshotResponse to {replica}"
                ))
            }
        };
        let mut carried = 0;
        if let Some(chunk) = kraft::node::snapshot_chunk(&resp) {
            let file = self.files[leader as usize]
                .get(&chunk.id)
                .ok_or_else(|| format!("leader {leader} serves {} without its file", chunk.id))?;
            let (start, len) = (chunk.position as usize, chunk.len as usize);
            if start + len > file.len() {
                return Err(format!("leader {leader} serves {} past its end", chunk.id));
            }
            kraft::node::fill_snapshot_chunk(&mut resp, file.slice(start..start + len));
            carried = u64::from(len > 0);
        }
        applied.downloads.chunks += carried;
        let resp = mapping::through_wire(&Message::FetchSnapshotResponse(resp))?;
        let now = self.tick_clock(replica);
        let out =
            Arc::make_mut(&mut self.nodes[replica as usize]).handle(now, i32::from(leader), resp);
        self.absorb(replica, out, None, applied)?;
        Ok(carried)
    }
}
