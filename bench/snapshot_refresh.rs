//! Snapshot refresh benchmark (run on demand, never in tests): how long the leader takes
//! to bring its in-memory snapshot up to date from PostgreSQL, reading everything (the
//! first cycle of a term) against reading only the changes since the previous cycle.
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   cargo run --release -p berth-scheduler --example snapshot_refresh [-- NODES PENDING RUNNING]
//! ```
//! Defaults 10,000 nodes × 8 GPUs, 100,000 pending jobs, 20,000 running (one allocation
//! of 1–8 GPUs each). It creates a scratch database `berth_bench_refresh` on that server
//! (dropped and re-created each run), fills it with `generate_series` inserts, then times:
//! a full read; a refresh with nothing changed; a refresh after a burst of changes (100
//! submissions, 50 running jobs ended with their allocations released, 10 nodes drained,
//! every node's heartbeat with GPU samples, and a cycle's write-back of reason, expected
//! start and priority to every pending job). Each refresh also builds the planner's
//! snapshot; the times include that.

#[path = "scratch.rs"]
mod scratch;

use berth_scheduler::planner::PlannerConfig;
use berth_scheduler::snapshot::SnapshotCache;
use scratch::{arg, exec, Scratch};
use std::time::Instant;

const DB: &str = "berth_bench_refresh";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (nodes, pending, running) = (arg(1, 10_000), arg(2, 100_000), arg(3, 20_000));
    let scratch = Scratch::create(DB, 4).await;
    let pool = scratch.pool.clone();

    let t = Instant::now();
    exec(
        &pool,
        &format!(
            "INSERT INTO nodes (name, hostname, cpus, memory_mib, features)
               SELECT format('gpu%s', lpad(i::text, 5, '0')), 'host', 64, 1048576, '{{h100}}'
               FROM generate_series(1, {nodes}) i;
             INSERT INTO gpus (node_id, index, uuid, model, memory_mib)
               SELECT n.id, g, format('GPU-%s-%s', n.id, g), 'NVIDIA H100 80GB HBM3', 81559
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
               FROM jobs j WHERE j.state = 'RUNNING';
             INSERT INTO jobs (name, user_name, partition, num_nodes, num_tasks, gpus_per_node,
                               time_limit, script, stdout_pattern, spec, submit_time)
               SELECT 'train', 'u' || (i % 200), 'gpu', 1 + (i % 50 = 0)::int, 1,
                      (ARRAY[1, 1, 1, 2, 4, 8])[1 + i % 6], 600 + i % 86000,
                      '#!/bin/sh\n' || repeat('# a typical batch script line\n', 40),
                      'slurm-%j.out', '{{\"constraint\": null}}',
                      now() - make_interval(secs => i % 604800)
               FROM generate_series(1, {pending}) i;
             ANALYZE;"
        ),
    )
    .await;
    println!(
        "database: {nodes} nodes × 8 GPUs, {running} running jobs with allocations, {pending} pending (filled in {:.1} s)",
        t.elapsed().as_secs_f64()
    );

    let config = PlannerConfig::default();
    let mut cache = SnapshotCache::new();
    let time = |label: &str, took: std::time::Duration, cache: &SnapshotCache| {
        println!(
            "{label}: {:.1} ms (full: {}, rows read: {}, small tables re-read: {})",
            took.as_secs_f64() * 1e3,
            cache.last.full,
            cache.last.rows,
            cache.last.tables
        );
    };
    for round in 0..3 {
        let mut fresh = SnapshotCache::new();
        let t = Instant::now();
        let input = fresh
            .refresh(&pool, chrono::Utc::now(), &config)
            .await
            .unwrap();
        time(&format!("full read {round}"), t.elapsed(), &fresh);
        assert_eq!(input.snapshot.pending.len(), pending);
    }
    cache
        .refresh(&pool, chrono::Utc::now(), &config)
        .await
        .unwrap();
    for round in 0..3 {
        let t = Instant::now();
        cache
            .refresh(&pool, chrono::Utc::now(), &config)
            .await
            .unwrap();
        time(&format!("nothing changed {round}"), t.elapsed(), &cache);
    }
    for round in 0..3 {
        exec(
            &pool,
            &format!(
                "INSERT INTO jobs (name, user_name, partition, num_nodes, num_tasks, gpus_per_node,
                                   time_limit, script, stdout_pattern, spec)
                   SELECT 'more', 'u1', 'gpu', 1, 1, 2, 3600, '#!/bin/sh\ntrue\n', 'slurm-%j.out', '{{}}'
                   FROM generate_series(1, 100);
                 WITH ended AS (
                   UPDATE jobs SET state = 'COMPLETED', end_time = now()
                   WHERE id IN (SELECT id FROM jobs WHERE state = 'RUNNING' ORDER BY id
                                LIMIT 50 OFFSET {})
                   RETURNING id)
                 UPDATE allocations SET released_at = now() WHERE job_id IN (SELECT id FROM ended);
                 UPDATE nodes SET state = 'DRAINED', reason = 'bench'
                   WHERE id IN (SELECT id FROM nodes ORDER BY id LIMIT 10 OFFSET {});
                 UPDATE nodes SET last_heartbeat = now();
                 UPDATE gpus SET utilization_pct = 50 + {round}, sampled_at = now();
                 UPDATE jobs SET reason = 'Priority{round}', priority = id + {round},
                                 expected_start = now() + interval '1 hour'
                   WHERE state = 'PENDING';",
                round * 50,
                round * 10
            ),
        )
        .await;
        let t = Instant::now();
        cache
            .refresh(&pool, chrono::Utc::now(), &config)
            .await
            .unwrap();
        time(
            &format!("after a burst of changes {round}"),
            t.elapsed(),
            &cache,
        );
    }
    scratch.drop().await;
}
