//! A level's states at their owner: gathered until the level closes ([`Pending`]: in memory up
//! to the worker's share of `--frontier-memory`, the rest in a spill file), then expanded a chunk
//! at a time ([`Closing`]).

use super::spill;
use super::timely::{Parent, Summary};
use super::{Found, Space};
use ::timely::dataflow::operators::Capability;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;

/// The fixed hasher of the engine's fingerprint-keyed maps (its input is already a hash).
pub(super) type Hasher = ahash::RandomState;

pub(super) fn hasher() -> Hasher {
    ahash::RandomState::with_seeds(1, 2, 3, 4)
}

/// A level's candidates at one owner, until the level closes.
pub(super) type PendingOf<S> = Pending<<S as Space>::Stored, <S as Space>::Finding>;

pub(super) struct Pending<St, F> {
    pub(super) cap: Capability<u32>,
    pub(super) states: HashMap<u64, (Parent, St), Hasher>,
    /// Bytes `states` takes, about ([`Space::stored_size`] plus a table entry each).
    pub(super) bytes: usize,
    /// The states that outgrew the budget, on disk (not deduplicated: the close drops repeats).
    pub(super) spill: Option<spill::Writer<St>>,
    /// A spill file that could not be written (the level stops with it).
    pub(super) error: Option<String>,
    pub(super) generated: u64,
    pub(super) found: Vec<Found<F>>,
}

impl<St: Serialize + DeserializeOwned, F> Pending<St, F> {
    /// Moves the states in memory to this level's spill file in `dir`.
    pub(super) fn spill(&mut self, dir: &std::path::Path, worker: usize, level: u32) {
        let states = std::mem::take(&mut self.states);
        self.bytes = 0;
        if self.error.is_some() {
            return;
        }
        let written = (|| {
            let w = match &mut self.spill {
                Some(w) => w,
                None => self
                    .spill
                    .insert(spill::Writer::create(dir, worker, level)?),
            };
            for (fp, (parent, st)) in states {
                w.push(fp, parent, &st)?;
            }
            Ok::<_, spill::SpillError>(())
        })();
        if let Err(e) = written {
            self.error = Some(e.to_string());
        }
    }
}

/// States a worker expands per activation before it reads its input again.
pub(super) const CHUNK: usize = 1024;

/// Bytes of a pending state beside the stored value and its heap bytes: the fingerprint, the
/// parent and the table's spare capacity.
pub(super) const ENTRY: usize = 32;

/// A closed level being expanded.
pub(super) type ClosingOf<S> = Closing<<S as Space>::Stored, <S as Space>::Finding>;

pub(super) struct Closing<St, F> {
    pub(super) cap: Capability<u32>,
    pub(super) states: std::collections::hash_map::IntoIter<u64, (Parent, St)>,
    /// The level's states on disk, read after those in memory.
    pub(super) spilled: Option<spill::Reader<St>>,
    pub(super) summary: Summary<F>,
    pub(super) generated: u64,
}

impl<St: DeserializeOwned, F> Closing<St, F> {
    /// Up to [`CHUNK`] states into `chunk`: from memory, then from the spill file.
    pub(super) fn chunk(
        &mut self,
        chunk: &mut Vec<(u64, (Parent, St))>,
    ) -> Result<(), spill::SpillError> {
        chunk.extend(self.states.by_ref().take(CHUNK));
        if let Some(r) = &mut self.spilled {
            while chunk.len() < CHUNK {
                match r.next_state()? {
                    Some((fp, parent, st)) => chunk.push((fp, (parent, st))),
                    None => {
                        self.spilled = None;
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether states are left to expand.
    pub(super) fn more(&self) -> bool {
        self.states.len() > 0 || self.spilled.is_some()
    }
}
