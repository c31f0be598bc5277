//! Harness for the end-to-end tests in `tests/`: they drive the real
//! `agentlang` and `agentlang-registry` binaries as a new user would, each
//! test with its own registry (started by the registry's own test harness,
//! `agentlang-registry-testing`, as a process) and its own config folder.
//!
//! Finding the binaries: `env!("CARGO_BIN_EXE_...")` only names binaries of
//! the package under test, and these live in two other packages. So the
//! first test that needs them runs `cargo build -p agentlang -p
//! agentlang-registry` (the same cargo, the same profile) and takes them
//! from the target folder the test executable itself runs from
//! (`target/debug/deps/<test>` → `target/debug/`), which also honours
//! `CARGO_TARGET_DIR`. That keeps `cargo test -p agentlang-e2e` a single
//! command that always tests fresh binaries.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    sync::OnceLock,
};

use tempfile::TempDir;

pub mod mock;

pub use agentlang_registry_testing::{self as support, TestApp};
use support::Backend;

/// Paths of the two binaries under test.
#[derive(Debug)]
pub struct Bins {
    pub cli: PathBuf,
    pub registry: PathBuf,
}

/// Builds the binaries once per test process.
pub fn bins() -> &'static Bins {
    static BINS: OnceLock<Bins> = OnceLock::new();
    BINS.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test knows its own path");
        // target/<profile>/deps/<test-binary>
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test binaries live in target/<profile>/deps")
            .to_path_buf();
        let profile = profile_dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("debug")
            .to_owned();
        let target_dir = profile_dir
            .parent()
            .expect("profile folder has a parent")
            .to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut cmd = Command::new(cargo);
        cmd.args([
            "build",
            "--quiet",
            "-p",
            "agentlang",
            "-p",
            "agentlang-registry",
        ])
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile == "release" {
            cmd.arg("--release");
        }
        let status = cmd
            .status()
            .expect("running cargo build for the binaries under test");
        assert!(
            status.success(),
            "cargo build of agentlang and agentlang-registry failed"
        );
        let bins = Bins {
            cli: profile_dir.join(format!("agentlang{}", std::env::consts::EXE_SUFFIX)),
            registry: profile_dir.join(format!(
                "agentlang-registry{}",
                std::env::consts::EXE_SUFFIX
            )),
        };
        assert!(bins.cli.exists(), "{} was not built", bins.cli.display());
        assert!(
            bins.registry.exists(),
            "{} was not built",
            bins.registry.display()
        );
        bins
    })
}

/// The workspace root, for fixtures under `core/tests/fixtures`.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// A registry for one test, the way every suite starts one: the support
/// harness's process form (the real binary, on SQLite, in a folder of its
/// own), started on a runtime the test process shares.
pub fn start_registry() -> TestApp {
    runtime()
        .block_on(
            TestApp::builder(Backend::Sqlite)
                .process()
                .binary(&bins().registry)
                .build(),
        )
        .expect("SQLite is always there")
}

/// A registry like [`start_registry`]'s, with these environment variables
/// set (trusted publishing: `AGENTLANG_REGISTRY_OIDC_ISSUERS`).
pub fn start_registry_with_env(env: &[(&str, &str)]) -> TestApp {
    let builder = env.iter().fold(
        TestApp::builder(Backend::Sqlite)
            .process()
            .binary(&bins().registry),
        |builder, (key, value)| builder.env(key, *value),
    );
    runtime()
        .block_on(builder.build())
        .expect("SQLite is always there")
}

/// Backdates every version numbered `version` by `days` days in a
/// registry [`start_registry`] started: a release some days old.
pub fn backdate(registry: &TestApp, version: &str, days: i64) {
    runtime().block_on(registry.backdate_versions(version, days));
}

/// Kills a registry [`start_registry`] started and starts it again on the
/// same folder (at another address).
pub fn restart(registry: &mut TestApp) {
    runtime().block_on(registry.restart(&[]));
}

/// The runtime the harness's registries and their clients live on.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

/// A person at a terminal: their own config folder and working folder.
pub struct User {
    pub config: TempDir,
    pub work: TempDir,
    pub registry: String,
}

/// One finished `agentlang` run.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(out: &Output) -> Self {
        Self {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Insists on failure with exactly one `error:` line, and returns it.
    pub fn failure(&self) -> String {
        assert_ne!(
            self.code,
            Some(0),
            "agentlang should have failed:\n{}",
            self.stdout
        );
        let errors: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| l.starts_with("error: "))
            .collect();
        assert_eq!(
            errors.len(),
            1,
            "want one error line, got:\n{}",
            self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        errors[0].trim_start_matches("error: ").to_owned()
    }

    /// Parses stdout as JSON (for `--json` runs).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

impl User {
    pub fn new(registry: &str) -> Self {
        Self {
            config: tempfile::tempdir().expect("config folder"),
            work: tempfile::tempdir().expect("work folder"),
            registry: registry.to_owned(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.work.path().join(rel)
    }

    /// A path under this user's config folder.
    pub fn config_path(&self, rel: &str) -> PathBuf {
        self.config.path().join(rel)
    }

    /// The API token `login` stored for this registry.
    pub fn token(&self) -> String {
        let path = self.config.path().join("credentials.toml");
        let text = std::fs::read_to_string(&path).expect("credentials.toml (log in first)");
        let creds: toml::Table = toml::from_str(&text).expect("credentials.toml is TOML");
        creds["registries"][&self.registry]["token"]
            .as_str()
            .expect("a token for this registry")
            .to_owned()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&bins().cli);
        cmd.args(args)
            .current_dir(self.work.path())
            .env("AGENTLANG_CONFIG_DIR", self.config.path())
            .env("AGENTLANG_REGISTRY", &self.registry)
            .env("NO_COLOR", "1")
            .env_remove("AGENTLANG_TOKEN")
            .env_remove("SOURCE_DATE_EPOCH");
        cmd
    }

    /// Runs with extra environment and standard input.
    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Run {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting agentlang");
        if let Some(mut input) = child.stdin.take() {
            input.write_all(stdin.as_bytes()).expect("writing stdin");
        }
        Run::from(&child.wait_with_output().expect("waiting for agentlang"))
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[], "")
    }

    /// Runs with extra environment, watching the process's peak resident
    /// memory (`VmHWM` in `/proc/<pid>/status`, sampled until it exits);
    /// returns the run and that peak in KiB. A run that has not ended
    /// after two minutes is killed and fails the test: a hang, not a
    /// timing.
    pub fn run_watched(&self, args: &[&str], env: &[(&str, &str)]) -> (Run, u64) {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting agentlang");
        let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut text = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut text);
                }
                text
            })
        };
        let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
        let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
        let status_file = format!("/proc/{}/status", child.id());
        let started = std::time::Instant::now();
        let mut peak_kib = 0;
        let status = loop {
            if let Some(kib) = std::fs::read_to_string(&status_file)
                .ok()
                .and_then(|s| vm_hwm_kib(&s))
            {
                peak_kib = peak_kib.max(kib);
            }
            if let Some(status) = child.try_wait().expect("waiting for agentlang") {
                break status;
            }
            if started.elapsed() > std::time::Duration::from_secs(120) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("agentlang {args:?} did not finish");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let run = Run {
            code: status.code(),
            stdout: String::from_utf8_lossy(&stdout.join().expect("stdout")).into_owned(),
            stderr: String::from_utf8_lossy(&stderr.join().expect("stderr")).into_owned(),
        };
        (run, peak_kib)
    }

    /// Runs and insists on success.
    pub fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert_eq!(
            run.code,
            Some(0),
            "agentlang {args:?} failed:\n{}\n{}",
            run.stdout,
            run.stderr
        );
        run
    }

    /// Runs and insists on failure with exactly one `error:` line.
    pub fn fails(&self, args: &[&str]) -> String {
        self.run(args).failure()
    }

    /// register + login, password on stdin.
    pub fn sign_up(&self, username: &str, password: &str) {
        let stdin = format!("{password}\n");
        let run = self.run_with(
            &["register", "--username", username, "--password-stdin"],
            &[],
            &stdin,
        );
        assert_eq!(run.code, Some(0), "register failed:\n{}", run.stderr);
        let run = self.run_with(
            &["login", "--username", username, "--password-stdin"],
            &[],
            &stdin,
        );
        assert_eq!(run.code, Some(0), "login failed:\n{}", run.stderr);
    }
}

/// `VmHWM: 1234 kB` from a `/proc/<pid>/status`.
fn vm_hwm_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Copies a folder recursively (fixtures into a test's work folder).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("creating the copy");
    for entry in std::fs::read_dir(from).expect("reading the fixture") {
        let entry = entry.expect("fixture entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copying a fixture file");
        }
    }
}

/// Writes a tool directory: tool.yaml and a README.
pub fn write_tool(dir: &Path, tool_yaml: &str) {
    std::fs::create_dir_all(dir).expect("tool folder");
    std::fs::write(dir.join("tool.yaml"), tool_yaml).expect("tool.yaml");
    std::fs::write(
        dir.join("README.md"),
        "# A tool\n\nUsed by the end-to-end tests.\n",
    )
    .expect("README.md");
}

/// Writes an agent directory: `agent_yaml` and a one-section prompt.yaml.
pub fn write_agent(dir: &Path, agent_yaml: &str) {
    std::fs::create_dir_all(dir).expect("agent folder");
    std::fs::write(dir.join("agent.yaml"), agent_yaml).expect("agent.yaml");
    std::fs::write(
        dir.join("prompt.yaml"),
        "version: 2\nrole: system\nsections:\n  - name: task\n    content: Read.\n",
    )
    .expect("prompt.yaml");
}

/// A minimal valid tool.yaml.
pub fn simple_tool(name: &str, version: &str, dependencies: &[(&str, &str)]) -> String {
    let mut yaml = format!(
        "name: {name}\nversion: {version}\ndescription: The {name} tool.\nkind: builtin\nreadme: README.md\ninput_schema:\n  type: object\n  properties:\n    input: {{ type: string }}\n"
    );
    if !dependencies.is_empty() {
        yaml.push_str("dependencies:\n");
        for (n, r) in dependencies {
            yaml.push_str(&format!("  {n}: \"{r}\"\n"));
        }
    }
    yaml
}

/// Signs a user up, makes a signing key and registers it.
pub fn publisher(registry: &TestApp, name: &str) -> User {
    let user = User::new(&registry.url);
    user.sign_up(name, "correct horse battery staple");
    user.ok(&["keygen"]);
    let pubkey = user.config.path().join("signing.pem.pub");
    let run = user
        .ok(&["--json", "keys", "register", pubkey.to_str().unwrap()])
        .json();
    assert_eq!(run["key_id"].as_str().map(str::len), Some(64), "{run}");
    user
}

/// The tools the research-assistant fixture needs: web_search (^1.2.0,
/// which needs web_fetch), web_fetch (~1.0.0), artifacts and sqlite.
pub fn publish_research_tools(user: &User) {
    let fixtures = workspace_root().join("core/tests/fixtures/tools");
    for (dir, fixture) in [
        ("web_fetch", "web_fetch.tool.yaml"),
        ("web_search", "web_search.tool.yaml"),
    ] {
        let yaml = std::fs::read_to_string(fixtures.join(fixture)).unwrap();
        write_tool(&user.path(dir), &yaml);
    }
    write_tool(
        &user.path("artifacts"),
        &simple_tool("artifacts", "0.4.0", &[]),
    );
    write_tool(&user.path("sqlite"), &simple_tool("sqlite", "1.0.0", &[]));
    for dir in ["web_fetch", "artifacts", "sqlite", "web_search"] {
        let run = user.ok(&["--json", "publish", dir]).json();
        assert_eq!(run["kind"], "tool");
        assert!(
            run["url"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{}/tools/", user.registry)),
            "{run}"
        );
    }
}
