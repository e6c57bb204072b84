//! SASL on a node's controller listener and its links to other controllers, configured as a Kafka
//! controller is:
//!
//! - `listener.security.protocol.map` maps the listener to `SASL_PLAINTEXT` or `SASL_SSL` (in a node's
//!   properties that is `security.protocol`, see `cli::controller_properties`);
//! - `listener.name.<listener>.sasl.enabled.mechanisms`, else `sasl.enabled.mechanisms` (Kafka's default
//!   `GSSAPI`): the mechanisms the listener accepts;
//! - `sasl.mechanism.controller.protocol` (default `GSSAPI`): the mechanism the links use;
//! - `listener.name.<listener>.plain.sasl.jaas.config`: one `PlainLoginModule` entry whose
//!   `user_<name>="<password>"` options are the accepted credentials (`PlainServerCallbackHandler`) and
//!   whose `username`/`password` are what this node sends to other controllers (Kafka's raft client uses
//!   the listener's server JAAS context for its own connections).
//!
//! Only PLAIN is served. SCRAM is refused: Kafka keeps SCRAM credentials in the metadata log
//! (`UserScramCredentialRecord`), which controllers cannot read before the quorum they are authenticating
//! for has formed (KAFKA-15513), and this node interprets no such records.

use std::collections::BTreeMap;

use super::{jaas, Mechanism, SaslConfig, PLAIN_LOGIN_MODULE};
use crate::server::tls::Properties;

pub const ENABLED_MECHANISMS: &str = "sasl.enabled.mechanisms";
pub const CONTROLLER_MECHANISM: &str = "sasl.mechanism.controller.protocol";
/// Kafka's default of both mechanism keys.
const KAFKA_DEFAULT_MECHANISM: &str = "GSSAPI";
/// The prefix of the per-user options of a `PlainLoginModule` entry.
const USER_PREFIX: &str = "user_";

/// Kafka's per-listener key prefix (`ListenerName.configPrefix`: the name in lower case).
pub fn listener_prefix(listener: &str) -> String {
    format!("listener.name.{}.", listener.to_lowercase())
}

/// Whether `key` is a SASL key of listener `listener` (or unprefixed) that this module reads or refuses.
pub fn is_sasl_key(key: &str, listener: &str) -> bool {
    let k = key.strip_prefix(&listener_prefix(listener)).unwrap_or(key);
    k.starts_with("sasl.") || k.ends_with(".sasl.jaas.config")
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ListenerSaslError {
    #[error("{key}={value}: SASL between controllers with SCRAM is refused: SCRAM credentials live in the metadata log, which cannot be read before the quorum forms (KAFKA-15513), and this node keeps no SCRAM credentials; use PLAIN")]
    Scram { key: String, value: String },
    #[error("{key}={value}: the controller listener serves PLAIN only (GSSAPI, Kafka's default, and OAUTHBEARER are not implemented)")]
    Mechanism { key: String, value: String },
    #[error("{key} is required with a SASL listener: a {PLAIN_LOGIN_MODULE} entry with username, password and user_<name>=\"<password>\" options (a static JAAS file is not read)")]
    NoJaas { key: String },
    #[error("{key}: {source}")]
    Jaas {
        key: String,
        source: jaas::JaasError,
    },
    #[error(
        "{key}: {count} login modules; the listener's entry has exactly one, {PLAIN_LOGIN_MODULE}"
    )]
    Modules { key: String, count: usize },
    #[error("{key}: login module {found}; PLAIN needs {PLAIN_LOGIN_MODULE}")]
    Module { key: String, found: String },
    #[error("{key}: option '{option}' is missing or empty (this node authenticates to other controllers with it)")]
    Option { key: String, option: &'static str },
    #[error("{key} is set but the listener's security protocol is {protocol}; map the listener to SASL_PLAINTEXT or SASL_SSL in listener.security.protocol.map (or security.protocol)")]
    NotSasl { key: String, protocol: String },
}

/// A SASL listener's setup: who may authenticate, and how this node authenticates to its peers.
#[derive(Clone, PartialEq, Eq)]
pub struct ListenerSasl {
    /// The enabled mechanisms in the order configured (the SaslHandshake answer lists them so).
    pub enabled: Vec<String>,
    /// `user_<name>` options: name → password.
    users: BTreeMap<String, String>,
    /// The links' credentials (`sasl.mechanism.controller.protocol` and the JAAS `username`/`password`).
    pub links: SaslConfig,
}

impl std::fmt::Debug for ListenerSasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerSasl")
            .field("enabled", &self.enabled)
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .field("links", &self.links)
            .finish()
    }
}

impl ListenerSasl {
    /// The setup of listener `listener` from a node's properties; `None` unless `security.protocol` is
    /// `SASL_PLAINTEXT` or `SASL_SSL` (then no SASL key may be set: a SASL setup must not silently run
    /// unauthenticated).
    pub fn for_node(
        props: &Properties,
        listener: &str,
    ) -> Result<Option<ListenerSasl>, ListenerSaslError> {
        let protocol = props
            .get("security.protocol")
            .map(|p| p.trim().to_ascii_uppercase())
            .unwrap_or_else(|| "PLAINTEXT".into());
        let prefix = listener_prefix(listener);
        if !protocol.starts_with("SASL_") {
            return match props.keys().find(|k| is_sasl_key(k, listener)) {
                Some(key) => Err(ListenerSaslError::NotSasl {
                    key: key.clone(),
                    protocol,
                }),
                None => Ok(None),
            };
        }
        // Listener-prefixed keys win, as in Kafka.
        let lookup = |key: &str| {
            let prefixed = format!("{prefix}{key}");
            props
                .get(&prefixed)
                .map(|v| (prefixed, v.trim().to_string()))
                .or_else(|| {
                    props
                        .get(key)
                        .map(|v| (key.to_string(), v.trim().to_string()))
                })
        };
        let (key, value) = lookup(ENABLED_MECHANISMS)
            .unwrap_or_else(|| (ENABLED_MECHANISMS.into(), KAFKA_DEFAULT_MECHANISM.into()));
        let enabled: Vec<String> = value
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(String::from)
            .collect();
        for m in &enabled {
            plain_only(&key, m)?;
        }
        if enabled.is_empty() {
            return Err(ListenerSaslError::Mechanism { key, value });
        }
        let value = props
            .get(CONTROLLER_MECHANISM)
            .map_or(KAFKA_DEFAULT_MECHANISM, |v| v.trim());
        plain_only(CONTROLLER_MECHANISM, value)?;
        let key = format!("{prefix}plain.sasl.jaas.config");
        let text = props
            .get(&key)
            .ok_or_else(|| ListenerSaslError::NoJaas { key: key.clone() })?;
        let modules = jaas::parse(text).map_err(|source| ListenerSaslError::Jaas {
            key: key.clone(),
            source,
        })?;
        let [module] = modules.as_slice() else {
            return Err(ListenerSaslError::Modules {
                key,
                count: modules.len(),
            });
        };
        if module.class != PLAIN_LOGIN_MODULE {
            return Err(ListenerSaslError::Module {
                key,
                found: module.class.clone(),
            });
        }
        let option = |option: &'static str| {
            module
                .options
                .get(option)
                .filter(|v| !v.is_empty())
                .cloned()
                .ok_or_else(|| ListenerSaslError::Option {
                    key: key.clone(),
                    option,
                })
        };
        let links = SaslConfig {
            mechanism: Mechanism::Plain,
            username: option("username")?,
            password: option("password")?,
        };
        let users = module
            .options
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(USER_PREFIX)?.to_string(), v.clone())))
            .collect();
        Ok(Some(ListenerSasl {
            enabled,
            users,
            links,
        }))
    }

    /// A listener that accepts PLAIN from `users` (tests).
    pub fn plain(users: &[(&str, &str)], links: SaslConfig) -> ListenerSasl {
        ListenerSasl {
            enabled: vec!["PLAIN".into()],
            users: users
                .iter()
                .map(|(u, p)| (u.to_string(), p.to_string()))
                .collect(),
            links,
        }
    }

    /// The configured password of `user`, if any.
    pub fn password_of(&self, user: &str) -> Option<&str> {
        self.users.get(user).map(String::as_str)
    }
}

/// PLAIN passes; SCRAM gets its KAFKA-15513 refusal; anything else is not implemented.
fn plain_only(key: &str, value: &str) -> Result<(), ListenerSaslError> {
    match Mechanism::parse(value) {
        Ok(Mechanism::Plain) => Ok(()),
        Ok(_) => Err(ListenerSaslError::Scram {
            key: key.into(),
            value: value.into(),
        }),
        Err(_) => Err(ListenerSaslError::Mechanism {
            key: key.into(),
            value: value.into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
        username=\"controller\" password=\"c-secret\" user_controller=\"c-secret\" user_admin=\"a-secret\";";

    fn props(pairs: &[(&str, &str)]) -> Properties {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sasl(extra: &[(&str, &str)]) -> Properties {
        let mut p = props(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.mechanism.controller.protocol", "PLAIN"),
            ("listener.name.controller.plain.sasl.jaas.config", JAAS),
        ]);
        p.extend(props(extra));
        p
    }

    #[test]
    fn a_kafka_controllers_keys() {
        let s = ListenerSasl::for_node(&sasl(&[]), "CONTROLLER")
            .unwrap()
            .unwrap();
        assert_eq!(s.enabled, ["PLAIN"]);
        assert_eq!(s.password_of("admin"), Some("a-secret"));
        assert_eq!(s.password_of("controller"), Some("c-secret"));
        assert_eq!(s.password_of("nobody"), None);
        assert_eq!(
            (s.links.username.as_str(), s.links.password.as_str()),
            ("controller", "c-secret")
        );
        assert!(!format!("{s:?}").contains("secret"));
        // The listener's own key wins over the broker-wide one.
        let s = ListenerSasl::for_node(
            &sasl(&[
                ("sasl.enabled.mechanisms", "GSSAPI"),
                ("listener.name.controller.sasl.enabled.mechanisms", "PLAIN"),
            ]),
            "CONTROLLER",
        )
        .unwrap();
        assert!(s.is_some());
        assert_eq!(
            ListenerSasl::for_node(&props(&[("security.protocol", "SSL")]), "CONTROLLER"),
            Ok(None)
        );
    }

    #[test]
    fn refusals_name_their_key() {
        let err = |extra: &[(&str, &str)]| {
            ListenerSasl::for_node(&sasl(extra), "CONTROLLER").unwrap_err()
        };
        let e = err(&[("sasl.mechanism.controller.protocol", "SCRAM-SHA-512")]);
        assert!(matches!(e, ListenerSaslError::Scram { .. }), "{e}");
        assert!(e.to_string().contains("KAFKA-15513"), "{e}");
        let e = err(&[("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256")]);
        assert!(
            matches!(e, ListenerSaslError::Scram { ref key, .. } if key == "sasl.enabled.mechanisms")
        );
        // Kafka's defaults are GSSAPI.
        let mut p = sasl(&[]);
        p.remove("sasl.mechanism.controller.protocol");
        assert_eq!(
            ListenerSasl::for_node(&p, "CONTROLLER").unwrap_err(),
            ListenerSaslError::Mechanism {
                key: CONTROLLER_MECHANISM.into(),
                value: "GSSAPI".into()
            }
        );
        p = sasl(&[]);
        p.remove("sasl.enabled.mechanisms");
        assert!(matches!(
            ListenerSasl::for_node(&p, "CONTROLLER").unwrap_err(),
            ListenerSaslError::Mechanism { .. }
        ));
        assert!(matches!(
            err(&[("sasl.enabled.mechanisms", " , ")]),
            ListenerSaslError::Mechanism { .. }
        ));
        p = sasl(&[]);
        p.remove("listener.name.controller.plain.sasl.jaas.config");
        assert!(matches!(
            ListenerSasl::for_node(&p, "CONTROLLER").unwrap_err(),
            ListenerSaslError::NoJaas { .. }
        ));
        let jaas = |text: &str| err(&[("listener.name.controller.plain.sasl.jaas.config", text)]);
        assert!(matches!(
            jaas("org.apache.kafka.common.security.plain.PlainLoginModule required"),
            ListenerSaslError::Jaas { .. }
        ));
        assert!(matches!(
            jaas(&format!("{JAAS} {JAAS}")),
            ListenerSaslError::Modules { count: 2, .. }
        ));
        assert!(matches!(
            jaas("org.apache.kafka.common.security.scram.ScramLoginModule required username=\"a\" password=\"b\";"),
            ListenerSaslError::Module { .. }
        ));
        assert!(matches!(
            jaas("org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\" user_a=\"b\";"),
            ListenerSaslError::Option { option: "password", .. }
        ));
        // SASL keys on a listener that is not SASL.
        let e = ListenerSasl::for_node(
            &props(&[
                ("security.protocol", "PLAINTEXT"),
                ("listener.name.controller.plain.sasl.jaas.config", JAAS),
            ]),
            "CONTROLLER",
        )
        .unwrap_err();
        assert!(matches!(e, ListenerSaslError::NotSasl { .. }), "{e}");
    }
}
