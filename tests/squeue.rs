//! squeue as Slurm users type it (issue 15): with the binary linked as `squeue`,
//! `squeue -h -j ID -o %i` prints the id, an array's tasks print as `ID_1`, `ID_2` with
//! `-r` (and as `ID_[1-3]` without), `--me`, `-A`, `-l`, `-t all`, and an unknown `-o`
//! letter or job id is refused by name.

use crate::cluster::{Options, TestCluster};

/// Runs `squeue ARGS` (a link to `berth` named `squeue`) with `token`.
fn squeue(c: &TestCluster, token: &str, args: &[&str]) -> (i32, String, String) {
    c.slurm_command("squeue", token, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn squeue_takes_slurms_job_selection_format_and_array_options() {
    // No worker: everything stays pending.
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let t = c.token.clone();
    let one = c.submit("#!/bin/bash\ntrue\n", &["-J", "single"]).await;
    let array = c
        .submit("#!/bin/bash\ntrue\n", &["-J", "sweep", "--array=1-3"])
        .await;
    let other = c.token_for("olga", berth_core::auth::Role::User);
    let theirs = c.submit_as("olga", "#!/bin/bash\ntrue\n", &[], &[]).await;

    // The acceptance line: the id alone, no header.
    let (code, out, err) = squeue(&c, &t, &["-h", "-j", &one.to_string(), "-o", "%i"]);
    assert_eq!(
        (code, out.as_str()),
        (0, format!("{one}\n").as_str()),
        "{err}"
    );
    // An array's pending tasks: one line `ID_[1-3]`, or one per task with -r.
    let (_, out, _) = squeue(&c, &t, &["-h", "-j", &array.to_string(), "-o", "%i"]);
    assert_eq!(out, format!("{array}_[1-3]\n"));
    let (_, out, _) = squeue(&c, &t, &["-h", "-r", "-j", &array.to_string(), "-o", "%i"]);
    assert_eq!(out, format!("{array}_1\n{array}_2\n{array}_3\n"));
    // The default columns show them so too.
    let (_, out, _) = squeue(&c, &t, &["-h", "-j", &array.to_string()]);
    assert!(
        out.trim_start().starts_with(&format!("{array}_[1-3] ")),
        "{out}"
    );
    // A format with widths and a header; -l's long format.
    let (_, out, _) = squeue(&c, &t, &["-j", &one.to_string(), "-o", "%.8i %j %T"]);
    assert_eq!(
        out,
        format!("   JOBID NAME STATE\n{:>8} single PENDING\n", one)
    );
    let (_, out, _) = squeue(&c, &t, &["-l", "-j", &one.to_string()]);
    assert!(
        // Slurm cuts headers to their column too: `TIME_LIMI`.
        out.lines().next().unwrap().contains(" TIME_LIMI ") && out.contains("PENDING"),
        "{out}"
    );
    // --me: the token's user only; -u names another.
    let (_, mine, _) = squeue(&c, &other, &["-h", "--me", "-o", "%A"]);
    assert_eq!(mine, format!("{theirs}\n"));
    let (_, out, _) = squeue(&c, &t, &["-h", "-u", "olga", "-o", "%A"]);
    assert_eq!(out, format!("{theirs}\n"));
    // -t all, -t PD; a job list naming no job fails as Slurm's does.
    let (_, out, _) = squeue(&c, &t, &["-h", "-t", "all", "-o", "%A"]);
    assert_eq!(out.lines().count(), 3, "{out}");
    let (code, _, err) = squeue(&c, &t, &["-h", "-j", "999999"]);
    assert_eq!(code, 1);
    assert!(err.contains("Invalid job id specified"), "{err}");
    // Refusals name what is wrong.
    let (code, _, err) = squeue(&c, &t, &["-o", "%W"]);
    assert_ne!(code, 0);
    assert!(err.contains("%W is not a field"), "{err}");
    let (code, _, err) = squeue(&c, &t, &["-j", "5x"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("\"5x\"") && err.contains("not a job id"),
        "{err}"
    );
}
