//! `berth dev`: stopping it (SIGTERM, as Ctrl-C) stops its jobs' processes and removes
//! their cgroups; nothing of the cluster's jobs outlives it.

use crate::cluster::berth_bin;
use berth_core::auth::Role;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Processes whose environment holds `marker` (`NAME=value`).
fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// The job cgroups of the worker whose state directory is `state` (named after it).
fn job_cgroups(state: &Path) -> Vec<PathBuf> {
    let prefix: String = state
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let prefix = format!("{}.job_", prefix.trim_matches('_'));
    let mut found = Vec::new();
    for root in [
        "/sys/fs/cgroup/berth",
        "/sys/fs/cgroup/memory/berth",
        "/sys/fs/cgroup/cpu/berth",
        "/sys/fs/cgroup/devices/berth",
    ] {
        for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(entry.path());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_berth_dev_stops_its_jobs_and_removes_their_cgroups() {
    let base = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let db_name = format!(
        "berth_e2e_dev_{}_{:x}",
        std::process::id(),
        nanos & 0xffff_ffff
    );
    let admin = sqlx::PgPool::connect(&base).await.unwrap();
    sqlx::query(&format!("CREATE DATABASE {db_name}"))
        .execute(&admin)
        .await
        .unwrap();
    let db_url = match base.rsplit_once('/') {
        Some((head, _)) if head.contains("//") && head.len() > head.find("//").unwrap() + 2 => {
            format!("{head}/{db_name}")
        }
        _ => format!("{base}/{db_name}"),
    };
    let dir = std::env::temp_dir().join(&db_name);
    std::fs::create_dir_all(&dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let log = std::fs::File::create(dir.join("dev.log")).unwrap();
    let mut dev = Command::new(berth_bin())
        .args([
            "dev",
            "--data-dir",
            dir.join("data").to_str().unwrap(),
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--gpus",
            "2xH100",
            "--cpus",
            "6",
            "--memory",
            "32G",
        ])
        .env("DATABASE_URL", &db_url)
        .env("BERTH_CLIENT_CONFIG", dir.join("client.toml"))
        .env("RUST_LOG", "info")
        .env_remove("BERTH_URL")
        .env_remove("BERTH_TOKEN")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let dev_log = || std::fs::read_to_string(dir.join("dev.log")).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !dev_log().contains("berth dev is running") {
        assert!(
            Instant::now() < deadline,
            "berth dev did not come up:\n{}",
            dev_log()
        );
        assert!(
            dev.try_wait().unwrap().is_none(),
            "berth dev exited:\n{}",
            dev_log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let secret = std::fs::read_to_string(dir.join("data/jwt-secret")).unwrap();
    // The user berth dev runs jobs for: `$USER`, else the uid's name.
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| {
            nix::unistd::User::from_uid(nix::unistd::getuid())
                .unwrap()
                .unwrap()
                .name
        });
    let token = berth_api::mint_token(secret.trim(), &user, Role::Admin, 600);
    let http = reqwest::Client::new();

    // It prints the console's URL, and the console answers there.
    assert!(
        dev_log().contains(&format!("console:  {url}/")),
        "{}",
        dev_log()
    );
    let page = http.get(format!("{url}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers().contains_key("content-security-policy"));

    // Its worker declares the CPUs and memory `--cpus` and `--memory` say.
    let node: berth_core::wire::Node = http
        .get(format!("{url}/v1/nodes/node-1"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!((node.cpus, node.memory_mib), (6, 32 * 1024), "{node:?}");

    // A job that ignores SIGTERM, so that only the kill wait's SIGKILL ends it.
    let marker = format!("BXW_DEV_MARK={db_name}");
    let body = serde_json::json!({
        "script": "#!/bin/bash\n#SBATCH --gres=gpu:1 -t 10\ntrap '' TERM\necho started\nsleep 300\n",
        "submit_dir": dir.to_str().unwrap(),
        "environment": {
            "PATH": std::env::var("PATH").unwrap_or_default(),
            "BXW_DEV_MARK": db_name,
        },
    });
    let r = http
        .post(format!("{url}/v1/jobs"))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(60);
    while processes_with(&marker).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the job never started:\n{}",
            dev_log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let state = dir.join("data/workers/node-1");
    let had_cgroups = !job_cgroups(&state).is_empty();

    // Ctrl-C (SIGTERM here): berth dev stops, and its job with it.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(dev.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    while dev.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "berth dev did not stop:\n{}",
            dev_log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let left = processes_with(&marker);
    let groups = job_cgroups(&state);
    // Clean up before asserting.
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    for group in &groups {
        let _ = std::fs::remove_dir(group);
    }
    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {db_name} WITH (FORCE)"))
        .execute(&admin)
        .await;
    admin.close().await;
    assert!(
        left.is_empty(),
        "job processes outlived berth dev: {left:?}\n{}",
        dev_log()
    );
    assert!(
        groups.is_empty(),
        "job cgroups outlived berth dev (they existed: {had_cgroups}): {groups:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `berth dev` without `DATABASE_URL` starts its own PostgreSQL, which trusts whoever
/// reaches it: so no other local user may. It listens on no TCP port, and its socket sits
/// in a directory only the server's account may enter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berth_devs_own_database_is_out_of_other_local_users_reach() {
    if !crate::attacks::can_switch_users("berth_devs_own_database") {
        return;
    }
    let eve = crate::attacks::unix_user("bxd-eve");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!(
        "berth_e2e_devpg_{}_{:x}",
        std::process::id(),
        nanos & 0xffff_ffff
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = std::fs::File::create(dir.join("dev.log")).unwrap();
    let mut dev = Command::new(berth_bin())
        .args([
            "dev",
            "--data-dir",
            dir.join("data").to_str().unwrap(),
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--gpus",
            "1xH100",
        ])
        .env_remove("DATABASE_URL")
        .env("BERTH_CLIENT_CONFIG", dir.join("client.toml"))
        .env("RUST_LOG", "info")
        .env_remove("BERTH_URL")
        .env_remove("BERTH_TOKEN")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let dev_log = || std::fs::read_to_string(dir.join("dev.log")).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(180);
    while !dev_log().contains("berth dev is running") {
        if Instant::now() > deadline || dev.try_wait().unwrap().is_some() {
            let _ = dev.kill();
            panic!("berth dev did not come up:\n{}", dev_log());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // "PostgreSQL on the socket in DIR (port N; …)"
    let text = dev_log();
    let line = text
        .lines()
        .find(|l| l.contains("PostgreSQL on the socket in "))
        .unwrap_or_else(|| panic!("no PostgreSQL line:\n{text}"))
        .to_string();
    let rest = line.split("PostgreSQL on the socket in ").nth(1).unwrap();
    let (socket_dir, rest) = rest.split_once(" (port ").unwrap();
    let pg_port: u16 = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();

    // No TCP listener for the database, on any local address.
    let tcp = std::net::TcpStream::connect(("127.0.0.1", pg_port));
    // Another local user cannot even reach the socket's directory.
    let reach = Command::new("runuser")
        .args(["-u", &eve.name, "--", "test", "-x", socket_dir])
        .status()
        .unwrap();
    let meta = std::fs::metadata(socket_dir).unwrap();
    // And, where psql is installed, cannot connect through it.
    let psql = Command::new("runuser")
        .args(["-u", &eve.name, "--", "psql", "-h", socket_dir, "-p"])
        .arg(pg_port.to_string())
        .args(["-U", "berth", "-d", "berth", "-c", "SELECT 1"])
        .output();
    // The cluster works meanwhile: the api is ready (it reads the database).
    let ready = reqwest::get(format!("http://127.0.0.1:{port}/readyz"))
        .await
        .map(|r| r.status().as_u16());

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(dev.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    while dev.try_wait().unwrap().is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = dev.kill();

    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert!(tcp.is_err(), "PostgreSQL answers on 127.0.0.1:{pg_port}");
    assert!(!reach.success(), "{} may enter {socket_dir}", eve.name);
    assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{socket_dir}");
    assert_ne!(meta.uid(), eve.uid.as_raw());
    if let Ok(out) = psql {
        if out.status.code() != Some(127)
            && !String::from_utf8_lossy(&out.stderr).contains("No such file")
        {
            assert!(
                !out.status.success(),
                "{} connected to berth dev's database: {}",
                eve.name,
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    assert_eq!(ready.ok(), Some(200), "{}", dev_log());
    let _ = std::fs::remove_dir_all(&dir);
}
