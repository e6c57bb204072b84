//! Conformance: model traces replayed against the implementation.
