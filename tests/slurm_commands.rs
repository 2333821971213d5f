//! Slurm's client commands as users type them (issue 15), through links named like
//! Slurm's: `scancel` by id and by filters (ids AND filters), Slurm's messages and exit
//! codes, `-i`, `-v`, refusals by name, an unknown option that takes no argument with it;
//! `sinfo -s`, `-R`, `-N -l`, `-t`, `-o`, `-O`; `scontrol show node` and `update NodeName=`.

use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use berth_core::state::JobState;

/// Runs `NAME ARGS` (a link to `berth` called NAME) with `token`, `stdin` as its input;
/// (exit status, stdout, stderr).
pub fn slurm(
    c: &TestCluster,
    name: &str,
    token: &str,
    args: &[&str],
    stdin: &str,
) -> (i32, String, String) {
    c.slurm_command_with_input(name, token, args, stdin)
}

const LATER: &[&str] = &["--begin=now+1hour"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scancel_takes_ids_filters_and_slurms_messages() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let admin = c.token.clone();
    let olga = c.token_for("olga", Role::User);
    let script = "#!/bin/bash\ntrue\n";
    let named = |name: &'static str| [&["-J", name], LATER].concat();
    let a1 = c.submit_as("olga", script, &named("a"), &[]).await;
    let a2 = c.submit_as("olga", script, &named("a"), &[]).await;
    let b = c.submit_as("olga", script, &named("b"), &[]).await;
    let theirs = c.submit(script, &named("a")).await;

    // Nothing named: Slurm's message, status 1.
    let (code, _, err) = slurm(&c, "scancel", &olga, &[], "");
    assert_eq!(code, 1);
    assert!(err.contains("No job identification provided"), "{err}");
    // An unknown id: Slurm's line and status 1.
    let (code, _, err) = slurm(&c, "scancel", &olga, &["999999"], "");
    assert_eq!(code, 1);
    assert!(
        err.contains("scancel: error: Kill job error on job id 999999: Invalid job id specified"),
        "{err}"
    );
    // An unknown option is refused and does not take the next word as its value: the job
    // named after it is not cancelled.
    let (code, _, err) = slurm(&c, "scancel", &olga, &["--foo", &b.to_string()], "");
    assert_ne!(code, 0);
    assert!(err.contains("--foo"), "{err}");
    assert_eq!(c.job(b).await.state, JobState::Pending);
    // A real Slurm option Berth cannot honour is refused by name, touching nothing.
    let (code, _, err) = slurm(&c, "scancel", &olga, &["-c", &b.to_string()], "");
    assert_eq!(code, 1);
    assert!(
        err.contains("-c/--cron") && err.contains("not supported"),
        "{err}"
    );
    assert_eq!(c.job(b).await.state, JobState::Pending);
    // A signal for a pending job: Slurm's refusal, and the job stays pending.
    let (code, _, err) = slurm(&c, "scancel", &olga, &["-s", "USR1", &b.to_string()], "");
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        format!(
            "scancel: error: Kill job error on job id {b}: Job can not be altered now, try \
             again later"
        )
    );
    assert_eq!(c.job(b).await.state, JobState::Pending);

    // ids AND filters: `-n a` with b's id cancels nothing.
    let (code, _, err) = slurm(&c, "scancel", &olga, &["-n", "a", &b.to_string()], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(c.job(b).await.state, JobState::Pending);
    // Another user's jobs: not visible, so not cancelled, and said so.
    let (code, _, err) = slurm(&c, "scancel", &olga, &["-u", "alice"], "");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("only your own jobs"), "{err}");
    assert_eq!(c.job(theirs).await.state, JobState::Pending);
    let (code, _, err) = slurm(&c, "scancel", &olga, &[&theirs.to_string()], "");
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "Kill job error on job id {theirs}: Invalid job id specified"
        )),
        "{err}"
    );
    assert_eq!(c.job(theirs).await.state, JobState::Pending);

    // -i asks per job; `n` keeps it, `y` cancels.
    let (code, _, err) = slurm(&c, "scancel", &olga, &["-i", &a1.to_string()], "n\n");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("Cancel job_id={a1} name=a partition=")) && err.contains("[y/n]?"),
        "{err}"
    );
    assert_eq!(c.job(a1).await.state, JobState::Pending);
    // A name filter with -v: both of olga's `a` jobs, each announced; alice's stays.
    let (code, _, err) = slurm(&c, "scancel", &olga, &["-v", "-n", "a", "-t", "PD"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("scancel: Terminating job {a1}")),
        "{err}"
    );
    assert_eq!(c.job(a1).await.state, JobState::Cancelled);
    assert_eq!(c.job(a2).await.state, JobState::Cancelled);
    assert_eq!(c.job(theirs).await.state, JobState::Pending);
    // --me with -t.
    let (code, _, err) = slurm(&c, "scancel", &olga, &["--me", "-t", "PENDING"], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(c.job(b).await.state, JobState::Cancelled);
    // A bad state is Slurm's error.
    let (code, _, err) = slurm(&c, "scancel", &olga, &["-t", "COMPLETED", "--me"], "");
    assert_eq!(code, 1);
    assert!(
        err.contains("Invalid job state specified: COMPLETED"),
        "{err}"
    );

    // Array tasks: `A_[1-2]` cancels those two; task 3 stays pending.
    let array = c.submit(script, &[&["--array=1-3"], LATER].concat()).await;
    let (code, _, err) = slurm(&c, "scancel", &admin, &[&format!("{array}_[1-2]")], "");
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = slurm(
        &c,
        "squeue",
        &admin,
        &["-h", "-r", "-t", "PD", "-j", &array.to_string(), "-o", "%i"],
        "",
    );
    assert_eq!(out, format!("{array}_3\n"));

    // A job that already ended: Slurm's message.
    let done = c.submit(script, &[]).await;
    c.wait_for(done, 60, |j| j.state.is_terminal()).await;
    let (code, _, err) = slurm(&c, "scancel", &admin, &[&done.to_string()], "");
    assert_eq!(code, 1);
    assert!(err.contains("already completing or completed"), "{err}");
    let (code, _, err) = slurm(&c, "scancel", &admin, &["-Q", &done.to_string()], "");
    assert_eq!((code, err.as_str()), (0, ""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sinfo_views_and_scontrol_nodes() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let t = c.token.clone();
    let (_, partition, _) = slurm(&c, "sinfo", &t, &["-h", "-o", "%P"], "");
    let partition = partition.trim().to_string();
    assert!(
        partition.ends_with('*'),
        "the default partition: {partition}"
    );

    // -s: nodes allocated/idle/other/total.
    let (code, out, err) = slurm(&c, "sinfo", &t, &["-s"], "");
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("PARTITION")
            && lines[0].ends_with("AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST"),
        "{out}"
    );
    assert!(lines[1].ends_with("0/1/0/1 node-1"), "{out}");

    // Drain through scontrol; sinfo -R, -t, -N -l and scontrol show node show it.
    let (code, _, err) = slurm(
        &c,
        "scontrol",
        &t,
        &[
            "update",
            "NodeName=node-1",
            "State=DRAIN",
            "Reason=fan check",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = slurm(&c, "sinfo", &t, &["-R"], "");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0], "REASON               USER      TIMESTAMP           NODELIST",
        "{out}"
    );
    // Who drained it (the token's user) and when, in local time.
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[1].starts_with("fan check            alice     ") && lines[1].ends_with(" node-1"),
        "{out}"
    );
    assert!(
        chrono::NaiveDateTime::parse_from_str(&lines[1][31..50], "%Y-%m-%dT%H:%M:%S").is_ok(),
        "{out}"
    );
    let (_, out, _) = slurm(&c, "sinfo", &t, &["-h", "-t", "drain", "-o", "%N %t"], "");
    assert_eq!(out, "node-1 drain\n");
    let (_, out, _) = slurm(&c, "sinfo", &t, &["-h", "-t", "idle", "-o", "%N"], "");
    assert_eq!(out, "");
    let (_, out, _) = slurm(&c, "sinfo", &t, &["-N", "-l"], "");
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NODELIST",
            "NODES",
            "PARTITION",
            "STATE",
            "CPUS",
            "S:C:T",
            "MEMORY",
            "TMP_DISK",
            "WEIGHT",
            "AVAIL_FE",
            "REASON"
        ]
    );
    assert!(
        out.contains("drained") && out.contains("fan check"),
        "{out}"
    );
    let (code, out, err) = slurm(&c, "scontrol", &t, &["show", "node", "node-1"], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("NodeName=node-1 "), "{out}");
    assert!(out.contains("   State=IDLE+DRAIN "), "{out}");
    assert!(out.contains("   Reason=fan check [alice@"), "{out}");
    let (code, _, err) = slurm(&c, "scontrol", &t, &["show", "node", "node-9"], "");
    assert_eq!(code, 1);
    assert!(err.contains("node-9"), "{err}");
    let (code, _, err) = slurm(
        &c,
        "scontrol",
        &t,
        &["update", "NodeName=node-1", "State=RESUME"],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = slurm(
        &c,
        "sinfo",
        &t,
        &["-h", "-n", "node-1", "-O", "NodeList:8,StateLong:.6"],
        "",
    );
    assert_eq!(out, "node-1    idle\n");

    // --json prints Slurm's document (tests/slurmrestd.rs checks its shape).
    let (code, out, err) = slurm(&c, "sinfo", &t, &["--json", "-n", "node-1"], "");
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["sinfo"][0]["nodes"]["nodes"][0], "node-1", "{out}");
    // Refusals name the option or letter.
    let (code, _, err) = slurm(&c, "sinfo", &t, &["-o", "%P %v"], "");
    assert_ne!(code, 0);
    assert!(err.contains("%v"), "{err}");
    let (code, _, err) = slurm(&c, "scontrol", &t, &["show", "frobs"], "");
    assert_ne!(code, 0);
    assert!(err.contains("show frobs"), "{err}");
}

/// Runs `NAME ARGS` until `done(status, stdout)` holds (the scheduler computes
/// priorities and the worker samples GPUs on their own schedule), up to 60 seconds.
async fn slurm_until(
    c: &TestCluster,
    name: &str,
    args: &[&str],
    done: impl Fn(i32, &str) -> bool,
) -> (i32, String, String) {
    for _ in 0..120 {
        let r = slurm(c, name, &c.token, args, "");
        if done(r.0, &r.1) {
            return r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    slurm(c, name, &c.token, args, "")
}

/// The links once printed berth's help (`sprio`, `sshare`) or refused Slurm's options
/// (`sstat -j 17`); each now reaches its command with its own options.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sprio_sshare_and_sstat_links_take_slurms_options() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let t = c.token.clone();
    let waiting = c.submit("#!/bin/bash\ntrue\n", LATER).await;
    let (code, out, err) = slurm_until(&c, "sprio", &["-j", &waiting.to_string()], |code, _| {
        code == 0
    })
    .await;
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS   NICE"
    );
    assert_eq!(
        lines[1].split_whitespace().next(),
        Some(waiting.to_string().as_str())
    );
    let (_, out, _) = slurm(&c, "sprio", &t, &["-h", "-l", "-o", "%i %u"], "");
    assert!(out.contains(&format!("{waiting} alice")), "{out}");
    let (code, _, err) = slurm(&c, "sprio", &t, &["-w"], "");
    assert_eq!(code, 1);
    assert!(err.contains("-w/--weights"), "{err}");

    let (code, out, err) = slurm(&c, "sshare", &t, &["-l"], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        [
            "Account",
            "User",
            "RawShares",
            "NormShares",
            "RawUsage",
            "NormUsage",
            "EffectvUsage",
            "FairShare"
        ]
    );
    // The association tree: root's row first, then the accounts (indented) above the
    // users' rows, as Slurm's sshare prints it.
    let rows: Vec<&str> = out.lines().skip(2).collect();
    assert!(rows[0].starts_with("root "), "{out}");
    assert!(
        rows.iter()
            .any(|r| r.starts_with(' ') && r.split_whitespace().nth(1) == Some("alice")),
        "{out}"
    );
    let (code, _, err) = slurm(&c, "sshare", &t, &["-m"], "");
    assert_eq!(code, 1);
    assert!(err.contains("-m/--partition"), "{err}");

    let running = c
        .submit("#!/bin/bash\nsleep 600\n", &["--gres=gpu:1"])
        .await;
    c.wait_for(running, 60, |j| j.state == JobState::Running)
        .await;
    let id = running.to_string();
    let (code, out, err) = slurm_until(
        &c,
        "sstat",
        &["-j", &id, "-o", "JobID,NGPUs", "-P", "-n"],
        // The GPU count comes with the worker's first samples of the job.
        |code, out| code == 0 && out.trim_end().ends_with("|1"),
    )
    .await;
    assert_eq!(
        (code, out.as_str()),
        (0, format!("{id}|1\n").as_str()),
        "{err}"
    );
    let (code, _, err) = slurm(&c, "sstat", &t, &["-j", &format!("{id}.0")], "");
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("{id}.0")) && err.contains("per job"),
        "{err}"
    );
    let (code, _, err) = slurm(&c, "sstat", &t, &["-j", "999999"], "");
    assert_eq!(code, 1);
    assert!(err.contains("job 999999"), "{err}");
}

/// Issue 28: every Slurm-named command answers `--help` with its options under Slurm's
/// names (`Usage: squeue …`; sbatch's under Slurm's headings, from its option table) and
/// `--usage` with a brief usage message, both with status 0.
#[test]
fn every_slurm_command_answers_help_and_usage() {
    let dir = std::env::temp_dir().join(format!("berth-slurm-help-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in [
        "sbatch", "srun", "salloc", "squeue", "sacct", "scancel", "sinfo", "scontrol", "sprio",
        "sshare", "sstat", "sreport", "strigger", "sattach", "sbcast",
    ] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(crate::cluster::berth_bin(), &link).unwrap();
        for flag in ["--help", "--usage"] {
            let out = std::process::Command::new(&link)
                .arg(flag)
                .env_remove("BERTH_URL")
                .env_remove("BERTH_TOKEN")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{name} {flag}: {stdout}");
            assert!(
                stdout.contains(&format!("Usage: {name} ")),
                "{name} {flag}:\n{stdout}"
            );
            let usage = stdout.lines().find(|l| l.starts_with("Usage:")).unwrap();
            assert!(
                !usage.contains("berth"),
                "{name} {flag}'s usage names berth: {usage}"
            );
        }
    }
    let help = std::process::Command::new(dir.join("sbatch"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for option in [
        "--gres=",
        "--time=",
        "--mem=",
        "--array=",
        "--gpus-per-node=",
    ] {
        assert!(
            help.contains(option),
            "sbatch --help lacks {option}:\n{help}"
        );
    }
    assert!(help.contains("GPU scheduling options:"), "{help}");
    let srun = std::process::Command::new(dir.join("srun"))
        .arg("--help")
        .output()
        .unwrap();
    let srun = String::from_utf8_lossy(&srun.stdout);
    assert!(
        srun.contains("Parallel run options:") && srun.contains("GPU scheduling options:"),
        "{srun}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `scontrol hold|release|requeue` take every argument as a job list, as Slurm's do
/// (`scontrol release 5 6,7`), not only the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scontrol_hold_and_release_take_every_argument() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let token = c.token.clone();
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(c.submit("#!/bin/bash\ntrue\n", LATER).await.to_string());
    }
    let (a, b, d) = (&ids[0], &ids[1], &ids[2]);
    let list = format!("{b},{d}");
    let (code, _, err) = slurm(&c, "scontrol", &token, &["hold", a, &list], "");
    assert_eq!(code, 0, "{err}");
    for id in &ids {
        let job = c.job(id.parse().unwrap()).await;
        assert_eq!(
            job.reason.as_deref(),
            Some("JobHeldAdmin"),
            "job {id} after scontrol hold"
        );
    }
    let (code, _, err) = slurm(&c, "scontrol", &token, &["release", a, &list], "");
    assert_eq!(code, 0, "{err}");
    for id in &ids {
        let job = c.job(id.parse().unwrap()).await;
        assert!(
            !job.reason.as_deref().unwrap_or("").starts_with("JobHeld"),
            "job {id} after scontrol release: {:?}",
            job.reason
        );
    }
}
