//! A resolution can be stopped from outside, even on a registry where it
//! would never finish.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    thread,
    time::{Duration, Instant},
};

use agentlang_core::{
    PackageName, Version,
    digest::Sha256Digest,
    resolve::{Cancel, PackageSource, Request, ResolveError, SourceError, VersionEntry, resolve},
};

/// An endless chain: `p<n>` has ten versions, each depending on `p<n+1>`.
/// Without cancellation the solver keeps walking it; the lookup count guards
/// the test from running forever if cancellation were broken.
struct Endless {
    lookups: AtomicU64,
}

const LOOKUP_LIMIT: u64 = 5_000_000;

impl PackageSource for Endless {
    fn versions(
        &self,
        name: &PackageName,
    ) -> Result<Option<std::sync::Arc<Vec<VersionEntry>>>, SourceError> {
        if self.lookups.fetch_add(1, Ordering::Relaxed) > LOOKUP_LIMIT {
            return Err(SourceError::new("cancellation never came"));
        }
        let n: u64 = name.as_str()[1..].parse().map_err(SourceError::new)?;
        let next = PackageName::new(format!("p{}", n + 1)).map_err(SourceError::new)?;
        let versions = (0..10)
            .map(|minor| VersionEntry {
                version: Version::parse(&format!("1.{minor}.0")).unwrap(),
                yanked: false,
                hash: Sha256Digest::of(name.as_str().as_bytes()),
                dependencies: [(next.clone(), semver::VersionReq::parse("^1").unwrap())].into(),
                published_at: 0,
                log_index: None,
            })
            .collect();
        Ok(Some(std::sync::Arc::new(versions)))
    }
}

fn endless_request() -> Request {
    Request {
        requirements: [(PackageName::new("p0").unwrap(), None)].into(),
        pins: Default::default(),
        exclude_newer: None,
    }
}

#[test]
fn cancelling_from_another_thread_stops_the_solver() {
    let source = Endless {
        lookups: AtomicU64::new(0),
    };
    let cancel = Cancel::new();
    let trigger = cancel.clone();
    let canceller = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        trigger.cancel();
    });
    let result = resolve(&source, &endless_request(), &cancel);
    canceller.join().unwrap();
    assert!(matches!(result, Err(ResolveError::Cancelled)), "{result:?}");
    assert!(
        source.lookups.load(Ordering::Relaxed) > 1,
        "the solver did run"
    );
}

#[test]
fn a_passed_deadline_stops_the_solver() {
    let source = Endless {
        lookups: AtomicU64::new(0),
    };
    let cancel = Cancel::with_deadline(Instant::now() + Duration::from_millis(50));
    let result = resolve(&source, &endless_request(), &cancel);
    assert!(matches!(result, Err(ResolveError::Cancelled)), "{result:?}");
}

#[test]
fn an_already_cancelled_resolution_does_not_start() {
    let source = Endless {
        lookups: AtomicU64::new(0),
    };
    let cancel = Cancel::new();
    cancel.cancel();
    assert!(cancel.is_cancelled());
    let result = resolve(&source, &endless_request(), &cancel);
    assert!(matches!(result, Err(ResolveError::Cancelled)), "{result:?}");
    assert_eq!(source.lookups.load(Ordering::Relaxed), 0);
}

/// The pigeonhole principle as tools: `pigeon<i>` (i in 0..=holes) has one
/// version per hole, `1.<j>.0` needing `hole<j>` at `=1.<i>.0`; each
/// `hole<j>` has one version per pigeon. No two pigeons can share a hole,
/// so there is no solution, and resolution-based solvers need time
/// exponential in the number of holes to show it.
struct Pigeonhole {
    holes: u64,
}

impl PackageSource for Pigeonhole {
    fn versions(
        &self,
        name: &PackageName,
    ) -> Result<Option<std::sync::Arc<Vec<VersionEntry>>>, SourceError> {
        let entry = |version: String, dependencies| VersionEntry {
            version: Version::parse(&version).unwrap(),
            yanked: false,
            hash: Sha256Digest::of(version.as_bytes()),
            dependencies,
            published_at: 0,
            log_index: None,
        };
        let versions = if let Some(i) = name.as_str().strip_prefix("pigeon") {
            (0..self.holes)
                .map(|j| {
                    let hole = PackageName::new(format!("hole{j}")).unwrap();
                    let req = semver::VersionReq::parse(&format!("=1.{i}.0")).unwrap();
                    entry(format!("1.{j}.0"), [(hole, req)].into())
                })
                .collect()
        } else {
            (0..=self.holes)
                .map(|i| entry(format!("1.{i}.0"), Default::default()))
                .collect()
        };
        Ok(Some(std::sync::Arc::new(versions)))
    }
}

#[test]
fn a_hard_instance_is_cut_by_the_work_bound_not_the_clock() {
    let holes = 12;
    let source = Pigeonhole { holes };
    let request = Request {
        requirements: (0..=holes)
            .map(|i| (PackageName::new(format!("pigeon{i}")).unwrap(), None))
            .collect(),
        pins: Default::default(),
        exclude_newer: None,
    };
    // A deadline far beyond any run: only the work bound can end it.
    let cancel = Cancel::with_deadline(Instant::now() + Duration::from_secs(600));
    let result = resolve(&source, &request, &cancel);
    assert!(
        matches!(result, Err(ResolveError::TooComplex)),
        "{result:?}"
    );
}

#[test]
fn a_small_instance_of_the_same_shape_is_explained_within_the_bound() {
    let holes = 3;
    let source = Pigeonhole { holes };
    let request = Request {
        requirements: (0..=holes)
            .map(|i| (PackageName::new(format!("pigeon{i}")).unwrap(), None))
            .collect(),
        pins: Default::default(),
        exclude_newer: None,
    };
    let result = resolve(&source, &request, &Cancel::new());
    assert!(
        matches!(result, Err(ResolveError::Unsatisfiable { .. })),
        "{result:?}"
    );
}
