//! Prometheus metrics: requests by route pattern and status, latency, and
//! the registry's own events (publishes, resolves, cache lookups). Served
//! at `/metrics`.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts, Registry, TextEncoder,
};

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
        Ok(Self {
            registry,
            requests,
            latency,
            publishes,
            resolves,
            index_reads,
            caches,
        })
    }

    /// The text exposition format.
    pub fn render(&self) -> Result<String, prometheus::Error> {
        let mut out = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut out)?;
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
