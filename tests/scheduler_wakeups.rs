//! The scheduler's wake-ups coalesce: a burst of submissions and cancellations (one
//! `NOTIFY` each) costs a few cycles, not one per notification, an idle cluster runs
//! only the timer's cycles, and a submission to an idle scheduler is planned at once.
//! Cycles are counted from the leader's own log (`cycle ran`, one line per cycle, with
//! what woke it and how long its first notification waited for it).

use crate::cluster::{Options, TestCluster};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// (cycles, cycles woken by notifications) in `log`.
fn cycles(log: &str) -> (usize, usize) {
    let ran: Vec<&str> = log.lines().filter(|l| l.contains("cycle ran")).collect();
    let notify = ran.iter().filter(|l| l.contains("notify")).count();
    (ran.len(), notify)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_costs_a_few_cycles_and_an_idle_cluster_only_the_timers() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100",
        log_filter: Some("info,berth_scheduler::leadership=debug"),
        ..Default::default()
    })
    .await;
    let (leader, _) = c.wait_leader(30).await;
    // Let the first cycles of the term pass.
    tokio::time::sleep(Duration::from_secs(2)).await;

    // The burst: 300 submissions, then 300 cancellations, 8 at a time.
    const JOBS: usize = 300;
    let before = cycles(&c.log(&leader));
    let started = Instant::now();
    let gate = Arc::new(tokio::sync::Semaphore::new(8));
    let mut submits = tokio::task::JoinSet::new();
    for _ in 0..JOBS {
        let permit = gate.clone().acquire_owned().await.unwrap();
        let (http, url, token) = (c.http.clone(), c.url.clone(), c.token.clone());
        submits.spawn(async move {
            let r = http
                .post(format!("{url}/v1/jobs"))
                .bearer_auth(&token)
                .json(&serde_json::json!({
                    "script": "#!/bin/bash\n#SBATCH --hold\ntrue\n",
                    "args": ["--gres=gpu:1"],
                }))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 201);
            let id = r.json::<serde_json::Value>().await.unwrap()["id"]
                .as_i64()
                .unwrap();
            drop(permit);
            id
        });
    }
    let mut ids = Vec::new();
    while let Some(id) = submits.join_next().await {
        ids.push(id.unwrap());
    }
    let mut cancels = tokio::task::JoinSet::new();
    for id in ids {
        let permit = gate.clone().acquire_owned().await.unwrap();
        let (http, url, token) = (c.http.clone(), c.url.clone(), c.token.clone());
        cancels.spawn(async move {
            let r = http
                .post(format!("{url}/v1/jobs/{id}/cancel"))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            drop(permit);
        });
    }
    while let Some(done) = cancels.join_next().await {
        done.unwrap();
    }
    // The notifications still in flight are folded into the next cycle.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let burst = started.elapsed();
    let after = cycles(&c.log(&leader));
    let (ran, woken) = (after.0 - before.0, after.1 - before.1);
    println!(
        "burst of {} notifications over {:.1} s: {ran} cycles, {woken} woken by notifications",
        2 * JOBS,
        burst.as_secs_f64()
    );
    // Cycles that start nothing back off from 10 ms to `cycle_min_interval` (500 ms):
    // seven cycles while the interval grows, then at most one notification-woken cycle
    // per 500 ms, and one timer cycle per `cycle_interval_seconds` (1 s in tests), give
    // or take the edges.
    let secs = burst.as_secs_f64().ceil() as usize;
    assert!(
        woken <= 2 * secs + 2 + 7,
        "{woken} cycles woken by {} notifications in {secs} s",
        2 * JOBS
    );
    assert!(
        ran <= 3 * secs + 4 + 7 && ran * 4 < 2 * JOBS,
        "{ran} cycles for {} notifications in {secs} s",
        2 * JOBS
    );

    // Idle: only the timer's cycles (one a second here), none woken by notifications.
    let before = cycles(&c.log(&leader));
    tokio::time::sleep(Duration::from_secs(6)).await;
    let after = cycles(&c.log(&leader));
    let (ran, woken) = (after.0 - before.0, after.1 - before.1);
    println!("idle for 6 s: {ran} cycles, {woken} woken by notifications");
    assert_eq!(woken, 0, "an idle cluster was woken");
    assert!(ran <= 7, "{ran} cycles in 6 idle seconds");

    // A submission to the idle scheduler: the cycle it wakes runs without waiting.
    let lines_before = c.log(&leader).lines().count();
    let r = c
        .http
        .post(format!("{}/v1/jobs", c.url))
        .bearer_auth(&c.token)
        .json(&serde_json::json!({
            "script": "#!/bin/bash\ntrue\n",
            "args": ["--gres=gpu:1"],
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let id = r.json::<serde_json::Value>().await.unwrap()["id"]
        .as_i64()
        .unwrap();
    let job = c.wait_ended(id, 30).await;
    assert_eq!(job.state, berth_core::state::JobState::Completed);
    let log = c.log(&leader);
    let woken: Vec<&str> = log
        .lines()
        .skip(lines_before)
        .filter(|l| l.contains("cycle ran") && l.contains("trigger=\"notify\""))
        .collect();
    assert!(
        woken.first().is_some_and(|l| l.contains(" waited_ms=0 ")),
        "the submission's cycle waited: {woken:?}"
    );
}
