//! Auto-join (KIP-1186): what an acknowledgement at append (`AckWhenCommitted = false`) may show.
//! The ghost `History::append_acks` holds each acknowledged VotersRecord as (offset, epoch).

use super::leaders;
use crate::spec::reported_committed_offset;
use crate::step::KraftModel;
use crate::types::{Kind, Server, State};

/// True if `v` holds the record (offset `o`, epoch `e`), or a snapshot past it.
fn holds(v: &Server, o: u8, e: u8) -> bool {
    v.log.get(o).is_some_and(|en| en.epoch == e) || v.log.start() > o
}

/// True if the committed prefix has the VotersRecord (offset `o`, epoch `e`).
fn committed(s: &State, o: u8, e: u8) -> bool {
    s.history
        .committed
        .get(o as usize)
        .is_some_and(|(en, _)| en.epoch == e && matches!(en.kind, Kind::Voters(_)))
}

/// `AppendAckCommittedOnlyPastHighWatermark`: an acknowledgement at append never appears as committed
/// in the DescribeQuorum view before the HW passes it. A leader holding an acknowledged record
/// reports CommittedVoters from that record (or a later one) only once its HW is past the record.
pub fn append_ack_committed_only_past_hw(m: &KraftModel, s: &State) -> bool {
    s.history.append_acks.iter().all(|&(o, e)| {
        leaders(s).all(|(_, l)| {
            !holds(l, o, e)
                || match (reported_committed_offset(&m.cfg, l), l.hw) {
                    (Some(c), Some(hw)) => c < o as i8 || hw > o,
                    _ => true,
                }
        })
    })
}

/// `TruncatedAutoJoinNeverCommitted`: an acknowledged auto-join whose record every replica has
/// truncated away (no log holds it, no snapshot covers it) was never committed: it is not in the
/// committed prefix (so no DescribeQuorum view ever showed its set as committed, by
/// `DescribeQuorumConsistent`).
pub fn truncated_auto_join_never_committed(_: &KraftModel, s: &State) -> bool {
    s.history
        .append_acks
        .iter()
        .all(|&(o, e)| s.servers.iter().any(|v| holds(v, o, e)) || !committed(s, o, e))
}

/// `sometimes`: an auto-join acknowledged at append is committed.
pub fn auto_join_committed(_: &KraftModel, s: &State) -> bool {
    s.history
        .append_acks
        .iter()
        .any(|&(o, e)| committed(s, o, e))
}

/// `sometimes`: an auto-join acknowledged at append was truncated from every replica (the observer
/// was told NONE and the record is gone: it is to ask again).
pub fn auto_join_ack_truncated(_: &KraftModel, s: &State) -> bool {
    s.history
        .append_acks
        .iter()
        .any(|&(o, e)| !s.servers.iter().any(|v| holds(v, o, e)))
}
