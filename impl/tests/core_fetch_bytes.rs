//! A leader serves the batches it stores byte for byte: a batch a follower received from a Kafka leader
//! (timestamps, keys, headers the core does not model) is served unchanged once that follower leads, and
//! both log implementations keep such a batch's bytes across reads (and, for `FileLog`, a reopen).

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record as KafkaRecord, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use kraft::log::{Batch, MemoryLog, RaftLog, Record, Replicated};
use kraft::node::{Message, Role, Timer};
use kraft::storage::FileLog;
use kraft_sim::{Envelope, Sim};

/// A data batch as Kafka's controller writes one: creation timestamps, keys, headers.
fn kafka_style_batch(base_offset: i64, epoch: i32, values: &[&[u8]]) -> Bytes {
    let records: Vec<KafkaRecord> = values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let mut headers = kafka_protocol::indexmap::IndexMap::new();
            headers.insert(
                kafka_protocol::protocol::StrBytes::from_static_str("h"),
                Some(Bytes::from_static(b"header value")),
            );
            KafkaRecord {
                transactional: false,
                delete_horizon: false,
                control: false,
                partition_leader_epoch: epoch,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: base_offset + i as i64,
                // One batch with base sequence -1 (kafka-protocol derives the base from the first record).
                sequence: i as i32 - 1,
                timestamp: 1_764_000_000_000 + i as i64,
                key: Some(Bytes::from(format!("key-{i}"))),
                value: Some(Bytes::copy_from_slice(value)),
                headers,
            }
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options).expect("encodes");
    buf.freeze()
}

fn replicated(bytes: &Bytes) -> Vec<Replicated> {
    kraft::records::decode_batches_with_bytes(bytes.clone())
        .expect("decodes")
        .into_iter()
        .map(|(batch, raw)| Replicated {
            batch,
            bytes: Some(raw),
        })
        .collect()
}

#[test]
fn both_logs_keep_a_replicated_batch_byte_for_byte() {
    let kafka = kafka_style_batch(1, 1, &[b"a", b"b"]);
    assert_eq!(
        kraft::records::decode_batches(kafka.clone()).unwrap().len(),
        1
    );
    // Our own encoding of the same records differs (timestamps 0, no keys or headers).
    let ours = kraft::records::encode_batches(&[Batch {
        base_offset: 1,
        epoch: 1,
        append_time: 0,
        records: vec![
            Record::Data(Bytes::from_static(b"a")),
            Record::Data(Bytes::from_static(b"b")),
        ],
    }])
    .unwrap();
    assert_ne!(ours, kafka);

    let mut memory = MemoryLog::new();
    memory
        .append_as_leader(1, 0, vec![Record::Data(Bytes::from_static(b"x"))])
        .unwrap();
    memory.append_replicated(replicated(&kafka)).unwrap();
    assert_eq!(memory.read_bytes(1, usize::MAX).unwrap(), kafka);
    assert_eq!(
        memory.read_bytes(2, usize::MAX).unwrap(),
        kafka,
        "whole batches, from the one holding the offset"
    );
    // A batch cut by truncation is no longer the batch it arrived as.
    memory.truncate_to(2).unwrap();
    assert_ne!(memory.read_bytes(1, usize::MAX).unwrap(), kafka.slice(..));

    let dir = tempfile::tempdir().unwrap();
    {
        let mut file = FileLog::open(dir.path()).unwrap();
        file.append_as_leader(1, 0, vec![Record::Data(Bytes::from_static(b"x"))])
            .unwrap();
        file.append_replicated(replicated(&kafka)).unwrap();
        file.flush().unwrap();
        assert_eq!(file.read_bytes(1, usize::MAX).unwrap(), kafka);
    }
    let file = FileLog::open(dir.path()).unwrap();
    assert_eq!(file.end_offset(), 3);
    assert_eq!(file.read_bytes(2, usize::MAX).unwrap(), kafka);
    let all = file.read_bytes(0, usize::MAX).unwrap();
    assert!(all.ends_with(&kafka));
}

/// One fetch round trip of `to` from `from`: `to`'s fetch timer fires, the leader answers, and the reply's
/// records are replaced by `records` when given (a batch as a Kafka leader would have written it). Returns
/// the records the reply carried.
fn fetch_round(sim: &mut Sim, from: i32, to: i32, records: Option<Bytes>) -> Option<Bytes> {
    sim.fire(to, Timer::Fetch);
    sim.deliver_all(1);
    let mut resp = take_fetch_response(sim, from, to);
    if let Some(records) = records {
        resp.responses[0].partitions[0].records = Some(records);
    }
    let served = resp.responses[0].partitions[0].records.clone();
    sim.network.push(Envelope {
        from,
        to,
        msg: Message::FetchResponse(resp),
    });
    sim.deliver_all(10);
    served
}

/// The FetchResponse `from` sent to `to` that is in flight (removed from the network).
fn take_fetch_response(
    sim: &mut Sim,
    from: i32,
    to: i32,
) -> kafka_protocol::messages::FetchResponse {
    let i = sim
        .network
        .iter()
        .position(|e| e.from == from && e.to == to && matches!(e.msg, Message::FetchResponse(_)))
        .expect("a fetch response in flight");
    match sim.network.remove(i).msg {
        Message::FetchResponse(r) => r,
        _ => unreachable!(),
    }
}

#[test]
fn a_leader_serves_a_kafka_batch_it_replicated_unchanged() {
    let mut sim = Sim::new(3, 0, 5).unwrap();
    sim.elect(1);
    sim.replicate(10);
    let epoch = sim.node(1).epoch();
    let end = sim.node(1).log().end_offset();
    assert_eq!(sim.node(2).log().end_offset(), end);

    // Node 2 fetches; the reply carries a batch as a Kafka leader would have written it.
    let kafka = kafka_style_batch(end, epoch, &[b"k1", b"k2"]);
    fetch_round(&mut sim, 1, 2, Some(kafka.clone()));
    assert_eq!(sim.node(2).log().end_offset(), end + 2);

    // Node 2 leads; node 3, which never saw the batch, fetches it from node 2.
    sim.elect(2);
    assert_eq!(sim.node(2).role(), Role::Leader);
    let served = sim.node(2).log().read_bytes(end, usize::MAX).unwrap();
    assert!(
        served.starts_with(&kafka),
        "the leader stores the batch as received"
    );
    let records = fetch_round(&mut sim, 2, 3, None).unwrap();
    assert!(records.starts_with(&kafka), "served byte for byte");
    sim.replicate(10);
    let on_3 = sim.node(3).log().read_bytes(end, usize::MAX).unwrap();
    assert!(on_3.starts_with(&kafka));
    assert_eq!(on_3, sim.node(2).log().read_bytes(end, usize::MAX).unwrap());
}

#[test]
fn a_follower_far_behind_catches_up_over_several_bounded_fetches() {
    use kraft::node::MAX_FETCH_BYTES;
    let mut sim = Sim::new(3, 0, 5).unwrap();
    sim.elect(1);
    sim.replicate(3);
    let epoch = sim.node(1).epoch();
    let end = sim.node(1).log().end_offset();

    // Node 2 receives two large batches (each over half the cap) in one reply; node 3 never sees them.
    let big = vec![7u8; MAX_FETCH_BYTES / 2 + 1024];
    let first = kafka_style_batch(end, epoch, &[&big]);
    let second = kafka_style_batch(end + 1, epoch, &[&big]);
    let mut both = BytesMut::new();
    both.extend_from_slice(&first);
    both.extend_from_slice(&second);
    fetch_round(&mut sim, 1, 2, Some(both.freeze()));
    assert_eq!(sim.node(2).log().end_offset(), end + 2);

    // Node 2 leads; node 3's first fetch from `end` gets the first large batch only, the next the rest.
    sim.elect(2);
    assert_eq!(sim.node(2).role(), Role::Leader);
    assert!(sim.node(3).log().end_offset() <= end);
    // The new leader's log: the two batches and its epoch's LeaderChange.
    let leader_end = sim.node(2).log().end_offset();
    assert!(leader_end > end + 2);
    let mut served = Vec::new();
    for _ in 0..8 {
        if sim.node(3).log().end_offset() >= sim.node(2).log().end_offset() {
            break;
        }
        let len = fetch_round(&mut sim, 2, 3, None).map_or(0, |r| r.len());
        served.push(len);
        assert!(
            len <= MAX_FETCH_BYTES,
            "a reply of {len} bytes exceeds the {MAX_FETCH_BYTES}-byte cap"
        );
    }
    assert_eq!(
        sim.node(3).log().end_offset(),
        sim.node(2).log().end_offset(),
        "replies: {served:?}"
    );
    assert!(served.len() >= 2, "caught up in one reply: {served:?}");
    assert_eq!(
        sim.node(3).log().read_bytes(end, usize::MAX).unwrap(),
        sim.node(2).log().read_bytes(end, usize::MAX).unwrap()
    );
}
