//! Event stream benchmark (run on demand, never in tests): does an api holding many open
//! `GET /v1/events` streams answer another user as fast as an idle one, and what do the
//! streams cost its database?
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   cargo run --release -p berth-api --example event_streams [-- STREAMS SECONDS]
//! ```
//! Defaults: 2,000 streams, 10 s of timed requests. It creates a scratch database
//! `berth_bench_events` (dropped and re-created each run), serves the api on it on a
//! loopback port through `berth_api::serve` (what `berth server --role api` runs; rate
//! limits off, default stream limits), and submits 20 held jobs of user `other`. Then,
//! with no stream open and again with STREAMS open (opened by users of 16 streams each,
//! the default per-user cap; every stream read by a task of this process), it times
//! `other`'s `GET /v1/jobs?limit=5`, one request after another for SECONDS, while a job
//! event of a streaming user is written every 100 ms (so that streams have events to
//! take), and counts the transactions the scratch database committed meanwhile
//! (`pg_stat_database`, read after PostgreSQL's statistics flush, 1.5 s after each end).
//! Prints the median and the 99th percentile of each, and the commits per second.

#[path = "scratch.rs"]
mod scratch;

use berth_core::auth::Role;
use scratch::{arg, Scratch};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DB: &str = "berth_bench_events";
const SECRET: &str = "bench-secret";

fn summary(mut times: Vec<Duration>) -> String {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "median {:.1} ms, p99 {:.1} ms ({} requests)",
        ms(times[times.len() / 2]),
        ms(times[(times.len() * 99 / 100).min(times.len() - 1)]),
        times.len()
    )
}

async fn commits(pool: &sqlx::PgPool) -> i64 {
    // Backends flush their counts at most once a second.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    sqlx::query("SELECT pg_stat_clear_snapshot()")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query_scalar(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Times `other`'s job list for `seconds` while user `u0` submits a held job every
/// 100 ms; prints the figures under `label`.
async fn measure(
    label: &str,
    http: &reqwest::Client,
    url: &str,
    pool: &sqlx::PgPool,
    other: &str,
    writer: &str,
    seconds: u64,
) {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let submitted = Arc::new(AtomicU64::new(0));
    let events = tokio::spawn({
        let (http, url, writer, stop, submitted) = (
            http.clone(),
            url.to_string(),
            writer.to_string(),
            stop.clone(),
            submitted.clone(),
        );
        async move {
            while !stop.load(Ordering::SeqCst) {
                let _ = http
                    .post(format!("{url}/v1/jobs"))
                    .bearer_auth(&writer)
                    .json(&serde_json::json!({"script": "#!/bin/bash\n#SBATCH --hold\ntrue\n"}))
                    .send()
                    .await;
                submitted.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });
    let before = commits(pool).await;
    let started = Instant::now();
    let mut times = Vec::new();
    while started.elapsed() < Duration::from_secs(seconds) {
        let t = Instant::now();
        let r = http
            .get(format!("{url}/v1/jobs?limit=5"))
            .bearer_auth(other)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.status());
        let _ = r.bytes().await.unwrap();
        times.push(t.elapsed());
    }
    stop.store(true, Ordering::SeqCst);
    let elapsed = started.elapsed() + Duration::from_millis(1500);
    let committed = commits(pool).await - before;
    events.await.unwrap();
    println!(
        "{label}: {}; {:.0} commits/s in the database ({} jobs submitted meanwhile)",
        summary(times),
        committed as f64 / elapsed.as_secs_f64(),
        submitted.load(Ordering::SeqCst)
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (streams, seconds) = (arg(1, 2_000), arg(2, 10) as u64);
    let scratch = Scratch::create(DB, 2).await;
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
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    for _ in 0..100 {
        if http.get(format!("{url}/healthz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let other = berth_api::mint_token(SECRET, "other", Role::User, 3600);
    let writer = berth_api::mint_token(SECRET, "u0", Role::User, 3600);
    for _ in 0..20 {
        http.post(format!("{url}/v1/jobs"))
            .bearer_auth(&other)
            .json(&serde_json::json!({"script": "#!/bin/bash\n#SBATCH --hold\ntrue\n"}))
            .send()
            .await
            .unwrap()
            .error_for_status()
            .unwrap();
    }
    measure(
        "no stream open",
        &http,
        &url,
        &scratch.pool,
        &other,
        &writer,
        seconds,
    )
    .await;

    // The streams: users u0, u1, … with 16 streams each (the default cap), each read to
    // its end by a task of its own.
    let received = Arc::new(AtomicU64::new(0));
    let streaming = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let t = Instant::now();
    let mut readers = Vec::with_capacity(streams);
    for i in 0..streams {
        let token = berth_api::mint_token(SECRET, &format!("u{}", i / 16), Role::User, 3600);
        let response = streaming
            .get(format!("{url}/v1/events"))
            .bearer_auth(&token)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "stream {i}");
        let received = received.clone();
        readers.push(tokio::spawn(async move {
            let mut response = response;
            while let Ok(Some(chunk)) = response.chunk().await {
                received.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
        }));
    }
    println!(
        "{streams} streams opened in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    measure(
        &format!("{streams} streams open"),
        &http,
        &url,
        &scratch.pool,
        &other,
        &writer,
        seconds,
    )
    .await;
    println!(
        "the streams received {:.1} MiB",
        received.load(Ordering::Relaxed) as f64 / 1048576.0
    );
    for r in readers {
        r.abort();
    }
    let _ = stop.send(());
    let _ = server.await;
    scratch.drop().await;
}
