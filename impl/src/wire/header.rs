//! Request header v1/v2 and response header v0/v1. DescribeQuorum uses request header v2 and response
//! header v1 at every version; the older header versions are here for the other RPCs a node answers.

use bytes::BufMut;

use super::codec::{
    check_room, put_tagged_fields, tagged_fields_size, Reader, UnknownTaggedFields, MAX_STRING_LEN,
};
use super::error::WireError;

/// Request header. `client_id` is a legacy INT16-length nullable string even in v2 (a Kafka quirk).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
    /// v2 only; dropped at v1.
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

/// Response header; v1 adds the tagged-field section.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ResponseHeader {
    pub correlation_id: i32,
    /// v1 only; dropped at v0.
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

fn check_header_version(
    message: &'static str,
    version: i16,
    min: i16,
    max: i16,
) -> Result<(), WireError> {
    if (min..=max).contains(&version) {
        Ok(())
    } else {
        Err(WireError::UnsupportedVersion {
            message,
            version,
            min,
            max,
        })
    }
}

impl RequestHeader {
    pub const MIN_VERSION: i16 = 1;
    pub const MAX_VERSION: i16 = 2;

    /// Reads api key and api version without consuming anything: a server needs them to pick the header
    /// and body versions.
    pub fn peek_api(input: &[u8]) -> Result<(i16, i16), WireError> {
        let mut r = Reader::new(input);
        Ok((
            r.i16("RequestHeader.RequestApiKey")?,
            r.i16("RequestHeader.RequestApiVersion")?,
        ))
    }

    pub fn encoded_size(&self, header_version: i16) -> Result<usize, WireError> {
        check_header_version(
            "RequestHeader",
            header_version,
            Self::MIN_VERSION,
            Self::MAX_VERSION,
        )?;
        let client_id = match &self.client_id {
            None => 0,
            Some(id) if id.len() <= MAX_STRING_LEN => id.len(),
            Some(id) => {
                return Err(WireError::TooLong {
                    field: "RequestHeader.ClientId",
                    length: id.len(),
                    max: MAX_STRING_LEN,
                })
            }
        };
        let mut size = 2 + 2 + 4 + 2 + client_id;
        if header_version >= 2 {
            size +=
                tagged_fields_size("RequestHeader._tagged_fields", &self.unknown_tagged_fields)?;
        }
        Ok(size)
    }

    /// Appends the header. On error nothing has been written.
    pub fn encode(&self, header_version: i16, buf: &mut impl BufMut) -> Result<(), WireError> {
        check_room(buf, self.encoded_size(header_version)?)?;
        buf.put_i16(self.api_key);
        buf.put_i16(self.api_version);
        buf.put_i32(self.correlation_id);
        match &self.client_id {
            None => buf.put_i16(-1),
            Some(id) => {
                buf.put_i16(id.len() as i16);
                buf.put_slice(id.as_bytes());
            }
        }
        if header_version >= 2 {
            put_tagged_fields(buf, &self.unknown_tagged_fields);
        }
        Ok(())
    }

    pub fn decode_from(r: &mut Reader<'_>, header_version: i16) -> Result<Self, WireError> {
        check_header_version(
            "RequestHeader",
            header_version,
            Self::MIN_VERSION,
            Self::MAX_VERSION,
        )?;
        let api_key = r.i16("RequestHeader.RequestApiKey")?;
        let api_version = r.i16("RequestHeader.RequestApiVersion")?;
        let correlation_id = r.i32("RequestHeader.CorrelationId")?;
        let at = r.position();
        let client_id = match r.i16("RequestHeader.ClientId")? {
            -1 => None,
            len if len < 0 => {
                return Err(WireError::NegativeLength {
                    field: "RequestHeader.ClientId",
                    offset: at,
                    length: len.into(),
                })
            }
            len => {
                let start = r.position();
                let raw = r.take("RequestHeader.ClientId", len as usize)?;
                match std::str::from_utf8(raw) {
                    Ok(s) => Some(s.to_owned()),
                    Err(e) => {
                        return Err(WireError::InvalidUtf8 {
                            field: "RequestHeader.ClientId",
                            offset: start + e.valid_up_to(),
                        })
                    }
                }
            }
        };
        let unknown_tagged_fields = if header_version >= 2 {
            r.tagged_fields("RequestHeader._tagged_fields")?
        } else {
            UnknownTaggedFields::new()
        };
        Ok(RequestHeader {
            api_key,
            api_version,
            correlation_id,
            client_id,
            unknown_tagged_fields,
        })
    }
}

impl ResponseHeader {
    pub const MIN_VERSION: i16 = 0;
    pub const MAX_VERSION: i16 = 1;

    pub fn new(correlation_id: i32) -> Self {
        ResponseHeader {
            correlation_id,
            unknown_tagged_fields: UnknownTaggedFields::new(),
        }
    }

    pub fn encoded_size(&self, header_version: i16) -> Result<usize, WireError> {
        check_header_version(
            "ResponseHeader",
            header_version,
            Self::MIN_VERSION,
            Self::MAX_VERSION,
        )?;
        if header_version >= 1 {
            Ok(4 + tagged_fields_size(
                "ResponseHeader._tagged_fields",
                &self.unknown_tagged_fields,
            )?)
        } else {
            Ok(4)
        }
    }

    /// Appends the header. On error nothing has been written.
    pub fn encode(&self, header_version: i16, buf: &mut impl BufMut) -> Result<(), WireError> {
        check_room(buf, self.encoded_size(header_version)?)?;
        buf.put_i32(self.correlation_id);
        if header_version >= 1 {
            put_tagged_fields(buf, &self.unknown_tagged_fields);
        }
        Ok(())
    }

    pub fn decode_from(r: &mut Reader<'_>, header_version: i16) -> Result<Self, WireError> {
        check_header_version(
            "ResponseHeader",
            header_version,
            Self::MIN_VERSION,
            Self::MAX_VERSION,
        )?;
        let correlation_id = r.i32("ResponseHeader.CorrelationId")?;
        let unknown_tagged_fields = if header_version >= 1 {
            r.tagged_fields("ResponseHeader._tagged_fields")?
        } else {
            UnknownTaggedFields::new()
        };
        Ok(ResponseHeader {
            correlation_id,
            unknown_tagged_fields,
        })
    }
}
