//! Cancelling one task of a job array (`scancel 12_3`, `berth cancel 12_3`): the task
//! ends CANCELLED without ever starting, the other tasks run.

use crate::cluster::{berth_bin, Options, TestCluster};
use berth_core::state::JobState;
use berth_core::wire::{Job, JobList};
use std::process::Command;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_one_pending_array_task_leaves_the_others_running() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100",
        schedulers: 1,
        ..Default::default()
    })
    .await;
    // Held, so no task starts before the cancel.
    let id = c
        .submit(
            "#!/bin/bash\necho task $SLURM_ARRAY_TASK_ID\n",
            &["--array=0-3", "--gres=gpu:1", "--hold", "--time=1"],
        )
        .await;
    let out = Command::new(berth_bin())
        .args(["cancel", &format!("{id}_2")])
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &c.token)
        .env("HOME", &c.dir)
        .env("XDG_CONFIG_HOME", c.dir.join("config"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A task index the array does not have is a 404 naming it.
    let missing = c
        .http
        .post(format!("{}/v1/jobs/{id}/tasks/9/cancel", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    let released = c
        .http
        .post(format!("{}/v1/jobs/{id}/release", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert!(released.status().is_success());

    let deadline = Instant::now() + Duration::from_secs(60);
    let tasks = loop {
        let list: JobList = c.get("/v1/jobs?limit=1000").await;
        let mut tasks: Vec<Job> = list
            .items
            .into_iter()
            .filter(|j| j.array_job_id == Some(id) && j.array_task_id.is_some())
            .collect();
        tasks.sort_by_key(|j| j.array_task_id);
        if tasks.len() == 4 && tasks.iter().all(|t| t.state.is_terminal()) {
            break tasks;
        }
        assert!(Instant::now() < deadline, "{tasks:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let states: Vec<(Option<u32>, JobState)> =
        tasks.iter().map(|t| (t.array_task_id, t.state)).collect();
    assert_eq!(
        states,
        vec![
            (Some(0), JobState::Completed),
            (Some(1), JobState::Completed),
            (Some(2), JobState::Cancelled),
            (Some(3), JobState::Completed),
        ]
    );
    assert_eq!(
        tasks[2].start_time, None,
        "the cancelled task never started"
    );
}
