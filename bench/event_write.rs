//! Event write overhead on submission (run on demand, never in tests): what the event
//! triggers (migration `20261201150001_events.sql`: a `berth.job.submitted` row in
//! `events` and a `NOTIFY berth_events` per submission) add to storing a job.
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   cargo run --release -p berth-db --example event_write [-- JOBS CLIENTS]
//! ```
//! Defaults: 2,000 jobs per measurement, 8 concurrent clients. It creates a scratch
//! database `berth_bench_events` (dropped and re-created each run), runs the migrations,
//! and times the submission transaction the api runs (`job_insert_in_tx`, which also
//! writes the job's history row, then `NOTIFY berth_jobs`, then commit) with the event
//! triggers disabled (`ALTER TABLE … DISABLE TRIGGER`), enabled, and enabled without
//! `events_notify` (the rows without their `NOTIFY`), alternating five rounds of each:
//! one client (median latency per submission) and `CLIENTS` clients at once (submissions
//! per second).

#[path = "scratch.rs"]
mod scratch;

use berth_db::job::{job_insert_in_tx, JobInsert};
use scratch::{arg, exec, median, Scratch};
use std::time::{Duration, Instant};

const DB: &str = "berth_bench_events";

fn job(n: usize) -> JobInsert {
    JobInsert {
        name: format!("bench-{n}"),
        user_name: format!("user{}", n % 50),
        account: Some(format!("acct{}", n % 10)),
        partition: "gpu".into(),
        qos: None,
        num_nodes: 1,
        num_tasks: 1,
        cpus_per_task: 4,
        gpus_per_node: 1,
        gpu_type: None,
        exclusive: false,
        whole_node: false,
        mem_mib: Some(16_384),
        time_limit: Some(3600),
        hold: false,
        script: "#!/bin/bash\n#SBATCH --gpus=1\npython train.py\n".into(),
        submit_dir: Some("/home/user".into()),
        work_dir: None,
        stdout_pattern: "slurm-%j.out".into(),
        stderr_pattern: None,
        environment: serde_json::json!({"PATH": "/usr/bin:/bin", "HOME": "/home/user"}),
        spec: serde_json::json!({"gpus": 1, "cpus_per_task": 4}),
        reason: None,
        nice: 0,
        begin_time: None,
        dependency: None,
        array_pending: None,
        array_max_running: None,
        array_task_count: None,
        gres: "gpu".into(),
        cpus_per_node: 4,
        mem_per_node_mib: Some(16_384),
        nodelist: Vec::new(),
        exclude: Vec::new(),
        partitions: Vec::new(),
        time_min: None,
        script_args: Vec::new(),
    }
}

/// One submission as the api makes it; its latency.
async fn submit(pool: &sqlx::PgPool, n: usize) -> Duration {
    let started = Instant::now();
    let mut tx = berth_db::begin(pool).await.unwrap();
    job_insert_in_tx(&mut tx, &job(n)).await.unwrap();
    berth_db::notify::notify(&mut *tx, berth_db::notify::JOBS_CHANNEL, "")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    started.elapsed()
}

/// The event triggers on (`rows`: the `events` row; `notify`: its `NOTIFY berth_events`)
/// or off.
async fn set_triggers(pool: &sqlx::PgPool, rows: bool, notify: bool) {
    let verb = |on: bool| if on { "ENABLE" } else { "DISABLE" };
    exec(
        pool,
        &format!(
            "ALTER TABLE jobs {rows} TRIGGER jobs_event_insert;
             ALTER TABLE jobs {rows} TRIGGER jobs_event_update;
             ALTER TABLE events {notify} TRIGGER events_notify;",
            rows = verb(rows),
            notify = verb(notify)
        ),
    )
    .await;
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let (jobs, clients) = (arg(1, 2_000), arg(2, 8).max(1));
    let scratch = Scratch::create(DB, clients as u32 + 1).await;
    let pool = scratch.pool.clone();
    // Warm up: plans, caches, the sequence.
    for n in 0..200 {
        submit(&pool, n).await;
    }
    // Without events; with them; with the rows but not their NOTIFY.
    let configs = [(false, false), (true, true), (true, false)];
    let mut serial = [Vec::new(), Vec::new(), Vec::new()];
    let mut rates = [Vec::new(), Vec::new(), Vec::new()];
    let mut next = 1_000_000;
    for _round in 0..5 {
        for (i, &(rows, notify)) in configs.iter().enumerate() {
            set_triggers(&pool, rows, notify).await;
            let mut lat = Vec::with_capacity(jobs);
            for _ in 0..jobs {
                lat.push(submit(&pool, next).await);
                next += 1;
            }
            serial[i].push(median(lat));
            let started = Instant::now();
            let per = jobs / clients;
            let tasks: Vec<_> = (0..clients)
                .map(|c| {
                    let pool = pool.clone();
                    let first = next + c * per;
                    tokio::spawn(async move {
                        for n in first..first + per {
                            submit(&pool, n).await;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            next += clients * per;
            rates[i].push((per * clients) as f64 / started.elapsed().as_secs_f64());
        }
    }
    set_triggers(&pool, true, true).await;
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&pool)
        .await
        .unwrap();
    let med = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (off, on) = (median(serial[0].clone()), median(serial[1].clone()));
    println!("submissions per measurement: {jobs}, concurrent clients: {clients}");
    println!(
        "one client, median latency: without events {:.3} ms, with events {:.3} ms ({:+.1} %)",
        off.as_secs_f64() * 1e3,
        on.as_secs_f64() * 1e3,
        (on.as_secs_f64() / off.as_secs_f64() - 1.0) * 100.0
    );
    let rows_only = median(serial[2].clone());
    println!(
        "one client, median latency: events without their NOTIFY {:.3} ms ({:+.1} %)",
        rows_only.as_secs_f64() * 1e3,
        (rows_only.as_secs_f64() / off.as_secs_f64() - 1.0) * 100.0
    );
    let (r_off, r_on, r_rows) = (med(&rates[0]), med(&rates[1]), med(&rates[2]));
    println!(
        "{clients} clients, submissions/s: without events {r_off:.0}, with events {r_on:.0} ({:+.1} %), \
         events without their NOTIFY {r_rows:.0} ({:+.1} %)",
        (r_on / r_off - 1.0) * 100.0,
        (r_rows / r_off - 1.0) * 100.0
    );
    println!("events written: {events}");
    scratch.drop().await;
}
