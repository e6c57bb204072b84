//! Durable storage: log segments of Kafka record batches and the quorum-state file.
