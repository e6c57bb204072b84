//! Stateright model of KRaft membership changes.
