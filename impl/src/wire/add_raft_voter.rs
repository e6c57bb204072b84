//! AddRaftVoter v1 (KIP-1186): kafka-protocol 0.18 knows v0 only. Version 1 appends `AckWhenCommitted`
//! (bool, default true) after `Listeners`; the response is the same at both versions.
//!
//! The request body has been walked by Kafka's schema (`specs/messages/AddRaftVoterRequest.json`,
//! versions 0–1) before this runs; v1 is read with this crate's bounded [`Reader`] in the schema's field
//! order (kafka-protocol's field decoders are private), v0 by kafka-protocol.

use bytes::Bytes;
use kafka_protocol::messages::add_raft_voter_request::Listener;
use kafka_protocol::messages::AddRaftVoterRequest;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::{Reader, WireError};

/// A decoded AddRaftVoter request and its `AckWhenCommitted` (true below v1, Kafka's default).
pub fn decode_request(
    buf: &mut Bytes,
    version: i16,
) -> Result<(AddRaftVoterRequest, bool), String> {
    match version {
        0 => AddRaftVoterRequest::decode(buf, 0)
            .map(|r| (r, true))
            .map_err(|e| e.to_string()),
        1 => decode_v1(buf).map_err(|e| e.to_string()),
        other => Err(format!("AddRaftVoter version {other} is not served")),
    }
}

fn decode_v1(buf: &Bytes) -> Result<(AddRaftVoterRequest, bool), WireError> {
    let mut r = Reader::new(buf);
    let cluster_id = r.compact_nullable_string("ClusterId")?;
    let timeout_ms = r.i32("TimeoutMs")?;
    let voter_id = r.i32("VoterId")?;
    let voter_directory_id = r.uuid("VoterDirectoryId")?;
    // A listener takes at least 5 bytes: two empty strings, the port, no tagged fields.
    let count = r.array_len("Listeners", 5)?;
    let mut listeners = Vec::with_capacity(count);
    for _ in 0..count {
        let name = r.compact_string("Listeners.Name")?;
        let host = r.compact_string("Listeners.Host")?;
        let port = r.u16("Listeners.Port")?;
        let tags = r.tagged_fields("Listeners tagged fields")?;
        let mut listener = Listener::default()
            .with_name(StrBytes::from_string(name))
            .with_host(StrBytes::from_string(host))
            .with_port(port);
        listener.unknown_tagged_fields = tags.into_iter().map(|(k, v)| (k as i32, v)).collect();
        listeners.push(listener);
    }
    let ack_when_committed = r.u8("AckWhenCommitted")? != 0;
    let tags = r.tagged_fields("tagged fields")?;
    r.finish()?;
    let mut request = AddRaftVoterRequest::default()
        .with_cluster_id(cluster_id.map(StrBytes::from_string))
        .with_timeout_ms(timeout_ms)
        .with_voter_id(voter_id)
        .with_voter_directory_id(voter_directory_id)
        .with_listeners(listeners);
    request.unknown_tagged_fields = tags.into_iter().map(|(k, v)| (k as i32, v)).collect();
    Ok((request, ack_when_committed))
}

/// An AddRaftVoter request to send at v0 or v1 (`kraft add-voter`): v1 is v0's body with
/// `AckWhenCommitted` before the request's top-level tagged fields, which are sent empty. Implements
/// kafka-protocol's `Encodable` so the client frames it like any message.
pub struct OutgoingRequest {
    pub request: AddRaftVoterRequest,
    pub ack_when_committed: bool,
}

impl OutgoingRequest {
    fn request_without_tags(&self) -> AddRaftVoterRequest {
        let mut request = self.request.clone();
        request.unknown_tagged_fields.clear();
        request
    }
}

impl Encodable for OutgoingRequest {
    fn encode<B: kafka_protocol::protocol::buf::ByteBufMut>(
        &self,
        buf: &mut B,
        version: i16,
    ) -> anyhow::Result<()> {
        match version {
            0 => self.request.encode(buf, 0),
            1 => {
                let mut v0 = bytes::BytesMut::new();
                self.request_without_tags().encode(&mut v0, 0)?;
                // The last byte is the empty tagged-field section (count 0).
                let Some((&0, fields)) = v0.split_last() else {
                    anyhow::bail!("AddRaftVoter v0 body does not end with empty tagged fields");
                };
                buf.put_slice(fields);
                buf.put_u8(u8::from(self.ack_when_committed));
                buf.put_u8(0);
                Ok(())
            }
            other => anyhow::bail!("AddRaftVoter version {other} is not sent"),
        }
    }

    fn compute_size(&self, version: i16) -> anyhow::Result<usize> {
        match version {
            0 => self.request.compute_size(0),
            1 => Ok(self.request_without_tags().compute_size(0)? + 1),
            other => anyhow::bail!("AddRaftVoter version {other} is not sent"),
        }
    }
}

/// The version an AddRaftVoter response is encoded at: v1's layout is v0's.
pub const fn response_encoding_version(_version: i16) -> i16 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{BufMut, BytesMut};

    fn sample() -> AddRaftVoterRequest {
        AddRaftVoterRequest::default()
            .with_cluster_id(Some(StrBytes::from_static_str("c")))
            .with_timeout_ms(30_000)
            .with_voter_id(4)
            .with_voter_directory_id(uuid::Uuid::from_u128(9))
            .with_listeners(vec![Listener::default()
                .with_name(StrBytes::from_static_str("CONTROLLER"))
                .with_host(StrBytes::from_static_str("localhost"))
                .with_port(9094)])
    }

    /// v1 bytes: v0's with the bool inserted before the final (empty) tagged-field section.
    fn v1(ack: bool) -> Bytes {
        let mut v0 = BytesMut::new();
        sample().encode(&mut v0, 0).unwrap();
        let mut out = BytesMut::from(&v0[..v0.len() - 1]);
        out.put_u8(u8::from(ack));
        out.put_u8(0);
        out.freeze()
    }

    #[test]
    fn v1_reads_ack_when_committed_and_the_v0_fields() {
        for ack in [true, false] {
            let (req, got) = decode_request(&mut v1(ack), 1).unwrap();
            assert_eq!((req, got), (sample(), ack));
        }
        let mut v0 = BytesMut::new();
        sample().encode(&mut v0, 0).unwrap();
        assert_eq!(
            decode_request(&mut v0.freeze(), 0).unwrap(),
            (sample(), true)
        );
    }

    #[test]
    fn outgoing_requests_encode_as_the_decoder_reads_them() {
        for ack in [true, false] {
            let out = OutgoingRequest {
                request: sample(),
                ack_when_committed: ack,
            };
            let mut buf = BytesMut::new();
            out.encode(&mut buf, 1).unwrap();
            assert_eq!(buf.len(), out.compute_size(1).unwrap());
            assert_eq!(buf.freeze(), v1(ack));
            let mut buf = BytesMut::new();
            out.encode(&mut buf, 0).unwrap();
            assert_eq!(buf.len(), out.compute_size(0).unwrap());
            assert_eq!(
                decode_request(&mut buf.freeze(), 0).unwrap(),
                (sample(), true)
            );
        }
        let out = OutgoingRequest {
            request: sample(),
            ack_when_committed: true,
        };
        assert!(out.encode(&mut BytesMut::new(), 2).is_err());
    }

    #[test]
    fn bad_v1_bodies_are_errors() {
        let full = v1(true);
        for cut in 0..full.len() {
            assert!(
                decode_request(&mut full.slice(..cut), 1).is_err(),
                "cut {cut}"
            );
        }
        let mut trailing = BytesMut::from(&full[..]);
        trailing.put_u8(0);
        assert!(decode_request(&mut trailing.freeze(), 1).is_err());
        assert!(decode_request(&mut full.clone(), 2).is_err());
    }
}
