//! PostgreSQL sizing (run on demand, never in tests): what each job costs the database,
//! in rows, table and index bytes (`pg_total_relation_size`) and write-ahead log
//! (`pg_current_wal_lsn`), measured on a whole cluster running jobs to their end.
//!
//! ```sh
//! export CARGO_TARGET_DIR=…
//! cargo build --release -p berth --bin berth --example pg_sizing
//! $CARGO_TARGET_DIR/release/examples/pg_sizing [JOBS] [WORKERS] [IDLE_SECONDS] [IN_FLIGHT]
//! ```
//! Defaults: 20,000 jobs, 4 workers of 8 simulated H100s, 10 s of an idle cluster
//! measured first, all jobs submitted as fast as the api takes them (`IN_FLIGHT` above 0:
//! no more than that many jobs submitted and not ended, a cluster that keeps up with its
//! submissions; without it a backlog of pending jobs builds up, whose rows the scheduler
//! rewrites while they wait). It starts a private PostgreSQL server (`berth::pg`, what `berth dev`
//! starts: PostgreSQL's default settings, so that the WAL counted is this benchmark's
//! alone) under a scratch directory, serves the api on it in this process through
//! `berth_api::serve` (rate limits off) and runs the scheduler through
//! `berth_scheduler::run` (what `berth server --role all` runs), and starts the workers as
//! `berth worker` processes (the binary at `BERTH_BIN`, else `release/berth` beside this
//! example; jobs run as the worker's user). It measures the idle cluster's WAL rate (node
//! syncs, leader lease), then submits the jobs through `POST /v1/jobs` as `sbatch` does
//! (a 10-line script asking one GPU, this process's environment exported), 8 requests at
//! a time from 10 users, waits for every job to end, and prints, per table, the rows and
//! bytes added and their share per job, the WAL per job (less the idle rate over the
//! run), and the figures for a million jobs a day and a year of them.

use berth_core::auth::Role;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "bench-secret";

/// The `berth` binary for the workers.
fn berth_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("BERTH_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("berth")
}

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// Each user table's (rows, bytes of table, indexes and TOAST).
async fn tables(pool: &sqlx::PgPool) -> Vec<(String, i64, i64)> {
    let names: Vec<String> =
        sqlx::query_scalar("SELECT relname::text FROM pg_stat_user_tables ORDER BY relname")
            .fetch_all(pool)
            .await
            .unwrap();
    let mut out = Vec::new();
    for name in names {
        let (rows, bytes): (i64, i64) = sqlx::query_as(&format!(
            "SELECT (SELECT count(*) FROM \"{name}\"), pg_total_relation_size('\"{name}\"')"
        ))
        .fetch_one(pool)
        .await
        .unwrap();
        out.push((name, rows, bytes));
    }
    out
}

async fn wal(pool: &sqlx::PgPool) -> i64 {
    sqlx::query_scalar("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")
        .fetch_one(pool)
        .await
        .unwrap()
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / 1024.0 / 1024.0)
}

fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / 1024.0 / 1024.0 / 1024.0)
}

/// Stops the workers and the server.
fn stop_all(children: Vec<Child>, server: berth::pg::PgServer) {
    for mut child in children {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = server.stop();
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (jobs, workers, idle, in_flight) = (arg(1, 20_000), arg(2, 4), arg(3, 10), arg(4, 0));
    let dir = std::env::temp_dir().join("berth-bench-pg-sizing");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(dir.join("pg")).unwrap();
    let server = berth::pg::PgServer::start(&dir.join("pg")).await.unwrap();
    let url = server.database_url();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect(&url)
        .await
        .unwrap();
    let version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(&pool)
        .await
        .unwrap();

    // The api and the scheduler, as `berth server --role all` runs them.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api = format!("http://{}", listener.local_addr().unwrap());
    let config = berth_api::ApiConfig {
        cluster_name: berth_core::cluster::DEFAULT_CLUSTER_NAME.to_string(),
        database_url: url.clone(),
        jwt_secret: Some(SECRET.to_string()),
        jwt_public_key_pem: None,
        max_connections: 16,
        db_timeouts: berth_db::Timeouts::default(),
        db_pooling: berth_db::Pooling::default(),
        limits: berth_api::limits::Limits {
            per_principal_per_second: 0,
            per_address_per_second: 0,
            ..Default::default()
        },
        oidc: Vec::new(),
        tls: None,
        definitions: Default::default(),
        node_timeout: Duration::from_secs(60),
        webhooks: Default::default(),
        metrics: Default::default(),
        will_run: None,
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut stopped_api = stopped.clone();
    let api_task = tokio::spawn(berth_api::serve(config, listener, async move {
        let _ = stopped_api.changed().await;
    }));
    let http = reqwest::Client::new();
    for _ in 0..100 {
        if http.get(format!("{api}/healthz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut stopped_scheduler = stopped.clone();
    let scheduler_task = tokio::spawn(berth_scheduler::run(
        berth_scheduler::SchedulerConfig::new(url.clone(), "bench-scheduler"),
        async move {
            let _ = stopped_scheduler.changed().await;
        },
    ));

    // The workers.
    let node_token = berth_api::mint_token(SECRET, "node:*", Role::Node, 24 * 3600);
    let admin = berth_api::mint_token(SECRET, "admin", Role::Admin, 24 * 3600);
    let mut children: Vec<Child> = Vec::new();
    for i in 1..=workers {
        let name = format!("node-{i}");
        let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
        children.push(
            Command::new(berth_binary())
                .args(["worker", "--api", &api, "--token", &node_token, "--name"])
                .arg(&name)
                .args(["--simulate-gpus", "8xH100", "--state-dir"])
                .arg(dir.join(&name))
                .args(["--kill-wait", "2", "--run-as", "worker"])
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("starting a worker (BERTH_BIN, or release/berth beside this example)"),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let nodes: berth_core::wire::NodeList = http
            .get(format!("{api}/v1/nodes"))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if nodes.items.len() as u64 == workers {
            break;
        }
        assert!(Instant::now() < deadline, "the workers did not join");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;

    // The idle cluster's WAL rate.
    let idle_start = wal(&pool).await;
    tokio::time::sleep(Duration::from_secs(idle)).await;
    let idle_rate = (wal(&pool).await - idle_start) as f64 / idle as f64;

    let before = tables(&pool).await;
    let wal_before = wal(&pool).await;
    let started = Instant::now();
    let script = format!(
        "#!/bin/bash\n#SBATCH --gres=gpu:1\n#SBATCH -J sizing\n{}echo done\n",
        "# a line of the batch script\n".repeat(7)
    );
    // The jobs' working directory, which the workers' user (this one) can enter.
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let environment = berth::submit::submit_environment();
    let env_bytes: usize = environment.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let tokens: Vec<String> = (0..10)
        .map(|u| berth_api::mint_token(SECRET, &format!("u{u}"), Role::User, 24 * 3600))
        .collect();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(8));
    let mut submits = tokio::task::JoinSet::new();
    for i in 0..jobs {
        // Paced: no more than `in_flight` jobs submitted and not ended.
        if in_flight > 0 {
            loop {
                let open: i64 =
                    sqlx::query_scalar("SELECT count(*) FROM jobs WHERE end_time IS NULL")
                        .fetch_one(&pool)
                        .await
                        .unwrap();
                let sending = 8 - gate.available_permits() as u64;
                if open as u64 + sending < in_flight {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let permit = gate.clone().acquire_owned().await.unwrap();
        let body = berth_core::wire::JobCreate {
            script: Some(script.clone()),
            args: Vec::new(),
            submit_dir: Some(work.to_string_lossy().into_owned()),
            environment: environment.clone(),
            ..Default::default()
        };
        let (http, api, token) = (http.clone(), api.clone(), tokens[i as usize % 10].clone());
        submits.spawn(async move {
            let r = http
                .post(format!("{api}/v1/jobs"))
                .bearer_auth(&token)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap());
            drop(permit);
        });
        while submits.try_join_next().is_some() {}
    }
    while let Some(done) = submits.join_next().await {
        done.unwrap();
    }
    let submitted = started.elapsed();
    eprintln!("{jobs} jobs submitted in {:.0} s", submitted.as_secs_f64());
    let failure = loop {
        let (open, failed): (i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE end_time IS NULL), \
                    count(*) FILTER (WHERE state <> 'COMPLETED' AND end_time IS NOT NULL) FROM jobs",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        if failed > 0 {
            let reason: Option<String> =
                sqlx::query_scalar("SELECT reason FROM jobs WHERE state <> 'COMPLETED' AND end_time IS NOT NULL LIMIT 1")
                    .fetch_one(&pool)
                    .await
                    .unwrap();
            break Some(format!("{failed} jobs did not complete: {reason:?}"));
        }
        if open == 0 {
            break None;
        }
        eprintln!("{open} jobs not ended yet");
        tokio::time::sleep(Duration::from_secs(10)).await;
    };
    if let Some(failure) = failure {
        stop_all(children, server);
        panic!("{failure}");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let wal_total = (wal(&pool).await - wal_before) as f64;
    let after = tables(&pool).await;

    let n = jobs as f64;
    println!(
        "PostgreSQL {version}; {jobs} jobs (one GPU each, `echo done`) on {workers} workers of 8 GPUs, \
         at most {in_flight} in flight (0: no limit); submitted in {:.0} s, all ended after {elapsed:.0} s \
         ({:.1} jobs/s); environment {env_bytes} bytes per job",
        submitted.as_secs_f64(),
        n / elapsed
    );
    println!("| table | rows added | rows per job | bytes added | bytes per job |");
    println!("|---|---|---|---|---|");
    let (mut total_bytes, mut total_rows) = (0f64, 0f64);
    for (name, rows, bytes) in &after {
        let (rows0, bytes0) = before
            .iter()
            .find(|(n, _, _)| n == name)
            .map_or((0, 0), |(_, r, b)| (*r, *b));
        let (rows, bytes) = ((rows - rows0) as f64, (bytes - bytes0) as f64);
        if rows == 0.0 && bytes == 0.0 {
            continue;
        }
        total_bytes += bytes;
        total_rows += rows;
        println!(
            "| {name} | {rows:.0} | {:.2} | {} | {:.0} |",
            rows / n,
            mib(bytes),
            bytes / n
        );
    }
    println!(
        "| all | {total_rows:.0} | {:.2} | {} | {:.0} |",
        total_rows / n,
        mib(total_bytes),
        total_bytes / n
    );
    let wal_jobs = wal_total - idle_rate * elapsed;
    println!(
        "WAL: {} in all, idle cluster {:.0} bytes/s, so {:.0} bytes per job",
        mib(wal_total),
        idle_rate,
        wal_jobs / n
    );
    println!(
        "a million jobs a day: {} of tables and indexes and {} of WAL a day; a year: {} and {}",
        gib(total_bytes / n * 1e6),
        gib(wal_jobs / n * 1e6),
        gib(total_bytes / n * 365e6),
        gib(wal_jobs / n * 365e6)
    );

    let _ = stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(10), api_task).await;
    let _ = tokio::time::timeout(Duration::from_secs(10), scheduler_task).await;
    pool.close().await;
    stop_all(children, server);
    if std::env::var_os("KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
