//! The node task's inputs, sent by the connections (`conn`) and the peer links (`peer`) to the driver
//! (`driver`). A leaf, so that none of them imports another for it.

use tokio::sync::oneshot;

use crate::node::{ClientRequest, ClientResponse, Message};

/// Inputs of the node task.
#[derive(Debug)]
pub enum Event {
    /// A peer request; the core's response goes to `reply` (dropped if the core gives none).
    PeerRequest {
        from: i32,
        message: Message,
        reply: oneshot::Sender<Message>,
    },
    /// A response to a request this node sent to `from`.
    PeerResponse { from: i32, message: Message },
    Client {
        request: ClientRequest,
        reply: oneshot::Sender<ClientResponse>,
    },
}
