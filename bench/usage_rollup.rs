//! Usage rollup and report benchmark (run on demand, never in tests): how long the
//! scheduler leader takes to roll up one busy hour from the raw allocations (it does so
//! for the current hour every pass), how long a month's usage report takes over hourly
//! rollups that represent 10,000,000 jobs, and how long one retention batch (5,000 jobs
//! with their allocations) takes.
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   cargo run --release -p berth-db --example usage_rollup [-- NODES HISTORY]
//! ```
//! Defaults: 1,000 nodes of 8 GPUs (H100 and A100) kept full for the busy hour by
//! 32,000 one-GPU runs of 20 minutes (a quarter spanning the hour's start, a quarter its
//! end), behind
//! a history of 1,000,000 ended runs a week old; a month (720 hours) of `usage_hourly`
//! rows for 500 users in 50 accounts × 2 partitions × 2 GPU models (1,440,000 rows)
//! counting 7 jobs each (10,080,000 jobs). It creates a scratch database
//! `berth_bench_rollup` (dropped and re-created each run), fills it with
//! `generate_series` inserts, and reports medians after untimed warm-up runs.

#[path = "scratch.rs"]
mod scratch;

use berth_core::usage_report::hour_floor;
use chrono::Utc;
use scratch::{arg, exec, median, Scratch};
use std::time::{Duration, Instant};

const DB: &str = "berth_bench_rollup";

fn ms(v: &[Duration]) -> String {
    format!(
        "median {:.1} ms, runs {:?}",
        median(v.to_vec()).as_secs_f64() * 1e3,
        v.iter()
            .map(|d| format!("{:.1}", d.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (nodes, history) = (arg(1, 1_000), arg(2, 1_000_000));
    let busy = nodes * 8 * 4;
    let scratch = Scratch::create(DB, 4).await;
    let pool = scratch.pool.clone();

    let now = Utc::now();
    let hour = hour_floor(now) - chrono::Duration::hours(2);
    let t = Instant::now();
    exec(
        &pool,
        &format!(
            "INSERT INTO nodes (name, hostname, cpus, memory_mib)
               SELECT 'gpu' || lpad(i::text, 5, '0'), 'host', 64, 1048576
               FROM generate_series(1, {nodes}) i;
             INSERT INTO gpus (node_id, index, uuid, model, memory_mib)
               SELECT n.id, g, 'GPU-' || n.id || '-' || g,
                      CASE WHEN n.id % 2 = 0 THEN 'H100' ELSE 'A100' END, 81920
               FROM nodes n, generate_series(0, 7) g;
             -- The history: ended runs a week old.
             INSERT INTO jobs (name, user_name, account, partition, state, num_nodes, num_tasks,
                               gpus_per_node, time_limit, script, stdout_pattern, spec,
                               submit_time, start_time, end_time)
               SELECT 'old', 'u' || (i % 500), 'a' || (i % 50), 'gpu', 'COMPLETED', 1, 1, 1,
                      3600, '#!/bin/sh\ntrue\n', 'slurm-%j.out', '{{}}',
                      timestamptz '{hour}' - interval '8 days' + make_interval(secs => i % 86400),
                      timestamptz '{hour}' - interval '8 days' + make_interval(secs => i % 86400),
                      timestamptz '{hour}' - interval '8 days' + make_interval(secs => i % 86400 + 600)
               FROM generate_series(1, {history}) i;
             INSERT INTO allocations (job_id, run, node_id, node_index, gpu_indices, cpu_ids,
                                      mem_mib, term, created_at, released_at)
               SELECT j.id, 0, 1 + j.id % {nodes}, 0, ARRAY[(j.id / {nodes}) % 8], ARRAY[0],
                      4096, 1, j.start_time, j.end_time
               FROM jobs j;
             -- The busy hour: every GPU held all hour by 20-minute runs, the first of
             -- each GPU starting 10 minutes before the hour, the last ending 10 after.
             INSERT INTO jobs (name, user_name, account, partition, state, num_nodes, num_tasks,
                               gpus_per_node, time_limit, script, stdout_pattern, spec,
                               submit_time, start_time, end_time)
               SELECT 'busy', 'u' || (i % 500), 'a' || (i % 50),
                      'gpu', 'COMPLETED', 1, 1, 1, 3600, '#!/bin/sh\ntrue\n', 'slurm-%j.out',
                      jsonb_build_object('i', i),
                      timestamptz '{hour}' - interval '10 minutes' + make_interval(mins => 20 * (i / {nodes8})),
                      timestamptz '{hour}' - interval '10 minutes' + make_interval(mins => 20 * (i / {nodes8})),
                      timestamptz '{hour}' + interval '10 minutes' + make_interval(mins => 20 * (i / {nodes8}))
               FROM generate_series(0, {busy} - 1) i;
             INSERT INTO allocations (job_id, run, node_id, node_index, gpu_indices, cpu_ids,
                                      mem_mib, term, created_at, released_at)
               SELECT j.id, 0, 1 + ((j.spec->>'i')::int % {nodes}),
                      0, ARRAY[((j.spec->>'i')::int / {nodes}) % 8], ARRAY[0], 4096, 1,
                      j.start_time, j.end_time
               FROM jobs j WHERE j.name = 'busy';
             TRUNCATE usage_pending;
             -- A month of rollups: 720 hours x 500 users x 2 partitions x 2 models.
             INSERT INTO partitions (name) VALUES ('cpu');
             INSERT INTO usage_hourly (hour, account, user_name, partition, qos, gpu_model,
                                       gpu_seconds, cpu_seconds, mem_mib_seconds,
                                       node_seconds, billing_seconds, jobs)
               SELECT timestamptz '{hour}' - make_interval(hours => h), 'a' || (u % 50),
                      'u' || u, p, 'normal', m, 3600, 7200, 3600 * 4096, 3600, 3600 * 34, 7
               FROM generate_series(1, 720) h, generate_series(0, 499) u,
                    unnest(ARRAY['gpu', 'cpu']) p, unnest(ARRAY['H100', 'A100']) m;
             -- Their days, as the rollup keeps them.
             INSERT INTO usage_daily (day, account, user_name, partition, qos, gpu_model,
                                      gpu_seconds, cpu_seconds, mem_mib_seconds,
                                      node_seconds, billing_seconds, jobs)
               SELECT date_trunc('day', hour, 'UTC'), account, user_name, partition, qos,
                      gpu_model, sum(gpu_seconds), sum(cpu_seconds), sum(mem_mib_seconds),
                      sum(node_seconds), sum(billing_seconds), sum(jobs)
               FROM usage_hourly GROUP BY 1, 2, 3, 4, 5, 6;
             INSERT INTO cluster_usage_hourly (hour, gpu_model, samples, reported_seconds,
                                               allocated_seconds, down_seconds,
                                               planned_down_seconds, reserved_seconds)
               SELECT timestamptz '{hour}' - make_interval(hours => h), m, 60,
                      {gpus_half} * 3600, {gpus_half} * 3000, 0, 0, 0
               FROM generate_series(1, 720) h, unnest(ARRAY['H100', 'A100']) m;",
            hour = hour.to_rfc3339(),
            nodes8 = nodes * 8,
            gpus_half = nodes * 4,
        ),
    )
    .await;
    // Not in the fill's implicit transaction.
    exec(&pool, "VACUUM ANALYZE").await;
    println!(
        "filled: {nodes} nodes x 8 GPUs, {history} history runs, {busy} runs in the busy hour, \
         1,440,000 hourly rows (10,080,000 jobs), in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // The busy hour's rollup (left open, so it can be rolled again; the current hour is
    // rolled like this every pass).
    let mut runs = Vec::new();
    for i in 0..8 {
        let t = Instant::now();
        let mut tx = berth_db::begin(&pool).await.unwrap();
        assert!(berth_db::usage_rollup::usage_rollup_hour_in_tx(
            &mut tx, hour, now, false, 1, 32.0, 1.0
        )
        .await
        .unwrap());
        tx.commit().await.unwrap();
        if i >= 3 {
            runs.push(t.elapsed());
        }
    }
    let (gpu_seconds, jobs): (f64, i64) = sqlx::query_as(
        "SELECT sum(gpu_seconds), sum(jobs)::bigint FROM usage_hourly WHERE hour = $1",
    )
    .bind(hour)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        gpu_seconds.round() as usize,
        nodes * 8 * 3600,
        "every GPU all hour"
    );
    println!(
        "busy-hour rollup ({busy} runs, {jobs} ended in the hour, {gpu_seconds} GPU-s): {}",
        ms(&runs)
    );

    // A month's report over the rollups: everything (an admin), one user's view, and the
    // cluster's utilisation.
    let start = hour - chrono::Duration::hours(720);
    let mut all = Vec::new();
    let mut mine = Vec::new();
    let mut cluster = Vec::new();
    for i in 0..15 {
        let t = Instant::now();
        let rows = berth_db::usage_rollup::usage_hourly_sum(&pool, start, hour, None, &[])
            .await
            .unwrap();
        let a = t.elapsed();
        let total: i64 = rows.iter().map(|r| r.jobs).sum();
        assert_eq!(total, 10_080_000);
        let t = Instant::now();
        let rows = berth_db::usage_rollup::usage_hourly_sum(
            &pool,
            start,
            hour,
            Some("u1"),
            &["a1".to_string()],
        )
        .await
        .unwrap();
        let m = t.elapsed();
        assert!(!rows.is_empty());
        let t = Instant::now();
        let rows = berth_db::usage_rollup::cluster_usage_sum(&pool, start, hour)
            .await
            .unwrap();
        let c = t.elapsed();
        assert_eq!(rows.len(), 2);
        if i >= 5 {
            all.push(a);
            mine.push(m);
            cluster.push(c);
        }
    }
    println!(
        "month report, every association (2,000 groups): {}",
        ms(&all)
    );
    println!("month report, one user's accounts: {}", ms(&mine));
    println!("month cluster utilisation: {}", ms(&cluster));

    // Retention: batches of 5,000 ended jobs (with their allocations) from the history.
    let mut purge = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let mut tx = berth_db::begin(&pool).await.unwrap();
        let n = berth_db::usage_rollup::job_purge_ended_in_tx(
            &mut tx,
            hour - chrono::Duration::days(1),
            5_000,
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        purge.push(t.elapsed());
        assert_eq!(n, 5_000);
    }
    println!("retention batch of 5,000 jobs: {}", ms(&purge));

    scratch.drop().await;
}
