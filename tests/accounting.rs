//! Job accounting end to end: `sbatch` then `sacct` (the `berth` binary called by those
//! names), `GET /v1/accounting/jobs`; the figures against what the jobs held (GPU-seconds
//! of known `sleep` jobs on simulated GPUs), one row per run of a requeued job, steps,
//! pending and running jobs read live, who sees what, and bad options named.

use crate::cluster::{berth_bin, Options, TestCluster};
use berth_core::accounting::AcctJobList;
use berth_core::auth::Role;
use berth_core::state::JobState;
use reqwest::Method;
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A directory of links to `berth` named `sbatch`, `sacct`, `scontrol`.
fn slurm_bin(c: &TestCluster) -> PathBuf {
    let bin = c.dir.join("slurm-bin");
    if !bin.is_dir() {
        std::fs::create_dir_all(&bin).unwrap();
        for name in ["sbatch", "sacct", "scontrol"] {
            std::os::unix::fs::symlink(berth_bin(), bin.join(name)).unwrap();
        }
    }
    bin
}

/// Runs Slurm command `name` (a link to `berth`) with `token`: (status, stdout, stderr).
async fn slurm(c: &TestCluster, token: &str, name: &str, args: &[&str]) -> (i32, String, String) {
    let bin = slurm_bin(c);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (url, token, dir) = (c.url.clone(), token.to_string(), c.dir.clone());
    let exe = bin.join(name);
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new(exe)
            .args(&args)
            .current_dir(&dir)
            .env("PATH", path)
            .env("BERTH_URL", url)
            .env("BERTH_TOKEN", token)
            .env("HOME", &dir)
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

/// Waits until the scheduler has recorded `runs` runs of job `id`.
async fn wait_recorded(c: &TestCluster, id: i64, runs: i64) {
    let db = c.db().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM acct_job_runs WHERE job_id = $1")
            .bind(id)
            .fetch_one(&db)
            .await
            .unwrap();
        if n >= runs {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "job {id}: {n} of {runs} runs recorded\n{}",
            c.log("scheduler-0")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn acct(c: &TestCluster, token: &str, query: &str) -> (u16, serde_json::Value) {
    c.call(
        Method::GET,
        &format!("/v1/accounting/jobs?{query}"),
        Some(token),
        None,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sacct_after_a_gpu_sleep_shows_completed_elapsed_tres_and_gpu_seconds() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let token = c.token.clone();
    // The acceptance line: sbatch --gpus=1 --wrap 'sleep 5', then sacct.
    let (s, out, err) = slurm(
        &c,
        &token,
        "sbatch",
        &["--parsable", "--gpus=1", "--wrap", "sleep 5"],
    )
    .await;
    assert_eq!(s, 0, "{out}{err}");
    let id: i64 = out.trim().parse().unwrap();
    // Two GPUs for a known 3 s.
    let two = c.submit("#!/bin/bash\nsleep 3\n", &["--gpus=2"]).await;
    // A held job stays PENDING; a long one RUNNING: sacct reads them live.
    let held = c.submit("#!/bin/bash\ntrue\n", &["-H"]).await;
    let long = c.submit("#!/bin/bash\nsleep 300\n", &["--gpus=1"]).await;
    let job = c.wait_ended(id, 90).await;
    assert_eq!(job.state, JobState::Completed);
    c.wait_ended(two, 60).await;
    c.wait_for(long, 60, |j| j.state == JobState::Running).await;
    wait_recorded(&c, id, 1).await;
    wait_recorded(&c, two, 1).await;

    let ids = id.to_string();
    let (s, out, err) = slurm(
        &c,
        &token,
        "sacct",
        &[
            "-j",
            &ids,
            "-P",
            "-n",
            "--format",
            "JobID,State,ExitCode,Elapsed,AllocTRES",
        ],
    )
    .await;
    assert_eq!(s, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{id}|")))
        .unwrap_or_else(|| panic!("no line for {id}: {out}"));
    let f: Vec<&str> = line.split('|').collect();
    assert_eq!(&f[..3], &[ids.as_str(), "COMPLETED", "0:0"], "{line}");
    let elapsed = f[3];
    assert!(
        elapsed.starts_with("00:00:0") || elapsed.starts_with("00:00:1"),
        "{line}"
    );
    let secs: u64 = elapsed[6..].parse().unwrap();
    assert!(secs >= 5, "{line}");
    assert!(f[4].split(',').any(|t| t == "gres/gpu=1"), "{line}");
    assert!(
        f[4].split(',')
            .any(|t| t == "gres/gpu:nvidia_h100_80gb_hbm3=1"),
        "{line}"
    );
    assert!(f[4].contains("node=1"), "{line}");
    // Its batch step.
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("{id}.batch|COMPLETED|0:0|"))),
        "{out}"
    );

    // GPU-seconds equal elapsed × GPUs, within a second, for both known sleeps.
    let (s, body) = acct(&c, &token, &format!("job={id},{two}")).await;
    assert_eq!(s, 200, "{body}");
    let list: AcctJobList = serde_json::from_value(body).unwrap();
    assert_eq!(list.items.len(), 2);
    for (item, gpus) in list.items.iter().zip([1.0, 2.0]) {
        assert_eq!(item.alloc_tres.gpus as f64, gpus);
        assert!(item.elapsed >= 3, "{item:?}");
        let expected = item.elapsed as f64 * gpus;
        assert!(
            (item.gpu_seconds - expected).abs() <= gpus,
            "job {}: {} GPU-s for {} s × {gpus} GPUs",
            item.job_id,
            item.gpu_seconds,
            item.elapsed
        );
        assert_eq!(item.nodelist, "node-1");
        assert!(item.cost.is_none());
    }

    // The default table: today's jobs, Slurm's columns, pending and running ones too.
    let (s, out, err) = slurm(&c, &token, "sacct", &[]).await;
    assert_eq!(s, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0].trim_end(),
        "       JobID    JobName  Partition    Account  AllocCPUS      State ExitCode"
    );
    assert!(lines[1].starts_with("------------ ---------- "), "{out}");
    let state_of = |id: i64| {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(id.to_string().as_str()))
            .and_then(|l| l.split_whitespace().nth(5).map(str::to_string))
            .unwrap_or_else(|| panic!("no line for {id}:\n{out}"))
    };
    assert_eq!(state_of(held), "PENDING");
    assert_eq!(state_of(long), "RUNNING");
    assert_eq!(state_of(id), "COMPLETED");

    // Filters: by state (short names), and a window that ended before the jobs.
    let (_, out, _) = slurm(
        &c,
        &token,
        "sacct",
        &["-X", "-n", "-P", "-s", "R,PD", "-o", "JobID"],
    )
    .await;
    let mut got: Vec<&str> = out.lines().collect();
    got.sort();
    let mut want = vec![held.to_string(), long.to_string()];
    want.sort();
    assert_eq!(got, want);
    let (_, out, _) = slurm(
        &c,
        &token,
        "sacct",
        &[
            "-X",
            "-n",
            "-P",
            "-S",
            "2020-01-01",
            "-E",
            "2020-01-02",
            "-o",
            "JobID",
        ],
    )
    .await;
    assert_eq!(out, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeued_job_has_one_row_per_run() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let token = c.token.clone();
    let id = c
        .submit(
            "#!/bin/bash\nif [ $SLURM_RESTART_COUNT = 0 ]; then sleep 300; fi\n",
            &["--gpus=1"],
        )
        .await;
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let ids = id.to_string();
    let (s, out, err) = slurm(&c, &token, "scontrol", &["requeue", &ids]).await;
    assert_eq!(s, 0, "{out}{err}");
    let job = c
        .wait_for(id, 90, |j| j.restart_count == 1 && j.state.is_terminal())
        .await;
    assert_eq!(job.state, JobState::Completed);
    wait_recorded(&c, id, 2).await;

    let fmt = "JobID,State,ExitCode,Restarts,NodeList";
    let (s, out, err) = slurm(
        &c,
        &token,
        "sacct",
        &["-j", &ids, "-X", "-D", "-P", "-n", "-o", fmt],
    )
    .await;
    assert_eq!(s, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with(&format!("{id}|REQUEUED|")), "{out}");
    assert!(lines[0].ends_with("|0|node-1"), "{out}");
    assert_eq!(lines[1], format!("{id}|COMPLETED|0:0|1|node-1"));
    // Without -D: the latest run only.
    let (_, out, _) = slurm(
        &c,
        &token,
        "sacct",
        &["-j", &ids, "-X", "-P", "-n", "-o", fmt],
    )
    .await;
    assert_eq!(out, format!("{id}|COMPLETED|0:0|1|node-1\n"));
    // The first run says why it ended.
    let (_, body) = acct(&c, &token, &format!("job={id}&duplicates=true")).await;
    let list: AcctJobList = serde_json::from_value(body).unwrap();
    assert_eq!(list.items.len(), 2);
    assert!(
        list.items[0]
            .requeue_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("requeued by")),
        "{:?}",
        list.items[0]
    );
    assert!(list.items[0].start_time.is_some() && list.items[0].end_time.is_some());
    // Paging by run: one row a page, the cursor naming the run.
    let (_, body) = acct(&c, &token, &format!("job={id}&duplicates=true&limit=1")).await;
    let page: AcctJobList = serde_json::from_value(body).unwrap();
    assert_eq!((page.items.len(), page.items[0].run), (1, 0));
    let cursor = page.next_cursor.expect("a second page");
    let (_, body) = acct(
        &c,
        &token,
        &format!("job={id}&duplicates=true&limit=1&cursor={cursor}"),
    )
    .await;
    let page: AcctJobList = serde_json::from_value(body).unwrap();
    assert_eq!((page.items.len(), page.items[0].run), (1, 1));
    assert_eq!(page.next_cursor, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_are_listed_and_other_accounts_see_nothing_and_bad_filters_are_named() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let admin = c.token.clone();
    for account in ["physics", "chem"] {
        let (s, b) = c
            .call(
                Method::POST,
                "/v1/accounts",
                Some(&admin),
                Some(json!({"name": account})),
            )
            .await;
        assert_eq!(s, 201, "{b}");
    }
    for (user, account) in [("alice", "physics"), ("bob", "chem")] {
        let (s, b) = c
            .call(
                Method::POST,
                "/v1/users",
                Some(&admin),
                Some(json!({"name": user})),
            )
            .await;
        assert_eq!(s, 201, "{b}");
        let (s, b) = c
            .call(
                Method::PUT,
                &format!("/v1/accounts/{account}/users/{user}"),
                Some(&admin),
                Some(json!({})),
            )
            .await;
        assert_eq!(s, 200, "{b}");
    }
    let alice = c.token_for("alice", Role::User);
    let bob = c.token_for("bob", Role::User);
    let id = c
        .submit_as(
            "alice",
            "#!/bin/bash\nsrun true\nsrun sh -c 'exit 3'\ntrue\n",
            &["--gpus=1"],
            &[],
        )
        .await;
    let job = c.wait_ended(id, 90).await;
    assert_eq!(job.state, JobState::Completed);
    wait_recorded(&c, id, 1).await;
    let ids = id.to_string();

    let (s, out, err) = slurm(
        &c,
        &alice,
        "sacct",
        &[
            "-j",
            &ids,
            "-P",
            "-n",
            "-o",
            "JobID,JobName,Account,State,ExitCode",
        ],
    )
    .await;
    assert_eq!(s, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(lines[0], format!("{id}|{}|physics|COMPLETED|0:0", job.name));
    assert_eq!(lines[1], format!("{id}.batch|batch|physics|COMPLETED|0:0"));
    assert_eq!(lines[2], format!("{id}.0|true|physics|COMPLETED|0:0"));
    assert_eq!(lines[3], format!("{id}.1|sh|physics|FAILED|3:0"));
    // -X: the job only; -A filters by account.
    let (_, out, _) = slurm(
        &c,
        &alice,
        "sacct",
        &["-j", &ids, "-X", "-P", "-n", "-A", "physics", "-o", "JobID"],
    )
    .await;
    assert_eq!(out, format!("{id}\n"));
    let (_, out, _) = slurm(
        &c,
        &alice,
        "sacct",
        &["-j", &ids, "-X", "-P", "-n", "-A", "chem", "-o", "JobID"],
    )
    .await;
    assert_eq!(out, "");

    // bob, of another account, sees nothing of it, by the api or by sacct.
    let (s, body) = acct(&c, &bob, &format!("job={id}")).await;
    assert_eq!(s, 200);
    assert_eq!(body["items"], json!([]));
    let (s, out, _) = slurm(&c, &bob, "sacct", &["-j", &ids, "-P", "-n"]).await;
    assert_eq!((s, out.as_str()), (0, ""));
    // An admin sees it.
    let (_, body) = acct(&c, &admin, &format!("job={id}")).await;
    assert_eq!(body["items"][0]["user"], "alice");

    // Bad filters: a problem document naming the parameter; sacct names the option.
    for (query, field) in [
        ("state=XX", "state"),
        ("start=yesterday", "start"),
        ("job=1_x", "job"),
        ("limit=0", "limit"),
        ("cursor=zz", "cursor"),
    ] {
        let (s, p) = acct(&c, &alice, query).await;
        assert_eq!((s, p["field"].as_str()), (400, Some(field)), "{query}: {p}");
    }
    // Times as sacct's -S/-E take them, not only RFC 3339.
    let (s, body) = acct(&c, &admin, &format!("job={id}&start=2026-01-01&end=now")).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["items"][0]["user"], "alice");
    let (s, _, err) = slurm(&c, &alice, "sacct", &["-s", "XX"]).await;
    assert_eq!(s, 1);
    assert!(err.contains("-s/--state: unknown state \"XX\""), "{err}");
    let (s, _, err) = slurm(&c, &alice, "sacct", &["-o", "JobID,Bogus"]).await;
    assert_eq!(s, 1);
    assert!(
        err.contains("-o/--format: unknown field \"Bogus\""),
        "{err}"
    );
    let (s, _, err) = slurm(&c, &alice, "sacct", &["-S", "someday"]).await;
    assert_eq!(s, 1);
    assert!(err.contains("-S/--starttime"), "{err}");
}

/// CPU time and peak memory come from the job's cgroup on its batch node: a job that burns
/// about a second of CPU while holding 64 MiB shows both in sacct (`TotalCPU`, `MaxRSS`)
/// and in the api, once recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sacct_shows_cpu_time_and_max_rss_from_the_jobs_cgroup() {
    let hierarchy = berth_worker::cgroup::detect(std::path::Path::new("/sys/fs/cgroup"));
    if !nix::unistd::geteuid().is_root() || hierarchy.is_none() {
        eprintln!("skipped: needs root and cgroups (v2, or v1 memory/cpu)");
        return;
    }
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let token = c.token.clone();
    let id = c
        .submit(
            "#!/bin/bash\n#SBATCH -c 1 --mem=512M -t 5\n\
             python3 -c 'b = bytearray(64 << 20); b[::4096] = b\"x\" * len(b[::4096]); \
             s = sum(i * i for i in range(8_000_000)); print(s > 0)'\n",
            &[],
        )
        .await;
    let job = c.wait_ended(id, 90).await;
    assert_eq!(job.state, JobState::Completed, "{}", c.output(id).await);
    wait_recorded(&c, id, 1).await;
    let (s, list) = acct(&c, &token, &format!("job={id}")).await;
    assert_eq!(s, 200, "{list}");
    let list: AcctJobList = serde_json::from_value(list).unwrap();
    let run = &list.items[0];
    let cpu = run.cpu_time_s.expect("CPU time recorded");
    assert!(cpu > 0.3 && cpu < run.elapsed as f64 + 2.0, "{run:?}");
    let rss = run.max_rss_mib.expect("peak memory recorded");
    assert!((64..512).contains(&rss), "{run:?}");

    let (code, out, err) = slurm(
        &c,
        &token,
        "sacct",
        &[
            "-j",
            &id.to_string(),
            "-X",
            "-P",
            "-n",
            "--format",
            "JobID,TotalCPU,MaxRSS",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let line = out.lines().next().unwrap_or_default();
    let f: Vec<&str> = line.split('|').collect();
    assert_eq!(f[0], id.to_string(), "{out}");
    assert_ne!(f[1], "00:00.000", "{out}");
    assert_eq!(f[2], format!("{}K", rss * 1024), "{out}");
    // Its batch step carries them too (as Slurm's batch step does).
    let (code, out, err) = slurm(
        &c,
        &token,
        "sacct",
        &[
            "-j",
            &id.to_string(),
            "-P",
            "-n",
            "--format",
            "JobID,TotalCPU,MaxRSS",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let batch = out
        .lines()
        .find(|l| l.starts_with(&format!("{id}.batch|")))
        .unwrap_or_else(|| panic!("no batch step: {out}"));
    assert!(batch.ends_with(&format!("|{}K", rss * 1024)), "{out}");
}
