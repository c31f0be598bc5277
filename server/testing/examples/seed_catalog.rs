//! Benchmark support for `deploy/bench/run.sh`: seeds a registry's storage
//! with a realistic catalog, and drives publish load over HTTP.
//!
//! ```text
//! seed_catalog seed OUT_DIR [--tools 10000] [--agents 1000] [--real 100] [--concurrency 2]
//!     [--placeholder-blobs]
//! seed_catalog publish URL KEY_PEM --size BYTES --count N --concurrency C --prefix NAME
//!     [--username bench] [--password bench-password] [--ceiling-dir DIR]
//! seed_catalog resolve URL FILE [--concurrency 16]
//! seed_catalog solve FILE [--tools 10000]
//! ```
//!
//! `seed` reads the registry's own configuration (`AGENTLANG_REGISTRY_*`, so
//! it writes exactly where the server will read) and records every version
//! through `Db::publish_versions`, the function the publish endpoint's
//! batches commit with, 2,000 versions a transaction, after putting the
//! blobs: 2,000,000 HTTP publishes would take too long.
//! The catalog is the tiered one of `agentlang-core`'s `bench_resolve`
//! example (10,000 tools x 20 versions, majors 1-4 x minors 0-4, each version
//! depending on 0-3 tools of the next tier under mixed `^`, `~` and range
//! requirements), so resolution over HTTP compares with resolution in
//! memory. The first `--real` tools (all 20 versions each) are real signed
//! `.tool` containers built with `agentlang_core::container::build`; the rest
//! record the digest of a small content-addressed placeholder (the text
//! `agentlang placeholder tool/<name>@<version>`). Placeholder blobs are
//! stored only with `--placeholder-blobs` (200,000 small objects take about
//! 800 MiB of filesystem blocks); without it, downloading a placeholder
//! version fails, and the benchmark downloads from the real sample.
//! Tool specs are `parse_tool` of a generated tool.yaml and agent specs
//! `parse_agent` of a generated agent.yaml, serialized as the publish
//! endpoint stores them. Agents (`agent0` ...) each require 10 distinct
//! top-tier tools; `agent0`'s are the benchmark's resolve request.
//!
//! It also creates the accounts `seeder` (owner of the catalog) and `bench`
//! (password `bench-password`) with a registered signing key written to
//! `OUT_DIR/bench-key.pem`, and writes `OUT_DIR/resolve.json` (the 10-tool
//! request of `bench_resolve`'s typical case), `OUT_DIR/resolve-many.json`
//! (every agent's request) and `OUT_DIR/targets.env` (paths for the read
//! benchmarks).
//!
//! `resolve` posts each request of such a file once, so every resolution
//! is one the registry has not cached, and prints req/s and p50/p99.
//! `OUT_DIR/resolve-warm.json` holds another 1,000 such requests, for a
//! pass that warms the registry's index cache first. `solve` resolves the
//! requests of such a file with the core resolver over the same catalog in
//! memory and prints the median: what the HTTP resolves compare with.
//!
//! `publish` builds `--count` signed tool containers of `--size` bytes
//! (incompressible payload) in memory, then posts them with `--concurrency`
//! requests in flight and prints one JSON line: bytes, seconds, MB/s and the
//! status counts. With `--ceiling-dir` it first measures the machine's
//! ceiling for the same bytes: SHA-256 of each container plus writing it to
//! a file in that folder, one thread (the files stay; remove the folder
//! after the run).

/// The server's allocator, so the core resolver's median (`solve`) is
/// measured as the server runs it (glibc's malloc is much slower at it:
/// `deploy/bench/RESULTS.md`, Decisions).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::{
    collections::BTreeMap,
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::Instant,
};

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    agent::parse_agent,
    container::{self, BuildInput, Created, Limits},
    signing::SecretKey,
    tlog::LogOp,
    tool::parse_tool,
};
use agentlang_core::{Username, digest::Sha256Digest};
use agentlang_registry::config::Config;
use anyhow::{Context, bail};
use app::{
    packages::ContainerExtras,
    passwords::{Password, hash_password},
    tlog,
};
use bytes::Bytes;
use futures_util::{StreamExt, stream};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use store::{
    Blobs, Db,
    packages::{DependencyEdge, NewVersion},
};

const PACKAGES_DEFAULT: u64 = 10_000;
const TIERS: u64 = 4;
/// Seconds since the epoch written into every seeded manifest, so two seeds
/// of the same catalog store the same bytes.
const CREATED: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z
const BENCH_PASSWORD: &str = "bench-password";

/// Versions per seeding transaction: 100 tools' 20 versions, written as 20
/// rounds of 100 publishes each.
const SEED_BATCH: usize = 2_000;

/// Words for descriptions and keywords, so search has realistic hit rates.
const WORDS: &[&str] = &[
    "search",
    "web",
    "fetch",
    "pdf",
    "email",
    "calendar",
    "github",
    "slack",
    "sql",
    "csv",
    "image",
    "audio",
    "video",
    "translate",
    "summarize",
    "code",
    "review",
    "deploy",
    "monitor",
    "weather",
    "finance",
    "crm",
    "invoice",
    "maps",
    "shell",
    "browser",
    "vector",
    "embedding",
    "scrape",
    "notify",
];

/// splitmix64, as in `bench_resolve`: every run seeds the same catalog.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One tool version of the catalog.
struct ToolVersion {
    package: u64,
    version: String,
    /// Dependency name to requirement, as written in tool.yaml.
    dependencies: BTreeMap<String, String>,
}

/// The tiered catalog of `bench_resolve::typical_registry(true)`, drawn in
/// the same order from the same seed.
fn tool_catalog(packages: u64) -> Vec<ToolVersion> {
    let tier = packages / TIERS;
    let mut rng = Rng(42);
    let mut out = Vec::with_capacity(usize::try_from(packages * 20).unwrap_or(0));
    for p in 0..packages {
        let next_tier = (p / tier + 1) * tier;
        for major in 1..=4 {
            for minor in 0..5 {
                let mut dependencies = BTreeMap::new();
                for _ in 0..rng.below(4) {
                    let target = next_tier + rng.below(tier);
                    if target < packages {
                        let requirement = match rng.below(3) {
                            0 => format!("^{}", 1 + rng.below(4)),
                            1 => format!(">={}.{}, <5", 1 + rng.below(4), rng.below(5)),
                            _ => format!("~{}.{}", 1 + rng.below(4), rng.below(5)),
                        };
                        // A later draw for the same target wins, as in the
                        // in-memory source (one edge per name).
                        dependencies.insert(format!("tool{target}"), requirement);
                    }
                }
                out.push(ToolVersion {
                    package: p,
                    version: format!("{major}.{minor}.0"),
                    dependencies,
                });
            }
        }
    }
    out
}

/// The draws of `bench_resolve::typical_request(true)` (top-tier tools, a
/// random major each), continued until ten distinct tools are required:
/// its ten draws name only nine.
fn typical_request(packages: u64) -> BTreeMap<String, String> {
    let mut rng = Rng(7);
    let tier = packages / TIERS;
    let mut tools = BTreeMap::new();
    while tools.len() < 10 {
        let p = rng.below(tier);
        let requirement = format!("^{}", 1 + rng.below(4));
        tools.entry(format!("tool{p}")).or_insert(requirement);
    }
    tools
}

fn words<const N: usize>(seed: u64) -> [&'static str; N] {
    let mut rng = Rng(seed);
    std::array::from_fn(|_| WORDS[usize::try_from(rng.below(WORDS.len() as u64)).unwrap_or(0)])
}

fn tool_yaml(t: &ToolVersion) -> String {
    let [a, b, c] = words(t.package);
    let mut yaml = format!(
        "name: tool{p}\nversion: {v}\ndescription: {a} and {b} for agents that {c} (tool {p})\n\
         kind: http\nreadme: README.md\ninput_schema:\n  type: object\n  properties:\n    \
         query: {{type: string}}\n  required: [query]\npermissions: [network]\n",
        p = t.package,
        v = t.version,
    );
    if !t.dependencies.is_empty() {
        yaml.push_str("dependencies:\n");
        for (name, requirement) in &t.dependencies {
            yaml.push_str(&format!("  {name}: \"{requirement}\"\n"));
        }
    }
    yaml
}

fn agent_yaml(a: u64, tools: &BTreeMap<String, String>) -> String {
    let [w1, w2] = words(1_000_000 + a);
    let mut yaml = format!(
        "name: agent{a}\nversion: 1.0.0\ntitle: Agent {a}\ndescription: |\n  \
         An assistant for {w1} and {w2} work, built on ten registry tools.\n\
         developer: bench\ncategory: Productivity\nmodels:\n  claude-sonnet-4:\n    \
         provider: anthropic\n    options:\n      temperature: 0.3\ntools:\n"
    );
    for (name, requirement) in tools {
        yaml.push_str(&format!(
            "  - name: {name}\n    version: \"{requirement}\"\n"
        ));
    }
    yaml.push_str("permissions:\n  required: [network]\n");
    yaml
}

fn parse_flag<T: std::str::FromStr>(args: &[String], flag: &str, default: T) -> anyhow::Result<T>
where
    T::Err: std::fmt::Display,
{
    match args.iter().position(|a| a == flag) {
        None => Ok(default),
        Some(i) => {
            let value = args
                .get(i + 1)
                .with_context(|| format!("{flag} needs a value"))?;
            value
                .parse()
                .map_err(|e| anyhow::anyhow!("{flag} {value:?}: {e}"))
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A signed tool container: tool.yaml, README.md and `extra` members.
fn tool_container(
    key: &SecretKey,
    yaml: &str,
    extra: &[(&str, Vec<u8>)],
) -> anyhow::Result<Vec<u8>> {
    let spec = parse_tool(yaml.as_bytes())
        .map_err(|d| anyhow::anyhow!("generated tool.yaml is invalid: {d:?}"))?;
    let mut tree = SourceTree::new();
    tree.insert(MemberPath::new("tool.yaml")?, yaml.as_bytes().to_vec());
    tree.insert(
        MemberPath::new("README.md")?,
        format!("# {}\n\n{}\n", spec.name(), spec.description()).into_bytes(),
    );
    for (path, bytes) in extra {
        tree.insert(MemberPath::new(*path)?, bytes.clone());
    }
    Ok(container::build(&BuildInput {
        tree: &tree,
        kind: Kind::Tool,
        name: spec.name(),
        version: spec.version(),
        created: Created::from_unix_seconds(CREATED)?,
        signing_key: key,
        prompt_key: None,
    })?)
}

struct Seeder {
    db: Db,
    blobs: Blobs,
    publisher: i64,
    key: SecretKey,
    key_id: agentlang_core::signing::KeyId,
    /// Whether placeholder blobs are stored too (one small object each).
    placeholder_blobs: bool,
}

/// What one version needs to be recorded, owned so it can cross tasks.
struct Record {
    kind: Kind,
    name: PackageName,
    version: Version,
    blob: Bytes,
    manifest: Value,
    spec: Value,
    signed: bool,
    dependencies: Vec<DependencyEdge>,
    description: String,
    keywords: Vec<String>,
    /// What pages show from the container, as publish stores it.
    extras: Value,
}

impl Seeder {
    /// Records a batch of versions in one transaction
    /// (`Db::publish_versions`, what a burst of publishes commits with),
    /// after putting the blobs that are stored.
    async fn record_batch(&self, records: Vec<Record>) -> anyhow::Result<()> {
        let mut news = Vec::with_capacity(records.len());
        for r in records {
            let sha256 = if r.signed || self.placeholder_blobs {
                self.blobs.put(r.blob.clone()).await?
            } else {
                Sha256Digest::of(&r.blob)
            };
            let log_entry = tlog::publish_entry(
                r.kind,
                &r.name,
                &r.version,
                &sha256.to_hex(),
                r.signed.then_some(self.key_id.as_str()),
                "seeder",
            );
            news.push(NewVersion {
                publisher_identity: None,
                provenance: None,
                kind: r.kind,
                name: r.name,
                version: r.version,
                sha256,
                size: r.blob.len() as u64,
                signer_key_id: r.signed.then(|| self.key_id.clone()),
                manifest: r.manifest,
                spec: r.spec,
                lockfile: None,
                quality_report: None,
                extras: Some(r.extras),
                max_risk: None,
                prompt_mode: None,
                prompt_key_id: None,
                dependencies: r.dependencies,
                description: r.description,
                keywords: r.keywords,
                publisher: self.publisher,
                log_entry,
            });
        }
        let batch: Vec<&NewVersion> = news.iter().collect();
        for (new, result) in news.iter().zip(self.db.publish_versions(&batch).await) {
            result
                .with_context(|| format!("recording {} {}@{}", new.kind, new.name, new.version))?;
        }
        Ok(())
    }

    fn tool_record(&self, t: &ToolVersion, real: bool) -> anyhow::Result<Record> {
        let yaml = tool_yaml(t);
        let spec = parse_tool(yaml.as_bytes())
            .map_err(|d| anyhow::anyhow!("generated tool.yaml is invalid: {d:?}"))?;
        let (blob, manifest, extras) = if real {
            let bytes = tool_container(&self.key, &yaml, &[])?;
            let read = container::read(bytes.as_slice(), &Limits::default())?;
            let manifest: Value = serde_json::from_slice(read.manifest_bytes())?;
            let extras = ContainerExtras::of(Kind::Tool, &read).to_stored();
            (Bytes::from(bytes), manifest, extras)
        } else {
            let text = format!(
                "agentlang placeholder tool/{}@{}\n",
                spec.name(),
                spec.version()
            );
            let manifest = json!({
                "format": "agentlang.container/1",
                "kind": "tool",
                "name": spec.name().as_str(),
                "version": spec.version().to_string(),
                "created": "2026-01-01T00:00:00Z",
                "signer": self.key_id,
                "files": [{"path": "tool.yaml", "size": yaml.len(), "sha256": sha256_hex(yaml.as_bytes())}],
            });
            let extras = ContainerExtras::default().to_stored();
            (Bytes::from(text), manifest, extras)
        };
        let dependencies = spec
            .dependency_requirements()
            .into_iter()
            .map(|(name, requirement)| DependencyEdge {
                kind: Kind::Tool,
                name,
                requirement,
            })
            .collect();
        Ok(Record {
            kind: Kind::Tool,
            name: spec.name().clone(),
            version: spec.version().clone(),
            description: spec.description().to_owned(),
            keywords: words::<3>(t.package)
                .iter()
                .map(|w| (*w).to_owned())
                .collect(),
            spec: serde_json::to_value(&spec)?,
            manifest,
            blob,
            signed: real,
            dependencies,
            extras,
        })
    }

    fn agent_record(&self, a: u64, tools: &BTreeMap<String, String>) -> anyhow::Result<Record> {
        let yaml = agent_yaml(a, tools);
        let spec = parse_agent(yaml.as_bytes())
            .map_err(|d| anyhow::anyhow!("generated agent.yaml is invalid: {d:?}"))?;
        let name = PackageName::new(format!("agent{a}"))?;
        let version = Version::parse("1.0.0")?;
        let text = format!("agentlang placeholder agent/{name}@{version}\n");
        let manifest = json!({
            "format": "agentlang.container/1",
            "kind": "agent",
            "name": name.as_str(),
            "version": "1.0.0",
            "created": "2026-01-01T00:00:00Z",
            "signer": self.key_id,
            "files": [{"path": "agent.yaml", "size": yaml.len(), "sha256": sha256_hex(yaml.as_bytes())}],
        });
        let dependencies = tools
            .iter()
            .map(|(tool, requirement)| {
                Ok(DependencyEdge {
                    kind: Kind::Tool,
                    name: PackageName::new(tool.as_str())?,
                    requirement: requirement.parse()?,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Record {
            kind: Kind::Agent,
            name,
            version,
            description: spec.description.clone().unwrap_or_default(),
            keywords: vec!["bench".to_owned()],
            spec: serde_json::to_value(&spec)?,
            manifest,
            blob: Bytes::from(text),
            signed: false,
            dependencies,
            extras: ContainerExtras::default().to_stored(),
        })
    }
}

async fn create_account(db: &Db, name: &str, password: &str) -> anyhow::Result<i64> {
    let hash = hash_password(&Password::parse(password).map_err(anyhow::Error::msg)?)?;
    let account = db
        .create_account(
            &Username::parse(name).map_err(anyhow::Error::msg)?,
            &hash,
            false,
        )
        .await
        .with_context(|| format!("creating the account {name} (is the catalog seeded already?)"))?;
    Ok(account.id)
}

async fn register_key(db: &Db, account: i64) -> anyhow::Result<SecretKey> {
    let key = SecretKey::generate()?;
    let public = key.public_key();
    db.insert_signing_key(
        &public.key_id(),
        account,
        &public.to_spki_pem(),
        &tlog::key_entry(LogOp::KeyAdd, &public.key_id(), "seed"),
    )
    .await?;
    Ok(key)
}

async fn seed(args: &[String]) -> anyhow::Result<()> {
    let out = PathBuf::from(args.first().context("seed needs OUT_DIR")?);
    let packages: u64 = parse_flag(args, "--tools", PACKAGES_DEFAULT)?;
    let agents: u64 = parse_flag(args, "--agents", 1000)?;
    let real: u64 = parse_flag(args, "--real", 100)?;
    let concurrency: usize = parse_flag(args, "--concurrency", 2)?;
    let placeholder_blobs = args.iter().any(|a| a == "--placeholder-blobs");
    if packages < TIERS * 10 {
        bail!("--tools must be at least {}", TIERS * 10);
    }
    std::fs::create_dir_all(&out)?;

    let config = Config::from_env()?;
    // One multi-threaded runtime.
    let db = Db::connect(
        &config.effective_database_url(),
        config.limits.database_timeout,
        1,
    )
    .await?;
    let blobs = Blobs::open(
        &config.effective_storage_url(),
        &config.s3,
        config.limits.storage_timeout,
    )?;
    let started = Instant::now();

    let publisher = create_account(&db, "seeder", "seeder-password").await?;
    let key = register_key(&db, publisher).await?;
    let bench = create_account(&db, "bench", BENCH_PASSWORD).await?;
    let bench_key = register_key(&db, bench).await?;
    write_private(
        &out.join("bench-key.pem"),
        bench_key.to_pkcs8_pem().as_bytes(),
    )?;
    let key_id = key.public_key().key_id();
    let seeder = Arc::new(Seeder {
        db: db.clone(),
        blobs,
        publisher,
        key,
        key_id,
        placeholder_blobs,
    });

    let catalog = Arc::new(tool_catalog(packages));
    let total = catalog.len();
    let edges: usize = catalog.iter().map(|t| t.dependencies.len()).sum();
    let mut done = 0usize;
    // Batches built on blocking threads while others are written: the
    // records' YAML and JSON are most of the CPU, the writes most of the
    // time.
    let mut results = stream::iter((0..total).step_by(SEED_BATCH).map(|start| {
        let seeder = seeder.clone();
        let catalog = catalog.clone();
        async move {
            let end = (start + SEED_BATCH).min(total);
            let builder = seeder.clone();
            let records = tokio::task::spawn_blocking(move || {
                catalog[start..end]
                    .iter()
                    .map(|t| builder.tool_record(t, t.package < real))
                    .collect::<anyhow::Result<Vec<_>>>()
            })
            .await??;
            seeder.record_batch(records).await?;
            anyhow::Ok(end - start)
        }
    }))
    .buffer_unordered(concurrency);
    while let Some(result) = results.next().await {
        let before = done;
        done += result?;
        if done / 100_000 != before / 100_000 {
            db.refresh_statistics().await?;
            eprintln!(
                "seeded {done}/{total} tool versions in {:.1}s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    let tools_secs = started.elapsed().as_secs_f64();

    let mut rng = Rng(99);
    let tier = packages / TIERS;
    let agent_tools: Vec<BTreeMap<String, String>> = (0..agents)
        .map(|a| {
            if a == 0 {
                // agent0 is the benchmark's resolve request.
                typical_request(packages)
            } else {
                let mut tools = BTreeMap::new();
                while tools.len() < 10 {
                    let p = rng.below(tier);
                    let requirement = format!("^{}", 1 + rng.below(4));
                    tools.entry(format!("tool{p}")).or_insert(requirement);
                }
                tools
            }
        })
        .collect();
    let mut results = stream::iter(
        agent_tools
            .chunks(SEED_BATCH)
            .enumerate()
            .map(|(c, chunk)| {
                let seeder = seeder.clone();
                async move {
                    let records = chunk
                        .iter()
                        .enumerate()
                        .map(|(i, tools)| seeder.agent_record((c * SEED_BATCH + i) as u64, tools))
                        .collect::<anyhow::Result<Vec<_>>>()?;
                    seeder.record_batch(records).await
                }
            }),
    )
    .buffer_unordered(concurrency);
    while let Some(result) = results.next().await {
        result?;
    }
    // The server plans its reads from these.
    db.refresh_statistics().await?;
    let secs = started.elapsed().as_secs_f64();

    // Another 1,000 agents' requests, published nowhere: a pass over them
    // warms the registry's index cache before the first-time resolves of
    // `resolve-many.json` are measured.
    let mut rng = Rng(2027);
    let warm_requests: Vec<Value> = (0..agents)
        .map(|_| {
            let mut tools = BTreeMap::new();
            while tools.len() < 10 {
                let p = rng.below(tier);
                let requirement = format!("^{}", 1 + rng.below(4));
                tools.entry(format!("tool{p}")).or_insert(requirement);
            }
            json!({ "tools": tools })
        })
        .collect();
    std::fs::write(
        out.join("resolve-warm.json"),
        serde_json::to_vec(&warm_requests)?,
    )?;
    let request = json!({ "tools": typical_request(packages) });
    std::fs::write(out.join("resolve.json"), serde_json::to_vec(&request)?)?;
    // Every agent's request, for resolves that miss the resolution cache.
    let requests: Vec<Value> = agent_tools
        .iter()
        .map(|tools| json!({ "tools": tools }))
        .collect();
    std::fs::write(
        out.join("resolve-many.json"),
        serde_json::to_vec(&requests)?,
    )?;
    let [q] = words(0);
    std::fs::write(
        out.join("targets.env"),
        format!(
            "DOWNLOAD_PATH=/api/v1/tools/tool0/4.4.0/download\n\
             VERSION_PATH=/api/v1/tools/tool0/4.4.0\n\
             INDEX_PATH=/api/v1/index/tools/tool{tier}\n\
             SEARCH_PATH=/api/v1/search?q={q}\n\
             AGENT_PAGE_PATH=/agents/agent0\n\
             BENCH_KEY={}\n",
            out.join("bench-key.pem").display()
        ),
    )?;
    println!(
        "{}",
        json!({
            "tool_versions": total,
            "tools": packages,
            "dependency_edges": edges,
            "agents": agents,
            "real_containers": real.min(packages) * 20,
            "tools_seconds": (tools_secs * 10.0).round() / 10.0,
            "seconds": (secs * 10.0).round() / 10.0,
            "backend": db.backend(),
            "log_entries": db.log_entry_count().await?,
        })
    );
    db.close().await;
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    Ok(())
}

/// Incompressible bytes (splitmix64), so the gzip'd container is as large as
/// its payload.
fn payload(seed: u64, size: usize) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(size + 8);
    while out.len() < size {
        out.extend_from_slice(&rng.next().to_le_bytes());
    }
    out.truncate(size);
    out
}

async fn publish(args: &[String]) -> anyhow::Result<()> {
    let url = args
        .first()
        .context("publish needs URL")?
        .trim_end_matches('/');
    let key_path = args.get(1).context("publish needs KEY_PEM")?;
    let size: usize = parse_flag(args, "--size", 1024 * 1024)?;
    let count: usize = parse_flag(args, "--count", 64)?;
    let concurrency: usize = parse_flag(args, "--concurrency", 1)?;
    let prefix: String = parse_flag(args, "--prefix", "bench_pub".to_owned())?;
    let username: String = parse_flag(args, "--username", "bench".to_owned())?;
    let password: String = parse_flag(args, "--password", BENCH_PASSWORD.to_owned())?;
    let ceiling_dir: Option<PathBuf> = match args.iter().position(|a| a == "--ceiling-dir") {
        Some(i) => Some(PathBuf::from(
            args.get(i + 1).context("--ceiling-dir needs a value")?,
        )),
        None => None,
    };
    let key = SecretKey::from_pkcs8_pem(&std::fs::read_to_string(key_path)?)?;

    let containers: Vec<Bytes> = (0..count)
        .map(|i| {
            let yaml = format!(
                "name: {prefix}{i}\nversion: 1.0.0\ndescription: publish benchmark\n\
                 kind: http\ninput_schema: {{type: object}}\n"
            );
            tool_container(
                &key,
                &yaml,
                &[("assets/payload.bin", payload(i as u64, size))],
            )
            .map(Bytes::from)
        })
        .collect::<anyhow::Result<_>>()?;
    let bytes: usize = containers.iter().map(Bytes::len).sum();

    let (ceiling, verify_floor) = match &ceiling_dir {
        Some(dir) => (
            Some(measure_ceiling(dir, &containers)?),
            Some(measure_verify_floor(dir, &containers)?),
        ),
        None => (None, None),
    };

    let client = reqwest::Client::new();
    let res = client
        .post(format!("{url}/api/v1/tokens"))
        .json(&json!({"username": username, "password": password, "name": prefix, "scopes": ["publish"]}))
        .send()
        .await?;
    if !res.status().is_success() {
        bail!("token request: {} {}", res.status(), res.text().await?);
    }
    let token = res.json::<Value>().await?["token"]
        .as_str()
        .context("token response without token")?
        .to_owned();

    let started = Instant::now();
    let statuses: Vec<u16> = stream::iter(containers.into_iter().map(|body| {
        let client = client.clone();
        let token = token.clone();
        async move {
            let response = client
                .post(format!("{url}/api/v1/publish"))
                .bearer_auth(token)
                .header("content-type", "application/octet-stream")
                .body(body)
                .send()
                .await;
            status_after_body(response).await
        }
    }))
    .buffer_unordered(concurrency)
    .collect()
    .await;
    let secs = started.elapsed().as_secs_f64();
    let mut counts: BTreeMap<u16, usize> = BTreeMap::new();
    for s in statuses {
        *counts.entry(s).or_default() += 1;
    }
    let mb_per_s = bytes as f64 / 1e6 / secs;
    println!(
        "{}",
        json!({
            "count": count,
            "size": size,
            "concurrency": concurrency,
            "bytes": bytes,
            "seconds": secs,
            "mb_per_s": mb_per_s,
            "publishes_per_s": count as f64 / secs,
            "statuses": counts,
            "ceiling_mb_per_s": ceiling,
            "verify_floor_mb_per_s": verify_floor,
        })
    );
    Ok(())
}

/// Posts each request of a JSON array once (`resolve URL FILE
/// [--concurrency N]`): resolutions the registry has not cached, since no
/// two agents ask for the same tools. Prints req/s and latency percentiles.
async fn resolve_each(args: &[String]) -> anyhow::Result<()> {
    let url = args
        .first()
        .context("resolve needs URL")?
        .trim_end_matches('/');
    let file = args.get(1).context("resolve needs FILE")?;
    let concurrency: usize = parse_flag(args, "--concurrency", 16)?;
    // Serialized before the clock starts: the client shares the cores with
    // the server, so what it does per request is taken from the server.
    let bodies: Vec<Bytes> = serde_json::from_slice::<Vec<Value>>(&std::fs::read(file)?)?
        .iter()
        .map(|body| serde_json::to_vec(body).map(Bytes::from))
        .collect::<Result<_, _>>()?;
    let endpoint = reqwest::Url::parse(&format!("{url}/api/v1/resolve"))?;
    let client = reqwest::Client::new();
    let started = Instant::now();
    let results: Vec<(u16, f64)> = stream::iter(bodies.into_iter().map(|body| {
        let (client, endpoint) = (client.clone(), endpoint.clone());
        async move {
            let t0 = Instant::now();
            let response = client
                .post(endpoint)
                .header("content-type", "application/json")
                .header("accept", "application/json")
                .body(body)
                .send()
                .await;
            let status = status_after_body(response).await;
            (status, t0.elapsed().as_secs_f64() * 1000.0)
        }
    }))
    .buffer_unordered(concurrency)
    .collect()
    .await;
    let secs = started.elapsed().as_secs_f64();
    let mut latencies: Vec<f64> = results.iter().map(|(_, ms)| *ms).collect();
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize];
    let mut counts: BTreeMap<u16, usize> = BTreeMap::new();
    for (s, _) in &results {
        *counts.entry(*s).or_default() += 1;
    }
    println!(
        "{}",
        json!({
            "count": results.len(),
            "concurrency": concurrency,
            "rps": results.len() as f64 / secs,
            "p50_ms": pct(0.5),
            "p99_ms": pct(0.99),
            "statuses": counts,
        })
    );
    Ok(())
}

/// A response's status once its whole body has arrived (0 when either
/// failed): a request is answered when its body is, so its latency counts
/// the body's transfer.
async fn status_after_body(response: reqwest::Result<reqwest::Response>) -> u16 {
    match response {
        Ok(r) => {
            let status = r.status().as_u16();
            if r.bytes().await.is_ok() { status } else { 0 }
        }
        Err(_) => 0,
    }
}

/// The core resolver alone over the same catalog and requests, in memory
/// (`solve FILE [--tools 10000]`): each request of FILE resolved once, one
/// thread. Prints the median and p99 in milliseconds, the floor the HTTP
/// resolves of that file are compared with.
fn solve_each(args: &[String]) -> anyhow::Result<()> {
    use agentlang_core::{
        digest::Sha256Digest,
        resolve::{Cancel, MemorySource, Request, VersionEntry, resolve},
    };
    let file = args.first().context("solve needs FILE")?;
    let packages: u64 = parse_flag(args, "--tools", PACKAGES_DEFAULT)?;
    let mut source = MemorySource::new();
    for t in tool_catalog(packages) {
        let version = Version::parse(&t.version)?;
        let dependencies = t
            .dependencies
            .iter()
            .map(|(name, req)| Ok((PackageName::new(name.as_str())?, req.parse()?)))
            .collect::<anyhow::Result<_>>()?;
        source.add_version(
            &PackageName::new(format!("tool{}", t.package))?,
            VersionEntry {
                hash: Sha256Digest::of(t.version.as_bytes()),
                version,
                yanked: false,
                dependencies,
                published_at: 0,
                log_index: None,
            },
        );
    }
    let requests: Vec<Value> = serde_json::from_slice(&std::fs::read(file)?)?;
    let mut times = Vec::with_capacity(requests.len());
    let mut failed = 0usize;
    for body in &requests {
        let requirements = body["tools"]
            .as_object()
            .context("a request without tools")?
            .iter()
            .map(|(name, req)| {
                let req = req.as_str().context("a requirement is not a string")?;
                Ok((PackageName::new(name.as_str())?, Some(req.parse()?)))
            })
            .collect::<anyhow::Result<_>>()?;
        let request = Request {
            requirements,
            pins: BTreeMap::new(),
            exclude_newer: None,
        };
        let started = Instant::now();
        failed += usize::from(resolve(&source, &request, &Cancel::new()).is_err());
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    println!(
        "{}",
        json!({
            "count": times.len(),
            "failed": failed,
            "median_ms": pct(0.5),
            "mean_ms": times.iter().sum::<f64>() / times.len() as f64,
            "p99_ms": pct(0.99),
        })
    );
    Ok(())
}

/// SHA-256 plus a buffered write to a new file, per container, one thread:
/// the least work any publish of these bytes must do.
///
/// The files are left in `dir` (the caller removes it after the run): on
/// ext4 without a journal, as on the bench machines, creating a file skips
/// over every inode freed in the last minute, one cache lookup each, so
/// files deleted here would slow both this loop and the publishes measured
/// next, which is the harness's cost, not the registry's.
fn measure_ceiling(dir: &Path, containers: &[Bytes]) -> anyhow::Result<f64> {
    std::fs::create_dir_all(dir)?;
    let started = Instant::now();
    let mut bytes = 0usize;
    for (i, c) in containers.iter().enumerate() {
        let digest = Sha256::digest(c);
        let path = dir.join(format!("ceiling-{i}-{}", hex::encode(&digest[..4])));
        std::fs::write(&path, c)?;
        bytes += c.len();
    }
    Ok(bytes as f64 / 1e6 / started.elapsed().as_secs_f64())
}

/// What a publish must do to the same bytes at the least, one thread:
/// `container::read` (SHA-256 of the container, inflate, SHA-256 of every
/// member, the manifest checks) plus writing the file. For comparison with
/// the SHA-256 + write ceiling, which hashes once and inflates nothing.
/// Its files are left in `dir` too ([`measure_ceiling`] says why).
fn measure_verify_floor(dir: &Path, containers: &[Bytes]) -> anyhow::Result<f64> {
    std::fs::create_dir_all(dir)?;
    let limits = Limits {
        max_compressed_bytes: u64::MAX,
        ..Limits::default()
    };
    let started = Instant::now();
    let mut bytes = 0usize;
    for (i, c) in containers.iter().enumerate() {
        let container = container::read(&c[..], &limits)?;
        let path = dir.join(format!("floor-{i}-{}", &container.sha256().to_hex()[..8]));
        std::fs::write(&path, c)?;
        bytes += c.len();
    }
    Ok(bytes as f64 / 1e6 / started.elapsed().as_secs_f64())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("seed") => multi_threaded(seed(&args[1..])),
        Some("publish") => multi_threaded(publish(&args[1..])),
        // One thread is plenty to keep 16 requests in flight, and a second
        // one's wake-ups would take CPU from the server it measures.
        Some("resolve") => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|runtime| runtime.block_on(resolve_each(&args[1..]))),
        Some("solve") => solve_each(&args[1..]),
        _ => Err(anyhow::anyhow!(
            "usage: seed_catalog seed OUT_DIR [...] | publish URL KEY_PEM [...] | resolve URL FILE [...] | solve FILE [...] (see the file's header)"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seed_catalog: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `future` on a runtime with a worker per core: seeding and publishing
/// keep both cores busy, signing and hashing.
fn multi_threaded(
    future: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    tokio::runtime::Runtime::new()?.block_on(future)
}
