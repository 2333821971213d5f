//! Usage charging benchmark (run on demand, never in tests): how long a scheduler cycle
//! takes to find the job runs it must charge, with a long history of charged runs behind
//! it, before and after the queue of released runs (`usage_pending`, migration
//! `20261201040001`).
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   cargo run --release -p berth-scheduler --example usage_charge [-- HISTORY NEW]
//! ```
//! Defaults: 1,000,000 runs released over the last 6 days and already charged, then 100
//! new released runs. It creates a scratch database `berth_bench_charge` (dropped and
//! re-created each run), fills it with `generate_series` inserts, and times, ten times
//! each after five untimed runs (PostgreSQL plans a prepared statement's first five runs
//! anew): the former query (every allocation released in the last 7 days against the
//! ledger) and `usage_uncharged_runs` (the queue), checking that both find the same runs.

#[path = "scratch.rs"]
mod scratch;

use chrono::Utc;
use scratch::{arg, exec, median, Scratch};
use std::time::Instant;

const DB: &str = "berth_bench_charge";

/// The query charging ran every cycle before the queue.
const HISTORY_SCAN: &str = r#"SELECT a.job_id, a.run
   FROM allocations a
   JOIN jobs j ON j.id = a.job_id
   LEFT JOIN users u ON u.name = j.user_name
   LEFT JOIN qos q ON q.name = COALESCE(j.qos, 'normal')
   WHERE (a.job_id, a.run) IN (
           SELECT r.job_id, r.run FROM allocations r
           WHERE r.released_at IS NOT NULL AND r.released_at > $1::timestamptz - interval '7 days'
             AND NOT EXISTS (SELECT 1 FROM usage_charges c
                             WHERE c.job_id = r.job_id AND c.run = r.run))
   GROUP BY a.job_id, a.run, j.account, u.default_account, j.user_name, j.num_tasks,
            j.cpus_per_task, q.usage_factor
   HAVING bool_and(a.released_at IS NOT NULL)
   ORDER BY MAX(a.released_at), a.job_id, a.run
   LIMIT $2"#;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (history, new) = (arg(1, 1_000_000), arg(2, 100));
    let scratch = Scratch::create(DB, 4).await;
    let pool = scratch.pool.clone();

    let t = Instant::now();
    let total = history + new;
    exec(
        &pool,
        &format!(
            "INSERT INTO nodes (name, hostname, cpus, memory_mib) VALUES ('gpu00001', 'host', 64, 1048576);
             INSERT INTO jobs (name, user_name, partition, state, num_nodes, num_tasks,
                               gpus_per_node, time_limit, script, stdout_pattern, spec,
                               submit_time, start_time, end_time)
               SELECT 'run', 'u' || (i % 200), 'gpu', 'COMPLETED', 1, 1, 1 + i % 8, 3600,
                      '#!/bin/sh\ntrue\n', 'slurm-%j.out', '{{}}',
                      now() - make_interval(secs => 60 + (i::float8 / {total}) * 518400) - interval '1 hour',
                      now() - make_interval(secs => 60 + (i::float8 / {total}) * 518400) - interval '1 hour',
                      now() - make_interval(secs => 60 + (i::float8 / {total}) * 518400)
               FROM generate_series(1, {total}) i;
             INSERT INTO allocations (job_id, run, node_id, node_index, gpu_indices, term,
                                      created_at, released_at)
               SELECT j.id, 0, 1, 0, ARRAY[0], 1, j.start_time, j.end_time
               FROM jobs j WHERE j.id <= {history};
             INSERT INTO usage_charges (job_id, run, account, user_name, elapsed, billing,
                                        usage_factor, amount, charged_at)
               SELECT j.id, 0, 'root', j.user_name, 3600, 1, 1, 3600, j.end_time
               FROM jobs j WHERE j.id <= {history};
             -- Charged long ago: nothing of the history is queued any more.
             TRUNCATE usage_pending;
             INSERT INTO allocations (job_id, run, node_id, node_index, gpu_indices, term,
                                      created_at, released_at)
               SELECT j.id, 0, 1, 0, ARRAY[0], 1, j.start_time, j.end_time
               FROM jobs j WHERE j.id > {history};"
        ),
    )
    .await;
    exec(&pool, "VACUUM ANALYZE").await;
    println!(
        "filled: {history} charged runs, {new} to charge, in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let now = Utc::now();
    let mut before = Vec::new();
    let mut after = Vec::new();
    // The first five runs of a prepared statement are planned each time (custom plans);
    // the scheduler runs the query every cycle, so time the steady state after them.
    for run in 0..15 {
        if run == 5 {
            before.clear();
            after.clear();
        }
        let t = Instant::now();
        let old: Vec<(i64, i32)> = sqlx::query_as(HISTORY_SCAN)
            .bind(now)
            .bind(1000_i64)
            .fetch_all(&pool)
            .await
            .unwrap();
        before.push(t.elapsed());
        let t = Instant::now();
        let runs = berth_db::usage::usage_uncharged_runs(&pool, now, 1000)
            .await
            .unwrap();
        after.push(t.elapsed());
        let runs: Vec<(i64, i32)> = runs.iter().map(|r| (r.job_id, r.run)).collect();
        assert_eq!(runs, old, "both find the same runs");
        assert_eq!(runs.len(), new.min(1000));
    }
    println!(
        "history scan (before): median {:.1} ms, runs {:?}",
        median(before.clone()).as_secs_f64() * 1e3,
        before
            .iter()
            .map(|d| format!("{:.1}", d.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
    );
    println!(
        "queue (after): median {:.2} ms, runs {:?}",
        median(after.clone()).as_secs_f64() * 1e3,
        after
            .iter()
            .map(|d| format!("{:.2}", d.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
    );
    scratch.drop().await;
}
