//! The metrics listener: `GET /metrics` answered with the OpenMetrics text of an [`Exporter`], on a thread
//! of its own (a one-thread tokio runtime) so it serves the same way beside the node's runtime and beside
//! the blocking `kraft describe --watch` loop. Only the request line is read: Prometheus needs nothing else.
//! Bounded: at most [`MAX_CONNECTIONS`] at once (more are closed at once), a request head of at most
//! [`MAX_REQUEST_HEAD`] bytes that must arrive within [`REQUEST_TIMEOUT`]; one request per connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::Exporter;

/// The most bytes of a request head read before it is refused.
pub const MAX_REQUEST_HEAD: usize = 8 * 1024;
/// Scrapers served at once.
pub const MAX_CONNECTIONS: usize = 16;
/// A request head must arrive, and the answer be taken, within this time.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// OpenMetrics 1.0's media type, which Prometheus asks for first.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("cannot listen on {addr} for metrics: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot start the metrics thread: {0}")]
    Thread(std::io::Error),
}

/// Binds `addr` (`HOST:PORT`) now, so a bad address fails the caller, and serves `exporter` there on a
/// thread until the process ends. Returns the bound address (port 0 picks one).
pub fn spawn(addr: &str, exporter: Exporter) -> Result<SocketAddr, MetricsError> {
    let listen = |source| MetricsError::Listen {
        addr: addr.to_string(),
        source,
    };
    let listener = std::net::TcpListener::bind(addr).map_err(listen)?;
    listener.set_nonblocking(true).map_err(listen)?;
    let local = listener.local_addr().map_err(listen)?;
    std::thread::Builder::new()
        .name("kraft-metrics".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match runtime {
                Ok(rt) => rt.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(l) => serve(l, exporter).await,
                        Err(e) => tracing::error!("metrics listener {local}: {e}"),
                    }
                }),
                Err(e) => tracing::error!("metrics listener {local}: no runtime: {e}"),
            }
        })
        .map_err(MetricsError::Thread)?;
    tracing::info!(listener = %local, "serving metrics at /metrics");
    Ok(local)
}

async fn serve(listener: TcpListener, exporter: Exporter) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let Ok(permit) = slots.clone().try_acquire_owned() else {
                    tracing::debug!(%peer, "metrics: too many scrapers, closing");
                    continue;
                };
                let exporter = exporter.clone();
                tokio::spawn(async move {
                    if tokio::time::timeout(REQUEST_TIMEOUT, answer(stream, &exporter))
                        .await
                        .is_err()
                    {
                        tracing::debug!(%peer, "metrics: request timed out");
                    }
                    drop(permit);
                });
            }
            Err(e) => {
                tracing::warn!("metrics: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Reads one request head and writes the answer; the connection is closed after it.
async fn answer(mut stream: TcpStream, exporter: &Exporter) {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let complete = loop {
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            break true;
        }
        if head.len() >= MAX_REQUEST_HEAD {
            break false;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n.min(MAX_REQUEST_HEAD - head.len())]),
        }
    };
    let (status, content_type, body) = if complete {
        route(&head, exporter)
    } else {
        (
            "431 Request Header Fields Too Large",
            "text/plain",
            String::new(),
        )
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The answer to a request head: status line, media type, body.
fn route(head: &[u8], exporter: &Exporter) -> (&'static str, &'static str, String) {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET", "/metrics") => ("200 OK", CONTENT_TYPE, exporter.encode()),
        ("GET", _) => ("404 Not Found", "text/plain", "try /metrics\n".into()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "GET /metrics\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(request).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn serves_metrics_and_refuses_the_rest() {
        let exporter = Exporter::new();
        exporter.update(
            super::super::QuorumSample {
                leader_id: 3,
                ..Default::default()
            },
            std::time::Instant::now(),
        );
        let addr = spawn("127.0.0.1:0", exporter).unwrap();
        let ok = get(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains(CONTENT_TYPE));
        assert!(
            ok.contains("\nkafka_server_raft_metrics_current_leader 3\n"),
            "{ok}"
        );
        assert!(ok.ends_with("# EOF\n"));
        let missing = get(addr, b"GET / HTTP/1.1\r\n\r\n").await;
        assert!(missing.starts_with("HTTP/1.1 404 "), "{missing}");
        let post = get(addr, b"POST /metrics HTTP/1.1\r\n\r\n").await;
        assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
        let mut huge = b"GET /metrics HTTP/1.1\r\n".to_vec();
        huge.extend(std::iter::repeat_n(b'a', 3 * MAX_REQUEST_HEAD));
        let mut s = TcpStream::connect(addr).await.unwrap();
        let _ = s.write_all(&huge).await;
        let mut out = String::new();
        let _ = s.read_to_string(&mut out).await;
        assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
    }

    #[test]
    fn a_taken_address_is_an_error() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let err = spawn(&addr, Exporter::new()).unwrap_err();
        assert!(err.to_string().contains(&addr), "{err}");
    }
}
