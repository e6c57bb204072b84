//! `kraft describe`, `kraft add-voter`, `kraft remove-voter`: admin requests to the quorum leader.

use std::time::{Duration, Instant};

use kafka_protocol::messages::add_raft_voter_request::Listener;
use kafka_protocol::messages::{AddRaftVoterRequest, RemoveRaftVoterRequest};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::committed::committed_voters;
use super::describe::QuorumDescription;
use super::format::parse_host_port;
use super::{
    kafka_error, AddVoterArgs, BenchDescribeArgs, ConnectArgs, DescribeArgs, Failure,
    RemoveVoterArgs, EXIT_KAFKA_ERROR, EXIT_TIMEOUT, EXIT_USAGE,
};
use crate::server::client::{Client, ClientSecurity};
use crate::server::tls::Tls;
use crate::storage::{format_directory_id, parse_directory_id, DataDir};
use crate::wire::describe_quorum::MAX_VERSION;
use crate::wire::error_codes::{
    DUPLICATE_VOTER, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, VOTER_NOT_FOUND,
};

/// Metadata version used to read the cluster id.
const METADATA_VERSION: i16 = 12;

/// The leader, found among the bootstrap controllers, with its quorum description.
pub struct Leader {
    pub client: Client,
    pub description: QuorumDescription,
    /// The leader's ApiVersions answer: which request versions it serves (through a broker: the
    /// broker's, which for forwarded APIs is the intersection with the active controller's).
    pub versions: kafka_protocol::messages::ApiVersionsResponse,
    /// `client` is a broker (`--bootstrap-server`) that forwards to the active controller.
    pub via_broker: bool,
}

/// The TLS and SASL setup of `--command-config` (none without one).
pub fn client_security(
    command_config: Option<&std::path::Path>,
) -> Result<ClientSecurity, Failure> {
    let Some(path) = command_config else {
        return Ok(ClientSecurity::default());
    };
    let props = super::properties::read(path)?;
    let in_file = |f: Failure| Failure::new(f.code, format!("{}: {}", path.display(), f.message));
    // The mechanism first: a refused one is named even when the TLS keys are incomplete too.
    let sasl = crate::server::sasl::client_config(&props).map_err(|e| in_file(e.into()))?;
    let tls = Tls::for_client(&props)
        .map_err(|e| Failure::new(super::EXIT_STORAGE, format!("{}: {e}", path.display())))?;
    Ok(ClientSecurity { tls, sasl })
}

/// The `--bootstrap-controller` or `--bootstrap-server` addresses.
pub(super) fn addresses(connect: &ConnectArgs) -> Vec<String> {
    connect
        .bootstrap_controller
        .as_deref()
        .or(connect.bootstrap_server.as_deref())
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// DescribeCluster version used to find the active controller (KIP-919; v1 adds EndpointType).
const DESCRIBE_CLUSTER_VERSIONS: (i16, i16) = (1, 2);
const DESCRIBE_CLUSTER: i16 = kafka_protocol::messages::ApiKey::DescribeCluster as i16;
const DESCRIBE_QUORUM: i16 = kafka_protocol::messages::ApiKey::DescribeQuorum as i16;
const ADD_RAFT_VOTER: i16 = kafka_protocol::messages::ApiKey::AddRaftVoter as i16;
/// The AddRaftVoter versions `kraft add-voter` sends: v1 (KIP-1186, `AckWhenCommitted` true) when the
/// leader serves it, as Kafka 4.x's admin client does, else v0.
const ADD_RAFT_VOTER_VERSIONS: (i16, i16) = (0, 1);

/// The highest version of `key` both sides support, if any (`ours` = our inclusive range).
fn negotiate(
    versions: &kafka_protocol::messages::ApiVersionsResponse,
    key: i16,
    ours: (i16, i16),
) -> Option<i16> {
    let theirs = versions.api_keys.iter().find(|k| k.api_key == key)?;
    crate::wire::apis::common_version((theirs.min_version, theirs.max_version), ours)
}

/// Finds the active controller the way Kafka's admin client does with `bootstrap.controllers`: ask any
/// bootstrap controller for DescribeCluster (endpoint type controller), connect to the `ControllerId` it
/// names, and read DescribeQuorum there. A controller without DescribeCluster (an older `kraft` node) is
/// asked DescribeQuorum directly. Fails with EXIT_KAFKA_ERROR while no leader is known, so callers retry.
pub fn find_leader(
    connect: &ConnectArgs,
    version: Option<i16>,
    timeout: Duration,
) -> Result<Leader, Failure> {
    let addrs = addresses(connect);
    if addrs.is_empty() {
        return Err(Failure::new(
            EXIT_USAGE,
            "--bootstrap-controller / --bootstrap-server is empty",
        ));
    }
    let security = client_security(connect.command_config.as_deref())?;
    let mut last: Option<Failure> = None;
    for addr in &addrs {
        let found = if connect.bootstrap_server.is_some() {
            leader_via_broker(addr, version, timeout, &security)
        } else {
            leader_via(addr, version, timeout, &security)
        };
        match found {
            Ok(leader) => return Ok(leader),
            Err(f) => last = Some(f),
        }
    }
    Err(last.unwrap_or_else(|| Failure::new(EXIT_USAGE, "no controller given")))
}

/// What Kafka's tools do with `--bootstrap-server`: DescribeCluster (brokers) at the broker for the
/// cluster id, then DescribeQuorum at the same broker, which forwards it to the active controller
/// (Kafka's `KafkaApis.forwardToController`, in an Envelope) and relays the answer.
fn leader_via_broker(
    addr: &str,
    version: Option<i16>,
    timeout: Duration,
    security: &ClientSecurity,
) -> Result<Leader, Failure> {
    let mut client = Client::connect_secure(addr, timeout, security)?;
    let versions = client.api_versions(3)?;
    let Some(dc_version) = negotiate(&versions, DESCRIBE_CLUSTER, (0, 2)) else {
        return Err(Failure::new(
            super::EXIT_PROTOCOL,
            format!("{addr} serves no DescribeCluster: not a Kafka broker"),
        ));
    };
    let cluster = client.describe_cluster(dc_version, 1)?;
    if cluster.error_code != 0 {
        return Err(refusal(
            format!("{addr}: DescribeCluster"),
            cluster.error_code,
            cluster.error_message.as_deref(),
            "Describe",
        ));
    }
    let mut leader = describe_at(client, &versions, cluster.cluster_id.to_string(), version)?;
    leader.via_broker = true;
    Ok(leader)
}

/// A Kafka error as a failure; CLUSTER_AUTHORIZATION_FAILED gets its own exit code and names the ACL
/// the principal lacks (`operation` on the cluster resource, as Kafka's controllers check it).
pub fn refusal(what: String, code: i16, message: Option<&str>, operation: &str) -> Failure {
    let text = kafka_error(code, message);
    if code == crate::wire::error_codes::CLUSTER_AUTHORIZATION_FAILED {
        return Failure::new(
            super::EXIT_AUTHORIZATION,
            format!(
                "{what}: {text}; the principal needs the ACL ALLOW {operation} on Cluster:kafka-cluster"
            ),
        );
    }
    Failure::new(EXIT_KAFKA_ERROR, format!("{what}: {text}"))
}

/// One bootstrap address: DescribeCluster there, then DescribeQuorum at the controller it names.
fn leader_via(
    addr: &str,
    version: Option<i16>,
    timeout: Duration,
    security: &ClientSecurity,
) -> Result<Leader, Failure> {
    let mut client = Client::connect_secure(addr, timeout, security)?;
    let versions = client.api_versions(3)?;
    let Some(dc_version) = negotiate(&versions, DESCRIBE_CLUSTER, DESCRIBE_CLUSTER_VERSIONS) else {
        // No KIP-919 on this controller: it can only be asked about itself.
        let cluster_id = client
            .metadata(METADATA_VERSION)?
            .cluster_id
            .map(|c| c.to_string())
            .unwrap_or_default();
        return describe_at(client, &versions, cluster_id, version);
    };
    let cluster = client.describe_cluster(dc_version, 2)?;
    if cluster.error_code != 0 {
        // A controller authorizes DescribeCluster with ALTER on the cluster (ControllerApis).
        return Err(refusal(
            format!("{addr}: DescribeCluster"),
            cluster.error_code,
            cluster.error_message.as_deref(),
            "Alter",
        ));
    }
    let cluster_id = cluster.cluster_id.to_string();
    let Some(active) = cluster
        .brokers
        .iter()
        .find(|b| b.broker_id == cluster.controller_id)
    else {
        return Err(Failure::new(
            EXIT_KAFKA_ERROR,
            format!(
                "{addr}: no active controller known yet (ControllerId {})",
                cluster.controller_id.0
            ),
        ));
    };
    let port = u16::try_from(active.port).map_err(|_| {
        Failure::new(
            super::EXIT_PROTOCOL,
            format!("{addr}: DescribeCluster names port {}", active.port),
        )
    })?;
    let active_addr = if active.host.contains(':') {
        format!("[{}]:{port}", active.host)
    } else {
        format!("{}:{port}", active.host)
    };
    if active_addr == addr {
        return describe_at(client, &versions, cluster_id, version);
    }
    let mut leader = Client::connect_secure(&active_addr, timeout, security)?;
    let leader_versions = leader.api_versions(3)?;
    describe_at(leader, &leader_versions, cluster_id, version)
}

/// DescribeQuorum at `version` (default: the highest both sides support) on a connected controller.
fn describe_at(
    mut client: Client,
    versions: &kafka_protocol::messages::ApiVersionsResponse,
    cluster_id: String,
    version: Option<i16>,
) -> Result<Leader, Failure> {
    let version = match version {
        Some(v) => v,
        None => negotiate(versions, DESCRIBE_QUORUM, (0, MAX_VERSION)).unwrap_or(0),
    };
    let description = read_description(&mut client, cluster_id, version)?;
    Ok(Leader {
        client,
        description,
        versions: versions.clone(),
        via_broker: false,
    })
}

/// One DescribeQuorum round trip at `version`; a Kafka error (top level or partition) is a failure.
pub(super) fn read_description(
    client: &mut Client,
    cluster_id: String,
    version: i16,
) -> Result<QuorumDescription, Failure> {
    let addr = client.addr().to_string();
    let response = client.describe_quorum(version)?;
    if response.error_code != 0 {
        return Err(refusal(
            format!("{addr}: DescribeQuorum"),
            response.error_code,
            response.error_message.as_deref(),
            "Describe",
        ));
    }
    let partition = response.topics.first().and_then(|t| t.partitions.first());
    if let Some(p) = partition.filter(|p| p.error_code != 0) {
        let message = kafka_error(p.error_code, p.error_message.as_deref());
        return Err(Failure::new(EXIT_KAFKA_ERROR, format!("{addr}: {message}")));
    }
    QuorumDescription::new(cluster_id, version, response).ok_or_else(|| {
        Failure::new(
            super::EXIT_PROTOCOL,
            format!("{addr} sent no partition data"),
        )
    })
}

/// Kafka's rule and message: `--human-readable` only goes with `--replication`.
pub fn check_describe_flags(args: &DescribeArgs) -> Result<(), Failure> {
    if args.human_readable && !args.replication {
        return Err(Failure::new(
            EXIT_USAGE,
            "The option --human-readable is only supported along with --replication",
        ));
    }
    Ok(())
}

pub fn describe(args: &DescribeArgs) -> Result<(), Failure> {
    check_describe_flags(args)?;
    if args.watch {
        return super::watch::watch(args);
    }
    let timeout = Duration::from_millis(args.connect.timeout_ms);
    // Like Kafka's admin client, wait (up to the timeout) while no listed controller is the leader.
    let deadline = Instant::now() + timeout;
    let mut leader = loop {
        match find_leader(&args.connect, args.api_version, timeout) {
            Ok(leader) => break leader,
            Err(f)
                if f.code == EXIT_KAFKA_ERROR
                    && Instant::now() + Duration::from_millis(200) < deadline =>
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(f) => return Err(f),
        }
    };
    // The replication table has no CommittedVoters: only --status and --json need the log.
    if leader.description.api_version < 3 && !args.served_only && (args.status || args.json) {
        committed_voters(&mut leader, &args.connect, Instant::now() + timeout);
    }
    let d = &leader.description;
    let denied = match &d.computed {
        Some(super::describe::Computed::Denied(why)) => Some(why.clone()),
        _ => None,
    };
    print_description(args, &leader)?;
    match denied {
        Some(why) => Err(Failure::new(super::EXIT_AUTHORIZATION, why)),
        None => Ok(()),
    }
}

fn print_description(args: &DescribeArgs, leader: &Leader) -> Result<(), Failure> {
    let d = &leader.description;
    if args.json {
        out!(
            "{}",
            serde_json::to_string_pretty(&d.to_json()).unwrap_or_default()
        );
        return Ok(());
    }
    if args.replication && args.human_readable {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let table = d
            .replication_text_human(now)
            .map_err(|e| Failure::new(EXIT_KAFKA_ERROR, e))?;
        out_part!("{table}");
    } else if args.replication {
        out_part!("{}", d.replication_text());
    } else {
        out_part!("{}", d.status_text());
        if d.api_version < 3 && d.computed.is_none() {
            eprintln!(
                "note: {} answered DescribeQuorum v{}, which has no committed voter set (v3 adds it, \
                 KIP-1204): CommittedVoters is shown empty",
                leader.client.addr(),
                d.api_version
            );
        }
    }
    Ok(())
}

/// Retries a membership change on the leader until it succeeds, fails for good, or time runs out.
fn change<T>(
    what: &str,
    connect: &ConnectArgs,
    mut send: impl FnMut(&mut Leader, Duration) -> Result<(i16, Option<String>), Failure>,
    mut done_already: impl FnMut(&QuorumDescription) -> bool,
    already_code: i16,
    ok: impl Fn(Option<&QuorumDescription>) -> T,
) -> Result<T, Failure> {
    let deadline = Instant::now() + Duration::from_millis(connect.timeout_ms);
    let mut retried = false;
    let mut last = String::from("no attempt");
    while Instant::now() < deadline {
        let remaining = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(100));
        let mut leader = match find_leader(connect, None, remaining) {
            Ok(leader) => leader,
            Err(f) if f.code == EXIT_KAFKA_ERROR => {
                last = f.message;
                std::thread::sleep(Duration::from_millis(200));
                retried = true;
                continue;
            }
            Err(f) => return Err(f),
        };
        leader.client.set_timeout(remaining)?;
        let (code, message) = send(&mut leader, remaining)?;
        match code {
            0 => {
                // The leader may have resigned (it removed itself): look for the new one briefly.
                let settle = Instant::now() + Duration::from_secs(3);
                loop {
                    match find_leader(connect, None, Duration::from_secs(1)) {
                        Ok(mut after) => {
                            let until = Instant::now() + Duration::from_millis(connect.timeout_ms);
                            committed_voters(&mut after, connect, until);
                            return Ok(ok(Some(&after.description)));
                        }
                        Err(_) if Instant::now() < settle => {
                            std::thread::sleep(Duration::from_millis(100))
                        }
                        Err(_) => return Ok(ok(None)),
                    }
                }
            }
            NOT_LEADER_OR_FOLLOWER | REQUEST_TIMED_OUT => {
                last = kafka_error(code, message.as_deref());
                retried = true;
                std::thread::sleep(Duration::from_millis(200));
            }
            code if code == already_code && retried && {
                committed_voters(&mut leader, connect, deadline);
                done_already(&leader.description)
            } =>
            {
                // An earlier attempt of ours went through (its reply was lost or timed out).
                return Ok(ok(Some(&leader.description)));
            }
            code => {
                // Controllers authorize AddRaftVoter and RemoveRaftVoter with ALTER on the cluster.
                let f = refusal(what.to_string(), code, message.as_deref(), "Alter");
                return Err(f);
            }
        }
    }
    Err(Failure::new(
        EXIT_TIMEOUT,
        format!(
            "the change did not complete within {} ms; last answer: {last}",
            connect.timeout_ms
        ),
    ))
}

pub fn add_voter(args: &AddVoterArgs) -> Result<(), Failure> {
    let (node_id, directory_id) = match &args.data_dir {
        Some(dir) => {
            let meta = DataDir::new(dir).open(args.node_id, None)?;
            (meta.node_id, meta.directory_id)
        }
        None => {
            let id = args
                .node_id
                .ok_or_else(|| Failure::new(EXIT_USAGE, "--node-id or --data-dir is required"))?;
            let dir = args.directory_id.as_deref().ok_or_else(|| {
                Failure::new(EXIT_USAGE, "--directory-id or --data-dir is required")
            })?;
            (
                id,
                parse_directory_id(dir).map_err(|e| Failure::new(EXIT_USAGE, e))?,
            )
        }
    };
    let (host, port) = parse_host_port(&args.endpoint)?;
    let listener = Listener::default()
        .with_name(StrBytes::from_string(args.listener_name.clone()))
        .with_host(StrBytes::from_string(host))
        .with_port(port);
    let in_committed = |d: &QuorumDescription| {
        d.partition
            .committed_voters
            .iter()
            .any(|r| r.replica_id == node_id)
    };
    change(
        "AddRaftVoter",
        &args.connect,
        |leader, remaining| {
            let request = AddRaftVoterRequest::default()
                .with_cluster_id(Some(StrBytes::from_string(
                    leader.description.cluster_id.clone(),
                )))
                .with_timeout_ms(remaining.as_millis().min(i32::MAX as u128) as i32)
                .with_voter_id(node_id)
                .with_voter_directory_id(directory_id)
                .with_listeners(vec![listener.clone()]);
            let version =
                negotiate(&leader.versions, ADD_RAFT_VOTER, ADD_RAFT_VOTER_VERSIONS).unwrap_or(0);
            let response = leader.client.add_voter(&request, version)?;
            Ok((
                response.error_code,
                response.error_message.map(|m| m.to_string()),
            ))
        },
        in_committed,
        DUPLICATE_VOTER,
        |d| report("Added", node_id, directory_id, d),
    )
    .map(|line| out!("{line}"))
}

pub fn remove_voter(args: &RemoveVoterArgs) -> Result<(), Failure> {
    let node_id = args.node_id;
    let given = args
        .directory_id
        .as_deref()
        .map(parse_directory_id)
        .transpose()
        .map_err(|e| Failure::new(EXIT_USAGE, e))?;
    let gone = |d: &QuorumDescription| {
        let p = &d.partition;
        !p.current_voters
            .iter()
            .chain(p.committed_voters.iter())
            .any(|r| r.replica_id == node_id)
    };
    let directory_id = std::cell::Cell::new(given.unwrap_or(Uuid::nil()));
    change(
        "RemoveRaftVoter",
        &args.connect,
        |leader, _| {
            if given.is_none() {
                // Default to the directory id of that voter in the current set.
                if let Some(r) = leader
                    .description
                    .partition
                    .current_voters
                    .iter()
                    .find(|r| r.replica_id == node_id)
                {
                    directory_id.set(r.replica_directory_id);
                }
            }
            let request = RemoveRaftVoterRequest::default()
                .with_cluster_id(Some(StrBytes::from_string(
                    leader.description.cluster_id.clone(),
                )))
                .with_voter_id(node_id)
                .with_voter_directory_id(directory_id.get());
            let response = leader.client.remove_voter(&request)?;
            Ok((
                response.error_code,
                response.error_message.map(|m| m.to_string()),
            ))
        },
        gone,
        VOTER_NOT_FOUND,
        |d| report("Removed", node_id, directory_id.get(), d),
    )
    .map(|line| out!("{line}"))
}

/// The line `add-voter` and `remove-voter` print: the outcome, then the quorum as `describe` reports it
/// (CommittedVoters served, computed from the log, or not computed and why; never an empty set in its
/// place).
fn report(verb: &str, id: i32, directory: Uuid, d: Option<&QuorumDescription>) -> String {
    let mut line = format!(
        "{verb} voter {id} (directory {}); committed.",
        format_directory_id(directory)
    );
    if let Some(d) = d {
        line.push_str(&format!(" Now: {}", d.summary()));
    }
    line
}

/// Closed-loop DescribeQuorum load: each connection sends its next request when the previous answer
/// arrived. Prints the request rate and the mean round-trip time.
pub fn bench_describe(args: &BenchDescribeArgs) -> Result<(), Failure> {
    let connections = args.connections.max(1);
    let per_connection = (args.requests / connections).max(1);
    let security = client_security(args.command_config.as_deref())?;
    let started = Instant::now();
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let addr = args.bootstrap_controller.clone();
            let version = args.api_version;
            let security = security.clone();
            std::thread::spawn(move || -> Result<(), Failure> {
                let mut client = Client::connect_secure(&addr, Duration::from_secs(5), &security)?;
                for _ in 0..per_connection {
                    client.describe_quorum(version)?;
                }
                Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker
            .join()
            .map_err(|_| Failure::new(super::EXIT_PROTOCOL, "a bench worker panicked"))??;
    }
    let elapsed = started.elapsed();
    let total = per_connection * connections;
    out!(
        "{total} DescribeQuorum v{} requests over {connections} connection(s) in {:.3} s: {:.0} requests/s, mean round trip {:.1} µs",
        args.api_version,
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 * connections as f64 / total as f64
    );
    Ok(())
}
