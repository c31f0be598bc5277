//! A TCP proxy a test puts between a registry and a backend, to take that
//! backend away, make it hang, or freeze it at a chosen point of a
//! conversation; and a request body that trickles in.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::watch,
};

/// What the proxy does with a connection's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Relay both ways.
    Open,
    /// Keep connections and listener, relay nothing: a backend that hangs.
    Frozen,
    /// Close every connection and refuse new ones: a backend that is gone.
    Cut,
}

/// A proxy on a free loopback port in front of `upstream`. Tests point the
/// registry at [`TcpProxy::address`] and then take the backend away
/// ([`Flow::Cut`]), make it hang ([`Flow::Frozen`]), or freeze it at the
/// moment a client sends a given byte string ([`TcpProxy::freeze_when_sent`]:
/// the matching bytes are held back, so the backend never receives them).
pub struct TcpProxy {
    pub address: String,
    flow: watch::Sender<Flow>,
    trigger: Arc<Mutex<Option<Trigger>>>,
    task: tokio::task::JoinHandle<()>,
}

/// A one-shot freeze.
#[derive(Debug, Clone)]
struct Trigger {
    /// Client bytes that freeze the proxy when seen.
    needle: Vec<u8>,
    /// Whether the matching bytes still reach the backend (only its answer
    /// is held back).
    deliver: bool,
}

impl TcpProxy {
    pub async fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a proxy");
        let address = listener.local_addr().unwrap().to_string();
        let (flow, flows) = watch::channel(Flow::Open);
        let trigger: Arc<Mutex<Option<Trigger>>> = Arc::default();
        let upstream = upstream.to_owned();
        let (flow_tx, shared_trigger) = (flow.clone(), Arc::clone(&trigger));
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                if *flows.borrow() == Flow::Cut {
                    drop(client);
                    continue;
                }
                let (upstream, flows, flow_tx, trigger) = (
                    upstream.clone(),
                    flows.clone(),
                    flow_tx.clone(),
                    Arc::clone(&shared_trigger),
                );
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    relay(client, server, flows, flow_tx, trigger).await;
                });
            }
        });
        Self {
            address,
            flow,
            trigger,
            task,
        }
    }

    pub fn set(&self, flow: Flow) {
        self.flow.send_replace(flow);
    }

    /// Freezes every connection as soon as a client sends `needle`. With
    /// `deliver`, the bytes holding it still reach the backend and only
    /// what comes back is held (the backend acted; the client never hears).
    pub fn freeze_when_sent(&self, needle: &[u8], deliver: bool) {
        *self.trigger.lock().unwrap() = Some(Trigger {
            needle: needle.to_vec(),
            deliver,
        });
    }

    /// Whether a trigger fired.
    pub fn is_frozen(&self) -> bool {
        *self.flow.borrow() == Flow::Frozen
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn relay(
    client: TcpStream,
    server: TcpStream,
    flows: watch::Receiver<Flow>,
    flow_tx: watch::Sender<Flow>,
    trigger: Arc<Mutex<Option<Trigger>>>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let upward = {
        let mut flows = flows.clone();
        async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = tokio::select! {
                    read = client_read.read(&mut buf) => match read { Ok(0) | Err(_) => return, Ok(n) => n },
                    _ = wait_for_cut(&mut flows) => return,
                };
                let chunk = &buf[..n];
                let fired = {
                    let mut slot = trigger.lock().unwrap();
                    match slot.as_ref() {
                        Some(t) if chunk.windows(t.needle.len()).any(|w| w == t.needle) => {
                            slot.take()
                        }
                        _ => None,
                    }
                };
                if let Some(fired) = fired {
                    if fired.deliver && server_write.write_all(chunk).await.is_err() {
                        return;
                    }
                    flow_tx.send_replace(Flow::Frozen);
                    continue;
                }
                if !pass(&mut flows).await || server_write.write_all(chunk).await.is_err() {
                    return;
                }
            }
        }
    };
    let downward = {
        let mut flows = flows.clone();
        async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = tokio::select! {
                    read = server_read.read(&mut buf) => match read { Ok(0) | Err(_) => return, Ok(n) => n },
                    _ = wait_for_cut(&mut flows) => return,
                };
                if !pass(&mut flows).await || client_write.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    };
    // Either side ending (or a cut) ends the connection.
    tokio::select! {
        () = upward => {}
        () = downward => {}
    }
}

/// Waits while frozen; false once cut.
async fn pass(flows: &mut watch::Receiver<Flow>) -> bool {
    loop {
        match *flows.borrow_and_update() {
            Flow::Open => return true,
            Flow::Cut => return false,
            Flow::Frozen => {}
        }
        if flows.changed().await.is_err() {
            return false;
        }
    }
}

async fn wait_for_cut(flows: &mut watch::Receiver<Flow>) {
    loop {
        if *flows.borrow_and_update() == Flow::Cut {
            return;
        }
        if flows.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// `bytes` as a streamed body of 64 KiB chunks, one every 10 ms, with no
/// length; the receiver hears the index of each chunk as it is sent, so a
/// test can act while the server is still reading.
pub fn trickled_body(bytes: &[u8]) -> (reqwest::Body, tokio::sync::mpsc::UnboundedReceiver<usize>) {
    use futures_util::StreamExt;
    let (sent_tx, sent_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let chunks: Vec<bytes::Bytes> = bytes
        .chunks(64 * 1024)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let body = futures_util::stream::iter(chunks.into_iter().enumerate()).then(move |(i, c)| {
        let sent_tx = sent_tx.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let _ = sent_tx.send(i);
            Ok::<_, std::io::Error>(c)
        }
    });
    (reqwest::Body::wrap_stream(body), sent_rx)
}
