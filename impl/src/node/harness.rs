//! Hooks for harnesses that choose one schedule among those a clock and a network allow: the simulator
//! (`kraft-sim`), the conformance replay of model traces, and `kraft describe`'s observer, which picks the
//! bootstrap server to ask as Kafka picks one at random. A shell that runs a node needs none of them: its
//! inputs are [`Node::handle`], [`Node::handle_client`], [`Node::append`], [`Node::tick`] and the snapshot
//! answers. Every hook ends as an input does: the returned [`Output`] is applied under the same contract.

use kafka_protocol::messages::UpdateRaftVoterRequest;

use super::{Millis, Node, Output, Timer};

/// Stepping a [`Node`] on command rather than on its own deadlines.
pub trait Harness {
    /// Tells the node the shell's clock once, right after `new`: the deadlines `new` armed relative to 0
    /// move by `now`, so a restarted node waits a full timeout instead of firing at once. Without this call
    /// the first input does it with its own `now`.
    fn start_clock(&mut self, now: Millis);

    /// Fires one armed timer now, whatever its deadline (to follow a model's timeout action exactly).
    /// Does nothing if the timer is not armed or waits for a snapshot install.
    fn fire(&mut self, now: Millis, timer: Timer) -> Output;

    /// Sends a Fetch now to `to`: the leader for a follower; for an observer that knows no leader, the
    /// bootstrap server or voter to ask (Kafka picks one at random; a harness picks it here). A follower
    /// asked to fetch from anyone but its leader does nothing.
    fn fetch_from(&mut self, now: Millis, to: i32) -> Output;

    /// Takes a snapshot at the last whole batch at or below the HW now, if that is past the latest
    /// snapshot and none is being written or installed, whatever the triggers say (the conformance replay
    /// follows the model's `TakeSnapshot`).
    fn take_snapshot_now(&mut self, now: Millis) -> Output;

    /// Runs the retention check now, whatever its interval (the conformance replay follows the model's
    /// `AdvanceLogStart` with retention limits of 0).
    fn clean_now(&mut self, now: Millis) -> Output;

    /// Auto-join (KIP-1186) sends only when [`Harness::auto_join_now`] asks, never by its period (the
    /// conformance replay follows the model's `AutoJoin`). Lasts as long as this `Node`: a harness calls it
    /// on every node it builds.
    fn auto_join_on_command_only(&mut self);

    /// Sends auto-join's request now, whatever its period: to the leader this follower follows, the
    /// RemoveRaftVoter of the stale key of its id or its own AddRaftVoter, as the period would send it.
    /// Nothing when auto-join is off, the node follows no leader or its key is a voter.
    fn auto_join_now(&mut self, now: Millis) -> Output;

    /// How many fetches a leader holds for an answer (long poll).
    fn parked_fetch_count(&self) -> usize;

    /// Whether no Fetch of this replica awaits its response.
    fn outstanding_fetch_is_none(&self) -> bool;

    /// The UpdateRaftVoter (and its leader) this follower would send at its next update-voter check,
    /// whatever that check's period says (the conformance replay follows the model's `UpdateVoter`).
    fn update_voter_request(&self) -> Option<(i32, UpdateRaftVoterRequest)>;
}

impl Harness for Node {
    fn start_clock(&mut self, now: Millis) {
        self.adopt_clock(now);
    }

    fn fire(&mut self, now: Millis, timer: Timer) -> Output {
        self.fire_on_command(now, timer)
    }

    fn fetch_from(&mut self, now: Millis, to: i32) -> Output {
        self.fetch_on_command(now, to)
    }

    fn take_snapshot_now(&mut self, now: Millis) -> Output {
        self.take_snapshot_on_command(now)
    }

    fn clean_now(&mut self, now: Millis) -> Output {
        self.clean_on_command(now)
    }

    fn auto_join_on_command_only(&mut self) {
        self.auto_join_periodic = false;
    }

    fn auto_join_now(&mut self, now: Millis) -> Output {
        self.auto_join_on_command(now)
    }

    fn parked_fetch_count(&self) -> usize {
        self.parked_fetches.len()
    }

    fn outstanding_fetch_is_none(&self) -> bool {
        self.outstanding_fetch.is_none()
    }

    fn update_voter_request(&self) -> Option<(i32, UpdateRaftVoterRequest)> {
        self.update_voter_request_now()
    }
}
