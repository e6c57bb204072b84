//! Shared helpers of the process-level tests: real `kraft` processes on 127.0.0.1 ephemeral ports.
//! Every process is killed when its guard drops (also when a test fails); every wait is bounded.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use kraft::cli::admin::find_leader;
use kraft::cli::describe::QuorumDescription;
use kraft::cli::ConnectArgs;
use kraft::log::{Batch, RaftLog, Record};
use kraft::storage::{format_directory_id, DataDir, FileLog, MetaProperties};

pub const BIN: &str = env!("CARGO_BIN_EXE_kraft");

/// Ports the OS hands out now; bound and released at once (a small race, acceptable for tests).
pub fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<_> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

pub fn wait_until<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A node process; killed (SIGKILL) on drop.
pub struct Proc {
    pub child: Child,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-CONT")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct NodeSpec {
    pub id: i32,
    pub port: u16,
    pub dir: PathBuf,
    pub proc: Option<Proc>,
    pub extra: Vec<String>,
}

pub struct Cluster {
    pub root: tempfile::TempDir,
    pub nodes: BTreeMap<i32, NodeSpec>,
    pub seed: u64,
    pub timing: Vec<String>,
    /// `--command-config` of the admin client (TLS), used by `describe`.
    pub command_config: Option<PathBuf>,
}

impl Cluster {
    /// Formats `voters` initial voters (ids 1..=voters) and `observers` more nodes, starts them all.
    pub fn start(voters: i32, observers: i32, seed: u64, timing: &[&str]) -> Cluster {
        Cluster::start_with(
            voters,
            observers,
            seed,
            timing,
            tempfile::tempdir().unwrap(),
            |_| Vec::new(),
        )
    }

    /// [`Cluster::start`] in `root`, with `extra(id)` added to each node's command line.
    pub fn start_with(
        voters: i32,
        observers: i32,
        seed: u64,
        timing: &[&str],
        root: tempfile::TempDir,
        extra: impl Fn(i32) -> Vec<String>,
    ) -> Cluster {
        let total = voters + observers;
        let ports = free_ports(total as usize);
        let dir_id = |i: i32| uuid::Uuid::from_u128(0x1000 + i as u128);
        let initial = (1..=voters)
            .map(|i| {
                format!(
                    "{i}@127.0.0.1:{}:{}",
                    ports[(i - 1) as usize],
                    format_directory_id(dir_id(i))
                )
            })
            .collect::<Vec<_>>()
            .join(",");
        let mut nodes = BTreeMap::new();
        for i in 1..=total {
            let dir = root.path().join(format!("node-{i}"));
            let out = run(&[
                "format",
                "--data-dir",
                dir.to_str().unwrap(),
                "--cluster-id",
                "itest",
                "--node-id",
                &i.to_string(),
                "--initial-controllers",
                &initial,
                "--directory-id",
                &format_directory_id(dir_id(i)),
            ]);
            assert!(
                out.status.success(),
                "format failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            nodes.insert(
                i,
                NodeSpec {
                    id: i,
                    port: ports[(i - 1) as usize],
                    dir,
                    proc: None,
                    extra: extra(i),
                },
            );
        }
        let mut cluster = Cluster {
            root,
            nodes,
            seed,
            timing: timing.iter().map(|s| s.to_string()).collect(),
            command_config: None,
        };
        for i in 1..=total {
            cluster.start_node(i);
        }
        cluster
    }

    pub fn start_node(&mut self, id: i32) {
        let log_path = self.root.path().join(format!("node-{id}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        let spec = self.nodes.get_mut(&id).unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(["node", "--data-dir", spec.dir.to_str().unwrap()])
            .args(["--listener", &format!("127.0.0.1:{}", spec.port)])
            .args([
                "--seed",
                &(self.seed.wrapping_mul(31).wrapping_add(id as u64)).to_string(),
            ])
            .args(&self.timing)
            .args(&spec.extra)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        spec.proc = Some(Proc {
            child: cmd.spawn().unwrap(),
        });
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill(&mut self, id: i32) {
        self.nodes.get_mut(&id).unwrap().proc = None;
    }

    pub fn signal(&self, id: i32, signal: &str) {
        let pid = self.nodes[&id].proc.as_ref().unwrap().child.id();
        assert!(Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap()
            .success());
    }

    pub fn addr(&self, id: i32) -> String {
        format!("127.0.0.1:{}", self.nodes[&id].port)
    }

    pub fn bootstrap(&self) -> String {
        self.nodes
            .keys()
            .map(|id| self.addr(*id))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn bootstrap_of(&self, ids: &[i32]) -> String {
        ids.iter()
            .map(|id| self.addr(*id))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The leader's DescribeQuorum (v3), or None if no listed node answers as leader now.
    pub fn describe(&self) -> Option<QuorumDescription> {
        self.describe_via(&self.bootstrap())
    }

    pub fn describe_via(&self, bootstrap: &str) -> Option<QuorumDescription> {
        let connect = ConnectArgs {
            bootstrap_controller: Some(bootstrap.to_string()),
            bootstrap_server: None,
            timeout_ms: 1000,
            command_config: self.command_config.clone(),
        };
        find_leader(&connect, Some(3), Duration::from_millis(1000))
            .ok()
            .map(|l| l.description)
    }

    /// Waits for a leader with a known HW; returns its description.
    pub fn wait_for_leader(&self, timeout: Duration) -> QuorumDescription {
        wait_until("a leader with a known high watermark", timeout, || {
            self.describe().filter(|d| d.partition.high_watermark >= 0)
        })
    }

    pub fn cli(&self, args: &[&str]) -> Output {
        run(args)
    }

    pub fn log_text(&self, id: i32) -> String {
        std::fs::read_to_string(self.root.path().join(format!("node-{id}.log"))).unwrap_or_default()
    }

    /// The log of a stopped node, read from its segments (recovery runs on open).
    pub fn read_log(&self, id: i32) -> Vec<(i64, i32, Record)> {
        assert!(
            self.nodes[&id].proc.is_none(),
            "read logs of stopped nodes only"
        );
        let data = DataDir::new(&self.nodes[&id].dir);
        let log = FileLog::open(&data.log_dir()).unwrap();
        flatten(log.read(0, usize::MAX).unwrap())
    }

    pub fn meta(&self, id: i32) -> MetaProperties {
        MetaProperties::read(&DataDir::new(&self.nodes[&id].dir).meta_path()).unwrap()
    }
}

pub fn flatten(batches: Vec<Batch>) -> Vec<(i64, i32, Record)> {
    batches
        .into_iter()
        .flat_map(|b| {
            let epoch = b.epoch;
            (b.base_offset..)
                .zip(b.records)
                .map(move |(o, r)| (o, epoch, r))
        })
        .collect()
}

/// Voter ids in force at `offset` according to a log (the last VotersRecord at or before it), falling back
/// to `bootstrap`.
pub fn voters_at(log: &[(i64, i32, Record)], offset: i64, bootstrap: &[i32]) -> Vec<i32> {
    let mut ids = bootstrap.to_vec();
    for (o, _, record) in log {
        if *o > offset {
            break;
        }
        if let Record::Voters(set) = record {
            ids = set.ids().collect();
        }
    }
    ids
}

pub fn run(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: the CLI has its own timeouts; this guards against a hang.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kraft {args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn ids(d: &QuorumDescription) -> (Vec<i32>, Vec<i32>, Vec<i32>) {
    let p = &d.partition;
    let ids = |v: &[kraft::wire::describe_quorum::ReplicaState]| {
        v.iter().map(|r| r.replica_id).collect::<Vec<_>>()
    };
    (
        ids(&p.current_voters),
        ids(&p.committed_voters),
        ids(&p.observers),
    )
}

pub fn data_dir(path: &Path) -> DataDir {
    DataDir::new(path)
}
