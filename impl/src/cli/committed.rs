//! The one place `CommittedVoters` is obtained for `describe`, `add-voter` and `remove-voter`: served by a
//! v3 leader, else computed from the metadata log an in-memory observer fetches ([`super::observe`]) from
//! the controllers (directly, or at the endpoints the quorum description names when the tool talks to a
//! broker), else not computed, with the reason.

use std::time::{Duration, Instant};

use super::admin::{addresses, client_security, read_description, Leader};
use super::ConnectArgs;
use crate::server::client::{Client, ClientSecurity};

/// The one place `CommittedVoters` is obtained for `describe`, `add-voter` and `remove-voter`: served by a
/// v3 leader, nothing to do; against a leader that answered below v3, observes the metadata log (replica
/// id −1) until it holds the leader's log up to the HW of a fresh DescribeQuorum answer of the same leader
/// and epoch, then fills `CommittedVoters` with the committed voter set at that HW − 1 (none while the HW
/// is unknown). On failure the description says why (`CommittedVotersSource: not computed: ...`).
pub fn committed_voters(leader: &mut Leader, connect: &ConnectArgs, deadline: Instant) {
    use super::describe::Computed;
    use super::observe::Observer;
    if leader.description.api_version >= 3 {
        return;
    }
    let version = leader.description.api_version;
    let timeout = Duration::from_millis(connect.timeout_ms);
    let started = client_security(connect.command_config.as_deref())
        .map_err(|f| f.message)
        .and_then(|security| {
            let bootstrap = log_sources(leader, connect, &security, timeout)?;
            Observer::new(
                &leader.description.cluster_id,
                &bootstrap,
                security,
                timeout,
            )
            .map_err(|e| e.to_string())
        });
    let mut observer = match started {
        Ok(o) => o,
        Err(why) => {
            leader.description.computed = Some(Computed::Unavailable(why));
            return;
        }
    };
    let mut redescribed = false;
    loop {
        let p = &leader.description.partition;
        let hw = p.high_watermark;
        if hw < 0 {
            // KIP-1204: no committed voter set while the HW is unknown.
            leader.description.set_computed_committed(None);
            return;
        }
        let o = observer.observed();
        let same_leader = o.leader_id == Some(p.leader_id) && o.epoch == p.leader_epoch;
        if same_leader && o.high_watermark.is_some_and(|own| own >= hw) {
            match observer.committed_at(hw).cloned() {
                Some(set) => leader.description.set_computed_committed(Some(&set)),
                None => {
                    leader.description.computed = Some(Computed::Unavailable(format!(
                        "no voter set below HighWatermark {hw} in the log (static voters?)"
                    )))
                }
            }
            return;
        }
        if Instant::now() >= deadline {
            leader.description.computed = Some(Computed::Unavailable(format!(
                "the observer did not reach HighWatermark {hw} within {} ms",
                connect.timeout_ms
            )));
            return;
        }
        if observer.caught_up() && !same_leader {
            // The observer follows another leader or epoch than the one described: describe once more.
            if redescribed {
                leader.description.computed = Some(Computed::Unavailable(
                    "the leader changed while the log was being read".into(),
                ));
                return;
            }
            redescribed = true;
            let cluster_id = leader.description.cluster_id.clone();
            match read_description(&mut leader.client, cluster_id, version) {
                Ok(fresh) => leader.description = fresh,
                Err(f) => {
                    leader.description.computed = Some(Computed::Unavailable(f.message));
                    return;
                }
            }
            continue;
        }
        if let Err(e) = observer.step() {
            leader.description.computed = Some(match e {
                super::observe::ObserveError::Denied { .. } => Computed::Denied(e.to_string()),
                e => Computed::Unavailable(e.to_string()),
            });
            return;
        }
    }
}

/// Where the metadata log is fetched (controllers only serve it, and only the leader answers):
/// with `--bootstrap-controller`, the controller that answered and the listed ones; through a broker,
/// the controller endpoints the quorum description names (DescribeQuorum v2 `Nodes`), the leader's
/// first, of which one must accept a connection (with the same TLS and SASL settings) now.
pub fn log_sources(
    leader: &Leader,
    connect: &ConnectArgs,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    if !leader.via_broker {
        let mut bootstrap = vec![leader.client.addr().to_string()];
        bootstrap.extend(addresses(connect));
        return Ok(bootstrap);
    }
    endpoints_of_voters(&leader.description, security, timeout)
}

/// The controller endpoints `d` names (DescribeQuorum v2 `Nodes`), the leader's first, if one of them
/// accepts a connection now.
fn endpoints_of_voters(
    d: &super::describe::QuorumDescription,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let mut ids = vec![d.partition.leader_id];
    ids.extend(d.partition.current_voters.iter().map(|r| r.replica_id));
    let mut sources: Vec<String> = Vec::new();
    for id in ids {
        for l in d
            .nodes
            .iter()
            .filter(|n| n.node_id == id)
            .flat_map(|n| &n.listeners)
        {
            let addr = if l.host.contains(':') {
                format!("[{}]:{}", l.host, l.port)
            } else {
                format!("{}:{}", l.host, l.port)
            };
            if !sources.contains(&addr) {
                sources.push(addr);
            }
        }
    }
    if sources.is_empty() {
        return Err(format!(
            "no controller endpoint to fetch the metadata log from: the DescribeQuorum v{} answer names \
             none (v2 adds Nodes)",
            d.api_version
        ));
    }
    let probe = timeout.min(Duration::from_secs(5));
    let mut errors = Vec::new();
    for addr in &sources {
        match Client::connect_secure(addr, probe, security) {
            Ok(_) => return Ok(sources),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(format!(
        "no controller reachable to fetch the metadata log from (endpoints from the quorum \
         description): {}",
        errors.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::describe_quorum::{
        DescribeQuorumResponse, Listener, NodeEndpoints, PartitionData, TopicData,
    };

    fn description(
        version: i16,
        nodes: Vec<NodeEndpoints>,
    ) -> super::super::describe::QuorumDescription {
        let partition = PartitionData {
            partition_index: 0,
            error_code: 0,
            error_message: None,
            leader_id: 1,
            leader_epoch: 1,
            high_watermark: 10,
            current_voters: Vec::new(),
            observers: Vec::new(),
            committed_voters: Vec::new(),
            unknown_tagged_fields: Default::default(),
        };
        let response = DescribeQuorumResponse {
            error_code: 0,
            error_message: None,
            topics: vec![TopicData {
                topic_name: "__cluster_metadata".into(),
                partitions: vec![partition],
                unknown_tagged_fields: Default::default(),
            }],
            nodes,
            unknown_tagged_fields: Default::default(),
        };
        super::super::describe::QuorumDescription::new("c".into(), version, response).unwrap()
    }

    /// Node 1 with one CONTROLLER listener on 127.0.0.1:`port`.
    fn controller_at(port: u16) -> NodeEndpoints {
        NodeEndpoints {
            node_id: 1,
            listeners: vec![Listener {
                name: "CONTROLLER".into(),
                host: "127.0.0.1".into(),
                port,
                unknown_tagged_fields: Default::default(),
            }],
            unknown_tagged_fields: Default::default(),
        }
    }

    #[test]
    fn through_a_broker_an_unreachable_or_unnamed_controller_is_said_so() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let node = controller_at(port);
        let security = ClientSecurity::default();
        let t = Duration::from_millis(500);
        let why = endpoints_of_voters(&description(2, vec![node]), &security, t).unwrap_err();
        assert!(
            why.starts_with("no controller reachable to fetch the metadata log from")
                && why.contains(&format!("127.0.0.1:{port}")),
            "{why}"
        );
        let why = endpoints_of_voters(&description(1, Vec::new()), &security, t).unwrap_err();
        assert!(why.contains("DescribeQuorum v1 answer names none"), "{why}");
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = open.local_addr().unwrap().port();
        let node = controller_at(port);
        assert_eq!(
            endpoints_of_voters(&description(2, vec![node]), &security, t),
            Ok(vec![format!("127.0.0.1:{port}")])
        );
    }
}
