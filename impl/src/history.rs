//! Voter-set history: offset-indexed voter sets, and the committed voter set.
