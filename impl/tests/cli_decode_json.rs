//! `kraft decode`'s JSON for DescribeQuorum answers (`cli/decode.rs`).

use kraft::cli::decode::describe_quorum_json;
use kraft::storage::format_directory_id;
use kraft_sim::{self as sim, Sim};
use serde_json::Value;

#[test]
fn describe_quorum_json_has_the_fields_of_its_version_only() {
    let mut cluster = Sim::new(3, 0, 3).unwrap();
    cluster.elect(1);
    cluster.replicate(3);
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    let v0 = describe_quorum_json(&cluster.describe(1, 0), 0);
    assert_eq!(keys(&v0), ["errorCode", "topics"]);
    let voter0 = &v0["topics"][0]["partitions"][0]["currentVoters"][0];
    assert_eq!(keys(voter0), ["logEndOffset", "replicaId"]);
    let v2 = describe_quorum_json(&cluster.describe(1, 2), 2);
    assert_eq!(keys(&v2), ["errorCode", "errorMessage", "nodes", "topics"]);
    assert_eq!(v2["errorMessage"], "");
    let voter2 = &v2["topics"][0]["partitions"][0]["currentVoters"][0];
    assert_eq!(
        voter2["replicaDirectoryId"],
        format_directory_id(sim::directory_id(1))
    );
    assert!(voter2["lastFetchTimestamp"].is_i64());
    assert_eq!(v2["nodes"][0]["listeners"][0]["name"], "CONTROLLER");
}
