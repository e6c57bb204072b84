//! SASL on the client side, as Kafka's tools take it from `--command-config`: `security.protocol`
//! `SASL_PLAINTEXT` or `SASL_SSL`, `sasl.mechanism` `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`, and
//! `sasl.jaas.config` naming Kafka's `PlainLoginModule` or `ScramLoginModule` with `username` and
//! `password`. The exchange is Kafka's `SaslClientAuthenticator`'s: ApiVersions, SaslHandshake v1, then
//! each token in a SaslAuthenticate request (v0–2, the highest both sides serve).
//!
//! GSSAPI (Kerberos) and OAUTHBEARER are refused with a typed error: they need a KDC or a token
//! endpoint and their own login machinery (see `impl/KAFKA-DIFFERENCES.md`).

pub mod jaas;
pub mod link;
pub mod listener;
pub mod scram;
pub mod server;

use crate::server::tls::Properties;

pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    fn login_module(self) -> &'static str {
        match self {
            Mechanism::Plain => PLAIN_LOGIN_MODULE,
            _ => SCRAM_LOGIN_MODULE,
        }
    }

    /// Kafka's mechanism names are case-sensitive (`SaslConfigs.SASL_MECHANISM`).
    pub fn parse(name: &str) -> Result<Mechanism, SaslConfigError> {
        match name {
            "PLAIN" => Ok(Mechanism::Plain),
            "SCRAM-SHA-256" => Ok(Mechanism::ScramSha256),
            "SCRAM-SHA-512" => Ok(Mechanism::ScramSha512),
            other => Err(SaslConfigError::Mechanism(other.to_string())),
        }
    }
}

/// The credentials a client authenticates with.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslConfig {
    pub mechanism: Mechanism,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for SaslConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslConfig")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SaslConfigError {
    #[error("sasl.mechanism={0}: not supported by kraft (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are; GSSAPI, Kafka's default, and OAUTHBEARER are not)")]
    Mechanism(String),
    #[error("sasl.jaas.config: {0}")]
    Jaas(#[from] jaas::JaasError),
    #[error("sasl.jaas.config is required with security.protocol={0}")]
    NoJaas(String),
    #[error(
        "sasl.jaas.config: JAAS config property contains {0} login modules, should be 1 module"
    )]
    Modules(usize),
    #[error("sasl.jaas.config: login module {found} does not serve sasl.mechanism={mechanism} (expected {expected})")]
    Module {
        found: String,
        mechanism: &'static str,
        expected: &'static str,
    },
    #[error("sasl.jaas.config: option '{0}' is missing or empty")]
    Option(&'static str),
    #[error("sasl.jaas.config: option tokenauth=true (delegation tokens) is not supported")]
    TokenAuth,
}

/// The SASL setup of client properties: `None` unless `security.protocol` is `SASL_PLAINTEXT` or
/// `SASL_SSL` (the protocol itself is checked by `server::tls`).
pub fn client_config(props: &Properties) -> Result<Option<SaslConfig>, SaslConfigError> {
    let protocol = props
        .get("security.protocol")
        .map(|p| p.trim().to_ascii_uppercase())
        .unwrap_or_default();
    if !protocol.starts_with("SASL_") {
        return Ok(None);
    }
    let mechanism = Mechanism::parse(props.get("sasl.mechanism").map_or("GSSAPI", |m| m.trim()))?;
    let text = props
        .get("sasl.jaas.config")
        .ok_or(SaslConfigError::NoJaas(protocol))?;
    let modules = jaas::parse(text)?;
    let [module] = modules.as_slice() else {
        return Err(SaslConfigError::Modules(modules.len()));
    };
    if module.class != mechanism.login_module() {
        return Err(SaslConfigError::Module {
            found: module.class.clone(),
            mechanism: mechanism.name(),
            expected: mechanism.login_module(),
        });
    }
    if module
        .options
        .get("tokenauth")
        .is_some_and(|t| t.eq_ignore_ascii_case("true"))
    {
        return Err(SaslConfigError::TokenAuth);
    }
    let option = |key: &'static str| {
        module
            .options
            .get(key)
            .filter(|v| !v.is_empty())
            .cloned()
            .ok_or(SaslConfigError::Option(key))
    };
    Ok(Some(SaslConfig {
        mechanism,
        username: option("username")?,
        password: option("password")?,
    }))
}

/// Why an authentication failed (each has its own CLI exit code).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SaslFailure {
    /// UNSUPPORTED_SASL_MECHANISM (33): the listener does not enable the mechanism.
    #[error("the server does not enable SASL mechanism {mechanism} (it enables: {})", .enabled.join(", "))]
    Mechanism {
        mechanism: &'static str,
        enabled: Vec<String>,
    },
    /// SASL_AUTHENTICATION_FAILED (58), or a server signature that does not match: wrong credentials.
    #[error("authentication failed: {0}")]
    Authentication(String),
    /// Anything else: an unexpected error code, a broken exchange.
    #[error("SASL exchange failed: {0}")]
    Exchange(String),
}

/// The SaslHandshake and SaslAuthenticate versions a client sends at, given the ranges the server's
/// ApiVersions answer lists: handshake v1 (v0's raw tokens are not spoken), authenticate the highest
/// both serve (0–2), as Kafka's `SaslClientAuthenticator` picks them.
pub fn exchange_versions(
    handshake: Option<(i16, i16)>,
    authenticate: Option<(i16, i16)>,
) -> Result<(i16, i16), SaslFailure> {
    match (handshake, authenticate) {
        (Some((hmin, hmax)), Some((amin, amax))) if hmin <= 1 && hmax >= 1 && amin <= 2 => {
            Ok((1, amax.min(2)))
        }
        _ => Err(SaslFailure::Exchange(
            "the server serves no SaslHandshake v1 / SaslAuthenticate (not a SASL listener?)"
                .into(),
        )),
    }
}

/// What a SaslHandshake answer means for the client that asked for `mechanism`.
pub fn handshake_outcome(
    answer: &kafka_protocol::messages::SaslHandshakeResponse,
    mechanism: &'static str,
) -> Result<(), SaslFailure> {
    match answer.error_code {
        0 => Ok(()),
        crate::wire::error_codes::UNSUPPORTED_SASL_MECHANISM => Err(SaslFailure::Mechanism {
            mechanism,
            enabled: answer.mechanisms.iter().map(|m| m.to_string()).collect(),
        }),
        code => Err(SaslFailure::Exchange(format!(
            "SaslHandshake: {}",
            crate::cli::kafka_error(code, None)
        ))),
    }
}

/// What a SaslAuthenticate answer means: the server's token, or why the exchange failed.
pub fn authenticate_outcome(
    answer: kafka_protocol::messages::SaslAuthenticateResponse,
) -> Result<bytes::Bytes, SaslFailure> {
    match answer.error_code {
        0 => Ok(answer.auth_bytes),
        code => {
            let text = crate::cli::kafka_error(code, answer.error_message.as_deref());
            Err(
                if code == crate::wire::error_codes::SASL_AUTHENTICATION_FAILED {
                    SaslFailure::Authentication(text)
                } else {
                    SaslFailure::Exchange(text)
                },
            )
        }
    }
}

/// The client's half of one exchange: the tokens to send, fed the server's answers.
pub enum Exchange {
    Plain { token: Option<Vec<u8>> },
    Scram(Box<scram::ScramClient>, u8),
}

impl Exchange {
    pub fn new(config: &SaslConfig) -> Exchange {
        let hash = match config.mechanism {
            Mechanism::Plain => {
                // PLAIN (RFC 4616): [authzid] NUL authcid NUL passwd, no authzid as Kafka's client.
                let token = format!("\0{}\0{}", config.username, config.password);
                return Exchange::Plain {
                    token: Some(token.into_bytes()),
                };
            }
            Mechanism::ScramSha256 => scram::Hash::Sha256,
            Mechanism::ScramSha512 => scram::Hash::Sha512,
        };
        Exchange::Scram(
            Box::new(scram::ScramClient::new(
                hash,
                &config.username,
                &config.password,
            )),
            0,
        )
    }

    /// The next token to send, given the server's last token (`None` at the start). `Ok(None)`: the
    /// exchange is complete on the client's side.
    pub fn next(&mut self, server: Option<&[u8]>) -> Result<Option<Vec<u8>>, SaslFailure> {
        match self {
            Exchange::Plain { token } => Ok(token.take()),
            Exchange::Scram(client, step) => {
                let text = |b: &[u8]| {
                    std::str::from_utf8(b).map(str::to_string).map_err(|_| {
                        SaslFailure::Exchange("SCRAM: a server message is not UTF-8".into())
                    })
                };
                let scram_failure = |e: scram::ScramError| match e {
                    scram::ScramError::Server(_) | scram::ScramError::ServerSignature => {
                        SaslFailure::Authentication(e.to_string())
                    }
                    other => SaslFailure::Exchange(other.to_string()),
                };
                *step += 1;
                match (*step, server) {
                    (1, _) => Ok(Some(client.client_first().into_bytes())),
                    (2, Some(first)) => client
                        .client_final(&text(first)?)
                        .map(|m| Some(m.into_bytes()))
                        .map_err(scram_failure),
                    (3, Some(last)) => client
                        .verify_server_final(&text(last)?)
                        .map(|()| None)
                        .map_err(scram_failure),
                    _ => Err(SaslFailure::Exchange(
                        "SCRAM: the server sent a message out of turn".into(),
                    )),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Properties {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn client_properties_as_kafkas_tools_take_them() {
        let jaas = format!("{SCRAM_LOGIN_MODULE} required username=\"alice\" password=\"s3cret\";");
        let got = client_config(&props(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.jaas.config", &jaas),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(got.mechanism, Mechanism::ScramSha512);
        assert_eq!(
            (got.username.as_str(), got.password.as_str()),
            ("alice", "s3cret")
        );
        assert!(!format!("{got:?}").contains("s3cret"));
        assert_eq!(
            client_config(&props(&[("security.protocol", "SSL")])),
            Ok(None)
        );
        assert_eq!(client_config(&props(&[])), Ok(None));
    }

    #[test]
    fn bad_client_properties_get_typed_errors() {
        let scram = format!("{SCRAM_LOGIN_MODULE} required username=\"a\" password=\"b\";");
        let with = |mech: Option<&str>, jaas: Option<&str>| {
            let mut p = props(&[("security.protocol", "SASL_PLAINTEXT")]);
            if let Some(m) = mech {
                p.insert("sasl.mechanism".into(), m.into());
            }
            if let Some(j) = jaas {
                p.insert("sasl.jaas.config".into(), j.into());
            }
            client_config(&p).unwrap_err()
        };
        assert_eq!(
            with(None, Some(&scram)),
            SaslConfigError::Mechanism("GSSAPI".into())
        );
        assert_eq!(
            with(Some("OAUTHBEARER"), Some(&scram)),
            SaslConfigError::Mechanism("OAUTHBEARER".into())
        );
        assert_eq!(
            with(Some("scram-sha-256"), Some(&scram)),
            SaslConfigError::Mechanism("scram-sha-256".into())
        );
        assert_eq!(
            with(Some("PLAIN"), None),
            SaslConfigError::NoJaas("SASL_PLAINTEXT".into())
        );
        assert!(matches!(
            with(Some("PLAIN"), Some(&scram)),
            SaslConfigError::Module { .. }
        ));
        assert_eq!(
            with(Some("SCRAM-SHA-256"), Some(&format!("{scram} {scram}"))),
            SaslConfigError::Modules(2)
        );
        assert_eq!(
            with(
                Some("SCRAM-SHA-256"),
                Some(&format!("{SCRAM_LOGIN_MODULE} required username=\"a\";"))
            ),
            SaslConfigError::Option("password")
        );
        assert_eq!(
            with(
                Some("SCRAM-SHA-256"),
                Some(&format!("{SCRAM_LOGIN_MODULE} required"))
            ),
            SaslConfigError::Jaas(jaas::JaasError::NotTerminated)
        );
    }

    #[test]
    fn plain_sends_one_token_without_authzid() {
        let mut e = Exchange::new(&SaslConfig {
            mechanism: Mechanism::Plain,
            username: "u".into(),
            password: "p".into(),
        });
        assert_eq!(e.next(None).unwrap(), Some(b"\0u\0p".to_vec()));
        assert_eq!(e.next(Some(b"")).unwrap(), None);
    }
}
