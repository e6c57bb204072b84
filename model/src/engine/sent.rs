//! A worker's memo of the successors it has sent: a sent state is in its owner's visited set from
//! its level's close on, so sending it again only costs its encoding, the channel and the owner's
//! lookup, never a state or a count. The memo is direct-mapped (a fixed table of fingerprints
//! indexed by their low bits, a newer one replacing the older at its slot): its memory is fixed
//! and allocated once, where a set of every state sent grew with the search, did not shrink with
//! more processes, and paid a probe and a resize per insert.

/// Slots of a worker's memo: 2^24 (128 MiB, touched as it fills). Measured at `--crashes 0`
/// (2.9 M states, 2 processes): 2^22 slots resend 6 % more states than 2^24, and the whole-search
/// set took more CPU than either (model/README.md, "Beyond one machine").
pub(super) const SLOTS: usize = 1 << 24;

pub(super) struct Sent {
    slots: Box<[u64]>,
}

impl Sent {
    /// A memo of `slots` fingerprints (rounded up to a power of two).
    pub(super) fn new(slots: usize) -> Self {
        Sent {
            slots: vec![0; slots.max(1).next_power_of_two()].into_boxed_slice(),
        }
    }

    /// False if `fp` is remembered as sent; otherwise remembers it and says true. Fingerprint 0
    /// (the empty slot) is never remembered.
    pub(super) fn first(&mut self, fp: u64) -> bool {
        let i = fp as usize & (self.slots.len() - 1);
        if fp != 0 && self.slots[i] == fp {
            return false;
        }
        self.slots[i] = fp;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_until_a_colliding_fingerprint_takes_the_slot() {
        let mut s = Sent::new(8);
        assert!(s.first(3));
        assert!(!s.first(3), "remembered");
        assert!(s.first(11), "same slot (11 & 7 == 3), another state");
        assert!(s.first(3), "forgotten: sent again, never lost");
        assert!(
            s.first(0) && s.first(0),
            "the empty slot's value is always sent"
        );
    }
}
