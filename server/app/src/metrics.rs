//! Prometheus metrics: requests by route pattern and status, latency, and
//! the registry's own events (publishes, resolves, cache lookups). Served
//! at `/metrics`.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};
use store::PoolStats;

#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    /// Versions published.
    pub publishes: IntCounter,
    /// Resolutions answered.
    pub resolves: IntCounter,
    /// Batched index reads resolutions made (one per level of a dependency
    /// graph the cache did not hold).
    pub index_reads: IntCounter,
    /// Lookups of the in-process caches, answered or computed.
    pub caches: CacheCounters,
    /// CLowl messages whose `ctx.inline` the registry used, by why:
    /// `no_ref` or `unreachable_ref` (two values: a bounded label).
    pub clowl_inline_context: IntCounterVec,
    /// Database connections by state (`idle`, `in_use`), read at each
    /// scrape.
    db_connections: IntGaugeVec,
    db_max_connections: IntGauge,
}

/// Lookups of the in-process caches by cache (`index_documents`,
/// `resolutions`, `version_records`, ...) and result: `hit` (answered from
/// memory) or `miss` (computed, as after a change the answer shows). Cheap
/// to clone; every clone counts into the same series.
#[derive(Debug, Clone)]
pub struct CacheCounters(IntCounterVec);

impl CacheCounters {
    fn new() -> Result<Self, prometheus::Error> {
        Ok(Self(IntCounterVec::new(
            Opts::new(
                "cache_lookups_total",
                "In-process cache lookups by cache and result (hit or miss)",
            ),
            &["cache", "result"],
        )?))
    }

    /// Counts one lookup of `cache`.
    pub fn count(&self, cache: &str, hit: bool) {
        self.0
            .with_label_values(&[cache, if hit { "hit" } else { "miss" }])
            .inc();
    }
}

/// Counters no registry exports: for caches made without [`Metrics`].
impl Default for CacheCounters {
    fn default() -> Self {
        Self::new().expect("the counters' name and labels are constant and valid")
    }
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new_custom(Some("agentlang_registry".to_owned()), None)?;
        let requests = IntCounterVec::new(
            Opts::new(
                "http_requests_total",
                "HTTP requests by route pattern and status",
            ),
            &["method", "route", "status"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "http_request_duration_seconds",
                "HTTP request latency by route pattern",
            )
            .buckets(vec![
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            &["method", "route"],
        )?;
        let publishes = IntCounter::new("publishes_total", "Versions published")?;
        let resolves = IntCounter::new("resolves_total", "Resolutions answered")?;
        let index_reads = IntCounter::new(
            "resolve_index_reads_total",
            "Batched index reads by resolutions, one per dependency level not cached",
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(publishes.clone()))?;
        registry.register(Box::new(resolves.clone()))?;
        registry.register(Box::new(index_reads.clone()))?;
        let caches = CacheCounters::new()?;
        registry.register(Box::new(caches.0.clone()))?;
        let clowl_inline_context = IntCounterVec::new(
            Opts::new(
                "clowl_inline_context_total",
                "CLowl messages answered from ctx.inline (the spec's degraded path), by why: no_ref or unreachable_ref",
            ),
            &["why"],
        )?;
        registry.register(Box::new(clowl_inline_context.clone()))?;
        let db_connections = IntGaugeVec::new(
            Opts::new(
                "db_pool_connections",
                "Database connections the pools hold, by state (idle or in_use)",
            ),
            &["state"],
        )?;
        let db_max_connections = IntGauge::new(
            "db_pool_max_connections",
            "The most connections the database pools may open",
        )?;
        registry.register(Box::new(db_connections.clone()))?;
        registry.register(Box::new(db_max_connections.clone()))?;
        // Which build answers: constant, 1, its version in a label.
        let build = IntGaugeVec::new(
            Opts::new(
                "build_info",
                "The registry's build: its version, as a label",
            ),
            &["version"],
        )?;
        build.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        registry.register(Box::new(build))?;
        // process_cpu_seconds_total, process_resident_memory_bytes,
        // process_open_fds, ... under their standard names (no prefix).
        #[cfg(target_os = "linux")]
        prometheus::default_registry()
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .or_else(|e| match e {
                // A second registry in one process (tests) finds it there.
                prometheus::Error::AlreadyReg => Ok(()),
                e => Err(e),
            })?;
        Ok(Self {
            registry,
            requests,
            latency,
            publishes,
            resolves,
            index_reads,
            caches,
            clowl_inline_context,
            db_connections,
            db_max_connections,
        })
    }

    /// The text exposition format, with the pools' connections as they
    /// are now and the process's own series.
    pub fn render(&self, pools: PoolStats) -> Result<String, prometheus::Error> {
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.db_connections
            .with_label_values(&["idle"])
            .set(gauge(pools.idle));
        self.db_connections
            .with_label_values(&["in_use"])
            .set(gauge(pools.open.saturating_sub(pools.idle)));
        self.db_max_connections.set(gauge(pools.max));
        let mut families = self.registry.gather();
        families.extend(prometheus::default_registry().gather());
        let mut out = Vec::new();
        TextEncoder::new().encode(&families, &mut out)?;
        String::from_utf8(out).map_err(|e| prometheus::Error::Msg(e.to_string()))
    }

    /// Counts and times one HTTP request under its route pattern (never the
    /// concrete path, so the label set stays bounded).
    pub fn observe_request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let status = status.to_string();
        self.requests
            .with_label_values(&[method, route, status.as_str()])
            .inc();
        self.latency
            .with_label_values(&[method, route])
            .observe(seconds);
    }
}
