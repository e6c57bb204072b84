//! FetchSnapshot responses as a follower in the middle of a download meets them: each response payload
//! (header v1 + body) is walked and decoded as the peer link does (`response_body`,
//! `decode_peer_response`), then handed to the node, which writes a chunk only where it continues the
//! bytes written so far. Input: records of [flags, version, length (u16), payload]; flag bit 0 aims the
//! response at the download in progress (its snapshot id, the leader and epoch fetched from), so that
//! Position, Size and the chunk are what the fuzzer varies. After every response the chunks written must
//! be contiguous from 0, never past a Size, and equal to the download's progress.
#![no_main]

use std::sync::OnceLock;

use kraft::log::SnapshotId;
use kraft_sim::{Envelope, Sim};
use kraft::node::{Effect, Message, Node, Timer};
use kraft::server::codec::{decode_peer_response, response_body};
use libfuzzer_sys::fuzz_target;

/// Leader 1 holds a snapshot; observer 2 has asked for its first chunk.
struct Start {
    node: Node,
    now: u64,
    id: SnapshotId,
    epoch: i32,
}

fn start() -> &'static Start {
    static START: OnceLock<Start> = OnceLock::new();
    START.get_or_init(|| {
        let mut sim = Sim::new(1, 1, 11).expect("sim");
        sim.crash(2);
        sim.elect(1);
        for i in 0..5 {
            sim.append(1, &[format!("r{i}").as_bytes()])
                .expect("append");
        }
        sim.replicate(3);
        let id = SnapshotId {
            end_offset: sim.node(1).high_watermark().expect("hw"),
            epoch: sim.node(1).epoch(),
        };
        assert_eq!(sim.take_snapshot(1), Some(id), "a snapshot at the HW");
        sim.restart(2).expect("restart");
        sim.fire(2, Timer::Fetch);
        for _ in 0..50 {
            if sim.network.iter().any(|e| {
                matches!(
                    e,
                    Envelope {
                        from: 2,
                        msg: Message::FetchSnapshotRequest(_),
                        ..
                    }
                )
            }) {
                break;
            }
            if sim.network.is_empty() {
                sim.fire(2, Timer::Fetch);
            } else {
                sim.deliver(0);
            }
        }
        assert_eq!(sim.node(2).snapshot_download(), Some((id, 0)));
        Start {
            node: sim.node(2).clone(),
            now: sim.clock(2),
            id,
            epoch: sim.node(1).epoch(),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let s = start();
    let mut node = s.node.clone();
    let mut written = 0u64;
    let mut size: Option<u64> = None;
    let mut rest = data;
    while rest.len() >= 4 {
        let (flags, version) = (rest[0], i16::from(rest[1] % 3));
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]])).min(rest.len() - 4);
        let payload = bytes::Bytes::copy_from_slice(&rest[4..4 + len]);
        rest = &rest[4 + len..];
        let Ok((_, body)) = response_body(payload, 59, version) else {
            continue;
        };
        let Ok(Message::FetchSnapshotResponse(mut resp)) = decode_peer_response(body, 59, version)
        else {
            continue;
        };
        if flags & 1 == 1 {
            for p in resp.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                p.snapshot_id.end_offset = s.id.end_offset;
                p.snapshot_id.epoch = s.id.epoch;
                p.current_leader.leader_id.0 = 1;
                p.current_leader.leader_epoch = s.epoch;
            }
        }
        let out = node.handle(s.now, 1, Message::FetchSnapshotResponse(resp));
        for e in &out.effects {
            match e {
                Effect::WriteSnapshotChunk {
                    id,
                    position,
                    bytes,
                } => {
                    assert_eq!(*id, s.id);
                    assert_eq!(
                        *position, written,
                        "a chunk that does not continue the file"
                    );
                    written += bytes.len() as u64;
                }
                Effect::CompleteSnapshot { id, size: total } => {
                    assert_eq!(*id, s.id);
                    assert_eq!(*total, written, "completed at another size than written");
                    size = Some(*total);
                }
                _ => {}
            }
        }
        match node.snapshot_download() {
            Some((id, progress)) => {
                assert_eq!(id, s.id);
                assert_eq!(progress, written);
            }
            None => assert!(size.is_some() || written == 0),
        }
        // The node asks for the next chunk, as the peer link's tick would.
        let _ = node.tick(s.now);
    }
});
