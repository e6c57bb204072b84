//! Bounds check of message bytes against Kafka's message schemas (`specs/messages/*.json`), run before
//! kafka-protocol decodes them.
//!
//! kafka-protocol's generated decoders call `Vec::with_capacity(n)` for whatever array length the bytes
//! claim, so 5 bytes could ask for gigabytes. This walker reads the same bytes by the same schema without
//! allocating: every array count, string, bytes and records length must fit in the bytes that remain,
//! every element is walked, and every tagged field must fit its declared size. Once it accepts a body,
//! each count kafka-protocol then reserves is a count of elements that are really present, so its
//! memory is bounded by the body's size times the in-memory/wire size ratio of the largest element.
//!
//! The schemas are Kafka's own files, embedded at build time and parsed once; only what sizes the bytes
//! is kept (versions, flexible versions, nullability, tags, types).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::codec::Reader;
use super::error::WireError;

/// An inclusive version range as written in Kafka schemas: `"0+"`, `"1-3"`, `"2"`, `"none"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versions {
    pub min: i16,
    /// `i16::MAX` for an open range.
    pub max: i16,
}

impl Versions {
    pub const NONE: Versions = Versions { min: 1, max: 0 };

    pub fn parse(text: &str) -> Result<Versions, String> {
        let num = |s: &str| {
            s.trim()
                .parse::<i16>()
                .map_err(|e| format!("bad version {s:?}: {e}"))
        };
        let text = text.trim();
        Ok(if text == "none" {
            Versions::NONE
        } else if let Some(min) = text.strip_suffix('+') {
            Versions {
                min: num(min)?,
                max: i16::MAX,
            }
        } else if let Some((a, b)) = text.split_once('-') {
            let (min, max) = (num(a)?, num(b)?);
            if min > max {
                return Err(format!("empty version range {text:?}"));
            }
            Versions { min, max }
        } else {
            let v = num(text)?;
            Versions { min: v, max: v }
        })
    }

    pub fn contains(self, v: i16) -> bool {
        self.min <= v && v <= self.max
    }
}

impl std::fmt::Display for Versions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.min > self.max {
            write!(f, "none")
        } else if self.max == i16::MAX {
            write!(f, "{}+", self.min)
        } else {
            write!(f, "{}-{}", self.min, self.max)
        }
    }
}

#[derive(Debug)]
enum Kind {
    /// bool, int8..int64, uint16/32, float64, uuid: a fixed number of bytes.
    Fixed(usize),
    String,
    /// bytes and records.
    Bytes,
    Array(Box<Kind>),
    Struct(Vec<Field>),
}

#[derive(Debug)]
struct Field {
    /// `Message.Field.SubField`, as errors name it.
    path: &'static str,
    versions: Versions,
    nullable: Versions,
    tag: Option<u32>,
    tagged: Versions,
    /// A per-field `flexibleVersions` (RequestHeader.ClientId is never compact).
    flexible: Option<Versions>,
    kind: Kind,
}

/// One message (or header) schema, reduced to what sizes its bytes.
#[derive(Debug)]
pub struct MessageSchema {
    pub name: &'static str,
    pub api_key: Option<i16>,
    pub valid: Versions,
    flexible: Versions,
    fields: Vec<Field>,
}

/// Kafka's schemas of every message this crate decodes with kafka-protocol, plus the headers and the
/// control record values.
/// DescribeQuorum is absent: its codec (`wire::describe_quorum`) is ours and bounded by construction.
const SOURCES: &[&str] = &[
    include_str!("../../../specs/messages/RequestHeader.json"),
    include_str!("../../../specs/messages/ResponseHeader.json"),
    include_str!("../../../specs/messages/ApiVersionsRequest.json"),
    include_str!("../../../specs/messages/ApiVersionsResponse.json"),
    include_str!("../../../specs/messages/MetadataRequest.json"),
    include_str!("../../../specs/messages/MetadataResponse.json"),
    include_str!("../../../specs/messages/FetchRequest.json"),
    include_str!("../../../specs/messages/FetchResponse.json"),
    include_str!("../../../specs/messages/FetchSnapshotRequest.json"),
    include_str!("../../../specs/messages/FetchSnapshotResponse.json"),
    include_str!("../../../specs/messages/VoteRequest.json"),
    include_str!("../../../specs/messages/VoteResponse.json"),
    include_str!("../../../specs/messages/BeginQuorumEpochRequest.json"),
    include_str!("../../../specs/messages/BeginQuorumEpochResponse.json"),
    include_str!("../../../specs/messages/EndQuorumEpochRequest.json"),
    include_str!("../../../specs/messages/EndQuorumEpochResponse.json"),
    include_str!("../../../specs/messages/AddRaftVoterRequest.json"),
    include_str!("../../../specs/messages/AddRaftVoterResponse.json"),
    include_str!("../../../specs/messages/RemoveRaftVoterRequest.json"),
    include_str!("../../../specs/messages/RemoveRaftVoterResponse.json"),
    include_str!("../../../specs/messages/UpdateRaftVoterRequest.json"),
    include_str!("../../../specs/messages/UpdateRaftVoterResponse.json"),
    // Control record values (records.rs).
    include_str!("../../../specs/messages/LeaderChangeMessage.json"),
    include_str!("../../../specs/messages/VotersRecord.json"),
    include_str!("../../../specs/messages/KRaftVersionRecord.json"),
    include_str!("../../../specs/messages/SnapshotHeaderRecord.json"),
    include_str!("../../../specs/messages/SnapshotFooterRecord.json"),
    include_str!("../../../specs/messages/DescribeClusterRequest.json"),
    include_str!("../../../specs/messages/DescribeClusterResponse.json"),
    include_str!("../../../specs/messages/UpdateFeaturesRequest.json"),
    include_str!("../../../specs/messages/UpdateFeaturesResponse.json"),
    // The SASL exchange's requests (`server::sasl::server`).
    include_str!("../../../specs/messages/SaslHandshakeRequest.json"),
    include_str!("../../../specs/messages/SaslAuthenticateRequest.json"),
];

/// All embedded schemas by name, parsed on first use. The files are part of the build, so a parse
/// failure is a build defect; `schemas_parse` in the tests keeps it from shipping.
fn schemas() -> &'static BTreeMap<&'static str, MessageSchema> {
    static SCHEMAS: OnceLock<BTreeMap<&'static str, MessageSchema>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        SOURCES
            .iter()
            .filter_map(|text| match parse(text) {
                Ok(s) => Some((s.name, s)),
                Err(e) => {
                    tracing::error!("embedded message schema does not parse: {e}");
                    None
                }
            })
            .collect()
    })
}

/// The embedded schema called `name` (e.g. `"FetchRequest"`).
pub fn schema(name: &str) -> Option<&'static MessageSchema> {
    schemas().get(name)
}

/// The request or response schema of an API key.
pub fn schema_for(api_key: i16, response: bool) -> Option<&'static MessageSchema> {
    let suffix = if response { "Response" } else { "Request" };
    schemas()
        .values()
        .find(|s| s.api_key == Some(api_key) && s.name.ends_with(suffix))
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn strip_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn parse(text: &str) -> Result<MessageSchema, String> {
    let json: serde_json::Value =
        serde_json::from_str(&strip_comments(text)).map_err(|e| e.to_string())?;
    let name = json["name"].as_str().ok_or("schema without a name")?;
    let versions = |key: &str| -> Result<Versions, String> {
        json[key]
            .as_str()
            .map_or(Ok(Versions::NONE), Versions::parse)
    };
    let mut common = BTreeMap::new();
    for s in json["commonStructs"].as_array().into_iter().flatten() {
        let sname = s["name"].as_str().ok_or("commonStruct without a name")?;
        common.insert(sname.to_string(), &s["fields"]);
    }
    let ctx = Ctx { common: &common };
    Ok(MessageSchema {
        name: leak(name.to_string()),
        api_key: json["apiKey"].as_i64().and_then(|k| i16::try_from(k).ok()),
        valid: versions("validVersions")?,
        flexible: versions("flexibleVersions")?,
        fields: ctx.fields(&json["fields"], name, 0)?,
    })
}

struct Ctx<'a> {
    common: &'a BTreeMap<String, &'a serde_json::Value>,
}

impl Ctx<'_> {
    fn fields(
        &self,
        json: &serde_json::Value,
        path: &str,
        depth: usize,
    ) -> Result<Vec<Field>, String> {
        if depth > 16 {
            return Err(format!("{path}: structs nest too deeply"));
        }
        let list = json
            .as_array()
            .ok_or_else(|| format!("{path}: fields is not a list"))?;
        list.iter().map(|f| self.field(f, path, depth)).collect()
    }

    fn field(&self, f: &serde_json::Value, parent: &str, depth: usize) -> Result<Field, String> {
        let name = f["name"]
            .as_str()
            .ok_or_else(|| format!("{parent}: field without a name"))?;
        let path = format!("{parent}.{name}");
        let ty = f["type"]
            .as_str()
            .ok_or_else(|| format!("{path}: no type"))?;
        let versions = |key: &str| -> Result<Versions, String> {
            f[key].as_str().map_or(Ok(Versions::NONE), |s| {
                Versions::parse(s).map_err(|e| format!("{path}: {e}"))
            })
        };
        let kind = match ty.strip_prefix("[]") {
            Some(elem) => Kind::Array(Box::new(self.kind(elem, f, &path, depth)?)),
            None => self.kind(ty, f, &path, depth)?,
        };
        Ok(Field {
            versions: versions("versions")?,
            nullable: versions("nullableVersions")?,
            tag: f["tag"].as_u64().and_then(|t| u32::try_from(t).ok()),
            tagged: versions("taggedVersions")?,
            flexible: match f["flexibleVersions"].as_str() {
                Some(s) => Some(Versions::parse(s)?),
                None => None,
            },
            kind,
            path: leak(path),
        })
    }

    fn kind(
        &self,
        ty: &str,
        f: &serde_json::Value,
        path: &str,
        depth: usize,
    ) -> Result<Kind, String> {
        Ok(match ty {
            "bool" | "int8" => Kind::Fixed(1),
            "int16" | "uint16" => Kind::Fixed(2),
            "int32" | "uint32" => Kind::Fixed(4),
            "int64" | "float64" => Kind::Fixed(8),
            "uuid" => Kind::Fixed(16),
            "string" => Kind::String,
            "bytes" | "records" => Kind::Bytes,
            _ => {
                let fields = match f.get("fields") {
                    Some(inline) => inline,
                    None => self
                        .common
                        .get(ty)
                        .copied()
                        .ok_or_else(|| format!("{path}: unknown type {ty}"))?,
                };
                Kind::Struct(self.fields(fields, path, depth + 1)?)
            }
        })
    }
}

/// Walks `bytes` (which start at byte `offset` of the frame) as `schema` at `version`; returns the
/// bytes consumed. Nothing is allocated, whatever the bytes claim.
pub fn walk(
    schema: &MessageSchema,
    version: i16,
    bytes: &[u8],
    offset: usize,
) -> Result<usize, WireError> {
    if !schema.valid.contains(version) {
        return Err(WireError::UnsupportedVersion {
            message: schema.name,
            version,
            min: schema.valid.min,
            max: schema.valid.max,
        });
    }
    let mut r = Reader::at_offset(bytes, offset);
    let flexible = schema.flexible.contains(version);
    walk_struct(&mut r, &schema.fields, schema.name, version, flexible)?;
    Ok(r.position() - offset)
}

fn walk_struct(
    r: &mut Reader<'_>,
    fields: &[Field],
    name: &'static str,
    v: i16,
    flexible: bool,
) -> Result<(), WireError> {
    for f in fields {
        if f.versions.contains(v) && !(flexible && f.tagged.contains(v)) {
            walk_field(r, f, &f.kind, v, flexible)?;
        }
    }
    if !flexible {
        return Ok(());
    }
    let count = r.varint(name)?;
    for _ in 0..count {
        let tag = r.varint(name)?;
        let at = r.position();
        let size = r.varint(name)? as usize;
        if size > r.remaining() {
            return Err(length_too_large(r, name, at, size));
        }
        let start = r.position();
        let body = r.take(name, size)?;
        let known = fields
            .iter()
            .find(|f| f.tag == Some(tag) && f.versions.contains(v) && f.tagged.contains(v));
        if let Some(f) = known {
            // kafka-protocol decodes a known tag from the stream, not from its declared size: the two
            // must agree, or it would read past the field into what follows.
            let mut sub = Reader::at_offset(body, start);
            walk_field(&mut sub, f, &f.kind, v, flexible)?;
            sub.finish()?;
        }
    }
    Ok(())
}

#[cold]
fn length_too_large(r: &Reader<'_>, field: &'static str, at: usize, length: usize) -> WireError {
    WireError::LengthTooLarge {
        field,
        offset: at,
        length: length as u64,
        remaining: r.remaining(),
    }
}

/// Reads a length prefix: `None` for null (checked against `nullable`), else a length that fits.
fn length(
    r: &mut Reader<'_>,
    f: &Field,
    v: i16,
    compact: bool,
    wide: bool,
) -> Result<Option<usize>, WireError> {
    let at = r.position();
    let n: i64 = if compact {
        i64::from(r.varint(f.path)?) - 1
    } else if wide {
        i64::from(r.i32(f.path)?)
    } else {
        i64::from(r.i16(f.path)?)
    };
    if n == -1 {
        return if f.nullable.contains(v) {
            Ok(None)
        } else {
            Err(WireError::UnexpectedNull {
                field: f.path,
                offset: at,
            })
        };
    }
    if n < 0 {
        return Err(WireError::NegativeLength {
            field: f.path,
            offset: at,
            length: n,
        });
    }
    let n = n as usize;
    if n > r.remaining() {
        return Err(length_too_large(r, f.path, at, n));
    }
    Ok(Some(n))
}

fn walk_field(
    r: &mut Reader<'_>,
    f: &Field,
    kind: &Kind,
    v: i16,
    flexible: bool,
) -> Result<(), WireError> {
    let compact = f.flexible.map_or(flexible, |fv| fv.contains(v));
    match kind {
        Kind::Fixed(n) => {
            r.take(f.path, *n)?;
        }
        Kind::String => {
            if let Some(n) = length(r, f, v, compact, false)? {
                let start = r.position();
                let raw = r.take(f.path, n)?;
                if let Err(e) = std::str::from_utf8(raw) {
                    return Err(WireError::InvalidUtf8 {
                        field: f.path,
                        offset: start + e.valid_up_to(),
                    });
                }
            }
        }
        Kind::Bytes => {
            if let Some(n) = length(r, f, v, compact, true)? {
                r.take(f.path, n)?;
            }
        }
        Kind::Array(elem) => {
            // Every element takes at least one byte, so a count above the bytes left is a lie.
            if let Some(count) = length(r, f, v, compact, true)? {
                for _ in 0..count {
                    walk_element(r, f, elem, v, flexible)?;
                }
            }
        }
        Kind::Struct(fields) => walk_struct(r, fields, f.path, v, flexible)?,
    }
    Ok(())
}

fn walk_element(
    r: &mut Reader<'_>,
    f: &Field,
    elem: &Kind,
    v: i16,
    flexible: bool,
) -> Result<(), WireError> {
    match elem {
        Kind::Struct(fields) => walk_struct(r, fields, f.path, v, flexible),
        Kind::Fixed(n) => r.take(f.path, *n).map(|_| ()),
        // Arrays of strings or arrays are not used by the served APIs; their elements are not nullable.
        other => {
            let inner = Field {
                path: f.path,
                versions: f.versions,
                nullable: Versions::NONE,
                tag: None,
                tagged: Versions::NONE,
                flexible: f.flexible,
                kind: Kind::Fixed(0),
            };
            walk_field(r, &inner, other, v, flexible)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_parse() {
        assert_eq!(schemas().len(), SOURCES.len());
        for s in schemas().values() {
            assert!(s.valid.min <= s.valid.max, "{}", s.name);
        }
        assert_eq!(schema_for(1, false).unwrap().name, "FetchRequest");
        assert_eq!(schema_for(54, true).unwrap().name, "EndQuorumEpochResponse");
    }

    #[test]
    fn version_ranges_parse_like_kafka() {
        assert_eq!(
            Versions::parse("3+"),
            Ok(Versions {
                min: 3,
                max: i16::MAX
            })
        );
        assert_eq!(Versions::parse("4-18"), Ok(Versions { min: 4, max: 18 }));
        assert_eq!(Versions::parse("0"), Ok(Versions { min: 0, max: 0 }));
        assert!(!Versions::parse("none").unwrap().contains(0));
    }
}
