//! Symmetry reduction over server ids.
//!
//! Why it is sound: the protocol never looks at an id's value, only at equality and at voter-set
//! membership. So a permutation of ids that maps the bootstrap set (offset −1, the one id-dependent
//! constant) onto itself maps every run onto a run, and every property (all stated over sets of ids)
//! onto itself. The permutations used here reorder the initial voters among themselves and the joiners
//! among themselves. The representative is a member of the state's orbit (not necessarily a canonical
//! one): merging states with equal representatives only merges symmetric states, which is sound; a
//! non-canonical choice only loses some reduction. Only the DFS and simulation checkers use it.
//!
//! Directory ids (KIP-853 voter keys) travel with their id: a server's own directory id moves with
//! the server, a voter set's key (id, dir) becomes (perm(id), dir), the leader's per-replica key
//! (`peer_dirs`) is renamed like `end`, and a message's `voter_dir`/`replica_dir` belongs to its
//! receiver/sender, which the envelope renames. The protocol compares directory ids only with each
//! other (key equality), never with ids, and the bootstrap set's keys all have directory id 0, so
//! the permutations above still map the bootstrap set, every run and every property onto
//! themselves. The summary that orders ids includes a server's directory id (id-free).
//!
//! Auto-join (KIP-1186) runs on a server by its id class (joiner or initial voter) and its directory
//! id, both kept by these permutations; its ghost acknowledgements are offsets and epochs, no ids.

use crate::types::{
    bit, ids, ChangeOp, Entry, Envelope, History, Id, Kind, Mask, Msg, Server, State, VoterSet,
    MAX_LOG, MAX_SERVERS,
};
use stateright::Representative;

fn map_mask(perm: &[Id], mut m: Mask) -> Mask {
    let mut out = 0;
    while m != 0 {
        out |= bit(perm[m.trailing_zeros() as usize]);
        m &= m - 1;
    }
    out
}

/// A voter set renamed by `perm`: each key (id, dir) becomes (perm(id), dir).
fn map_voters(perm: &[Id], v: VoterSet) -> VoterSet {
    ids(v.ids()).fold(VoterSet::of(0), |out, i| {
        if v.unknown_dirs() & bit(i) != 0 {
            out.with_unknown_dir(perm[i as usize])
        } else {
            out.with(perm[i as usize], v.dir(i).unwrap_or(0))
        }
    })
}

fn map_entry(perm: &[Id], e: &mut Entry) {
    if let Kind::Voters(m) = e.kind {
        e.kind = Kind::Voters(map_voters(perm, m));
    }
}

fn map_op(perm: &[Id], op: ChangeOp) -> ChangeOp {
    let p = |i: Id| perm[i as usize];
    match op {
        ChangeOp::Add(j) => ChangeOp::Add(p(j)),
        ChangeOp::Remove(j) => ChangeOp::Remove(p(j)),
        ChangeOp::Update(j) => ChangeOp::Update(p(j)),
        ChangeOp::Swap { out, add } => ChangeOp::Swap {
            out: p(out),
            add: p(add),
        },
        ChangeOp::KraftVersionUpgrade => ChangeOp::KraftVersionUpgrade,
    }
}

fn map_server(perm: &[Id], s: &Server) -> Server {
    let p = |i: Id| perm[i as usize];
    let mut t = *s;
    t.voted_for = s.voted_for.map(p);
    t.leader = s.leader.map(p);
    t.votes = map_mask(perm, s.votes);
    t.pre_votes = map_mask(perm, s.pre_votes);
    t.caught_up = map_mask(perm, s.caught_up);
    t.end = [None; MAX_SERVERS];
    t.peer_dirs = 0;
    t.other_caught_up = 0;
    for (old, &new) in perm.iter().enumerate() {
        t.end[new as usize] = s.end[old];
        t.set_peer_dir(new, s.peer_dir(old as Id));
        t.other_caught_up |= ((s.other_caught_up >> (3 * old)) & 7) << (3 * new);
    }
    t.pending = s.pending.map(|mut pc| {
        pc.op = map_op(perm, pc.op);
        pc
    });
    for e in t.log.as_mut_slice() {
        map_entry(perm, e);
    }
    t.volatile_voters = map_voters(perm, s.volatile_voters);
    let base = t.log.base_voters_mut();
    *base = map_voters(perm, *base);
    t.snapshot = s.snapshot.map(|mut sn| {
        sn.voters = map_voters(perm, sn.voters);
        sn
    });
    t
}

fn map_envelope(perm: &[Id], env: &Envelope) -> Envelope {
    let p = |i: Id| perm[i as usize];
    let mut msg = env.msg;
    if let Msg::VoteResponse { leader, .. } = &mut msg {
        *leader = leader.map(p);
    }
    if let Msg::FetchResponse(r) = &mut msg {
        r.leader_id = r.leader_id.map(p);
        for e in r.records.as_mut_slice() {
            map_entry(perm, e);
        }
    }
    Envelope {
        src: p(env.src),
        dst: p(env.dst),
        msg,
    }
}

/// The state with ids renamed by `perm` (old id → new id).
pub fn permute(s: &State, perm: &[Id]) -> State {
    let mut servers = s.servers.clone();
    for (old, &new) in perm.iter().enumerate() {
        servers[new as usize] = map_server(perm, &s.servers[old]);
    }
    let mut network: Vec<Envelope> = s.network.iter().map(|e| map_envelope(perm, e)).collect();
    network.sort_unstable();
    State {
        bootstrap: map_mask(perm, s.bootstrap),
        servers,
        network,
        history: map_history(perm, &s.history),
    }
}

/// Bytes of a server's own fields in its summary.
const KEY: usize = 2 * MAX_LOG + 19;

/// An id-free summary of a server used to order ids: its own fields, whether it voted for or
/// follows itself, and an order-free digest of the messages it sends and receives (each described
/// without ids, a leader named in a vote answer only as "the receiver", "the sender" or "another").
/// The finer the summary, the fewer ids tie and the fewer permutations `representative` tries;
/// any id-free summary keeps the representative canonical.
fn sort_key(s: &Server, i: Id, traffic: (u64, u64)) -> ([u8; KEY], u64, u64) {
    let mut k = [0u8; KEY];
    k[0] = s.role as u8;
    k[1] = s.epoch;
    k[2] = s.log.len();
    for (i, e) in s.log.as_slice().iter().enumerate() {
        k[3 + 2 * i] = e.epoch;
        k[4 + 2 * i] = match e.kind {
            Kind::Data => 0,
            Kind::LeaderChange => 1,
            Kind::KRaftVersion => 2,
            Kind::Voters(m) => 3 + m.len() as u8,
        };
    }
    let t = 3 + 2 * MAX_LOG;
    k[t] = s.hw.map_or(0, |h| h + 1);
    k[t + 1] = s.voted_for.map_or(0, |v| 1 + (v == i) as u8);
    k[t + 2] = s.leader.map_or(0, |l| 1 + (l == i) as u8);
    k[t + 3] = s.votes.count_ones() as u8;
    k[t + 4] = s.pending.is_some() as u8;
    k[t + 5] = s.fetching.map_or(0, |f| f.fetch_offset + 1);
    k[t + 6] = s.fetching.map_or(0, |f| f.epoch);
    k[t + 7] = s.fetched as u8;
    k[t + 8] = s.pre_votes.count_ones() as u8;
    k[t + 9] = s.caught_up.count_ones() as u8;
    k[t + 10] = s.end.iter().filter(|e| e.is_some()).count() as u8;
    k[t + 11] = s.log.start();
    k[t + 12] = s.snapshot.map_or(0, |sn| sn.id.end + 1);
    k[t + 13] = s.snapshot.map_or(0, |sn| sn.id.epoch);
    k[t + 14] = s.fetching_snapshot.map_or(0, |f| f.end + 1);
    k[t + 15] = s.dir;
    (k, traffic.0, traffic.1)
}

/// An id-free description of a message, mixed into 64 bits (splitmix64's finaliser).
fn message_digest(env: &Envelope) -> u64 {
    let who = |x: Option<Id>| match x {
        None => 0u64,
        Some(x) if x == env.dst => 1,
        Some(x) if x == env.src => 2,
        Some(_) => 3,
    };
    let code: u64 = match env.msg {
        Msg::VoteRequest {
            epoch,
            voter_dir,
            last_epoch,
            last_offset,
        } => u64::from_le_bytes([1, epoch, last_epoch, last_offset, voter_dir, 0, 0, 0]),
        Msg::PreVoteRequest {
            epoch,
            voter_dir,
            last_epoch,
            last_offset,
        } => u64::from_le_bytes([2, epoch, last_epoch, last_offset, voter_dir, 0, 0, 0]),
        Msg::VoteResponse {
            epoch,
            granted,
            error,
            leader,
        } => u64::from_le_bytes([
            3,
            epoch,
            granted as u8,
            error as u8,
            who(leader) as u8,
            0,
            0,
            0,
        ]),
        Msg::BeginQuorumEpoch { epoch, voter_dir } => {
            u64::from_le_bytes([4, epoch, voter_dir, 0, 0, 0, 0, 0])
        }
        Msg::EndQuorumEpoch { epoch } => u64::from_le_bytes([5, epoch, 0, 0, 0, 0, 0, 0]),
        Msg::FetchRequest(k) => u64::from_le_bytes([
            6,
            k.epoch,
            k.fetch_offset,
            k.last_fetched_epoch,
            k.replica_dir,
            0,
            0,
            0,
        ]),
        Msg::FetchResponse(r) => u64::from_le_bytes([
            7,
            r.request.epoch,
            r.request.fetch_offset,
            r.error as u8,
            r.leader_epoch,
            who(r.leader_id) as u8,
            r.high_watermark.map_or(0, |h| h + 1),
            r.records.len(),
        ]),
    };
    let mut z = code.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The fingerprint of `s` renamed by `perm` (old id → new id): equal to
/// `crate::fingerprint::fingerprint(&permute(s, perm))`, computed without building the renamed state (no
/// allocation while the network holds at most 16 messages). It feeds the derived `Hash` of
/// [`State`] the same values in the same order: bootstrap, servers, network, history.
fn permuted_fingerprint(s: &State, perm: &[Id]) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = crate::fingerprint::hasher().build_hasher();
    map_mask(perm, s.bootstrap).hash(&mut h);
    let n = s.servers.len();
    let mut servers = [Server::default(); MAX_SERVERS];
    for (old, &new) in perm.iter().enumerate() {
        servers[new as usize] = map_server(perm, &s.servers[old]);
    }
    servers[..n].hash(&mut h);
    let mut inline = [Envelope {
        src: 0,
        dst: 0,
        msg: Msg::BeginQuorumEpoch {
            epoch: 0,
            voter_dir: 0,
        },
    }; 16];
    let mut spill = Vec::new();
    let network: &mut [Envelope] = if s.network.len() <= inline.len() {
        &mut inline[..s.network.len()]
    } else {
        spill.resize(s.network.len(), inline[0]);
        &mut spill
    };
    for (slot, e) in network.iter_mut().zip(&s.network) {
        *slot = map_envelope(perm, e);
    }
    network.sort_unstable();
    network.hash(&mut h);
    map_history(perm, &s.history).hash(&mut h);
    h.finish()
}

/// The ghost history with ids renamed by `perm`.
fn map_history(perm: &[Id], h: &History) -> History {
    let mut history = h.clone();
    for m in history.leaders.iter_mut() {
        *m = map_mask(perm, *m);
    }
    for (e, _) in history.committed.iter_mut() {
        map_entry(perm, e);
    }
    if let Some((_, _, set)) = &mut history.max_reported {
        *set = map_voters(perm, *set);
    }
    history
}

/// The renaming that takes `s` to its representative (old id → new id, first `servers.len()`
/// entries used) and the representative's fingerprint.
///
/// Canonical: ids are first ordered by an id-free summary of their server (voters first, then
/// joiners); ids whose summaries tie are then tried in every order and the renaming whose state
/// has the smallest fingerprint is kept. Every state of an orbit has the same summaries, so the
/// candidates are the same set of states for each, and the choice does not depend on the starting
/// state.
pub fn canonical(s: &State) -> ([Id; MAX_SERVERS], u64) {
    let n = s.servers.len();
    let mut order = [0 as Id; MAX_SERVERS];
    for (i, o) in order.iter_mut().enumerate().take(n) {
        *o = i as Id;
    }
    // Per server: digests of the messages it sends and receives, summed (order-free).
    let mut traffic = [(0u64, 0u64); MAX_SERVERS];
    for env in &s.network {
        let d = message_digest(env);
        let (src, dst) = (env.src as usize, env.dst as usize);
        traffic[src].0 = traffic[src].0.wrapping_add(d);
        traffic[dst].1 = traffic[dst].1.wrapping_add(d);
    }
    let mut keys = [(false, ([0u8; KEY], 0u64, 0u64)); MAX_SERVERS];
    for (i, (k, v)) in keys.iter_mut().zip(&s.servers).enumerate() {
        let i = i as Id;
        *k = (
            s.bootstrap & bit(i) == 0,
            sort_key(v, i, traffic[i as usize]),
        );
    }
    // Voters first, then joiners: sorting inside each group keeps the bootstrap set fixed.
    order[..n].sort_by(|&a, &b| keys[a as usize].cmp(&keys[b as usize]));
    // Tie groups: maximal runs of equal summaries.
    let mut groups = [(0usize, 0usize); MAX_SERVERS];
    let mut ngroups = 0;
    let mut start = 0;
    for i in 1..=n {
        if i == n || keys[order[i] as usize] != keys[order[start] as usize] {
            if i - start > 1 {
                groups[ngroups] = (start, i);
                ngroups += 1;
            }
            start = i;
        }
    }
    let groups = &groups[..ngroups];
    let to_perm = |order: &[Id]| {
        let mut perm = [0 as Id; MAX_SERVERS];
        for (new, &old) in order[..n].iter().enumerate() {
            perm[old as usize] = new as Id;
        }
        perm
    };
    let identity = |perm: &[Id]| perm.iter().enumerate().all(|(i, &p)| p as usize == i);
    let mut candidate = order;
    let mut best = (u64::MAX, to_perm(&candidate));
    loop {
        let perm = to_perm(&candidate);
        let fp = if identity(&perm[..n]) {
            crate::fingerprint::fingerprint(s)
        } else {
            permuted_fingerprint(s, &perm[..n])
        };
        if fp < best.0 {
            best = (fp, perm);
        }
        if !next_in_groups(&mut candidate, groups) {
            break;
        }
    }
    (best.1, best.0)
}

/// `s` renamed by `perm` (from [`canonical`]); `None` if `perm` is the identity.
pub fn renamed(s: &State, perm: &[Id; MAX_SERVERS]) -> Option<State> {
    let n = s.servers.len();
    let identity = perm[..n].iter().enumerate().all(|(i, &p)| p as usize == i);
    (!identity).then(|| permute(s, &perm[..n]))
}

impl Representative for State {
    /// The state renamed by [`canonical`]'s renaming.
    fn representative(&self) -> Self {
        renamed(self, &canonical(self).0).unwrap_or_else(|| self.clone())
    }
}

/// Steps `order` to the next arrangement inside the tie groups (odometer over each group's
/// lexicographic permutations); false once every arrangement has been produced.
fn next_in_groups(order: &mut [Id], groups: &[(usize, usize)]) -> bool {
    for &(a, b) in groups {
        if next_permutation(&mut order[a..b]) {
            return true;
        }
        // Wrapped around: `next_permutation` left the group sorted again; carry to the next group.
    }
    false
}

/// The next lexicographic permutation; on the last one, sorts ascending and returns false.
fn next_permutation(v: &mut [Id]) -> bool {
    let Some(i) = (1..v.len()).rev().find(|&i| v[i - 1] < v[i]) else {
        v.sort_unstable();
        return false;
    };
    let j = (i..v.len())
        .rev()
        .find(|&j| v[j] > v[i - 1])
        .expect("pivot");
    v.swap(i - 1, j);
    v[i..].reverse();
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ModelConfig, Start};
    use crate::step::KraftModel;
    use crate::types::Action;

    #[test]
    fn representative_is_a_permutation_fixing_the_bootstrap_set() {
        let m = KraftModel::new(ModelConfig {
            start: Start::Fresh,
            ..ModelConfig::default()
        })
        .unwrap();
        let s0 = m.fresh_state();
        // Server 2 starts an election: the representative renames it but keeps it a voter.
        let s1 = m.step(&s0, Action::ElectionTimeout(2)).unwrap().state;
        let r = s1.representative();
        assert_eq!(r.bootstrap, s1.bootstrap);
        let mut a = r.servers.clone();
        let mut b = s1.servers.clone();
        a.sort_by_key(|s| (s.role, s.epoch));
        b.sort_by_key(|s| (s.role, s.epoch));
        assert_eq!(a.len(), b.len());
        assert_eq!(r.network.len(), s1.network.len());
        assert_eq!(r.representative(), r, "idempotent on this state");
        // Server 1's election is the same state up to renaming.
        let s1b = m.step(&s0, Action::ElectionTimeout(1)).unwrap().state;
        assert_eq!(s1b.representative(), r);
    }

    #[test]
    fn representative_is_canonical_when_servers_tie() {
        let m = KraftModel::new(ModelConfig::default()).unwrap();
        let s = m.initial_state();
        // Followers 1 and 2 are identical; a message to one of them is the same state up to
        // renaming as the message to the other, and both must map to one representative.
        let to = |dst| {
            let mut t = s.clone();
            t.network.push(crate::types::Envelope {
                src: 0,
                dst,
                msg: crate::types::Msg::BeginQuorumEpoch {
                    epoch: 1,
                    voter_dir: 0,
                },
            });
            t
        };
        assert_eq!(to(1).representative(), to(2).representative());
        assert_ne!(to(1), to(2));
    }

    #[test]
    fn canonical_fingerprint_is_the_representatives_and_orbit_wide() {
        // Every state within a few steps of the elected start (with a crash and two changes, so
        // that roles, logs and messages vary): the fingerprint `canonical` computes without
        // building the representative is the representative's, and every renaming of the state
        // that fixes the bootstrap set (0, 1, 2 among themselves; the joiner 3 stays) has it too.
        let m = KraftModel::new(ModelConfig {
            max_crashes: 1,
            max_changes: 2,
            ..ModelConfig::default()
        })
        .unwrap();
        let mut layer = vec![m.initial_state()];
        let mut checked = 0;
        let perms: [[Id; 4]; 6] = [
            [0, 1, 2, 3],
            [0, 2, 1, 3],
            [1, 0, 2, 3],
            [1, 2, 0, 3],
            [2, 0, 1, 3],
            [2, 1, 0, 3],
        ];
        for _depth in 0..4 {
            let mut next = Vec::new();
            for s in &layer {
                let fp = canonical(s).1;
                assert_eq!(fp, crate::fingerprint::fingerprint(&s.representative()));
                for p in &perms {
                    assert_eq!(canonical(&permute(s, p)).1, fp);
                }
                checked += 1;
                let mut actions = Vec::new();
                m.enabled_actions(s, &mut actions);
                next.extend(
                    actions
                        .into_iter()
                        .filter_map(|a| m.step(s, a))
                        .map(|t| t.state),
                );
            }
            layer = next;
        }
        assert!(checked > 100, "{checked}");
    }

    #[test]
    fn canonical_fingerprint_covers_directory_ids() {
        // States a few steps after each voter's disk loss (keyed voter sets after the operator's
        // removal, a leader's per-key replica state, messages naming directory ids): the
        // fingerprint is orbit-wide and the representative's, as without disk losses.
        let m = KraftModel::new(ModelConfig {
            joiners: 0,
            max_disk_losses: 1,
            max_changes: 2,
            max_data: 1,
            max_log: 6,
            ..ModelConfig::default()
        })
        .unwrap();
        let perms: [[Id; 3]; 6] = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        let init = m.initial_state();
        // The operator path, replayed: 1 loses its disk and catches up, its stale key is removed,
        // its new key fetches (the leader's state for id 1 is keyed 1') and is added.
        let fetch = |r| Action::Fetch {
            replica: r,
            leader: 0,
        };
        let change = |op| Action::Change { server: 0, op };
        let path = [
            Action::DiskLoss(1),
            fetch(1),
            fetch(1),
            change(crate::types::ChangeOp::Remove(1)),
            fetch(2),
            fetch(2),
            fetch(1),
            fetch(1),
            change(crate::types::ChangeOp::Add(1)),
        ];
        let mut s = init.clone();
        for a in path {
            if let Some(t) = m.step(&s, a) {
                s = t.state;
            }
        }
        let l = &s.servers[0];
        assert_ne!(l.peer_dirs, 0, "the leader tracks key 1'");
        let latest = crate::spec::latest_voters(s.bootstrap, &l.log);
        assert!(latest.is_voter(1, 1), "{latest:?}");
        let mut layer = vec![s];
        let mut keyed = 0;
        for _depth in 0..4 {
            let mut next = Vec::new();
            for s in &layer {
                let fp = canonical(s).1;
                assert_eq!(fp, crate::fingerprint::fingerprint(&s.representative()));
                for p in &perms {
                    assert_eq!(canonical(&permute(s, p)).1, fp);
                }
                keyed += s.servers.iter().filter(|v| v.peer_dirs != 0).count();
                // Renaming loses nothing: the identity gives the state back.
                assert_eq!(permute(s, &perms[0]), *s);
                let mut actions = Vec::new();
                m.enabled_actions(s, &mut actions);
                next.extend(
                    actions
                        .into_iter()
                        .filter_map(|a| m.step(s, a))
                        .map(|t| t.state),
                );
            }
            layer = next;
        }
        assert!(keyed > 20, "{keyed}");
        // Followers 1 and 2 losing their disks is one state up to renaming; the leader's is another.
        let reps: Vec<State> = (0..3)
            .map(|i| {
                m.step(&init, Action::DiskLoss(i))
                    .unwrap()
                    .state
                    .representative()
            })
            .collect();
        assert_eq!(reps[1], reps[2]);
        assert_ne!(reps[0], reps[1]);
    }

    #[test]
    fn permute_rewrites_every_id() {
        let m = KraftModel::new(ModelConfig::default()).unwrap();
        let s = m.initial_state();
        let perm = [1, 0, 2, 3];
        let p = permute(&s, &perm);
        assert_eq!(p.servers[1].role, crate::types::Role::Leader);
        assert_eq!(p.servers[0].leader, Some(1));
        assert_eq!(p.history.leaders[1], bit(1));
        assert_eq!(permute(&p, &perm), s);
    }
}
