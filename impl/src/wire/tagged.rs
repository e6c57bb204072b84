//! Unknown tagged fields, kept verbatim so they survive a round trip.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Tagged fields this codec does not know: `(tag, value)` in strictly ascending tag order, as Kafka keeps
/// them (`RawTaggedField`s in a list, in wire order, no list while there are none). Almost every section is
/// empty and every struct has one, so the empty case is what counts: `None` is dropped with one null check, where an empty `BTreeMap` (three words) is dropped by running its draining iterator
/// (about 50 instructions, a tenth of a small DescribeQuorum decode under callgrind; README, Performance).
/// The JSON form is the map `{"tag": [bytes]}` it replaced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnknownTaggedFields(Option<Box<[(u32, Bytes)]>>);

impl UnknownTaggedFields {
    pub const fn new() -> Self {
        UnknownTaggedFields(None)
    }

    /// `list` must be in strictly ascending tag order (`None` stands for the empty list only).
    fn from_sorted(list: Vec<(u32, Bytes)>) -> Self {
        UnknownTaggedFields((!list.is_empty()).then(|| list.into_boxed_slice()))
    }

    fn as_slice(&self) -> &[(u32, Bytes)] {
        self.0.as_deref().unwrap_or(&[])
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// In ascending tag order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&u32, &Bytes)> {
        self.as_slice().iter().map(|(tag, value)| (tag, value))
    }

    pub fn get(&self, tag: u32) -> Option<&Bytes> {
        let list = self.as_slice();
        let at = list.binary_search_by_key(&tag, |&(t, _)| t).ok()?;
        Some(&list[at].1)
    }

    /// Sets `tag` to `value`, keeping the order; returns the value it replaces.
    pub fn insert(&mut self, tag: u32, value: Bytes) -> Option<Bytes> {
        let mut list = Vec::from(self.0.take().unwrap_or_default());
        let replaced = match list.binary_search_by_key(&tag, |&(t, _)| t) {
            Ok(at) => Some(std::mem::replace(&mut list[at].1, value)),
            Err(at) => {
                list.insert(at, (tag, value));
                None
            }
        };
        *self = Self::from_sorted(list);
        replaced
    }

    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// Tags read from the wire, where the reader has checked that they ascend.
    pub(crate) fn from_wire(list: Vec<(u32, Bytes)>) -> Self {
        debug_assert!(list.windows(2).all(|w| w[0].0 < w[1].0));
        Self::from_sorted(list)
    }
}

impl From<BTreeMap<u32, Bytes>> for UnknownTaggedFields {
    fn from(map: BTreeMap<u32, Bytes>) -> Self {
        Self::from_sorted(map.into_iter().collect())
    }
}

/// Later values of a repeated tag replace earlier ones, as in a map.
impl FromIterator<(u32, Bytes)> for UnknownTaggedFields {
    fn from_iter<I: IntoIterator<Item = (u32, Bytes)>>(iter: I) -> Self {
        iter.into_iter().collect::<BTreeMap<_, _>>().into()
    }
}

impl IntoIterator for UnknownTaggedFields {
    type Item = (u32, Bytes);
    type IntoIter = std::vec::IntoIter<(u32, Bytes)>;

    fn into_iter(self) -> Self::IntoIter {
        Vec::from(self.0.unwrap_or_default()).into_iter()
    }
}

impl Serialize for UnknownTaggedFields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for UnknownTaggedFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BTreeMap::<u32, Bytes>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_keeps_tags_ascending_and_replaces_a_repeated_tag() {
        let mut tags = UnknownTaggedFields::new();
        assert_eq!(tags.insert(7, Bytes::from_static(b"a")), None);
        assert_eq!(tags.insert(2, Bytes::from_static(b"b")), None);
        assert_eq!(
            tags.insert(7, Bytes::from_static(b"c")),
            Some(Bytes::from_static(b"a"))
        );
        let order: Vec<u32> = tags.iter().map(|(&t, _)| t).collect();
        assert_eq!(order, [2, 7]);
        assert_eq!(tags.get(7), Some(&Bytes::from_static(b"c")));
        assert_eq!(tags.get(3), None);
        let collected: UnknownTaggedFields =
            [(7, Bytes::new()), (2, Bytes::new())].into_iter().collect();
        assert_eq!(
            collected.iter().map(|(&t, _)| t).collect::<Vec<_>>(),
            [2, 7]
        );
        // Emptied and never filled compare equal (the derived `PartialEq` sees the representation).
        tags.clear();
        assert_eq!(tags, UnknownTaggedFields::new());
        assert_eq!(
            UnknownTaggedFields::from(BTreeMap::new()),
            UnknownTaggedFields::new()
        );
    }

    #[test]
    fn json_is_the_map_it_replaced() {
        let mut tags = UnknownTaggedFields::new();
        tags.insert(300, Bytes::from_static(b"\x01"));
        tags.insert(1, Bytes::new());
        let map: BTreeMap<u32, Bytes> = tags.iter().map(|(&t, v)| (t, v.clone())).collect();
        let json = serde_json::to_string(&tags).unwrap();
        assert_eq!(json, serde_json::to_string(&map).unwrap());
        assert_eq!(
            serde_json::from_str::<UnknownTaggedFields>(&json).unwrap(),
            tags
        );
    }
}
