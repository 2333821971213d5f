//! The main job, end to end: batch scripts from `examples/` submitted over REST run on a
//! worker, with Slurm's variables, and their output comes back.

use crate::cluster::{example, Options, TestCluster};
use berth_core::state::JobState;
use std::time::Duration;

fn read(name: &str) -> String {
    std::fs::read_to_string(example(name)).unwrap()
}

fn field<'a>(output: &'a str, key: &str) -> &'a str {
    output
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in output:\n{output}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_gpu_script_completes_with_the_slurm_contract() {
    let c = TestCluster::start(Options::default()).await;
    let id = c.submit(&read("single_gpu.sbatch"), &[]).await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert_eq!(job.exit_code, Some(0));
    assert_eq!(job.name, "finetune-small");
    let out = c.output(id).await;
    assert_eq!(field(&out, "job"), id.to_string());
    assert_eq!(field(&out, "legacy"), id.to_string());
    assert_eq!(field(&out, "name"), "finetune-small");
    assert_eq!(field(&out, "on_node"), "1");
    assert_eq!(field(&out, "cpus"), "4");
    let gpus = field(&out, "gpus");
    assert_eq!(gpus.split(',').count(), 1, "one device: {gpus}");
    assert_eq!(job.allocations.len(), 1);
    assert_eq!(gpus, job.allocations[0].gpus[0].to_string());
    assert_eq!(field(&out, "visible_devices"), gpus);
    assert_eq!(field(&out, "nodelist"), job.allocations[0].node);
    assert_eq!(field(&out, "submit_dir"), c.dir.to_str().unwrap());
    assert!(out.contains("final_loss="), "{out}");
    // The output file is where --output=%x-%j.out says, with the same text.
    let file = c.dir.join(format!("finetune-small-{id}.out"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), out);
    assert_eq!(job.stdout_path.as_deref(), file.to_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusive_job_without_gpu_options_gets_every_gpu_of_its_node() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let id = c.submit(&read("exclusive_whole_node.sbatch"), &[]).await;
    // A 1-GPU job submitted beside it must not share the node: whichever the priority
    // order starts first, the other starts after it ended.
    let small = c
        .submit("#!/bin/bash\necho small\n", &["--gres=gpu:1", "-t", "1"])
        .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed);
    let out = c.output(id).await;
    assert_eq!(field(&out, "gpus"), "0,1,2,3,4,5,6,7");
    assert_eq!(field(&out, "count"), "8");
    assert_eq!(field(&out, "node"), "node-1");
    let small = c.wait_ended(small, 60).await;
    assert_eq!(small.state, JobState::Completed);
    let (a, b) = if job.start_time <= small.start_time {
        (&job, &small)
    } else {
        (&small, &job)
    };
    assert!(
        b.start_time.unwrap() >= a.end_time.unwrap(),
        "the node was shared: job {} ran {:?}-{:?}, job {} from {:?}",
        a.id,
        a.start_time,
        a.end_time,
        b.id,
        b.start_time
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directive_quirks_give_the_expected_spec() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let id = c.submit(&read("directive_quirks.sbatch"), &[]).await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.name, "quirky run");
    assert_eq!(job.num_nodes, 1);
    assert_eq!(job.spec.ntasks_per_node, Some(1));
    assert_eq!(job.gpus_per_node, 2);
    assert_eq!(job.time_limit, Some(86_400));
    assert_eq!(job.partition, "gpu");
    assert_eq!(job.spec.comment.as_deref(), Some("two words"));
    let dir = c.dir.to_str().unwrap();
    assert_eq!(job.stdout_path, Some(format!("{dir}/out-{id}.log")));
    assert_eq!(job.stderr_path, Some(format!("{dir}/err-{id}.log")));
    assert_eq!(job.state, JobState::Completed);
    let out = c.output(id).await;
    assert!(out.starts_with("name=quirky run gpus="), "{out}");
    assert_eq!(out.trim().rsplit('=').next().unwrap().split(',').count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unrendered_template_is_refused_naming_the_line_and_nothing_is_stored() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let (status, problem) = c
        .try_submit(&read("unrendered_template.sbatch"), &[])
        .await
        .unwrap_err();
    assert_eq!(status, 400);
    assert_eq!(problem.line, Some(3));
    assert!(
        problem.field.as_deref().unwrap().starts_with("--nodes"),
        "{problem:?}"
    );
    assert!(problem.detail.contains("line 3"), "{problem:?}");
    assert_eq!(problem.code, "invalid_option");
    assert!(problem.request_id.is_some());
    let jobs: serde_json::Value = c.get("/v1/jobs").await;
    assert_eq!(jobs["items"].as_array().unwrap().len(), 0);
    let db = c.db().await;
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(rows, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_running_job_kills_its_processes_and_frees_its_gpus() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script =
        "#!/bin/bash\n#SBATCH --gres=gpu:2\nsleep 300 &\necho $! > child.pid\necho started\nwait\n";
    let id = c.submit(script, &["-D", c.dir.to_str().unwrap()]).await;
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let pid_file = c.dir.join("child.pid");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !pid_file.exists()
        || std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never started its child"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let child: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let r = c
        .http
        .post(format!("{}/v1/jobs/{id}/cancel", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let job = c.job(id).await;
    assert_eq!(job.state, JobState::Cancelled);
    // The worker signals the job's process group; the background child goes too.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while nix::sys::signal::kill(nix::unistd::Pid::from_raw(child), None).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "pid {child} survived the cancel"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Its GPUs are released once the worker reports the processes gone.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let nodes: berth_core::wire::NodeList = c.get("/v1/nodes").await;
        if nodes.items[0].gpus_allocated == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "GPUs still held");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(c.job(id).await.state, JobState::Cancelled);
    // Cancelling again is harmless.
    let r = c
        .http
        .post(format!("{}/v1/jobs/{id}/cancel", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_over_their_time_limit_end_timeout_even_when_ignoring_sigterm() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let polite = c
        .submit("#!/bin/bash\n#SBATCH --time=0:02\nsleep 300\n", &[])
        .await;
    let stubborn = c
        .submit(
            "#!/bin/bash\n#SBATCH --time=0:02\ntrap '' TERM\nsleep 300 & wait\nsleep 300\n",
            &[],
        )
        .await;
    let polite = c.wait_ended(polite, 60).await;
    let stubborn = c.wait_ended(stubborn, 60).await;
    assert_eq!(polite.state, JobState::Timeout, "{polite:?}");
    assert_eq!(stubborn.state, JobState::Timeout, "{stubborn:?}");
    // The stubborn one needed SIGKILL after the kill wait (2 s here).
    assert_eq!(stubborn.exit_signal, Some(9), "{stubborn:?}");
    let ran = stubborn.end_time.unwrap() - stubborn.start_time.unwrap();
    assert!(ran >= chrono::Duration::seconds(4), "killed after {ran}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_script_ends_failed_with_its_exit_code_and_output_follows() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let id = c
        .submit(
            "#!/bin/bash\nfor i in 1 2 3; do echo line $i; sleep 0.5; done\nexit 3\n",
            &[],
        )
        .await;
    // Follow the output while it runs: the stream ends when the job does.
    let body = c
        .http
        .get(format!("{}/v1/jobs/{id}/output?follow=true", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(body, "line 1\nline 2\nline 3\n");
    let job = c.wait_ended(id, 30).await;
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.exit_code, Some(3));
}

/// A cancelled job that traps SIGTERM takes the kill wait to end; meanwhile its worker
/// syncs a few times per poll wait (counted on the wire: it waits out the long poll the
/// api's immediate answer cut short, 2 s at most), never one sync after another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_slow_to_stop_does_not_make_its_worker_sync_back_to_back() {
    let mut c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let proxy = crate::proxy::Proxy::start(&c.url).await;
    let node_token = c.token_for("node:*", berth_core::auth::Role::Node);
    let state = c.dir.join("node-1");
    let state = state.to_str().unwrap().to_string();
    let api = proxy.url.clone();
    c.spawn_berth(
        "node-1",
        &[
            "worker",
            "--api",
            &api,
            "--token",
            &node_token,
            "--name",
            "node-1",
            "--simulate-gpus",
            "2xH100",
            "--state-dir",
            &state,
            "--kill-wait",
            "15",
            "--poll-wait",
            "5",
            "--run-as",
            "worker",
        ],
    );
    let id = c
        .submit(
            "#!/bin/bash\ntrap 'echo term' TERM\necho started\nwhile true; do sleep 1; done\n",
            &["--gres=gpu:1"],
        )
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !c.output(id).await.contains("started") {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never started:\n{}",
            c.log("node-1")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let r = c
        .http
        .post(format!("{}/v1/jobs/{id}/cancel", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    // The worker hears of it, signals the job, which lives on until the kill wait ends.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !c.output(id).await.contains("term") {
        assert!(
            std::time::Instant::now() < deadline,
            "no SIGTERM reached the job"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let before = proxy.syncs();
    tokio::time::sleep(Duration::from_secs(8)).await;
    let syncs = proxy.syncs() - before;
    println!("{syncs} syncs in 8 s while the job was stopping");
    assert!(syncs <= 8, "{syncs} syncs in 8 s with a 5 s poll wait");
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Cancelled);
}
