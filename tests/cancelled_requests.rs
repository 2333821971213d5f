//! Requests cancelled mid-transaction, by the thousand: clients that give up after a few
//! milliseconds (the api drops the handler of a client that disconnects) on endpoints that
//! open transactions — submit, cancel, a node's sync with reports. No database session of
//! the cluster is left idle inside a transaction (which would hold its row locks and
//! stall every writer behind it: sqlx 0.8's `Pool::begin` returned a connection to the
//! pool inside a transaction when cancelled during `BEGIN`), and the cluster still
//! schedules afterwards.

use crate::cluster::{Options, TestCluster, SECRET};
use berth_core::auth::Role;
use berth_core::state::JobState;
use rand::Rng;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Sessions of the cluster's database idle inside a transaction for over three seconds
/// (every Berth transaction runs its statements back to back; the server would end such
/// a session only after `idle_in_transaction_session_timeout`, 5 s).
const STALE_TRANSACTIONS: &str = "SELECT format('pid %s %s for %s s: %s', pid, state,
        round(EXTRACT(EPOCH FROM now() - state_change)::numeric, 1), left(query, 120))
    FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND state LIKE 'idle in transaction%' AND now() - state_change > interval '3 seconds'";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_cancelled_requests_leave_no_transaction_open() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100",
        poll_wait: Some(1),
        ..Default::default()
    })
    .await;
    // A node of the test's own (no GPUs, so nothing is placed there) whose syncs carry
    // reports: each opens a transaction that locks a job row.
    let probe = "bxd-probe";
    let node_token = berth_api::mint_token(SECRET, &format!("node:{probe}"), Role::Node, 3600);
    let (status, body) = c
        .call(
            reqwest::Method::POST,
            "/v1/nodes/register",
            Some(&node_token),
            Some(json!({"name": probe, "hostname": probe, "cpus": 1, "memory_mib": 1024, "gpus": []})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // Held jobs: what the cancels and the probe's time-limit reports lock.
    let mut held = Vec::new();
    for _ in 0..40 {
        held.push(
            c.submit("#!/bin/bash\ntrue\n", &["--hold", "--gres=gpu:1"])
                .await,
        );
    }

    // Watch the database all along: a leaked transaction shows as a session idle in
    // one, until the server's timeout ends it.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn({
        let stop = stop.clone();
        let db = c.db().await;
        async move {
            let mut stale: Vec<String> = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                stale.extend(
                    sqlx::query_scalar::<_, String>(STALE_TRANSACTIONS)
                        .fetch_all(&db)
                        .await
                        .unwrap(),
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            db.close().await;
            stale
        }
    });

    const REQUESTS: usize = 3000;
    let cancelled = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Semaphore::new(24));
    let mut storm = tokio::task::JoinSet::new();
    for n in 0..REQUESTS {
        let permit = gate.clone().acquire_owned().await.unwrap();
        let (http, url, token, node_token) = (
            c.http.clone(),
            c.url.clone(),
            c.token.clone(),
            node_token.clone(),
        );
        let (cancelled, answered) = (cancelled.clone(), answered.clone());
        let (wait_ms, target) = {
            let mut rng = rand::rng();
            (
                rng.random_range(2..=60u64),
                held[rng.random_range(0..held.len() - 1)],
            )
        };
        storm.spawn(async move {
            let request = match n % 3 {
                0 => http
                    .post(format!("{url}/v1/jobs"))
                    .bearer_auth(&token)
                    .json(&json!({
                        "script": "#!/bin/bash\n#SBATCH --hold\ntrue\n",
                        "args": ["--gres=gpu:1"],
                    })),
                1 => http
                    .post(format!("{url}/v1/jobs/{target}/cancel"))
                    .bearer_auth(&token),
                _ => http
                    .post(format!("{url}/v1/nodes/{probe}/sync"))
                    .bearer_auth(&node_token)
                    .json(&json!({
                        "wait_seconds": 0,
                        "time_limits": [{"job_id": target, "run": 0}],
                        "reports": [{"job_id": i64::MAX - n as i64, "run": 0, "kind": "exited",
                                     "at": chrono::Utc::now(), "exit_code": 0, "signal": null,
                                     "message": null}],
                    })),
            };
            match request.timeout(Duration::from_millis(wait_ms)).send().await {
                Ok(_) => answered.fetch_add(1, Ordering::SeqCst),
                Err(_) => cancelled.fetch_add(1, Ordering::SeqCst),
            };
            drop(permit);
        });
    }
    while storm.join_next().await.is_some() {}
    // Let the api finish what the storm left in flight.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::SeqCst);
    let stale = watcher.await.unwrap();
    let (cancelled, answered) = (
        cancelled.load(Ordering::SeqCst),
        answered.load(Ordering::SeqCst),
    );
    println!("{cancelled} requests given up by their clients, {answered} answered");
    assert!(
        cancelled >= 1000,
        "only {cancelled} of {REQUESTS} requests were given up: the test cancelled too few"
    );
    assert!(
        stale.is_empty(),
        "sessions sat idle inside a transaction:\n{}\napi log:\n{}",
        stale.join("\n"),
        tail(&c.log("api"), 40)
    );
    // Nothing is open now.
    let db = c.db().await;
    let open: Vec<String> = sqlx::query_scalar(
        "SELECT format('pid %s %s: %s', pid, state, left(query, 120)) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND state LIKE 'idle in transaction%'",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    db.close().await;
    assert!(open.is_empty(), "transactions left open: {open:?}");
    // No statement ran inside a transaction someone else had begun.
    let log = c.log("api");
    assert!(
        !log.contains("already a transaction in progress"),
        "a BEGIN ran inside a leaked transaction:\n{}",
        tail(&log, 40)
    );
    // Nor did one come back to the pool inside a transaction (the pool's backstop, which
    // would close it, never had anything to do).
    assert!(
        !log.contains("came back to the pool inside a transaction"),
        "{}",
        tail(&log, 40)
    );

    // The cluster still schedules: a new job runs to completion, and a held job can still
    // be released and run (its row is not locked by anything).
    let id = c
        .submit("#!/bin/bash\necho still here\n", &["--gres=gpu:1"])
        .await;
    let job = c.wait_ended(id, 120).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert!(c.output(id).await.contains("still here"));
    let survivor = *held.last().unwrap();
    if c.job(survivor).await.state == JobState::Pending {
        let (status, body) = c
            .call(
                reqwest::Method::POST,
                &format!("/v1/jobs/{survivor}/release"),
                Some(&c.token),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let job = c.wait_ended(survivor, 120).await;
        assert_eq!(job.state, JobState::Completed, "{job:?}");
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
