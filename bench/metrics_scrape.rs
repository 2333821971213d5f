//! `/metrics` benchmark (run on demand, never in tests): how long a scrape takes, and how
//! long the background refresh that rebuilds the snapshot takes, at 10,000 nodes.
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   cargo run --release -p berth-api --example metrics_scrape [-- NODES PENDING RUNNING]
//! ```
//! Defaults 10,000 nodes × 8 GPUs (every GPU sampled), 100,000 pending jobs (six pending
//! reasons, two partitions), 20,000 running jobs holding one allocation of 1–8 GPUs each,
//! and the leader's counters (jobs ended in 13 states × 2 partitions, three histograms).
//! It creates a scratch database `berth_bench_metrics` on that server (dropped and
//! re-created each run), then times: the snapshot refresh (`read_snapshot`, what each
//! api replica runs every `refresh_seconds`); encoding the snapshot (the scrape's own
//! work); and whole scrapes through the api's router (`GET /metrics` with a token, as
//! Prometheus sends it). Prints the median and the worst of each.

#[path = "scratch.rs"]
mod scratch;

use axum::body::Body;
use axum::http::Request;
use berth_api::{auth, limits, metrics, oidc, AppState};
use berth_core::auth::Role;
use scratch::{arg, exec, Scratch};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt;

const DB: &str = "berth_bench_metrics";

fn summary(mut times: Vec<Duration>) -> String {
    times.sort();
    format!(
        "median {:.1} ms, worst {:.1} ms ({} runs)",
        times[times.len() / 2].as_secs_f64() * 1000.0,
        times[times.len() - 1].as_secs_f64() * 1000.0,
        times.len()
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (nodes, pending, running) = (arg(1, 10_000), arg(2, 100_000), arg(3, 20_000));
    let scratch = Scratch::create(DB, 4).await;
    let pool = scratch.pool.clone();

    let t = Instant::now();
    exec(
        &pool,
        &format!(
            "INSERT INTO partitions (name, nodes) VALUES ('debug', ARRAY(
                 SELECT format('gpu%s', lpad(i::text, 5, '0')) FROM generate_series(1, 100) i));
             INSERT INTO nodes (name, hostname, cpus, memory_mib, features, state)
               SELECT format('gpu%s', lpad(i::text, 5, '0')), 'host', 64, 1048576, '{{h100}}',
                      CASE WHEN i % 500 = 0 THEN 'DOWN' WHEN i % 700 = 0 THEN 'DRAINED' ELSE 'UP' END
               FROM generate_series(1, {nodes}) i;
             INSERT INTO gpus (node_id, index, uuid, model, memory_mib, utilization_pct,
                               memory_used_mib, power_w, temperature_c, sampled_at)
               SELECT n.id, g, format('GPU-%s-%s', n.id, g), 'NVIDIA H100 80GB HBM3', 81559,
                      (n.id * 7 + g * 13) % 101, (n.id + g) % 81559, 100 + (n.id % 600),
                      30 + g, now()
               FROM nodes n, generate_series(0, 7) g;
             INSERT INTO jobs (name, user_name, partition, state, num_nodes, num_tasks,
                               gpus_per_node, time_limit, script, stdout_pattern, spec,
                               submit_time, start_time)
               SELECT 'run', 'u' || (i % 200), 'gpu', 'RUNNING', 1, 1, 1 + i % 8,
                      600 + i % 86000, '#!/bin/sh\ntrue\n', 'slurm-%j.out', '{{}}',
                      now() - interval '2 hours', now() - interval '1 hour'
               FROM generate_series(1, {running}) i;
             INSERT INTO allocations (job_id, run, node_id, node_index, gpu_indices, term)
               SELECT j.id, 0, 1 + (j.id - 1) % {nodes}, 0,
                      (SELECT array_agg(g) FROM generate_series(0, j.gpus_per_node - 1) g), 1
               FROM jobs j WHERE j.state = 'RUNNING' AND j.id <= {nodes};
             INSERT INTO allocation_gpus (allocation_id, node_id, gpu_index)
               SELECT a.id, a.node_id, g FROM allocations a, unnest(a.gpu_indices) g;
             INSERT INTO jobs (name, user_name, partition, num_nodes, num_tasks, gpus_per_node,
                               time_limit, script, stdout_pattern, spec, submit_time, reason)
               SELECT 'train', 'u' || (i % 200), (ARRAY['gpu', 'debug'])[1 + (i % 10 = 0)::int],
                      1, 1, (ARRAY[1, 1, 1, 2, 4, 8])[1 + i % 6], 600 + i % 86000,
                      '#!/bin/sh\n' || repeat('# a typical batch script line\n', 40),
                      'slurm-%j.out', '{{}}', now() - make_interval(secs => i % 604800),
                      (ARRAY['Priority', 'Resources', 'Dependency', 'JobHeldUser',
                             'QOSMaxGRESPerUser', 'BeginTime'])[1 + i % 6]
               FROM generate_series(1, {pending}) i;
             INSERT INTO cluster_counters (name, labels, value)
               SELECT 'jobs_ended', s || '|' || p, 1000
               FROM unnest(ARRAY['COMPLETED', 'FAILED', 'TIMEOUT', 'CANCELLED', 'NODE_FAIL',
                                 'PREEMPTED', 'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE',
                                 'REQUEUED', 'SUSPENDED', 'COMPLETING', 'REVOKED']) s,
                    unnest(ARRAY['gpu', 'debug']) p;
             INSERT INTO leader_lease (role, holder, term, expires_at)
               VALUES ('scheduler', 'bench', 3, now() + interval '1 hour');
             ANALYZE;"
        ),
    )
    .await;
    for (name, bounds) in [
        (
            berth_core::metrics::QUEUE_WAIT,
            berth_core::metrics::QUEUE_WAIT_BUCKETS,
        ),
        (
            berth_core::metrics::RUN_TIME,
            berth_core::metrics::RUN_TIME_BUCKETS,
        ),
        (
            berth_core::metrics::CYCLE_DURATION,
            berth_core::metrics::CYCLE_DURATION_BUCKETS,
        ),
    ] {
        let mut h = berth_core::metrics::HistogramDelta::new(bounds);
        for i in 0..10_000 {
            h.observe(f64::from(i % 5000));
        }
        let rows = h.rows(name);
        let mut tx = berth_db::begin(&pool).await.unwrap();
        berth_db::metrics::cluster_counters_add_in_tx(
            &mut tx,
            &rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>(),
            &rows.iter().map(|r| r.1.clone()).collect::<Vec<_>>(),
            &rows.iter().map(|r| r.2).collect::<Vec<_>>(),
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }
    println!(
        "seeded {nodes} nodes ({} GPUs), {pending} pending and {running} running jobs in {:.1} s",
        nodes * 8,
        t.elapsed().as_secs_f64()
    );

    // The refresh each replica runs in the background.
    let mut refresh = Vec::new();
    let mut snapshot = None;
    for _ in 0..10 {
        let t = Instant::now();
        snapshot = Some(metrics::read_snapshot(&pool).await.unwrap());
        refresh.push(t.elapsed());
    }
    let snapshot = snapshot.unwrap();
    println!(
        "snapshot refresh: {} ({} GPU series)",
        summary(refresh),
        snapshot.samples.len()
    );

    let m = Arc::new(metrics::Metrics::new(metrics::MetricsConfig::default()));
    let mut encode = Vec::new();
    for _ in 0..5 {
        let copy = snapshot.clone();
        let t = Instant::now();
        m.set_snapshot(copy);
        encode.push(t.elapsed());
    }
    let bytes: usize = m.scrape().unwrap().iter().map(|p| p.len()).sum();
    println!(
        "encoding the snapshot (at refresh): {} ({bytes} bytes)",
        summary(encode)
    );
    let mut own = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let parts = m.scrape().unwrap();
        own.push(t.elapsed());
        assert!(parts[1].len() + 100 > bytes);
    }
    println!("a scrape's own work (Metrics::scrape): {}", summary(own));

    // Whole scrapes through the router: authentication, the middleware, the encoding.
    let state = AppState {
        pool: pool.clone(),
        keys: auth::Keys::from_secret("bench-secret"),
        node_events: tokio::sync::broadcast::channel(16).0,
        limiters: limits::RateLimiters::new(limits::Limits {
            per_principal_per_second: 0,
            per_address_per_second: 0,
            ..limits::Limits::default()
        }),
        oidc: oidc::OidcVerifier::default(),
        node_lease: None,
        events: Default::default(),
        metrics: m.clone(),
        will_run: None,
        queue_streams: berth_api::queue_streams(4),
        live_queue: Default::default(),
        group_commit: Default::default(),
    };
    let app = berth_api::router(state);
    let token = berth_api::mint_token("bench-secret", "prometheus", Role::Operator, 3600);
    let mut scrapes = Vec::new();
    for _ in 0..20 {
        let request = Request::get("/metrics")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        let t = Instant::now();
        let response = app.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        scrapes.push(t.elapsed());
        assert!(body.len() >= bytes);
    }
    println!("GET /metrics through the router: {}", summary(scrapes));
    scratch.drop().await;
}
