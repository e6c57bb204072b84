//! Refusal reasons, compared as well as error codes: Kafka answers REQUEST_TIMED_OUT for four different
//! rules (pending change, HW unknown, uncommitted VotersRecord, replica not caught up), so equal codes
//! do not show that the same rule refused. The implementation's reason is `kraft::node::Refusal` (from
//! `Node::check_change`), the model's is `spec::Refusal` (from `spec::check_change`); every refused
//! membership request is compared on both, in the graph replay, the walks and the trace files.

use kraft::node::Refusal as Impl;
use model::spec::{self, Refusal};
use model::types::{Action, ChangeOp, ErrorCode, Id, Reply, State};
use model::KraftModel;

/// One refused membership request and the rule that refused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Refused {
    pub server: Id,
    pub op: ChangeOp,
    pub reason: Refusal,
}

/// The model's reason for the implementation's. The wire-only refusals (another cluster id, an
/// UpdateRaftVoter's epoch, a malformed request) have no model counterpart: the harness never sends
/// such a request, so one of them is a divergence.
pub fn reason(r: Impl) -> Result<Refusal, String> {
    Ok(match r {
        Impl::NotLeader => Refusal::NotLeader,
        Impl::Pending => Refusal::Pending,
        Impl::HighWatermarkUnknown => Refusal::HighWatermarkUnknown,
        Impl::UnsupportedVersion => Refusal::UnsupportedVersion,
        Impl::UncommittedVoters => Refusal::UncommittedVoters,
        Impl::DuplicateVoter => Refusal::DuplicateVoter,
        Impl::NotCaughtUp => Refusal::NotCaughtUp,
        Impl::VoterNotFound => Refusal::VoterNotFound,
        Impl::InconsistentClusterId
        | Impl::FencedLeaderEpoch
        | Impl::UnknownLeaderEpoch
        | Impl::Invalid(_) => return Err(format!("refusal {r:?} has no model counterpart")),
    })
}

/// The refusals of the model step that took `action` from `before` and answered `replies`: a `Change`
/// answered with an error at once is refused by `spec::check_change` at the pre-step state (the step
/// appends nothing then), and that function names the rule; an `AutoJoin`, by the leader's handling of
/// the request (`mapping::auto_join::refusal`).
pub fn of_model_step(
    model: &KraftModel,
    before: &State,
    action: &Action,
    replies: &[Reply],
    out: &mut Vec<Refused>,
) {
    if let Action::AutoJoin { replica, leader } = *action {
        if let Some(reason) = crate::mapping::auto_join::refusal(model, before, action, replies) {
            let op = replies
                .iter()
                .find(|r| r.server == leader && r.error != ErrorCode::None)
                .map_or(ChangeOp::Add(replica), |r| r.op);
            out.push(Refused {
                server: leader,
                op,
                reason,
            });
        }
        return;
    }
    let Action::Change { server, op } = *action else {
        return;
    };
    let answered = replies
        .iter()
        .any(|r| r.server == server && r.op == op && r.error != ErrorCode::None);
    if !answered {
        return;
    }
    if let Some(s) = before.servers.get(server as usize) {
        let dir = model::KraftModel::op_dir(before, op);
        if let Err(reason) = spec::check_change(&model.cfg, s, op, dir) {
            out.push(Refused { server, op, reason });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_reason_has_an_implementation_reason_with_the_same_code() {
        let impls = [
            Impl::NotLeader,
            Impl::Pending,
            Impl::HighWatermarkUnknown,
            Impl::UnsupportedVersion,
            Impl::UncommittedVoters,
            Impl::DuplicateVoter,
            Impl::NotCaughtUp,
            Impl::VoterNotFound,
        ];
        for m in Refusal::ALL {
            let i = impls
                .iter()
                .find(|i| reason(**i) == Ok(m))
                .unwrap_or_else(|| panic!("{m:?} has no implementation reason"));
            assert_eq!(
                i.error_code(),
                crate::mapping::kafka_code(m.error()),
                "{m:?}"
            );
        }
        assert!(reason(Impl::InconsistentClusterId).is_err());
        assert!(reason(Impl::FencedLeaderEpoch).is_err());
    }
}
