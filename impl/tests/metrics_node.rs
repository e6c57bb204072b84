//! `kraft node --metrics-listener`: real processes scraped over HTTP (no Prometheus needed), each figure
//! checked against what `describe` (DescribeQuorum v3) reports, through an add-voter whose VotersRecord
//! stays uncommitted while two followers are paused, then commits.

mod cluster_support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::Duration;

use cluster_support::*;

const TIMING: &[&str] = &[
    "--election-timeout-ms",
    "300",
    "--fetch-timeout-ms",
    "4000",
    "--fetch-interval-ms",
    "20",
];

/// One scrape: every sample line as `name{labels}` → value.
fn scrape(port: u16) -> Option<BTreeMap<String, f64>> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    Some(
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (name, value) = l.rsplit_once(' ')?;
                Some((name.to_string(), value.parse().ok()?))
            })
            .collect(),
    )
}

fn metric(m: &BTreeMap<String, f64>, name: &str) -> Option<f64> {
    m.get(&format!("kafka_server_raft_metrics_{name}")).copied()
}

/// The ids of the labelled `committed_voter` series.
fn committed_ids(m: &BTreeMap<String, f64>) -> Vec<i32> {
    let prefix = "kafka_server_raft_metrics_committed_voter{id=\"";
    m.keys()
        .filter_map(|k| k.strip_prefix(prefix)?.strip_suffix("\"}")?.parse().ok())
        .collect::<std::collections::BTreeSet<i32>>()
        .into_iter()
        .collect()
}

#[test]
fn node_metrics_match_describe_through_an_uncommitted_add() {
    let ports = free_ports(4);
    let c = Cluster::start_with(3, 1, 11, TIMING, tempfile::tempdir().unwrap(), |id| {
        vec![
            "--metrics-listener".into(),
            format!("127.0.0.1:{}", ports[(id - 1) as usize]),
        ]
    });
    let port = |id: i32| ports[(id - 1) as usize];
    c.wait_for_leader(Duration::from_secs(20));

    // Settled: node 4 observes, and the leader's figures equal its DescribeQuorum answer.
    let (d, m) = wait_until(
        "leader metrics equal to describe",
        Duration::from_secs(15),
        || {
            let d = c.describe()?;
            let leader = d.partition.leader_id;
            let m = scrape(port(leader))?;
            let (_, committed, observers) = ids(&d);
            let same = metric(&m, "current_leader") == Some(leader as f64)
                && metric(&m, "current_epoch") == Some(d.partition.leader_epoch as f64)
                && metric(&m, "high_watermark") == Some(d.partition.high_watermark as f64)
                && committed_ids(&m) == committed
                && observers == [4]
                && metric(&m, "number_of_observers") == Some(1.0);
            same.then_some((d, m))
        },
    );
    let leader = d.partition.leader_id;
    assert_eq!(metric(&m, "number_of_voters"), Some(3.0));
    assert_eq!(metric(&m, "committed_voters"), Some(3.0));
    assert_eq!(metric(&m, "current_vote"), Some(leader as f64));
    // The leader voted for itself: its own directory id (the cluster's formatting gives 0x1000 + id).
    let own = kraft::storage::format_directory_id(uuid::Uuid::from_u128(0x1000 + leader as u128));
    assert_eq!(
        m.get(&format!(
            "kafka_server_raft_metrics_current_vote_directory_id{{directory_id=\"{own}\"}}"
        )),
        Some(&1.0)
    );
    assert_eq!(metric(&m, "number_unknown_voter_connections"), Some(0.0));
    let idle = metric(&m, "poll_idle_ratio_avg").unwrap();
    // Every poll has some work after its wait: strictly below 1 (1.0 is the default with no polls).
    assert!(idle > 0.0 && idle < 1.0, "poll_idle_ratio_avg {idle}");
    assert_eq!(
        m.get("kafka_server_raft_metrics_current_state{state=\"leader\"}"),
        Some(&1.0)
    );
    assert_eq!(metric(&m, "uncommitted_voter_change"), Some(0.0));
    assert_eq!(metric(&m, "last_voters_record_committed"), Some(1.0));
    assert_eq!(
        metric(&m, "uncommitted_voter_change_age_seconds"),
        Some(0.0)
    );
    assert!(metric(&m, "log_end_offset").unwrap() >= d.partition.high_watermark as f64);
    let followers: Vec<i32> = [1, 2, 3].into_iter().filter(|i| *i != leader).collect();
    for f in &followers {
        let fm = wait_until("a follower's metrics", Duration::from_secs(10), || {
            scrape(port(*f))
        });
        assert_eq!(metric(&fm, "current_leader"), Some(leader as f64));
        assert_eq!(
            fm.get("kafka_server_raft_metrics_current_state{state=\"follower\"}"),
            Some(&1.0)
        );
        assert_eq!(
            metric(&fm, "number_of_observers"),
            None,
            "leader only, as in Kafka"
        );
    }
    let om = scrape(port(4)).unwrap();
    assert_eq!(
        om.get("kafka_server_raft_metrics_current_state{state=\"observer\"}"),
        Some(&1.0)
    );
    // An observer never votes: the zero UUID, as Kafka's.
    assert_eq!(
        om.get("kafka_server_raft_metrics_current_vote_directory_id{directory_id=\"AAAAAAAAAAAAAAAAAAAAAA\"}"),
        Some(&1.0)
    );

    // Add node 4 with both followers paused: the new VotersRecord stays above the HW.
    for f in &followers {
        c.signal(*f, "STOP");
    }
    let bootstrap = c.addr(leader);
    let dir4 = c.nodes[&4].dir.to_str().unwrap().to_string();
    let endpoint4 = c.addr(4);
    let adder = std::thread::spawn(move || {
        run(&[
            "add-voter",
            "--bootstrap-controller",
            &bootstrap,
            "--data-dir",
            &dir4,
            "--endpoint",
            &endpoint4,
        ])
    });
    let lagging = wait_until(
        "an uncommitted change for over a second",
        Duration::from_secs(10),
        || {
            let m = scrape(port(leader))?;
            (metric(&m, "uncommitted_voter_change_age_seconds")? > 1.0).then_some(m)
        },
    );
    let d = c.describe_via(&c.addr(leader)).unwrap();
    let (current, committed, _) = ids(&d);
    assert_eq!(
        (current, committed.clone()),
        (vec![1, 2, 3, 4], vec![1, 2, 3])
    );
    assert_eq!(committed_ids(&lagging), committed);
    assert_eq!(metric(&lagging, "number_of_voters"), Some(4.0));
    assert_eq!(metric(&lagging, "committed_voters"), Some(3.0));
    assert_eq!(metric(&lagging, "uncommitted_voter_change"), Some(1.0));
    assert_eq!(metric(&lagging, "last_voters_record_committed"), Some(0.0));
    assert!(
        metric(&lagging, "last_voters_record_offset").unwrap() >= d.partition.high_watermark as f64,
        "the record is at or above the HW"
    );
    let later = scrape(port(leader)).unwrap();
    assert!(
        metric(&later, "uncommitted_voter_change_age_seconds")
            > metric(&lagging, "uncommitted_voter_change_age_seconds"),
        "the age grows"
    );

    // Resumed: the change commits, the age drops to 0 and the figures equal describe's again.
    for f in &followers {
        c.signal(*f, "CONT");
    }
    assert!(adder.join().unwrap().status.success());
    wait_until(
        "the committed change in the metrics",
        Duration::from_secs(15),
        || {
            let d = c.describe_via(&c.addr(leader))?;
            let m = scrape(port(leader))?;
            let (_, committed, _) = ids(&d);
            (committed == [1, 2, 3, 4]
                && committed_ids(&m) == committed
                && metric(&m, "committed_voters") == Some(4.0)
                && metric(&m, "last_voters_record_committed") == Some(1.0)
                && metric(&m, "uncommitted_voter_change_age_seconds") == Some(0.0)
                && metric(&m, "uncommitted_voter_change") == Some(0.0)
                && metric(&m, "high_watermark") == Some(d.partition.high_watermark as f64))
            .then_some(())
        },
    );
    // Kafka's windowed figures: the leader appended and committed within the last minute, a follower fetched.
    let m = scrape(port(leader)).unwrap();
    assert!(metric(&m, "append_records_rate").unwrap() > 0.0, "{m:?}");
    let commit = metric(&m, "commit_latency_max").unwrap();
    assert!(commit.is_finite() && commit >= 0.0, "{m:?}");
    assert_eq!(
        metric(&m, "fetch_records_rate"),
        Some(0.0),
        "a leader fetches nothing"
    );
    let fm = scrape(port(followers[0])).unwrap();
    assert!(metric(&fm, "fetch_records_rate").unwrap() > 0.0, "{fm:?}");
}
