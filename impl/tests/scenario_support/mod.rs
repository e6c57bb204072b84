//! Request variants for the scenario interpreter (`tests/scenarios.rs`): membership requests with a
//! malformed or foreign field, UpdateRaftVoter, DescribeQuorum of another partition, and edits of a
//! queued message (what a faulty or hostile peer, or a replica that lost its disk, would send).

use std::collections::BTreeMap;

use kafka_protocol::messages::{update_raft_voter_request, BrokerId, UpdateRaftVoterRequest};
use kafka_protocol::protocol::StrBytes;
use kraft::node::{ClientRequest, Message};
use kraft::wire::describe_quorum::{DescribeQuorumRequest, PartitionRequest, TopicRequest};
use kraft_sim as sim;
use uuid::Uuid;

/// `key=value` options after the positional arguments.
pub struct Opts<'a>(BTreeMap<&'a str, &'a str>);

impl<'a> Opts<'a> {
    /// Splits `args` into positional words and `key=value` options; `allowed` names the valid keys.
    pub fn parse(args: &[&'a str], allowed: &[&str]) -> Result<(Vec<&'a str>, Opts<'a>), String> {
        let mut pos = Vec::new();
        let mut map = BTreeMap::new();
        for a in args {
            match a.split_once('=') {
                Some((k, v)) if allowed.contains(&k) => {
                    map.insert(k, v);
                }
                Some((k, _)) => return Err(format!("unknown option {k} (allowed: {allowed:?})")),
                None => pos.push(*a),
            }
        }
        Ok((pos, Opts(map)))
    }

    pub fn get(&self, k: &str) -> Option<&'a str> {
        self.0.get(k).copied()
    }

    pub fn num<T: std::str::FromStr>(&self, k: &str) -> Result<Option<T>, String> {
        self.get(k)
            .map(|v| v.parse().map_err(|_| format!("{k}={v} is not a number")))
            .transpose()
    }

    /// `dir=zero` (the nil uuid), `dir=new` (a replaced disk: another directory id), or the node's own.
    fn directory(&self, id: i32) -> Result<Uuid, String> {
        Ok(match self.get("dir") {
            None => sim::directory_id(id),
            Some("zero") => Uuid::nil(),
            Some("new") => new_directory_id(id),
            Some(d) => return Err(format!("dir={d}: expected zero or new")),
        })
    }
}

/// The directory id of node `id` after its disk was replaced (`D'` in the upstream list).
pub fn new_directory_id(id: i32) -> Uuid {
    Uuid::from_u128(0x2000 + id as u128)
}

/// AddRaftVoter for node `id` with options `dir=`, `listener=NAME`, `cluster=NAME`, `port=P`.
pub fn add_voter(id: i32, o: &Opts) -> Result<ClientRequest, String> {
    let mut req = sim::add_voter_request(id);
    if let ClientRequest::AddRaftVoter { request, .. } = &mut req {
        request.voter_directory_id = o.directory(id)?;
        if let Some(c) = o.get("cluster") {
            request.cluster_id = Some(StrBytes::from_string(c.to_string()));
        }
        for l in &mut request.listeners {
            if let Some(name) = o.get("listener") {
                l.name = StrBytes::from_string(name.to_string());
            }
            if let Some(port) = o.num("port")? {
                l.port = port;
            }
        }
    }
    Ok(req)
}

/// RemoveRaftVoter for node `id` with options `dir=`, `cluster=NAME`.
pub fn remove_voter(id: i32, o: &Opts) -> Result<ClientRequest, String> {
    let mut req = sim::remove_voter_request(id);
    if let ClientRequest::RemoveRaftVoter(r) = &mut req {
        r.voter_directory_id = o.directory(id)?;
        if let Some(c) = o.get("cluster") {
            r.cluster_id = Some(StrBytes::from_string(c.to_string()));
        }
    }
    Ok(req)
}

/// UpdateRaftVoter from node `id` at `epoch` (options: `epoch=E`, `port=P`, `kraft=MIN-MAX`, `dir=`).
pub fn update_voter(id: i32, epoch: i32, o: &Opts) -> Result<ClientRequest, String> {
    let l = sim::listener(id);
    let (min, max) = match o.get("kraft") {
        None => (0, 1),
        Some(r) => {
            let (a, b) = r.split_once('-').ok_or("kraft=MIN-MAX")?;
            let p = |s: &str| s.parse::<i16>().map_err(|_| format!("kraft={r}"));
            (p(a)?, p(b)?)
        }
    };
    let request = UpdateRaftVoterRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str("sim-cluster")))
        .with_current_leader_epoch(o.num("epoch")?.unwrap_or(epoch))
        .with_voter_id(id)
        .with_voter_directory_id(o.directory(id)?)
        .with_listeners(vec![update_raft_voter_request::Listener::default()
            .with_name(StrBytes::from_string(l.name))
            .with_host(StrBytes::from_string(l.host))
            .with_port(o.num("port")?.unwrap_or(l.port))])
        .with_k_raft_version_feature(
            update_raft_voter_request::KRaftVersionFeature::default()
                .with_min_supported_version(min)
                .with_max_supported_version(max),
        );
    Ok(ClientRequest::UpdateRaftVoter(request))
}

/// DescribeQuorum of `topic=NAME` (default `__cluster_metadata`) and `partitions=P[,Q…]` (default 0).
pub fn describe(o: &Opts) -> Result<DescribeQuorumRequest, String> {
    let mut req = DescribeQuorumRequest::for_metadata_partition();
    let topic = &mut req.topics[0];
    if let Some(t) = o.get("topic") {
        topic.topic_name = t.to_string();
    }
    if let Some(ps) = o.get("partitions") {
        let template: TopicRequest = topic.clone();
        topic.partitions = ps
            .split(',')
            .map(|p| {
                let mut part: PartitionRequest = template.partitions[0].clone();
                part.partition_index = p.parse().map_err(|_| format!("partition {p}"))?;
                Ok(part)
            })
            .collect::<Result<_, String>>()?;
    }
    if let Some(list) = o.get("topics") {
        let template: TopicRequest = req.topics[0].clone();
        req.topics = list
            .split(',')
            .map(|tp| {
                let (name, p) = tp
                    .split_once(':')
                    .ok_or_else(|| format!("topics: {tp} is not NAME:PARTITION"))?;
                let mut topic = template.clone();
                topic.topic_name = name.to_string();
                topic.partitions.truncate(1);
                topic.partitions[0].partition_index =
                    p.parse().map_err(|_| format!("partition {p}"))?;
                Ok(topic)
            })
            .collect::<Result<_, String>>()?;
    }
    Ok(req)
}

/// Edits a queued message in place: a Fetch's `offset=`, `last-epoch=`, `replica=`, or the
/// `voter-dir=new` of a Vote or BeginQuorumEpoch (the key the sender believes the receiver has).
pub fn edit(msg: &mut Message, o: &Opts) -> Result<(), String> {
    match msg {
        Message::FetchRequest(r) => {
            let p = &mut r.topics[0].partitions[0];
            if let Some(v) = o.num("offset")? {
                p.fetch_offset = v;
            }
            if let Some(v) = o.num("last-epoch")? {
                p.last_fetched_epoch = v;
            }
            if let Some(v) = o.num("replica")? {
                r.replica_state.replica_id = BrokerId(v);
            }
        }
        Message::VoteRequest(r) => {
            let to = r.voter_id.0;
            if o.get("voter-dir").is_some() {
                r.topics[0].partitions[0].voter_directory_id = new_directory_id(to);
            }
        }
        Message::BeginQuorumEpochRequest(r) => {
            if o.get("voter-dir").is_some() {
                let to = r.voter_id.0;
                r.topics[0].partitions[0].voter_directory_id = new_directory_id(to);
            }
        }
        Message::EndQuorumEpochRequest(r) => {
            if let Some(v) = o.num("leader")? {
                r.topics[0].partitions[0].leader_id = BrokerId(v);
            }
        }
        other => return Err(format!("cannot edit {other:?}")),
    }
    Ok(())
}

/// UpdateFeatures for `kraft.version` (or `feature=NAME`) at `level`, with `type=upgrade|safe|unsafe|N`
/// (v1+ `UpgradeType`), `validate=true`, `version=V` (default 2; v0 turns a downgrade type into
/// `AllowDowngrade`).
pub fn update_features(level: i16, o: &Opts) -> Result<ClientRequest, String> {
    use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
    let version = o.num::<i16>("version")?.unwrap_or(2);
    let upgrade_type: i8 = match o.get("type") {
        None | Some("upgrade") => 1,
        Some("safe") => 2,
        Some("unsafe") => 3,
        Some(n) => n
            .parse()
            .map_err(|_| format!("type={n}: expected upgrade, safe, unsafe or a number"))?,
    };
    let feature = o
        .get("feature")
        .unwrap_or(kraft::node::KRAFT_VERSION_FEATURE);
    let key = FeatureUpdateKey::default()
        .with_feature(StrBytes::from_string(feature.to_string()))
        .with_max_version_level(level)
        .with_allow_downgrade(version == 0 && upgrade_type != 1)
        .with_upgrade_type(upgrade_type);
    Ok(ClientRequest::UpdateFeatures {
        version,
        request: kafka_protocol::messages::UpdateFeaturesRequest::default()
            .with_feature_updates(vec![key])
            .with_validate_only(o.get("validate") == Some("true")),
    })
}

/// One line for an UpdateFeatures answer: the top-level code, then the message when refused.
pub fn features_summary(
    r: &kafka_protocol::messages::UpdateFeaturesResponse,
    code_name: impl Fn(i16) -> String,
) -> String {
    match &r.error_message {
        Some(m) => format!("UpdateFeatures {}: {m}", code_name(r.error_code)),
        None => format!("UpdateFeatures {}", code_name(r.error_code)),
    }
}
