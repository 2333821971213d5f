//! `TestCluster`: a private database on the PostgreSQL of `DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`), the api on an ephemeral port, one or
//! more schedulers, N workers with simulated GPUs, and a minted admin token. `Drop` stops
//! the processes and drops the database.

use berth_core::auth::Role;
use berth_core::wire::{Job, JobCreate, JobCreated, Problem};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The JWT secret of test clusters.
pub const SECRET: &str = "e2e-test-secret-0123456789abcdef";

/// Options for [`TestCluster::start`].
pub struct Options {
    pub workers: usize,
    pub gpus: &'static str,
    pub schedulers: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            workers: 2,
            gpus: "8xH100",
            schedulers: 1,
        }
    }
}

pub struct TestCluster {
    pub url: String,
    pub token: String,
    pub db_url: String,
    pub dir: PathBuf,
    db_name: String,
    base_url: String,
    children: Vec<(String, Child)>,
    worker_args: Vec<String>,
    gpus: String,
    pub http: reqwest::Client,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn base_database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

fn with_database(url: &str, db: &str) -> String {
    let (head, tail) = match url.split_once('?') {
        Some((h, t)) => (h, format!("?{t}")),
        None => (url, String::new()),
    };
    let base = match head.rfind('/') {
        Some(i) if head[..i].contains("//") && i > head.find("//").unwrap() + 1 => &head[..i],
        _ => head,
    };
    format!("{base}/{db}{tail}")
}

/// Path of a file under the workspace's `examples/`.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
}

pub fn berth_bin() -> &'static str {
    env!("CARGO_BIN_EXE_berth")
}

impl TestCluster {
    pub async fn start(options: Options) -> TestCluster {
        Self::start_with_worker_args(options, &[]).await
    }

    /// Like [`TestCluster::start`], with extra arguments for every `berth worker`
    /// (`--gpu-stuck-seconds 1`).
    pub async fn start_with_worker_args(options: Options, worker_args: &[&str]) -> TestCluster {
        let base_url = base_database_url();
        let db_name = format!("berth_e2e_{}", uuid_like());
        let admin = sqlx::PgPool::connect(&base_url).await.expect(
            "DATABASE_URL must point at a PostgreSQL server the tests may create databases on",
        );
        sqlx::query(&format!("CREATE DATABASE {db_name}"))
            .execute(&admin)
            .await
            .unwrap();
        admin.close().await;
        let db_url = with_database(&base_url, &db_name);

        let dir = std::env::temp_dir().join(&db_name);
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("berth.toml");
        std::fs::write(
            &config,
            "[scheduler]\nlease_ttl_seconds = 3\nrenew_interval_seconds = 1\ncycle_interval_seconds = 1\n",
        )
        .unwrap();
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let mut cluster = TestCluster {
            url: url.clone(),
            token: berth_api::mint_token(SECRET, "alice", Role::Admin, 3600),
            db_url: db_url.clone(),
            dir: dir.clone(),
            db_name,
            base_url,
            children: Vec::new(),
            worker_args: Vec::new(),
            gpus: String::new(),
            http: reqwest::Client::new(),
        };
        cluster.spawn(
            "api",
            &[
                "server",
                "--role",
                "api",
                "--config",
                config.to_str().unwrap(),
                "--listen",
                &format!("127.0.0.1:{port}"),
            ],
        );
        cluster.wait_healthy().await;
        for i in 0..options.schedulers {
            cluster.spawn(
                &format!("scheduler-{i}"),
                &[
                    "server",
                    "--role",
                    "scheduler",
                    "--config",
                    config.to_str().unwrap(),
                ],
            );
        }
        cluster.worker_args = worker_args.iter().map(|a| a.to_string()).collect();
        cluster.gpus = options.gpus.to_string();
        for i in 1..=options.workers {
            cluster.start_worker(&format!("node-{i}"));
        }
        cluster.wait_nodes(options.workers).await;
        cluster
    }

    /// Starts (or starts again) worker `name` (`node-1`) with its state directory
    /// `{dir}/{name}`; its log is appended to `{name}.log`.
    pub fn start_worker(&mut self, name: &str) {
        let node_token = berth_api::mint_token(SECRET, "node:*", Role::Node, 3600);
        let state = self.dir.join(name);
        let gpus = self.gpus.clone();
        let mut args = vec![
            "worker".to_string(),
            "--api".to_string(),
            self.url.clone(),
            "--token".to_string(),
            node_token,
            "--name".to_string(),
            name.to_string(),
            "--simulate-gpus".to_string(),
            gpus,
            "--state-dir".to_string(),
            state.to_str().unwrap().to_string(),
            "--kill-wait".to_string(),
            "2".to_string(),
        ];
        // Test jobs are submitted as users this machine does not have: run them as the
        // worker's user unless a test asks otherwise.
        if !self.worker_args.iter().any(|a| a == "--run-as") {
            args.extend(["--run-as".to_string(), "worker".to_string()]);
        }
        args.extend(self.worker_args.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.spawn(name, &args);
    }

    /// Kills component `name` with SIGKILL (no chance to clean up) and waits for it.
    pub fn kill9(&mut self, name: &str) {
        if let Some(i) = self.children.iter().position(|(n, _)| n == name) {
            let (_, mut child) = self.children.remove(i);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn spawn(&mut self, name: &str, args: &[&str]) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{name}.log")))
            .unwrap();
        let child = Command::new(berth_bin())
            .args(args)
            .env("DATABASE_URL", &self.db_url)
            .env("BERTH_JWT_SECRET", SECRET)
            .env("RUST_LOG", "info")
            .env_remove("BERTH_URL")
            .env_remove("BERTH_TOKEN")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.children.push((name.to_string(), child));
    }

    /// The pid of a component started by the cluster (`api`, `scheduler-0`, `node-1`).
    pub fn pid(&self, name: &str) -> Option<u32> {
        self.children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.id())
    }

    /// A component's log so far.
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default()
    }

    async fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(r) = self.http.get(format!("{}/readyz", self.url)).send().await {
                if r.status().is_success() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("api did not become ready:\n{}", self.log("api"));
    }

    async fn wait_nodes(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let nodes: serde_json::Value = self.get("/v1/nodes").await;
            if nodes["items"].as_array().map(Vec::len) == Some(n) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("workers did not register:\n{}", self.log("node-1"));
    }

    pub async fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> T {
        let r = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "GET {path}: {}", r.status());
        r.json().await.unwrap()
    }

    /// Submits a batch script (with `sbatch` options) from `self.dir`.
    pub async fn try_submit(&self, script: &str, args: &[&str]) -> Result<i64, (u16, Problem)> {
        let body = JobCreate {
            script: Some(script.to_string()),
            args: args.iter().map(|s| s.to_string()).collect(),
            submit_dir: Some(self.dir.to_string_lossy().into_owned()),
            environment: [(
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_default(),
            )]
            .into(),
            ..Default::default()
        };
        let r = self
            .http
            .post(format!("{}/v1/jobs", self.url))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        if status == 201 {
            Ok(r.json::<JobCreated>().await.unwrap().id)
        } else {
            Err((status, r.json().await.unwrap()))
        }
    }

    pub async fn submit(&self, script: &str, args: &[&str]) -> i64 {
        match self.try_submit(script, args).await {
            Ok(id) => id,
            Err((status, p)) => panic!("submission refused: {status} {p:?}"),
        }
    }

    pub async fn job(&self, id: i64) -> Job {
        self.get(&format!("/v1/jobs/{id}")).await
    }

    /// Waits until `done(job)` holds, up to `secs` seconds.
    pub async fn wait_for(&self, id: i64, secs: u64, done: impl Fn(&Job) -> bool) -> Job {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let job = self.job(id).await;
            if done(&job) {
                return job;
            }
            if Instant::now() > deadline {
                panic!(
                    "job {id} did not get there in {secs} s; it is {:?} ({:?})\nscheduler:\n{}\nnode-1:\n{}",
                    job.state,
                    job.reason,
                    self.log("scheduler-0"),
                    self.log("node-1")
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits for the job to end.
    pub async fn wait_ended(&self, id: i64, secs: u64) -> Job {
        self.wait_for(id, secs, |j| j.state.is_terminal()).await
    }

    /// The job's stdout as the api has it.
    pub async fn output(&self, id: i64) -> String {
        self.http
            .get(format!("{}/v1/jobs/{id}/output", self.url))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// A direct connection to the cluster's database, for checks users cannot make.
    pub async fn db(&self) -> sqlx::PgPool {
        sqlx::PgPool::connect(&self.db_url).await.unwrap()
    }
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}_{:x}", std::process::id(), nanos & 0xffff_ffff_ffff)
}

/// SIGKILLs the process groups of processes whose command line mentions `dir` (job
/// scripts under the cluster's state directories, their shepherds).
fn kill_job_processes(dir: &Path) {
    let needle = dir.to_string_lossy().into_owned();
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(&needle) {
            continue;
        }
        let pgid = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|stat| {
                let (_, rest) = stat.rsplit_once(')')?;
                rest.split_whitespace().nth(2)?.parse::<i32>().ok()
            });
        let target = match pgid {
            Some(pgid) if pgid > 1 && pgid != nix::unistd::getpgrp().as_raw() => -pgid,
            _ => pid,
        };
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(target),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Removes the (emptied) cgroups of this cluster's workers: their names start with the
/// state directory's path, `/` as `_`.
fn remove_job_cgroups(dir: &Path) {
    let prefix: String = dir
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
    let prefix = prefix.trim_matches('_').to_string();
    for root in [
        "/sys/fs/cgroup/berth",
        "/sys/fs/cgroup/memory/berth",
        "/sys/fs/cgroup/cpu/berth",
    ] {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                for _ in 0..20 {
                    if std::fs::remove_dir(entry.path()).is_ok() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for (_, child) in &mut self.children {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        // Jobs still running when the test ends outlive their workers (as on a real node);
        // end them: every process group whose command names this cluster's directory.
        kill_job_processes(&self.dir);
        remove_job_cgroups(&self.dir);
        let base = self.base_url.clone();
        let db = self.db_name.clone();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok(pool) = sqlx::PgPool::connect(&base).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                        .execute(&pool)
                        .await;
                }
            });
        })
        .join();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
