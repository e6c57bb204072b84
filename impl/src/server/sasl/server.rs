//! The server's half of SASL on a listener, as Kafka's `SaslServerAuthenticator` runs it, without I/O:
//! each request frame read before authentication goes in, the answer and what to do next come out.
//!
//! 1. An optional ApiVersions (the first request only; an unserved version is answered
//!    UNSUPPORTED_VERSION and may be retried), then SaslHandshake v1 naming an enabled mechanism. Any
//!    other request closes the connection unanswered (Kafka's InvalidRequestException).
//! 2. A mechanism the listener does not enable: UNSUPPORTED_SASL_MECHANISM with the enabled list, then
//!    close.
//! 3. SaslAuthenticate (v0–2) carrying the PLAIN token: success answers an empty token; wrong
//!    credentials answer SASL_AUTHENTICATION_FAILED with Kafka's message, then close. Another request
//!    here is answered ILLEGAL_SASL_STATE when it has an error field to carry it, then close.
//!
//! SaslHandshake v0 (raw tokens without Kafka framing, clients before 1.0) is not served.

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use subtle::ConstantTimeEq;

use super::listener::ListenerSasl;
use crate::server::codec::{self, CodecError, Reply};
use crate::wire::error_codes::{
    ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM,
};

/// Largest request frame read before authentication (Kafka's `sasl.server.max.receive.size` default).
pub const MAX_RECEIVE: usize = 512 * 1024;
/// How long a failed authentication waits before its answer and the close (Kafka's
/// `connection.failed.authentication.delay.ms` default), so a password guesser is slowed down.
pub const FAILED_AUTHENTICATION_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// The SaslHandshake version served.
const HANDSHAKE_VERSION: i16 = 1;
/// The SaslAuthenticate versions served.
const AUTHENTICATE_VERSIONS: (i16, i16) = (0, 2);

/// Why a connection is closed during authentication (logged; the client sees the answer, if any).
#[derive(Debug, thiserror::Error)]
pub enum SaslServerError {
    #[error("unexpected request (api key {api_key}) during SASL {phase}")]
    Unexpected { api_key: i16, phase: &'static str },
    #[error("{api:?} v{version} is not served during SASL authentication")]
    Version { api: ApiKey, version: i16 },
    #[error("malformed request during SASL authentication: {0}")]
    Malformed(#[from] CodecError),
    #[error("SASL mechanism {0:?} is not enabled on this listener")]
    Mechanism(String),
    #[error("authentication failed: {0}")]
    Authentication(String),
}

/// What the connection does with one request frame.
#[derive(Debug)]
pub enum Step {
    /// Answer with the node's ApiVersions (plus [`sasl_apis`]); `served`: false answers
    /// UNSUPPORTED_VERSION, as for any unserved version.
    ApiVersions { reply: Reply, served: bool },
    /// Send the frame, read the next request.
    Continue(Bytes),
    /// Send the frame; the client is authenticated as `user`.
    Authenticated { frame: Bytes, user: String },
    /// Send the frame, if any, after [`FAILED_AUTHENTICATION_DELAY`] when the credentials were wrong, then
    /// close.
    Close {
        frame: Option<Bytes>,
        error: SaslServerError,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing read yet: ApiVersions or SaslHandshake.
    Initial,
    /// ApiVersions answered: SaslHandshake.
    Handshake,
    /// PLAIN chosen: SaslAuthenticate.
    Authenticate,
}

/// One connection's authentication.
pub struct Authenticator<'a> {
    sasl: &'a ListenerSasl,
    phase: Phase,
}

fn close(frame: Option<Result<Bytes, CodecError>>, error: SaslServerError) -> Step {
    match frame.transpose() {
        Ok(frame) => Step::Close { frame, error },
        Err(e) => Step::Close {
            frame: None,
            error: e.into(),
        },
    }
}

impl<'a> Authenticator<'a> {
    pub fn new(sasl: &'a ListenerSasl) -> Self {
        Authenticator {
            sasl,
            phase: Phase::Initial,
        }
    }

    /// The next step for one request frame payload (without its size prefix).
    pub fn on_request(&mut self, payload: Bytes) -> Step {
        if payload.len() < 8 {
            return close(None, CodecError::ShortHeader(payload.len()).into());
        }
        let api_key = i16::from_be_bytes([payload[0], payload[1]]);
        let version = i16::from_be_bytes([payload[2], payload[3]]);
        let correlation_id = i32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
        let reply = Reply {
            correlation_id,
            api_key,
            api_version: version,
        };
        match self.phase {
            Phase::Initial | Phase::Handshake => self.handshake(reply, payload),
            Phase::Authenticate => self.authenticate(reply, payload),
        }
    }

    fn handshake(&mut self, reply: Reply, payload: Bytes) -> Step {
        let unexpected = |phase| SaslServerError::Unexpected {
            api_key: reply.api_key,
            phase,
        };
        match ApiKey::try_from(reply.api_key) {
            Ok(ApiKey::ApiVersions) if self.phase == Phase::Initial => {
                if !crate::wire::apis::supports(reply.api_key, reply.api_version) {
                    return Step::ApiVersions {
                        reply,
                        served: false,
                    };
                }
                match codec::decode_request_as::<ApiVersionsRequest>(payload, "ApiVersionsRequest")
                {
                    Ok(_) => {
                        self.phase = Phase::Handshake;
                        Step::ApiVersions {
                            reply,
                            served: true,
                        }
                    }
                    Err(e) => close(None, e.into()),
                }
            }
            Ok(ApiKey::SaslHandshake) => {
                if reply.api_version != HANDSHAKE_VERSION {
                    return close(
                        None,
                        SaslServerError::Version {
                            api: ApiKey::SaslHandshake,
                            version: reply.api_version,
                        },
                    );
                }
                let request = match codec::decode_request_as::<SaslHandshakeRequest>(
                    payload,
                    "SaslHandshakeRequest",
                ) {
                    Ok(r) => r,
                    Err(e) => return close(None, e.into()),
                };
                let mechanism = request.mechanism.to_string();
                let enabled = self.sasl.enabled.contains(&mechanism);
                let answer = SaslHandshakeResponse::default()
                    .with_error_code(if enabled {
                        0
                    } else {
                        UNSUPPORTED_SASL_MECHANISM
                    })
                    .with_mechanisms(
                        self.sasl
                            .enabled
                            .iter()
                            .map(|m| StrBytes::from_string(m.clone()))
                            .collect(),
                    );
                let frame = codec::message_response(&reply, "SaslHandshakeResponse", &answer);
                if !enabled {
                    return close(Some(frame), SaslServerError::Mechanism(mechanism));
                }
                match frame {
                    Ok(frame) => {
                        self.phase = Phase::Authenticate;
                        Step::Continue(frame)
                    }
                    Err(e) => close(None, e.into()),
                }
            }
            _ => close(None, unexpected("handshake")),
        }
    }

    fn authenticate(&mut self, reply: Reply, payload: Bytes) -> Step {
        if reply.api_key != ApiKey::SaslAuthenticate as i16 {
            let error = SaslServerError::Unexpected {
                api_key: reply.api_key,
                phase: "authentication",
            };
            return close(illegal_state(&reply), error);
        }
        let (min, max) = AUTHENTICATE_VERSIONS;
        if !(min..=max).contains(&reply.api_version) {
            let error = SaslServerError::Version {
                api: ApiKey::SaslAuthenticate,
                version: reply.api_version,
            };
            return close(None, error);
        }
        let request = match codec::decode_request_as::<SaslAuthenticateRequest>(
            payload,
            "SaslAuthenticateRequest",
        ) {
            Ok(r) => r,
            Err(e) => return close(None, e.into()),
        };
        let answer = SaslAuthenticateResponse::default();
        match plain(self.sasl, &request.auth_bytes) {
            Ok(user) => {
                match codec::message_response(&reply, "SaslAuthenticateResponse", &answer) {
                    Ok(frame) => Step::Authenticated { frame, user },
                    Err(e) => close(None, e.into()),
                }
            }
            Err(message) => {
                let answer = answer
                    .with_error_code(SASL_AUTHENTICATION_FAILED)
                    .with_error_message(Some(StrBytes::from_string(message.clone())));
                let frame = codec::message_response(&reply, "SaslAuthenticateResponse", &answer);
                close(Some(frame), SaslServerError::Authentication(message))
            }
        }
    }
}

/// ILLEGAL_SASL_STATE in the answer to a request that can carry it (SaslHandshake, ApiVersions); other
/// requests are closed unanswered. Also Kafka's answer to SaslHandshake and SaslAuthenticate after
/// authentication (`ControllerApis`).
pub fn illegal_state(reply: &Reply) -> Option<Result<Bytes, CodecError>> {
    match ApiKey::try_from(reply.api_key).ok()? {
        ApiKey::SaslHandshake => Some(codec::message_response(
            reply,
            "SaslHandshakeResponse",
            &SaslHandshakeResponse::default().with_error_code(ILLEGAL_SASL_STATE),
        )),
        ApiKey::SaslAuthenticate if reply.api_version <= AUTHENTICATE_VERSIONS.1 => {
            Some(codec::message_response(
                reply,
                "SaslAuthenticateResponse",
                &SaslAuthenticateResponse::default().with_error_code(ILLEGAL_SASL_STATE),
            ))
        }
        ApiKey::ApiVersions if crate::wire::apis::supports(reply.api_key, reply.api_version) => {
            Some(codec::message_response(
                reply,
                "ApiVersionsResponse",
                &ApiVersionsResponse::default().with_error_code(ILLEGAL_SASL_STATE),
            ))
        }
        _ => None,
    }
}

/// The node's ApiVersions answer on a SASL listener: the SASL APIs added, in api-key order.
pub fn sasl_apis(mut answer: ApiVersionsResponse) -> ApiVersionsResponse {
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    for (key, min, max) in [
        (ApiKey::SaslHandshake, HANDSHAKE_VERSION, HANDSHAKE_VERSION),
        (
            ApiKey::SaslAuthenticate,
            AUTHENTICATE_VERSIONS.0,
            AUTHENTICATE_VERSIONS.1,
        ),
    ] {
        let key = key as i16;
        if answer.api_keys.iter().any(|k| k.api_key == key) {
            continue;
        }
        let at = answer.api_keys.partition_point(|k| k.api_key < key);
        answer.api_keys.insert(
            at,
            ApiVersion::default()
                .with_api_key(key)
                .with_min_version(min)
                .with_max_version(max),
        );
    }
    answer
}

/// PLAIN (RFC 4616) as Kafka's `PlainSaslServer` evaluates it: `[authzid] NUL authcid NUL passwd`, split
/// into at most three parts (bytes after a third NUL are ignored, as Kafka's split ignores them), the
/// password compared in constant time. `Err` is the message the client gets.
fn plain(sasl: &ListenerSasl, token: &[u8]) -> Result<String, String> {
    // Kafka decodes the token as UTF-8, replacing bad bytes.
    let text = String::from_utf8_lossy(token);
    let mut parts = text.splitn(4, '\0');
    let authzid = parts.next().unwrap_or_default();
    let username = parts.next().unwrap_or_default();
    let password = parts.next().unwrap_or_default();
    if username.is_empty() || password.is_empty() {
        // Kafka's SaslException: the client gets the generic message, not the reason.
        return Err(
            "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"
                .into(),
        );
    }
    let matches = sasl
        .password_of(username)
        .is_some_and(|expected| bool::from(expected.as_bytes().ct_eq(password.as_bytes())));
    if !matches {
        return Err("Authentication failed: Invalid username or password".into());
    }
    if !authzid.is_empty() && authzid != username {
        return Err("Authentication failed: Client requested an authorization id that is different from username".into());
    }
    Ok(username.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::codec::request_frame;
    use crate::server::sasl::{Mechanism, SaslConfig};
    use kafka_protocol::protocol::Decodable;

    fn listener() -> ListenerSasl {
        ListenerSasl::plain(
            &[("alice", "a-secret")],
            SaslConfig {
                mechanism: Mechanism::Plain,
                username: "alice".into(),
                password: "a-secret".into(),
            },
        )
    }

    /// A request frame's payload (without the size prefix).
    fn req<M: kafka_protocol::protocol::Encodable>(key: ApiKey, v: i16, m: &M) -> Bytes {
        request_frame(key as i16, v, 7, "test", m)
            .unwrap()
            .slice(4..)
    }

    fn handshake(mechanism: &str) -> Bytes {
        let r =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_string(mechanism.into()));
        req(ApiKey::SaslHandshake, 1, &r)
    }

    fn token(v: i16, bytes: &[u8]) -> Bytes {
        let r = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(bytes));
        req(ApiKey::SaslAuthenticate, v, &r)
    }

    /// The body of a response frame.
    fn body(frame: &Bytes, key: ApiKey, v: i16) -> Bytes {
        let (_, body) = codec::response_body(frame.slice(4..), key as i16, v).unwrap();
        body
    }

    fn authenticate_answer(frame: &Bytes, v: i16) -> SaslAuthenticateResponse {
        SaslAuthenticateResponse::decode(&mut body(frame, ApiKey::SaslAuthenticate, v), v).unwrap()
    }

    #[test]
    fn versions_handshake_and_plain_authenticate() {
        for v in 0..=2 {
            let sasl = listener();
            let mut a = Authenticator::new(&sasl);
            let versions = req(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
            assert!(matches!(
                a.on_request(versions.clone()),
                Step::ApiVersions { served: true, .. }
            ));
            let Step::Continue(frame) = a.on_request(handshake("PLAIN")) else {
                panic!("handshake refused");
            };
            let hs = SaslHandshakeResponse::decode(&mut body(&frame, ApiKey::SaslHandshake, 1), 1)
                .unwrap();
            assert_eq!((hs.error_code, hs.mechanisms.len()), (0, 1));
            match a.on_request(token(v, b"\0alice\0a-secret")) {
                Step::Authenticated { frame, user } => {
                    assert_eq!(user, "alice");
                    let r = authenticate_answer(&frame, v);
                    assert_eq!((r.error_code, r.auth_bytes.len()), (0, 0));
                }
                other => panic!("v{v}: {other:?}"),
            }
        }
        // ApiVersions is optional; an authzid equal to the user is accepted.
        let sasl = listener();
        let mut a = Authenticator::new(&sasl);
        assert!(matches!(
            a.on_request(handshake("PLAIN")),
            Step::Continue(_)
        ));
        assert!(matches!(
            a.on_request(token(2, b"alice\0alice\0a-secret")),
            Step::Authenticated { .. }
        ));
    }

    #[test]
    fn wrong_credentials_get_kafkas_answers_then_close() {
        for (token_bytes, message) in [
            (&b"\0alice\0wrong"[..], "Authentication failed: Invalid username or password"),
            (b"\0mallory\0a-secret", "Authentication failed: Invalid username or password"),
            (b"\0alice\0a-secre", "Authentication failed: Invalid username or password"),
            (b"bob\0alice\0a-secret", "Authentication failed: Client requested an authorization id that is different from username"),
            (b"\0\0a-secret", "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"),
            (b"alice", "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"),
            (b"", "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"),
        ] {
            let sasl = listener();
            let mut a = Authenticator::new(&sasl);
            assert!(matches!(a.on_request(handshake("PLAIN")), Step::Continue(_)));
            match a.on_request(token(2, token_bytes)) {
                Step::Close {
                    frame: Some(frame),
                    error: SaslServerError::Authentication(_),
                } => {
                    let r = authenticate_answer(&frame, 2);
                    assert_eq!(r.error_code, SASL_AUTHENTICATION_FAILED);
                    assert_eq!(r.error_message.as_deref(), Some(message));
                }
                other => panic!("{token_bytes:?}: {other:?}"),
            }
        }
        // Bytes after a third NUL are ignored, as Kafka's split ignores them.
        let sasl = listener();
        let mut a = Authenticator::new(&sasl);
        a.on_request(handshake("PLAIN"));
        assert!(matches!(
            a.on_request(token(1, b"\0alice\0a-secret\0extra")),
            Step::Authenticated { .. }
        ));
    }

    #[test]
    fn out_of_order_requests_are_refused() {
        let sasl = listener();
        // A Raft request before authentication: closed unanswered.
        let mut a = Authenticator::new(&sasl);
        let vote = req(
            ApiKey::Vote,
            2,
            &kafka_protocol::messages::VoteRequest::default(),
        );
        assert!(matches!(
            a.on_request(vote),
            Step::Close {
                frame: None,
                error: SaslServerError::Unexpected { api_key: 52, .. }
            }
        ));
        // A second ApiVersions: closed unanswered (Kafka's IllegalStateException).
        let mut a = Authenticator::new(&sasl);
        let versions = req(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
        a.on_request(versions.clone());
        assert!(matches!(
            a.on_request(versions.clone()),
            Step::Close { frame: None, .. }
        ));
        // An unserved ApiVersions version may be retried.
        let mut a = Authenticator::new(&sasl);
        let v9 = req(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
        let mut v9 = v9.to_vec();
        v9[3] = 9;
        assert!(matches!(
            a.on_request(Bytes::from(v9)),
            Step::ApiVersions { served: false, .. }
        ));
        assert!(matches!(
            a.on_request(versions),
            Step::ApiVersions { served: true, .. }
        ));
        // A mechanism not enabled: the enabled list, then close.
        let mut a = Authenticator::new(&sasl);
        match a.on_request(handshake("SCRAM-SHA-256")) {
            Step::Close {
                frame: Some(frame),
                error: SaslServerError::Mechanism(m),
            } => {
                assert_eq!(m, "SCRAM-SHA-256");
                let hs =
                    SaslHandshakeResponse::decode(&mut body(&frame, ApiKey::SaslHandshake, 1), 1)
                        .unwrap();
                assert_eq!(hs.error_code, UNSUPPORTED_SASL_MECHANISM);
                assert_eq!(hs.mechanisms, [StrBytes::from_static_str("PLAIN")]);
            }
            other => panic!("{other:?}"),
        }
        // SaslHandshake v0 (raw tokens) is not served.
        let mut a = Authenticator::new(&sasl);
        let mut v0 = handshake("PLAIN").to_vec();
        v0[3] = 0;
        assert!(matches!(
            a.on_request(Bytes::from(v0)),
            Step::Close {
                frame: None,
                error: SaslServerError::Version { version: 0, .. }
            }
        ));
        // Another SaslHandshake mid-exchange: ILLEGAL_SASL_STATE, then close.
        let mut a = Authenticator::new(&sasl);
        a.on_request(handshake("PLAIN"));
        match a.on_request(handshake("PLAIN")) {
            Step::Close {
                frame: Some(frame), ..
            } => {
                let hs =
                    SaslHandshakeResponse::decode(&mut body(&frame, ApiKey::SaslHandshake, 1), 1)
                        .unwrap();
                assert_eq!(hs.error_code, ILLEGAL_SASL_STATE);
            }
            other => panic!("{other:?}"),
        }
        // SaslAuthenticate v3 does not exist.
        let mut a = Authenticator::new(&sasl);
        a.on_request(handshake("PLAIN"));
        let mut v3 = token(2, b"\0alice\0a-secret").to_vec();
        v3[3] = 3;
        assert!(matches!(
            a.on_request(Bytes::from(v3)),
            Step::Close { frame: None, .. }
        ));
    }

    #[test]
    fn bad_bytes_get_typed_errors() {
        let sasl = listener();
        let mut a = Authenticator::new(&sasl);
        assert!(matches!(
            a.on_request(Bytes::from_static(&[0, 17, 0])),
            Step::Close {
                error: SaslServerError::Malformed(CodecError::ShortHeader(3)),
                ..
            }
        ));
        // A mechanism string whose length says more than the frame holds.
        let mut hs = handshake("PLAIN").to_vec();
        let at = hs.len() - 7; // int16 length before "PLAIN"
        hs[at] = 0x7f;
        let mut a = Authenticator::new(&sasl);
        assert!(matches!(
            a.on_request(Bytes::from(hs)),
            Step::Close {
                frame: None,
                error: SaslServerError::Malformed(_)
            }
        ));
        // A token whose length says 2 GB.
        let mut a = Authenticator::new(&sasl);
        a.on_request(handshake("PLAIN"));
        let mut t = token(1, b"\0alice\0a-secret").to_vec();
        let at = t.len() - 15 - 4;
        t[at..at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            a.on_request(Bytes::from(t)),
            Step::Close {
                frame: None,
                error: SaslServerError::Malformed(_)
            }
        ));
    }

    #[test]
    fn the_sasl_apis_are_listed_in_key_order() {
        let answer =
            ApiVersionsResponse::default().with_api_keys(crate::wire::apis::api_versions());
        let listed = sasl_apis(answer);
        let keys: Vec<i16> = listed.api_keys.iter().map(|k| k.api_key).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        let find = |k: ApiKey| {
            listed
                .api_keys
                .iter()
                .find(|a| a.api_key == k as i16)
                .map(|a| (a.min_version, a.max_version))
        };
        assert_eq!(find(ApiKey::SaslHandshake), Some((1, 1)));
        assert_eq!(find(ApiKey::SaslAuthenticate), Some((0, 2)));
        assert_eq!(sasl_apis(listed.clone()), listed);
    }
}
