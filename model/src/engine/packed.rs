//! The model's state and action in a plain binary form: the form the engine keeps a level's
//! states in and sends them between processes.
//!
//! Their serde forms are the JSON trace forms (fields left out at their defaults, an untagged log
//! and voter set), which only a self-describing format reads back; MessagePack with field names
//! spent most of a two-process run's CPU on the names. Here each travelling type has a plain
//! mirror (every field, positional, no attributes) encoded with bincode's variable-length
//! integers: a state takes under a third of its named MessagePack bytes (the tests check it). The
//! mirrors destructure their originals in full, so a field added to a state type breaks the build
//! here until it travels too.

use crate::types::AppendAcks;
use crate::types::{
    Action, ChangeOp, Entry, Envelope, ErrorCode, FetchKey, FetchResponse, History, Id, Kind, Log,
    Mask, Msg, PendingChange, Role, Server, Snapshot, SnapshotId, State, MAX_LOG, MAX_SERVERS,
};
use crate::voter_set::VoterSet;
use bincode::Options as _;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value that travels in its plain form ([`Plain`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packed<T>(pub T);

/// A type with a plain serde mirror.
pub trait Plain: Sized {
    /// The mirror: every field, positional.
    type Form: Serialize + DeserializeOwned;
    /// The mirror of `self`.
    fn form(&self) -> Self::Form;
    /// Back from the mirror; `Err` for a form no value has (a log longer than its bound).
    fn from_form(f: Self::Form) -> Result<Self, String>;
}

impl<T: Plain> Serialize for Packed<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.form().serialize(s)
    }
}

impl<'de, T: Plain> Deserialize<'de> for Packed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::from_form(T::Form::deserialize(d)?)
            .map(Packed)
            .map_err(D::Error::custom)
    }
}

/// Most bytes [`decode`] reads: far above any state (a few hundred bytes), so a corrupt length
/// cannot make it allocate much.
const LIMIT: u64 = 1 << 16;

/// `t`'s plain form as bytes: bincode with variable-length integers.
pub fn encode<T: Plain>(t: &T) -> Bytes {
    let bytes = bincode::DefaultOptions::new()
        .serialize(&t.form())
        .expect("a plain form (no map, no custom serializer) always encodes");
    Bytes(bytes.into_boxed_slice())
}

/// Back from [`encode`]'s bytes: all of them read, at most [`LIMIT`].
pub fn decode<T: Plain>(bytes: &[u8]) -> Result<T, String> {
    let form = bincode::DefaultOptions::new()
        .with_limit(LIMIT)
        .deserialize(bytes)
        .map_err(|e| format!("a state's plain form: {e}"))?;
    T::from_form(form)
}

/// Encoded bytes, carried by serde as one byte string (not a sequence of `u8`s, one call each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bytes(pub Box<[u8]>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Bytes, E> {
                Ok(Bytes(b.into()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, b: Vec<u8>) -> Result<Bytes, E> {
                Ok(Bytes(b.into_boxed_slice()))
            }
        }
        d.deserialize_bytes(Visit)
    }
}

#[derive(Serialize, Deserialize)]
pub struct VotersForm(Mask, u16, Mask);

impl From<VoterSet> for VotersForm {
    fn from(v: VoterSet) -> Self {
        VotersForm(v.ids(), v.dirs(), v.unknown_dirs())
    }
}

impl From<VotersForm> for VoterSet {
    fn from(VotersForm(ids, dirs, unknown): VotersForm) -> Self {
        VoterSet::from_parts(ids, dirs, unknown)
    }
}

#[derive(Serialize, Deserialize)]
pub enum KindForm {
    Data,
    LeaderChange,
    KRaftVersion,
    Voters(VotersForm),
}

#[derive(Serialize, Deserialize)]
pub struct EntryForm(u8, KindForm);

impl From<Entry> for EntryForm {
    fn from(Entry { epoch, kind }: Entry) -> Self {
        let kind = match kind {
            Kind::Data => KindForm::Data,
            Kind::LeaderChange => KindForm::LeaderChange,
            Kind::KRaftVersion => KindForm::KRaftVersion,
            Kind::Voters(v) => KindForm::Voters(v.into()),
        };
        EntryForm(epoch, kind)
    }
}

impl From<EntryForm> for Entry {
    fn from(EntryForm(epoch, kind): EntryForm) -> Self {
        let kind = match kind {
            KindForm::Data => Kind::Data,
            KindForm::LeaderChange => Kind::LeaderChange,
            KindForm::KRaftVersion => Kind::KRaftVersion,
            KindForm::Voters(v) => Kind::Voters(v.into()),
        };
        Entry { epoch, kind }
    }
}

#[derive(Serialize, Deserialize)]
pub struct SnapshotForm(SnapshotId, VotersForm);

impl From<Snapshot> for SnapshotForm {
    fn from(Snapshot { id, voters }: Snapshot) -> Self {
        SnapshotForm(id, voters.into())
    }
}

impl From<SnapshotForm> for Snapshot {
    fn from(SnapshotForm(id, voters): SnapshotForm) -> Self {
        Snapshot {
            id,
            voters: voters.into(),
        }
    }
}

/// A log: the snapshot it starts at (if any) and its entries from there.
#[derive(Serialize, Deserialize)]
pub struct LogForm(Option<SnapshotForm>, Vec<EntryForm>);

impl From<&Log> for LogForm {
    fn from(log: &Log) -> Self {
        LogForm(
            log.base().map(Into::into),
            log.as_slice().iter().map(|&e| e.into()).collect(),
        )
    }
}

impl TryFrom<LogForm> for Log {
    type Error = String;
    fn try_from(LogForm(base, entries): LogForm) -> Result<Self, String> {
        let mut log = Log::default();
        if let Some(s) = base.map(Snapshot::from) {
            log.truncate_fully_and_start_at(s.id.end, s.id.epoch, s.voters);
        }
        if log.start() as usize + entries.len() > MAX_LOG {
            return Err(format!("a log beyond {MAX_LOG} entries"));
        }
        for e in entries {
            log.push(e.into());
        }
        Ok(log)
    }
}

#[derive(Serialize, Deserialize)]
pub struct FetchKeyForm(u8, u8, u8, u8);

impl From<FetchKey> for FetchKeyForm {
    fn from(k: FetchKey) -> Self {
        let FetchKey {
            epoch,
            fetch_offset,
            last_fetched_epoch,
            replica_dir,
        } = k;
        FetchKeyForm(epoch, fetch_offset, last_fetched_epoch, replica_dir)
    }
}

impl From<FetchKeyForm> for FetchKey {
    fn from(
        FetchKeyForm(epoch, fetch_offset, last_fetched_epoch, replica_dir): FetchKeyForm,
    ) -> Self {
        FetchKey {
            epoch,
            fetch_offset,
            last_fetched_epoch,
            replica_dir,
        }
    }
}

#[derive(Serialize, Deserialize)]
pub struct ServerForm {
    dir: u8,
    epoch: u8,
    voted_for: Option<Id>,
    log: LogForm,
    role: Role,
    leader: Option<Id>,
    hw: Option<u8>,
    votes: Mask,
    epoch_start: u8,
    end: [Option<u8>; MAX_SERVERS],
    caught_up: Mask,
    peer_dirs: u16,
    pending: Option<PendingChange>,
    fetching: Option<FetchKeyForm>,
    fetched: bool,
    pre_votes: Mask,
    snapshot: Option<SnapshotForm>,
    fetching_snapshot: Option<SnapshotId>,
    volatile_voters: VotersForm,
    other_caught_up: u32,
}

impl From<&Server> for ServerForm {
    fn from(s: &Server) -> Self {
        let Server {
            dir,
            epoch,
            voted_for,
            ref log,
            role,
            leader,
            hw,
            votes,
            epoch_start,
            end,
            caught_up,
            peer_dirs,
            pending,
            fetching,
            fetched,
            pre_votes,
            snapshot,
            fetching_snapshot,
            volatile_voters,
            other_caught_up,
        } = *s;
        ServerForm {
            dir,
            epoch,
            voted_for,
            log: log.into(),
            role,
            leader,
            hw,
            votes,
            epoch_start,
            end,
            caught_up,
            peer_dirs,
            pending,
            fetching: fetching.map(Into::into),
            fetched,
            pre_votes,
            snapshot: snapshot.map(Into::into),
            fetching_snapshot,
            volatile_voters: volatile_voters.into(),
            other_caught_up,
        }
    }
}

impl TryFrom<ServerForm> for Server {
    type Error = String;
    fn try_from(f: ServerForm) -> Result<Self, String> {
        Ok(Server {
            dir: f.dir,
            epoch: f.epoch,
            voted_for: f.voted_for,
            log: f.log.try_into()?,
            role: f.role,
            leader: f.leader,
            hw: f.hw,
            votes: f.votes,
            epoch_start: f.epoch_start,
            end: f.end,
            caught_up: f.caught_up,
            peer_dirs: f.peer_dirs,
            pending: f.pending,
            fetching: f.fetching.map(Into::into),
            fetched: f.fetched,
            pre_votes: f.pre_votes,
            snapshot: f.snapshot.map(Into::into),
            fetching_snapshot: f.fetching_snapshot,
            volatile_voters: f.volatile_voters.into(),
            other_caught_up: f.other_caught_up,
        })
    }
}

#[derive(Serialize, Deserialize)]
pub struct FetchResponseForm {
    request: FetchKeyForm,
    error: ErrorCode,
    leader_epoch: u8,
    leader_id: Option<Id>,
    high_watermark: Option<u8>,
    diverging: Option<(u8, u8)>,
    records: LogForm,
    snapshot_id: Option<SnapshotId>,
}

#[derive(Serialize, Deserialize)]
pub enum MsgForm {
    VoteRequest(u8, u8, u8, u8),
    PreVoteRequest(u8, u8, u8, u8),
    VoteResponse(u8, bool, ErrorCode, Option<Id>),
    BeginQuorumEpoch(u8, u8),
    EndQuorumEpoch(u8),
    FetchRequest(FetchKeyForm),
    FetchResponse(Box<FetchResponseForm>),
}

impl From<&Msg> for MsgForm {
    fn from(m: &Msg) -> Self {
        match *m {
            Msg::VoteRequest {
                epoch,
                voter_dir,
                last_epoch,
                last_offset,
            } => MsgForm::VoteRequest(epoch, voter_dir, last_epoch, last_offset),
            Msg::PreVoteRequest {
                epoch,
                voter_dir,
                last_epoch,
                last_offset,
            } => MsgForm::PreVoteRequest(epoch, voter_dir, last_epoch, last_offset),
            Msg::VoteResponse {
                epoch,
                granted,
                error,
                leader,
            } => MsgForm::VoteResponse(epoch, granted, error, leader),
            Msg::BeginQuorumEpoch { epoch, voter_dir } => {
                MsgForm::BeginQuorumEpoch(epoch, voter_dir)
            }
            Msg::EndQuorumEpoch { epoch } => MsgForm::EndQuorumEpoch(epoch),
            Msg::FetchRequest(k) => MsgForm::FetchRequest(k.into()),
            Msg::FetchResponse(FetchResponse {
                request,
                error,
                leader_epoch,
                leader_id,
                high_watermark,
                diverging,
                ref records,
                snapshot_id,
            }) => MsgForm::FetchResponse(Box::new(FetchResponseForm {
                request: request.into(),
                error,
                leader_epoch,
                leader_id,
                high_watermark,
                diverging,
                records: records.into(),
                snapshot_id,
            })),
        }
    }
}

impl TryFrom<MsgForm> for Msg {
    type Error = String;
    fn try_from(f: MsgForm) -> Result<Self, String> {
        Ok(match f {
            MsgForm::VoteRequest(epoch, voter_dir, last_epoch, last_offset) => Msg::VoteRequest {
                epoch,
                voter_dir,
                last_epoch,
                last_offset,
            },
            MsgForm::PreVoteRequest(epoch, voter_dir, last_epoch, last_offset) => {
                Msg::PreVoteRequest {
                    epoch,
                    voter_dir,
                    last_epoch,
                    last_offset,
                }
            }
            MsgForm::VoteResponse(epoch, granted, error, leader) => Msg::VoteResponse {
                epoch,
                granted,
                error,
                leader,
            },
            MsgForm::BeginQuorumEpoch(epoch, voter_dir) => {
                Msg::BeginQuorumEpoch { epoch, voter_dir }
            }
            MsgForm::EndQuorumEpoch(epoch) => Msg::EndQuorumEpoch { epoch },
            MsgForm::FetchRequest(k) => Msg::FetchRequest(k.into()),
            MsgForm::FetchResponse(r) => Msg::FetchResponse(FetchResponse {
                request: r.request.into(),
                error: r.error,
                leader_epoch: r.leader_epoch,
                leader_id: r.leader_id,
                high_watermark: r.high_watermark,
                diverging: r.diverging,
                records: r.records.try_into()?,
                snapshot_id: r.snapshot_id,
            }),
        })
    }
}

#[derive(Serialize, Deserialize)]
pub struct EnvelopeForm(Id, Id, MsgForm);

impl From<&Envelope> for EnvelopeForm {
    fn from(&Envelope { src, dst, ref msg }: &Envelope) -> Self {
        EnvelopeForm(src, dst, msg.into())
    }
}

impl TryFrom<EnvelopeForm> for Envelope {
    type Error = String;
    fn try_from(EnvelopeForm(src, dst, msg): EnvelopeForm) -> Result<Self, String> {
        Ok(Envelope {
            src,
            dst,
            msg: msg.try_into()?,
        })
    }
}

#[derive(Serialize, Deserialize)]
pub struct HistoryForm {
    leaders: [Mask; 16],
    committed: Vec<(EntryForm, u8)>,
    max_reported: Option<(u8, i8, VotersForm)>,
    changes: u8,
    data: u8,
    crashes: u8,
    snapshots: u8,
    disk_losses: u8,
    violations: u16,
    events: u8,
    opened: u16,
    append_acks: AppendAcks,
    duplicates: u8,
}

impl From<&History> for HistoryForm {
    fn from(h: &History) -> Self {
        let History {
            leaders,
            ref committed,
            max_reported,
            changes,
            data,
            crashes,
            snapshots,
            disk_losses,
            violations,
            events,
            opened,
            append_acks,
            duplicates,
        } = *h;
        HistoryForm {
            leaders,
            committed: committed.iter().map(|&(e, c)| (e.into(), c)).collect(),
            max_reported: max_reported.map(|(e, o, v)| (e, o, v.into())),
            changes,
            data,
            crashes,
            snapshots,
            disk_losses,
            violations,
            events,
            opened,
            append_acks,
            duplicates,
        }
    }
}

impl TryFrom<HistoryForm> for History {
    type Error = String;
    fn try_from(f: HistoryForm) -> Result<Self, String> {
        let committed: Vec<(Entry, u8)> = f
            .committed
            .into_iter()
            .map(|(e, c)| (e.into(), c))
            .collect();
        Ok(History {
            leaders: f.leaders,
            committed: committed.try_into()?,
            max_reported: f.max_reported.map(|(e, o, v)| (e, o, v.into())),
            changes: f.changes,
            data: f.data,
            crashes: f.crashes,
            snapshots: f.snapshots,
            disk_losses: f.disk_losses,
            violations: f.violations,
            events: f.events,
            opened: f.opened,
            append_acks: f.append_acks,
            duplicates: f.duplicates,
        })
    }
}

#[derive(Serialize, Deserialize)]
pub struct StateForm {
    bootstrap: Mask,
    servers: Vec<ServerForm>,
    network: Vec<EnvelopeForm>,
    history: HistoryForm,
}

impl Plain for State {
    type Form = StateForm;
    fn form(&self) -> StateForm {
        let State {
            bootstrap,
            ref servers,
            ref network,
            ref history,
        } = *self;
        StateForm {
            bootstrap,
            servers: servers.iter().map(Into::into).collect(),
            network: network.iter().map(Into::into).collect(),
            history: history.into(),
        }
    }
    fn from_form(f: StateForm) -> Result<State, String> {
        Ok(State {
            bootstrap: f.bootstrap,
            servers: f
                .servers
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            network: f
                .network
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            history: f.history.try_into()?,
        })
    }
}

#[derive(Serialize, Deserialize)]
pub enum ActionForm {
    ElectionTimeout(Id),
    FetchTimeout(Id),
    CheckQuorumTimeout(Id),
    ChangeTimeout(Id),
    Resign(Id),
    Restart(Id),
    DiskLoss(Id),
    ClientAppend(Id),
    Change(Id, ChangeOp),
    Fetch(Id, Id),
    Deliver(EnvelopeForm),
    Drop(EnvelopeForm),
    TakeSnapshot(Id),
    AdvanceLogStart(Id),
    FetchSnapshot(Id, Id),
    UpgradeKraftVersion(Id),
    AutoJoin(Id, Id),
    Duplicate(EnvelopeForm),
}

impl Plain for Action {
    type Form = ActionForm;
    fn form(&self) -> ActionForm {
        match *self {
            Action::ElectionTimeout(i) => ActionForm::ElectionTimeout(i),
            Action::FetchTimeout(i) => ActionForm::FetchTimeout(i),
            Action::CheckQuorumTimeout(i) => ActionForm::CheckQuorumTimeout(i),
            Action::ChangeTimeout(i) => ActionForm::ChangeTimeout(i),
            Action::Resign(i) => ActionForm::Resign(i),
            Action::Restart(i) => ActionForm::Restart(i),
            Action::DiskLoss(i) => ActionForm::DiskLoss(i),
            Action::ClientAppend(i) => ActionForm::ClientAppend(i),
            Action::Change { server, op } => ActionForm::Change(server, op),
            Action::Fetch { replica, leader } => ActionForm::Fetch(replica, leader),
            Action::Deliver(ref e) => ActionForm::Deliver(e.into()),
            Action::Drop(ref e) => ActionForm::Drop(e.into()),
            Action::TakeSnapshot(i) => ActionForm::TakeSnapshot(i),
            Action::AdvanceLogStart(i) => ActionForm::AdvanceLogStart(i),
            Action::FetchSnapshot { replica, leader } => ActionForm::FetchSnapshot(replica, leader),
            Action::UpgradeKraftVersion(i) => ActionForm::UpgradeKraftVersion(i),
            Action::AutoJoin { replica, leader } => ActionForm::AutoJoin(replica, leader),
            Action::Duplicate(ref e) => ActionForm::Duplicate(e.into()),
        }
    }
    fn from_form(f: ActionForm) -> Result<Action, String> {
        Ok(match f {
            ActionForm::ElectionTimeout(i) => Action::ElectionTimeout(i),
            ActionForm::FetchTimeout(i) => Action::FetchTimeout(i),
            ActionForm::CheckQuorumTimeout(i) => Action::CheckQuorumTimeout(i),
            ActionForm::ChangeTimeout(i) => Action::ChangeTimeout(i),
            ActionForm::Resign(i) => Action::Resign(i),
            ActionForm::Restart(i) => Action::Restart(i),
            ActionForm::DiskLoss(i) => Action::DiskLoss(i),
            ActionForm::ClientAppend(i) => Action::ClientAppend(i),
            ActionForm::Change(server, op) => Action::Change { server, op },
            ActionForm::Fetch(replica, leader) => Action::Fetch { replica, leader },
            ActionForm::Deliver(e) => Action::Deliver(e.try_into()?),
            ActionForm::Drop(e) => Action::Drop(e.try_into()?),
            ActionForm::TakeSnapshot(i) => Action::TakeSnapshot(i),
            ActionForm::AdvanceLogStart(i) => Action::AdvanceLogStart(i),
            ActionForm::FetchSnapshot(replica, leader) => Action::FetchSnapshot { replica, leader },
            ActionForm::UpgradeKraftVersion(i) => Action::UpgradeKraftVersion(i),
            ActionForm::AutoJoin(replica, leader) => Action::AutoJoin { replica, leader },
            ActionForm::Duplicate(e) => Action::Duplicate(e.try_into()?),
        })
    }
}

impl<T: Plain> Plain for Vec<T> {
    type Form = Vec<T::Form>;
    fn form(&self) -> Vec<T::Form> {
        self.iter().map(T::form).collect()
    }
    fn from_form(f: Vec<T::Form>) -> Result<Self, String> {
        f.into_iter().map(T::from_form).collect()
    }
}

#[cfg(test)]
mod tests;
