//! What the core knows of the shell's durable log: the end below which every record is durable (Kafka's
//! flushed offset), and the flushes asked for ([`Effect::FlushLog`](super::Effect::FlushLog)) but not yet
//! reported ([`Node::persisted`](super::Node::persisted)).

use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub(super) struct Durable {
    /// Every record below this offset is durable.
    end: i64,
    /// Flushes not reported yet, oldest first: (the `up_to` asked for, the end it makes durable: lowered
    /// by a later truncation, which removed the records above it).
    pending: VecDeque<(i64, i64)>,
}

impl Durable {
    /// A log whose records below `end` are all durable (a node starts from what storage holds).
    pub(super) fn new(end: i64) -> Self {
        Durable {
            end,
            pending: VecDeque::new(),
        }
    }

    pub(super) fn end(&self) -> i64 {
        self.end
    }

    pub(super) fn flush_requested(&mut self, up_to: i64) {
        self.pending.push_back((up_to, up_to));
    }

    /// The log was truncated to `offset` (the shell truncates durably): nothing at or above it stays
    /// durable, whatever an earlier flush reports later.
    pub(super) fn truncated(&mut self, offset: i64) {
        self.end = self.end.min(offset);
        for (_, effective) in &mut self.pending {
            *effective = (*effective).min(offset);
        }
    }

    /// The shell reports the oldest pending flush, `up_to`. False (and nothing changes) when that is not
    /// the oldest flush asked for: a shell that reports out of order.
    pub(super) fn flushed(&mut self, up_to: i64) -> bool {
        match self.pending.front() {
            Some(&(asked, effective)) if asked == up_to => {
                self.pending.pop_front();
                self.end = self.end.max(effective);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushes_count_in_order_and_truncation_lowers_what_they_make_durable() {
        let mut d = Durable::new(3);
        d.flush_requested(10);
        assert!(!d.flushed(7), "not a flush asked for");
        d.truncated(5);
        d.flush_requested(8);
        assert_eq!(d.end(), 3);
        assert!(d.flushed(10));
        assert_eq!(
            d.end(),
            5,
            "records 5..10 were truncated before the flush was reported"
        );
        assert!(d.flushed(8));
        assert_eq!(d.end(), 8);
        assert!(!d.flushed(8), "each flush is reported once");
        d.truncated(2);
        assert_eq!(d.end(), 2);
    }
}
