//! The node's restart (the model's `Restart` of the node under test): its process killed and started
//! again on the same data directory.

use model::types::Action;

use super::{story, Divergence, Kit, Line, R};
use crate::kit::NodeProcess;

impl Kit {
    /// Kills the node's process, then starts it again with timers `(election, fetch)` (ms): the
    /// model's `Restart` of the node.
    /// Only where the played replicas hold none of its requests: the requests of a killed process die
    /// with its connections, while the model (a reliable network, messages kept across a restart)
    /// would still deliver them. Its connections are closed on the kit's side too, and an operator
    /// request it had not answered gets no answer (the model's restart answers none).
    pub fn restart_node(&mut self, node: &mut NodeProcess, timers: (u64, u64)) -> R<()> {
        let a = Action::Restart(self.nut);
        let mut line = Line::new(
            "kit",
            format!("{} (kill -9, start on the same data)", story(&a)),
        );
        if !self.held.is_empty() || !self.unarrived.is_empty() {
            let d = Divergence::Kit(format!(
                "restart while the kit holds {} request(s) of the node ({} more on their way)",
                self.held.len(),
                self.unarrived.len()
            ));
            return Err(self.fail(line, d));
        }
        if let Err(e) = node.kill() {
            return Err(self.fail(line, Divergence::Kit(e)));
        }
        self.dead_below = self.listeners.close_all();
        self.conns.clear();
        let unanswered = self.admin.len();
        self.admin.clear();
        self.model_step(a)?;
        // The new process's requests are never a race of the old one's timer (`race`).
        self.past.clear();
        if let Err(e) = node.start(timers, self.wait) {
            return Err(self.fail(line, Divergence::Io(e)));
        }
        line.observed = format!("{unanswered} operator request(s) left unanswered");
        self.report.push(line.verdict("ok".into()));
        Ok(())
    }
}
