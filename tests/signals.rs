//! `scancel --signal` (issue 15): a signal for a running job's processes, which go on
//! running. Without `-b`/`-f` it reaches every step's tasks and not the batch shell; `-b`
//! the batch shell alone; `-f` both; `JOB.STEP` that step. Someone who may not cancel the
//! job gets Slurm's error and nothing is sent; a pending job refuses a signal with
//! Slurm's message; `-s KILL` cancels.

use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use berth_core::state::JobState;
use reqwest::Method;
use serde_json::json;
use std::time::{Duration, Instant};

/// How many lines of `path` are `line`.
fn count(path: &std::path::Path, line: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.trim() == line)
        .count()
}

/// Waits up to 30 s for `done(batch, step)`, the numbers of `batch got USR1` and `step
/// got USR1` lines in the job's output file.
async fn wait_counts(
    c: &TestCluster,
    out: &std::path::Path,
    what: &str,
    done: impl Fn(usize, usize) -> bool,
) -> (usize, usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let counts = (count(out, "batch got USR1"), count(out, "step got USR1"));
        if done(counts.0, counts.1) {
            return counts;
        }
        if Instant::now() > deadline {
            panic!(
                "{what}: (batch, step) = {counts:?}\n{}\nnode-1:\n{}",
                std::fs::read_to_string(out).unwrap_or_default(),
                c.log("node-1")
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `scancel ARGS` as the cluster's admin and asserts it succeeded silently.
fn scancel_ok(c: &TestCluster, args: &[&str]) {
    let (code, out, err) = c.slurm_command("scancel", &c.token, args);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "", ""),
        "scancel {args:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scancel_signals_the_steps_the_batch_shell_or_both_and_the_job_runs_on() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let stop = c.dir.join("stop");
    // The batch shell waits for its step in the background, so that its trap runs at
    // once (a shell runs its traps only between commands); the step's own shell has its
    // own trap and runs until the test makes the `stop` file.
    let script = format!(
        r#"#!/bin/bash
trap 'echo "batch got USR1"' USR1
srun -n 1 bash -c 'trap "echo step got USR1" USR1; echo step ready; while [ ! -e {stop} ]; do sleep 0.1; done; echo step done' &
pid=$!
echo batch ready
while kill -0 $pid 2>/dev/null; do wait $pid; done
wait $pid
echo "srun exit=$?"
echo batch done
"#,
        stop = stop.display()
    );
    let id = c.submit(&script, &["-t", "5"]).await;
    let out = c.dir.join(format!("slurm-{id}.out"));
    let job = id.to_string();
    let step = format!("{id}.0");
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(&out, "step ready") == 0 {
        assert!(
            Instant::now() < deadline,
            "the step did not start:\n{}\n{}",
            std::fs::read_to_string(&out).unwrap_or_default(),
            c.log("node-1")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Someone who may not cancel the job: Slurm's error, and nothing is sent.
    let otto = c.token_for("otto", Role::User);
    let (code, _, err) = c.slurm_command("scancel", &otto, &["-s", "USR1", &job]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err.trim(),
        format!("scancel: error: Kill job error on job id {id}: Invalid job id specified")
    );
    let (status, body) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{id}/signal"),
            Some(&otto),
            Some(json!({"signal": "USR1", "full": true})),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    // Bad requests name their field.
    for (request, field) in [
        (json!({"signal": "USR3"}), "signal"),
        (json!({"signal": 0}), "signal"),
        (json!({"signal": 40}), "signal"),
        (json!({"signal": true}), "signal"),
        (json!({"signal": "USR1", "step": 0, "batch": true}), "step"),
    ] {
        let (status, body) = c
            .call(
                Method::POST,
                &format!("/v1/jobs/{id}/signal"),
                Some(&c.token),
                Some(request.clone()),
            )
            .await;
        assert_eq!(
            (status, body["field"].as_str()),
            (400, Some(field)),
            "{request}: {body}"
        );
    }
    let (code, _, err) = c.slurm_command("scancel", &c.token, &["-s", "USR3", &job]);
    assert_eq!(
        (code, err.trim()),
        (1, "scancel: error: Unknown job signal: USR3")
    );

    // The default: the steps' tasks, not the batch shell.
    scancel_ok(&c, &["--signal=USR1", &job]);
    wait_counts(&c, &out, "scancel -s USR1", |_, s| s == 1).await;
    // One step by its id.
    scancel_ok(&c, &["-s", "SIGUSR1", &step]);
    let (batch, _) = wait_counts(&c, &out, "scancel -s USR1 ID.0", |_, s| s == 2).await;
    assert_eq!(batch, 0, "the batch shell got a signal meant for the steps");

    // -b: the batch shell alone.
    scancel_ok(&c, &["-b", "-s", "10", &job]);
    wait_counts(&c, &out, "scancel -b", |b, _| b == 1).await;
    scancel_ok(&c, &["-s", "USR1", &step]);
    wait_counts(&c, &out, "scancel -s USR1 ID.0 after -b", |_, s| s >= 3).await;
    // Every delivery so far has been written (srun follows its step's output within a
    // second): a signal of -b that reached the step would show as a fourth line.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        (count(&out, "batch got USR1"), count(&out, "step got USR1")),
        (1, 3),
        "-b reached the step:\n{}",
        std::fs::read_to_string(&out).unwrap_or_default()
    );

    // -f: the batch shell and the steps (srun passes on what it gets too, as Slurm's).
    scancel_ok(&c, &["-f", "-s", "USR1", &job]);
    wait_counts(&c, &out, "scancel -f", |b, s| b == 2 && s >= 4).await;

    // The job ran on through all of it and ends as its script says.
    let running = c.job(id).await;
    assert_eq!(running.state, JobState::Running);
    std::fs::write(&stop, "").unwrap();
    let ended = c.wait_ended(id, 60).await;
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    assert_eq!(ended.state, JobState::Completed, "{text}");
    assert_eq!(ended.exit_code, Some(0), "{text}");
    for line in ["step done", "srun exit=0", "batch done"] {
        assert_eq!(count(&out, line), 1, "{line}:\n{text}");
    }
    assert_eq!(count(&out, "batch got USR1"), 2, "{text}");

    // An ended job: Slurm's message.
    let (code, _, err) = c.slurm_command("scancel", &c.token, &["-s", "USR1", &job]);
    assert_eq!(
        (code, err.trim().to_string()),
        (
            1,
            format!(
                "scancel: error: Kill job error on job id {id}: Job/step already completing or \
                 completed"
            )
        )
    );

    // A pending job refuses a signal (Slurm's message) and stays pending; -s KILL cancels.
    let held = c.submit("#!/bin/bash\ntrue\n", &["--hold"]).await;
    let (code, _, err) = c.slurm_command("scancel", &c.token, &["-s", "USR1", &held.to_string()]);
    assert_eq!(
        (code, err.trim().to_string()),
        (
            1,
            format!(
                "scancel: error: Kill job error on job id {held}: Job can not be altered now, \
                 try again later"
            )
        )
    );
    assert_eq!(c.job(held).await.state, JobState::Pending);
    scancel_ok(&c, &["-s", "KILL", &held.to_string()]);
    assert_eq!(c.job(held).await.state, JobState::Cancelled);
}

/// Filters choose the running jobs to signal: `scancel -s USR1 -n NAME` signals the
/// running job of that name and leaves the pending one of the same name alone (no error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_choose_the_running_jobs_to_signal() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let stop = c.dir.join("stop");
    let script = format!(
        "#!/bin/bash\ntrap 'echo batch got USR1' USR1\necho batch ready\n\
         while [ ! -e {} ]; do sleep 0.1; done\n",
        stop.display()
    );
    let id = c.submit(&script, &["-J", "sig", "-t", "5"]).await;
    let held = c
        .submit("#!/bin/bash\ntrue\n", &["-J", "sig", "--hold"])
        .await;
    let out = c.dir.join(format!("slurm-{id}.out"));
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(&out, "batch ready") == 0 {
        assert!(Instant::now() < deadline, "{}", c.log("node-1"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    scancel_ok(&c, &["-n", "sig", "-b", "-s", "USR1"]);
    wait_counts(&c, &out, "scancel -n sig -b", |b, _| b == 1).await;
    assert_eq!(c.job(held).await.state, JobState::Pending);
    std::fs::write(&stop, "").unwrap();
    let ended = c.wait_ended(id, 60).await;
    assert_eq!(ended.state, JobState::Completed);
}
