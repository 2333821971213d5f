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
    /// Extra lines for the `[scheduler]` section (`node_timeout_seconds = 4`).
    pub scheduler_config: &'static str,
    /// The workers' `--poll-wait` (their default when `None`).
    pub poll_wait: Option<u32>,
    /// Api replicas (`api`, `api-1`, …); `url` points at the first.
    pub apis: usize,
    /// A server URL (its `/postgres` database) to create the cluster's database on,
    /// instead of `DATABASE_URL` (a private server a test may restart).
    pub server_url: Option<String>,
    /// The components' `RUST_LOG` (default `info`).
    pub log_filter: Option<&'static str>,
    /// More environment for every component (`AWS_ACCESS_KEY_ID` for a pool on moto).
    pub env: Vec<(String, String)>,
    /// Top-level lines of the servers' configuration (`cluster_name = "gpu-east"`).
    pub top_config: &'static str,
    /// A pooler on this loopback port in front of the database's server: the
    /// components' `DATABASE_URL` goes through it (same user and database) and their
    /// `DATABASE_DIRECT_URL` is the server's.
    pub pooler_port: Option<u16>,
}

/// The api's `[api]` configuration section in tests: rate limits off (see
/// [`TestCluster::start_with_api_config`]).
pub const TEST_API_CONFIG: &str = "rate_limit_per_user = 0\nrate_limit_per_address = 0\n";

impl Default for Options {
    fn default() -> Self {
        Options {
            workers: 2,
            gpus: "8xH100",
            schedulers: 1,
            scheduler_config: "",
            poll_wait: None,
            apis: 1,
            server_url: None,
            log_filter: None,
            env: Vec::new(),
            top_config: "",
            pooler_port: None,
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
    /// How each component was started, to restart it.
    commands: Vec<(String, Vec<String>)>,
    /// Every api replica's URL, in start order.
    pub api_urls: Vec<String>,
    worker_args: Vec<String>,
    gpus: String,
    ca_file: Option<PathBuf>,
    poll_wait: Option<u32>,
    log_filter: String,
    /// More environment for every component.
    env: Vec<(String, String)>,
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
        Self::start_custom(options, TEST_API_CONFIG, None, &[]).await
    }

    /// Starts a cluster whose api reads `api_config` as its `[api]` section.
    pub async fn start_with_api_config(options: Options, api_config: &str) -> TestCluster {
        Self::start_custom(options, api_config, None, &[]).await
    }

    /// Like [`TestCluster::start`], with extra arguments for every `berth worker`
    /// (`--gpu-stuck-seconds 1`; `{name}` in one is the worker's node name).
    pub async fn start_with_worker_args(options: Options, worker_args: &[&str]) -> TestCluster {
        Self::start_custom(options, TEST_API_CONFIG, None, worker_args).await
    }

    /// Starts a cluster whose api reads `api_config` as its `[api]` section; with
    /// `ca_file`, the api serves HTTPS (`api_config` names its certificate) and the
    /// test's client and the workers trust that CA.
    pub async fn start_custom(
        options: Options,
        api_config: &str,
        ca_file: Option<&Path>,
        worker_args: &[&str],
    ) -> TestCluster {
        let base_url = options.server_url.clone().unwrap_or_else(base_database_url);
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
        // Tests that are not about node failure give nodes a long timeout: on a loaded
        // 2-core CI machine one slow sync must not declare a healthy node DOWN and requeue
        // the job under test (the failure tests set their own, short, timeout).
        let node_timeout = if options.scheduler_config.contains("node_timeout_seconds") {
            ""
        } else {
            "node_timeout_seconds = 120\n"
        };
        // A test may set its own lease (both keys).
        let lease = if options.scheduler_config.contains("lease_ttl_seconds") {
            ""
        } else {
            "lease_ttl_seconds = 3\nrenew_interval_seconds = 1\n"
        };
        let port = free_port();
        let scheme = if ca_file.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://127.0.0.1:{port}");
        // `@API_URL@` and `@DIR@` in a test's configuration: the api's URL and the
        // cluster's directory (for `[cloud]`, whose local instances live under it).
        // A local pool's instances live under the cluster's directory (its `Drop` ends
        // them), unless the test sets its own `[cloud]`.
        let api_config = if api_config.contains("[cloud]") {
            api_config.to_string()
        } else {
            format!(
                "{api_config}\n[cloud]\nlocal_state_dir = \"@DIR@/local-cloud\"\napi_url = \"@API_URL@\"\n\
                 local_worker_args = [\"--run-as\", \"worker\", \"--kill-wait\", \"2\"]\n"
            )
        };
        let api_config = api_config
            .replace("@API_URL@", &url)
            .replace("@DIR@", dir.to_str().unwrap());
        std::fs::write(
            &config,
            format!(
                "{}\n[scheduler]\n{lease}cycle_interval_seconds = 1\n{node_timeout}{}\n[api]\n{}",
                options.top_config, options.scheduler_config, api_config
            ),
        )
        .unwrap();
        let mut http = reqwest::Client::builder();
        if let Some(ca) = ca_file {
            let pem = std::fs::read(ca).unwrap();
            http = http.add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap());
        }
        let mut cluster = TestCluster {
            url: url.clone(),
            token: berth_api::mint_token(SECRET, "alice", Role::Admin, 3600),
            db_url: db_url.clone(),
            dir: dir.clone(),
            db_name,
            base_url,
            children: Vec::new(),
            commands: Vec::new(),
            api_urls: vec![url.clone()],
            http: http.build().unwrap(),
            worker_args: Vec::new(),
            gpus: String::new(),
            ca_file: None,
            poll_wait: None,
            log_filter: options.log_filter.unwrap_or("info").to_string(),
            env: options.env.clone(),
        };
        if let Some(port) = options.pooler_port {
            let mut pooled = reqwest::Url::parse(&db_url).unwrap();
            pooled.set_host(Some("127.0.0.1")).unwrap();
            pooled.set_port(Some(port)).unwrap();
            cluster
                .env
                .push(("DATABASE_URL".into(), pooled.to_string()));
            cluster
                .env
                .push(("DATABASE_DIRECT_URL".into(), db_url.clone()));
        }
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
        for i in 1..options.apis {
            let port = free_port();
            cluster.spawn(
                &format!("api-{i}"),
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
            cluster.api_urls.push(format!("http://127.0.0.1:{port}"));
        }
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
        cluster.ca_file = ca_file.map(Path::to_path_buf);
        cluster.poll_wait = options.poll_wait;
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
        let index: usize = name
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        let api = self.api_urls[(index.max(1) - 1) % self.api_urls.len()].clone();
        let mut args = Vec::new();
        if let Some(ca) = &self.ca_file {
            args.extend(["--ca-file".to_string(), ca.to_str().unwrap().to_string()]);
        }
        args.extend([
            "worker".to_string(),
            "--api".to_string(),
            api,
            "--token".to_string(),
            node_token,
            "--name".to_string(),
            name.to_string(),
            "--simulate-gpus".to_string(),
            gpus,
            "--state-dir".to_string(),
            state.to_str().unwrap().to_string(),
        ]);
        // A short kill wait, unless a test asks for its own.
        if !self.worker_args.iter().any(|a| a == "--kill-wait") {
            args.extend(["--kill-wait".to_string(), "2".to_string()]);
        }
        if let Some(p) = self.poll_wait {
            args.extend(["--poll-wait".to_string(), p.to_string()]);
        }
        // Test jobs are submitted as users this machine does not have: run them as the
        // worker's user unless a test asks otherwise.
        if !self.worker_args.iter().any(|a| a == "--run-as") {
            args.extend(["--run-as".to_string(), "worker".to_string()]);
        }
        // `{name}` in a worker argument is the worker's node name.
        args.extend(self.worker_args.iter().map(|a| a.replace("{name}", name)));
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
        self.spawn_env(name, args, &[]);
    }

    /// Starts `berth <args>` as component `name` with `envs` added to its environment
    /// (secrets such as `BERTH_BOOTSTRAP_TOKEN` go there, never in argv).
    pub fn spawn_berth_env(&mut self, name: &str, args: &[&str], envs: &[(&str, &str)]) {
        self.spawn_env(name, args, envs);
    }

    fn spawn_env(&mut self, name: &str, args: &[&str], envs: &[(&str, &str)]) {
        self.commands.retain(|(n, _)| n != name);
        self.commands.push((
            name.to_string(),
            args.iter().map(|a| a.to_string()).collect(),
        ));
        self.children.retain(|(n, _)| n != name);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{name}.log")))
            .unwrap();
        let child = Command::new(berth_bin())
            .args(args)
            .env("DATABASE_URL", &self.db_url)
            .env("BERTH_JWT_SECRET", SECRET)
            .env("RUST_LOG", &self.log_filter)
            .env_remove("BERTH_URL")
            .env_remove("BERTH_TOKEN")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.children.push((name.to_string(), child));
    }

    /// Starts `berth <args>` as a component of the cluster named `name` (its log is
    /// [`TestCluster::log`]`(name)`; `Drop` stops it).
    pub fn spawn_berth(&mut self, name: &str, args: &[&str]) {
        self.spawn(name, args);
    }

    /// Stops a component started by the cluster (SIGTERM, then waits for it).
    pub fn stop(&mut self, name: &str) {
        if let Some((_, child)) = self.children.iter_mut().find(|(n, _)| n == name) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let _ = child.wait();
        }
        self.children.retain(|(n, _)| n != name);
    }

    /// The pid of a component started by the cluster (`api`, `scheduler-0`, `node-1`).
    pub fn pid(&self, name: &str) -> Option<u32> {
        self.children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.id())
    }

    /// Sends `signal` to a component (`api`, `scheduler-0`, `node-1`).
    pub fn signal(&self, name: &str, signal: nix::sys::signal::Signal) {
        let pid = self
            .pid(name)
            .unwrap_or_else(|| panic!("no component {name}"));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).unwrap();
    }

    /// SIGKILLs a component and reaps it; it stays stopped until [`TestCluster::restart`].
    pub fn kill(&mut self, name: &str) {
        if let Some((_, child)) = self.children.iter_mut().find(|(n, _)| n == name) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERMs a component and waits (up to `secs`) for it to exit; true when it did.
    pub fn terminate(&mut self, name: &str, secs: u64) -> bool {
        let Some((_, child)) = self.children.iter_mut().find(|(n, _)| n == name) else {
            return false;
        };
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Starts a component again with the arguments it was first started with (kill it
    /// first); its log continues in the same file.
    pub fn restart(&mut self, name: &str) {
        self.kill(name);
        let args = self
            .commands
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| panic!("no component {name}"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.spawn(name, &args);
    }

    /// The names of the components, in start order.
    pub fn components(&self) -> Vec<String> {
        self.commands.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The live leader lease: (holder, term).
    pub async fn leader(&self) -> Option<(String, i64)> {
        let db = self.db().await;
        let row: Option<(String, i64)> = sqlx::query_as(
            "SELECT holder, term FROM leader_lease WHERE role = 'scheduler' AND expires_at > now()",
        )
        .fetch_optional(&db)
        .await
        .unwrap();
        db.close().await;
        row
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
            // Static nodes only: a cloud pool's slots (`pool` set) have no worker yet.
            let workers = nodes["items"]
                .as_array()
                .map(|items| items.iter().filter(|n| n["pool"].is_null()).count());
            if workers == Some(n) {
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

    /// Submits `script` over REST as `user` (a JWT of theirs, role user) from `self.dir`,
    /// with `sbatch` options `args` and `environment` besides the test's `PATH`; the job
    /// id (panics unless 201).
    pub async fn submit_as(
        &self,
        user: &str,
        script: &str,
        args: &[&str],
        environment: &[(&str, &str)],
    ) -> i64 {
        let token = berth_api::mint_token(SECRET, user, Role::User, 3600);
        let mut env: std::collections::BTreeMap<String, String> = [(
            "PATH".to_string(),
            std::env::var("PATH").unwrap_or_default(),
        )]
        .into();
        for (k, v) in environment {
            env.insert(k.to_string(), v.to_string());
        }
        let body = JobCreate {
            script: Some(script.to_string()),
            args: args.iter().map(|a| a.to_string()).collect(),
            submit_dir: Some(self.dir.to_string_lossy().into_owned()),
            environment: env,
            ..Default::default()
        };
        let r = self
            .http
            .post(format!("{}/v1/jobs", self.url))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
        r.json::<JobCreated>().await.unwrap().id
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

    /// Runs the `berth` command with `token` against this cluster, in its directory:
    /// (exit status, stdout, stderr).
    pub fn cli(&self, token: &str, args: &[&str]) -> (i32, String, String) {
        self.run_program(Path::new(berth_bin()), token, args, "")
    }

    /// Runs `program` with `token` from the cluster's directory, outside any job, with
    /// `stdin` as its input: (exit status, stdout, stderr).
    fn run_program(
        &self,
        program: &Path,
        token: &str,
        args: &[&str],
        stdin: &str,
    ) -> (i32, String, String) {
        use std::io::Write;
        use std::process::Stdio;
        let mut child = std::process::Command::new(program)
            .args(args)
            .current_dir(&self.dir)
            .env("BERTH_URL", &self.url)
            .env("BERTH_TOKEN", token)
            .env("HOME", &self.dir)
            .env("XDG_CONFIG_HOME", self.dir.join("config"))
            .env_remove("SLURM_JOB_ID")
            .env_remove("SLURM_MPI_TYPE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        // A command that does not read its input may have exited already.
        let _ = input.write_all(stdin.as_bytes());
        drop(input);
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
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
                    "job {id} did not get there in {secs} s; it is {:?} ({:?})\nscheduler:\n{}\nnode-1:\n{}\ndatabase sessions:\n{}",
                    job.state,
                    job.reason,
                    self.log("scheduler-0"),
                    self.log("node-1"),
                    self.db_activity().await
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

    /// A JWT for `user` with `role`, signed with the cluster's secret, valid for an hour.
    pub fn token_for(&self, user: &str, role: Role) -> String {
        berth_api::mint_token(SECRET, user, role, 3600)
    }

    /// Sends `method path` with `token` (none when `None`) and an optional JSON body;
    /// returns the status and the body as JSON (`Null` when empty or not JSON).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
        )
    }

    /// The cluster database's sessions (state, wait event, open transaction's age, query)
    /// and any lock not granted, to explain a stall when a wait times out.
    pub async fn db_activity(&self) -> String {
        let Ok(pool) = sqlx::PgPool::connect(&self.db_url).await else {
            return "  (database unreachable)".into();
        };
        let lines: Vec<String> = sqlx::query_scalar(
            "SELECT format('  pid %s %s wait %s:%s xact %s s: %s', pid, state, wait_event_type,
                           wait_event, round(EXTRACT(EPOCH FROM now() - xact_start)::numeric, 1),
                           left(query, 200))
             FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()
             UNION ALL
             SELECT format('  pid %s waits for %s %s, blocked by %s', pid, locktype, mode,
                           pg_blocking_pids(pid))
             FROM pg_locks WHERE NOT granted",
        )
        .fetch_all(&pool)
        .await
        .unwrap_or_else(|e| vec![format!("  (could not read: {e})")]);
        pool.close().await;
        lines.join("\n")
    }

    /// Runs the `berth` binary through a link named `name` (`squeue`, `srun` …), as Slurm
    /// users call it, with `token`, from the cluster's directory and outside any job;
    /// returns (exit code, stdout, stderr).
    pub fn slurm_command(&self, name: &str, token: &str, args: &[&str]) -> (i32, String, String) {
        self.slurm_command_with_input(name, token, args, "")
    }

    /// [`Self::slurm_command`] with `stdin` as the command's input.
    pub fn slurm_command_with_input(
        &self,
        name: &str,
        token: &str,
        args: &[&str],
        stdin: &str,
    ) -> (i32, String, String) {
        let link = self.slurm_link(name);
        self.run_program(&link, token, args, stdin)
    }

    /// The link named `name` to the `berth` binary (made once).
    fn slurm_link(&self, name: &str) -> PathBuf {
        let bin = self.dir.join("slurm-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let link = bin.join(name);
        if !link.exists() {
            std::os::unix::fs::symlink(berth_bin(), &link).unwrap();
        }
        link
    }

    /// [`Self::slurm_command`] started in the background (no input; its output piped):
    /// the caller waits for it.
    pub fn slurm_command_spawn(
        &self,
        name: &str,
        token: &str,
        args: &[&str],
    ) -> std::process::Child {
        use std::process::Stdio;
        std::process::Command::new(self.slurm_link(name))
            .args(args)
            .current_dir(&self.dir)
            .env("BERTH_URL", &self.url)
            .env("BERTH_TOKEN", token)
            .env("HOME", &self.dir)
            .env("XDG_CONFIG_HOME", self.dir.join("config"))
            .env_remove("SLURM_JOB_ID")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// A direct connection to the cluster's database, for checks users cannot make.
    pub async fn db(&self) -> sqlx::PgPool {
        sqlx::PgPool::connect(&self.db_url).await.unwrap()
    }

    /// The token run `run` of job `id` of `user` receives (`BERTH_TOKEN`), as the api
    /// mints it: with the job's incarnation, read from the database.
    pub async fn job_token(&self, user: &str, id: i64, run: u32) -> String {
        let db = self.db().await;
        let incarnation: berth_core::wire::Incarnation =
            sqlx::query_scalar("SELECT incarnation FROM jobs WHERE id = $1")
                .bind(id)
                .fetch_one(&db)
                .await
                .unwrap();
        db.close().await;
        berth_api::auth::mint_job_token(
            SECRET,
            user,
            berth_api::auth::JobRun {
                job_id: id,
                run,
                incarnation,
            },
            3600,
        )
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
        "/sys/fs/cgroup/devices/berth",
        "/sys/fs/cgroup/cpuset/berth",
        "/sys/fs/cgroup/cpuacct/berth",
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

impl TestCluster {
    /// The component (`scheduler-0` …) holding the live leader lease, with its term.
    pub async fn leader_component(&self) -> Option<(String, i64)> {
        let (holder, term) = self.leader().await?;
        self.components()
            .into_iter()
            .filter(|n| n.starts_with("scheduler"))
            .find(|n| {
                self.pid(n)
                    .is_some_and(|pid| holder.ends_with(&format!("-{pid}")))
            })
            .map(|n| (n, term))
    }

    /// Waits (up to `secs`) for a leader, returning its component and term.
    pub async fn wait_leader(&self, secs: u64) -> (String, i64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(l) = self.leader_component().await {
                return l;
            }
            assert!(Instant::now() < deadline, "no leader after {secs} s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits (up to `secs`) until node `name` satisfies `done`.
    pub async fn wait_node(
        &self,
        name: &str,
        secs: u64,
        done: impl Fn(&berth_core::wire::Node) -> bool,
    ) -> berth_core::wire::Node {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let list: berth_core::wire::NodeList = self.get("/v1/nodes").await;
            if let Some(n) = list.items.into_iter().find(|n| n.name == name) {
                if done(&n) {
                    return n;
                }
                assert!(
                    Instant::now() < deadline,
                    "node {name} did not get there in {secs} s; it is {:?} ({:?})\nscheduler:\n{}",
                    n.state,
                    n.reason,
                    self.log("scheduler-0")
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
