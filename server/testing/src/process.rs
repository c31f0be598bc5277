//! The real `agentlang-registry` binary as a separate process: started with
//! exactly the environment it is given, its address read from its log, its
//! memory read from `/proc`, stopped with SIGKILL or SIGTERM.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use reqwest::StatusCode;

/// The binary under test: the one Cargo built beside the running test
/// (`target/<profile>/deps/<test>` → `target/<profile>/agentlang-registry`),
/// which it does for the registry's own test targets. Other crates (the
/// end-to-end tests) build it themselves and give its path to the builder.
pub fn default_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let binary = profile_dir.join(format!(
        "agentlang-registry{}",
        std::env::consts::EXE_SUFFIX
    ));
    binary.is_file().then_some(binary)
}

/// One running `agentlang-registry` process.
pub struct Process {
    child: Child,
    /// `http://127.0.0.1:<port>`, from the process's log.
    pub url: String,
    /// The process's log lines, kept for failure messages.
    log: Arc<Mutex<Vec<String>>>,
}

impl Process {
    /// Starts `binary` in `cwd` with exactly `env` (plus `PATH` and an
    /// `info` log, for the address line this waits for), then waits until
    /// `/readyz` answers 200.
    pub async fn start(binary: &Path, cwd: &Path, env: &[(String, String)]) -> Self {
        let mut child = Command::new(binary)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AGENTLANG_REGISTRY_LOG", "info")
            .env("NO_COLOR", "1")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start agentlang-registry");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            // Keeps draining after the address line, so the pipe never fills.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        let url = loop {
            let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) else {
                let _ = child.kill();
                panic!(
                    "the registry did not log its address:\n{}",
                    log.lock().unwrap().join("\n")
                );
            };
            if let Some(url) = listening_url(&line) {
                break url;
            }
        };
        let process = Self { child, url, log };
        process.wait_ready(Duration::from_secs(30)).await;
        process
    }

    async fn wait_ready(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(res) = reqwest::get(format!("{}/readyz", self.url)).await
                && res.status() == StatusCode::OK
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} never became ready:\n{}",
                self.url,
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// SIGKILL: no graceful shutdown, no cleanup. Killing a process that
    /// is already gone does nothing.
    pub fn kill_9(&mut self) {
        let _ = self.child.kill();
        self.child.wait().expect("reap the registry");
    }

    /// SIGTERM: the graceful stop a service manager asks for.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM {}", self.pid());
    }

    /// How the process ended, once it has, within `within`.
    pub async fn exit_status(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("the registry's status") {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `http://host:port` in a `listening on http://...` log line, plain or
/// JSON-formatted.
pub fn listening_url(line: &str) -> Option<String> {
    let start = line.find("listening on http://")? + "listening on ".len();
    let url: String = line[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | '\u{1b}' | ','))
        .collect();
    Some(url)
}

/// A process's `/proc/<pid>/status` field in KiB (`VmRSS`, `VmHWM`...).
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Samples a process's RSS until stopped; the peak is what a test asserts.
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<u64>,
}

impl RssSampler {
    pub fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let mut peak = 0;
            while !flag.load(Ordering::Relaxed) {
                if let Some(kib) = proc_status_kib(pid, "VmRSS") {
                    peak = peak.max(kib);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        });
        Self { stop, handle }
    }

    /// The highest RSS seen, KiB.
    pub fn peak_kib(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("the sampler")
    }
}

#[test]
fn listening_url_is_found_in_plain_and_json_logs() {
    assert_eq!(
        listening_url("2025-01-01T00:00:00Z  INFO agentlang_registry: listening on http://127.0.0.1:41234 address=127.0.0.1:41234").as_deref(),
        Some("http://127.0.0.1:41234")
    );
    assert_eq!(
        listening_url(r#"{"level":"INFO","fields":{"message":"listening on http://127.0.0.1:5000","address":"127.0.0.1:5000"}}"#).as_deref(),
        Some("http://127.0.0.1:5000")
    );
    assert_eq!(listening_url("starting"), None);
}
