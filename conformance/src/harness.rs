//! The implementation side of a replay: one `kraft` node per model server, the shell's durable state, a
//! network of the messages the nodes sent, and the inputs each model action maps to (see `mapping`).

use std::collections::BTreeMap;

use bytes::Bytes;
use kraft::log::MemoryLog;
use kraft::node::{
    ClientId, ClientRequest, ClientResponse, Effect, ElectionState, Message, Millis, Node, Output,
    Timer,
};
use model::types::{Action, ChangeOp, Envelope, Id, Mask, Reply};
use model::{FetchMode, NetworkKind};

use crate::mapping::{self, ChangeRequest};

/// Called on every node the harness builds (also after a restart): the mutation check uses it to switch
/// on `kraft`'s test-only faults, which only exist when `kraft/faults` is enabled (a dev-dependency
/// feature of this crate's tests).
pub type NodeHook = std::sync::Arc<dyn Fn(&mut Node<MemoryLog>) + Send + Sync>;

/// A message in flight with its model abstraction.
#[derive(Clone, Debug)]
pub struct InFlight {
    pub envelope: Envelope,
    pub msg: Message,
}

/// What an action did on the implementation side.
#[derive(Clone, Debug, Default)]
pub struct Applied {
    /// Operator replies, mapped to the model's form.
    pub replies: Vec<Reply>,
}

/// The implementation cluster.
pub struct Cluster {
    pub nodes: Vec<Node<MemoryLog>>,
    /// The last election state each node asked the shell to persist.
    persisted: Vec<ElectionState>,
    clocks: Vec<Millis>,
    pub network: Vec<InFlight>,
    clients: BTreeMap<u64, (Id, ChangeOp)>,
    next_client: u64,
    bootstrap: Mask,
    seed: u64,
    network_kind: NetworkKind,
    hook: Option<NodeHook>,
}

impl Cluster {
    /// `servers` fresh nodes: empty logs, epoch 0, no vote, the bootstrap checkpoint (contract §1).
    pub fn new(
        servers: usize,
        bootstrap: Mask,
        network_kind: NetworkKind,
        seed: u64,
        hook: Option<NodeHook>,
    ) -> Result<Cluster, String> {
        let mut c = Cluster {
            nodes: Vec::with_capacity(servers),
            persisted: vec![ElectionState::default(); servers],
            clocks: vec![0; servers],
            network: Vec::new(),
            clients: BTreeMap::new(),
            next_client: 1,
            bootstrap,
            seed,
            network_kind,
            hook,
        };
        for i in 0..servers {
            let node = c.build(i as Id, MemoryLog::new(), ElectionState::default())?;
            c.nodes.push(node);
        }
        Ok(c)
    }

    fn build(
        &self,
        i: Id,
        log: MemoryLog,
        state: ElectionState,
    ) -> Result<Node<MemoryLog>, String> {
        let cfg = mapping::node_config(i, self.bootstrap, self.seed)?;
        let mut node = Node::new(cfg, log, state).map_err(|e| format!("Node::new for {i}: {e}"))?;
        if let Some(hook) = &self.hook {
            hook(&mut node);
        }
        Ok(node)
    }

    /// The node's clock for its next input (1 ms per input).
    fn tick_clock(&mut self, i: Id) -> Millis {
        self.clocks[i as usize] += 1;
        self.clocks[i as usize]
    }

    pub fn now(&self, i: Id) -> Millis {
        self.clocks[i as usize]
    }

    /// Applies an output of node `i`: effects first (the shell's rule), then messages and replies.
    fn absorb(&mut self, i: Id, out: Output, applied: &mut Applied) -> Result<(), String> {
        for e in out.effects {
            match e {
                Effect::PersistElectionState(s) => self.persisted[i as usize] = s,
            }
        }
        for (dst, msg) in out.messages {
            self.send(i, dst, msg)?;
        }
        for (client, resp) in out.client_replies {
            let Some(&(server, op)) = self.clients.get(&client.0) else {
                return Err(format!("node {i} replied to unknown client {}", client.0));
            };
            if server != i {
                return Err(format!("node {i} replied to a request sent to {server}"));
            }
            let code = match resp {
                ClientResponse::AddRaftVoter(r) => r.error_code,
                ClientResponse::RemoveRaftVoter(r) => r.error_code,
                other => return Err(format!("unexpected client reply {other:?}")),
            };
            let error = mapping::error_code(code)
                .ok_or_else(|| format!("reply error code {code} has no model counterpart"))?;
            applied.replies.push(Reply { server, op, error });
        }
        Ok(())
    }

    fn send(&mut self, src: Id, dst: i32, msg: Message) -> Result<(), String> {
        if mapping::left_out(&msg) {
            return Ok(());
        }
        let dst = Id::try_from(dst)
            .ok()
            .filter(|d| (*d as usize) < self.nodes.len());
        let Some(dst) = dst else {
            return Err(format!("node {src} sent a message to an unknown node"));
        };
        let msg = mapping::through_wire(&msg)?;
        let envelope = Envelope {
            src,
            dst,
            msg: mapping::abstract_message(&msg, src)?,
        };
        if self.network_kind.duplicating() && self.network.iter().any(|m| m.envelope == envelope) {
            return Ok(()); // a set, as in the model
        }
        self.network.push(InFlight { envelope, msg });
        Ok(())
    }

    fn fire(&mut self, i: Id, timer: Timer, applied: &mut Applied) -> Result<(), String> {
        let node = &self.nodes[i as usize];
        let Some(deadline) = node.timers().get(timer) else {
            return Err(format!("node {i}: the {timer:?} timer is not armed"));
        };
        let now = self.clocks[i as usize].max(deadline);
        self.clocks[i as usize] = now;
        let out = self.nodes[i as usize].fire(now, timer);
        self.absorb(i, out, applied)
    }

    fn take(&mut self, env: &Envelope) -> Result<InFlight, String> {
        let pos = self
            .network
            .iter()
            .position(|m| m.envelope == *env)
            .ok_or_else(|| format!("no such message in the implementation's network: {env:?}"))?;
        Ok(if self.network_kind.duplicating() {
            self.network[pos].clone()
        } else {
            self.network.remove(pos)
        })
    }

    fn deliver(&mut self, m: InFlight, applied: &mut Applied) -> Result<(), String> {
        let (src, dst) = (m.envelope.src, m.envelope.dst);
        let now = self.tick_clock(dst);
        let out = self.nodes[dst as usize].handle(now, i32::from(src), m.msg);
        self.absorb(dst, out, applied)
    }

    /// Applies one model action (`fetch`: the model's fetch granularity for this action).
    pub fn apply(&mut self, action: &Action, fetch: FetchMode) -> Result<Applied, String> {
        let mut applied = Applied::default();
        let n = self.nodes.len() as Id;
        let check = |i: Id| {
            if i < n {
                Ok(())
            } else {
                Err(format!("server {i} does not exist"))
            }
        };
        match *action {
            Action::ElectionTimeout(i) => {
                check(i)?;
                self.fire(i, Timer::Election, &mut applied)?
            }
            Action::FetchTimeout(i) => {
                check(i)?;
                self.fire(i, Timer::FetchTimeout, &mut applied)?
            }
            Action::CheckQuorumTimeout(i) => {
                check(i)?;
                self.fire(i, Timer::CheckQuorum, &mut applied)?
            }
            Action::ChangeTimeout(i) => {
                check(i)?;
                self.fire(i, Timer::PendingChange, &mut applied)?
            }
            Action::Resign(i) => {
                // No input: the implementation resigned within the input that committed its removal
                // (the replay compares after this action, see `mapping`).
                check(i)?;
            }
            Action::Restart(i) => {
                check(i)?;
                let log = self.nodes[i as usize].log().clone();
                let state = self.persisted[i as usize].clone();
                self.nodes[i as usize] = self.build(i, log, state)?;
            }
            Action::ClientAppend(i) => {
                check(i)?;
                let now = self.tick_clock(i);
                let (_, out) = self.nodes[i as usize]
                    .append(now, vec![Bytes::from_static(b"conformance")])
                    .map_err(|e| format!("client append at {i} refused: {e}"))?;
                self.absorb(i, out, &mut applied)?;
            }
            Action::Change { server, op } => {
                check(server)?;
                let req = mapping::change_request(op).ok_or_else(|| {
                    format!(
                        "{op:?} has no Kafka request (only the swap-voter bug variant does this)"
                    )
                })?;
                let client = self.next_client;
                self.next_client += 1;
                self.clients.insert(client, (server, op));
                let req = match req {
                    ChangeRequest::Add(r) => ClientRequest::AddRaftVoter {
                        request: r,
                        ack_when_committed: true,
                    },
                    ChangeRequest::Remove(r) => ClientRequest::RemoveRaftVoter(r),
                };
                let now = self.tick_clock(server);
                let out = self.nodes[server as usize].handle_client(now, ClientId(client), req);
                self.absorb(server, out, &mut applied)?;
            }
            Action::Fetch { replica, leader } => {
                check(replica)?;
                check(leader)?;
                let before = self.network.len();
                // The model names the fetch target (an observer's bootstrap choice): `fetch_from`.
                let now = self.tick_clock(replica);
                let out = self.nodes[replica as usize].fetch_from(now, i32::from(leader));
                self.absorb(replica, out, &mut applied)?;
                let sent: Vec<InFlight> = self.network.drain(before..).collect();
                let [req] = sent.as_slice() else {
                    return Err(format!(
                        "the Fetch timer of {replica} sent {} messages, expected one FetchRequest",
                        sent.len()
                    ));
                };
                if !matches!(req.msg, Message::FetchRequest(_)) || req.envelope.dst != leader {
                    return Err(format!(
                        "the Fetch timer of {replica} sent {:?} to {}, the model fetches from {leader}",
                        req.envelope.msg, req.envelope.dst
                    ));
                }
                match fetch {
                    FetchMode::Async => self.network.push(req.clone()),
                    FetchMode::Sync => {
                        self.deliver(req.clone(), &mut applied)?;
                        let pos = self
                            .network
                            .iter()
                            .rposition(|m| {
                                m.envelope.src == leader
                                    && m.envelope.dst == replica
                                    && matches!(m.msg, Message::FetchResponse(_))
                            })
                            .ok_or_else(|| {
                                format!("leader {leader} did not answer the Fetch of {replica}")
                            })?;
                        let resp = self.network.remove(pos);
                        self.deliver(resp, &mut applied)?;
                    }
                }
            }
            Action::Deliver(env) => {
                let m = self.take(&env)?;
                self.deliver(m, &mut applied)?;
            }
            Action::Drop(env) => {
                let pos = self
                    .network
                    .iter()
                    .position(|m| m.envelope == env)
                    .ok_or_else(|| format!("no such message to drop: {env:?}"))?;
                self.network.remove(pos);
            }
        }
        Ok(applied)
    }

    /// The in-flight envelopes, sorted (a set on a duplicating network), as the model keeps them.
    pub fn envelopes(&self) -> Vec<Envelope> {
        let mut v: Vec<Envelope> = self.network.iter().map(|m| m.envelope).collect();
        v.sort();
        if self.network_kind.duplicating() {
            v.dedup();
        }
        v
    }
}
