//! A worker killed with SIGKILL and started again keeps its running jobs and step tasks:
//! their shepherds keep them going, the new worker finds them in its state directory,
//! ships the rest of their output, enforces cancellation and reports how they ended.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use std::time::{Duration, Instant};

async fn wait_output(c: &TestCluster, id: i64, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !c.output(id).await.contains(text) {
        assert!(Instant::now() < deadline, "job {id} never printed {text:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_and_restarted_keeps_its_running_jobs() {
    let mut c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let finishing = c
        .submit(
            "#!/bin/bash\necho before\nsleep 8\necho after\nexit 4\n",
            &["--gres=gpu:1", "-t", "5"],
        )
        .await;
    let stopped = c
        .submit(
            "#!/bin/bash\necho $$ > long.pid\necho long\nsleep 300\n",
            &["--gres=gpu:1", "-t", "5", "-D", c.dir.to_str().unwrap()],
        )
        .await;
    let stepping = c
        .submit(
            "#!/bin/bash\nsrun bash -c 'echo task-started; sleep 6; echo task-done; exit 3'\n\
             echo srun_exit=$?\n",
            &["--gres=gpu:1", "-t", "5"],
        )
        .await;
    wait_output(&c, finishing, "before").await;
    wait_output(&c, stopped, "long").await;
    wait_output(&c, stepping, "task-started").await;

    c.kill9("node-1");
    tokio::time::sleep(Duration::from_secs(1)).await;
    c.start_worker("node-1");

    // The first job ran on: its end (exit 4, recorded by its shepherd) is reported by the
    // new worker, with the output written while no worker was there.
    let job = c.wait_ended(finishing, 60).await;
    assert_eq!(job.state, JobState::Failed, "{job:?}\n{}", c.log("node-1"));
    assert_eq!(job.exit_code, Some(4));
    assert_eq!(job.restart_count, 0);
    assert_eq!(c.output(finishing).await, "before\nafter\n");

    // The step task ran on too: the new worker ships the output it printed after the
    // restart and reports its exit code, which srun returns to the batch script.
    let job = c.wait_ended(stepping, 60).await;
    let out = c.output(stepping).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert_eq!(
        out,
        "task-started\ntask-done\nsrun: error: node-1: task 0: Exited with exit code 3\n\
         srun_exit=3\n",
        "{}",
        c.log("node-1")
    );
    let steps: berth_core::step::StepList = c.get(&format!("/v1/jobs/{stepping}/steps")).await;
    let task = &steps.items[0].tasks[0];
    assert_eq!(task.exit_code, Some(3), "{task:?}");
    assert_eq!(task.message, None, "{task:?}");

    // The second is still supervised: a cancel stops it.
    assert_eq!(c.job(stopped).await.state, JobState::Running);
    let pid: i32 = std::fs::read_to_string(c.dir.join("long.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    c.http
        .post(format!("{}/v1/jobs/{stopped}/cancel", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
        && std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z"))
            .unwrap_or(false)
    {
        assert!(
            Instant::now() < deadline,
            "the batch shell survived the cancel"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let job = c.wait_ended(stopped, 30).await;
    assert_eq!(job.state, JobState::Cancelled);
    // Its GPU is free again once the new worker reported the end.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let nodes: berth_core::wire::NodeList = c.get("/v1/nodes").await;
        if nodes.items[0].gpus_allocated == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "GPUs still held");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
