//! The black-box kit: model traces driven over TCP against one KRaft node (`cargo run -p conformance --
//! node ...`). See conformance/README.md, "Test your KRaft implementation".
//!
//! - [`encode`]: model messages ⇄ Kafka messages (the mapping plus the endpoint translation).
//! - [`net`]: the played replicas' listeners and the client connections to the node, every wait bounded.
//! - [`driver`]: the lockstep of model and node, and the typed divergences.
//! - [`scenarios`]: the model paths the kit can force.
//! - [`report`]: JSON Lines and coverage.
//! - [`walk`]: graph-generated paths; [`tour`]: every drivable transition of a small graph.

pub mod driver;
pub mod encode;
pub mod net;
pub mod report;
pub mod scenarios;
pub mod tour;
pub mod walk;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use model::types::Id;
use model::{FetchMode, KraftModel, ModelConfig, NetworkKind, Start};

use driver::{Divergence, Kit};
use encode::Endpoints;
use net::Listeners;
use report::Report;

/// Model server played by the node under test.
pub const NUT: Id = 0;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "conformance node",
    about = "Drive one KRaft node over TCP with model traces: the kit plays the other replicas"
)]
pub struct KitArgs {
    /// Scenarios to run (first-election, add-voter, follow, install-snapshot, leader-snapshot,
    /// leader-log-start, disk-loss, auto-join, all: every one but leader-log-start, which waits for
    /// the node's 60 s retention clock, disk-loss and auto-join). add-voter runs after first-election
    /// on the same node, install-snapshot after follow, leader-snapshot, leader-log-start and
    /// disk-loss each after first-election on a node of its own (`scenarios::node_properties`),
    /// auto-join alone on a node formatted with no voter set under a new directory id.
    #[arg(long, default_value = "all")]
    pub scenario: Vec<String>,
    /// Test an already running node at HOST:PORT instead of starting one. It must be formatted as
    /// `--print-format` says (one scenario per fresh node).
    #[arg(long)]
    pub bootstrap: Option<String>,
    /// With --bootstrap: the first of the three ports the kit's replicas 1, 2, 3 listen on.
    #[arg(long, default_value_t = 19091)]
    pub kit_port: u16,
    /// Print the `--initial-controllers` a node under test must be formatted with, then exit.
    #[arg(long)]
    pub print_format: bool,
    /// The `kraft` binary to start (default: `kit-kraft` next to this executable).
    #[arg(long)]
    pub kraft_bin: Option<PathBuf>,
    /// Format and start the nodes under test with SCRIPT instead of `kraft` (`--walk`, `--tour` and
    /// the scenarios without --bootstrap): `SCRIPT format DIR PORT INITIAL_CONTROLLERS CLUSTER_ID`
    /// formats node 0 in DIR; `SCRIPT start DIR PORT ELECTION_MS FETCH_MS` runs it in the foreground
    /// (`exec` the server: the kit ends and restarts it with SIGKILL). conformance/kafka/kit-node.sh
    /// does this for Apache Kafka.
    #[arg(long)]
    pub node_script: Option<PathBuf>,
    /// Where started nodes keep their data and logs (default: a fresh directory under the temp dir).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// JSON Lines report file (default: none; the summary goes to stdout).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Longest wait for any answer or event of the node, in ms.
    #[arg(long, default_value_t = 10_000)]
    pub wait_ms: u64,
    /// The cluster id the node is formatted with and every request carries (Kafka needs a base64
    /// UUID, e.g. `a3JhZnQta2l0LWNsdXN0ZQ`; default: the mapping's).
    #[arg(long, default_value = crate::mapping::CLUSTER_ID)]
    pub cluster_id: String,
    /// Walk graph GRAPH of the model (`first-election`, `membership`) instead of the scenarios: paths
    /// generated from the model's state graph, restricted to what the kit can force, one fresh
    /// `kraft node` per path (not with --bootstrap). Repeatable.
    #[arg(long)]
    pub walk: Vec<String>,
    /// Tour graph GRAPH (`first-election`, `membership`): paths that together drive every transition
    /// of its kit-drivable graph, one fresh `kraft node` per path (not with --bootstrap). Repeatable.
    #[arg(long)]
    pub tour: Vec<String>,
    /// Election timeout (ms) of a started node that stands first in a --walk or --tour path. A node
    /// whose timer fires again before the kit has followed its election (a slow machine) is cut there,
    /// not reported, and stands again with the timeout doubled while twice it fits in --wait-ms
    /// (`driver::race`); a Kafka controller's JVM starts slower than `kraft`, so less is cut at 3000.
    #[arg(long, default_value_t = 300)]
    pub election_ms: u64,
    /// Paths per walked graph.
    #[arg(long, default_value_t = 8)]
    pub walk_paths: usize,
    /// Kit choices per path at most.
    #[arg(long, default_value_t = 30)]
    pub walk_steps: usize,
    /// Seed of the walks' choices.
    #[arg(long, default_value_t = 1)]
    pub walk_seed: u64,
    /// Records the node may write on its own while it leads (a Kafka controller writes its bootstrap
    /// metadata): accepted as `ClientAppend` steps of the node, the model's data records, when an
    /// answer shows them. 0 (the default) for a node that writes none, such as `kraft`.
    #[arg(long, default_value_t = 0)]
    pub node_appends: u8,
    /// The node writes a played replica its next request only once the one before it is answered
    /// (Apache Kafka: its raft network client allows one request in flight per connection). The
    /// kit then waits only for the oldest of the node's requests to each replica: those behind it
    /// stay in flight in the model, queued in the node, until the kit answers the one ahead.
    /// Without it (`kraft`, which pipelines) every request the model has the node send must arrive.
    #[arg(long)]
    pub one_in_flight: bool,
    /// Batches of records the node writes on its own once it is elected, comma-separated: the first
    /// once its HW passes its epoch's first record, each next once its HW passes the batch before
    /// (Apache Kafka 4.4.0 formatted as kit.sh does: `3,1`, its bootstrap metadata, then its
    /// RegisterControllerRecord). The tours take them as eager steps of the node (the kit waits until
    /// DescribeQuorum shows them); the membership tour starts after them. Within --node-appends.
    #[arg(long, value_delimiter = ',')]
    pub elected_appends: Vec<u8>,
    /// Highest DescribeQuorum version to check (kraft: 3; Kafka 4.4.0: 2).
    #[arg(long, default_value_t = kraft::wire::describe_quorum::MAX_VERSION)]
    pub describe_max: i16,
}

/// Arguments that cannot describe a node under test.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    #[error(
        "--elected-appends adds up to {elected} records, more than the {node} of --node-appends \
         (the records the model lets the node write on its own)"
    )]
    ElectedAppendsBeyondNodeAppends { elected: u32, node: u8 },
}

impl KitArgs {
    /// Checks what clap cannot: the batches of `--elected-appends` fit in `--node-appends`.
    pub fn check(&self) -> Result<(), ArgError> {
        let elected: u32 = self.elected_appends.iter().map(|&b| u32::from(b)).sum();
        if elected > u32::from(self.node_appends) {
            return Err(ArgError::ElectedAppendsBeyondNodeAppends {
                elected,
                node: self.node_appends,
            });
        }
        Ok(())
    }
}

/// The model the kit runs: 3 voters and 1 joiner from a fresh start; fetches are messages (the node's
/// fetches are its own steps); stale messages are delivered, not collected.
/// `node_appends`: records the node may write on its own as leader (`ClientAppend` at the node; a
/// Kafka controller writes its metadata; 0 for `kraft`).
pub fn model_config(node_appends: u8) -> ModelConfig {
    ModelConfig {
        voters: 3,
        joiners: 1,
        max_epoch: 3,
        max_log: (8 + node_appends).min(model::types::MAX_LOG as u8),
        max_data: node_appends,
        max_changes: 1,
        max_crashes: 0,
        max_in_flight: 32,
        fetch: FetchMode::Async,
        network: NetworkKind::Reliable,
        start: Start::Fresh,
        check_quorum: true,
        pre_vote: model::config::IMPL_PRE_VOTE,
        refusal_steps: false,
        gc: false,
        ..ModelConfig::default()
    }
}

/// How the kit formats and starts a node of its own.
#[derive(Clone, Debug)]
pub enum Launcher {
    /// `kraft format` and `kraft node` of this binary.
    Kraft(PathBuf),
    /// `--node-script`: `SCRIPT format ...` and `SCRIPT start ...`.
    Script(PathBuf),
}

/// A started node process, killed when dropped.
pub struct NodeProcess {
    child: Child,
    pub dir: PathBuf,
    launcher: Launcher,
    port: u16,
    /// Kafka properties the node is started with (`scenarios::node_properties`).
    props: Vec<(String, String)>,
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl NodeProcess {
    /// Kills the process (SIGKILL: no shutdown of its own) and waits for it.
    pub fn kill(&mut self) -> Result<(), String> {
        self.child.kill().map_err(|e| format!("kill: {e}"))?;
        self.child.wait().map_err(|e| format!("wait: {e}"))?;
        Ok(())
    }

    /// Starts the node again on the same data directory with timers `(election, fetch)` (ms), and
    /// waits until it listens.
    pub fn start(&mut self, timers: (u64, u64), wait: Duration) -> Result<(), String> {
        self.child = spawn_node(&self.launcher, &self.dir, self.port, timers, &self.props)?;
        let a: SocketAddr = format!("127.0.0.1:{}", self.port)
            .parse()
            .map_err(|e| format!("{e}"))?;
        wait_listening_for(a, wait, Some(self))
    }
}

/// A free port for the node under test, below the ephemeral range (the kit's own listeners take
/// ephemeral ports, so a port handed out here and not yet bound by the node cannot be taken by a
/// listener of a concurrent kit), spread by process id and a counter.
fn free_port() -> Result<u16, String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = std::process::id().wrapping_mul(7919);
    for _ in 0..200 {
        let n = base.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(101));
        let port = 20_000 + (n % 10_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err("no free port in 20000-29999".into())
}

fn kraft_bin(args: &KitArgs) -> Result<Launcher, String> {
    if let Some(s) = &args.node_script {
        return Ok(Launcher::Script(s.clone()));
    }
    if let Some(b) = &args.kraft_bin {
        return Ok(Launcher::Kraft(b.clone()));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    // Test executables live in target/<profile>/deps; the binaries one level up.
    if dir.ends_with("deps") {
        dir.pop();
    }
    let bin = dir.join("kit-kraft");
    if bin.exists() {
        Ok(Launcher::Kraft(bin))
    } else {
        Err(format!(
            "{} not found (build it with `cargo build -p conformance`, or pass --kraft-bin)",
            bin.display()
        ))
    }
}

/// A fresh work directory per run (two runs in one process, e.g. concurrent tests, must not share
/// one: a run removes its directory at the end).
fn default_work_dir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static RUNS: AtomicU32 = AtomicU32::new(0);
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("kraft-kit-{}-{n}", std::process::id()))
}

/// Formats and starts `kraft node` as node 0 of the voters {0, 1, 2} at `eps`, with Kafka properties
/// `props` beside the timers. With `fresh` (a directory id): formatted with no voter set under that
/// directory id instead (`--no-initial-controllers`; a script gets `-` and the id).
fn start_node(
    launcher: &Launcher,
    dir: PathBuf,
    eps: &Endpoints,
    timers: (u64, u64),
    props: Vec<(String, String)>,
    fresh: Option<String>,
) -> Result<NodeProcess, String> {
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let initial = eps.initial_controllers(0b111);
    let port = eps.ports[0].to_string();
    let mut cmd = match launcher {
        Launcher::Kraft(bin) => {
            let mut c = Command::new(bin);
            c.arg("format")
                .arg("--data-dir")
                .arg(dir.join("data"))
                .args(["--cluster-id", &eps.cluster_id, "--node-id", "0"]);
            match &fresh {
                Some(id) => c.args(["--no-initial-controllers", "--directory-id", id]),
                None => c.args(["--initial-controllers", &initial]),
            };
            c
        }
        Launcher::Script(script) => {
            let mut c = Command::new(script);
            c.arg("format").arg(&dir).arg(&port);
            match &fresh {
                Some(id) => c.args(["-", &eps.cluster_id, id]),
                None => c.args([&initial, &eps.cluster_id]),
            };
            c
        }
    };
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{launcher:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "formatting the node failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let child = spawn_node(launcher, &dir, eps.ports[0], timers, &props)?;
    Ok(NodeProcess {
        child,
        dir,
        launcher: launcher.clone(),
        port: eps.ports[0],
        props,
    })
}

/// The node on `dir` listening on `port` (its log appended to `dir`/node.log). `props`: Kafka properties,
/// given to `kraft node` as its flags ([`kraft_flag`]) and to a script as `KIT_NODE_PROPS` (one
/// `key=value` a line).
fn spawn_node(
    launcher: &Launcher,
    dir: &std::path::Path,
    port: u16,
    (election, fetch): (u64, u64),
    props: &[(String, String)],
) -> Result<Child, String> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("node.log"))
        .map_err(|e| e.to_string())?;
    let mut cmd = match launcher {
        Launcher::Kraft(bin) => {
            let mut c = Command::new(bin);
            c.arg("node")
                .arg("--data-dir")
                .arg(dir.join("data"))
                .args(["--listener", &format!("127.0.0.1:{port}")])
                .args(["--election-timeout-ms", &election.to_string()])
                .args(["--fetch-timeout-ms", &fetch.to_string()])
                .args(["--request-timeout-ms", "5000", "--seed", "1"])
                // The kit checks the node as a Kafka controller, which answers a DescribeQuorum it
                // cannot serve with NOT_LEADER_OR_FOLLOWER; its played leaders serve no clients.
                .args(["--describe-quorum-forwarding", "false"]);
            for (k, v) in props {
                c.args(kraft_flag(k, v));
            }
            c
        }
        Launcher::Script(script) => {
            let mut c = Command::new(script);
            c.arg("start").arg(dir).args([
                port.to_string(),
                election.to_string(),
                fetch.to_string(),
            ]);
            let lines: Vec<String> = props.iter().map(|(k, v)| format!("{k}={v}")).collect();
            c.env("KIT_NODE_PROPS", lines.join("\n"));
            c
        }
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("{launcher:?}: {e}"))
}

/// The `kraft node` flags of Kafka property `key` = `value`: the flag of the same name, but for the two
/// `controller.quorum.*` keys whose flags have Kafka's short names (`--bootstrap-servers`, `--auto-join`).
fn kraft_flag(key: &str, value: &str) -> Vec<String> {
    match key {
        "controller.quorum.bootstrap.servers" => vec!["--bootstrap-servers".into(), value.into()],
        "controller.quorum.auto.join.enable" if value == "true" => vec!["--auto-join".into()],
        _ => vec![format!("--{}", key.replace('.', "-")), value.into()],
    }
}

fn wait_listening(addr: SocketAddr, wait: Duration) -> Result<(), String> {
    wait_listening_for(addr, wait, None)
}

/// Waits until `addr` listens; with `node`, fails at once if that process exited (it could not
/// bind, for example).
fn wait_listening_for(
    addr: SocketAddr,
    wait: Duration,
    mut node: Option<&mut NodeProcess>,
) -> Result<(), String> {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(n) = node.as_mut() {
            if let Ok(Some(status)) = n.child.try_wait() {
                return Err(format!(
                    "the node exited ({status}) before listening on {addr}; log in {}",
                    n.dir.display()
                ));
            }
        }
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("the node does not listen on {addr} after {wait:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The outcome of one run of the kit.
pub struct Outcome {
    pub report: Report,
    pub scenarios: Vec<(String, Result<(), String>)>,
    /// Per walked graph (`--walk`): its totals.
    pub walks: Vec<(String, walk::WalkOutcome)>,
    /// Per toured graph (`--tour`): its totals.
    pub tours: Vec<(String, tour::TourOutcome)>,
}

impl Outcome {
    pub fn divergences(&self) -> usize {
        self.scenarios.iter().filter(|s| s.1.is_err()).count()
    }
}

/// Runs the scenarios of `args`; `Err` only when the kit itself cannot start.
pub fn run(args: &KitArgs) -> Result<Outcome, String> {
    args.check().map_err(|e| e.to_string())?;
    let schema = crate::schema::MessageSchema::from_file(
        &crate::wire::default_messages_dir().join("DescribeQuorumResponse.json"),
    )
    .map_err(|e| e.to_string())?;
    if !args.walk.is_empty() || !args.tour.is_empty() {
        return run_walks(args, &schema);
    }
    let mut wanted: Vec<&str> = Vec::new();
    for s in &args.scenario {
        match s.as_str() {
            "all" => wanted.extend(scenarios::ALL.iter().filter(|s| scenarios::in_all(s))),
            s if scenarios::ALL.contains(&s) => wanted
                .push(scenarios::ALL[scenarios::ALL.iter().position(|x| *x == s).unwrap_or(0)]),
            other => {
                return Err(format!(
                    "unknown scenario {other:?} (one of {:?} or all)",
                    scenarios::ALL
                ))
            }
        }
    }
    // add-voter continues first-election on the same node; leader-snapshot does on a node of its own.
    let snapshot = wanted.contains(&"leader-snapshot");
    let log_start = wanted.contains(&"leader-log-start");
    let mut runs: Vec<Vec<&str>> = Vec::new();
    if wanted.contains(&"add-voter")
        || (wanted.contains(&"first-election") && !snapshot && !log_start)
    {
        let mut r = vec!["first-election"];
        if wanted.contains(&"add-voter") {
            r.push("add-voter");
        }
        runs.push(r);
    }
    // install-snapshot continues follow on the same node.
    if wanted.contains(&"follow") || wanted.contains(&"install-snapshot") {
        let mut r = vec!["follow"];
        if wanted.contains(&"install-snapshot") {
            r.push("install-snapshot");
        }
        runs.push(r);
    }
    if snapshot {
        runs.push(vec!["first-election", "leader-snapshot"]);
    }
    if wanted.contains(&"leader-log-start") {
        runs.push(vec!["first-election", "leader-log-start"]);
    }
    if wanted.contains(&"disk-loss") {
        runs.push(vec!["first-election", "disk-loss"]);
    }
    if wanted.contains(&"auto-join") {
        if args.bootstrap.is_some() {
            return Err(
                "auto-join formats its node with no voter set itself: not with --bootstrap".into(),
            );
        }
        runs.push(vec!["auto-join"]);
    }
    let mut report = Report::default();
    if let Some(p) = &args.report {
        let f = std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?;
        report.out = Some(Box::new(std::io::BufWriter::new(f)));
    }
    let wait = Duration::from_millis(args.wait_ms);
    let mut results = Vec::new();
    let work = args.work_dir.clone().unwrap_or_else(default_work_dir);
    // A run whose node's timer races the kit runs again with a longer election timeout (started
    // nodes only: `driver::race`).
    let mut timers: Vec<(u64, u64)> = runs.iter().map(|r| scenarios::timers(r[0])).collect();
    let (mut i, mut n) = (0, 0);
    while i < runs.len() {
        let run = &runs[i];
        n += 1;
        let results_before = results.len();
        let mut raced = None;
        let ports: Vec<(Id, u16)> = match &args.bootstrap {
            // Port 0: any free ports (a node formatted by --print-format needs the fixed ones).
            Some(_) if args.kit_port == 0 => (1..=3).map(|i| (i, 0)).collect(),
            Some(_) => (1..=3)
                .map(|i| (i, args.kit_port + u16::from(i) - 1))
                .collect(),
            None => (1..=3).map(|i| (i, 0)).collect(),
        };
        let (listeners, addrs) =
            Listeners::bind(&ports).map_err(|e| format!("kit listeners: {e}"))?;
        let mut eps = Endpoints::played(&args.cluster_id, addrs);
        let (node_addr, process) = match &args.bootstrap {
            Some(b) => {
                let a: SocketAddr = b.parse().map_err(|e| format!("--bootstrap {b}: {e}"))?;
                eps.ports[0] = a.port();
                // The kit may be started before the node (its replicas listen from the start).
                wait_listening(a, wait)?;
                (a, None)
            }
            None => {
                eps.ports[0] = free_port()?;
                let bin = kraft_bin(args)?;
                let last = run[run.len() - 1];
                let mut props: Vec<(String, String)> = scenarios::node_properties(last)
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                // The auto-join node: its next directory id, no voter set (the model's DiskLoss).
                let fresh = (last == "auto-join").then(|| {
                    props.extend(scenarios::auto_join_properties(&eps));
                    kraft::storage::format_directory_id(crate::mapping::directory_id_at(NUT, 1))
                });
                let dir = work.join(format!("run{n}"));
                let mut p = start_node(&bin, dir, &eps, timers[i], props, fresh)?;
                let a: SocketAddr = format!("127.0.0.1:{}", eps.ports[0])
                    .parse()
                    .map_err(|e| format!("{e}"))?;
                wait_listening_for(a, wait, Some(&mut p))?;
                (a, Some(p))
            }
        };
        let mut cfg = model_config(args.node_appends);
        if run.contains(&"disk-loss") {
            // Voter 1's disk loss and the two changes that bring it back under its new key.
            cfg.max_disk_losses = 1;
            cfg.max_changes = 2;
        }
        if run.contains(&"auto-join") {
            // The node's disk loss, its stale key's removal and its own addition.
            cfg.max_disk_losses = 1;
            cfg.max_changes = 2;
            cfg.auto_join = true;
        }
        let model = KraftModel::new(cfg).map_err(|e| e.to_string())?;
        report.trace = run.join("+");
        let mut kit = Kit::new(
            model,
            NUT,
            eps,
            (node_addr, listeners),
            wait,
            report,
            schema.clone(),
        );
        kit.one_in_flight = args.one_in_flight;
        let dq = 0..=args.describe_max;
        for s in run {
            kit.report.trace = s.to_string();
            let r = match *s {
                "first-election" => scenarios::first_election(&mut kit, dq.clone()),
                "add-voter" => scenarios::add_voter(&mut kit, dq.clone()),
                "install-snapshot" => scenarios::install_snapshot(&mut kit),
                "leader-snapshot" => scenarios::leader_snapshot(&mut kit),
                "leader-log-start" => scenarios::leader_log_start(&mut kit),
                "disk-loss" => scenarios::disk_loss(&mut kit, dq.clone()),
                "auto-join" => scenarios::auto_join(&mut kit, dq.clone()),
                _ => scenarios::follow(&mut kit, dq.clone()),
            };
            if let Err(d) = &r {
                let longer = driver::race::longer_timeout(timers[i].0, args.wait_ms);
                if driver::race::is_timer_race(d) && process.is_some() && longer.is_some() {
                    raced = longer;
                    break;
                }
            }
            let failed = r.is_err();
            results.push((s.to_string(), r.map_err(|d: Box<Divergence>| d.to_string())));
            if failed {
                break;
            }
        }
        report = std::mem::take(&mut kit.report);
        drop(kit);
        if let Some(p) = process {
            // Keep the node's log when something diverged.
            let dir = p.dir.clone();
            drop(p);
            if results.iter().all(|r| r.1.is_ok()) {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        match raced {
            Some(t) => {
                results.truncate(results_before);
                timers[i].0 = t;
            }
            None => i += 1,
        }
    }
    if let Some(out) = report.out.as_mut() {
        let _ = out.flush();
    }
    if args.work_dir.is_none() && results.iter().all(|r| r.1.is_ok()) {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(Outcome {
        report,
        scenarios: results,
        walks: Vec::new(),
        tours: Vec::new(),
    })
}

use std::io::Write as _;

/// `--walk` and `--tour`: graph-generated paths against fresh `kraft node` processes.
fn run_walks(args: &KitArgs, schema: &crate::schema::MessageSchema) -> Result<Outcome, String> {
    if args.bootstrap.is_some() {
        return Err("--walk and --tour start a fresh node per path: not with --bootstrap".into());
    }
    let bin = kraft_bin(args)?;
    let work = args.work_dir.clone().unwrap_or_else(default_work_dir);
    let mut report = Report::default();
    if let Some(p) = &args.report {
        let f = std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?;
        report.out = Some(Box::new(std::io::BufWriter::new(f)));
    }
    let mut outcome = walk::WalkOutcome::default();
    let mut walks = Vec::new();
    for g in &args.walk {
        let mut one = walk::WalkOutcome::default();
        let plan = walk::WalkPlan {
            graph: g,
            paths: args.walk_paths,
            max_steps: args.walk_steps,
            seed: args.walk_seed,
            describe_max: args.describe_max,
        };
        walk::run(args, &plan, &bin, &work, schema, &mut report, &mut one)?;
        outcome.paths += one.paths;
        outcome.choices += one.choices;
        outcome.left_bounds += one.left_bounds;
        outcome.cut += one.cut;
        outcome.results.append(&mut one.results);
        walks.push((g.clone(), one));
    }
    let mut tours = Vec::new();
    for g in &args.tour {
        let mut t = tour::run(args, g, &bin, &work, schema, &mut report)?;
        outcome.results.append(&mut t.results);
        tours.push((g.clone(), t));
    }
    if let Some(out) = report.out.as_mut() {
        let _ = out.flush();
    }
    if args.work_dir.is_none() && outcome.results.iter().all(|r| r.1.is_ok()) {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(Outcome {
        report,
        scenarios: outcome.results,
        walks,
        tours,
    })
}

/// `conformance node ...`: runs the kit and prints the summary; non-zero exit on any divergence.
pub fn main(argv: impl Iterator<Item = String>) -> ExitCode {
    let args = match KitArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if args.print_format {
        let eps = Endpoints {
            ports: vec![
                args.bootstrap
                    .as_deref()
                    .and_then(|b| b.rsplit_once(':'))
                    .and_then(|(_, p)| p.parse().ok())
                    .unwrap_or(9093),
                args.kit_port,
                args.kit_port + 1,
                args.kit_port + 2,
            ],
            cluster_id: args.cluster_id.clone(),
        };
        println!("cluster id:            {}", eps.cluster_id);
        println!("node id:               0");
        println!(
            "directory id:          {}",
            kraft::storage::format_directory_id(crate::mapping::directory_id(0))
        );
        println!("initial controllers:   {}", eps.initial_controllers(0b111));
        return ExitCode::SUCCESS;
    }
    let started = Instant::now();
    let outcome = match run(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("kit: cannot run: {e}");
            println!("kit: 0 scenarios, 0 steps, 0 divergences (could not run)");
            return ExitCode::FAILURE;
        }
    };
    print_summary(&outcome, started.elapsed());
    if outcome.divergences() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The coverage summary and the verdict line.
pub fn print_summary(o: &Outcome, took: Duration) {
    for (s, r) in &o.scenarios {
        match r {
            Ok(()) => println!("scenario {s}: ok"),
            Err(e) => println!("scenario {s}: DIVERGENCE: {e}"),
        }
    }
    println!("model transitions driven (node = the node under test, kit = a played replica):");
    for (k, n) in &o.report.transitions {
        println!("  {n:5}  {k}");
    }
    println!("RPCs on the wire (direction, message, error code):");
    for (k, n) in &o.report.coverage {
        println!("  {n:5}  {k}");
    }
    for (g, w) in &o.walks {
        println!(
            "walk {g}: {} paths, {} kit choices ({} distinct state-action pairs of the graph, {} \
             distinct model states), {} paths ended where the node's own steps left the graph's bounds, \
             {} walked again after a race of the node's timer",
            w.paths, w.choices, w.distinct, w.states, w.left_bounds, w.cut
        );
    }
    for (g, t) in &o.tours {
        println!(
            "tour {g}: {} of {} drivable transitions covered ({} states; {} paths, {} steps, {} \
             paths cut by the node's own timer; election timeout {} ms at the end)",
            t.covered, t.transitions, t.vertices, t.paths, t.steps, t.cut, t.election_ms
        );
        println!("  not drivable (model transitions enabled at the tour's states, by reason):");
        for (why, n) in &t.not_drivable {
            println!("  {n:7}  {why}");
        }
    }
    println!(
        "kit: {} scenarios, {} steps, {} divergences ({:.1} s)",
        o.scenarios.len(),
        o.report.lines.len(),
        o.divergences(),
        took.as_secs_f64()
    );
}
