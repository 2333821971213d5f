//! sacct benchmark (run on demand, never in tests): one month of job accounting out of a
//! long history, through `berth_db::accounting::acct_job_list` (what
//! `GET /v1/accounting/jobs` and `sacct -S … -E …` run).
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   cargo run --release -p berth-db --example acct_query [-- RUNS DAYS]
//! ```
//! Defaults: 1,000,000 finished job runs submitted evenly over the last 90 days, each
//! running 1 minute to 6 hours on 1 to 8 GPUs. It creates a scratch database
//! `berth_bench_acct` (dropped and re-created each run), fills `jobs` and
//! `acct_job_runs` with `generate_series` inserts, and times, ten times after five untimed
//! runs (PostgreSQL plans a prepared statement's first five runs anew), an admin's
//! one-month query: the first page (1,000 runs, what the api answers per request), and
//! once, every page of the month (what `sacct` fetches in all).

#[path = "scratch.rs"]
mod scratch;

use chrono::{Duration as ChronoDuration, Utc};
use scratch::{arg, exec, median, Scratch};
use std::time::Instant;

const DB: &str = "berth_bench_acct";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (runs, days) = (arg(1, 1_000_000), arg(2, 90));
    let scratch = Scratch::create(DB, 4).await;
    let pool = scratch.pool.clone();

    let t = Instant::now();
    let spacing = (days as f64 * 86_400.0) / runs as f64;
    exec(
        &pool,
        &format!(
            "-- Bulk load: no triggers (the recorder's queue) on these inserts.
             SET session_replication_role = replica;
             INSERT INTO jobs (id, name, user_name, account, partition, num_nodes, num_tasks,
                               gpus_per_node, script, stdout_pattern, spec, state,
                               submit_time, start_time, end_time, exit_code)
               SELECT i, 'job' || i, 'user' || (i % 200), 'acct' || (i % 20), 'gpu', 1, 1,
                      1 + i % 8, '', 'slurm-%j.out', '{{}}', 'COMPLETED', s,
                      s + interval '30 s', s + interval '30 s' + make_interval(secs => d), 0
               FROM (SELECT i, now() - make_interval(days => {days}) + i * make_interval(secs => {spacing}) AS s,
                            60 + (i::bigint * 7919) % 21540 AS d
                     FROM generate_series(1, {runs}) i) x;
             INSERT INTO acct_job_runs (job_id, run, name, user_name, account, partition, qos,
                 state, exit_code, exit_signal, submit_time, eligible_time, start_time, end_time,
                 elapsed, req_cpus, req_mem_mib, req_gpus, req_nodes, alloc_cpus,
                 alloc_mem_mib, alloc_gpus, alloc_gpu_models, alloc_nodes, nodes, gpu_seconds,
                 gpu_util_avg, gpu_mem_peak_mib, energy_j)
               SELECT j.id, 0, j.name, j.user_name, j.account, j.partition, 'normal', j.state,
                      0, 0, j.submit_time, j.submit_time, j.start_time, j.end_time,
                      EXTRACT(EPOCH FROM j.end_time - j.start_time)::bigint,
                      8 * j.gpus_per_node, 65536, j.gpus_per_node, 1, 8 * j.gpus_per_node,
                      65536, j.gpus_per_node, jsonb_build_object('h100', j.gpus_per_node), 1,
                      ARRAY['gpu' || lpad((j.id % 1000)::text, 4, '0')],
                      j.gpus_per_node * EXTRACT(EPOCH FROM j.end_time - j.start_time),
                      50, 40000, 1e6
               FROM jobs j;
             SET session_replication_role = origin;
             SELECT setval('jobs_id_seq', {runs} + 1);"
        ),
    )
    .await;
    exec(&pool, "VACUUM ANALYZE").await;
    println!(
        "filled: {runs} finished runs over {days} days, in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let now = Utc::now();
    let month = berth_db::accounting::AcctFilter {
        start: Some(now - ChronoDuration::days(30)),
        end: Some(now),
        after: (0, -1),
        limit: 1001,
        ..Default::default()
    };
    let mut times = Vec::new();
    for run in 0..15 {
        if run == 5 {
            times.clear();
        }
        let t = Instant::now();
        let rows = berth_db::accounting::acct_job_list(&pool, &month)
            .await
            .unwrap();
        times.push(t.elapsed());
        assert_eq!(rows.len(), 1001);
    }
    println!(
        "one month, first page (1,000 runs): median {:.1} ms, runs {:?}",
        median(times.clone()).as_secs_f64() * 1e3,
        times
            .iter()
            .map(|d| format!("{:.1}", d.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
    );

    // Every page of the month, as sacct follows the cursor.
    let t = Instant::now();
    let mut filter = month.clone();
    let (mut total, mut pages) = (0usize, 0usize);
    loop {
        let rows = berth_db::accounting::acct_job_list(&pool, &filter)
            .await
            .unwrap();
        pages += 1;
        let more = rows.len() > 1000;
        total += rows.len().min(1000);
        if !more {
            break;
        }
        let last = &rows[999];
        filter.after = (last.job_id, last.run);
    }
    println!(
        "one month, every page: {total} runs in {pages} pages, {:.1} s ({:.1} ms a page)",
        t.elapsed().as_secs_f64(),
        t.elapsed().as_secs_f64() * 1e3 / pages as f64
    );
    scratch.drop().await;
}
