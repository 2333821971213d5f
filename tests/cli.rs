//! The `berth` command against a running cluster, as a user types it.

use crate::cluster::{berth_bin, Options, TestCluster};
use berth_core::state::JobState;
use std::process::Command;

fn berth(c: &TestCluster, args: &[&str]) -> std::process::Output {
    Command::new(berth_bin())
        .args(args)
        .current_dir(&c.dir)
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &c.token)
        .env("HOME", &c.dir)
        .env("XDG_CONFIG_HOME", c.dir.join("config"))
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_wait_prints_the_output_and_exits_with_the_jobs_code() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script = c.dir.join("fails.sbatch");
    std::fs::write(
        &script,
        "#!/bin/bash\n#SBATCH -J cli-test\necho hello from $SLURM_JOB_NAME\nexit 7\n",
    )
    .unwrap();
    let c2 = &c;
    let out = tokio::task::spawn_blocking({
        let script = script.clone();
        let (url, token, dir) = (c2.url.clone(), c2.token.clone(), c2.dir.clone());
        move || {
            Command::new(berth_bin())
                .args(["submit", "--wait", "--gres=gpu:1", script.to_str().unwrap()])
                .current_dir(&dir)
                .env("BERTH_URL", url)
                .env("BERTH_TOKEN", token)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(7),
        "stdout: {stdout}\nstderr: {}",
        text(&out.stderr)
    );
    let id: i64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Submitted batch job "))
        .expect("the sbatch line")
        .trim()
        .parse()
        .unwrap();
    assert!(stdout.contains("hello from cli-test"), "{stdout}");
    let job = c.job(id).await;
    assert_eq!((job.state, job.exit_code), (JobState::Failed, Some(7)));
    assert_eq!(
        job.gpus_per_node, 1,
        "the command-line option reached the job"
    );

    // --parsable prints the id alone.
    let out = berth(&c, &["submit", "--parsable", "--wrap", "sleep 30"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id: i64 = text(&out.stdout).trim().parse().unwrap();
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;

    // squeue-style queue shows it running, with its node.
    let out = berth(&c, &["queue"]);
    let q = text(&out.stdout);
    let header = q.lines().next().unwrap();
    for col in [
        "JOBID",
        "PARTITION",
        "NAME",
        "USER",
        "ST",
        "TIME",
        "NODES",
        "NODELIST(REASON)",
    ] {
        assert!(header.contains(col), "{q}");
    }
    let line = q
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&id.to_string()))
        .unwrap();
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols[4], "R", "{line}");
    assert_eq!(cols.last(), Some(&"node-1"), "{line}");

    let out = berth(&c, &["nodes"]);
    assert!(
        text(&out.stdout).contains("node-1"),
        "{}",
        text(&out.stdout)
    );

    let out = berth(&c, &["show", "job", &id.to_string()]);
    let shown = text(&out.stdout);
    assert!(shown.contains(&format!("JobId={id}")), "{shown}");
    assert!(shown.contains("JobState=RUNNING"), "{shown}");

    let out = berth(&c, &["cancel", &id.to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(c.job(id).await.state, JobState::Cancelled);

    let out = berth(&c, &["cancel", "999999"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("999999"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_scripts_get_a_message_naming_the_line() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let out = berth(
        &c,
        &[
            "submit",
            crate::cluster::example("unrendered_template.sbatch")
                .to_str()
                .unwrap(),
        ],
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("line 3") && err.contains("--nodes"), "{err}");
}

/// Issue 28: `berth logs` of a job whose launch failed prints why (it has no output) and
/// exits 1; with no api answering, a command names the URL it tried and says that no
/// server answers there, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_of_a_failed_launch_say_why_and_a_silent_api_is_named() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "1xH100",
        poll_wait: Some(1),
        ..Default::default()
    })
    .await;
    let id = c
        .submit(
            "#!/bin/bash\necho never\n",
            &["--gres=gpu:1", "--chdir=/nonexistent/berth-test"],
        )
        .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Failed, "{job:?}");
    let out = berth(&c, &["logs", &id.to_string()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("launch failed") && err.contains("/nonexistent/berth-test"),
        "{err}"
    );
    assert!(text(&out.stdout).is_empty());

    // Nothing listens on this port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let out = Command::new(berth_bin())
        .args(["queue"])
        .env("BERTH_URL", &url)
        .env("BERTH_TOKEN", &c.token)
        .env("HOME", &c.dir)
        .env("XDG_CONFIG_HOME", c.dir.join("config"))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(err.matches(&url).count(), 1, "{err}");
    assert!(err.contains("no server answers"), "{err}");
    assert!(err.contains("BERTH_URL"), "{err}");
}

/// Issue 28: the roles read their secrets from files, never needing them on a command line
/// or typed into an environment: `NAME_FILE` (a mounted Kubernetes Secret) and systemd's
/// `LoadCredential=` directory. An api given only those answers with the secret it read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_reads_its_database_url_and_signing_secret_from_files() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let secrets = c.dir.join("secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(secrets.join("database_url"), format!("{}\n", c.db_url)).unwrap();
    std::fs::write(
        secrets.join("jwt_secret"),
        format!("{}\n", crate::cluster::SECRET),
    )
    .unwrap();
    let config = c.dir.join("files.toml");
    std::fs::write(&config, "[api]\nrate_limit_per_user = 0\n").unwrap();
    let runs: [(&str, Vec<(String, String)>); 2] = [
        (
            "NAME_FILE",
            vec![
                (
                    "DATABASE_URL_FILE".into(),
                    secrets.join("database_url").display().to_string(),
                ),
                (
                    "BERTH_JWT_SECRET_FILE".into(),
                    secrets.join("jwt_secret").display().to_string(),
                ),
            ],
        ),
        (
            "CREDENTIALS_DIRECTORY",
            vec![(
                "CREDENTIALS_DIRECTORY".into(),
                secrets.display().to_string(),
            )],
        ),
    ];
    for (how, envs) in runs {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut api = Command::new(berth_bin())
            .args([
                "server",
                "--role",
                "api",
                "--config",
                config.to_str().unwrap(),
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .env_remove("DATABASE_URL")
            .env_remove("BERTH_JWT_SECRET")
            .envs(envs)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Ok(r) = c
                .http
                .get(format!("{url}/v1/jobs"))
                .bearer_auth(&c.token)
                .send()
                .await
            {
                break r.status().as_u16();
            }
            if let Ok(Some(_)) = api.try_wait() {
                let out = api.wait_with_output().unwrap();
                panic!("{how}: the api ended: {}", text(&out.stderr));
            }
            assert!(std::time::Instant::now() < deadline, "{how}: no answer");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        };
        let _ = api.kill();
        let _ = api.wait();
        assert_eq!(status, 200, "{how}: a token signed with the file's secret");
    }
}
