//! The tokio network shell around the node: Kafka framing, request dispatch, persist-then-send.
