//! Resolution time over synthetic registries, printed as median and p99.
//!
//! `cargo run --release -p agentlang-core --example bench_resolve [RUNS]`
//!
//! - "typical": a 10-requirement agent over 10,000 packages x 20 versions,
//!   in four tiers, each version depending on 0-3 tools of the next tier;
//! - "conflict-heavy": ten tools whose versions each pin a different major
//!   of one shared tool, plus a requirement on that tool only a few versions
//!   meet, so the solver must backtrack through many combinations;
//! - "unsatisfiable": the same shape with no solution, explanation included;
//! - "deep": the same registry size with chains thousands deep, run once
//!   under a 30 s deadline.

use std::time::{Duration, Instant};

use agentlang_core::{
    PackageName, Version,
    digest::Sha256Digest,
    resolve::{Cancel, MemorySource, Request, ResolveError, VersionEntry, resolve},
};
use semver::VersionReq;

/// splitmix64: deterministic, so every run measures the same registry.
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

fn name(s: &str) -> PackageName {
    PackageName::new(s).expect("synthetic names are valid")
}

fn req(s: &str) -> VersionReq {
    VersionReq::parse(s).expect("synthetic requirements are valid")
}

fn entry(version: &str, dependencies: Vec<(PackageName, VersionReq)>) -> VersionEntry {
    VersionEntry {
        version: Version::parse(version).expect("synthetic versions are valid"),
        yanked: false,
        hash: Sha256Digest::of(version.as_bytes()),
        dependencies: dependencies.into_iter().collect(),
        published_at: 0,
        log_index: None,
    }
}

const PACKAGES: u64 = 10_000;

/// Packages are layered in four tiers of 2,500 (as tools build on lower-level
/// tools): a version depends on 0-3 tools of the next tier, so dependency
/// chains are at most four deep, as in real registries.
const TIER: u64 = PACKAGES / 4;

/// 20 versions per package: majors 1-4, minors 0-4. `tiered = false` lets a
/// version depend on any of the next 500 packages instead, which builds
/// dependency chains thousands deep (the "deep" stress case).
fn typical_registry(tiered: bool) -> MemorySource {
    let mut rng = Rng(42);
    let mut source = MemorySource::new();
    for p in 0..PACKAGES {
        let pkg = name(&format!("tool{p}"));
        let next_tier = (p / TIER + 1) * TIER;
        for major in 1..=4 {
            for minor in 0..5 {
                let deps = (0..rng.below(4))
                    .filter_map(|_| {
                        let target = if tiered {
                            next_tier + rng.below(TIER)
                        } else {
                            p + 1 + rng.below(500)
                        };
                        (target < PACKAGES).then(|| {
                            let requirement = match rng.below(3) {
                                0 => format!("^{}", 1 + rng.below(4)),
                                1 => format!(">={}.{}, <5", 1 + rng.below(4), rng.below(5)),
                                _ => format!("~{}.{}", 1 + rng.below(4), rng.below(5)),
                            };
                            (name(&format!("tool{target}")), req(&requirement))
                        })
                    })
                    .collect();
                source.add_version(&pkg, entry(&format!("{major}.{minor}.0"), deps));
            }
        }
    }
    source
}

fn typical_request(tiered: bool) -> Request {
    let mut rng = Rng(7);
    let span = if tiered { TIER } else { PACKAGES };
    Request {
        requirements: (0..10)
            .map(|_| {
                // Agents require top-tier tools.
                let p = rng.below(span);
                (
                    name(&format!("tool{p}")),
                    Some(req(&format!("^{}", 1 + rng.below(4)))),
                )
            })
            .collect(),
        pins: Default::default(),
        exclude_newer: None,
    }
}

/// Ten tools of 20 versions; version v of tool i requires `core` at major
/// (v * 7 + i * 3) mod 20 + 1, and needs a `helper` of the matching major.
/// The agent requires `core >= LOW`, so most versions of every tool are
/// ruled out one conflict at a time. `solvable = false` makes `helper` lack
/// the majors that would be needed.
fn conflict_registry(solvable: bool) -> MemorySource {
    let mut source = MemorySource::new();
    for major in 1..=20 {
        source.add_version(&name("core"), entry(&format!("{major}.0.0"), vec![]));
        if solvable || major < 15 {
            source.add_version(&name("helper"), entry(&format!("{major}.0.0"), vec![]));
        }
    }
    for i in 0..10u64 {
        let tool = name(&format!("tool{i}"));
        for v in 0..20u64 {
            let core_major = (v * 7 + i * 3) % 20 + 1;
            source.add_version(
                &tool,
                entry(
                    &format!("{}.0.0", v + 1),
                    vec![
                        (name("core"), req(&format!("^{core_major}"))),
                        (name("helper"), req(&format!("^{core_major}"))),
                    ],
                ),
            );
        }
    }
    source
}

fn conflict_request() -> Request {
    let mut requirements: std::collections::BTreeMap<_, _> =
        (0..10).map(|i| (name(&format!("tool{i}")), None)).collect();
    requirements.insert(name("core"), Some(req(">=15")));
    Request {
        requirements,
        pins: Default::default(),
        exclude_newer: None,
    }
}

fn measure(
    label: &str,
    runs: usize,
    source: &MemorySource,
    request: &Request,
    budget: Option<Duration>,
) {
    let mut times = Vec::with_capacity(runs);
    let mut outcome = String::new();
    for _ in 0..runs {
        let start = Instant::now();
        let cancel = budget.map_or_else(Cancel::new, |b| Cancel::with_deadline(start + b));
        let result = resolve(source, request, &cancel);
        times.push(start.elapsed());
        outcome = match result {
            Ok(resolution) => format!("solved, {} tools locked", resolution.tools.len()),
            Err(ResolveError::Unsatisfiable {
                explanation,
                conflicts,
            }) => format!(
                "unsatisfiable, {} conflicts, explanation of {} lines",
                conflicts.len(),
                explanation.lines().count()
            ),
            Err(other) => format!("error: {other}"),
        };
    }
    times.sort_unstable();
    let pick = |q: f64| -> Duration {
        let index = ((times.len() as f64 - 1.0) * q).round() as usize;
        times[index]
    };
    println!(
        "{label:<15} runs={runs:<4} median={:>9.3?} p99={:>9.3?}  ({outcome})",
        pick(0.5),
        pick(0.99)
    );
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);

    let start = Instant::now();
    let typical = typical_registry(true);
    println!(
        "built synthetic registry: {PACKAGES} packages x 20 versions in {:.2?}",
        start.elapsed()
    );
    measure("typical", runs, &typical, &typical_request(true), None);
    let conflict_request = conflict_request();
    measure(
        "conflict-heavy",
        runs,
        &conflict_registry(true),
        &conflict_request,
        None,
    );
    measure(
        "unsatisfiable",
        runs,
        &conflict_registry(false),
        &conflict_request,
        None,
    );
    // One run under a deadline: shows what the server's resolve timeout is for.
    let deep = typical_registry(false);
    let budget = Duration::from_secs(30);
    measure(
        "deep (30s cap)",
        1,
        &deep,
        &typical_request(false),
        Some(budget),
    );
}
