//! Test-only seeded faults for the conformance mutation check (cargo feature `faults`, never on by
//! default): [`Node::set_faults`](crate::node::Node::set_faults) turns them on; the node's and the leader's
//! state carry the same flags and every branch reading them exists only with the feature.

/// The seeded faults; each is a bug the conformance run must catch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// The committed voter set is taken from the latest VotersRecord instead of the one below the HW.
    pub committed_from_latest: bool,
    /// A membership change is accepted while another one is pending (the pending-change and the
    /// uncommitted-VotersRecord checks of the gate are skipped).
    pub accept_change_while_pending: bool,
    /// The HW counts a leader that removed itself (Kafka's KAFKA-16530 bug).
    pub hw_counts_removed_leader: bool,
}
