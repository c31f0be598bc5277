//! A scripted stand-in for the registry, for the client behaviours that
//! must hold whatever the real server does: a download whose hash does not
//! match, a key that does not verify, a 409, a resolution conflict. Routes
//! answer canned responses; every request is recorded for assertions.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    sync::{Arc, Mutex},
    thread,
};

/// One canned answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self {
            status,
            content_type: "application/json".into(),
            body: value.to_string().into_bytes(),
        }
    }

    pub fn problem(status: u16, title: &str, detail: &str) -> Self {
        Self {
            status,
            content_type: "application/problem+json".into(),
            body: serde_json::json!({ "type": "about:blank", "title": title, "status": status, "detail": detail })
                .to_string()
                .into_bytes(),
        }
    }

    pub fn bytes(body: Vec<u8>) -> Self {
        Self {
            status: 200,
            content_type: "application/octet-stream".into(),
            body,
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
    seen.lock().expect("seen lock").push(Seen {
        method,
        path,
        query,
        headers,
        body,
    });
    let mut stream = reader.into_inner();
    let head = format!(
        "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reply.status,
        reply.content_type,
        reply.body.len()
    );
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(&reply.body));
}

impl MockRegistry {
    /// Serves a transparency log of `entries` (fewer than 256): the key,
    /// a checkpoint signed with `key`, the level-0 hash tile and the entry
    /// bundle, as a registry serves them. Returns the checkpoint note.
    pub fn serve_log(&self, key: &agentlang_core::tlog::LogKey, entries: &[Vec<u8>]) -> String {
        use agentlang_core::tlog::{Tree, entry_bundle, tile_path};
        assert!(entries.len() < 256, "one partial tile per level");
        let mut tree = Tree::default();
        for entry in entries {
            tree.append(entry).expect("append");
        }
        let size = tree.size();
        let note = key
            .sign_checkpoint(&origin(&self.url), size, tree.root())
            .expect("sign");
        self.route(
            "GET",
            "/log/key",
            Reply::bytes(format!("{}\n", key.verifier_key()).into_bytes()),
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
            Reply::bytes(entry_bundle(entries.iter().map(Vec::as_slice)).expect("bundle")),
        );
        String::from_utf8(note).expect("a note is text")
    }
}

/// A mock's log origin: `host:port/log`, as the registry's default.
pub fn origin(url: &str) -> String {
    format!("{}/log", url.trim_start_matches("http://"))
}
