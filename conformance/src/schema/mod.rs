//! A schema-driven interpreter of Kafka message JSON files (`specs/messages/*.json`).
//!
//! It reads a schema at run time and decodes (and encodes) message bodies into a generic [`Value`],
//! with no knowledge of any typed codec: it is the independent oracle the conformance run compares the
//! `kraft` codec and `kafka-protocol` against. It follows the rules of Kafka's message generator:
//! - `versions`: a field absent from the version is not on the wire; decoding yields its default, and
//!   encoding drops it if `ignorable` or equal to its default, and fails otherwise;
//! - `flexibleVersions`: compact lengths (unsigned varint of length + 1, 0 = null) and a tagged-field
//!   section after every struct; otherwise int16 string lengths and int32 array lengths (−1 = null);
//! - `taggedVersions`/`tag`: the field lives in the tagged section, written only when not the default;
//!   unknown tags are kept raw, sorted by tag, and written back verbatim;
//! - `nullableVersions`: null is allowed only in those versions;
//! - `default`: the value of an absent field (`"null"` for nullable fields, numbers, booleans).
//!
//! Supported types: bool, int8, int16, int32, int64, uint16, uint32, float64, string, bytes, uuid,
//! structs (inline `fields` or `commonStructs`), and arrays of any of these.

use std::collections::BTreeMap;
use std::path::Path;

use uuid::Uuid;

pub mod build;
mod codec;

/// Errors of schema parsing, decoding and encoding.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SchemaError {
    #[error("schema JSON is invalid: {0}")]
    Json(String),
    #[error("schema is malformed at {path}: {reason}")]
    Malformed { path: String, reason: String },
    #[error("version {version} is outside the schema's valid versions {valid}")]
    UnsupportedVersion { version: i16, valid: String },
    #[error("unexpected end of input at byte {at} while reading {what}")]
    Truncated { at: usize, what: String },
    #[error("invalid data at byte {at} in {field}: {reason}")]
    Invalid {
        at: usize,
        field: String,
        reason: String,
    },
    #[error("{len} trailing bytes after the message")]
    Trailing { len: usize },
    #[error("field {field} is set to a non-default value but is absent from version {version} and not ignorable")]
    NotIgnorable { field: String, version: i16 },
    #[error("value of field {field} does not fit its type {ty}: {reason}")]
    BadValue {
        field: String,
        ty: String,
        reason: String,
    },
    #[error("reading {path}: {reason}")]
    Io { path: String, reason: String },
}

/// Version ranges are parsed by the one parser of Kafka's notation, `kraft`'s.
pub use kraft::wire::schema::Versions;

/// A primitive or composite field type.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldType {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint16,
    Uint32,
    Float64,
    String,
    Bytes,
    Uuid,
    Struct(StructSchema),
    Array(Box<FieldType>),
}

impl FieldType {
    fn name(&self) -> String {
        match self {
            FieldType::Bool => "bool".into(),
            FieldType::Int8 => "int8".into(),
            FieldType::Int16 => "int16".into(),
            FieldType::Int32 => "int32".into(),
            FieldType::Int64 => "int64".into(),
            FieldType::Uint16 => "uint16".into(),
            FieldType::Uint32 => "uint32".into(),
            FieldType::Float64 => "float64".into(),
            FieldType::String => "string".into(),
            FieldType::Bytes => "bytes".into(),
            FieldType::Uuid => "uuid".into(),
            FieldType::Struct(s) => s.name.clone(),
            FieldType::Array(t) => format!("[]{}", t.name()),
        }
    }
}

/// A struct: an ordered list of fields.
#[derive(Clone, Debug, PartialEq)]
pub struct StructSchema {
    pub name: String,
    pub fields: Vec<FieldSchema>,
}

/// One field of a struct.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldSchema {
    pub name: String,
    pub ty: FieldType,
    pub versions: Versions,
    pub nullable: Versions,
    pub tagged: Versions,
    pub tag: Option<u32>,
    pub ignorable: bool,
    /// The raw `default` text, if any.
    pub default: Option<String>,
    /// The value of the field when absent (from `default` and the type).
    pub default_value: Value,
}

/// A parsed message schema.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageSchema {
    pub name: String,
    pub api_key: Option<i16>,
    /// `request`, `response`, `data`, `header`, …
    pub kind: String,
    pub valid: Versions,
    pub flexible: Versions,
    pub root: StructSchema,
}

/// A decoded value. Integers of every width are `Int`; the schema gives the width back when encoding.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    /// A float64, as bits (so values compare exactly).
    Float(u64),
    String(Option<String>),
    Bytes(Option<Vec<u8>>),
    Uuid(Uuid),
    Array(Option<Vec<Value>>),
    Struct(StructValue),
}

/// A struct value: every field of the schema in schema order (absent ones at their default), plus the
/// tagged fields the schema does not know.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StructValue {
    pub fields: Vec<(String, Value)>,
    pub unknown_tagged: BTreeMap<u32, Vec<u8>>,
}

impl StructValue {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        match self.get(name) {
            Some(Value::Int(i)) => Some(*i),
            _ => None,
        }
    }

    pub fn array(&self, name: &str) -> Option<&[Value]> {
        match self.get(name) {
            Some(Value::Array(Some(items))) => Some(items),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing the JSON schema.

/// Removes `//` comment lines (Kafka's message files start with a license header in that form).
pub fn strip_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl MessageSchema {
    pub fn from_file(path: &Path) -> Result<MessageSchema, SchemaError> {
        let text = std::fs::read_to_string(path).map_err(|e| SchemaError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        MessageSchema::parse(&text)
    }

    pub fn parse(text: &str) -> Result<MessageSchema, SchemaError> {
        let json: serde_json::Value = serde_json::from_str(&strip_comments(text))
            .map_err(|e| SchemaError::Json(e.to_string()))?;
        let obj = json
            .as_object()
            .ok_or_else(|| malformed("$", "not an object"))?;
        let name = str_prop(obj, "name", "$")?.ok_or_else(|| malformed("$", "missing name"))?;
        let kind = str_prop(obj, "type", "$")?.unwrap_or_default();
        let api_key = match obj.get("apiKey") {
            None => None,
            Some(v) => Some(
                v.as_i64()
                    .and_then(|k| i16::try_from(k).ok())
                    .ok_or_else(|| malformed("$.apiKey", "not an int16"))?,
            ),
        };
        let valid = versions_prop(obj, "validVersions", "$")?
            .ok_or_else(|| malformed("$", "missing validVersions"))?;
        let flexible = versions_prop(obj, "flexibleVersions", "$")?.unwrap_or(Versions::NONE);
        let mut common = BTreeMap::new();
        if let Some(structs) = obj.get("commonStructs") {
            let list = structs
                .as_array()
                .ok_or_else(|| malformed("$.commonStructs", "not an array"))?;
            // Common structs may refer to each other: parse their raw field lists first.
            for (i, s) in list.iter().enumerate() {
                let path = format!("$.commonStructs[{i}]");
                let so = s
                    .as_object()
                    .ok_or_else(|| malformed(&path, "not an object"))?;
                let sname =
                    str_prop(so, "name", &path)?.ok_or_else(|| malformed(&path, "missing name"))?;
                let fields = so
                    .get("fields")
                    .cloned()
                    .unwrap_or(serde_json::Value::Array(vec![]));
                common.insert(sname, fields);
            }
        }
        let fields_json = obj
            .get("fields")
            .ok_or_else(|| malformed("$", "missing fields"))?;
        let ctx = ParseCtx {
            common: &common,
            depth: 0,
        };
        let fields = ctx.fields(fields_json, "$.fields", valid)?;
        Ok(MessageSchema {
            name: name.clone(),
            api_key,
            kind,
            valid,
            flexible,
            root: StructSchema { name, fields },
        })
    }
}

struct ParseCtx<'a> {
    common: &'a BTreeMap<String, serde_json::Value>,
    depth: usize,
}

impl ParseCtx<'_> {
    fn fields(
        &self,
        json: &serde_json::Value,
        path: &str,
        parent: Versions,
    ) -> Result<Vec<FieldSchema>, SchemaError> {
        if self.depth > 32 {
            return Err(malformed(
                path,
                "structs nest too deeply (recursive commonStructs?)",
            ));
        }
        let list = json
            .as_array()
            .ok_or_else(|| malformed(path, "fields is not an array"))?;
        let mut out = Vec::with_capacity(list.len());
        let mut tags = std::collections::BTreeSet::new();
        for (i, f) in list.iter().enumerate() {
            let fpath = format!("{path}[{i}]");
            let field = self.field(f, &fpath, parent)?;
            if let Some(tag) = field.tag {
                if !tags.insert(tag) {
                    return Err(malformed(&fpath, &format!("duplicate tag {tag}")));
                }
            }
            out.push(field);
        }
        Ok(out)
    }

    fn field(
        &self,
        json: &serde_json::Value,
        path: &str,
        parent: Versions,
    ) -> Result<FieldSchema, SchemaError> {
        let obj = json
            .as_object()
            .ok_or_else(|| malformed(path, "field is not an object"))?;
        let name = str_prop(obj, "name", path)?.ok_or_else(|| malformed(path, "missing name"))?;
        let path = format!("{path}({name})");
        let ty_text =
            str_prop(obj, "type", &path)?.ok_or_else(|| malformed(&path, "missing type"))?;
        let versions = versions_prop(obj, "versions", &path)?
            .ok_or_else(|| malformed(&path, "missing versions"))?;
        let nullable = versions_prop(obj, "nullableVersions", &path)?.unwrap_or(Versions::NONE);
        let tagged = versions_prop(obj, "taggedVersions", &path)?.unwrap_or(Versions::NONE);
        let tag = match obj.get("tag") {
            None => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|t| u32::try_from(t).ok())
                    .ok_or_else(|| malformed(&path, "tag is not a non-negative integer"))?,
            ),
        };
        if tag.is_some() != (tagged != Versions::NONE) {
            return Err(malformed(
                &path,
                "tag and taggedVersions must be given together",
            ));
        }
        let ignorable = match obj.get("ignorable") {
            None => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| malformed(&path, "ignorable is not a boolean"))?,
        };
        let default = match obj.get("default") {
            None => None,
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(serde_json::Value::Number(n)) => Some(n.to_string()),
            Some(serde_json::Value::Bool(b)) => Some(b.to_string()),
            Some(_) => {
                return Err(malformed(
                    &path,
                    "default is not a string, number or boolean",
                ))
            }
        };
        let inner = Versions {
            min: versions.min.max(parent.min),
            max: versions.max.min(parent.max),
        };
        let ty = self.ty(&ty_text, obj.get("fields"), &path, inner)?;
        let mut field = FieldSchema {
            name,
            ty,
            versions,
            nullable,
            tagged,
            tag,
            ignorable,
            default,
            default_value: Value::Bool(false),
        };
        field.default_value = default_value(&field, &path)?;
        Ok(field)
    }

    fn ty(
        &self,
        text: &str,
        fields: Option<&serde_json::Value>,
        path: &str,
        versions: Versions,
    ) -> Result<FieldType, SchemaError> {
        if let Some(elem) = text.strip_prefix("[]") {
            return Ok(FieldType::Array(Box::new(
                self.ty(elem, fields, path, versions)?,
            )));
        }
        let prim = match text {
            "bool" => Some(FieldType::Bool),
            "int8" => Some(FieldType::Int8),
            "int16" => Some(FieldType::Int16),
            "int32" => Some(FieldType::Int32),
            "int64" => Some(FieldType::Int64),
            "uint16" => Some(FieldType::Uint16),
            "uint32" => Some(FieldType::Uint32),
            "float64" => Some(FieldType::Float64),
            "string" => Some(FieldType::String),
            "bytes" => Some(FieldType::Bytes),
            "uuid" => Some(FieldType::Uuid),
            // Kafka's generated code frames records as bytes (a length, compact when flexible).
            "records" => Some(FieldType::Bytes),
            _ => None,
        };
        if let Some(p) = prim {
            if fields.is_some() {
                return Err(malformed(path, "a primitive field cannot have fields"));
            }
            return Ok(p);
        }
        if !text.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
            return Err(malformed(path, &format!("unknown type {text:?}")));
        }
        let fields_json = match (fields, self.common.get(text)) {
            (Some(f), None) => f,
            (None, Some(f)) => f,
            (Some(_), Some(_)) => {
                return Err(malformed(path, &format!("struct {text} is defined twice")))
            }
            (None, None) => {
                return Err(malformed(
                    path,
                    &format!("struct type {text} has no fields"),
                ))
            }
        };
        let nested = ParseCtx {
            common: self.common,
            depth: self.depth + 1,
        };
        let fields = nested.fields(fields_json, &format!("{path}.fields"), versions)?;
        Ok(FieldType::Struct(StructSchema {
            name: text.to_string(),
            fields,
        }))
    }
}

fn malformed(path: &str, reason: &str) -> SchemaError {
    SchemaError::Malformed {
        path: path.to_string(),
        reason: reason.to_string(),
    }
}

fn str_prop(
    obj: &serde_json::Map<String, serde_json::Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, SchemaError> {
    match obj.get(key) {
        None => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(malformed(path, &format!("{key} is not a string"))),
    }
}

fn versions_prop(
    obj: &serde_json::Map<String, serde_json::Value>,
    key: &str,
    path: &str,
) -> Result<Option<Versions>, SchemaError> {
    match str_prop(obj, key, path)? {
        None => Ok(None),
        Some(s) => Versions::parse(&s)
            .map(Some)
            .map_err(|e| malformed(path, &format!("{key}: {e}"))),
    }
}

/// The value an absent field takes (Kafka generator semantics).
pub fn default_value(field: &FieldSchema, path: &str) -> Result<Value, SchemaError> {
    let d = field.default.as_deref();
    let bad = |reason: &str| malformed(path, &format!("default {d:?}: {reason}"));
    let int = |min: i64, max: i64| -> Result<Value, SchemaError> {
        let v = match d {
            None => 0,
            Some(t) => {
                let t = t.trim();
                let parsed =
                    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                        i64::from_str_radix(hex, 16).map_err(|e| bad(&e.to_string()))?
                    } else {
                        t.parse::<i64>().map_err(|e| bad(&e.to_string()))?
                    };
                parsed
            }
        };
        if v < min || v > max {
            return Err(bad("out of range"));
        }
        Ok(Value::Int(v))
    };
    match &field.ty {
        FieldType::Bool => match d {
            None | Some("false") => Ok(Value::Bool(false)),
            Some("true") => Ok(Value::Bool(true)),
            Some(_) => Err(bad("not a boolean")),
        },
        FieldType::Int8 => int(i8::MIN.into(), i8::MAX.into()),
        FieldType::Int16 => int(i16::MIN.into(), i16::MAX.into()),
        FieldType::Int32 => int(i32::MIN.into(), i32::MAX.into()),
        FieldType::Int64 => int(i64::MIN, i64::MAX),
        FieldType::Uint16 => int(0, u16::MAX.into()),
        FieldType::Uint32 => int(0, u32::MAX.into()),
        FieldType::Float64 => match d {
            None => Ok(Value::Float(0f64.to_bits())),
            Some(t) => t
                .trim()
                .parse::<f64>()
                .map(|f| Value::Float(f.to_bits()))
                .map_err(|e| bad(&e.to_string())),
        },
        FieldType::String => match d {
            Some("null") if field.nullable != Versions::NONE => Ok(Value::String(None)),
            Some("null") => Err(bad("null default on a non-nullable field")),
            None => Ok(Value::String(Some(String::new()))),
            Some(t) => Ok(Value::String(Some(t.to_string()))),
        },
        FieldType::Bytes => match d {
            Some("null") if field.nullable != Versions::NONE => Ok(Value::Bytes(None)),
            None => Ok(Value::Bytes(Some(Vec::new()))),
            Some(_) => Err(bad("bytes fields only take a null default")),
        },
        FieldType::Uuid => match d {
            None => Ok(Value::Uuid(Uuid::nil())),
            Some(t) => Uuid::parse_str(t)
                .map(Value::Uuid)
                .map_err(|e| bad(&e.to_string())),
        },
        FieldType::Array(_) => match d {
            Some("null") if field.nullable != Versions::NONE => Ok(Value::Array(None)),
            None => Ok(Value::Array(Some(Vec::new()))),
            Some(_) => Err(bad("arrays only take a null default")),
        },
        FieldType::Struct(s) => {
            if d.is_some() {
                return Err(bad("structs take no default"));
            }
            Ok(Value::Struct(default_struct(s)?))
        }
    }
}

fn default_struct(s: &StructSchema) -> Result<StructValue, SchemaError> {
    let mut fields = Vec::with_capacity(s.fields.len());
    for f in &s.fields {
        fields.push((f.name.clone(), default_value(f, &f.name)?));
    }
    Ok(StructValue {
        fields,
        unknown_tagged: BTreeMap::new(),
    })
}

/// Loads every `*.json` schema in a directory, keyed by message name.
pub fn load_dir(dir: &Path) -> Result<BTreeMap<String, MessageSchema>, SchemaError> {
    let io = |e: std::io::Error| SchemaError::Io {
        path: dir.display().to_string(),
        reason: e.to_string(),
    };
    let mut out = BTreeMap::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "json") {
            let s = MessageSchema::from_file(&p).map_err(|err| SchemaError::Io {
                path: p.display().to_string(),
                reason: err.to_string(),
            })?;
            out.insert(s.name.clone(), s);
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests;
