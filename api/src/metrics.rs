//! `GET /metrics`: Prometheus metrics (OpenMetrics text, encoded by `prometheus-client`).
//!
//! A scrape runs no query and encodes almost nothing: a background task
//! ([`refresh_loop`]) rebuilds this replica's [`ClusterSnapshot`] from PostgreSQL every
//! `[metrics] refresh_seconds` (default 5) and encodes it then (a `prometheus-client`
//! collector over the snapshot), so a scrape sends that text as it is, after the few
//! per-process series it encodes itself. Every replica reads the same database, so the
//! cluster-wide series are the same from each (up to one refresh interval); series of
//! ended jobs or removed GPUs disappear with the next snapshot, since a snapshot is
//! encoded whole (not registered gauges that would linger).
//!
//! * Cluster state (gauges, recomputed each refresh): `berth_jobs{state,partition}` (jobs
//!   not yet ended: PENDING, RUNNING, SUSPENDED, COMPLETING), `berth_jobs_pending{partition,
//!   reason}`, `berth_nodes{state}` (sinfo's states, IDLE/MIXED/ALLOCATED derived from
//!   allocations), `berth_gpus{partition,model}` and its parts `berth_gpus_allocated`,
//!   `berth_gpus_idle`, `berth_gpus_down` (on a DOWN, DRAINING or DRAINED node) and
//!   `berth_gpus_powered_down` (a pool slot without an instance), counting physical GPUs
//!   (a GPU one of whose MIG instances or shards is held counts allocated) in every
//!   partition its node belongs to; `berth_pool_nodes{pool,state}`,
//!   `berth_pool_spend_per_hour{pool}` (the price per hour of the pool's running
//!   instances); `berth_scheduler_leader_term`, `berth_scheduler_leader_up`.
//! * Cluster counters, kept by the scheduler leader in `cluster_counters` (see
//!   `berth_scheduler::metrics`): `berth_jobs_ended_total{state,partition}`,
//!   `berth_job_queue_wait_seconds` and `berth_job_run_seconds` (histograms),
//!   `berth_scheduler_cycle_duration_seconds` (histogram),
//!   `berth_scheduler_cycles_total`, `berth_scheduler_placements_total{partition}`,
//!   `berth_scheduler_preemptions_total{mode}`, `berth_pool_spend_total{pool}` (the
//!   pools' instance prices integrated over the time they ran, in the price's currency),
//!   and `berth_scheduler_failovers_total` (leadership changes: the term less one).
//! * Per GPU, named as NVIDIA's DCGM exporter names its fields, so DCGM dashboards work:
//!   `DCGM_FI_DEV_GPU_UTIL` (%), `DCGM_FI_DEV_FB_USED` and `DCGM_FI_DEV_FB_FREE` (MiB),
//!   `DCGM_FI_DEV_POWER_USAGE` (W), `DCGM_FI_DEV_GPU_TEMP` (°C), from the latest sample
//!   the node's worker sent, with DCGM's labels `gpu` (index), `UUID`, `device`
//!   (`nvidia<index>`), `modelName`, `Hostname` (the Berth node name) and, while a job
//!   holds the GPU, `hpc_job="<job id>"` (DCGM's HPC job mapping label). A GPU never
//!   sampled has no series.
//! * Per replica (each api process has its own): `berth_http_request_duration_seconds
//!   {method,route,status}` (a histogram; `route` is the matched route pattern, as
//!   `/v1/jobs/{id}`, never the raw path), `berth_metrics_refresh_duration_seconds`,
//!   `berth_metrics_snapshot_timestamp_seconds`.
//! * `berth_webhook_deliveries{state}`: webhook deliveries in the outbox by state
//!   (`pending`, `delivered`, `failed`), from [`berth_db::webhook::webhook_delivery_counts`].
//!
//! Access: with `[metrics] public = true` anyone may scrape; otherwise (the default) the
//! scrape needs a Berth token of an admin or operator, such as a read-only API token (`berth
//! token create`) of an operator account kept for the scraper.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use berth_core::metrics as names;
use berth_core::state::NodeState;
use berth_db::metrics as db;
use berth_db::{DbError, Pool};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// The content type of a scrape's answer.
pub const OPENMETRICS_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `[metrics]`: who may scrape, and how often the snapshot is rebuilt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsConfig {
    /// Anyone may scrape without a token (default false: an admin's or operator's token).
    pub public: bool,
    /// How often each api replica rebuilds its snapshot (default 5 s).
    pub refresh: Duration,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            public: false,
            refresh: Duration::from_secs(5),
        }
    }
}

/// The upper bounds of the request-duration histogram, seconds.
const HTTP_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

fn http_histogram() -> Histogram {
    Histogram::new(HTTP_BUCKETS.iter().copied())
}

/// The labels of a request's duration.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    method: String,
    route: String,
    status: String,
}

/// The metrics of one api replica: its snapshot of the cluster (with the snapshot's
/// text, encoded when it was read) and its request durations, encoded on each scrape.
#[derive(Debug)]
pub struct Metrics {
    config: MetricsConfig,
    snapshot: Arc<RwLock<Arc<ClusterSnapshot>>>,
    /// The snapshot's series as OpenMetrics text (without `# EOF`).
    cluster_text: RwLock<Bytes>,
    /// Encodes the snapshot (a collector over `snapshot`).
    cluster: Registry,
    http: Family<HttpLabels, Histogram, fn() -> Histogram>,
    /// This process's own series.
    process: Registry,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new(MetricsConfig::default())
    }
}

impl Metrics {
    /// Metrics with an empty snapshot (until the first refresh).
    pub fn new(config: MetricsConfig) -> Self {
        let snapshot = Arc::new(RwLock::new(Arc::new(ClusterSnapshot::default())));
        let http: Family<HttpLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(http_histogram);
        let mut process = Registry::default();
        process.register(
            "berth_http_request_duration_seconds",
            "API request duration by method, matched route and status (this replica only)",
            http.clone(),
        );
        let mut cluster = Registry::default();
        cluster.register_collector(Box::new(SnapshotCollector {
            snapshot: snapshot.clone(),
        }));
        let metrics = Metrics {
            config,
            snapshot,
            cluster_text: RwLock::new(Bytes::new()),
            cluster,
            http,
            process,
        };
        metrics.set_snapshot(ClusterSnapshot::default());
        metrics
    }

    /// The settings.
    pub fn config(&self) -> &MetricsConfig {
        &self.config
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<ClusterSnapshot> {
        match self.snapshot.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the snapshot and encodes it (the work a scrape is spared).
    pub fn set_snapshot(&self, snapshot: ClusterSnapshot) {
        let snapshot = Arc::new(snapshot);
        match self.snapshot.write() {
            Ok(mut s) => *s = snapshot,
            Err(poisoned) => *poisoned.into_inner() = snapshot,
        }
        let mut text = String::with_capacity(1 << 16);
        if let Err(e) = prometheus_client::encoding::text::encode_registry(&mut text, &self.cluster)
        {
            tracing::warn!(error = %e, "encoding the metrics snapshot failed");
            return;
        }
        let text = Bytes::from(text);
        match self.cluster_text.write() {
            Ok(mut t) => *t = text,
            Err(poisoned) => *poisoned.into_inner() = text,
        }
    }

    /// What a scrape answers, in three parts to send one after the other: this process's
    /// series (encoded now), the snapshot's (encoded when it was read), `# EOF`.
    ///
    /// # Errors
    /// Only a formatting error (which writing to a `String` does not give).
    pub fn scrape(&self) -> Result<[Bytes; 3], std::fmt::Error> {
        let mut process = String::with_capacity(1 << 14);
        prometheus_client::encoding::text::encode_registry(&mut process, &self.process)?;
        let cluster = match self.cluster_text.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        Ok([
            Bytes::from(process),
            cluster,
            Bytes::from_static(b"# EOF\n"),
        ])
    }

    /// Records one request's duration.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.http
            .get_or_create(&HttpLabels {
                method: method.to_string(),
                route: route.to_string(),
                status: status.to_string(),
            })
            .observe(seconds);
    }

    /// Everything a scrape answers, as one text.
    ///
    /// # Errors
    /// Only a formatting error (which writing to a `String` does not give).
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let parts = self.scrape()?;
        Ok(parts
            .iter()
            .map(|p| String::from_utf8_lossy(p))
            .collect::<String>())
    }
}

/// GPUs of one partition and model, by what they are doing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuCounts {
    /// All of them.
    pub total: u64,
    /// Held by a job (or one of its MIG instances or shards is).
    pub allocated: u64,
    /// Free on an available node.
    pub idle: u64,
    /// Free on a DOWN, DRAINING or DRAINED node.
    pub down: u64,
    /// On a pool slot without a running instance (POWERED_DOWN, POWERING_UP,
    /// POWERING_DOWN).
    pub powered_down: u64,
}

/// One GPU's latest sample, as the DCGM series show it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSeries {
    /// Its node's name (DCGM's `Hostname`).
    pub node: String,
    /// Its index on the node (DCGM's `gpu`).
    pub index: i32,
    /// UUID.
    pub uuid: String,
    /// Model name (DCGM's `modelName`).
    pub model: String,
    /// The job holding it (DCGM's `hpc_job`).
    pub job: Option<i64>,
    /// Utilisation, percent.
    pub utilization_pct: Option<i32>,
    /// Memory in use, MiB.
    pub memory_used_mib: Option<i64>,
    /// Memory free, MiB.
    pub memory_free_mib: Option<i64>,
    /// Power draw, watts.
    pub power_w: Option<f64>,
    /// Temperature, °C.
    pub temperature_c: Option<i32>,
}

/// What one refresh read: everything a scrape encodes about the cluster.
#[derive(Debug, Clone, Default)]
pub struct ClusterSnapshot {
    /// When it was read (`None`: not yet).
    pub taken_at: Option<DateTime<Utc>>,
    /// How long the refresh took, seconds.
    pub refresh_seconds: f64,
    /// Jobs not yet ended, by (state, partition).
    pub jobs: BTreeMap<(String, String), u64>,
    /// Pending jobs by (partition, reason).
    pub pending: BTreeMap<(String, String), u64>,
    /// Nodes by state (every state present, 0 included).
    pub nodes: BTreeMap<&'static str, u64>,
    /// GPUs by (partition, model).
    pub gpus: BTreeMap<(String, String), GpuCounts>,
    /// Every sampled GPU.
    pub samples: Vec<GpuSeries>,
    /// Pool nodes by (pool, state).
    pub pool_nodes: BTreeMap<(String, &'static str), u64>,
    /// What each pool's running instances cost per hour.
    pub pool_spend_per_hour: BTreeMap<String, f64>,
    /// The leader's counters, by (name, labels).
    pub counters: BTreeMap<(String, String), f64>,
    /// The scheduler lease.
    pub leader: Option<db::LeaderRow>,
    /// Webhook deliveries in the outbox by state.
    pub webhook_deliveries: Vec<(String, u64)>,
}

/// sinfo's state of a node: its administrative state, or for an available one IDLE,
/// MIXED or ALLOCATED from what it holds (as `GET /v1/nodes` shows it).
fn node_state(node: &db::MetricsNodeRow, gpus: u64, allocated: u64) -> NodeState {
    match node.state.as_str() {
        "UP" => {
            NodeState::from_holdings(node.busy, node.cpus_known, node.cpus_full, gpus, allocated)
        }
        other => other.parse().unwrap_or(NodeState::Down),
    }
}

/// Reads a snapshot of the cluster (a handful of grouped reads; see the module's
/// documentation for what it holds).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_snapshot(pool: &Pool) -> Result<ClusterSnapshot, DbError> {
    let started = Instant::now();
    let mut s = ClusterSnapshot {
        taken_at: Some(Utc::now()),
        ..ClusterSnapshot::default()
    };
    for row in db::job_count_live(pool).await? {
        let count = row.count.max(0) as u64;
        *s.jobs
            .entry((row.state.clone(), row.partition.clone()))
            .or_default() += count;
        if row.state == "PENDING" {
            let reason = row.reason.unwrap_or_else(|| "None".to_string());
            *s.pending.entry((row.partition, reason)).or_default() += count;
        }
    }
    let nodes = db::metrics_node_list(pool).await?;
    let gpus = db::metrics_gpu_list(pool).await?;
    let holds: HashMap<(i64, i32), i64> = db::metrics_gpu_holds(pool)
        .await?
        .into_iter()
        .map(|h| ((h.node_id, h.gpu_index), h.job_id))
        .collect();
    let partitions = berth_db::partition::partition_list(pool).await?;
    let members: Vec<(String, Option<HashSet<&str>>)> = partitions
        .iter()
        .map(|p| {
            let set = (!p.nodes.is_empty()).then(|| p.nodes.iter().map(String::as_str).collect());
            (p.name.clone(), set)
        })
        .collect();
    let by_id: HashMap<i64, &db::MetricsNodeRow> = nodes.iter().map(|n| (n.id, n)).collect();
    // GPUs (total, allocated) per node.
    let mut per_node: HashMap<i64, (u64, u64)> = HashMap::new();
    for g in &gpus {
        let held = holds.contains_key(&(g.node_id, g.index));
        let e = per_node.entry(g.node_id).or_default();
        e.0 += 1;
        e.1 += u64::from(held);
    }
    let mut states: HashMap<i64, NodeState> = HashMap::with_capacity(nodes.len());
    for state in NodeState::ALL {
        s.nodes.insert(state.as_str(), 0);
    }
    for n in &nodes {
        let (total, allocated) = per_node.get(&n.id).copied().unwrap_or_default();
        let state = node_state(n, total, allocated);
        states.insert(n.id, state);
        *s.nodes.entry(state.as_str()).or_default() += 1;
        if let Some(pool_name) = &n.pool {
            *s.pool_nodes
                .entry((pool_name.clone(), state.as_str()))
                .or_default() += 1;
        }
    }
    for g in &gpus {
        let Some(node) = by_id.get(&g.node_id) else {
            continue;
        };
        let job = holds.get(&(g.node_id, g.index)).copied();
        let state = states.get(&g.node_id).copied().unwrap_or(NodeState::Down);
        for (partition, set) in &members {
            if set
                .as_ref()
                .is_some_and(|set| !set.contains(node.name.as_str()))
            {
                continue;
            }
            let c = s
                .gpus
                .entry((partition.clone(), g.model.clone()))
                .or_default();
            c.total += 1;
            match (job, state) {
                (Some(_), _) => c.allocated += 1,
                (None, NodeState::Down | NodeState::Draining | NodeState::Drained) => c.down += 1,
                (
                    None,
                    NodeState::PoweredDown | NodeState::PoweringUp | NodeState::PoweringDown,
                ) => c.powered_down += 1,
                (None, _) => c.idle += 1,
            }
        }
        if g.sampled_at.is_some() {
            s.samples.push(GpuSeries {
                node: node.name.clone(),
                index: g.index,
                uuid: g.uuid.clone(),
                model: g.model.clone(),
                job,
                utilization_pct: g.utilization_pct,
                memory_used_mib: g.memory_used_mib,
                memory_free_mib: g.memory_used_mib.map(|used| (g.memory_mib - used).max(0)),
                power_w: g.power_w,
                temperature_c: g.temperature_c,
            });
        }
    }
    for (pool_name, spend) in db::pool_hourly_spend_all(pool).await? {
        s.pool_spend_per_hour.insert(pool_name, spend);
    }
    for c in db::cluster_counters_list(pool).await? {
        s.counters.insert((c.name, c.labels), c.value);
    }
    s.leader = db::metrics_leader(pool, "scheduler").await?;
    s.webhook_deliveries = berth_db::webhook::webhook_delivery_counts(pool).await?;
    s.refresh_seconds = started.elapsed().as_secs_f64();
    Ok(s)
}

/// Rebuilds `metrics`' snapshot every `refresh` interval, for as long as the process
/// runs; a failed read keeps the previous snapshot (logged).
pub async fn refresh_loop(pool: Pool, metrics: Arc<Metrics>) {
    let mut timer = tokio::time::interval(metrics.config.refresh);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        match read_snapshot(&pool).await {
            Ok(snapshot) => metrics.set_snapshot(snapshot),
            Err(e) => {
                tracing::warn!(error = %e, "metrics refresh failed; keeping the previous snapshot")
            }
        }
    }
}

/// `GET /metrics`: the metrics as OpenMetrics text. Not under `/v1` and not in the
/// OpenAPI document (it is for Prometheus, not for API clients).
///
/// # Errors
/// Unless `[metrics] public = true`: 401 without a valid token, 403 for a caller who is
/// neither admin nor operator.
pub async fn metrics_get(
    State(state): State<AppState>,
    caller: Result<Caller, ApiError>,
) -> Result<Response, ApiError> {
    if !state.metrics.config.public {
        let caller = caller?;
        caller.require_person()?;
        caller.require_staff()?;
    }
    let parts = state
        .metrics
        .scrape()
        .map_err(|e| ApiError::Internal(Box::new(e)))?;
    let body = axum::body::Body::from_stream(futures_util::stream::iter(
        parts.map(Ok::<_, std::convert::Infallible>),
    ));
    Ok(([(CONTENT_TYPE, OPENMETRICS_TEXT)], body).into_response())
}

/// Middleware: records each request's duration by method, matched route (`unmatched`
/// for a path no route matched) and status.
pub async fn track_requests(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = match request.method().as_str() {
        m @ ("GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS") => m,
        _ => "other",
    }
    .to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let response = next.run(request).await;
    metrics.observe_request(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// Encodes a [`ClusterSnapshot`] on each scrape.
#[derive(Debug)]
struct SnapshotCollector {
    snapshot: Arc<RwLock<Arc<ClusterSnapshot>>>,
}

type Labels = Vec<(&'static str, String)>;

fn gauges(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels, f64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in series {
        // No labels: `name value`, not `name{} value`.
        if labels.is_empty() {
            family.encode_gauge(&value)?;
        } else {
            family.encode_family(&labels)?.encode_gauge(&value)?;
        }
    }
    Ok(())
}

/// `name` is without `_total` (the encoder adds it).
fn counters(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels, f64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in series {
        if labels.is_empty() {
            family.encode_counter::<NoLabelSet, _, f64>(&value, None)?;
        } else {
            family
                .encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, f64>(&value, None)?;
        }
    }
    Ok(())
}

/// A stored histogram (see [`berth_core::metrics`]): its buckets (upper bound, count in
/// that bucket; `f64::MAX` for `+Inf`), sum and count; zeros over `bounds` when the leader
/// has not flushed it yet.
fn stored_histogram(
    counters: &BTreeMap<(String, String), f64>,
    name: &str,
    bounds: &[f64],
) -> (Vec<(f64, u64)>, f64, u64) {
    let prefix = format!("{name}:bucket");
    let mut buckets: Vec<(f64, u64)> = counters
        .range((prefix.clone(), String::new())..)
        .take_while(|((n, _), _)| *n == prefix)
        .filter_map(|((_, label), v)| {
            let bound = if label == "+Inf" {
                f64::MAX
            } else {
                label.parse().ok()?
            };
            Some((bound, v.max(0.0) as u64))
        })
        .collect();
    if buckets.is_empty() {
        buckets = bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .map(|b| (b, 0))
            .collect();
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let get = |part: &str| {
        counters
            .get(&(format!("{name}:{part}"), String::new()))
            .copied()
            .unwrap_or(0.0)
    };
    let count = buckets
        .iter()
        .map(|b| b.1)
        .sum::<u64>()
        .max(get("count") as u64);
    (buckets, get("sum"), count)
}

fn histogram(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    (buckets, sum, count): (Vec<(f64, u64)>, f64, u64),
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    family.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
}

/// The stored counters named `name`, with their `|`-joined labels split into `keys`.
fn stored_counters<'a>(
    counters: &'a BTreeMap<(String, String), f64>,
    name: &'a str,
    keys: &'static [&'static str],
) -> impl Iterator<Item = (Labels, f64)> + 'a {
    counters
        .range((name.to_string(), String::new())..)
        .take_while(move |((n, _), _)| n == name)
        .map(move |((_, labels), v)| {
            let values = labels.split(names::LABEL_SEPARATOR);
            (
                keys.iter()
                    .copied()
                    .zip(values.map(str::to_string))
                    .collect(),
                *v,
            )
        })
}

impl Collector for SnapshotCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = match self.snapshot.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        let e = &mut encoder;
        gauges(
            e,
            "berth_jobs",
            "Jobs not yet ended, by state and partition",
            s.jobs.iter().map(|((state, p), n)| {
                (
                    vec![("state", state.clone()), ("partition", p.clone())],
                    *n as f64,
                )
            }),
        )?;
        gauges(
            e,
            "berth_jobs_pending",
            "Pending jobs by partition and reason",
            s.pending.iter().map(|((p, reason), n)| {
                (
                    vec![("partition", p.clone()), ("reason", reason.clone())],
                    *n as f64,
                )
            }),
        )?;
        counters(
            e,
            "berth_jobs_ended",
            "Jobs that ended, by end state and partition",
            stored_counters(&s.counters, names::JOBS_ENDED, &["state", "partition"]),
        )?;
        histogram(
            e,
            "berth_job_queue_wait_seconds",
            "Time jobs waited from submission (or --begin) to start, seconds",
            stored_histogram(&s.counters, names::QUEUE_WAIT, names::QUEUE_WAIT_BUCKETS),
        )?;
        histogram(
            e,
            "berth_job_run_seconds",
            "Time jobs ran, from their last start to their end, seconds",
            stored_histogram(&s.counters, names::RUN_TIME, names::RUN_TIME_BUCKETS),
        )?;
        gauges(
            e,
            "berth_nodes",
            "Nodes by state (sinfo's states)",
            s.nodes
                .iter()
                .map(|(state, n)| (vec![("state", state.to_string())], *n as f64)),
        )?;
        type Part = fn(&GpuCounts) -> u64;
        let parts: [(&str, &str, Part); 5] = [
            ("berth_gpus", "GPUs by partition and model", |c| c.total),
            (
                "berth_gpus_allocated",
                "GPUs held by jobs, by partition and model",
                |c| c.allocated,
            ),
            (
                "berth_gpus_idle",
                "Free GPUs on available nodes, by partition and model",
                |c| c.idle,
            ),
            (
                "berth_gpus_down",
                "Free GPUs on DOWN, DRAINING or DRAINED nodes, by partition and model",
                |c| c.down,
            ),
            (
                "berth_gpus_powered_down",
                "GPUs of pool slots without a running instance, by partition and model",
                |c| c.powered_down,
            ),
        ];
        for (name, help, part) in parts {
            gauges(
                e,
                name,
                help,
                s.gpus.iter().map(|((p, model), c)| {
                    (
                        vec![("partition", p.clone()), ("model", model.clone())],
                        part(c) as f64,
                    )
                }),
            )?;
        }
        gauges(
            e,
            "berth_pool_nodes",
            "Pool nodes by pool and state",
            s.pool_nodes.iter().map(|((p, state), n)| {
                (
                    vec![("pool", p.clone()), ("state", state.to_string())],
                    *n as f64,
                )
            }),
        )?;
        gauges(
            e,
            "berth_pool_spend_per_hour",
            "What each pool's running instances cost per hour (price_per_hour's currency)",
            s.pool_spend_per_hour
                .iter()
                .map(|(p, v)| (vec![("pool", p.clone())], *v)),
        )?;
        counters(
            e,
            "berth_pool_spend",
            "What each pool's instances have cost: price per hour integrated over their run time",
            stored_counters(&s.counters, names::POOL_SPEND, &["pool"]),
        )?;
        histogram(
            e,
            "berth_scheduler_cycle_duration_seconds",
            "Scheduling cycle duration (snapshot refresh, plan, commit), seconds",
            stored_histogram(
                &s.counters,
                names::CYCLE_DURATION,
                names::CYCLE_DURATION_BUCKETS,
            ),
        )?;
        counters(
            e,
            "berth_scheduler_cycles",
            "Scheduling cycles run by leaders",
            stored_counters(&s.counters, names::CYCLES, &[]),
        )?;
        counters(
            e,
            "berth_scheduler_placements",
            "Jobs started by the scheduler, by partition",
            stored_counters(&s.counters, names::PLACEMENTS, &["partition"]),
        )?;
        counters(
            e,
            "berth_scheduler_preemptions",
            "Preemptions by mode",
            stored_counters(&s.counters, names::PREEMPTIONS, &["mode"]),
        )?;
        let (term, up) = s.leader.as_ref().map_or((0, false), |l| (l.term, l.live));
        gauges(
            e,
            "berth_scheduler_leader_term",
            "The scheduler leader's fencing term (0: no leader yet)",
            [(Vec::new(), term as f64)],
        )?;
        gauges(
            e,
            "berth_scheduler_leader_up",
            "1 while a scheduler holds a live leader lease",
            [(Vec::new(), f64::from(u8::from(up)))],
        )?;
        counters(
            e,
            "berth_scheduler_failovers",
            "Leadership changes from one scheduler to another (the term less one)",
            [(Vec::new(), (term - 1).max(0) as f64)],
        )?;
        gauges(
            e,
            "berth_webhook_deliveries",
            "Webhook deliveries in the outbox by state (pending, delivered, failed)",
            s.webhook_deliveries
                .iter()
                .map(|(state, n)| (vec![("state", state.clone())], *n as f64)),
        )?;
        type Field = fn(&GpuSeries) -> Option<f64>;
        let dcgm: [(&str, &str, Field); 5] = [
            ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", |g| {
                g.utilization_pct.map(f64::from)
            }),
            (
                "DCGM_FI_DEV_FB_USED",
                "Framebuffer memory used (in MiB).",
                |g| g.memory_used_mib.map(|v| v as f64),
            ),
            (
                "DCGM_FI_DEV_FB_FREE",
                "Framebuffer memory free (in MiB).",
                |g| g.memory_free_mib.map(|v| v as f64),
            ),
            ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", |g| {
                g.power_w
            }),
            ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", |g| {
                g.temperature_c.map(f64::from)
            }),
        ];
        for (name, help, value) in dcgm {
            gauges(
                e,
                name,
                help,
                s.samples.iter().filter_map(|g| {
                    let v = value(g)?;
                    let mut labels = vec![
                        ("gpu", g.index.to_string()),
                        ("UUID", g.uuid.clone()),
                        ("device", format!("nvidia{}", g.index)),
                        ("modelName", g.model.clone()),
                        ("Hostname", g.node.clone()),
                    ];
                    if let Some(job) = g.job {
                        labels.push(("hpc_job", job.to_string()));
                    }
                    Some((labels, v))
                }),
            )?;
        }
        gauges(
            e,
            "berth_metrics_refresh_duration_seconds",
            "How long this replica's last snapshot refresh took, seconds",
            [(Vec::new(), s.refresh_seconds)],
        )?;
        gauges(
            e,
            "berth_metrics_snapshot_timestamp_seconds",
            "When this replica's snapshot was read (Unix time; 0: not yet)",
            [(
                Vec::new(),
                s.taken_at
                    .map_or(0.0, |t| t.timestamp_millis() as f64 / 1000.0),
            )],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_encodes_as_openmetrics_with_dcgm_names() {
        let metrics = Metrics::default();
        let mut s = ClusterSnapshot::default();
        s.jobs.insert(("PENDING".into(), "gpu".into()), 3);
        s.samples.push(GpuSeries {
            node: "node-1".into(),
            index: 0,
            uuid: "GPU-0".into(),
            model: "H100".into(),
            job: Some(42),
            utilization_pct: Some(77),
            memory_used_mib: Some(10),
            memory_free_mib: Some(90),
            power_w: Some(300.5),
            temperature_c: Some(50),
        });
        s.counters
            .insert(("jobs_ended".into(), "COMPLETED|gpu".into()), 2.0);
        s.counters
            .insert(("queue_wait_seconds:bucket".into(), "1".into()), 1.0);
        s.counters
            .insert(("queue_wait_seconds:bucket".into(), "+Inf".into()), 1.0);
        s.counters
            .insert(("queue_wait_seconds:sum".into(), String::new()), 100.5);
        metrics.set_snapshot(s);
        metrics.observe_request("GET", "/v1/jobs/{id}", 200, 0.003);
        let text = metrics.encode().unwrap();
        assert!(
            text.contains("berth_jobs{state=\"PENDING\",partition=\"gpu\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",device=\"nvidia0\",modelName=\"H100\",Hostname=\"node-1\",hpc_job=\"42\"} 77"),
            "{text}"
        );
        assert!(
            text.contains("berth_jobs_ended_total{state=\"COMPLETED\",partition=\"gpu\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("berth_job_queue_wait_seconds_bucket{le=\"+Inf\"} 2"),
            "{text}"
        );
        assert!(text.contains("\nberth_scheduler_leader_up 0"), "{text}");
        assert!(
            text.contains("berth_job_queue_wait_seconds_count 2"),
            "{text}"
        );
        assert!(
            text.contains("berth_http_request_duration_seconds_count{method=\"GET\",route=\"/v1/jobs/{id}\",status=\"200\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("berth_scheduler_cycle_duration_seconds_bucket{le=\"0.005\"} 0"),
            "{text}"
        );
    }
}
