//! Time limits changed while a job runs (`scontrol update JobId=$SLURM_JOB_ID
//! TimeLimit=…` from inside it, `PATCH /v1/jobs/{id}`): the job's node moves its deadline.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use reqwest::Method;
use serde_json::json;

/// A batch script lowers its own 10-minute limit to 5 s with its job token (raising it is
/// refused) and then sleeps for two minutes: it ends TIMEOUT long before either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_lowers_its_own_time_limit_and_times_out() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script = "#!/bin/bash\n\
        scontrol update JobId=$SLURM_JOB_ID TimeLimit=20:00 && echo raised || echo raise refused\n\
        scontrol update JobId=$SLURM_JOB_ID TimeLimit=0:05 && echo lowered || echo lower refused\n\
        sleep 120\n\
        echo slept\n";
    let id = c.submit(script, &["--time=10"]).await;
    let job = c.wait_ended(id, 90).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Timeout, "{out}\n{}", c.log("node-1"));
    assert_eq!(job.time_limit, Some(5), "{out}");
    assert!(out.contains("raise refused"), "{out}");
    assert!(out.contains("lowered"), "{out}");
    assert!(!out.contains("slept"), "{out}");
}

/// Of a running job only the time limit may change; an admin may raise it, and the
/// raised limit holds (the job outlives its submitted limit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_takes_only_a_time_limit_change() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let id = c
        // 30 s of limit leaves room for the change to reach the worker on a loaded machine.
        .submit("#!/bin/bash\nsleep 40\necho done\n", &["--time=0:30"])
        .await;
    c.wait_for(id, 30, |j| j.state == JobState::Running).await;
    let path = format!("/v1/jobs/{id}");
    let (status, body) = c
        .call(
            Method::PATCH,
            &path,
            Some(&c.token),
            Some(json!({"nice": 5})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "job_not_pending", "{body}");
    let (status, body) = c
        .call(
            Method::PATCH,
            &path,
            Some(&c.token),
            Some(json!({"time_limit": "1:00", "nice": 5})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    let (status, body) = c
        .call(
            Method::PATCH,
            &path,
            Some(&c.token),
            Some(json!({"time_limit": "2"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["time_limit"], 120, "{body}");
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed, "{}", c.log("node-1"));
    assert_eq!(c.output(id).await, "done\n");
}
