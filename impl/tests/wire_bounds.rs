//! Every decoder of the node, its peer side and the CLI is bounded by its input: a length that claims
//! more than the bytes that remain is a typed error naming message, field and offset, never an
//! allocation. The mutation sweep decodes at least 10^4 mutated frames per served API (byte flips,
//! truncations, length splices) and checks each is `Ok` or a typed error, with the largest single
//! allocation within a small multiple of the frame.
//!
//! `KRAFT_WRITE_SEEDS=$PWD/impl/fuzz/seeds cargo test -p kraft --test wire_bounds write_seeds` writes the
//! sample frames as the fuzz seeds.

mod frames;
mod largest_allocation;

use std::cell::Cell;

use bytes::Bytes;
use kraft::server::codec::{self, CodecError};
use kraft::wire::WireError;
use largest_allocation::largest_allocation;
use proptest::prelude::*;

use frames::{Sample, Side};

/// kafka-protocol's structs are at most a few hundred bytes and each takes at least one input byte;
/// a count taken on trust would need gigabytes.
fn allocation_bound(len: usize) -> usize {
    512 * len + 4096
}

/// Decodes `payload` (a frame without its size prefix) the way its receiver does.
fn decode(sample: &Sample, payload: Bytes) -> Result<(), CodecError> {
    frames::decode(sample.side, sample.api_key, sample.version, payload)
}

/// Returns whether the frame decoded (`false`: a typed error).
fn check(sample: &Sample, payload: &[u8]) -> bool {
    let (result, largest) = largest_allocation(|| decode(sample, Bytes::copy_from_slice(payload)));
    assert!(
        largest <= allocation_bound(payload.len()),
        "{}: allocated {largest} bytes for a {}-byte frame",
        sample.name,
        payload.len()
    );
    match result {
        Ok(()) => true,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            false
        }
    }
}

#[test]
fn every_sample_decodes() {
    let samples = frames::samples();
    for s in &samples {
        decode(s, s.payload.clone()).unwrap_or_else(|e| panic!("{}: {e}", s.name));
    }
    // Every served API has request samples, and every API a node or the CLI reads an answer of has
    // response samples.
    for (key, min, max) in frames::served() {
        for v in min..=max {
            assert!(
                samples
                    .iter()
                    .any(|s| s.side == Side::Request && s.api_key == key && s.version == v),
                "no request sample for api {key} v{v}"
            );
        }
    }
}

/// The reported defect: an EndQuorumEpoch request of under 100 bytes whose Topics count claims 2^32
/// elements aborted the node ("memory allocation of 85899345760 bytes failed").
#[test]
fn huge_claimed_count_is_a_typed_error_not_an_allocation() {
    let s = frames::samples()
        .into_iter()
        .find(|s| s.side == Side::Request && s.api_key == 54 && s.version == 1)
        .unwrap();
    // EndQuorumEpoch v1: header v2 = key, version, correlation, client id (int16 + bytes), tags (1 byte);
    // then the body: ClusterId (compact string, a one-byte length here), Topics (compact array).
    let client_id_len = i16::from_be_bytes([s.payload[8], s.payload[9]]) as usize;
    let cluster_id_at = 8 + 2 + client_id_len + 1;
    let topics_at = cluster_id_at + s.payload[cluster_id_at] as usize;
    let mut bad = s.payload[..topics_at].to_vec();
    bad.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0]);
    let (result, largest) = largest_allocation(|| codec::decode_request(Bytes::from(bad.clone())));
    assert!(largest < 4096, "allocated {largest}");
    match result {
        Err(CodecError::Wire(WireError::LengthTooLarge {
            field,
            offset,
            length,
            remaining,
        })) => {
            assert_eq!(field, "EndQuorumEpochRequest.Topics");
            assert_eq!(offset, 4 + topics_at, "offset counts from the size prefix");
            assert_eq!(length, u64::from(u32::MAX) - 1);
            assert_eq!(remaining, 2);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn claimed_lengths_past_the_end_are_rejected_in_responses_too() {
    for s in frames::samples() {
        if s.side == Side::Request {
            continue;
        }
        // Claim 2^31-1 for a four-byte length at every position: never an allocation of that size.
        for at in 0..s.payload.len().saturating_sub(4) {
            let mut bad = s.payload.to_vec();
            bad[at..at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
            check(&s, &bad);
        }
    }
}

/// One mutation of a frame.
#[derive(Clone, Debug)]
enum Mutation {
    Flip {
        at: usize,
        bits: u8,
    },
    Truncate {
        keep: usize,
    },
    /// Overwrites bytes at `at` with a length that claims far more than the frame holds.
    Splice {
        at: usize,
        length: SpliceLength,
    },
    Insert {
        at: usize,
        byte: u8,
    },
}

#[derive(Clone, Debug)]
enum SpliceLength {
    Varint(u32),
    Int16(i16),
    Int32(i32),
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    let length = prop_oneof![
        any::<u32>().prop_map(SpliceLength::Varint),
        Just(SpliceLength::Varint(u32::MAX)),
        any::<i16>().prop_map(SpliceLength::Int16),
        any::<i32>().prop_map(SpliceLength::Int32),
        Just(SpliceLength::Int32(i32::MAX)),
        Just(SpliceLength::Int32(-2)),
    ];
    prop_oneof![
        4 => (any::<usize>(), 1u8..=255).prop_map(|(at, bits)| Mutation::Flip { at, bits }),
        1 => any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
        4 => (any::<usize>(), length).prop_map(|(at, length)| Mutation::Splice { at, length }),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Insert { at, byte }),
    ]
}

fn apply(frame: &mut Vec<u8>, m: &Mutation) {
    if frame.is_empty() {
        return;
    }
    match *m {
        Mutation::Flip { at, bits } => {
            let i = at % frame.len();
            frame[i] ^= bits;
        }
        Mutation::Truncate { keep } => frame.truncate(keep % frame.len()),
        Mutation::Insert { at, byte } => frame.insert(at % (frame.len() + 1), byte),
        Mutation::Splice { at, ref length } => {
            let bytes: Vec<u8> = match *length {
                SpliceLength::Varint(mut v) => {
                    let mut out = Vec::new();
                    while v >= 0x80 {
                        out.push((v as u8) | 0x80);
                        v >>= 7;
                    }
                    out.push(v as u8);
                    out
                }
                SpliceLength::Int16(v) => v.to_be_bytes().to_vec(),
                SpliceLength::Int32(v) => v.to_be_bytes().to_vec(),
            };
            let i = at % frame.len();
            for (k, b) in bytes.into_iter().enumerate() {
                if let Some(slot) = frame.get_mut(i + k) {
                    *slot = b;
                }
            }
        }
    }
}

/// Cases per API (each case is one sample of that API, any version, with 1–4 mutations).
const CASES_PER_API: u32 = 10_000;

fn sweep(api_key: i16, side: Side) {
    let samples: Vec<Sample> = frames::samples()
        .into_iter()
        .filter(|s| s.api_key == api_key && s.side == side)
        .collect();
    assert!(!samples.is_empty(), "no {side:?} samples for api {api_key}");
    let config = ProptestConfig {
        cases: CASES_PER_API,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let n = samples.len();
    let (cases, decoded) = (Cell::new(0u32), Cell::new(0u32));
    proptest!(config, |(pick in 0..n, mutations in prop::collection::vec(arb_mutation(), 1..4))| {
        let s = &samples[pick];
        let mut frame = s.payload.to_vec();
        for m in &mutations {
            apply(&mut frame, m);
        }
        cases.set(cases.get() + 1);
        decoded.set(decoded.get() + u32::from(check(s, &frame)));
    });
    assert!(
        cases.get() >= CASES_PER_API,
        "only {} cases ran",
        cases.get()
    );
    eprintln!(
        "sweep api {api_key} {side:?}: {} mutated frames, {} decoded, {} typed errors",
        cases.get(),
        decoded.get(),
        cases.get() - decoded.get()
    );
}

macro_rules! sweeps {
    ($($name:ident: $key:expr, $side:expr;)*) => {
        $(#[test] fn $name() { sweep($key, $side) })*
    };
}

sweeps! {
    sweep_fetch_request: 1, Side::Request;
    sweep_metadata_request: 3, Side::Request;
    sweep_api_versions_request: 18, Side::Request;
    sweep_vote_request: 52, Side::Request;
    sweep_begin_quorum_epoch_request: 53, Side::Request;
    sweep_end_quorum_epoch_request: 54, Side::Request;
    sweep_describe_quorum_request: 55, Side::Request;
    sweep_add_raft_voter_request: 80, Side::Request;
    sweep_remove_raft_voter_request: 81, Side::Request;
    sweep_update_raft_voter_request: 82, Side::Request;
    sweep_describe_cluster_request: 60, Side::Request;
    sweep_fetch_snapshot_request: 59, Side::Request;
    sweep_fetch_snapshot_response: 59, Side::PeerResponse;
    sweep_fetch_response: 1, Side::PeerResponse;
    sweep_vote_response: 52, Side::PeerResponse;
    sweep_begin_quorum_epoch_response: 53, Side::PeerResponse;
    sweep_end_quorum_epoch_response: 54, Side::PeerResponse;
    sweep_metadata_response: 3, Side::ClientResponse;
    sweep_api_versions_response: 18, Side::ClientResponse;
    sweep_describe_quorum_response: 55, Side::ClientResponse;
    sweep_add_raft_voter_response: 80, Side::ClientResponse;
    sweep_remove_raft_voter_response: 81, Side::ClientResponse;
    sweep_update_raft_voter_response: 82, Side::ClientResponse;
    sweep_describe_cluster_response: 60, Side::ClientResponse;
}

/// Writes every sample as a fuzz seed under `$KRAFT_WRITE_SEEDS/<target>/` (the target's input format,
/// see `Sample::fuzz_input`); a no-op without the variable.
#[test]
fn write_seeds() {
    let Ok(dir) = std::env::var("KRAFT_WRITE_SEEDS") else {
        return;
    };
    for s in frames::samples() {
        let sub = std::path::Path::new(&dir).join(s.side.fuzz_target());
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(&s.name), s.fuzz_input()).unwrap();
    }
}

/// Seeds of the `records_decoder` and `storage_files` targets: Kafka v2 batches (data, LeaderChange,
/// KRaftVersion + Voters) and each file a node reads at start, as this crate writes them.
#[test]
fn write_file_seeds() {
    use kraft::log::{Batch, Record};
    use kraft::node::ElectionState;
    use kraft::storage::{write_bootstrap, write_quorum_state, MetaProperties};
    use kraft_sim::{directory_id, key, voter_set};

    let Ok(dir) = std::env::var("KRAFT_WRITE_SEEDS") else {
        return;
    };
    let dir = std::path::Path::new(&dir);
    let batches = [
        Batch {
            base_offset: 0,
            epoch: 1,
            append_time: 0,
            records: vec![
                Record::KRaftVersion(1),
                Record::Voters(voter_set(&[1, 2, 3])),
            ],
        },
        Batch {
            base_offset: 2,
            epoch: 2,
            append_time: 0,
            records: vec![Record::LeaderChange {
                leader_id: 1,
                voters: vec![1, 2, 3],
                granting_voters: vec![1, 2],
            }],
        },
        Batch {
            base_offset: 3,
            epoch: 2,
            append_time: 0,
            records: vec![Record::Data(Bytes::from_static(b"alpha"))],
        },
    ];
    let log = kraft::records::encode_batches(&batches).unwrap();
    let records = dir.join("records_decoder");
    std::fs::create_dir_all(&records).unwrap();
    std::fs::write(records.join("log"), &log).unwrap();
    for (i, b) in batches.iter().enumerate() {
        let one = kraft::records::encode_batches(std::slice::from_ref(b)).unwrap();
        std::fs::write(records.join(format!("batch{i}")), &one).unwrap();
    }

    let tmp = tempfile::tempdir().unwrap();
    let quorum_state = tmp.path().join("quorum-state");
    write_quorum_state(
        &quorum_state,
        &ElectionState {
            epoch: 4,
            voted: Some(key(2)),
            leader_id: Some(2),
        },
    )
    .unwrap();
    let bootstrap = tmp.path().join(kraft::storage::BOOTSTRAP_SNAPSHOT_FILE);
    write_bootstrap(&bootstrap, &voter_set(&[1, 2, 3])).unwrap();
    let meta = MetaProperties {
        cluster_id: "sim-cluster".into(),
        node_id: 1,
        directory_id: directory_id(1),
    }
    .to_properties();
    let storage = dir.join("storage_files");
    std::fs::create_dir_all(&storage).unwrap();
    // The first byte selects the file kind (see the target).
    let seeds: [(&str, u8, Vec<u8>); 4] = [
        ("quorum_state", 0, std::fs::read(&quorum_state).unwrap()),
        ("meta_properties", 1, meta.into_bytes()),
        (
            "bootstrap_checkpoint",
            2,
            std::fs::read(&bootstrap).unwrap(),
        ),
        ("segment", 3, log.to_vec()),
    ];
    for (name, which, content) in seeds {
        let mut input = vec![which];
        input.extend_from_slice(&content);
        std::fs::write(storage.join(name), input).unwrap();
    }
}

/// The frame readers reserve for the bytes that arrived, never for what the size prefix announces: a
/// prefix claiming 100 MiB followed by 1,000 bytes and end-of-stream costs one 8 KiB chunk; a complete
/// 1 MiB frame at most twice its size.
#[test]
fn frame_readers_reserve_only_what_arrived() {
    use kraft::wire::frame::{read_frame, read_frame_blocking, FrameReadError};
    let max = 128 << 20;
    let mut lying = (100i32 << 20).to_be_bytes().to_vec();
    lying.extend_from_slice(&[7; 1000]);
    let (result, largest) = largest_allocation(|| read_frame_blocking(&mut &lying[..], max));
    assert!(matches!(result, Err(FrameReadError::Io(_))), "{result:?}");
    assert!(largest <= 8 << 10, "blocking reader allocated {largest}");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (result, largest) =
        largest_allocation(|| runtime.block_on(read_frame(&mut &lying[..], max)));
    assert!(matches!(result, Err(FrameReadError::Io(_))), "{result:?}");
    assert!(largest <= 8 << 10, "async reader allocated {largest}");

    let mut whole = (1i32 << 20).to_be_bytes().to_vec();
    whole.extend(std::iter::repeat_n(1u8, 1 << 20));
    let (result, largest) = largest_allocation(|| read_frame_blocking(&mut &whole[..], max));
    assert_eq!(result.unwrap().len(), 1 << 20);
    assert!(largest <= 2 << 20, "allocated {largest}");

    // Negative and oversized prefixes are refused before anything is read.
    for size in [-1i32, i32::MIN, (max + 1) as i32] {
        let bytes = size.to_be_bytes();
        assert!(matches!(
            read_frame_blocking(&mut &bytes[..], max),
            Err(FrameReadError::Size(WireError::FrameSize { .. }))
        ));
    }
    // Zero and tiny frames are frames; the request decoder names what is missing.
    let empty = 0i32.to_be_bytes();
    let payload = read_frame_blocking(&mut &empty[..], max).unwrap();
    assert!(matches!(
        codec::decode_request(payload),
        Err(CodecError::ShortHeader(0))
    ));
}
