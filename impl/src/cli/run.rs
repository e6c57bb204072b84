//! `kraft node` and `kraft cluster`: start nodes on formatted data directories and run them until stopped.

use std::time::Duration;

use tokio::net::TcpListener;

use super::format::{format_dir, parse_host_port, parse_initial_controllers, usage};
use super::node_settings::NodeSettings;
use super::snapshot_settings::SnapshotSettings;
use super::{ClusterArgs, Failure, NodeArgs, EXIT_NODE_FAILED, EXIT_STORAGE};
use crate::node::{Node, NodeConfig};
use crate::server::tls::Tls;
use crate::server::{self, BrokerInfo, LinkConfig, Running};
use crate::storage::{
    format_directory_id, new_directory_id, read_quorum_state, DataDir, MetaProperties, MetadataLog,
};
use crate::voter_set::Endpoint;

/// The core's snapshot settings: own snapshots on, as every Kafka controller takes them.
fn snapshot_config(s: &SnapshotSettings) -> crate::node::SnapshotConfig {
    crate::node::SnapshotConfig {
        enabled: true,
        max_record_bytes_between_snapshots: s.max_record_bytes_between_snapshots.max(1) as u64,
        max_snapshot_interval_ms: s.max_snapshot_interval_ms.max(0) as u64,
        max_retention_bytes: s.max_retention_bytes,
        max_retention_ms: s.max_retention_ms,
        fetch_snapshot_max_bytes: s.fetch_snapshot_max_bytes,
        ..Default::default()
    }
}

/// Opens the data directory, recovers the log and starts serving.
pub async fn start_node(
    settings: &NodeSettings,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Running, Failure> {
    let data = DataDir::new(&settings.data_dir);
    let meta = data.open(settings.node_id, settings.cluster_id.as_deref())?;
    let bootstrap = super::static_voters::resolve(
        data.read_bootstrap()?,
        settings.static_voters.as_ref(),
        !settings.bootstrap_servers.is_empty(),
    )
    .map_err(|e| usage(format!("{}: {e}", settings.data_dir.display())))?;
    match (&bootstrap, &settings.static_voters) {
        (crate::node::Bootstrap::Static(set), _) => {
            super::static_voters::check_member(set, meta.node_id)
                .map_err(|e| usage(format!("controller.quorum.voters: {e}")))?
        }
        (_, Some(_)) => tracing::info!(
            "{}: the directory holds a voter set (kraft.version 1): the static voters configured \
             (controller.quorum.voters) are ignored, as Kafka ignores them",
            settings.data_dir.display()
        ),
        _ => {}
    }
    if bootstrap == crate::node::Bootstrap::NoInitialVoters && settings.bootstrap_servers.is_empty()
    {
        // Kafka: "Missing kraft bootstrap servers. Must specify a value for
        // controller.quorum.bootstrap.servers."
        return Err(usage(format!(
            "{} was formatted with --no-initial-controllers: --bootstrap-servers (or bootstrap_servers in \
             --config) is required to find the quorum",
            settings.data_dir.display()
        )));
    }
    // Kafka's start-up of the metadata log: snapshots checked, leftovers deleted, the log truncated fully
    // to a snapshot newer than it.
    let log =
        MetadataLog::open_with_segment_bytes(&data.log_dir(), settings.snapshots.segment_bytes)?;
    let mut snapshots: Vec<_> = log.snapshots().iter().map(|s| s.meta()).collect();
    // The bootstrap snapshot's own header (its LastContainedLogTimestamp is when it was formatted) for
    // retention by time; a file that does not parse was refused by `read_bootstrap` already.
    if let Ok(info) = crate::storage::read_snapshot_meta(&data.bootstrap_path()) {
        snapshots.push(info.meta());
    }
    let view = log
        .load_view()
        .map_err(|e| Failure::new(EXIT_STORAGE, e.to_string()))?;
    let state = read_quorum_state(&data.quorum_state_path())?;
    let (host, port) = parse_host_port(&settings.listener)?;
    let (adv_host, adv_port) = match &settings.advertised {
        Some(a) => parse_host_port(a)?,
        None => (host.clone(), port),
    };
    let config = NodeConfig {
        cluster_id: meta.cluster_id.clone(),
        node_id: meta.node_id,
        directory_id: meta.directory_id,
        listeners: vec![Endpoint {
            name: settings.listener_name.clone(),
            host: adv_host.clone(),
            port: adv_port,
        }],
        bootstrap,
        bootstrap_servers: settings.bootstrap_servers.clone(),
        election_timeout_ms: settings.election_timeout_ms,
        fetch_timeout_ms: settings.fetch_timeout_ms,
        fetch_interval_ms: settings.fetch_interval_ms,
        fetch_max_wait_ms: crate::node::FETCH_MAX_WAIT_MS,
        check_quorum_timeout_ms: settings.fetch_timeout_ms * 3 / 2,
        request_timeout_ms: settings.request_timeout_ms,
        observer_expiry_ms: 300_000,
        seed: settings.seed ^ (meta.node_id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        snapshots: snapshot_config(&settings.snapshots),
        auto_join: settings.auto_join,
    };
    let node = Node::with_snapshots(config, view, state, snapshots)
        .map_err(|e| Failure::new(EXIT_STORAGE, e.to_string()))?;
    let listener = TcpListener::bind((host.as_str(), port))
        .await
        .map_err(|e| {
            Failure::new(
                EXIT_NODE_FAILED,
                format!("cannot listen on {}: {e}", settings.listener),
            )
        })?;
    tracing::info!(
        node_id = meta.node_id,
        cluster_id = %meta.cluster_id,
        directory_id = %format_directory_id(meta.directory_id),
        listener = %settings.listener,
        tls = settings.tls.is_some(),
        sasl = settings.sasl.is_some(),
        "node starting"
    );
    let broker = BrokerInfo {
        node_id: meta.node_id,
        host: adv_host,
        port: adv_port,
        cluster_id: meta.cluster_id,
    };
    server::serve(
        node,
        log,
        data.quorum_state_path(),
        listener,
        broker,
        settings.limits.clone(),
        LinkConfig {
            forward_describe_quorum: settings.describe_quorum_forwarding,
            sasl: settings.sasl.as_ref().map(|s| s.links.clone()),
            ..LinkConfig::default()
        },
        settings.tls.clone(),
        settings.sasl.clone(),
        shutdown,
    )
    .await
    .map_err(|e| Failure::new(EXIT_NODE_FAILED, e.to_string()))
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            tracing::warn!("cannot watch SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::new(EXIT_NODE_FAILED, format!("cannot start the runtime: {e}")))
}

async fn wait(running: Running) -> Result<(), Failure> {
    match running.task.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Failure::new(EXIT_NODE_FAILED, e.to_string())),
        Err(e) => Err(Failure::new(
            EXIT_NODE_FAILED,
            format!("node task failed: {e}"),
        )),
    }
}

pub fn node(args: NodeArgs) -> Result<(), Failure> {
    let settings = NodeSettings::resolve(args)?;
    runtime()?.block_on(async {
        let running = start_node(&settings, stop_signal()).await?;
        if let Some(addr) = &settings.metrics_listener {
            export_metrics(addr, running.status.clone(), running.poll_idle.clone())?;
        }
        let result = wait(running).await;
        tracing::info!("node stopped");
        result
    })
}

/// Serves the node's quorum figures at `addr`: each status the node task publishes after a step becomes
/// the exporter's sample, stamped with the time it was seen.
fn export_metrics(
    addr: &str,
    mut status: tokio::sync::watch::Receiver<server::Status>,
    poll_idle: crate::metrics::stats::PollIdle,
) -> Result<(), Failure> {
    let exporter = crate::metrics::Exporter::new().with_poll_idle(poll_idle);
    crate::metrics::http::spawn(addr, exporter.clone())
        .map_err(|e| Failure::new(EXIT_NODE_FAILED, e.to_string()))?;
    tokio::spawn(async move {
        loop {
            let sample = status.borrow_and_update().quorum.clone();
            exporter.update(sample, std::time::Instant::now());
            if status.changed().await.is_err() {
                break;
            }
        }
    });
    Ok(())
}

pub fn cluster(args: ClusterArgs) -> Result<(), Failure> {
    if !(1..=9).contains(&args.nodes) {
        return Err(usage("--nodes must be between 1 and 9"));
    }
    if u32::from(args.base_port) + args.nodes as u32 > 65_536 {
        return Err(usage("--base-port too high for that many nodes"));
    }
    let port = |i: i32| args.base_port + (i - 1) as u16;
    let dir = |i: i32| args.dir.join(format!("node-{i}"));
    // Existing directories keep their identity; new ones get fresh directory ids.
    let mut ids = Vec::new();
    for i in 1..=args.nodes {
        let data = DataDir::new(dir(i));
        let id = if data.is_formatted() {
            MetaProperties::read(&data.meta_path())?.directory_id
        } else {
            new_directory_id()
        };
        ids.push(id);
    }
    let initial = (1..=args.nodes)
        .map(|i| {
            format!(
                "{i}@127.0.0.1:{}:{}",
                port(i),
                format_directory_id(ids[(i - 1) as usize])
            )
        })
        .collect::<Vec<_>>()
        .join(",");
    let voters = parse_initial_controllers(&initial)?;
    for i in 1..=args.nodes {
        format_dir(&dir(i), &args.cluster_id, i, Some(&voters), None, true)?;
    }
    let tls = if args.tls {
        let ids: Vec<i32> = (1..=args.nodes).collect();
        let files = super::certs::write_cluster_tls(&args.dir.join("tls"), &ids).map_err(|e| {
            Failure::new(
                EXIT_STORAGE,
                format!("{}: {e}", args.dir.join("tls").display()),
            )
        })?;
        Some(files)
    } else {
        None
    };
    runtime()?.block_on(async {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut nodes = Vec::new();
        for i in 1..=args.nodes {
            let mut settings = NodeSettings::resolve(NodeArgs {
                data_dir: Some(dir(i)),
                listener: Some(format!("127.0.0.1:{}", port(i))),
                ..NodeArgs::default()
            })?;
            if let Some(files) = &tls {
                settings.tls = Tls::for_node(&files.node_properties(i))?.map(std::sync::Arc::new);
            }
            let mut stop = stop_rx.clone();
            let running = start_node(&settings, async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await?;
            nodes.push((i, running));
        }
        let mut leader = None;
        tokio::select! {
            _ = async {
                loop {
                    if let Some(l) = nodes.iter().find_map(|(_, r)| r.status.borrow().leader_id) {
                        leader = Some(l);
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            } => {}
            _ = stop_signal() => {}
        }
        if let Some(leader) = leader {
            for (i, _) in &nodes {
                let role = if *i == leader { " (leader)" } else { "" };
                out!("node {i} listening on 127.0.0.1:{}{role}", port(*i));
            }
            if let Some(files) = &tls {
                out!(
                    "mutual TLS: admin clients use --command-config {}",
                    files.admin_config.display()
                );
            }
            out!("cluster {} is up; press Ctrl-C to stop", args.cluster_id);
            stop_signal().await;
        }
        let _ = stop_tx.send(true);
        let mut result = Ok(());
        for (_, running) in nodes {
            if let Err(e) = wait(running).await {
                result = Err(e);
            }
        }
        out!("cluster stopped");
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::format::{parse_bootstrap_servers, LISTENER_NAME};
    use crate::cli::EXIT_USAGE;
    use crate::storage::is_reserved_directory_id;
    use std::path::Path;

    /// Starts a node on `dir` (listener on an ephemeral port) and returns the error it must refuse with.
    fn start_refused(dir: &Path, why: &str) -> Failure {
        start_refused_with(dir, None, why)
    }

    /// [`start_refused`] with static voters `--voters`.
    fn start_refused_with(dir: &Path, voters: Option<&str>, why: &str) -> Failure {
        let settings = NodeSettings::resolve(NodeArgs {
            data_dir: Some(dir.to_path_buf()),
            listener: Some("127.0.0.1:0".into()),
            voters: voters.map(str::to_string),
            ..NodeArgs::default()
        })
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(start_node(&settings, std::future::pending()))
            .err()
            .expect(why)
    }

    #[test]
    fn a_node_refuses_a_directory_with_a_reserved_id() {
        // As Kafka's controller does ("Invalid reserved directory ID ... found in ..."), e.g. on a directory
        // Kafka's storage tool formatted with such an id in --initial-controllers (it does not refuse it).
        let dir = tempfile::tempdir().unwrap();
        let voters = parse_initial_controllers("1@127.0.0.1:9001:AAAAAAAAAAAAAAAAAAAAZA").unwrap();
        format_dir(dir.path(), "c", 1, Some(&voters), None, false).unwrap();
        let data = DataDir::new(dir.path());
        let text = std::fs::read_to_string(data.meta_path()).unwrap();
        std::fs::write(
            data.meta_path(),
            text.replace("AAAAAAAAAAAAAAAAAAAAZA", "AAAAAAAAAAAAAAAAAAAAAg"),
        )
        .unwrap();
        let err = start_refused(dir.path(), "a reserved directory id must be refused");
        assert_eq!(err.code, EXIT_STORAGE, "{}", err.message);
        assert!(
            err.message
                .contains("invalid reserved directory id AAAAAAAAAAAAAAAAAAAAAg"),
            "{}",
            err.message
        );
        // `kraft format --ignore-formatted` on it is refused too (Kafka's format verifies the existing one).
        assert!(format_dir(dir.path(), "c", 1, Some(&voters), None, true).is_err());
    }

    #[test]
    fn a_static_directory_needs_its_voters_and_this_node_among_them() {
        let dir = tempfile::tempdir().unwrap();
        super::super::format::format_static_dir(dir.path(), "c", 2, None, false).unwrap();
        let refused = |voters| start_refused_with(dir.path(), voters, "refused");
        let err = refused(None);
        assert_eq!(err.code, EXIT_USAGE);
        assert!(
            err.message
                .contains("controller.quorum.voters (--voters) is required"),
            "{}",
            err.message
        );
        let err = refused(Some("1@127.0.0.1:1,3@127.0.0.1:3"));
        assert_eq!(err.code, EXIT_USAGE);
        assert!(
            err.message.contains("node id 2 must be included"),
            "{}",
            err.message
        );
        // A --no-initial-controllers directory (kraft.version 1, no voter set) with static voters is refused.
        let dynamic = tempfile::tempdir().unwrap();
        format_dir(dynamic.path(), "c", 4, None, None, false).unwrap();
        let err = start_refused_with(
            dynamic.path(),
            Some("4@127.0.0.1:1"),
            "a --no-initial-controllers directory with static voters is refused",
        );
        assert!(
            err.message.contains("without initial voters"),
            "{}",
            err.message
        );
    }

    #[test]
    fn no_initial_controllers_format_and_bootstrap_servers() {
        let dir = tempfile::tempdir().unwrap();
        let meta = format_dir(dir.path(), "c", 4, None, None, false).unwrap();
        assert!(!is_reserved_directory_id(meta.directory_id));
        let data = DataDir::new(dir.path());
        assert_eq!(
            crate::storage::read_bootstrap(&data.bootstrap_file()).unwrap(),
            crate::node::Bootstrap::NoInitialVoters
        );
        // Kafka 4.0's layout: no bootstrap snapshot, its metadata.version bootstrap beside meta.properties.
        std::fs::remove_file(data.bootstrap_path()).unwrap();
        assert!(data.read_bootstrap().is_err());
        std::fs::write(dir.path().join("bootstrap.checkpoint"), b"").unwrap();
        // kraft.version 0, no voter set: an observer through its bootstrap servers (static_voters::resolve).
        assert_eq!(
            data.read_bootstrap().unwrap(),
            crate::node::Bootstrap::Static(crate::voter_set::VoterSet::empty())
        );
        assert_eq!(
            parse_bootstrap_servers(" 127.0.0.1:9091, [::1]:9092 ,").unwrap(),
            vec![
                Endpoint {
                    name: LISTENER_NAME.into(),
                    host: "127.0.0.1".into(),
                    port: 9091
                },
                Endpoint {
                    name: LISTENER_NAME.into(),
                    host: "::1".into(),
                    port: 9092
                }
            ]
        );
        assert!(parse_bootstrap_servers("127.0.0.1").is_err());
        // Without bootstrap servers the quorum cannot be found: refused, as Kafka refuses to start.
        let err = start_refused(dir.path(), "no bootstrap servers must be refused");
        assert_eq!(err.code, EXIT_USAGE, "{}", err.message);
        assert!(
            err.message.contains("--bootstrap-servers"),
            "{}",
            err.message
        );
    }
}
