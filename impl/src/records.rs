//! Kafka record batches <-> `log::Batch` (kafka-protocol `records`), CRC-32C checked.
