//! The shared batch scripts that need the scheduler's arrays and dependencies, end to end
//! on two workers: `array_sweep.sbatch` within its throttle, and `dependency_chain.sh`
//! driven through the `sbatch` name.

use crate::cluster::{berth_bin, example, Options, TestCluster};
use berth_core::state::JobState;
use berth_core::wire::{Job, JobList};
use chrono::{DateTime, Utc};
use std::time::{Duration, Instant};

/// The most jobs of `jobs` that ran at the same moment.
fn max_concurrency(jobs: &[Job]) -> usize {
    let mut events: Vec<(DateTime<Utc>, i32)> = Vec::new();
    for j in jobs {
        events.push((j.start_time.unwrap(), 1));
        events.push((j.end_time.unwrap(), -1));
    }
    // Ends before starts at the same instant.
    events.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        most = most.max(now);
    }
    most as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn array_sweep_runs_ten_tasks_never_more_than_three_at_once() {
    let c = TestCluster::start(Options::default()).await;
    let script = std::fs::read_to_string(example("array_sweep.sbatch")).unwrap();
    let array = c.submit(&script, &[]).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let tasks = loop {
        let page: JobList = c.get("/v1/jobs?limit=1000").await;
        let tasks: Vec<Job> = page
            .items
            .into_iter()
            .filter(|j| j.id == array || j.array_job_id == Some(array))
            .collect();
        if tasks.len() == 10 && tasks.iter().all(|j| j.state.is_terminal()) {
            break tasks;
        }
        assert!(Instant::now() < deadline, "array not done: {tasks:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        tasks.iter().all(|j| j.state == JobState::Completed),
        "{tasks:?}"
    );
    let mut indices: Vec<u32> = tasks.iter().map(|j| j.array_task_id.unwrap()).collect();
    indices.sort();
    assert_eq!(indices, (0..10).collect::<Vec<_>>());
    let most = max_concurrency(&tasks);
    assert!(
        (1..=3).contains(&most),
        "{most} tasks ran at once (throttle %3)"
    );
    let lrs = [
        "1e-2", "5e-3", "2e-3", "1e-3", "5e-4", "2e-4", "1e-4", "5e-5", "2e-5", "1e-5",
    ];
    for (i, lr) in lrs.iter().enumerate() {
        // %A_%a: the array's id and the task index name each output file.
        let out = std::fs::read_to_string(c.dir.join(format!("sweep_{array}_{i}.out")))
            .unwrap_or_else(|e| panic!("sweep_{array}_{i}.out: {e}"));
        let first = out.lines().next().unwrap();
        assert!(
            first.starts_with(&format!("array_job={array} task={i} of 10 lr={lr} gpus=")),
            "{first}"
        );
        assert!(out.contains("score "), "{out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependency_chain_runs_through_the_sbatch_name() {
    let c = TestCluster::start(Options::default()).await;
    let bin = c.dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(berth_bin(), bin.join("sbatch")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (url, token, dir) = (c.url.clone(), c.token.clone(), c.dir.clone());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("bash")
            .arg(example("dependency_chain.sh"))
            .current_dir(&dir)
            .env("PATH", path)
            .env("BERTH_URL", url)
            .env("BERTH_TOKEN", token)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ids: Vec<i64> = stdout
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    let [pre, train, eval, n1, n2] = ids[..] else {
        panic!("five ids expected: {stdout}")
    };
    let mut jobs = Vec::new();
    for id in [pre, train, eval, n1, n2] {
        jobs.push(c.wait_ended(id, 120).await);
    }
    let [pre_j, train_j, eval_j, n1_j, n2_j] = &jobs[..] else {
        unreachable!()
    };
    for j in &jobs {
        assert_eq!(j.state, JobState::Completed, "{j:?}");
    }
    // train waited for preprocess to complete (afterok), evaluate for train to end
    // (afterany), and the second "nightly" for the first (singleton).
    assert!(train_j.start_time.unwrap() >= pre_j.end_time.unwrap());
    assert!(eval_j.start_time.unwrap() >= train_j.end_time.unwrap());
    assert!(n2_j.start_time.unwrap() >= n1_j.end_time.unwrap());
    assert_eq!(train_j.gpus_per_node, 1);
    for (id, text) in [
        (pre, "tokenising"),
        (train, "training"),
        (eval, "evaluating"),
        (n1, "first"),
        (n2, "second"),
    ] {
        assert_eq!(c.output(id).await.trim(), text);
    }
}
