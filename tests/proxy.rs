//! A TCP proxy on loopback between a worker and the api: it counts the worker's syncs as
//! they pass on the wire (`POST /v1/nodes/{name}/sync`) and can cut the connection
//! (every open connection dropped, new ones refused) to make a node unreachable while
//! its worker keeps running.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A running proxy; dropped, it stops accepting.
pub struct Proxy {
    /// `http://127.0.0.1:PORT`, to give the worker as `--api`.
    pub url: String,
    syncs: Arc<AtomicU64>,
    cut: Arc<AtomicBool>,
    generation: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const SYNC: &[u8] = b"/sync HTTP/1.1";

impl Proxy {
    /// Forwards connections to `target` (`http://127.0.0.1:PORT`).
    pub async fn start(target: &str) -> Proxy {
        let target = target
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let syncs = Arc::new(AtomicU64::new(0));
        let cut = Arc::new(AtomicBool::new(false));
        let generation = Arc::new(AtomicU64::new(0));
        let (s, c, g) = (syncs.clone(), cut.clone(), generation.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                if c.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target).await else {
                    continue;
                };
                tokio::spawn(relay(client, server, s.clone(), c.clone(), g.clone()));
            }
        });
        Proxy {
            url,
            syncs,
            cut,
            generation,
            task,
        }
    }

    /// Syncs that went through so far.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::SeqCst)
    }

    /// Cuts (`true`: open connections dropped, new ones refused) or restores the link.
    pub fn set_cut(&self, cut: bool) {
        self.cut.store(cut, Ordering::SeqCst);
        if cut {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Copies both ways until either side closes or the link is cut, counting the syncs in
/// the client's bytes (a request line may straddle two reads: the tail of the previous
/// read is kept).
async fn relay(
    mut client: TcpStream,
    mut server: TcpStream,
    syncs: Arc<AtomicU64>,
    cut: Arc<AtomicBool>,
    generation: Arc<AtomicU64>,
) {
    let born = generation.load(Ordering::SeqCst);
    let (mut client_read, mut client_write) = client.split();
    let (mut server_read, mut server_write) = server.split();
    let upstream = async {
        let mut buf = vec![0u8; 16 * 1024];
        let mut tail: Vec<u8> = Vec::new();
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut window = std::mem::take(&mut tail);
            window.extend_from_slice(&buf[..n]);
            let found = window.windows(SYNC.len()).filter(|w| *w == SYNC).count();
            syncs.fetch_add(found as u64, Ordering::SeqCst);
            let keep = window.len().min(SYNC.len() - 1);
            tail = window[window.len() - keep..].to_vec();
            if server_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let downstream = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if client_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let severed = async {
        loop {
            if cut.load(Ordering::SeqCst) && generation.load(Ordering::SeqCst) != born {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    tokio::select! {
        _ = upstream => {}
        _ = downstream => {}
        _ = severed => {}
    }
}
