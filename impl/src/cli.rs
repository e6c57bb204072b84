//! The `kraft` command line: `format`, `node`, `describe`, `add-voter`, `remove-voter`, `cluster`, `certs`.
//!
//! Exit codes (also in `impl/README.md`):
//! - 0 success
//! - 1 the server answered with a Kafka error code (its name and message are printed)
//! - 2 usage error (bad flags or values)
//! - 3 server unreachable (connection refused, unknown host)
//! - 4 timeout (no answer in time, or the change did not complete before `--timeout-ms`)
//! - 5 protocol error (a response that cannot be decoded)
//! - 6 storage or configuration error (data directory, config file)
//! - 7 the node stopped on a fatal error (e.g. the quorum-state file cannot be written)
//! - 8 TLS failed (handshake, untrusted or refused certificate)
//! - 9 SASL authentication failed (wrong username or password)
//! - 10 SASL mechanism refused (not one kraft speaks, or not enabled on the listener)
//! - 11 authorization failed (CLUSTER_AUTHORIZATION_FAILED: the principal lacks an ACL, which is named)
//! - 141 stdout closed by its reader (`kraft describe ... | head`), as a tool killed by SIGPIPE reports

/// Exit code when the reader closed stdout: what a tool killed by SIGPIPE reports (128 + 13), where
/// `println!` would panic.
pub const EXIT_STDOUT_CLOSED: i32 = 141;

/// Writes to stdout; a closed stdout ends the process with [`EXIT_STDOUT_CLOSED`].
pub fn write_out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if out.write_fmt(args).is_err() || out.flush().is_err() {
        std::process::exit(EXIT_STDOUT_CLOSED);
    }
}

/// `println!` through [`write_out`] (defined before the submodules so they can use it).
macro_rules! out {
    ($($t:tt)*) => {
        $crate::cli::write_out(format_args!("{}\n", format_args!($($t)*)))
    };
}

/// `print!` through [`write_out`].
macro_rules! out_part {
    ($($t:tt)*) => {
        $crate::cli::write_out(format_args!($($t)*))
    };
}

pub mod admin;
pub mod certs;
pub mod committed;
pub mod controller_properties;
pub mod decode;
pub mod describe;
pub mod format;
pub mod node_settings;
pub mod observe;
pub mod properties;
pub mod run;
pub mod snapshot_head;
pub mod snapshot_settings;
pub mod static_voters;
pub mod watch;
pub mod watch_metrics;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub const EXIT_OK: i32 = 0;
pub const EXIT_KAFKA_ERROR: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_UNREACHABLE: i32 = 3;
pub const EXIT_TIMEOUT: i32 = 4;
pub const EXIT_PROTOCOL: i32 = 5;
pub const EXIT_STORAGE: i32 = 6;
pub const EXIT_NODE_FAILED: i32 = 7;
pub const EXIT_TLS: i32 = 8;
pub const EXIT_AUTHENTICATION: i32 = 9;
pub const EXIT_SASL_MECHANISM: i32 = 10;
pub const EXIT_AUTHORIZATION: i32 = 11;

#[derive(Parser, Debug)]
#[command(
    name = "kraft",
    version,
    about = "KRaft dynamic membership with a committed voter set (KIP-853, KIP-1204)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Format a data directory: identity (meta.properties) and the bootstrap voter set.
    Format(FormatArgs),
    /// Run a node from a formatted data directory.
    Node(Box<NodeArgs>),
    /// Describe the quorum like `kafka-metadata-quorum describe`, plus CommittedVoters.
    Describe(DescribeArgs),
    /// Add a voter (AddRaftVoter) and wait until the change is committed.
    AddVoter(AddVoterArgs),
    /// Remove a voter (RemoveRaftVoter) and wait until the change is committed.
    RemoveVoter(RemoveVoterArgs),
    /// Format (if needed) and run an N-node local cluster in this process, until Ctrl-C or SIGTERM.
    Cluster(ClusterArgs),
    /// Measure DescribeQuorum round trips per second against one node (closed loop per connection).
    BenchDescribe(BenchDescribeArgs),
    /// Decode a log segment or a DescribeQuorum response body with our decoders and print JSON.
    Decode(DecodeArgs),
    /// Write the TLS files `kraft cluster --tls` uses (a new CA, `node-<id>.pem` per node id,
    /// `admin.pem`, `admin.properties`) for nodes started one by one with `kraft node`.
    Certs(CertsArgs),
}

#[derive(Args, Debug)]
pub struct CertsArgs {
    /// A directory without a `ca.pem` (created with mode 0700; it holds private keys).
    #[arg(long)]
    pub dir: PathBuf,
    /// The node ids to issue certificates for (`CN=kraft-node-<id>`), e.g. `1,2,3`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub node_ids: Vec<i32>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum DecodeKind {
    /// Kafka v2 record batches (a `.log` segment or an older `bootstrap.checkpoint`).
    Records,
    /// A snapshot file (`<offset>-<epoch>.checkpoint`, e.g. Kafka's bootstrap snapshot).
    Snapshot,
    /// A DescribeQuorum response body (no size prefix, no header); needs `--version`.
    DescribeQuorumResponse,
}

#[derive(Args, Debug)]
pub struct DecodeArgs {
    pub kind: DecodeKind,
    pub file: PathBuf,
    #[arg(long, value_parser = clap::value_parser!(i16).range(0..=3))]
    pub version: Option<i16>,
}

#[derive(Args, Debug)]
pub struct BenchDescribeArgs {
    /// HOST:PORT of the node to measure.
    #[arg(long)]
    pub bootstrap_controller: String,
    #[arg(long, default_value_t = 10_000)]
    pub requests: u64,
    #[arg(long, default_value_t = 1)]
    pub connections: u64,
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i16).range(0..=3))]
    pub api_version: i16,
    /// Client properties (TLS), as for `describe`.
    #[arg(long)]
    pub command_config: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("bootstrap_voters").args(["initial_controllers", "no_initial_controllers", "standalone"])))]
pub struct FormatArgs {
    /// A Kafka controller's properties file (`kafka-storage format --config`): node id from `node.id`, the
    /// data directory from `metadata.log.dir` or the first of `log.dirs`, the endpoint for `--standalone`
    /// from `advertised.listeners`/`listeners`. Flags win.
    #[arg(short = 'c', long)]
    pub config: Option<PathBuf>,
    #[arg(long, required_unless_present = "config")]
    pub data_dir: Option<PathBuf>,
    #[arg(short = 't', long)]
    pub cluster_id: String,
    #[arg(long, required_unless_present = "config")]
    pub node_id: Option<i32>,
    /// The bootstrap voters: `ID@HOST:PORT:DIRECTORY_ID,...` (directory ids in Kafka's base64 form).
    #[arg(short = 'I', long)]
    pub initial_controllers: Option<String>,
    /// No bootstrap voter set (Kafka's `--no-initial-controllers`): the node starts as an observer, finds
    /// the quorum through `kraft node --bootstrap-servers` and learns the voters from the log.
    #[arg(short = 'N', long)]
    pub no_initial_controllers: bool,
    /// This node alone is the bootstrap voter set (Kafka's `--standalone`), at its advertised controller
    /// listener; needs `--config`.
    #[arg(short = 's', long, requires = "config")]
    pub standalone: bool,
    /// Static voters (Kafka's `controller.quorum.voters`): `ID@HOST:PORT,...`, this node among them. The
    /// directory is formatted for kraft.version 0, as `kafka-storage format` does when the key is set;
    /// the set itself is configured (`kraft node --voters`), not written. Without it (and without the key
    /// in `--config`) one of `--standalone`, `--initial-controllers`, `--no-initial-controllers` is needed.
    #[arg(long, conflicts_with_all = ["initial_controllers", "standalone"])]
    pub voters: Option<String>,
    /// Directory id of this node when it is not among the initial controllers (default: random).
    #[arg(long)]
    pub directory_id: Option<String>,
    /// Succeed without changes if the directory is already formatted with the same identity.
    #[arg(short = 'g', long)]
    pub ignore_formatted: bool,
}

#[derive(Args, Debug, Default, Clone)]
pub struct NodeArgs {
    /// A Kafka controller's properties file (`controller.properties`, see `cli::controller_properties`),
    /// or, named `*.toml`, a TOML file with the same keys as the flags (data_dir, listener, ...).
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// HOST:PORT to listen on and advertise (listener name CONTROLLER).
    #[arg(long)]
    pub listener: Option<String>,
    /// Kafka's `controller.quorum.bootstrap.servers`: `HOST:PORT[,HOST:PORT...]` an observer asks while it
    /// knows no leader (default: the voters of its latest set). Required on a directory formatted with
    /// `--no-initial-controllers`.
    #[arg(long)]
    pub bootstrap_servers: Option<String>,
    /// Static voters (Kafka's `controller.quorum.voters`): `ID@HOST:PORT,...`, this node among them; for a
    /// directory formatted with them (kraft.version 0). A directory with a voter set (kraft.version 1)
    /// ignores them, as Kafka does.
    #[arg(long)]
    pub voters: Option<String>,
    /// Refuse to start unless the data directory belongs to this node id.
    #[arg(long)]
    pub node_id: Option<i32>,
    /// Refuse to start unless the data directory belongs to this cluster.
    #[arg(long)]
    pub cluster_id: Option<String>,
    #[arg(long)]
    pub election_timeout_ms: Option<u64>,
    #[arg(long)]
    pub fetch_timeout_ms: Option<u64>,
    #[arg(long)]
    pub fetch_interval_ms: Option<u64>,
    #[arg(long)]
    pub request_timeout_ms: Option<u64>,
    /// Kafka's `controller.quorum.auto.join.enable` (KIP-1186): a node that is not a voter adds itself
    /// with AddRaftVoter once it follows the leader (first removing a voter with its id and another
    /// directory id).
    #[arg(long)]
    pub auto_join: bool,
    #[arg(long)]
    pub max_frame_bytes: Option<usize>,
    #[arg(long)]
    pub idle_timeout_ms: Option<u64>,
    #[arg(long)]
    pub frame_timeout_ms: Option<u64>,
    #[arg(long)]
    pub max_in_flight: Option<usize>,
    /// Incoming connections served at once; more are accepted and closed at once, with a log line
    /// (default 1024).
    #[arg(long)]
    pub max_connections: Option<usize>,
    /// Seed of the election-timeout RNG (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// A node that is not the leader forwards a client's DescribeQuorum to the leader and answers with
    /// its answer, as a Kafka broker does (default true); false: it answers NOT_LEADER_OR_FOLLOWER, as a
    /// Kafka controller does.
    #[arg(long)]
    pub describe_quorum_forwarding: Option<bool>,
    /// HOST:PORT to serve Prometheus/OpenMetrics text at `/metrics` on: Kafka's raft-metrics and the
    /// committed voter set (`metrics_listener` in a TOML config, `kraft.metrics.listener` in a properties
    /// file; Kafka has no such key). Off by default.
    #[arg(long)]
    pub metrics_listener: Option<String>,
    /// Kafka's `security.protocol` for the listener and peer links: PLAINTEXT (default) or SSL.
    #[arg(long)]
    pub security_protocol: Option<String>,
    /// `ssl.keystore.location`: PEM file with this node's unencrypted private key and certificate chain.
    #[arg(long)]
    pub ssl_keystore_location: Option<String>,
    /// `ssl.truststore.location`: PEM file with the trusted CA certificates.
    #[arg(long)]
    pub ssl_truststore_location: Option<String>,
    /// `ssl.client.auth`: none, requested or required (mutual TLS).
    #[arg(long)]
    pub ssl_client_auth: Option<String>,
    /// `controller.principal.template`: the certificate subject that proves node id {id}, e.g.
    /// `CN=kraft-node-{id}`; Raft RPCs naming another id are refused.
    #[arg(long)]
    pub controller_principal_template: Option<String>,
    /// `super.users`: `User:DN;User:DN`, the only principals allowed to add or remove voters.
    #[arg(long)]
    pub super_users: Option<String>,
    /// `metadata.log.max.record.bytes.between.snapshots`: bytes appended since the latest snapshot that
    /// trigger the next one (default 20 MiB, as Kafka).
    #[arg(long)]
    pub metadata_log_max_record_bytes_between_snapshots: Option<String>,
    /// `metadata.log.max.snapshot.interval.ms`: time since the latest snapshot that triggers the next one;
    /// 0: off (default 1 h).
    #[arg(long)]
    pub metadata_log_max_snapshot_interval_ms: Option<String>,
    /// `metadata.max.retention.bytes`: log + snapshots above this delete the oldest snapshot and the log
    /// below the next; negative: off (default 100 MiB).
    #[arg(long)]
    pub metadata_max_retention_bytes: Option<String>,
    /// `metadata.max.retention.ms`: snapshots older than this are deleted likewise; negative: off
    /// (default 7 d).
    #[arg(long)]
    pub metadata_max_retention_ms: Option<String>,
    /// `controller.quorum.fetch.snapshot.max.bytes`: MaxBytes of this node's FetchSnapshot requests
    /// (default 1 MiB).
    #[arg(long)]
    pub controller_quorum_fetch_snapshot_max_bytes: Option<String>,
    /// `internal.metadata.log.segment.bytes` (Kafka's testing-only name): size at which a new log segment
    /// starts (default 8 MiB); segments wholly below the log start are deleted.
    #[arg(long)]
    pub internal_metadata_log_segment_bytes: Option<String>,
}

#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("bootstrap").required(true).args(["bootstrap_controller", "bootstrap_server"])))]
pub struct ConnectArgs {
    /// One or more controllers, `HOST:PORT[,HOST:PORT...]`. Any one is enough: like Kafka's admin client,
    /// the CLI asks it (DescribeCluster, KIP-919) which controller is active and talks to that one.
    #[arg(long)]
    pub bootstrap_controller: Option<String>,
    /// One or more brokers, `HOST:PORT[,HOST:PORT...]` (Kafka's `--bootstrap-server`): DescribeQuorum,
    /// AddRaftVoter and RemoveRaftVoter go to a broker, which forwards them to the active controller.
    /// CommittedVoters is computed from the metadata log fetched at the controller endpoints the
    /// quorum description names (DescribeQuorum v2 `Nodes`), which must be reachable from here.
    #[arg(long)]
    pub bootstrap_server: Option<String>,
    /// Per-request timeout, and the overall deadline of add-voter and remove-voter.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,
    /// Client properties, as Kafka's tools take them: `security.protocol=SSL`, `ssl.truststore.location`,
    /// `ssl.keystore.location` (PEM), `ssl.endpoint.identification.algorithm`.
    #[arg(long)]
    pub command_config: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["status", "replication", "watch"])))]
pub struct DescribeArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[arg(long)]
    pub status: bool,
    #[arg(long)]
    pub replication: bool,
    #[arg(long)]
    pub json: bool,
    /// With --replication: timestamps as `N ms ago`, as `kafka-metadata-quorum` prints them.
    #[arg(long)]
    pub human_readable: bool,
    /// DescribeQuorum version to use (0–3); default: the highest both sides support. Below 3 the
    /// leader serves no CommittedVoters: `--status` and `--json` then compute it from the metadata log,
    /// fetched as an observer with replica id −1 (which the leader does not track).
    #[arg(long, value_parser = clap::value_parser!(i16).range(0..=3))]
    pub api_version: Option<i16>,
    /// Print only what the leader served: below DescribeQuorum v3, CommittedVoters stays empty.
    #[arg(long)]
    pub served_only: bool,
    /// Follow the metadata log as an observer (replica id −1) and print a line at each change of the
    /// leader, HighWatermark, CurrentVoters or CommittedVoters (with --json: one JSON object per line),
    /// until stopped.
    #[arg(long)]
    pub watch: bool,
    /// With --watch: serve the quorum's figures (leader, epoch, HW, voters, observers, CommittedVoters,
    /// the age of an uncommitted voter change) as Prometheus/OpenMetrics text at `/metrics` on HOST:PORT.
    #[arg(long, requires = "watch")]
    pub metrics_listener: Option<String>,
}

#[derive(Args, Debug)]
pub struct AddVoterArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Read node id and directory id from this (formatted) data directory.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    #[arg(long)]
    pub node_id: Option<i32>,
    #[arg(long)]
    pub directory_id: Option<String>,
    /// The new voter's listener, HOST:PORT.
    #[arg(long)]
    pub endpoint: String,
    #[arg(long, default_value = "CONTROLLER")]
    pub listener_name: String,
}

#[derive(Args, Debug)]
pub struct RemoveVoterArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[arg(long)]
    pub node_id: i32,
    /// Default: the directory id of that voter in the current voter set.
    #[arg(long)]
    pub directory_id: Option<String>,
}

#[derive(Args, Debug)]
pub struct ClusterArgs {
    #[arg(long)]
    pub nodes: i32,
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long)]
    pub base_port: u16,
    #[arg(long, default_value = "kraft-local-cluster")]
    pub cluster_id: String,
    /// Mutual TLS: generate a CA and certificates in DIR/tls (kept across restarts) and write
    /// DIR/tls/admin.properties for `--command-config`.
    #[arg(long)]
    pub tls: bool,
}

/// A failure with its exit code and the message printed to stderr.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
}

impl From<crate::server::client::ClientError> for Failure {
    fn from(e: crate::server::client::ClientError) -> Self {
        use crate::server::client::ClientError as E;
        let code = match &e {
            E::Unreachable { .. } => EXIT_UNREACHABLE,
            E::Timeout { .. } => EXIT_TIMEOUT,
            E::Io { .. } => EXIT_UNREACHABLE,
            E::Protocol { .. } => EXIT_PROTOCOL,
            E::Tls { .. } => EXIT_TLS,
            E::Sasl { failure, .. } => match failure {
                crate::server::sasl::SaslFailure::Mechanism { .. } => EXIT_SASL_MECHANISM,
                crate::server::sasl::SaslFailure::Authentication(_) => EXIT_AUTHENTICATION,
                crate::server::sasl::SaslFailure::Exchange(_) => EXIT_PROTOCOL,
            },
        };
        Failure::new(code, e.to_string())
    }
}

impl From<crate::server::tls::TlsError> for Failure {
    fn from(e: crate::server::tls::TlsError) -> Self {
        Failure::new(EXIT_STORAGE, e.to_string())
    }
}

impl From<crate::server::sasl::SaslConfigError> for Failure {
    fn from(e: crate::server::sasl::SaslConfigError) -> Self {
        let code = match e {
            crate::server::sasl::SaslConfigError::Mechanism(_) => EXIT_SASL_MECHANISM,
            _ => EXIT_STORAGE,
        };
        Failure::new(code, e.to_string())
    }
}

impl From<crate::server::sasl::listener::ListenerSaslError> for Failure {
    fn from(e: crate::server::sasl::listener::ListenerSaslError) -> Self {
        Failure::new(EXIT_STORAGE, e.to_string())
    }
}

impl From<properties::PropertiesError> for Failure {
    fn from(e: properties::PropertiesError) -> Self {
        Failure::new(EXIT_STORAGE, e.to_string())
    }
}

impl From<controller_properties::ControllerConfigError> for Failure {
    fn from(e: controller_properties::ControllerConfigError) -> Self {
        Failure::new(EXIT_STORAGE, e.to_string())
    }
}

impl From<crate::storage::StorageError> for Failure {
    fn from(e: crate::storage::StorageError) -> Self {
        Failure::new(EXIT_STORAGE, e.to_string())
    }
}

/// Kafka's name and message for an error code, e.g. `NOT_LEADER_OR_FOLLOWER: For requests ...`.
pub fn kafka_error(code: i16, message: Option<&str>) -> String {
    let Some(err) = kafka_protocol::error::ResponseError::try_from_code(code) else {
        return "NONE".into();
    };
    let camel = format!("{err:?}");
    let mut name = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    // The server's message if it sent one, else Kafka's default message for the code.
    let text = message
        .filter(|m| !m.is_empty())
        .or_else(|| crate::node::error_message(code))
        .unwrap_or("(no message)");
    format!("{name} ({code}): {text}")
}

/// Parses and runs the command line; returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour codes only on a terminal: `kraft cluster > file` or a pipe gets plain text.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
    let result = match cli.command {
        Command::Format(args) => format::format(&args),
        Command::Node(args) => run::node(*args),
        Command::Cluster(args) => run::cluster(args),
        Command::Describe(args) => admin::describe(&args),
        Command::AddVoter(args) => admin::add_voter(&args),
        Command::RemoveVoter(args) => admin::remove_voter(&args),
        Command::BenchDescribe(args) => admin::bench_describe(&args),
        Command::Decode(args) => decode::decode(&args),
        Command::Certs(args) => certs::write_certs(&args),
    };
    match result {
        Ok(()) => EXIT_OK,
        Err(f) => {
            eprintln!("error: {}", f.message);
            f.code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_error_names() {
        assert!(kafka_error(6, None)
            .starts_with("NOT_LEADER_OR_FOLLOWER (6): For requests intended only for the leader"));
        assert_eq!(
            kafka_error(127, Some("gone")),
            "VOTER_NOT_FOUND (127): gone"
        );
        assert_eq!(kafka_error(0, None), "NONE");
    }

    #[test]
    fn human_readable_only_with_replication_as_in_kafka() {
        let parse = |args: &[&str]| Cli::try_parse_from(args.iter().copied());
        let base = ["kraft", "describe", "--bootstrap-controller", "h:1"];
        let with = |extra: &[&'static str]| [&base[..], extra].concat();
        let describe = |args: &[&str]| match parse(args).unwrap().command {
            Command::Describe(d) => d,
            other => panic!("{other:?}"),
        };
        let refused =
            admin::check_describe_flags(&describe(&with(&["--status", "--human-readable"])));
        let message = refused.unwrap_err().message;
        assert_eq!(
            message,
            "The option --human-readable is only supported along with --replication"
        );
        assert!(admin::check_describe_flags(&describe(&with(&[
            "--replication",
            "--human-readable"
        ])))
        .is_ok());
    }

    #[test]
    fn describe_needs_exactly_one_mode() {
        let parse = |args: &[&str]| Cli::try_parse_from(args.iter().copied());
        assert!(parse(&["kraft", "describe", "--bootstrap-controller", "h:1"]).is_err());
        assert!(parse(&[
            "kraft",
            "describe",
            "--bootstrap-controller",
            "h:1",
            "--status",
            "--replication"
        ])
        .is_err());
        assert!(parse(&[
            "kraft",
            "describe",
            "--bootstrap-controller",
            "h:1",
            "--status",
            "--api-version",
            "4"
        ])
        .is_err());
        assert!(parse(&[
            "kraft",
            "describe",
            "--bootstrap-controller",
            "h:1",
            "--replication",
            "--json"
        ])
        .is_ok());
    }
}
