//! `GET /metrics`: parsed with a Prometheus text parser, its values match the cluster's
//! state (nodes, GPUs, jobs by state and pending reason, a running job's DCGM series with
//! `hpc_job`, ended jobs, histograms); who may scrape; and every metric the Grafana
//! dashboard (`deploy/grafana/berth.json`) uses is exported.

use crate::cluster::{berth_bin, Options, TestCluster, TEST_API_CONFIG};
use berth_core::auth::Role;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// One scrape: its text and what the parser made of it.
struct Scraped {
    text: String,
    scrape: prometheus_parse::Scrape,
}

impl Scraped {
    /// The value of the sample `name` whose labels include `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .find(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .and_then(|s| match &s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => Some(*v),
                _ => None,
            })
    }

    /// The samples named `name`.
    fn samples(&self, name: &str) -> Vec<&prometheus_parse::Sample> {
        self.scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .collect()
    }

    /// Every sample name in the text (`x_bucket`, `x_count`, `y_total` as exposed).
    fn names(&self) -> BTreeSet<String> {
        self.text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| l.split(['{', ' ']).next())
            .map(str::to_string)
            .collect()
    }

    /// Every name a query may use: the sample names, and for every family the text
    /// declares (`# TYPE name kind`), the names of its samples even when it has none now
    /// (`name_total` for a counter; `name_bucket`, `name_sum`, `name_count` for a
    /// histogram; `name` for a gauge).
    fn exported(&self) -> BTreeSet<String> {
        let mut names = self.names();
        for line in self.text.lines() {
            let mut words = line.split_whitespace();
            if let (Some("#"), Some("TYPE"), Some(name), Some(kind)) =
                (words.next(), words.next(), words.next(), words.next())
            {
                match kind {
                    "counter" => {
                        names.insert(format!("{name}_total"));
                    }
                    "histogram" => {
                        for suffix in ["_bucket", "_sum", "_count"] {
                            names.insert(format!("{name}{suffix}"));
                        }
                    }
                    _ => {
                        names.insert(name.to_string());
                    }
                }
            }
        }
        names
    }

    /// The value of the unlabelled sample line `name` (a histogram's `_count`).
    fn line(&self, name: &str) -> Option<f64> {
        self.text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    }
}

async fn scrape_with(c: &TestCluster, url: &str, token: Option<&str>) -> (u16, String) {
    let mut request = c.http.get(format!("{url}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

async fn scrape(c: &TestCluster, url: &str, token: Option<&str>) -> Scraped {
    let (status, text) = scrape_with(c, url, token).await;
    assert_eq!(status, 200, "{text}");
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("a scrape the Prometheus text parser reads");
    Scraped { text, scrape }
}

/// Scrapes until `done` holds (the snapshot is refreshed every second in these tests, the
/// leader's counters flushed about every second, 5 s behind), up to `secs` seconds.
async fn scrape_until(
    c: &TestCluster,
    token: Option<&str>,
    secs: u64,
    what: &str,
    done: impl Fn(&Scraped) -> bool,
) -> Scraped {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let s = scrape(c, &c.url, token).await;
        if done(&s) {
            return s;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}; last scrape:\n{}", s.text);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `sbatch` (the Slurm name of the `berth` binary) with `args`, in the cluster's
/// directory; the job id it printed.
fn sbatch(c: &TestCluster, args: &[&str]) -> i64 {
    let bin = c.dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("sbatch");
    if !link.exists() {
        std::os::unix::fs::symlink(berth_bin(), &link).unwrap();
    }
    let out = std::process::Command::new(&link)
        .args(args)
        .current_dir(&c.dir)
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &c.token)
        .env("HOME", &c.dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .trim()
        .rsplit(' ')
        .next()
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no job id in {stdout:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_match_the_cluster_and_need_a_staff_token() {
    let c = TestCluster::start_with_api_config(
        Options {
            workers: 2,
            gpus: "4xH100",
            ..Options::default()
        },
        &format!("{TEST_API_CONFIG}\n[metrics]\nrefresh_seconds = 1\n"),
    )
    .await;
    // Who may scrape: not without a token, not a user, not a node; admins and operators.
    let (status, _) = scrape_with(&c, &c.url, None).await;
    assert_eq!(status, 401);
    let user = c.token_for("ursula", Role::User);
    let (status, _) = scrape_with(&c, &c.url, Some(&user)).await;
    assert_eq!(status, 403);
    let operator = c.token_for("olga", Role::Operator);
    let (status, _) = scrape_with(&c, &c.url, Some(&operator)).await;
    assert_eq!(status, 200);
    let admin = c.token.clone();

    // The acceptance: while `sbatch --gpus=1 --wrap 'sleep 5'` runs, /metrics
    // carries DCGM_FI_DEV_GPU_UTIL with hpc_job="ID".
    let id = sbatch(&c, &["--gpus=1", "--wrap", "sleep 5"]);
    let held = sbatch(&c, &["--hold", "--wrap", "true"]);
    let job = id.to_string();
    let s = scrape_until(&c, Some(&admin), 60, "the running job's DCGM series", |s| {
        s.samples("DCGM_FI_DEV_GPU_UTIL")
            .iter()
            .any(|x| x.labels.get("hpc_job") == Some(job.as_str()))
    })
    .await;
    let utils = s.samples("DCGM_FI_DEV_GPU_UTIL");
    let held_gpu: Vec<_> = utils
        .iter()
        .filter(|x| x.labels.get("hpc_job") == Some(job.as_str()))
        .collect();
    assert_eq!(held_gpu.len(), 1, "one GPU carries the job: {}", s.text);
    let g = held_gpu[0];
    let running = c.job(id).await;
    assert_eq!(running.state, berth_core::state::JobState::Running);
    let placed = running.allocations.first().expect("the job's allocation");
    assert_eq!(g.labels.get("Hostname"), Some(placed.node.as_str()));
    assert_eq!(
        g.labels.get("gpu"),
        Some(placed.gpus[0].to_string().as_str())
    );
    for label in ["UUID", "modelName", "device"] {
        assert!(
            g.labels.get(label).is_some(),
            "{label} missing: {:?}",
            g.labels
        );
    }
    assert_eq!(utils.len(), 8, "every simulated GPU is sampled: {}", s.text);
    for name in [
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_GPU_TEMP",
    ] {
        assert_eq!(s.samples(name).len(), 8, "{name}: {}", s.text);
    }
    // Cluster state: 2 nodes of 4 GPUs, one GPU held.
    let s = scrape_until(
        &c,
        Some(&admin),
        30,
        "the allocation in the GPU counts",
        |s| s.value("berth_gpus_allocated", &[("partition", "gpu")]) == Some(1.0),
    )
    .await;
    let model = g.labels.get("modelName").unwrap();
    let gpus = |name: &str| s.value(name, &[("partition", "gpu"), ("model", model)]);
    assert_eq!(gpus("berth_gpus"), Some(8.0), "{}", s.text);
    assert_eq!(gpus("berth_gpus_idle"), Some(7.0), "{}", s.text);
    assert_eq!(gpus("berth_gpus_down"), Some(0.0), "{}", s.text);
    assert_eq!(s.value("berth_nodes", &[("state", "MIXED")]), Some(1.0));
    assert_eq!(s.value("berth_nodes", &[("state", "IDLE")]), Some(1.0));
    assert_eq!(s.value("berth_nodes", &[("state", "DOWN")]), Some(0.0));
    assert_eq!(
        s.value("berth_jobs", &[("state", "RUNNING"), ("partition", "gpu")]),
        Some(1.0)
    );
    assert_eq!(
        s.value(
            "berth_jobs_pending",
            &[("partition", "gpu"), ("reason", "JobHeldUser")]
        ),
        Some(1.0),
        "{}",
        s.text
    );
    assert_eq!(s.value("berth_scheduler_leader_up", &[]), Some(1.0));
    assert!(s.value("berth_scheduler_leader_term", &[]).unwrap() >= 1.0);
    // Per-replica request durations, by route pattern (never the raw path).
    let routes: BTreeSet<&str> = s
        .samples("berth_http_request_duration_seconds_count")
        .iter()
        .filter_map(|x| x.labels.get("route"))
        .collect();
    let names = s.names();
    assert!(
        names.contains("berth_http_request_duration_seconds_count")
            || names.contains("berth_http_request_duration_seconds_bucket"),
        "{}",
        s.text
    );
    assert!(
        !s.text.contains(&format!("route=\"/v1/jobs/{id}\"")),
        "raw paths must not become labels: {routes:?}"
    );
    assert!(
        s.text.contains("route=\"/v1/jobs/{id}\"") || s.text.contains("route=\"/v1/jobs\""),
        "{}",
        s.text
    );

    // After the job ends: it is counted by end state, its series loses hpc_job, its run
    // time and queue wait are observed, the placement counted.
    let ended = c.wait_ended(id, 60).await;
    assert_eq!(ended.state, berth_core::state::JobState::Completed);
    let s = scrape_until(&c, Some(&admin), 60, "the ended job in the counters", |s| {
        s.value(
            "berth_jobs_ended_total",
            &[("state", "COMPLETED"), ("partition", "gpu")],
        ) == Some(1.0)
            && s.line("berth_job_run_seconds_count") == Some(1.0)
    })
    .await;
    assert!(
        s.samples("DCGM_FI_DEV_GPU_UTIL")
            .iter()
            .all(|x| x.labels.get("hpc_job").is_none()),
        "no GPU is held any more: {}",
        s.text
    );
    assert_eq!(
        s.value("berth_jobs", &[("state", "RUNNING"), ("partition", "gpu")]),
        None,
        "no running job is left: {}",
        s.text
    );
    assert_eq!(s.line("berth_job_queue_wait_seconds_count"), Some(1.0));
    let run = s.line("berth_job_run_seconds_sum").unwrap();
    assert!((5.0..60.0).contains(&run), "run time {run}");
    assert_eq!(
        s.value("berth_scheduler_placements_total", &[("partition", "gpu")]),
        Some(1.0)
    );
    assert!(
        s.line("berth_scheduler_cycle_duration_seconds_count")
            .unwrap()
            >= 1.0
    );
    assert!(s.value("berth_scheduler_cycles_total", &[]).unwrap() >= 1.0);
    assert_eq!(
        s.value("berth_gpus_allocated", &[("partition", "gpu")]),
        Some(0.0)
    );
    // The held job is still pending, and cancelling it ends it CANCELLED.
    let (code, _, err) = c.cli(&admin, &["cancel", &held.to_string()]);
    assert_eq!(code, 0, "{err}");
    scrape_until(&c, Some(&admin), 60, "the cancelled job", |s| {
        s.value(
            "berth_jobs_ended_total",
            &[("state", "CANCELLED"), ("partition", "gpu")],
        ) == Some(1.0)
            && s.value("berth_jobs_pending", &[("reason", "JobHeldUser")])
                .is_none()
    })
    .await;
}

/// The metric names a PromQL expression uses: identifiers outside label matchers, range
/// selectors, strings and grouping clauses, that are not functions or keywords.
fn promql_metrics(expr: &str) -> BTreeSet<String> {
    const KEYWORDS: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "and",
        "or",
        "unless",
        "offset",
        "inf",
        "nan",
        // Aggregations, which may come before `by (…)`.
        "sum",
        "min",
        "max",
        "avg",
        "count",
        "stddev",
        "stdvar",
        "topk",
        "bottomk",
        "quantile",
        "count_values",
        "group",
    ];
    let chars: Vec<char> = expr.chars().collect();
    let mut found = BTreeSet::new();
    let mut i = 0;
    let mut last_word = String::new();
    while i < chars.len() {
        let ch = chars[i];
        if ch == '{' || ch == '[' || ch == '"' {
            let close = match ch {
                '{' => '}',
                '[' => ']',
                _ => '"',
            };
            i += 1;
            while i < chars.len() && chars[i] != close {
                i += 1;
            }
            i += 1;
            continue;
        }
        if ch == '(' && ["by", "without", "on", "ignoring"].contains(&last_word.as_str()) {
            while i < chars.len() && chars[i] != ')' {
                i += 1;
            }
            i += 1;
            last_word.clear();
            continue;
        }
        if ch.is_ascii_alphabetic() || ch == '_' || ch == ':' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut j = i;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            let is_call = j < chars.len() && chars[j] == '(';
            if !is_call && !KEYWORDS.contains(&word.to_lowercase().as_str()) {
                found.insert(word.clone());
            }
            last_word = word;
            continue;
        }
        if ch.is_ascii_digit() {
            // A number (1e3, 0.5) or a duration (5m).
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            continue;
        }
        if !ch.is_whitespace() {
            last_word.clear();
        }
        i += 1;
    }
    found
}

#[test]
fn promql_names_are_found() {
    let names = promql_metrics(
        "histogram_quantile(0.9, sum by (le) (rate(berth_job_queue_wait_seconds_bucket{partition=~\"$partition\"}[5m]))) + on (x) DCGM_FI_DEV_GPU_UTIL * 1e3 / max without (gpu) (berth_gpus)",
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        [
            "DCGM_FI_DEV_GPU_UTIL",
            "berth_gpus",
            "berth_job_queue_wait_seconds_bucket"
        ]
    );
}

/// Every `expr` of the dashboard's panels (nested rows included).
fn dashboard_exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("expr", serde_json::Value::String(e)) => out.push(e.clone()),
                    _ => dashboard_exprs(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| dashboard_exprs(v, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_metric_is_exported_by_a_public_endpoint() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/grafana/berth.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut exprs = Vec::new();
    dashboard_exprs(&dashboard["panels"], &mut exprs);
    assert!(exprs.len() >= 10, "the dashboard has its panels: {exprs:?}");
    let used: BTreeSet<String> = exprs.iter().flat_map(|e| promql_metrics(e)).collect();

    let c = TestCluster::start_with_api_config(
        Options {
            workers: 1,
            gpus: "2xH100",
            apis: 2,
            ..Options::default()
        },
        &format!("{TEST_API_CONFIG}\n[metrics]\npublic = true\nrefresh_seconds = 1\n"),
    )
    .await;
    // A job that runs and ends, so the counters with labels have series.
    let id = c.submit("#!/bin/sh\nsleep 1\n", &["--gpus=1"]).await;
    c.wait_ended(id, 60).await;
    let s = scrape_until(&c, None, 60, "the ended job in the counters", |s| {
        s.value("berth_jobs_ended_total", &[("state", "COMPLETED")]) == Some(1.0)
            && !s.samples("DCGM_FI_DEV_GPU_UTIL").is_empty()
    })
    .await;
    let exported = s.exported();
    // Those with series now (a pool, a preemption or a pending job would bring the rest).
    for name in [
        "berth_nodes",
        "berth_gpus",
        "berth_jobs_ended_total",
        "berth_job_run_seconds_bucket",
        "berth_scheduler_placements_total",
        "DCGM_FI_DEV_GPU_UTIL",
        "berth_http_request_duration_seconds_bucket",
    ] {
        assert!(s.names().contains(name), "{name}: {}", s.text);
    }
    let missing: Vec<&String> = used.iter().filter(|n| !exported.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "the dashboard uses metrics /metrics does not export: {missing:?}\n{}",
        s.text
    );
    // The second replica answers with the same cluster-wide values.
    let other = c.api_urls[1].clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t = scrape(&c, &other, None).await;
        if t.value("berth_jobs_ended_total", &[("state", "COMPLETED")]) == Some(1.0) {
            assert_eq!(
                t.value("berth_gpus", &[("partition", "gpu")]),
                s.value("berth_gpus", &[("partition", "gpu")])
            );
            assert_eq!(
                t.line("berth_job_run_seconds_count"),
                s.line("berth_job_run_seconds_count")
            );
            break;
        }
        assert!(Instant::now() < deadline, "replica 2: {}", t.text);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
