//! A scripted stand-in for the registry, for the client behaviours that
//! must hold whatever the real server does: a download whose hash does not
//! match, a key that does not verify, a 409, a resolution conflict, and a
//! hostile registry's answers: endless, stalled or silent. Routes answer
//! canned responses; every request is recorded for assertions.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    sync::{Arc, Mutex},
    thread,
    time::Duration,
};

/// One canned answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    pub delivery: Delivery,
}

/// How a reply's body is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Whole, with its `Content-Length`.
    Whole,
    /// Without a length, the body sent again and again until the client
    /// hangs up.
    Endless,
    /// The head, announcing the body's length, and the first half of the
    /// body; then nothing, the connection held open.
    Stalled,
    /// Nothing: the request is read and never answered.
    Silent,
}

/// How long a stalled or silent reply holds its connection: longer than
/// any client should wait.
const HOLD: Duration = Duration::from_secs(300);

impl Reply {
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self {
            status,
            content_type: "application/json".into(),
            body: value.to_string().into_bytes(),
            delivery: Delivery::Whole,
        }
    }

    pub fn problem(status: u16, title: &str, detail: &str) -> Self {
        Self {
            status,
            content_type: "application/problem+json".into(),
            body: serde_json::json!({ "type": "about:blank", "title": title, "status": status, "detail": detail })
                .to_string()
                .into_bytes(),
            delivery: Delivery::Whole,
        }
    }

    pub fn bytes(body: Vec<u8>) -> Self {
        Self {
            status: 200,
            content_type: "application/octet-stream".into(),
            body,
            delivery: Delivery::Whole,
        }
    }

    /// The same reply, its body repeated without end.
    pub fn endless(self) -> Self {
        assert!(!self.body.is_empty(), "an endless body repeats something");
        Self {
            delivery: Delivery::Endless,
            ..self
        }
    }

    /// The same reply, stalled halfway through its body.
    pub fn stalled(self) -> Self {
        Self {
            delivery: Delivery::Stalled,
            ..self
        }
    }

    /// No reply at all.
    pub fn silent(self) -> Self {
        Self {
            delivery: Delivery::Silent,
            ..self
        }
    }
}

/// A request as the mock saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The query string, without the `?`.
    pub query: String,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

type Routes = Arc<Mutex<HashMap<(String, String), Reply>>>;

pub struct MockRegistry {
    pub url: String,
    routes: Routes,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl MockRegistry {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the mock registry");
        let url = format!("http://{}", listener.local_addr().expect("mock address"));
        let routes: Routes = Arc::default();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (r, s) = (Arc::clone(&routes), Arc::clone(&seen));
        // Detached: the thread ends with the test process.
        thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (r, s) = (Arc::clone(&r), Arc::clone(&s));
                thread::spawn(move || serve(stream, &r, &s));
            }
        });
        Self { url, routes, seen }
    }

    /// Answers `method path` (path without the query) with `reply`.
    pub fn route(&self, method: &str, path: &str, reply: Reply) {
        self.routes
            .lock()
            .expect("routes lock")
            .insert((method.to_owned(), path.to_owned()), reply);
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen lock").clone()
    }
}

fn serve(stream: TcpStream, routes: &Routes, seen: &Arc<Mutex<Vec<Seen>>>) {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_owned(), q.to_owned()),
        None => (target.to_owned(), String::new()),
    };
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let reply = routes
        .lock()
        .expect("routes lock")
        .get(&(method.clone(), path.clone()))
        .cloned()
        .unwrap_or_else(|| {
            Reply::problem(
                404,
                "Not found",
                &format!("no mock route for {method} {path}"),
            )
        });
    let range = headers.get("range").cloned();
    seen.lock().expect("seen lock").push(Seen {
        method,
        path,
        query,
        headers,
        body,
    });
    let mut stream = reader.into_inner();
    let head = |length: Option<usize>| {
        let length = length.map_or_else(String::new, |n| format!("Content-Length: {n}\r\n"));
        format!(
            "HTTP/1.1 {} X\r\nContent-Type: {}\r\n{length}Connection: close\r\n\r\n",
            reply.status, reply.content_type
        )
    };
    // `Range: bytes=N-` on a whole 200 body: 206 with the rest, as the
    // registry answers a resumed download.
    let from = range
        .and_then(|r| {
            r.strip_prefix("bytes=")?
                .strip_suffix('-')?
                .parse::<usize>()
                .ok()
        })
        .filter(|&n| reply.status == 200 && n < reply.body.len());
    match (reply.delivery, from) {
        (Delivery::Whole, Some(from)) => {
            let rest = &reply.body[from..];
            let head = format!(
                "HTTP/1.1 206 X\r\nContent-Type: {}\r\nContent-Length: {}\r\nContent-Range: bytes {from}-{}/{}\r\nConnection: close\r\n\r\n",
                reply.content_type,
                rest.len(),
                reply.body.len() - 1,
                reply.body.len()
            );
            let _ = stream
                .write_all(head.as_bytes())
                .and_then(|()| stream.write_all(rest));
        }
        (Delivery::Whole, None) => {
            let _ = stream
                .write_all(head(Some(reply.body.len())).as_bytes())
                .and_then(|()| stream.write_all(&reply.body));
        }
        (Delivery::Endless, _) => {
            // Until the client hangs up and a write fails.
            if stream.write_all(head(None).as_bytes()).is_ok() {
                while stream.write_all(&reply.body).is_ok() {}
            }
        }
        (Delivery::Stalled, _) => {
            let half = &reply.body[..reply.body.len() / 2];
            let _ = stream
                .write_all(head(Some(reply.body.len())).as_bytes())
                .and_then(|()| stream.write_all(half))
                .and_then(|()| stream.flush());
            thread::sleep(HOLD);
        }
        (Delivery::Silent, _) => thread::sleep(HOLD),
    }
}

impl MockRegistry {
    /// Serves a transparency log of `entries` (fewer than 256): the key,
    /// a checkpoint signed with `key`, the level-0 hash tile and the entry
    /// bundle, as a registry serves them (an entry too long for the
    /// bundle's framing as a placeholder). Returns the checkpoint note.
    pub fn serve_log(&self, key: &agentlang_core::tlog::LogKey, entries: &[Vec<u8>]) -> String {
        self.serve_log_signed_by(key, key, entries)
    }

    /// [`Self::serve_log`] with the checkpoint signed by `signer` while
    /// `/log/key` serves `served`: a forged checkpoint when they differ.
    pub fn serve_log_signed_by(
        &self,
        served: &agentlang_core::tlog::LogKey,
        signer: &agentlang_core::tlog::LogKey,
        entries: &[Vec<u8>],
    ) -> String {
        use agentlang_core::tlog::{Tree, served_entry_bundle, tile_path};
        assert!(entries.len() < 256, "one partial tile per level");
        let mut tree = Tree::default();
        for entry in entries {
            tree.append(entry).expect("append");
        }
        let size = tree.size();
        let note = signer
            .sign_checkpoint(&origin(&self.url), size, tree.root())
            .expect("sign");
        self.route(
            "GET",
            "/log/key",
            Reply::bytes(format!("{}\n", served.verifier_key()).into_bytes()),
        );
        self.route("GET", "/log/checkpoint", Reply::bytes(note.clone()));
        let width = u32::try_from(size).expect("small");
        self.route(
            "GET",
            &format!("/log/{}", tile_path(Some(0), 0, size)),
            Reply::bytes(tree.hash_tile(size, 0, 0, width).expect("tile")),
        );
        self.route(
            "GET",
            &format!("/log/{}", tile_path(None, 0, size)),
            Reply::bytes(served_entry_bundle(entries.iter().map(Vec::as_slice))),
        );
        String::from_utf8(note).expect("a note is text")
    }
}

/// A mock's log origin: `host:port/log`, as the registry's default.
pub fn origin(url: &str) -> String {
    format!("{}/log", url.trim_start_matches("http://"))
}
