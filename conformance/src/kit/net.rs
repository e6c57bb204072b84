//! The kit's sockets: a listener per played replica (the node's requests arrive there, on threads that
//! only read frames and pass them on), and blocking client connections to the node with a timeout on
//! every read. Nothing here interprets a message; every wait is bounded.

use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kraft::wire::frame::{read_frame_blocking, FrameReadError};
use model::types::Id;

/// Largest frame the kit accepts from the node (a Fetch response of the model's few records is tiny).
pub const MAX_FRAME: usize = 1 << 20;

/// A request frame the node sent to a played replica.
pub struct Inbound {
    pub replica: Id,
    pub conn: u64,
    /// The frame payload (without the size prefix), or why the connection failed.
    pub payload: Result<Bytes, String>,
}

type Writers = Arc<Mutex<HashMap<u64, TcpStream>>>;

/// The played replicas' listeners.
pub struct Listeners {
    pub rx: Receiver<Inbound>,
    writers: Writers,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    next_conn: Arc<AtomicU64>,
}

impl Listeners {
    /// Binds one loopback listener per replica (port 0: any free port, else the given port).
    pub fn bind(replicas: &[(Id, u16)]) -> std::io::Result<(Listeners, Vec<(Id, SocketAddr)>)> {
        let (tx, rx) = channel();
        let writers: Writers = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let next_conn = Arc::new(AtomicU64::new(1));
        let mut threads = Vec::new();
        let mut addrs = Vec::new();
        for &(replica, port) in replicas {
            let l = TcpListener::bind(("127.0.0.1", port))?;
            l.set_nonblocking(true)?;
            addrs.push((replica, l.local_addr()?));
            let (tx, writers, stop, next) =
                (tx.clone(), writers.clone(), stop.clone(), next_conn.clone());
            threads.push(std::thread::spawn(move || {
                accept_loop(l, replica, tx, writers, stop, next)
            }));
        }
        Ok((
            Listeners {
                rx,
                writers,
                stop,
                threads,
                next_conn,
            },
            addrs,
        ))
    }

    /// The next inbound frame, or `None` at the deadline.
    pub fn next(&self, deadline: Instant) -> Option<Inbound> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.rx.recv_timeout(left).ok()
    }

    /// Writes a response frame on connection `conn`.
    pub fn reply(&self, conn: u64, frame: &[u8]) -> Result<(), String> {
        let mut w = self.writers.lock().unwrap_or_else(|p| p.into_inner());
        let s = w
            .get_mut(&conn)
            .ok_or_else(|| format!("connection {conn} is gone"))?;
        s.write_all(frame).map_err(|e| format!("write: {e}"))
    }
}

impl Listeners {
    /// Shuts every connection down (the node under test was killed) and returns the first
    /// connection id of the node's next life: frames of older connections are ignored.
    pub fn close_all(&self) -> u64 {
        for (_, s) in self
            .writers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
        {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        self.next_conn.load(Ordering::Relaxed)
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.close_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn accept_loop(
    l: TcpListener,
    replica: Id,
    tx: Sender<Inbound>,
    writers: Writers,
    stop: Arc<AtomicBool>,
    next: Arc<AtomicU64>,
) {
    while !stop.load(Ordering::Relaxed) {
        match l.accept() {
            Ok((s, _)) => {
                let conn = next.fetch_add(1, Ordering::Relaxed);
                let _ = s.set_nonblocking(false);
                let _ = s.set_nodelay(true);
                let Ok(w) = s.try_clone() else { continue };
                writers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(conn, w);
                let tx = tx.clone();
                // Reader threads end when the connection closes (the node stops, or the kit shuts
                // the sockets down when it is dropped).
                std::thread::spawn(move || read_loop(s, replica, conn, tx));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn read_loop(mut s: TcpStream, replica: Id, conn: u64, tx: Sender<Inbound>) {
    loop {
        let payload = match read_frame_blocking(&mut s, MAX_FRAME) {
            Ok(p) => Ok(p),
            Err(FrameReadError::Closed) => return,
            Err(e) => Err(e.to_string()),
        };
        let failed = payload.is_err();
        if tx
            .send(Inbound {
                replica,
                conn,
                payload,
            })
            .is_err()
            || failed
        {
            return;
        }
    }
}

/// A client connection to the node under test.
pub struct NodeConn {
    stream: TcpStream,
    pub timeout: Duration,
}

impl NodeConn {
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<NodeConn, String> {
        let stream = TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| format!("connect {addr}: {e}"))?;
        stream
            .set_read_timeout(Some(timeout))
            .and_then(|_| stream.set_write_timeout(Some(timeout)))
            .and_then(|_| stream.set_nodelay(true))
            .map_err(|e| format!("socket options: {e}"))?;
        Ok(NodeConn { stream, timeout })
    }

    pub fn send(&mut self, frame: &[u8]) -> Result<(), String> {
        self.stream
            .write_all(frame)
            .map_err(|e| format!("write: {e}"))
    }

    /// The next response frame's payload, waiting at most the connection's timeout.
    pub fn recv(&mut self) -> Result<Bytes, String> {
        match read_frame_blocking(&mut self.stream, MAX_FRAME) {
            Ok(p) => Ok(p),
            Err(FrameReadError::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(format!("no response within {:?}", self.timeout))
            }
            Err(e) => Err(e.to_string()),
        }
    }
}
