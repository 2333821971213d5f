//! squeue as Slurm users type it (issue 15): with the binary linked as `squeue`,
//! `squeue -h -j ID -o %i` prints the id, an array's tasks print as `ID_1`, `ID_2` with
//! `-r` (and as `ID_[1-3]` without, `ID_[1-6%2]` with a limit), `--me`, `-A`, `-l`,
//! `-t all`, `-O` field names with sizes and alignment, `-S` orders, `-i` repeats, `-s`
//! lists a running job's steps, and an unknown `-o` letter, `-O` name or job id is
//! refused by name.

use crate::cluster::{Options, TestCluster};
use std::io::BufRead;

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
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        // squeue -l prints the date first (`Wed Dec  2 10:00:00 2026`); Slurm cuts
        // headers to their column too: `TIME_LIMI`.
        lines[0].ends_with(&chrono::Local::now().format("%Y").to_string())
            && lines[1].contains(" TIME_LIMI ")
            && lines[2].contains("PENDING"),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn squeue_long_formats_sorts_array_limits_and_iterates() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let t = c.token.clone();
    let a = c.submit("#!/bin/bash\ntrue\n", &["-J", "bravo"]).await;
    let b = c.submit("#!/bin/bash\ntrue\n", &["-J", "alpha"]).await;
    let limited = c
        .submit("#!/bin/bash\ntrue\n", &["-J", "charlie", "--array=1-6%2"])
        .await;
    let mine = format!("{a},{b},{limited}");

    // -O: 20 columns left-aligned by default, `:N` and `:.N` (right), a suffix.
    let (code, out, err) = squeue(
        &c,
        &t,
        &[
            "-j",
            &a.to_string(),
            "-O",
            "JobID:10,Name:.8,State,TimeLimit:.11",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "{:<10}{:>8}{:<20}{:>11}\n{:<10}{:>8}{:<20}{:>11}\n",
            "JOBID", "NAME", "STATE", "TIME_LIMIT", a, "bravo", "PENDING", "1:00:00"
        )
    );
    let (_, out, _) = squeue(&c, &t, &["-h", "-j", &mine, "-O", "jobarrayid:|,name:|"]);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert!(
        rows.contains(&vec![format!("{limited}_[1-6%2]").as_str(), "charlie", ""]),
        "{out}"
    );
    let (code, _, err) = squeue(&c, &t, &["-O", "JobID,Bogus"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("\"Bogus\"") && err.contains("not a field Berth shows"),
        "{err}"
    );

    // The %N limit in array ids, with -o too.
    let (_, out, _) = squeue(&c, &t, &["-h", "-j", &limited.to_string(), "-o", "%i %K"]);
    assert_eq!(out, format!("{limited}_[1-6%2] 1-6%2\n"));

    // -S: by name, by name descending, by id descending.
    let names = |args: &[&str]| {
        let mut all = vec!["-h", "-j", &mine, "-o", "%j"];
        all.extend_from_slice(args);
        squeue(&c, &t, &all).1
    };
    assert_eq!(names(&["-S", "j"]), "alpha\nbravo\ncharlie\n");
    assert_eq!(names(&["-S", "-j"]), "charlie\nbravo\nalpha\n");
    assert_eq!(names(&["-S", "-i"]), "charlie\nalpha\nbravo\n");
    assert_eq!(names(&["-S", "+P,-A"]), "charlie\nalpha\nbravo\n");
    let (code, _, err) = squeue(&c, &t, &["-S", "W"]);
    assert_ne!(code, 0);
    assert!(err.contains("not a field Berth sorts by"), "{err}");

    // -i 1: the table again each second, each time after a date line, until stopped.
    let bin = c.dir.join("slurm-bin").join("squeue");
    let mut child = std::process::Command::new(&bin)
        .args(["-i", "1", "-j", &a.to_string(), "-o", "%A"])
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &t)
        .env("HOME", &c.dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let year = chrono::Local::now().format("%Y").to_string();
    let mut seen = Vec::new();
    // Read until the third date line: two whole iterations printed.
    while seen.iter().filter(|l: &&String| l.ends_with(&year)).count() < 3 {
        match lines.next() {
            Some(Ok(line)) => seen.push(line),
            _ => break,
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let first: Vec<&str> = seen.iter().take(4).map(String::as_str).collect();
    assert_eq!(
        first[1..],
        ["JOBID", a.to_string().as_str(), ""],
        "{seen:?}"
    );
    assert!(first[0].ends_with(&year), "{seen:?}");
    assert_eq!(seen[5..8], seen[1..4], "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn squeue_steps_lists_a_running_jobs_steps() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let t = c.token.clone();
    let id = c
        .submit("#!/bin/bash\nsrun sleep 600\n", &["-J", "stepper"])
        .await;
    // Wait for the step to run.
    let mut running = false;
    for _ in 0..240 {
        let steps: berth_core::step::StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
        if steps
            .items
            .iter()
            .any(|s| s.state == berth_core::step::StepState::Running)
        {
            running = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert!(running, "the step never ran");
    let (code, out, err) = squeue(&c, &t, &["-s"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["STEPID", "NAME", "PARTITION", "USER", "TIME", "NODELIST"],
        "{out}"
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[0], format!("{id}.0"), "{out}");
    assert_eq!(row[1], "sleep", "{out}");
    assert_eq!(row[5], "node-1", "{out}");
    // Only the steps asked for: `-s ID.0` finds it, `-s ID.7` nothing.
    let (_, out, _) = squeue(&c, &t, &["-h", &format!("--steps={id}.0")]);
    assert_eq!(out.lines().count(), 1, "{out}");
    let (_, out, _) = squeue(&c, &t, &["-h", &format!("--steps={id}.7")]);
    assert_eq!(out, "");
    let (code, _, err) = squeue(&c, &t, &["--steps=x.1"]);
    assert_ne!(code, 0);
    assert!(err.contains("not a step id"), "{err}");
}
