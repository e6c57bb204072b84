//! DescribeQuorum response encode/decode: our codec (v0–3) against kafka-protocol 0.18 (v0–2) on the same
//! messages, in the same run. Encoding goes into a reused buffer (both sides); decoding starts from the
//! encoded body as `Bytes` (both borrow their strings from it; `kraft_copy` is ours from `&[u8]`, copying).

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kafka_protocol::protocol::{Decodable, Encodable};

use benches::fixtures::{describe_response, to_kafka, REPLICA_COUNTS};
use kraft::wire::DescribeQuorumResponse;

type KpResponse = kafka_protocol::messages::DescribeQuorumResponse;

fn codec(c: &mut Criterion) {
    for version in 0..=3i16 {
        let mut encode = c.benchmark_group(format!("dq_encode_v{version}"));
        for &n in &REPLICA_COUNTS {
            let ours = describe_response(n, version);
            let body = ours.to_bytes(version).expect("fixture encodes");
            encode.throughput(Throughput::Bytes(body.len() as u64));
            let mut buf = BytesMut::with_capacity(body.len() * 2);
            encode.bench_with_input(BenchmarkId::new("kraft", n), &ours, |b, m| {
                b.iter(|| {
                    buf.clear();
                    m.encode(version, &mut buf).expect("encodes");
                    black_box(buf.len())
                })
            });
            if version <= 2 {
                let theirs = to_kafka(&ours);
                encode.bench_with_input(BenchmarkId::new("kafka-protocol", n), &theirs, |b, m| {
                    b.iter(|| {
                        buf.clear();
                        m.encode(&mut buf, version).expect("encodes");
                        black_box(buf.len())
                    })
                });
            }
        }
        encode.finish();

        let mut decode = c.benchmark_group(format!("dq_decode_v{version}"));
        for &n in &REPLICA_COUNTS {
            let body: Bytes = describe_response(n, version)
                .to_bytes(version)
                .expect("fixture encodes");
            decode.throughput(Throughput::Bytes(body.len() as u64));
            // `kraft`: strings borrowed from the input (`decode_bytes`); `kraft_copy`: strings copied
            // out of a `&[u8]` (`decode`), one allocation per string as before the borrowing change.
            decode.bench_with_input(BenchmarkId::new("kraft", n), &body, |b, body| {
                b.iter(|| {
                    DescribeQuorumResponse::decode_bytes(black_box(body), version).expect("decodes")
                })
            });
            decode.bench_with_input(BenchmarkId::new("kraft_copy", n), &body, |b, body| {
                b.iter(|| {
                    DescribeQuorumResponse::decode(black_box(body), version).expect("decodes")
                })
            });
            if version <= 2 {
                decode.bench_with_input(BenchmarkId::new("kafka-protocol", n), &body, |b, body| {
                    b.iter(|| {
                        let mut input = black_box(body).clone();
                        KpResponse::decode(&mut input, version).expect("decodes")
                    })
                });
            }
        }
        decode.finish();
    }
}

criterion_group!(benches, codec);
criterion_main!(benches);
