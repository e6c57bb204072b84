//! The client's half of SASL on a node's own connections (peer links, forwarded DescribeQuorum): after
//! the ApiVersions round trip that opens every connection, SaslHandshake v1 and the SaslAuthenticate
//! tokens of [`Exchange`], at the versions [`exchange_versions`] picks. The same exchange as the CLI's
//! blocking client (`server::client`), over tokio streams.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::{
    authenticate_outcome, exchange_versions, handshake_outcome, Exchange, SaslConfig, SaslFailure,
};
use crate::server::api_versions::PeerVersions;
use crate::server::codec::{request_frame, response_body, CodecError};
use crate::wire::frame::{self, FrameReadError};

/// Correlation ids of the exchange (after the ApiVersions round trip's 0 and 1).
const FIRST_CORRELATION: i32 = 100;

#[derive(Debug, thiserror::Error)]
pub enum LinkSaslError {
    #[error("SASL: {0}")]
    Failure(#[from] SaslFailure),
    #[error("SASL exchange not completed within {0:?}")]
    Timeout(Duration),
    #[error("SASL exchange: the peer closed the connection")]
    Closed,
    #[error("SASL exchange: {0}")]
    Frame(FrameReadError),
    #[error("SASL exchange: {0}")]
    Codec(#[from] CodecError),
    #[error("SASL exchange: {0}")]
    Io(#[from] std::io::Error),
}

/// Authenticates a connection whose ApiVersions answer was `versions`; the whole exchange within
/// `timeout`.
pub async fn authenticate<R, W>(
    read: &mut R,
    write: &mut W,
    versions: &PeerVersions,
    config: &SaslConfig,
    client_id: &str,
    timeout: Duration,
    max_frame: usize,
) -> Result<(), LinkSaslError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + ?Sized,
{
    let exchange = async {
        let (handshake_v, authenticate_v) = exchange_versions(
            versions.range(ApiKey::SaslHandshake),
            versions.range(ApiKey::SaslAuthenticate),
        )?;
        let mechanism = config.mechanism.name();
        let request =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
        let mut correlation = FIRST_CORRELATION;
        let mut body = round_trip(
            read,
            write,
            (ApiKey::SaslHandshake, handshake_v, correlation),
            client_id,
            &request,
            max_frame,
        )
        .await?;
        let answer = SaslHandshakeResponse::decode(&mut body, handshake_v)
            .map_err(|e| malformed("SaslHandshakeResponse", e))?;
        handshake_outcome(&answer, mechanism)?;
        let mut exchange = Exchange::new(config);
        let mut server: Option<Bytes> = None;
        while let Some(token) = exchange.next(server.as_deref())? {
            correlation += 1;
            let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
            let mut body = round_trip(
                read,
                write,
                (ApiKey::SaslAuthenticate, authenticate_v, correlation),
                client_id,
                &request,
                max_frame,
            )
            .await?;
            let answer = SaslAuthenticateResponse::decode(&mut body, authenticate_v)
                .map_err(|e| malformed("SaslAuthenticateResponse", e))?;
            server = Some(authenticate_outcome(answer)?);
        }
        Ok(())
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| LinkSaslError::Timeout(timeout))?
}

fn malformed(what: &'static str, e: impl std::fmt::Display) -> LinkSaslError {
    LinkSaslError::Codec(CodecError::Malformed {
        what,
        reason: e.to_string(),
    })
}

/// One request and the body of its answer (the correlation id checked).
async fn round_trip<R, W, M>(
    read: &mut R,
    write: &mut W,
    (api, version, correlation): (ApiKey, i16, i32),
    client_id: &str,
    request: &M,
    max_frame: usize,
) -> Result<Bytes, LinkSaslError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + ?Sized,
    M: Encodable,
{
    let key = api as i16;
    let frame = request_frame(key, version, correlation, client_id, request)?;
    write.write_all(&frame).await?;
    write.flush().await?;
    let payload = match frame::read_frame(read, max_frame).await {
        Ok(payload) => payload,
        Err(FrameReadError::Closed) => return Err(LinkSaslError::Closed),
        Err(e) => return Err(LinkSaslError::Frame(e)),
    };
    let (corr, body) = response_body(payload, key, version)?;
    if corr != correlation {
        return Err(malformed(
            "response header",
            format!("correlation id {corr}, expected {correlation}"),
        ));
    }
    Ok(body)
}
