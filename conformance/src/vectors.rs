//! Golden vectors (`specs/vectors/*.json` with `.body.hex` and `.frame.hex`) checked by the schema
//! interpreter: the JSON's body, read through the schema (snake_case names of the schema's fields),
//! encodes at `api_version` to exactly the body bytes and decodes back to the same value; the frame is
//! the int32 size, the header of `header_version` with the JSON's header fields, then the body. For
//! DescribeQuorum the `kraft` codec and (v0–2) `kafka-protocol` must decode the body to the same value
//! too; for FetchSnapshot (whose codec in the node is `kafka-protocol`) `kafka-protocol` must decode it to
//! the same value and re-encode it to the same bytes.

use std::path::Path;

use crate::schema::{FieldType, MessageSchema, StructSchema, StructValue, Value};
use crate::wire::{diff, kp_to_value, typed_to_value, WireChecker};
use crate::wire_fetch_snapshot::API_KEY as FETCH_SNAPSHOT;

/// `HighWatermark` → `high_watermark`.
pub fn snake_case(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if prev_lower || (prev_upper && next_lower) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

/// A JSON object read through a struct schema; absent keys take the schema default.
pub fn json_to_struct(
    s: &StructSchema,
    json: &serde_json::Value,
    path: &str,
) -> Result<StructValue, String> {
    let obj = json
        .as_object()
        .ok_or_else(|| format!("{path}: not an object"))?;
    for k in obj.keys() {
        if !s.fields.iter().any(|f| snake_case(&f.name) == *k) {
            return Err(format!("{path}.{k}: not a field of {}", s.name));
        }
    }
    let mut fields = Vec::new();
    for f in &s.fields {
        let key = snake_case(&f.name);
        let fpath = format!("{path}.{key}");
        let v = match obj.get(&key) {
            None => crate::schema::default_value(f, &fpath).map_err(|e| e.to_string())?,
            Some(j) => json_to_value(&f.ty, j, &fpath)?,
        };
        fields.push((f.name.clone(), v));
    }
    Ok(StructValue {
        fields,
        unknown_tagged: Default::default(),
    })
}

fn json_to_value(ty: &FieldType, j: &serde_json::Value, path: &str) -> Result<Value, String> {
    let bad = || format!("{path}: {j} does not fit {ty:?}");
    Ok(match ty {
        FieldType::Bool => Value::Bool(j.as_bool().ok_or_else(bad)?),
        FieldType::Int8
        | FieldType::Int16
        | FieldType::Int32
        | FieldType::Int64
        | FieldType::Uint16
        | FieldType::Uint32 => Value::Int(j.as_i64().ok_or_else(bad)?),
        FieldType::Float64 => Value::Float(j.as_f64().ok_or_else(bad)?.to_bits()),
        FieldType::String => match j {
            serde_json::Value::Null => Value::String(None),
            serde_json::Value::String(s) => Value::String(Some(s.clone())),
            _ => return Err(bad()),
        },
        FieldType::Uuid => {
            Value::Uuid(uuid::Uuid::parse_str(j.as_str().ok_or_else(bad)?).map_err(|_| bad())?)
        }
        // Bytes and records: lowercase hex, `null` for a null value.
        FieldType::Bytes => match j {
            serde_json::Value::Null => Value::Bytes(None),
            serde_json::Value::String(h) => Value::Bytes(Some(hex(h, path)?)),
            _ => return Err(bad()),
        },
        FieldType::Array(elem) => match j {
            serde_json::Value::Null => Value::Array(None),
            serde_json::Value::Array(items) => Value::Array(Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| json_to_value(elem, x, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            )),
            _ => return Err(bad()),
        },
        FieldType::Struct(s) => Value::Struct(json_to_struct(s, j, path)?),
    })
}

fn hex(text: &str, what: &str) -> Result<Vec<u8>, String> {
    let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if !t.len().is_multiple_of(2) {
        return Err(format!("{what}: odd number of hex digits"));
    }
    (0..t.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&t[i..i + 2], 16).map_err(|e| format!("{what}: {e}")))
        .collect()
}

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    b.get(at..at + 4)
        .map(|s| i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn be_i16(b: &[u8], at: usize) -> Option<i16> {
    b.get(at..at + 2).map(|s| i16::from_be_bytes([s[0], s[1]]))
}

/// The header bytes a frame must carry for the vector's `header` object.
fn header_bytes(header_version: i64, h: &serde_json::Value) -> Result<Vec<u8>, String> {
    let int = |k: &str| {
        h.get(k)
            .and_then(|v| v.as_i64())
            .ok_or_else(|| format!("header.{k} missing"))
    };
    let mut out = Vec::new();
    match header_version {
        // Response headers: v0 correlation id; v1 adds an empty tagged-field section.
        0 | 1 if h.get("api_key").is_none() => {
            out.extend_from_slice(&(int("correlation_id")? as i32).to_be_bytes());
            if header_version == 1 {
                out.push(0);
            }
        }
        // Request headers v1/v2: key, version, correlation id, nullable int16-length client id (+ tags).
        1 | 2 => {
            out.extend_from_slice(&(int("api_key")? as i16).to_be_bytes());
            out.extend_from_slice(&(int("api_version")? as i16).to_be_bytes());
            out.extend_from_slice(&(int("correlation_id")? as i32).to_be_bytes());
            match h.get("client_id").and_then(|c| c.as_str()) {
                Some(c) => {
                    out.extend_from_slice(&(c.len() as i16).to_be_bytes());
                    out.extend_from_slice(c.as_bytes());
                }
                None => out.extend_from_slice(&(-1i16).to_be_bytes()),
            }
            if header_version == 2 {
                out.push(0);
            }
        }
        v => {
            return Err(format!(
                "header version {v} is not a request or response header"
            ))
        }
    }
    Ok(out)
}

/// Checks one vector; returns its description.
pub fn check_vector(json_path: &Path, wire: &WireChecker) -> Result<(), String> {
    let name = json_path.display().to_string();
    let text = std::fs::read_to_string(json_path).map_err(|e| format!("{name}: {e}"))?;
    let j: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{name}: {e}"))?;
    let int = |k: &str| {
        j.get(k)
            .and_then(|v| v.as_i64())
            .ok_or_else(|| format!("{name}: {k} missing"))
    };
    let version = int("api_version")? as i16;
    let header_version = int("header_version")?;
    let stem = name.trim_end_matches(".json");
    let body = hex(
        &std::fs::read_to_string(format!("{stem}.body.hex"))
            .map_err(|e| format!("{stem}.body.hex: {e}"))?,
        &name,
    )?;
    let frame = hex(
        &std::fs::read_to_string(format!("{stem}.frame.hex"))
            .map_err(|e| format!("{stem}.frame.hex: {e}"))?,
        &name,
    )?;
    let is_request = j.get("header").and_then(|h| h.get("api_key")).is_some();
    let api_key = int("api_key")? as i16;
    let schema: &MessageSchema = match (api_key, is_request) {
        (FETCH_SNAPSHOT, _) => {
            let (req, resp) = wire
                .fetch_snapshot
                .as_ref()
                .ok_or_else(|| format!("{name}: no FetchSnapshot schemas loaded"))?;
            if is_request {
                req
            } else {
                resp
            }
        }
        (_, true) => wire
            .request
            .as_ref()
            .ok_or_else(|| format!("{name}: no request schema loaded"))?,
        (_, false) => &wire.response,
    };
    if schema.api_key != Some(api_key) {
        return Err(format!("{name}: api_key differs from the schema's"));
    }
    // The JSON's meaning, encoded by the interpreter, is the golden body.
    let body_json = j
        .get("body")
        .ok_or_else(|| format!("{name}: body missing"))?;
    let value = json_to_struct(&schema.root, body_json, "body")?;
    let encoded = schema
        .encode(&value, version)
        .map_err(|e| format!("{name}: interpreter encode: {e}"))?;
    if encoded != body {
        return Err(format!(
            "{name}: the interpreter encodes the JSON body to different bytes"
        ));
    }
    let decoded = schema
        .decode(&body, version)
        .map_err(|e| format!("{name}: interpreter decode: {e}"))?;
    // Frame: size, header, body.
    let header = header_bytes(
        header_version,
        j.get("header")
            .ok_or_else(|| format!("{name}: header missing"))?,
    )?;
    let size = be_i32(&frame, 0).ok_or_else(|| format!("{name}: frame too short"))?;
    if size as usize != frame.len() - 4
        || frame[4..4 + header.len().min(frame.len() - 4)] != header[..]
    {
        return Err(format!(
            "{name}: frame size or header differs from the JSON"
        ));
    }
    if frame[4 + header.len()..] != body[..] {
        return Err(format!("{name}: the frame does not end with the body"));
    }
    if is_request && (be_i16(&frame, 4) != Some(api_key) || be_i16(&frame, 6) != Some(version)) {
        return Err(format!("{name}: request header key/version"));
    }
    if api_key == FETCH_SNAPSHOT {
        let kp = crate::wire_fetch_snapshot::kp_value(&body, version, is_request)
            .map_err(|e| format!("{name}: {e}"))?;
        let d = diff(&decoded, &kp);
        if !d.is_empty() {
            return Err(format!(
                "{name}: interpreter and kafka-protocol disagree: {}",
                d.join("; ")
            ));
        }
        if diff(&decoded, &value).is_empty() {
            return Ok(());
        }
        return Err(format!(
            "{name}: the interpreter decodes the body to another value than the JSON"
        ));
    }
    if is_request {
        let typed = kraft::wire::describe_quorum::DescribeQuorumRequest::decode(&body, version)
            .map_err(|e| format!("{name}: kraft codec: {e}"))?;
        let again = typed
            .to_bytes(version)
            .map_err(|e| format!("{name}: kraft codec encode: {e}"))?;
        if again[..] != body[..] {
            return Err(format!(
                "{name}: the kraft codec re-encodes the request differently"
            ));
        }
        return Ok(());
    }
    let typed = kraft::wire::describe_quorum::DescribeQuorumResponse::decode(&body, version)
        .map_err(|e| format!("{name}: kraft codec: {e}"))?;
    let d = diff(&decoded, &typed_to_value(&typed));
    if !d.is_empty() {
        return Err(format!(
            "{name}: interpreter and kraft codec disagree: {}",
            d.join("; ")
        ));
    }
    if version <= 2 {
        use kafka_protocol::protocol::Decodable;
        let kp = kafka_protocol::messages::DescribeQuorumResponse::decode(
            &mut bytes::Bytes::from(body.clone()),
            version,
        )
        .map_err(|e| format!("{name}: kafka-protocol: {e}"))?;
        let d = diff(&decoded, &kp_to_value(&kp));
        if !d.is_empty() {
            return Err(format!(
                "{name}: interpreter and kafka-protocol disagree: {}",
                d.join("; ")
            ));
        }
    }
    Ok(())
}

/// Checks every vector of a directory; returns how many.
pub fn check_dir(dir: &Path, wire: &mut WireChecker) -> Result<usize, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no vectors in {}", dir.display()));
    }
    let mut errors = Vec::new();
    for f in &files {
        if let Err(e) = check_vector(f, wire) {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(files.len())
    } else {
        Err(errors.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_of_schema_names() {
        assert_eq!(snake_case("HighWatermark"), "high_watermark");
        assert_eq!(snake_case("ReplicaDirectoryId"), "replica_directory_id");
        assert_eq!(snake_case("NodeId"), "node_id");
        assert_eq!(snake_case("ErrorCode"), "error_code");
    }
}
