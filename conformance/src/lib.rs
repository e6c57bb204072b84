//! Conformance: model traces replayed against the implementation.

pub mod schema;
pub mod wire;
