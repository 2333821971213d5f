//! squeue benchmark (run on demand, never in tests): how long `squeue` takes (the `berth`
//! binary called through a link named `squeue`, default format, every page) against an
//! api whose database holds 10,000 pending jobs, and how long the api's job list takes on
//! its own.
//!
//! ```sh
//! export CARGO_TARGET_DIR=… DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres
//! cargo build --release -p berth --bin berth --example squeue_list
//! $CARGO_TARGET_DIR/release/examples/squeue_list [PENDING RUNNING ENDED RUNS]
//! ```
//! Defaults: 10,000 pending jobs, 200 running ones (one node each), 5,000 ended ones, 20
//! timed runs of each command after 3 untimed ones. It creates a scratch database
//! `berth_bench_squeue` (dropped and re-created each run; `KEEP=1` keeps it), serves the
//! api on it on a loopback port through `berth_api::serve` (what `berth server --role api`
//! runs; rate limits off), submits one job through `POST /v1/jobs` as `sbatch` does (this
//! process's whole environment exported, a 40-line script) and copies its row in SQL into
//! the others, spread over 200 users and 20 accounts with distinct priorities and submit
//! times. Then it times, as the admin (who sees every job) and as an ordinary user (who
//! sees their own 51 jobs): `squeue` (the binary at `BERTH_BIN`, else `release/berth`
//! beside this example, run through a link named `squeue` with `BERTH_URL`/`BERTH_TOKEN`),
//! and the api's lists on their own, read by this process: every page of
//! `GET /v1/queue?state=PENDING,RUNNING` as JSON pages and as one `application/x-ndjson`
//! stream (what `squeue` reads), and of `GET /v1/jobs?state=PENDING,RUNNING&limit=1000`
//! (what it read before issue 15). Prints the
//! median, the fastest and the slowest of each, and the bytes the api sent.

#[path = "scratch.rs"]
mod scratch;

use berth_core::auth::Role;
use scratch::{arg, exec, median, Scratch};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DB: &str = "berth_bench_squeue";
const SECRET: &str = "bench-secret";

fn summary(times: &[Duration]) -> String {
    let mut sorted = times.to_vec();
    sorted.sort();
    format!(
        "median {:.1} ms, fastest {:.1} ms, slowest {:.1} ms ({} runs)",
        median(sorted.clone()).as_secs_f64() * 1000.0,
        sorted[0].as_secs_f64() * 1000.0,
        sorted[sorted.len() - 1].as_secs_f64() * 1000.0,
        sorted.len()
    )
}

/// The `berth` binary to run as `squeue`.
fn berth_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("BERTH_BIN") {
        return PathBuf::from(path);
    }
    // target/release/examples/squeue_list → target/release/berth
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("berth")
}

/// Runs `squeue ARGS` once as `token`; the lines it printed.
fn squeue(link: &PathBuf, url: &str, token: &str, args: &[&str]) -> usize {
    let out = Command::new(link)
        .args(args)
        .env("BERTH_URL", url)
        .env("BERTH_TOKEN", token)
        .env_remove("BERTH_CA_FILE")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "squeue {args:?} failed");
    out.stdout.iter().filter(|b| **b == b'\n').count()
}

/// Every page of `GET {path}` with `query` (as the CLI asks for squeue's default
/// states); the jobs and the bytes received.
async fn list_pages(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    path: &str,
    query: &str,
) -> (usize, usize) {
    let (mut jobs, mut bytes) = (0, 0);
    let mut cursor: Option<String> = None;
    loop {
        let mut u = format!("{url}{path}?{query}");
        if let Some(c) = &cursor {
            u.push_str(&format!("&cursor={c}"));
        }
        let body = http
            .get(&u)
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .error_for_status()
            .unwrap()
            .bytes()
            .await
            .unwrap();
        bytes += body.len();
        let page: serde_json::Value = serde_json::from_slice(&body).unwrap();
        jobs += page["items"].as_array().map_or(0, Vec::len);
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return (jobs, bytes),
        }
    }
}

/// `GET /v1/queue?{query}` as `application/x-ndjson`, read to its end; the lines and
/// the bytes received.
async fn stream_lines(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    query: &str,
) -> (usize, usize) {
    let mut response = http
        .get(format!("{url}/v1/queue?{query}"))
        .header("accept", "application/x-ndjson")
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    let (mut lines, mut bytes) = (0, 0);
    while let Some(chunk) = response.chunk().await.unwrap() {
        bytes += chunk.len();
        lines += chunk.iter().filter(|b| **b == b'\n').count();
    }
    (lines, bytes)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (pending, running, ended, runs) = (arg(1, 10_000), arg(2, 200), arg(3, 5_000), arg(4, 20));
    let scratch = Scratch::create(DB, 4).await;
    let pool = scratch.pool.clone();

    // The api, as `berth server --role api` serves it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let config = berth_api::ApiConfig {
        cluster_name: berth_core::cluster::DEFAULT_CLUSTER_NAME.to_string(),
        database_url: scratch.url.clone(),
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
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(berth_api::serve(config, listener, async {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    for _ in 0..100 {
        if http.get(format!("{url}/healthz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // One job submitted as sbatch submits it, then copied.
    let t = Instant::now();
    let template = berth_core::wire::JobCreate {
        script: Some(format!(
            "#!/bin/bash\n#SBATCH --gres=gpu:1\n#SBATCH -t 1-00:00:00\n{}python train.py\n",
            "# a typical batch script line\n".repeat(40)
        )),
        args: vec!["-J".into(), "train".into()],
        submit_dir: Some("/home/u0/project".into()),
        environment: berth::submit::submit_environment(),
        ..Default::default()
    };
    let user0 = berth_api::mint_token(SECRET, "u0", Role::User, 3600);
    let created: berth_core::wire::JobCreated = http
        .post(format!("{url}/v1/jobs"))
        .bearer_auth(&user0)
        .json(&template)
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .json()
        .await
        .unwrap();
    let columns: Vec<String> = sqlx::query_scalar(
        "SELECT column_name::text FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name = 'jobs'
           AND column_name NOT IN ('id', 'change_xid') ORDER BY ordinal_position",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let copy = |count: usize, overrides: &[(&str, String)]| {
        let values: Vec<String> = columns
            .iter()
            .map(|c| {
                overrides
                    .iter()
                    .find(|(name, _)| name == c)
                    .map_or_else(|| format!("t.{c}"), |(_, v)| v.clone())
            })
            .collect();
        format!(
            "INSERT INTO jobs ({}) SELECT {} FROM jobs t, generate_series(1, {count}) i
             WHERE t.id = {};",
            columns.join(", "),
            values.join(", "),
            created.id
        )
    };
    let common = |state: &str| -> Vec<(&'static str, String)> {
        vec![
            ("user_name", "'u' || (i % 200)".into()),
            ("account", "'acct' || (i % 20)".into()),
            ("name", "'train' || (i % 50)".into()),
            ("state", format!("'{state}'")),
            (
                "submit_time",
                "now() - interval '8 days' + make_interval(secs => i * 30)".into(),
            ),
        ]
    };
    let mut pending_cols = common("PENDING");
    pending_cols.push(("priority", "(i * 7919) % 100000".into()));
    pending_cols.push((
        "reason",
        "(ARRAY['Priority', 'Resources', 'Dependency', 'QOSMaxGRESPerUser'])[1 + i % 4]".into(),
    ));
    let mut running_cols = common("RUNNING");
    running_cols.push(("start_time", "now() - interval '1 hour'".into()));
    running_cols.push(("reason", "NULL".into()));
    let mut ended_cols = common("COMPLETED");
    // Submitted before they started, however many there are (one a second).
    ended_cols.retain(|(c, _)| *c != "submit_time");
    ended_cols.push((
        "submit_time",
        "now() - interval '3 hours' - make_interval(secs => i)".into(),
    ));
    ended_cols.push(("start_time", "now() - interval '3 hours'".into()));
    ended_cols.push(("end_time", "now() - interval '2 hours'".into()));
    ended_cols.push(("exit_code", "0".into()));
    ended_cols.push(("reason", "NULL".into()));
    exec(
        &pool,
        &format!(
            "{ended_sql}
             {running_sql}
             {pending_sql}
             DELETE FROM jobs WHERE id = {template};
             INSERT INTO nodes (name, hostname, cpus, memory_mib, state)
               SELECT format('gpu%s', lpad(i::text, 4, '0')), 'host', 64, 1048576, 'UP'
               FROM generate_series(1, {running}) i;
             INSERT INTO allocations (job_id, run, node_id, node_index, gpu_indices, term)
               SELECT j.id, 0, n.id, 0, '{{0}}', 1
               FROM (SELECT id, row_number() OVER (ORDER BY id) AS k FROM jobs
                     WHERE state = 'RUNNING') j
               JOIN (SELECT id, row_number() OVER (ORDER BY id) AS k FROM nodes) n USING (k);
             ANALYZE;",
            ended_sql = copy(ended, &ended_cols),
            running_sql = copy(running, &running_cols),
            pending_sql = copy(pending, &pending_cols),
            template = created.id,
        ),
    )
    .await;
    let env_bytes: i64 =
        sqlx::query_scalar("SELECT pg_column_size(environment)::bigint FROM jobs LIMIT 1")
            .fetch_one(&pool)
            .await
            .unwrap();
    println!(
        "seeded {pending} pending, {running} running, {ended} ended jobs in {:.1} s \
         (each with the {}-variable environment of this process, {env_bytes} bytes stored)",
        t.elapsed().as_secs_f64(),
        template.environment.len()
    );

    let dir = std::env::temp_dir().join(format!("berth-bench-squeue-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("squeue");
    std::os::unix::fs::symlink(berth_binary(), &link).unwrap();
    let admin = berth_api::mint_token(SECRET, "admin", Role::Admin, 3600);
    let user = berth_api::mint_token(SECRET, "u7", Role::User, 3600);
    for (who, token, expected) in [
        ("admin (sees every job)", &admin, pending + running),
        (
            "an ordinary user (u7)",
            &user,
            (pending + running).div_ceil(200),
        ),
    ] {
        let lines = squeue(&link, &url, token, &[]);
        println!("== {who}: squeue prints {} jobs", lines - 1);
        assert!(lines > expected / 2, "squeue printed {lines} lines");
        for _ in 0..3 {
            squeue(&link, &url, token, &[]);
        }
        let mut times = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            squeue(&link, &url, token, &[]);
            times.push(t.elapsed());
        }
        println!("squeue (default format): {}", summary(&times));
        for (path, query) in [
            ("/v1/queue", "state=PENDING,RUNNING"),
            ("/v1/jobs", "state=PENDING,RUNNING&limit=1000"),
        ] {
            let mut times = Vec::new();
            let mut sent = (0, 0);
            for _ in 0..runs + 3 {
                let t = Instant::now();
                sent = list_pages(&http, &url, token, path, query).await;
                times.push(t.elapsed());
            }
            println!(
                "GET {path}?{query}, every page ({} jobs, {} bytes): {}",
                sent.0,
                sent.1,
                summary(&times[3..])
            );
        }
        let query = "state=PENDING,RUNNING";
        let mut times = Vec::new();
        let mut sent = (0, 0);
        for _ in 0..runs + 3 {
            let t = Instant::now();
            sent = stream_lines(&http, &url, token, query).await;
            times.push(t.elapsed());
        }
        println!(
            "GET /v1/queue?{query} as application/x-ndjson, to the last line ({} jobs, {} bytes): {}",
            sent.0,
            sent.1,
            summary(&times[3..])
        );
    }

    // `GET /v1/jobs` (every job, ended ones too): the first page of 100, with and without
    // filters, as the admin.
    for (label, query) in [
        ("no filter", String::new()),
        ("state=RUNNING", "state=RUNNING".to_string()),
        ("state=COMPLETED", "state=COMPLETED".to_string()),
        ("state=PENDING,RUNNING", "state=PENDING,RUNNING".to_string()),
        ("user=u7", "user=u7".to_string()),
        ("name=train3", "name=train3".to_string()),
        ("account=acct3", "account=acct3".to_string()),
        (
            "user=u7&state=COMPLETED",
            "user=u7&state=COMPLETED".to_string(),
        ),
    ] {
        let mut times = Vec::new();
        let mut jobs = 0;
        for _ in 0..runs + 3 {
            let t = Instant::now();
            let page: serde_json::Value = http
                .get(format!("{url}/v1/jobs?limit=100&{query}"))
                .bearer_auth(&admin)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            times.push(t.elapsed());
            jobs = page["items"].as_array().map_or(0, Vec::len);
        }
        println!(
            "GET /v1/jobs?limit=100 first page, {label} ({jobs} jobs): {}",
            summary(&times[3..])
        );
    }
    // Where the queue's time goes: the query, the views, the JSON, the CLI's parse.
    let filter = berth_db::job::JobFilter {
        states: Some(vec!["PENDING".into(), "RUNNING".into()]),
        limit: 10_001,
        ..Default::default()
    };
    let (mut query, mut views, mut encode, mut parse, mut typed) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        let rows = berth_db::job::job_queue_list(&pool, &filter).await.unwrap();
        query.push(t.elapsed());
        let t = Instant::now();
        let items: Vec<_> = rows.into_iter().map(berth_api::views::queue_view).collect();
        views.push(t.elapsed());
        let t = Instant::now();
        let body = serde_json::to_vec(&berth_core::wire::QueueList {
            items,
            next_cursor: None,
        })
        .unwrap();
        encode.push(t.elapsed());
        let t = Instant::now();
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let _: berth_core::wire::QueueList = serde_json::from_value(value).unwrap();
        parse.push(t.elapsed());
        let t = Instant::now();
        let _: berth_core::wire::QueueList = serde_json::from_slice(&body).unwrap();
        typed.push(t.elapsed());
    }
    println!("queue parts: job_queue_list {}", summary(&query));
    println!("queue parts: queue_views {}", summary(&views));
    println!("queue parts: JSON encoding {}", summary(&encode));
    println!(
        "queue parts: parsing through serde_json::Value {}",
        summary(&parse)
    );
    println!(
        "queue parts: parsing straight to the type {}",
        summary(&typed)
    );

    let _ = std::fs::remove_dir_all(&dir);
    let _ = stop.send(());
    let _ = server.await;
    scratch.drop().await;
}
