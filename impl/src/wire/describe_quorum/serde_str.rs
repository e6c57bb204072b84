//! Serde for [`StrBytes`] fields (kafka-protocol's string type has no serde support): as a JSON string,
//! exactly like the `String` fields they replaced, so the JSON vectors and `--json` output are unchanged.

use kafka_protocol::protocol::StrBytes;
use serde::{Deserialize, Deserializer, Serializer};

pub fn serialize<S: Serializer>(value: &StrBytes, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(value)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<StrBytes, D::Error> {
    String::deserialize(d).map(StrBytes::from_string)
}

pub mod option {
    use super::*;

    pub fn serialize<S: Serializer>(value: &Option<StrBytes>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => s.serialize_some(&**v),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<StrBytes>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(StrBytes::from_string))
    }
}
