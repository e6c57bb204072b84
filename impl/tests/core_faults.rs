//! The seeded faults (cargo feature `faults`) change behaviour exactly where they claim to, so the
//! conformance mutation check has something real to catch. Run with `cargo test -p kraft --features faults`.
#![cfg(feature = "faults")]

use kraft::node::{Faults, Role, Timer};
use kraft::voter_set::VoterSet;
use kraft_sim::{self as sim, Sim};

fn ids(set: Option<&VoterSet>) -> Option<Vec<i32>> {
    set.map(|s| s.ids().collect())
}

fn elected(faults: Faults) -> Sim {
    let mut sim = Sim::new(3, 1, 11).unwrap();
    sim.elect(1);
    sim.replicate(10);
    sim.node_mut(1).set_faults(faults);
    sim
}

fn fetch(sim: &mut Sim, id: i32) {
    sim.fire(id, Timer::Fetch);
    sim.deliver_all(100);
}

#[test]
fn committed_from_latest_reports_an_uncommitted_set() {
    for (fault, expect) in [(false, vec![1, 2, 3]), (true, vec![1, 2, 3, 4])] {
        let mut sim = elected(Faults {
            committed_from_latest: fault,
            ..Faults::default()
        });
        assert!(sim.client(1, sim::add_voter_request(4)).is_empty());
        assert_eq!(sim.node(1).high_watermark(), Some(3));
        assert_eq!(
            ids(sim.node(1).committed_voters()),
            Some(expect.clone()),
            "fault {fault}"
        );
        let d = sim.describe(1, 3);
        let committed: Vec<i32> = d.topics[0].partitions[0]
            .committed_voters
            .iter()
            .map(|r| r.replica_id)
            .collect();
        assert_eq!(
            committed, expect,
            "DescribeQuorum follows the node, fault {fault}"
        );
    }
}

#[test]
fn change_accepted_while_another_is_pending() {
    for fault in [false, true] {
        let mut sim = elected(Faults {
            accept_change_while_pending: fault,
            ..Faults::default()
        });
        assert!(sim.client(1, sim::add_voter_request(4)).is_empty());
        let second = sim.client(1, sim::remove_voter_request(3));
        let latest: Vec<i32> = sim.node(1).latest_voters().ids().collect();
        let committed = ids(sim.node(1).committed_voters()).unwrap();
        if fault {
            // Two changes beyond the committed set: {1,2,3} -> {1,2,4} (SingleUncommittedChange broken).
            assert_eq!(latest, vec![1, 2, 4]);
            assert_eq!(committed, vec![1, 2, 3]);
            // The first request is answered when the second replaces it.
            assert_eq!(
                second
                    .iter()
                    .map(sim::change_error_code)
                    .collect::<Vec<_>>(),
                Vec::<Option<i16>>::new()
            );
        } else {
            assert_eq!(latest, vec![1, 2, 3, 4]);
            assert_eq!(
                second
                    .iter()
                    .map(sim::change_error_code)
                    .collect::<Vec<_>>(),
                vec![Some(7)]
            );
        }
    }
}

#[test]
fn hw_counting_a_removed_leader_commits_without_a_majority_of_the_new_set() {
    for fault in [false, true] {
        let mut sim = elected(Faults {
            hw_counts_removed_leader: fault,
            ..Faults::default()
        });
        assert!(sim.client(1, sim::remove_voter_request(1)).is_empty());
        let client = sim.last_client_id();
        fetch(&mut sim, 2);
        fetch(&mut sim, 2);
        // Only 2 of the new set {2, 3} holds offset 4; the faulty leader counts itself as well, so it
        // "commits" its removal, answers NONE and resigns.
        let replies: Vec<_> = sim
            .replies_to(client)
            .iter()
            .map(sim::change_error_code)
            .collect();
        if fault {
            assert_eq!(replies, vec![Some(0)]);
            assert_eq!(sim.node(1).role(), Role::Resigned);
        } else {
            assert!(replies.is_empty());
            assert_eq!(sim.node(1).role(), Role::Leader);
            assert_eq!(sim.node(1).high_watermark(), Some(3));
        }
    }
}
