//! Messages on the wire: the version each is written at, the codec round trip, and the model message
//! of each implementation message.

use kraft::node::Message;
use model::types::{Id, Msg};

use super::election::{begin, end, vote_request, vote_response};
use super::fetch::{fetch_request, fetch_response};

/// The kafka-protocol version the shell writes each Raft RPC at (the served maxima of the node's one
/// API table, `kraft::wire::apis`).
pub fn wire_version(msg: &Message) -> i16 {
    use kafka_protocol::messages::ApiKey;
    use kraft::wire::apis::max_version;
    match msg {
        Message::VoteRequest(_) | Message::VoteResponse(_) => max_version(ApiKey::Vote),
        Message::BeginQuorumEpochRequest(_) | Message::BeginQuorumEpochResponse(_) => {
            max_version(ApiKey::BeginQuorumEpoch)
        }
        Message::EndQuorumEpochRequest(_) | Message::EndQuorumEpochResponse(_) => {
            max_version(ApiKey::EndQuorumEpoch)
        }
        Message::FetchRequest(_) | Message::FetchResponse(_) => max_version(ApiKey::Fetch),
        Message::FetchSnapshotRequest(_) | Message::FetchSnapshotResponse(_) => {
            max_version(ApiKey::FetchSnapshot)
        }
        Message::ApiVersionsRequest(_) | Message::ApiVersionsResponse(_) => {
            max_version(ApiKey::ApiVersions)
        }
        Message::UpdateRaftVoterRequest(_) | Message::UpdateRaftVoterResponse(_) => {
            max_version(ApiKey::UpdateRaftVoter)
        }
        // kafka-protocol knows AddRaftVoter v0 only; v1 adds one request field (`wire::add_raft_voter`).
        Message::AddRaftVoterRequest(_) | Message::AddRaftVoterResponse(_) => 0,
        Message::RemoveRaftVoterRequest(_) | Message::RemoveRaftVoterResponse(_) => {
            max_version(ApiKey::RemoveRaftVoter)
        }
    }
}

/// Encodes and decodes `msg` with kafka-protocol at [`wire_version`]: what a socket would carry.
pub fn through_wire(msg: &Message) -> Result<Message, String> {
    through_wire_digest(msg).map(|(m, _)| m)
}

/// [`through_wire`], and a digest of the bytes (the graph replay's fingerprint of a message).
pub fn through_wire_digest(msg: &Message) -> Result<(Message, u64), String> {
    use bytes::BytesMut;
    use kafka_protocol::protocol::{Decodable, Encodable};
    use std::hash::{Hash, Hasher};
    let mut digest = crate::fingerprint::hasher();
    let mut rt = |m: &dyn Fn(&mut BytesMut) -> Result<(), String>| -> Result<bytes::Bytes, String> {
        let mut buf = BytesMut::with_capacity(256);
        m(&mut buf)?;
        buf.hash(&mut digest);
        Ok(buf.freeze())
    };
    fn back<T: Decodable>(mut bytes: bytes::Bytes, v: i16, name: &str) -> Result<T, String> {
        let back =
            T::decode(&mut bytes, v).map_err(|e| format!("{name} v{v} does not decode: {e}"))?;
        if !bytes.is_empty() {
            return Err(format!(
                "{name} v{v}: {} bytes left after decoding",
                bytes.len()
            ));
        }
        Ok(back)
    }
    fn enc<T: Encodable>(m: &T, v: i16, name: &str, buf: &mut BytesMut) -> Result<(), String> {
        m.encode(buf, v)
            .map_err(|e| format!("{name} v{v} does not encode: {e}"))
    }
    let v = wire_version(msg);
    macro_rules! rt {
        ($variant:ident, $m:expr) => {{
            let name = stringify!($variant);
            let bytes = rt(&|b: &mut BytesMut| enc($m, v, name, b))?;
            Message::$variant(back(bytes, v, name)?)
        }};
    }
    let out = match msg {
        Message::VoteRequest(m) => rt!(VoteRequest, m),
        Message::VoteResponse(m) => rt!(VoteResponse, m),
        Message::BeginQuorumEpochRequest(m) => rt!(BeginQuorumEpochRequest, m),
        Message::BeginQuorumEpochResponse(m) => rt!(BeginQuorumEpochResponse, m),
        Message::EndQuorumEpochRequest(m) => rt!(EndQuorumEpochRequest, m),
        Message::EndQuorumEpochResponse(m) => rt!(EndQuorumEpochResponse, m),
        Message::FetchRequest(m) => rt!(FetchRequest, m),
        Message::FetchResponse(m) => rt!(FetchResponse, m),
        Message::FetchSnapshotRequest(m) => rt!(FetchSnapshotRequest, m),
        Message::FetchSnapshotResponse(m) => rt!(FetchSnapshotResponse, m),
        Message::ApiVersionsRequest(m) => rt!(ApiVersionsRequest, m),
        Message::ApiVersionsResponse(m) => rt!(ApiVersionsResponse, m),
        Message::UpdateRaftVoterRequest(m) => rt!(UpdateRaftVoterRequest, m),
        Message::UpdateRaftVoterResponse(m) => rt!(UpdateRaftVoterResponse, m),
        Message::AddRaftVoterRequest(m) => rt!(AddRaftVoterRequest, m),
        Message::AddRaftVoterResponse(m) => rt!(AddRaftVoterResponse, m),
        Message::RemoveRaftVoterRequest(m) => rt!(RemoveRaftVoterRequest, m),
        Message::RemoveRaftVoterResponse(m) => rt!(RemoveRaftVoterResponse, m),
    };
    Ok((out, digest.finish()))
}

/// True for messages the model leaves out (see the module doc).
pub fn left_out(msg: &Message) -> bool {
    matches!(
        msg,
        Message::BeginQuorumEpochResponse(_) | Message::EndQuorumEpochResponse(_)
    )
}

/// The model message of an implementation message from `src`.
pub fn abstract_message(msg: &Message, src: Id) -> Result<Msg, String> {
    match msg {
        Message::VoteRequest(m) => vote_request(m),
        Message::VoteResponse(m) => vote_response(m),
        Message::BeginQuorumEpochRequest(m) => begin(m, src),
        Message::EndQuorumEpochRequest(m) => end(m, src),
        Message::FetchRequest(m) => fetch_request(m, src).map(Msg::FetchRequest),
        Message::FetchResponse(m) => fetch_response(m).map(Msg::FetchResponse),
        Message::BeginQuorumEpochResponse(_) | Message::EndQuorumEpochResponse(_) => {
            Err("BeginQuorumEpoch/EndQuorumEpoch responses are not in the model".into())
        }
        Message::FetchSnapshotRequest(_) | Message::FetchSnapshotResponse(_) => {
            Err("FetchSnapshot is exchanged within the model's `FetchSnapshot` step, never left in flight".into())
        }
        Message::ApiVersionsRequest(_) | Message::ApiVersionsResponse(_) => {
            Err("the ApiVersions round trip of an add is not in the model (the harness answers it within the `Change` step)".into())
        }
        Message::UpdateRaftVoterRequest(_) | Message::UpdateRaftVoterResponse(_) => {
            Err("a follower's UpdateRaftVoter is not in the model (the harness's nodes keep the endpoints of their voter entries)".into())
        }
        Message::AddRaftVoterRequest(_)
        | Message::AddRaftVoterResponse(_)
        | Message::RemoveRaftVoterRequest(_)
        | Message::RemoveRaftVoterResponse(_) => {
            Err("auto-join is not in the model (the harness's nodes run without it)".into())
        }
    }
}
