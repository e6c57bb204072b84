//! Decoding and encoding message bodies by schema (the wire half of the interpreter). Field paths are
//! built only when an error is reported.

use super::*;

/// A field path (`DescribeQuorumResponse.Topics[0].TopicName`), rendered lazily.
#[derive(Clone, Copy)]
struct P<'a> {
    parent: Option<&'a P<'a>>,
    name: &'a str,
    index: Option<usize>,
}

impl<'a> P<'a> {
    fn root(name: &'a str) -> P<'a> {
        P {
            parent: None,
            name,
            index: None,
        }
    }

    fn field(&'a self, name: &'a str) -> P<'a> {
        P {
            parent: Some(self),
            name,
            index: None,
        }
    }

    fn item(&'a self, i: usize) -> P<'a> {
        P {
            parent: Some(self),
            name: "",
            index: Some(i),
        }
    }

    fn render(&self) -> String {
        let mut s = self.parent.map(|p| p.render()).unwrap_or_default();
        match self.index {
            Some(i) => s.push_str(&format!("[{i}]")),
            None => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(self.name);
            }
        }
        s
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &dyn Fn() -> String) -> Result<&'a [u8], SchemaError> {
        if self.buf.len() - self.pos < n {
            return Err(SchemaError::Truncated {
                at: self.pos,
                what: what(),
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn fixed<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N], SchemaError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    fn uvarint(&mut self, what: &dyn Fn() -> String) -> Result<u32, SchemaError> {
        let start = self.pos;
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = self.take(1, what)?[0];
            if i == 4 && b > 0x0f {
                return Err(SchemaError::Invalid {
                    at: start,
                    field: what(),
                    reason: "unsigned varint longer than 32 bits".into(),
                });
            }
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(SchemaError::Invalid {
            at: start,
            field: what(),
            reason: "unterminated varint".into(),
        })
    }
}

impl MessageSchema {
    /// Decodes a whole message body at `version`; every byte must be consumed.
    pub fn decode(&self, bytes: &[u8], version: i16) -> Result<StructValue, SchemaError> {
        self.check_version(version)?;
        let mut r = Reader { buf: bytes, pos: 0 };
        let flexible = self.flexible.contains(version);
        let v = decode_struct(&self.root, &mut r, version, flexible, &P::root(&self.name))?;
        if r.pos != bytes.len() {
            return Err(SchemaError::Trailing {
                len: bytes.len() - r.pos,
            });
        }
        Ok(v)
    }

    /// Encodes a message body at `version` with the generator's rules for absent fields.
    pub fn encode(&self, value: &StructValue, version: i16) -> Result<Vec<u8>, SchemaError> {
        self.check_version(version)?;
        let mut out = Vec::new();
        let flexible = self.flexible.contains(version);
        encode_struct(
            &self.root,
            value,
            &mut out,
            version,
            flexible,
            &P::root(&self.name),
        )?;
        Ok(out)
    }

    /// The value every field takes when nothing is set.
    pub fn default_value(&self) -> Result<StructValue, SchemaError> {
        default_struct(&self.root)
    }

    fn check_version(&self, version: i16) -> Result<(), SchemaError> {
        if !self.valid.contains(version) {
            return Err(SchemaError::UnsupportedVersion {
                version,
                valid: self.valid.to_string(),
            });
        }
        Ok(())
    }
}

fn decode_struct(
    s: &StructSchema,
    r: &mut Reader<'_>,
    version: i16,
    flexible: bool,
    path: &P<'_>,
) -> Result<StructValue, SchemaError> {
    let mut fields = Vec::with_capacity(s.fields.len());
    for f in &s.fields {
        let v = if f.versions.contains(version) && !f.tagged.contains(version) {
            decode_value(f, &f.ty, r, version, flexible, &path.field(&f.name))?
        } else {
            f.default_value.clone()
        };
        fields.push((f.name.clone(), v));
    }
    let mut unknown_tagged = BTreeMap::new();
    if flexible {
        let count = r.uvarint(&|| format!("{} tagged field count", path.render()))?;
        let mut last: Option<u32> = None;
        for _ in 0..count {
            let at = r.pos;
            let tag = r.uvarint(&|| format!("{} tag", path.render()))?;
            if last.is_some_and(|l| tag <= l) {
                return Err(SchemaError::Invalid {
                    at,
                    field: path.render(),
                    reason: format!("tag {tag} is not in ascending order"),
                });
            }
            last = Some(tag);
            let size = r.uvarint(&|| format!("{} tag {tag} size", path.render()))? as usize;
            let data = r.take(size, &|| format!("{} tag {tag} data", path.render()))?;
            let known = s.fields.iter().position(|f| {
                f.tag == Some(tag) && f.versions.contains(version) && f.tagged.contains(version)
            });
            match known {
                Some(i) => {
                    let f = &s.fields[i];
                    let fpath = path.field(&f.name);
                    let mut sub = Reader { buf: data, pos: 0 };
                    let v = decode_value(f, &f.ty, &mut sub, version, flexible, &fpath)?;
                    if sub.pos != data.len() {
                        return Err(SchemaError::Invalid {
                            at: at + sub.pos,
                            field: fpath.render(),
                            reason: format!(
                                "{} bytes left in the tagged field",
                                data.len() - sub.pos
                            ),
                        });
                    }
                    fields[i].1 = v;
                }
                None => {
                    unknown_tagged.insert(tag, data.to_vec());
                }
            }
        }
    }
    Ok(StructValue {
        fields,
        unknown_tagged,
    })
}

fn decode_len(
    r: &mut Reader<'_>,
    flexible: bool,
    wide: bool,
    nullable: bool,
    path: &P<'_>,
) -> Result<Option<usize>, SchemaError> {
    let at = r.pos;
    let what = || path.render();
    let len: i64 = if flexible {
        i64::from(r.uvarint(&what)?) - 1
    } else if wide {
        i64::from(i32::from_be_bytes(r.fixed(&what)?))
    } else {
        i64::from(i16::from_be_bytes(r.fixed(&what)?))
    };
    if len < 0 {
        if len == -1 && nullable {
            return Ok(None);
        }
        return Err(SchemaError::Invalid {
            at,
            field: path.render(),
            reason: if len == -1 {
                "null in a non-nullable version".into()
            } else {
                format!("negative length {len}")
            },
        });
    }
    // No length can exceed what is left (arrays hold at least one byte per element).
    let len = len as usize;
    if len > r.buf.len() - r.pos {
        return Err(SchemaError::Truncated {
            at,
            what: format!("{} ({len} items/bytes)", path.render()),
        });
    }
    Ok(Some(len))
}

fn decode_value(
    f: &FieldSchema,
    ty: &FieldType,
    r: &mut Reader<'_>,
    version: i16,
    flexible: bool,
    path: &P<'_>,
) -> Result<Value, SchemaError> {
    let nullable = f.nullable.contains(version);
    let what = || path.render();
    Ok(match ty {
        FieldType::Bool => {
            let at = r.pos;
            match r.fixed::<1>(&what)?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => {
                    return Err(SchemaError::Invalid {
                        at,
                        field: path.render(),
                        reason: format!("bool byte {b}"),
                    })
                }
            }
        }
        FieldType::Int8 => Value::Int(i8::from_be_bytes(r.fixed(&what)?).into()),
        FieldType::Int16 => Value::Int(i16::from_be_bytes(r.fixed(&what)?).into()),
        FieldType::Int32 => Value::Int(i32::from_be_bytes(r.fixed(&what)?).into()),
        FieldType::Int64 => Value::Int(i64::from_be_bytes(r.fixed(&what)?)),
        FieldType::Uint16 => Value::Int(u16::from_be_bytes(r.fixed(&what)?).into()),
        FieldType::Uint32 => Value::Int(u32::from_be_bytes(r.fixed(&what)?).into()),
        FieldType::Float64 => Value::Float(u64::from_be_bytes(r.fixed(&what)?)),
        FieldType::Uuid => Value::Uuid(Uuid::from_bytes(r.fixed(&what)?)),
        FieldType::String => match decode_len(r, flexible, false, nullable, path)? {
            None => Value::String(None),
            Some(n) => {
                let at = r.pos;
                let raw = r.take(n, &what)?;
                let s = std::str::from_utf8(raw).map_err(|e| SchemaError::Invalid {
                    at,
                    field: path.render(),
                    reason: format!("invalid UTF-8: {e}"),
                })?;
                Value::String(Some(s.to_string()))
            }
        },
        FieldType::Bytes => match decode_len(r, flexible, true, nullable, path)? {
            None => Value::Bytes(None),
            Some(n) => Value::Bytes(Some(r.take(n, &what)?.to_vec())),
        },
        FieldType::Array(elem) => match decode_len(r, flexible, true, nullable, path)? {
            None => Value::Array(None),
            Some(n) => {
                let mut items = Vec::with_capacity(n);
                for i in 0..n {
                    items.push(decode_value(f, elem, r, version, flexible, &path.item(i))?);
                }
                Value::Array(Some(items))
            }
        },
        FieldType::Struct(s) => Value::Struct(decode_struct(s, r, version, flexible, path)?),
    })
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn encode_struct(
    s: &StructSchema,
    v: &StructValue,
    out: &mut Vec<u8>,
    version: i16,
    flexible: bool,
    path: &P<'_>,
) -> Result<(), SchemaError> {
    let mut tagged: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    for (k, f) in s.fields.iter().enumerate() {
        let fpath = path.field(&f.name);
        // Values usually come in schema order; fall back to a search by name.
        let value = match v.fields.get(k) {
            Some((n, val)) if *n == f.name => val,
            _ => v.get(&f.name).unwrap_or(&f.default_value),
        };
        if !f.versions.contains(version) {
            if *value != f.default_value && !f.ignorable {
                return Err(SchemaError::NotIgnorable {
                    field: fpath.render(),
                    version,
                });
            }
            continue;
        }
        if f.tagged.contains(version) {
            if !flexible {
                return Err(malformed(
                    &fpath.render(),
                    "tagged field in a non-flexible version",
                ));
            }
            if *value != f.default_value {
                let mut data = Vec::new();
                encode_value(f, &f.ty, value, &mut data, version, flexible, &fpath)?;
                let tag = f
                    .tag
                    .ok_or_else(|| malformed(&fpath.render(), "tagged field without a tag"))?;
                tagged.insert(tag, data);
            }
            continue;
        }
        encode_value(f, &f.ty, value, out, version, flexible, &fpath)?;
    }
    if flexible {
        for (tag, data) in &v.unknown_tagged {
            if tagged.contains_key(tag) {
                return Err(SchemaError::BadValue {
                    field: path.render(),
                    ty: "tagged fields".into(),
                    reason: format!("unknown tag {tag} collides with a known tagged field"),
                });
            }
            tagged.insert(*tag, data.clone());
        }
        put_uvarint(out, tagged.len() as u32);
        for (tag, data) in tagged {
            put_uvarint(out, tag);
            put_uvarint(out, data.len() as u32);
            out.extend_from_slice(&data);
        }
    }
    Ok(())
}

fn encode_len(
    out: &mut Vec<u8>,
    len: Option<usize>,
    flexible: bool,
    wide: bool,
    nullable: bool,
    path: &P<'_>,
    ty: &FieldType,
) -> Result<(), SchemaError> {
    let bad = |reason: &str| SchemaError::BadValue {
        field: path.render(),
        ty: ty.name(),
        reason: reason.into(),
    };
    match len {
        None if !nullable => Err(bad("null in a non-nullable version")),
        None if flexible => {
            put_uvarint(out, 0);
            Ok(())
        }
        None if wide => {
            out.extend_from_slice(&(-1i32).to_be_bytes());
            Ok(())
        }
        None => {
            out.extend_from_slice(&(-1i16).to_be_bytes());
            Ok(())
        }
        Some(n) if flexible => {
            let n = u32::try_from(n)
                .ok()
                .filter(|n| *n < u32::MAX)
                .ok_or_else(|| bad("too long"))?;
            put_uvarint(out, n + 1);
            Ok(())
        }
        Some(n) if wide => {
            let n = i32::try_from(n).map_err(|_| bad("too long"))?;
            out.extend_from_slice(&n.to_be_bytes());
            Ok(())
        }
        Some(n) => {
            let n = i16::try_from(n).map_err(|_| bad("too long"))?;
            out.extend_from_slice(&n.to_be_bytes());
            Ok(())
        }
    }
}

fn encode_value(
    f: &FieldSchema,
    ty: &FieldType,
    v: &Value,
    out: &mut Vec<u8>,
    version: i16,
    flexible: bool,
    path: &P<'_>,
) -> Result<(), SchemaError> {
    let nullable = f.nullable.contains(version);
    let mismatch = || SchemaError::BadValue {
        field: path.render(),
        ty: ty.name(),
        reason: format!("got {v:?}"),
    };
    let int = |lo: i64, hi: i64| -> Result<i64, SchemaError> {
        match v {
            Value::Int(i) if (lo..=hi).contains(i) => Ok(*i),
            _ => Err(mismatch()),
        }
    };
    match ty {
        FieldType::Bool => match v {
            Value::Bool(b) => out.push(u8::from(*b)),
            _ => return Err(mismatch()),
        },
        FieldType::Int8 => {
            out.extend_from_slice(&(int(i8::MIN.into(), i8::MAX.into())? as i8).to_be_bytes())
        }
        FieldType::Int16 => {
            out.extend_from_slice(&(int(i16::MIN.into(), i16::MAX.into())? as i16).to_be_bytes())
        }
        FieldType::Int32 => {
            out.extend_from_slice(&(int(i32::MIN.into(), i32::MAX.into())? as i32).to_be_bytes())
        }
        FieldType::Int64 => out.extend_from_slice(&int(i64::MIN, i64::MAX)?.to_be_bytes()),
        FieldType::Uint16 => {
            out.extend_from_slice(&(int(0, u16::MAX.into())? as u16).to_be_bytes())
        }
        FieldType::Uint32 => {
            out.extend_from_slice(&(int(0, u32::MAX.into())? as u32).to_be_bytes())
        }
        FieldType::Float64 => match v {
            Value::Float(bits) => out.extend_from_slice(&bits.to_be_bytes()),
            _ => return Err(mismatch()),
        },
        FieldType::Uuid => match v {
            Value::Uuid(u) => out.extend_from_slice(u.as_bytes()),
            _ => return Err(mismatch()),
        },
        FieldType::String => match v {
            Value::String(s) => {
                encode_len(
                    out,
                    s.as_ref().map(|s| s.len()),
                    flexible,
                    false,
                    nullable,
                    path,
                    ty,
                )?;
                if let Some(s) = s {
                    out.extend_from_slice(s.as_bytes());
                }
            }
            _ => return Err(mismatch()),
        },
        FieldType::Bytes => match v {
            Value::Bytes(b) => {
                encode_len(
                    out,
                    b.as_ref().map(|b| b.len()),
                    flexible,
                    true,
                    nullable,
                    path,
                    ty,
                )?;
                if let Some(b) = b {
                    out.extend_from_slice(b);
                }
            }
            _ => return Err(mismatch()),
        },
        FieldType::Array(elem) => match v {
            Value::Array(items) => {
                encode_len(
                    out,
                    items.as_ref().map(|i| i.len()),
                    flexible,
                    true,
                    nullable,
                    path,
                    ty,
                )?;
                for (i, item) in items.iter().flatten().enumerate() {
                    encode_value(f, elem, item, out, version, flexible, &path.item(i))?;
                }
            }
            _ => return Err(mismatch()),
        },
        FieldType::Struct(s) => match v {
            Value::Struct(sv) => encode_struct(s, sv, out, version, flexible, path)?,
            _ => return Err(mismatch()),
        },
    }
    Ok(())
}
