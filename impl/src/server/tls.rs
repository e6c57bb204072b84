//! TLS on the listener and on peer links, configured with Apache Kafka's SSL property names.
//!
//! rustls (ring provider) does the protocol; this module only turns Kafka-named properties into rustls
//! configs and a peer certificate into Kafka's principal name. The keys, in one place ([`KEYS`]):
//!
//! - `security.protocol` = `PLAINTEXT` (default) | `SSL`
//! - `ssl.keystore.type` = `PEM` (the only type), `ssl.keystore.location` (one PEM file: the unencrypted
//!   PKCS#8/PKCS#1/SEC1 private key and the certificate chain, leaf first), or inline
//!   `ssl.keystore.certificate.chain` + `ssl.keystore.key`
//! - `ssl.truststore.type` = `PEM`, `ssl.truststore.location` or inline `ssl.truststore.certificates`
//! - `ssl.client.auth` = `none` | `requested` | `required` (listener only)
//! - `ssl.endpoint.identification.algorithm` = `https` (default: the server certificate must name the host
//!   dialled) | empty (not checked)
//! - `super.users` = `User:DN;User:DN`: the only principals allowed to change membership (listener only)
//! - `controller.principal.template` = e.g. `CN=kraft-node-{id}`, and `controller.principals.<id>` = DN:
//!   the certificate principal that proves node id `<id>` (ours; Kafka has no such binding)
//!
//! Principals are Kafka's default (`ssl.principal.mapping.rules=DEFAULT`): the subject DN in RFC 2253 form,
//! as `X500Principal.getName()` prints it, e.g. `CN=kraft-node-1,O=kraft`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

/// Every key this module reads. Other `ssl.*` keys are refused in a node's config.
pub const KEYS: &[&str] = &[
    "security.protocol",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.endpoint.identification.algorithm",
    "ssl.principal.mapping.rules",
    "super.users",
    "controller.principal.template",
];
/// Prefix of the per-node principal keys, `controller.principals.<id>`.
pub const PRINCIPALS_PREFIX: &str = "controller.principals.";

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{key}: cannot read {path}: {source}")]
    Read {
        key: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{key}: no PEM certificate found")]
    NoCertificate { key: &'static str },
    #[error("{key}: no unencrypted PEM private key found (encrypted keys and ssl.key.password are not supported)")]
    NoKey { key: &'static str },
    #[error("{key}: {reason}")]
    Pem { key: &'static str, reason: String },
    #[error("{key} = {value:?}: {reason}")]
    Value {
        key: String,
        value: String,
        reason: String,
    },
    #[error("{0} is required with security.protocol=SSL")]
    Missing(&'static str),
    #[error("{key} is not supported: {reason}")]
    Unsupported { key: String, reason: &'static str },
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("trust store: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    #[error("cannot read the certificate: {0}")]
    Certificate(String),
}

/// `ssl.client.auth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

/// Which principal proves which node id (`controller.principal.template`, `controller.principals.<id>`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControllerIdentities {
    pub template: Option<String>,
    pub by_id: BTreeMap<i32, String>,
}

impl ControllerIdentities {
    pub fn is_configured(&self) -> bool {
        self.template.is_some() || !self.by_id.is_empty()
    }

    /// The principal that proves node `id`, if the operator configured one.
    pub fn principal_of(&self, id: i32) -> Option<String> {
        if let Some(p) = self.by_id.get(&id) {
            return Some(p.clone());
        }
        self.template
            .as_ref()
            .map(|t| t.replace("{id}", &id.to_string()))
    }

    /// Whether `principal` proves node `id`.
    pub fn proves(&self, principal: &str, id: i32) -> bool {
        id >= 0 && self.principal_of(id).is_some_and(|p| p == principal)
    }

    /// Whether the certificate a dialled server presented proves node `id`; `Err` says why not. Always
    /// `Ok` when no identities are configured.
    pub fn check_server<S>(
        &self,
        stream: &tokio_rustls::client::TlsStream<S>,
        id: i32,
    ) -> Result<(), String> {
        if !self.is_configured() {
            return Ok(());
        }
        let principal = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .map(principal);
        match principal {
            Some(Ok(p)) if self.proves(&p, id) => Ok(()),
            other => Err(format!(
                "certificate does not prove node id {id}: {other:?}"
            )),
        }
    }
}

/// Flat `key -> value` properties (a Java properties file, or a node's TOML flattened to dotted keys).
pub type Properties = BTreeMap<String, String>;

/// A loaded TLS setup: what a node's listener and its peer links, or an admin client, need.
#[derive(Clone)]
pub struct Tls {
    /// `None` for a client-only setup (the CLI).
    pub server: Option<Arc<ServerConfig>>,
    pub client: Arc<ClientConfig>,
    pub client_auth: ClientAuth,
    pub identities: ControllerIdentities,
    /// Principals allowed to change membership; empty = any client the listener accepts.
    pub super_users: Vec<String>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("client_auth", &self.client_auth)
            .field("identities", &self.identities)
            .field("super_users", &self.super_users)
            .finish_non_exhaustive()
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn get<'a>(props: &'a Properties, key: &str) -> Option<&'a str> {
    props.get(key).map(|s| s.trim()).filter(|s| !s.is_empty())
}

fn value_error(key: &str, value: &str, reason: impl Into<String>) -> TlsError {
    TlsError::Value {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// Whether client properties ask for TLS: `SSL` or `SASL_SSL` (SASL itself is `server::sasl`'s).
pub fn client_wants_tls(props: &Properties) -> Result<bool, TlsError> {
    wants_tls(props)
}

/// Whether a node's properties ask for TLS (`security.protocol` `SSL` or `SASL_SSL`; SASL itself is
/// `server::sasl::listener`'s); refuses other protocols.
pub fn wants_tls(props: &Properties) -> Result<bool, TlsError> {
    match get(props, "security.protocol").map(str::to_ascii_uppercase) {
        None => Ok(false),
        Some(p) if p == "PLAINTEXT" || p == "SASL_PLAINTEXT" => Ok(false),
        Some(p) if p == "SSL" || p == "SASL_SSL" => Ok(true),
        Some(_) => Err(value_error(
            "security.protocol",
            &props["security.protocol"],
            "expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
        )),
    }
}

/// Refuses keys that would silently weaken or change the setup if ignored.
fn refuse_unsupported(props: &Properties) -> Result<(), TlsError> {
    for (key, reason) in [
        (
            "ssl.key.password",
            "encrypted private keys are not supported; give an unencrypted PEM key",
        ),
        (
            "ssl.keystore.password",
            "only PEM key stores are supported (Kafka refuses a key store password with PEM too)",
        ),
        (
            "ssl.truststore.password",
            "only PEM trust stores are supported (Kafka refuses a trust store password with PEM too)",
        ),
    ] {
        if get(props, key).is_some() {
            return Err(TlsError::Unsupported {
                key: key.to_string(),
                reason,
            });
        }
    }
    for key in ["ssl.keystore.type", "ssl.truststore.type"] {
        if let Some(t) = get(props, key) {
            if !t.eq_ignore_ascii_case("PEM") {
                return Err(value_error(key, t, "only PEM is supported"));
            }
        }
    }
    if let Some(rules) = get(props, "ssl.principal.mapping.rules") {
        if rules != "DEFAULT" {
            return Err(TlsError::Unsupported {
                key: "ssl.principal.mapping.rules".into(),
                reason: "only DEFAULT (the subject DN as the principal) is implemented",
            });
        }
    }
    Ok(())
}

/// Re-wraps PEM text whose line breaks were lost (a Kafka properties value written on one line, or joined
/// by `\` continuations): base64 between the markers is split into 64-character lines.
fn normalize_pem(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(begin) = rest.find("-----BEGIN ") {
        let after = &rest[begin + 11..];
        let Some(label_end) = after.find("-----") else {
            break;
        };
        let label = &after[..label_end];
        let body_start = &after[label_end + 5..];
        let end_marker = format!("-----END {label}-----");
        let Some(end) = body_start.find(&end_marker) else {
            break;
        };
        let body: String = body_start[..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        out.push_str(&format!("-----BEGIN {label}-----\n"));
        for chunk in body.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
            out.push('\n');
        }
        out.push_str(&end_marker);
        out.push('\n');
        rest = &body_start[end + end_marker.len()..];
    }
    out
}

/// PEM text from `location_key` (a file) or `inline_key` (the value itself).
fn pem_text(
    props: &Properties,
    location_key: &'static str,
    inline_key: &'static str,
) -> Result<Option<(&'static str, String)>, TlsError> {
    if let Some(path) = get(props, location_key) {
        let text = std::fs::read_to_string(path).map_err(|source| TlsError::Read {
            key: location_key,
            path: path.into(),
            source,
        })?;
        return Ok(Some((location_key, text)));
    }
    Ok(get(props, inline_key).map(|v| (inline_key, normalize_pem(v))))
}

fn certificates(key: &'static str, text: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(text.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            key,
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate { key });
    }
    Ok(certs)
}

/// The key store: certificate chain and private key.
type KeyPair = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn keystore(props: &Properties) -> Result<Option<KeyPair>, TlsError> {
    if let Some((key, text)) = pem_text(props, "ssl.keystore.location", "ssl.keystore.key")? {
        let private =
            PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|_| TlsError::NoKey { key })?;
        let chain = if key == "ssl.keystore.location" {
            certificates(key, &text)?
        } else {
            let chain = get(props, "ssl.keystore.certificate.chain")
                .ok_or(TlsError::Missing("ssl.keystore.certificate.chain"))?;
            certificates("ssl.keystore.certificate.chain", &normalize_pem(chain))?
        };
        return Ok(Some((chain, private)));
    }
    if get(props, "ssl.keystore.certificate.chain").is_some() {
        return Err(TlsError::Missing("ssl.keystore.key"));
    }
    Ok(None)
}

fn truststore(props: &Properties) -> Result<Arc<RootCertStore>, TlsError> {
    let (key, text) = pem_text(
        props,
        "ssl.truststore.location",
        "ssl.truststore.certificates",
    )?
    .ok_or(TlsError::Missing("ssl.truststore.location"))?;
    let mut roots = RootCertStore::empty();
    for cert in certificates(key, &text)? {
        roots.add(cert).map_err(|e| TlsError::Pem {
            key,
            reason: e.to_string(),
        })?;
    }
    Ok(Arc::new(roots))
}

fn client_auth(props: &Properties) -> Result<ClientAuth, TlsError> {
    match get(props, "ssl.client.auth")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("none") => Ok(ClientAuth::None),
        Some("requested") => Ok(ClientAuth::Requested),
        Some("required") => Ok(ClientAuth::Required),
        Some(other) => Err(value_error(
            "ssl.client.auth",
            other,
            "expected none, requested or required",
        )),
    }
}

fn identities(props: &Properties) -> Result<ControllerIdentities, TlsError> {
    let template = get(props, "controller.principal.template").map(String::from);
    if let Some(t) = &template {
        if !t.contains("{id}") {
            return Err(value_error(
                "controller.principal.template",
                t,
                "must contain {id}",
            ));
        }
    }
    let mut by_id = BTreeMap::new();
    for (key, value) in props.range(PRINCIPALS_PREFIX.to_string()..) {
        let Some(id) = key.strip_prefix(PRINCIPALS_PREFIX) else {
            break;
        };
        let id = id
            .parse::<i32>()
            .ok()
            .filter(|i| *i >= 0)
            .ok_or_else(|| value_error(key, value, "the key must end in a node id"))?;
        by_id.insert(id, value.trim().to_string());
    }
    Ok(ControllerIdentities { template, by_id })
}

/// `super.users`: `User:NAME;User:NAME` as Kafka writes it; the `User:` prefix is required.
fn super_users(props: &Properties) -> Result<Vec<String>, TlsError> {
    let Some(text) = get(props, "super.users") else {
        return Ok(Vec::new());
    };
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|u| {
            u.strip_prefix("User:")
                .map(String::from)
                .ok_or_else(|| value_error("super.users", u, "each entry must be User:NAME"))
        })
        .collect()
}

/// A server verifier that checks the chain but not the host name
/// (`ssl.endpoint.identification.algorithm=` empty, as Kafka allows).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

fn client_config(
    props: &Properties,
    roots: Arc<RootCertStore>,
    keys: Option<KeyPair>,
) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = provider();
    let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider.clone()).build()?;
    let check_host = match get(props, "ssl.endpoint.identification.algorithm") {
        None => true,
        Some(a) if a.eq_ignore_ascii_case("https") => true,
        Some(a) => {
            return Err(value_error(
                "ssl.endpoint.identification.algorithm",
                a,
                "expected https or empty",
            ))
        }
    };
    // An explicitly empty value turns the host check off, as in Kafka.
    let check_host = check_host
        && !props
            .get("ssl.endpoint.identification.algorithm")
            .is_some_and(|v| v.trim().is_empty());
    let builder =
        ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions()?;
    let builder = if check_host {
        builder.with_webpki_verifier(verifier)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(verifier)))
    };
    let config = match keys {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key)?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

impl Tls {
    /// A node's setup: listener and peer links. `None` when `security.protocol` is not SSL (then no
    /// `ssl.*` key may be set: a TLS setup must not silently run in plaintext).
    pub fn for_node(props: &Properties) -> Result<Option<Tls>, TlsError> {
        if !wants_tls(props)? {
            if let Some(key) = props
                .keys()
                .find(|k| k.starts_with("ssl.") || k.starts_with("controller.principal"))
            {
                return Err(value_error(
                    key,
                    &props[key],
                    "set security.protocol=SSL to use TLS (the listener would be plaintext)",
                ));
            }
            return Ok(None);
        }
        if let Some(key) = props.keys().find(|k| {
            (k.starts_with("ssl.") || k.starts_with("controller.") || k.starts_with("super."))
                && !KEYS.contains(&k.as_str())
                && !k.starts_with(PRINCIPALS_PREFIX)
                && !matches!(
                    k.as_str(),
                    "ssl.key.password" | "ssl.keystore.password" | "ssl.truststore.password"
                )
        }) {
            return Err(TlsError::Unsupported {
                key: key.clone(),
                reason: "unknown key",
            });
        }
        refuse_unsupported(props)?;
        let (chain, key) = keystore(props)?.ok_or(TlsError::Missing("ssl.keystore.location"))?;
        let roots = truststore(props)?;
        let client_auth = client_auth(props)?;
        let provider = provider();
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?;
        let server = match client_auth {
            ClientAuth::None => builder.with_no_client_auth(),
            auth => {
                let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider);
                let verifier = if auth == ClientAuth::Requested {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                builder.with_client_cert_verifier(verifier.build()?)
            }
        }
        .with_single_cert(chain.clone(), key.clone_key())?;
        Ok(Some(Tls {
            server: Some(Arc::new(server)),
            client: client_config(props, roots, Some((chain, key)))?,
            client_auth,
            identities: identities(props)?,
            super_users: super_users(props)?,
        }))
    }

    /// An admin client's setup (`--command-config`, as Kafka's tools take it). `None` for plaintext.
    /// Keys other than the TLS ones are ignored, as Kafka's tools ignore unrelated client configs.
    pub fn for_client(props: &Properties) -> Result<Option<Tls>, TlsError> {
        if !client_wants_tls(props)? {
            return Ok(None);
        }
        refuse_unsupported(props)?;
        let roots = truststore(props)?;
        let keys = keystore(props)?;
        Ok(Some(Tls {
            server: None,
            client: client_config(props, roots, keys)?,
            client_auth: ClientAuth::None,
            identities: ControllerIdentities::default(),
            super_users: Vec::new(),
        }))
    }
}

/// The server name to check the certificate of `host` against (a DNS name or an IP address).
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    ServerName::try_from(
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
    )
    .map_err(|e| value_error("host", host, e.to_string()))
}

/// Kafka's default principal name of a certificate: its subject DN in RFC 2253 form.
pub fn principal(cert: &CertificateDer<'_>) -> Result<String, TlsError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| TlsError::Certificate(e.to_string()))?;
    let mut rdns = Vec::new();
    // RFC 2253 lists the RDNs in reverse order of the encoding (most specific first).
    for rdn in parsed
        .subject()
        .iter()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        let mut parts = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let name = match oid.as_str() {
                "2.5.4.3" => "CN".to_string(),
                "2.5.4.6" => "C".into(),
                "2.5.4.7" => "L".into(),
                "2.5.4.8" => "ST".into(),
                "2.5.4.9" => "STREET".into(),
                "2.5.4.10" => "O".into(),
                "2.5.4.11" => "OU".into(),
                "0.9.2342.19200300.100.1.25" => "DC".into(),
                "0.9.2342.19200300.100.1.1" => "UID".into(),
                _ => oid,
            };
            let value = attr
                .as_str()
                .map_err(|e| TlsError::Certificate(format!("subject attribute {name}: {e}")))?;
            parts.push(format!("{name}={}", escape_dn_value(value)));
        }
        rdns.push(parts.join("+"));
    }
    Ok(rdns.join(","))
}

/// RFC 2253 section 2.4 escaping.
fn escape_dn_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
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
    fn identities_from_template_and_explicit_entries() {
        let ids = identities(&props(&[
            ("controller.principal.template", "CN=kraft-node-{id}"),
            ("controller.principals.7", "CN=seven,O=x"),
        ]))
        .unwrap();
        assert!(ids.proves("CN=kraft-node-1", 1));
        assert!(!ids.proves("CN=kraft-node-1", 2));
        assert!(ids.proves("CN=seven,O=x", 7));
        assert!(!ids.proves("CN=kraft-node-7", 7));
        assert!(!ids.proves("CN=kraft-node--1", -1));
        assert!(identities(&props(&[("controller.principal.template", "CN=x")])).is_err());
        assert!(identities(&props(&[("controller.principals.x", "CN=x")])).is_err());
    }

    #[test]
    fn plaintext_with_ssl_keys_is_refused() {
        let p = props(&[("ssl.keystore.location", "/x")]);
        assert!(Tls::for_node(&p).is_err());
        assert!(Tls::for_node(&Properties::new()).unwrap().is_none());
        // SASL_SSL is TLS with SASL over it: the key store is required as for SSL.
        let p = props(&[("security.protocol", "SASL_SSL")]);
        assert!(matches!(Tls::for_node(&p), Err(TlsError::Missing(_))));
        let p = props(&[("security.protocol", "SASL_PLAINTEXT")]);
        assert!(Tls::for_node(&p).unwrap().is_none());
        let p = props(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("ssl.keystore.location", "/x"),
        ]);
        assert!(Tls::for_node(&p).is_err());
        let p = props(&[("security.protocol", "TLS")]);
        assert!(matches!(Tls::for_node(&p), Err(TlsError::Value { .. })));
    }

    #[test]
    fn unsupported_and_unknown_keys_are_refused() {
        for (k, v) in [
            ("ssl.key.password", "x"),
            ("ssl.keystore.type", "JKS"),
            ("ssl.principal.mapping.rules", "RULE:^CN=(.*)$/$1/"),
            ("ssl.keystore.locaton", "typo"),
        ] {
            let p = props(&[("security.protocol", "SSL"), (k, v)]);
            assert!(Tls::for_node(&p).is_err(), "{k} must be refused");
        }
        let p = props(&[("security.protocol", "SSL")]);
        assert!(matches!(
            Tls::for_node(&p),
            Err(TlsError::Missing("ssl.keystore.location"))
        ));
    }

    #[test]
    fn super_users_need_the_user_prefix() {
        let p = props(&[("super.users", "User:CN=a,O=b; User:CN=c")]);
        assert_eq!(super_users(&p).unwrap(), ["CN=a,O=b", "CN=c"]);
        assert!(super_users(&props(&[("super.users", "CN=a")])).is_err());
    }

    #[test]
    fn pem_on_one_line_is_rewrapped() {
        let one_line = "-----BEGIN CERTIFICATE----- QUJD REVG -----END CERTIFICATE-----";
        assert_eq!(
            normalize_pem(one_line),
            "-----BEGIN CERTIFICATE-----\nQUJDREVG\n-----END CERTIFICATE-----\n"
        );
    }

    #[test]
    fn dn_values_are_escaped() {
        assert_eq!(escape_dn_value("a,b+c"), "a\\,b\\+c");
        assert_eq!(escape_dn_value(" x "), "\\ x\\ ");
        assert_eq!(escape_dn_value("#x"), "\\#x");
    }
}
