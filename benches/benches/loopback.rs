//! A 3-voter `kraft` cluster (plus one observer) in this process on 127.0.0.1: DescribeQuorum v3 requests
//! per second from 1 and 16 connections, and the latency of one committed append (an AddRaftVoter or
//! RemoveRaftVoter of the observer, which the leader answers once the VotersRecord is committed; the
//! node has no client data-append API on the wire). Client and nodes share the machine's cores.

use std::time::{Duration, Instant};

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};

use benches::loopback::{directory_id, Client, LocalCluster};
use kraft::server::client::Client as KraftClient;

const OBSERVER: i32 = 4;

fn describe_quorum(c: &mut Criterion) {
    let cluster = LocalCluster::start(3, 0, 50).expect("cluster starts");
    let leader = cluster
        .wait_for_leader(Duration::from_secs(30))
        .expect("leader");
    let addr = cluster.addr(leader);
    let mut group = c.benchmark_group("loopback_describe_quorum_v3");
    group.throughput(Throughput::Elements(1));
    for connections in [1usize, 16] {
        let mut clients: Vec<Client> = (0..connections)
            .map(|_| Client::connect(&addr).expect("connects"))
            .collect();
        for client in &mut clients {
            let resp = client.describe_quorum(3).expect("describes");
            assert_eq!(resp.topics[0].partitions[0].leader_id, leader);
        }
        group.bench_function(BenchmarkId::new("connections", connections), |b| {
            // `iters` requests in all, spread over the connections, each connection on its own thread.
            b.iter_custom(|iters| {
                let per = iters / connections as u64;
                let extra = iters % connections as u64;
                let start = Instant::now();
                std::thread::scope(|s| {
                    for (k, client) in clients.iter_mut().enumerate() {
                        let n = per + u64::from((k as u64) < extra);
                        s.spawn(move || {
                            for _ in 0..n {
                                client.describe_quorum(3).expect("describes");
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
    }
    group.finish();
}

fn committed_change(c: &mut Criterion) {
    let mut group = c.benchmark_group("loopback_committed_voter_change");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    for fetch_interval_ms in [50u64, 5] {
        let cluster = LocalCluster::start(3, 1, fetch_interval_ms).expect("cluster starts");
        let leader = cluster
            .wait_for_leader(Duration::from_secs(30))
            .expect("leader");
        let mut client = Client::connect(&cluster.addr(leader)).expect("connects");
        let port = cluster.ports[(OBSERVER - 1) as usize];
        let dir = directory_id(OBSERVER);
        // The observer must have caught up once before the leader accepts it (retry until it has).
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let resp = client
                .add_voter(&cluster.cluster_id, OBSERVER, dir, port)
                .expect("AddRaftVoter answered");
            if resp.error_code == 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "AddRaftVoter kept failing: {resp:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut is_voter = true;
        group.bench_function(
            BenchmarkId::new("fetch_interval_ms", fetch_interval_ms),
            |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        let code = if is_voter {
                            client
                                .remove_voter(&cluster.cluster_id, OBSERVER, dir)
                                .expect("RemoveRaftVoter answered")
                                .error_code
                        } else {
                            client
                                .add_voter(&cluster.cluster_id, OBSERVER, dir, port)
                                .expect("AddRaftVoter answered")
                                .error_code
                        };
                        total += start.elapsed();
                        assert_eq!(code, 0, "voter change refused (voter={is_voter})");
                        is_voter = !is_voter;
                    }
                    total
                })
            },
        );
    }
    group.finish();
}

/// What TLS costs: a new connection with one DescribeQuorum v3 (TCP connect, for TLS also the mutual-TLS
/// handshake: ECDSA P-256 certificates, TLS 1.3, ring), plaintext vs TLS; and DescribeQuorum v3 on one
/// established connection, plaintext vs TLS. Both with `kraft::server::client::Client`.
fn tls_cost(c: &mut Criterion) {
    let plain = LocalCluster::start(3, 0, 50).expect("cluster starts");
    let (tls, client_tls) = LocalCluster::start_tls(3, 0, 50).expect("TLS cluster starts");
    let timeout = Duration::from_secs(10);
    let mut group = c.benchmark_group("loopback_tls");
    group.throughput(Throughput::Elements(1));
    for (name, cluster, config) in [
        ("plaintext", &plain, None),
        ("tls", &tls, Some(&client_tls)),
    ] {
        let leader = cluster
            .wait_for_leader(Duration::from_secs(30))
            .expect("leader");
        let addr = cluster.addr(leader);
        group.bench_function(BenchmarkId::new("connect_and_describe", name), |b| {
            b.iter(|| {
                let mut client =
                    KraftClient::connect_with(&addr, timeout, config).expect("connects");
                client.describe_quorum(3).expect("describes")
            })
        });
        let mut client = KraftClient::connect_with(&addr, timeout, config).expect("connects");
        group.bench_function(BenchmarkId::new("describe_on_open_connection", name), |b| {
            b.iter(|| client.describe_quorum(3).expect("describes"))
        });
    }
    group.finish();
}

criterion_group!(benches, describe_quorum, committed_change, tls_cost);
criterion_main!(benches);
