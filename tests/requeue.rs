//! Time-limit warnings (`--signal`), requeue (`scontrol requeue`, `POST
//! /v1/jobs/{id}/requeue`) and the checkpoint directory that survives it.

use crate::cluster::{example, Options, TestCluster};
use berth_core::state::JobState;

fn read(name: &str) -> String {
    std::fs::read_to_string(example(name)).unwrap()
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
}

/// The example as written: a 60 s limit, SIGUSR1 to the batch shell 20 s before it; the
/// script saves its step, requeues itself and resumes in its second run (about 65 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_requeue_saves_on_the_warning_requeues_and_resumes() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let id = c.submit(&read("checkpoint_requeue.sbatch"), &[]).await;
    let job = c.wait_ended(id, 150).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert_eq!(job.restart_count, 1, "{out}");
    let starts: Vec<&str> = out.lines().filter(|l| l.starts_with("start ")).collect();
    assert_eq!(starts.len(), 2, "{out}");
    assert_eq!(field(starts[0], "restart_count"), "0");
    assert_eq!(field(starts[0], "from_step"), "0");
    assert_eq!(field(starts[1], "restart_count"), "1");
    let resumed: u32 = field(starts[1], "from_step").parse().unwrap();
    // Saved at the warning, about 40 s into a 60 s limit.
    assert!((20..60).contains(&resumed), "{out}");
    assert!(
        out.contains(&format!("warning signal: saved step {resumed}, requeueing")),
        "{out}"
    );
    assert!(out.trim_end().ends_with("finished at step 60"), "{out}");
    // --open-mode=append: the file holds both runs, as the api does.
    let file = std::fs::read_to_string(c.dir.join(format!("ckpt-{id}.out"))).unwrap();
    assert_eq!(file, out);
    assert!(!c.dir.join(format!("ckpt-{id}.state")).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_over_rest_restarts_the_same_job_with_its_checkpoint_dir() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script = "#!/bin/bash\n#SBATCH --gres=gpu:1 -t 5 --open-mode=append -o requeue-%j.out\n\
        echo run=$SLURM_RESTART_COUNT ckpt=$BERTH_CHECKPOINT_DIR seen=$(cat $BERTH_CHECKPOINT_DIR/mark 2>/dev/null)\n\
        echo $SLURM_RESTART_COUNT > $BERTH_CHECKPOINT_DIR/mark\n\
        if [ $SLURM_RESTART_COUNT = 0 ]; then sleep 300; fi\n";
    let id = c.submit(script, &[]).await;
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    // Wait for the first run's line so it has written its mark.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !c.output(id).await.contains("run=0") {
        assert!(
            std::time::Instant::now() < deadline,
            "first run never printed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let requeue = |id: i64| {
        c.http
            .post(format!("{}/v1/jobs/{id}/requeue", c.url))
            .bearer_auth(&c.token)
            .send()
    };
    let r = requeue(id).await.unwrap();
    assert_eq!(r.status(), 200);
    let pending: berth_core::wire::Job = r.json().await.unwrap();
    assert_eq!(pending.state, JobState::Pending);
    assert_eq!(pending.restart_count, 1);

    let job = c.wait_ended(id, 90).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert_eq!(job.restart_count, 1);
    let file = std::fs::read_to_string(c.dir.join(format!("requeue-{id}.out"))).unwrap();
    let lines: Vec<&str> = file.lines().collect();
    assert_eq!(lines.len(), 2, "{file}");
    assert_eq!(field(lines[0], "run"), "0");
    assert_eq!(field(lines[1], "run"), "1");
    assert_eq!(field(lines[0], "ckpt"), field(lines[1], "ckpt"));
    assert!(field(lines[0], "ckpt").ends_with(&format!("/{id}")));
    assert_eq!(field(lines[1], "seen"), "0", "the checkpoint dir survived");

    // Requeueing is refused for a job submitted with --no-requeue.
    let fixed = c
        .submit("#!/bin/bash\nsleep 300\n", &["--no-requeue", "-t", "5"])
        .await;
    c.wait_for(fixed, 60, |j| j.state == JobState::Running)
        .await;
    let r = requeue(fixed).await.unwrap();
    assert_eq!(r.status(), 409);
    let problem: berth_core::wire::Problem = r.json().await.unwrap();
    assert_eq!(problem.code, "not_requeueable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signal_without_b_warns_every_task_and_names_the_time_limit() {
    let c = TestCluster::start(Options::default()).await;
    let script = "#!/bin/bash\n#SBATCH -N 2 --signal=USR1@4 -t 0:08\n\
        trap 'echo batch got USR1' USR1\n\
        srun -l bash -c 'on_usr1() { echo warned reason=$(cat $BERTH_SIGNAL_REASON_FILE); exit 0; }; trap on_usr1 USR1; sleep 60 & wait'\n\
        echo srun_exit=$?\n";
    let id = c.submit(script, &[]).await;
    let job = c.wait_ended(id, 60).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert!(out.contains("0: warned reason=time_limit"), "{out}");
    assert!(out.contains("1: warned reason=time_limit"), "{out}");
    assert!(!out.contains("batch got USR1"), "not B: {out}");
    assert!(out.contains("srun_exit=0"), "{out}");
}

/// Scenario S6: the TIMEOUT decision is recorded (a `time_limit` event) before the job is
/// signalled, so a script that exits 0 on SIGTERM still ends TIMEOUT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_is_recorded_before_the_first_signal() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let id = c
        .submit(
            "#!/bin/bash\n#SBATCH --time=0:02\ntrap 'echo got TERM; exit 0' TERM\nsleep 300 & wait\n",
            &[],
        )
        .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Timeout, "{job:?}");
    assert_eq!(job.exit_code, Some(0));
    assert!(c.output(id).await.contains("got TERM"));
    let db = c.db().await;
    let kinds: Vec<String> = sqlx::query_scalar(
        "SELECT kind FROM job_events WHERE job_id = $1 AND kind IN ('time_limit', 'exited') ORDER BY id",
    )
    .bind(id)
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(kinds, ["time_limit", "exited"]);
}

/// A requeued run that takes its time to stop (it ignores SIGTERM until the kill wait's
/// SIGKILL) is gone before the job's next run starts, on whichever node: a job never runs
/// twice at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeued_job_runs_again_only_once_its_previous_run_is_gone() {
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 2,
            gpus: "1xH100",
            ..Default::default()
        },
        &["--kill-wait", "8"],
    )
    .await;
    let script = "#!/bin/bash\n#SBATCH --gres=gpu:1 -t 5 --open-mode=append -o twice-%j.out\n\
        exec 9>>$SLURM_SUBMIT_DIR/lock-$SLURM_JOB_ID\n\
        flock -n 9 || echo \"run $SLURM_RESTART_COUNT\" >> $SLURM_SUBMIT_DIR/doubles-$SLURM_JOB_ID\n\
        echo run=$SLURM_RESTART_COUNT node=$SLURMD_NODENAME\n\
        if [ $SLURM_RESTART_COUNT = 0 ]; then trap '' TERM; sleep 300; fi\n";
    let id = c.submit(script, &[]).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !c.output(id).await.contains("run=0") {
        assert!(std::time::Instant::now() < deadline, "run 0 never started");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let r = c
        .http
        .post(format!("{}/v1/jobs/{id}/requeue", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let job = c
        .wait_for(id, 90, |j| j.restart_count == 1 && j.state.is_terminal())
        .await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert!(out.contains("run=1"), "{out}");
    let doubles = std::fs::read_to_string(c.dir.join(format!("doubles-{id}"))).unwrap_or_default();
    assert!(doubles.is_empty(), "the job ran twice at once: {doubles}");
}

/// Issue 29: a requeued `--open-mode=append` job keeps both runs' step output. Its srun
/// steps take the job's mode (the batch environment's `SLURM_OPEN_MODE`, as Slurm's
/// srun does) for their own `-o` files, as the job's output file does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeued_append_job_keeps_both_runs_step_output() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script = "#!/bin/bash\n#SBATCH -t 5 --requeue --open-mode=append -o job-%j.out\n\
        echo mode=$SLURM_OPEN_MODE\n\
        srun -o step-%j.out echo step run=$SLURM_RESTART_COUNT\n\
        srun echo printed run=$SLURM_RESTART_COUNT\n\
        if [ $SLURM_RESTART_COUNT = 0 ]; then sleep 300; fi\n";
    let id = c.submit(script, &[]).await;
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !c.output(id).await.contains("printed run=0") {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run's steps never ran: {}",
            c.output(id).await
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let (code, _, stderr) = c.slurm_command("scontrol", &c.token, &["requeue", &id.to_string()]);
    assert_eq!(code, 0, "{stderr}");
    let job = c.wait_ended(id, 120).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert_eq!(job.restart_count, 1, "{out}");
    // The step's own file holds both runs' lines.
    let step = std::fs::read_to_string(c.dir.join(format!("step-{id}.out"))).unwrap();
    assert_eq!(step, "step run=0\nstep run=1\n");
    // And the job's: the mode both runs saw, and both runs' step output that srun printed.
    let file = std::fs::read_to_string(c.dir.join(format!("job-{id}.out"))).unwrap();
    assert_eq!(file.lines().filter(|l| *l == "mode=a").count(), 2, "{file}");
    assert!(file.contains("printed run=0\n"), "{file}");
    assert!(file.contains("printed run=1\n"), "{file}");
}
