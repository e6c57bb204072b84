//! Auto-join (KIP-1186) as the model's `AutoJoin{replica, leader}`: the request the replica's core sends
//! (`Harness::auto_join_now`) crosses the shell's framing (`kraft::server::codec`: the bytes a socket
//! carries, AddRaftVoter at v1 with its `AckWhenCommitted`) and reaches the leader's core as the client
//! request the leader's shell decodes a peer's request as. What is compared: the operation it names,
//! the leader's answer and the typed reason of a refusal, the acknowledgements at append (the model's
//! ghost `History::append_acks`), and everything compared after any step.

use bytes::Bytes;
use kraft::node::{ClientRequest, Message};
use kraft::server::codec::{self, Incoming};
use model::spec::Refusal;
use model::types::{Action, ChangeOp, ErrorCode, Reply, State};
use model::KraftModel;

use super::{id_of, small};

/// The client id in the frame's request header (the shell's peers send their own name).
const CLIENT_ID: &str = "conformance-auto-join";

/// `msg`, a request the replica's core sent to its leader, as the leader's shell hands it to the core:
/// framed by the sender's shell at its version, decoded by the receiver's shell.
pub fn as_served(msg: &Message) -> Result<ClientRequest, String> {
    let frame = codec::peer_request_frame(msg, 0, CLIENT_ID)
        .map_err(|e| format!("auto-join request {msg:?} does not frame: {e}"))?;
    let payload = Bytes::copy_from_slice(frame.get(4..).unwrap_or_default());
    match codec::decode_request(payload) {
        Ok((_, Incoming::Client(req))) => Ok(req),
        Ok((_, other)) => Err(format!(
            "the leader's shell decodes the auto-join request as {other:?}"
        )),
        Err(e) => Err(format!("the auto-join request does not decode: {e}")),
    }
}

/// The model's operation for a served auto-join request: the add or removal of the id it names. Any
/// other request is not auto-join's.
pub fn op_of(req: &ClientRequest) -> Result<ChangeOp, String> {
    match req {
        ClientRequest::AddRaftVoter { request, .. } => Ok(ChangeOp::Add(id_of(
            request.voter_id,
            "auto-join voter id",
        )?)),
        ClientRequest::RemoveRaftVoter(r) => {
            Ok(ChangeOp::Remove(id_of(r.voter_id, "auto-join voter id")?))
        }
        other => Err(format!("auto-join sent {other:?}")),
    }
}

/// The model's acknowledgement at append of an add answered NONE in the step that appended it: the
/// VotersRecord's (offset, epoch), as `History::append_acks` records it.
pub fn append_ack(offset: i64, epoch: i32) -> Result<(u8, u8), String> {
    Ok((
        small(offset, "acknowledged offset")?,
        small(epoch, "acknowledged epoch")?,
    ))
}

/// The refusal of a model `AutoJoin` step answered with an error: the rule `auto_join_change` names at
/// the state before the step (the step appends nothing then).
pub fn refusal(
    model: &KraftModel,
    before: &State,
    action: &Action,
    replies: &[Reply],
) -> Option<Refusal> {
    let Action::AutoJoin { replica, leader } = *action else {
        return None;
    };
    if !replies
        .iter()
        .any(|r| r.server == leader && r.error != ErrorCode::None)
    {
        return None;
    }
    let r = before.servers.get(usize::from(replica))?;
    let req = model.auto_join_request(r, replica)?;
    model.auto_join_change(before, replica, leader, req).err()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{AddRaftVoterRequest, RemoveRaftVoterRequest};

    #[test]
    fn the_add_is_served_at_v1_without_ack_when_committed() {
        let add = Message::AddRaftVoterRequest(AddRaftVoterRequest::default().with_voter_id(3));
        let served = as_served(&add).unwrap();
        let ClientRequest::AddRaftVoter {
            ack_when_committed, ..
        } = &served
        else {
            panic!("{served:?}");
        };
        assert!(!ack_when_committed);
        assert_eq!(op_of(&served), Ok(ChangeOp::Add(3)));
        let remove =
            Message::RemoveRaftVoterRequest(RemoveRaftVoterRequest::default().with_voter_id(2));
        assert_eq!(op_of(&as_served(&remove).unwrap()), Ok(ChangeOp::Remove(2)));
        assert!(as_served(&Message::FetchRequest(Default::default())).is_err());
        assert_eq!(append_ack(5, 2), Ok((5, 2)));
        assert!(append_ack(-1, 2).is_err());
    }
}
