//! Builders of generic values, for the adapters that turn a typed message (`kraft`'s own types or
//! `kafka-protocol`'s) into a [`StructValue`] in the schema's field names.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::{StructValue, Value};

/// Unknown tagged fields, whichever type holds them.
pub trait TaggedFields {
    fn by_tag(&self) -> BTreeMap<u32, Vec<u8>>;
}

impl TaggedFields for BTreeMap<i32, Bytes> {
    fn by_tag(&self) -> BTreeMap<u32, Vec<u8>> {
        self.iter()
            .filter_map(|(k, v)| u32::try_from(*k).ok().map(|k| (k, v.to_vec())))
            .collect()
    }
}

impl TaggedFields for kraft::wire::UnknownTaggedFields {
    fn by_tag(&self) -> BTreeMap<u32, Vec<u8>> {
        self.iter().map(|(k, v)| (*k, v.to_vec())).collect()
    }
}

pub fn int(i: impl Into<i64>) -> Value {
    Value::Int(i.into())
}

pub fn string(s: &str) -> Value {
    Value::String(Some(s.to_owned()))
}

pub fn array(items: impl Iterator<Item = Value>) -> Value {
    Value::Array(Some(items.collect()))
}

pub fn structs(items: impl Iterator<Item = StructValue>) -> Value {
    array(items.map(Value::Struct))
}

/// A struct of `fields`, in order, with the unknown tagged fields `tags`.
pub fn strukt(fields: Vec<(&str, Value)>, tags: &impl TaggedFields) -> StructValue {
    StructValue {
        fields: fields
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect(),
        unknown_tagged: tags.by_tag(),
    }
}
