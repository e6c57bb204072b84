//! The client side of SCRAM (RFC 5802; SCRAM-SHA-256 and -512 as RFC 7677 and Kafka's
//! `ScramSaslClient` use them): message building and parsing here, every primitive (PBKDF2, HMAC, the
//! hash) from `ring`, the crypto library rustls already brings. As Kafka: no channel binding (gs2 header
//! `n,,`), no SASLprep of the password (`ScramFormatter.normalize` takes its UTF-8 bytes), a server
//! iteration count below 4096 refused (`ScramMechanism.minIterations`).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ring::{digest, hmac, pbkdf2};

/// Kafka's smallest accepted iteration count, for both mechanisms.
pub const MIN_ITERATIONS: u32 = 4096;
/// Kafka's largest (`ScramMechanism.maxIterations`); a larger count from a server is refused too, so a
/// hostile server cannot make the client spin.
pub const MAX_ITERATIONS: u32 = 16384;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hash {
    Sha256,
    Sha512,
    /// RFC 5802's own test vector is SCRAM-SHA-1 (which Kafka does not offer).
    #[cfg(test)]
    Sha1,
}

impl Hash {
    fn hmac(self) -> hmac::Algorithm {
        match self {
            Hash::Sha256 => hmac::HMAC_SHA256,
            Hash::Sha512 => hmac::HMAC_SHA512,
            #[cfg(test)]
            Hash::Sha1 => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
        }
    }
    fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            Hash::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            Hash::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
            #[cfg(test)]
            Hash::Sha1 => pbkdf2::PBKDF2_HMAC_SHA1,
        }
    }
    fn digest(self) -> &'static digest::Algorithm {
        match self {
            Hash::Sha256 => &digest::SHA256,
            Hash::Sha512 => &digest::SHA512,
            #[cfg(test)]
            Hash::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScramError {
    #[error("SCRAM: malformed server message ({0})")]
    Malformed(&'static str),
    #[error("SCRAM: the server's nonce does not extend ours")]
    Nonce,
    #[error("SCRAM: the server asks for {0} iterations; Kafka allows {MIN_ITERATIONS} to {MAX_ITERATIONS}")]
    Iterations(u32),
    #[error("SCRAM: the server refused the proof: {0}")]
    Server(String),
    #[error("SCRAM: the server's signature is wrong (it does not know the password)")]
    ServerSignature,
    #[error("SCRAM: {0} before the server's first message")]
    OutOfOrder(&'static str),
}

/// One SCRAM exchange, client side.
pub struct ScramClient {
    hash: Hash,
    /// `n=<saslname>,r=<nonce>`.
    first_bare: String,
    password: String,
    nonce: String,
    /// The ServerSignature the server-final message must carry.
    expected: Option<Vec<u8>>,
}

/// RFC 5802's saslname: `=` as `=3D`, `,` as `=2C`.
fn sasl_name(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

impl ScramClient {
    /// A fresh exchange with a random nonce (24 bytes from the OS generator, base64: no `,`).
    pub fn new(hash: Hash, user: &str, password: &str) -> Self {
        let mut bytes = [0u8; 24];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
        Self::with_nonce(hash, user, password, &B64.encode(bytes))
    }

    pub fn with_nonce(hash: Hash, user: &str, password: &str, nonce: &str) -> Self {
        ScramClient {
            hash,
            first_bare: format!("n={},r={nonce}", sasl_name(user)),
            password: password.to_string(),
            nonce: nonce.to_string(),
            expected: None,
        }
    }

    /// client-first-message: `n,,n=<user>,r=<nonce>`.
    pub fn client_first(&self) -> String {
        format!("n,,{}", self.first_bare)
    }

    /// Takes server-first-message (`r=..,s=..,i=..[,ext]`), returns client-final-message.
    pub fn client_final(&mut self, server_first: &str) -> Result<String, ScramError> {
        let mut fields = server_first.split(',');
        let mut next = |prefix: &'static str| {
            fields
                .next()
                .and_then(|f| f.strip_prefix(prefix))
                .ok_or(ScramError::Malformed(prefix))
        };
        let nonce = next("r=")?;
        let salt = B64
            .decode(next("s=")?)
            .map_err(|_| ScramError::Malformed("s="))?;
        let iterations: u32 = next("i=")?
            .parse()
            .map_err(|_| ScramError::Malformed("i="))?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(ScramError::Nonce);
        }
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(ScramError::Iterations(iterations));
        }
        let h = self.hash;
        let len = h.digest().output_len();
        let mut salted = vec![0u8; len];
        let rounds = std::num::NonZeroU32::new(iterations).ok_or(ScramError::Iterations(0))?;
        pbkdf2::derive(
            h.pbkdf2(),
            rounds,
            &salt,
            self.password.as_bytes(),
            &mut salted,
        );
        let salted = hmac::Key::new(h.hmac(), &salted);
        let client_key = hmac::sign(&salted, b"Client Key");
        let stored_key = digest::digest(h.digest(), client_key.as_ref());
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.first_bare);
        let signature = hmac::sign(
            &hmac::Key::new(h.hmac(), stored_key.as_ref()),
            auth_message.as_bytes(),
        );
        let proof: Vec<u8> = client_key
            .as_ref()
            .iter()
            .zip(signature.as_ref())
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hmac::sign(&salted, b"Server Key");
        let server_signature = hmac::sign(
            &hmac::Key::new(h.hmac(), server_key.as_ref()),
            auth_message.as_bytes(),
        );
        self.expected = Some(server_signature.as_ref().to_vec());
        Ok(format!("{without_proof},p={}", B64.encode(proof)))
    }

    /// Checks server-final-message: `v=<ServerSignature>` (or the server's `e=<error>`).
    pub fn verify_server_final(&self, server_final: &str) -> Result<(), ScramError> {
        let expected = self
            .expected
            .as_ref()
            .ok_or(ScramError::OutOfOrder("server-final-message"))?;
        let first = server_final.split(',').next().unwrap_or_default();
        if let Some(e) = first.strip_prefix("e=") {
            return Err(ScramError::Server(e.to_string()));
        }
        let v = first
            .strip_prefix("v=")
            .ok_or(ScramError::Malformed("v="))?;
        let got = B64.decode(v).map_err(|_| ScramError::Malformed("v="))?;
        // Constant-time comparison is not needed on the client (the signature is not a secret it holds).
        if &got != expected {
            return Err(ScramError::ServerSignature);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 5802 section 5 (SCRAM-SHA-1), user "user", password "pencil".
    #[test]
    fn rfc5802_sha1_vector() {
        let mut c =
            ScramClient::with_nonce(Hash::Sha1, "user", "pencil", "fyko+d2lbbFgONRv9qkxdawL");
        assert_eq!(c.client_first(), "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL");
        let last = c
            .client_final("r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
            .unwrap();
        assert_eq!(
            last,
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
        );
        c.verify_server_final("v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")
            .unwrap();
    }

    /// RFC 7677 section 3 (SCRAM-SHA-256), user "user", password "pencil".
    #[test]
    fn rfc7677_sha256_vector() {
        let mut c = ScramClient::with_nonce(Hash::Sha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
        assert_eq!(c.client_first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let last = c.client_final(server_first).unwrap();
        assert_eq!(last, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
        c.verify_server_final("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        assert_eq!(
            c.verify_server_final("v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
            Err(ScramError::ServerSignature)
        );
        assert_eq!(
            c.verify_server_final("e=invalid-proof"),
            Err(ScramError::Server("invalid-proof".into()))
        );
    }

    #[test]
    fn hostile_server_first_messages_are_refused() {
        let fresh = || ScramClient::with_nonce(Hash::Sha512, "a,b=c", "p", "abc");
        assert_eq!(fresh().client_first(), "n,,n=a=2Cb=3Dc,r=abc");
        assert_eq!(
            fresh().client_final("r=xyzdef,s=QSXC,i=4096"),
            Err(ScramError::Nonce)
        );
        assert_eq!(
            fresh().client_final("r=abc,s=QSXC,i=4096"),
            Err(ScramError::Nonce)
        );
        assert_eq!(
            fresh().client_final("r=abcdef,s=QSXC,i=4095"),
            Err(ScramError::Iterations(4095))
        );
        assert_eq!(
            fresh().client_final("r=abcdef,s=QSXC,i=4000000000"),
            Err(ScramError::Iterations(4_000_000_000))
        );
        assert_eq!(
            fresh().client_final("r=abcdef,s=*,i=4096"),
            Err(ScramError::Malformed("s="))
        );
        assert_eq!(
            fresh().client_final("s=QSXC,r=abcdef,i=4096"),
            Err(ScramError::Malformed("r="))
        );
        assert_eq!(
            fresh().verify_server_final("v=AAAA"),
            Err(ScramError::OutOfOrder("server-final-message"))
        );
        assert!(fresh().client_final("r=abcdef,s=QSXC,i=4096").is_ok());
    }
}
