//! Runs one DescribeQuorum decoder on one bench input a given number of times, for instruction counts
//! under valgrind (this machine has no hardware counters and is shared, so time is noisy; instructions
//! executed are not). The inputs are the `dq_decode_v*` bench inputs (`fixtures::describe_response`).
//!
//! Usage: `decode-count <kraft|kraft_copy|kafka-protocol> <version> <replicas> <iterations>`.
//! Instructions per decode = (count at iterations A − count at iterations B) / (A − B), which cancels
//! start-up and fixture building; `decode-count.sh` next to this does that with `valgrind --tool=callgrind`.

use std::hint::black_box;
use std::process::ExitCode;

use bytes::Bytes;
use kafka_protocol::protocol::Decodable;

use benches::fixtures::describe_response;
use kraft::wire::DescribeQuorumResponse;

type KpResponse = kafka_protocol::messages::DescribeQuorumResponse;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [decoder, version, n, iterations] => {
            match (
                version.parse::<i16>(),
                n.parse::<usize>(),
                iterations.parse::<u64>(),
            ) {
                (Ok(v), Ok(n), Ok(i)) if (0..=3).contains(&v) => Some((decoder.as_str(), v, n, i)),
                _ => None,
            }
        }
        _ => None,
    };
    let Some((decoder, version, n, iterations)) = parsed else {
        eprintln!("usage: decode-count <kraft|kraft_copy|kafka-protocol> <version 0-3> <replicas> <iterations>");
        return ExitCode::from(2);
    };
    let body: Bytes = describe_response(n, version)
        .to_bytes(version)
        .expect("fixture encodes");
    match decoder {
        "kraft" => {
            for _ in 0..iterations {
                black_box(
                    DescribeQuorumResponse::decode_bytes(black_box(&body), version)
                        .expect("decodes"),
                );
            }
        }
        "kraft_copy" => {
            for _ in 0..iterations {
                black_box(
                    DescribeQuorumResponse::decode(black_box(&body), version).expect("decodes"),
                );
            }
        }
        "kafka-protocol" if version <= 2 => {
            for _ in 0..iterations {
                let mut input = black_box(&body).clone();
                black_box(KpResponse::decode(&mut input, version).expect("decodes"));
            }
        }
        _ => {
            eprintln!("unknown decoder {decoder:?} (kafka-protocol: v0-2 only)");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
