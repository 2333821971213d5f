//! Ended jobs carry Slurm's reasons (issue 29), and every view agrees: the REST job view,
//! `squeue -O Reason` and `%R`, `scontrol show job`'s `Reason=`, `sacct -o Reason`, and
//! slurmrestd's `state_reason`, one job per end state.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use nix::sys::signal::Signal;

/// Every view's reason of job `id`, which ended in `state`, must be `want`.
async fn views_agree(c: &TestCluster, id: i64, state: JobState, want: &str) {
    let job = c.job(id).await;
    assert_eq!(job.state, state, "{job:?}");
    let tag = format!("job {id} ({state})");
    assert_eq!(job.reason.as_deref(), Some(want), "REST, {tag}");
    let ids = id.to_string();
    let (code, out, err) = c.slurm_command(
        "squeue",
        &c.token,
        &[
            "-O",
            "JobID,StateCompact,Reason",
            "-t",
            "all",
            "-h",
            "-j",
            &ids,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let words: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(
        words.get(2).copied(),
        Some(want),
        "squeue -O Reason, {tag}: {out}"
    );
    let (_, out, _) = c.slurm_command(
        "squeue",
        &c.token,
        &["-o", "%R", "-t", "all", "-h", "-j", &ids],
    );
    let shown_with_nodes = matches!(
        state,
        JobState::Completed | JobState::Cancelled | JobState::NodeFail | JobState::Preempted
    );
    if !shown_with_nodes {
        assert_eq!(out.trim(), format!("({want})"), "squeue %R, {tag}");
    }
    let (code, out, err) = c.slurm_command("scontrol", &c.token, &["show", "job", &ids]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("JobState={state} Reason={want} ")),
        "scontrol, {tag}: {out}"
    );
    let (code, out, err) = c.slurm_command(
        "sacct",
        &c.token,
        &["-X", "-n", "-P", "-o", "State,Reason", "-j", &ids],
    );
    assert_eq!(code, 0, "{err}");
    let reason = out
        .lines()
        .last()
        .and_then(|l| l.split('|').nth(1))
        .unwrap_or_default();
    assert_eq!(reason, want, "sacct Reason, {tag}: {out}");
    let doc: serde_json::Value = c.get(&format!("/slurm/v0.0.44/job/{id}")).await;
    assert_eq!(
        doc["jobs"][0]["state_reason"], want,
        "slurmrestd, {tag}: {doc}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_end_state_has_slurms_reason_in_every_view() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100",
        scheduler_config: "node_timeout_seconds = 6\ncompleting_timeout_seconds = 60",
        poll_wait: Some(1),
        ..Default::default()
    })
    .await;
    let completed = c.submit("#!/bin/bash\ntrue\n", &[]).await;
    let exited = c.submit("#!/bin/bash\nexit 3\n", &[]).await;
    let signalled = c.submit("#!/bin/bash\nkill -9 $$\n", &[]).await;
    let timed_out = c.submit("#!/bin/bash\nsleep 300\n", &["--time=0:02"]).await;
    let launch = c
        .submit(
            "#!/bin/bash\ntrue\n",
            &["--chdir=/nonexistent/berth-reasons"],
        )
        .await;
    let cancelled = c.submit("#!/bin/bash\nsleep 300\n", &[]).await;
    c.wait_for(cancelled, 60, |j| j.state == JobState::Running)
        .await;
    let (code, _, err) = c.slurm_command("scancel", &c.token, &[&cancelled.to_string()]);
    assert_eq!(code, 0, "{err}");
    for (id, state, want) in [
        (completed, JobState::Completed, "None"),
        (exited, JobState::Failed, "NonZeroExitCode"),
        (signalled, JobState::Failed, "RaisedSignal"),
        (timed_out, JobState::Timeout, "TimeLimit"),
        (launch, JobState::Failed, "JobLaunchFailure"),
        (cancelled, JobState::Cancelled, "None"),
    ] {
        c.wait_ended(id, 90).await;
        views_agree(&c, id, state, want).await;
    }
    // What Berth knows besides the name: the REST view's state description.
    let job = c.job(launch).await;
    let description = job.state_description.unwrap_or_default();
    assert!(
        description.starts_with("launch failed on node-1") && description.contains("berth-reasons"),
        "{description}"
    );
    assert_eq!(c.job(exited).await.state_description, None);

    // A pending job keeps its pending reason.
    let held = c.submit("#!/bin/bash\ntrue\n", &["--hold"]).await;
    let job = c.wait_for(held, 30, |j| j.reason.is_some()).await;
    assert_ne!(job.reason.as_deref(), Some("None"), "{job:?}");

    // Past its memory limit (where cgroups enforce one): OUT_OF_MEMORY, `OutOfMemory`.
    let hierarchy = berth_worker::cgroup::detect(std::path::Path::new("/sys/fs/cgroup"));
    if nix::unistd::geteuid().is_root() && hierarchy.is_some() {
        let oom = c
            .submit(
                "#!/bin/bash\n#SBATCH --mem=64M\npython3 -c 'x = bytearray(512 * 1024 * 1024)'\n",
                &[],
            )
            .await;
        c.wait_ended(oom, 60).await;
        views_agree(&c, oom, JobState::OutOfMemory, "OutOfMemory").await;
    } else {
        eprintln!("OUT_OF_MEMORY not checked: needs root and cgroups");
    }

    // Its node stops answering: NODE_FAIL, `NodeDown`.
    let lost = c
        .submit("#!/bin/bash\nsleep 300\n", &["--no-requeue"])
        .await;
    c.wait_for(lost, 60, |j| j.state == JobState::Running).await;
    c.signal("node-1", Signal::SIGSTOP);
    c.wait_ended(lost, 60).await;
    c.signal("node-1", Signal::SIGCONT);
    views_agree(&c, lost, JobState::NodeFail, "NodeDown").await;
}
