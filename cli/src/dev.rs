//! `berth dev`: a whole cluster in one process for development. PostgreSQL from
//! `DATABASE_URL` or a private server ([`crate::pg`]), the api, the scheduler and N
//! workers with simulated (or real, through NVML) GPUs; it writes the client
//! configuration so that `berth queue` works from another terminal.

use crate::client::Client;
use crate::config::{client_config_path, write_client_config, ClientConfig};
use crate::pg::PgServer;
use crate::shutdown::Shutdown;
use anyhow::{bail, Context};
use berth_core::auth::Role;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long `berth dev` waits for the api and the workers to come up.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// `examples/single_gpu.sbatch`, built in for `--demo` when the file is not at hand.
const DEMO_SCRIPT: &str = include_str!("../../examples/single_gpu.sbatch");

/// `berth dev`'s settings.
#[derive(Debug, Clone)]
pub struct DevOptions {
    /// Where the cluster keeps its state (`<data local dir>/berth/dev` by default).
    pub data_dir: PathBuf,
    /// The api's listen address.
    pub listen: String,
    /// How many workers (`node-1` … `node-N`).
    pub workers: u32,
    /// The simulated GPUs of each worker (`8xH100`); `None`: NVML if present, else 8
    /// simulated H100s.
    pub gpus: Option<String>,
    /// The CPUs each worker declares (`--cpus`); `None`: simulated GPUs come with 12
    /// CPUs each (at least 16), real ones with the machine's.
    pub cpus: Option<u32>,
    /// Each worker's hardware threads per core (`--threads-per-core`; `None`: one per
    /// simulated CPU, the machine's for real ones).
    pub threads_per_core: Option<u32>,
    /// The memory each worker declares, MiB (`--memory`); `None`: simulated GPUs come
    /// with 128 GiB each (at least 64 GiB), real ones with the machine's.
    pub memory_mib: Option<u64>,
    /// Submit the demo job and show its output.
    pub demo: bool,
    /// The api's rate limits and output cap (`--rate-limit-per-user` …; the server's
    /// defaults otherwise).
    pub limits: berth_api::limits::Limits,
    /// A server configuration file's definitions, `[cloud]` settings and `[[api.oidc]]`
    /// issuers (`--config`).
    pub config: Option<crate::server::ServerConfigFile>,
}

/// The default data directory: `<data local dir>/berth/dev`.
pub fn default_data_dir() -> PathBuf {
    dirs::data_local_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("berth")
        .join("dev")
}

/// The current user's name: `$USER`, else the password database's name of the uid.
pub fn current_user() -> String {
    if let Some(user) = std::env::var("USER").ok().filter(|u| !u.is_empty()) {
        return user;
    }
    let uid = nix::unistd::getuid();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string())
}

/// Reads the token secret from `path`, generating it (32 random bytes, hex, mode 0600)
/// the first time.
pub fn load_or_create_secret(path: &Path) -> anyhow::Result<String> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let secret = text.trim().to_string();
        if !secret.is_empty() {
            return Ok(secret);
        }
    }
    let bytes: [u8; 32] = rand::random();
    let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(secret.as_bytes())?;
    file.write_all(b"\n")?;
    Ok(secret)
}

/// Finds the demo script: `./examples/single_gpu.sbatch`, else the workspace's copy; its
/// text and a display name.
fn demo_script() -> (String, String) {
    let candidates = [
        PathBuf::from("examples/single_gpu.sbatch"),
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/single_gpu.sbatch"
        )),
    ];
    for path in candidates {
        if let Ok(text) = std::fs::read_to_string(&path) {
            return (text, path.display().to_string());
        }
    }
    (
        DEMO_SCRIPT.to_string(),
        "single_gpu.sbatch (built in)".into(),
    )
}

/// Runs the dev cluster until Ctrl-C (or SIGTERM).
///
/// # Errors
/// When PostgreSQL cannot be found or started, the address is taken, or the cluster does
/// not come up within a minute.
pub async fn run_dev(options: DevOptions) -> anyhow::Result<()> {
    let data_dir = &options.data_dir;
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let shutdown = Shutdown::on_signals();

    let pg = match std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()) {
        Some(_) => None,
        None => {
            eprintln!("berth dev: starting PostgreSQL …");
            let server = PgServer::start(data_dir).await?;
            eprintln!(
                "berth dev: PostgreSQL on the socket in {} (port {}; {})",
                server.socket_dir.display(),
                server.port,
                server.cluster_dir().display()
            );
            Some(server)
        }
    };
    let result = run_cluster(&options, pg.as_ref(), &shutdown).await;
    shutdown.trigger();
    if let Some(pg) = &pg {
        eprintln!("berth dev: stopping PostgreSQL");
        if let Err(e) = pg.stop() {
            eprintln!("berth dev: {e:#}");
        }
    }
    result
}

async fn run_cluster(
    options: &DevOptions,
    pg: Option<&PgServer>,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let data_dir = &options.data_dir;
    let database_url = match pg {
        Some(pg) => pg.database_url(),
        None => std::env::var("DATABASE_URL")?,
    };
    let secret = load_or_create_secret(&data_dir.join("jwt-secret"))?;

    let listener = tokio::net::TcpListener::bind(&options.listen)
        .await
        .with_context(|| format!("listening on {}", options.listen))?;
    let mut addr = listener.local_addr()?;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let url = format!("http://{addr}");

    let mut tasks: Vec<(String, tokio::task::JoinHandle<anyhow::Result<()>>)> = Vec::new();
    let mut scheduler_config =
        berth_scheduler::SchedulerConfig::new(database_url.clone(), "dev-scheduler");
    let file = options.config.clone().unwrap_or_default();
    let from = "in --config";
    let mut cloud = file.cloud.settings(&addr.to_string(), false, from)?;
    if file.cloud.api_url.is_none() {
        cloud.api_url = url.clone();
    }
    if file.cloud.local_state_dir.is_none() {
        cloud.local_state_dir = data_dir.join("local-cloud");
    }
    // The one person running `berth dev` administers this cluster: their jobs run as
    // them, root included, on the pools' local instances too.
    if file.cloud.local_worker_args.is_none() {
        cloud.local_worker_args = vec![
            "--allow-root-jobs".into(),
            "--kill-wait".into(),
            "10".into(),
        ];
    }
    let local_cloud = cloud.local_state_dir.clone();
    scheduler_config.cloud = cloud;
    let definitions = berth_api::definitions::Definitions {
        qos: file.qos.clone(),
        partitions: file.partitions.clone(),
        nodes: file.nodes.clone(),
        pools: file.pools.clone(),
    };
    let api_config = berth_api::ApiConfig {
        database_url: database_url.clone(),
        jwt_secret: Some(secret.clone()),
        jwt_public_key_pem: None,
        cluster_name: file
            .cluster_name
            .clone()
            .unwrap_or_else(|| berth_core::cluster::DEFAULT_CLUSTER_NAME.to_string()),
        max_connections: 16,
        db_timeouts: berth_db::Timeouts::default(),
        db_pooling: berth_db::Pooling::default(),
        limits: berth_api::limits::Limits {
            // `[scheduler] inactive_limit_seconds` of --config (salloc's keep-alives).
            inactive_limit: std::time::Duration::from_secs(file.scheduler.inactive_limit_seconds),
            ..options.limits.clone()
        },
        // `[[api.oidc]]` of --config: issuers whose tokens are taken (and the console logs
        // in through, with a `console_client_id`).
        oidc: file.api.oidc.clone(),
        tls: None,
        definitions,
        node_timeout: scheduler_config.node_timeout,
        // The one person running `berth dev` may point webhooks at this machine.
        webhooks: berth_api::webhooks::WebhookSettings {
            allow_private_networks: true,
            ..file.webhooks.settings(from)?
        },
        metrics: file.metrics.settings(from)?,
        will_run: Some(crate::server::will_run_planner(
            scheduler_config.planner.clone(),
        )),
    };
    let stop = shutdown.clone();
    tasks.push((
        "api".into(),
        tokio::spawn(async move {
            let r = berth_api::serve(api_config, listener, stop.wait())
                .await
                .context("api");
            stop.trigger();
            r
        }),
    ));
    let stop = shutdown.clone();
    tasks.push((
        "scheduler".into(),
        tokio::spawn(async move {
            let r = berth_scheduler::run(scheduler_config, stop.wait())
                .await
                .context("scheduler");
            stop.trigger();
            r
        }),
    ));

    let user = current_user();
    let admin_token = berth_api::mint_token(&secret, &user, Role::Admin, 365 * 86_400);
    let client = Client::new(&url, &admin_token);
    wait_until(shutdown, "the api to answer /healthz", || async {
        client.healthz().await
    })
    .await?;

    let node_token = berth_api::mint_token(&secret, "node:*", Role::Node, 365 * 86_400);
    let names: Vec<String> = (1..=options.workers).map(|i| format!("node-{i}")).collect();
    for name in &names {
        let state_dir = data_dir.join("workers").join(name);
        std::fs::create_dir_all(&state_dir)
            .with_context(|| format!("creating {}", state_dir.display()))?;
        let mut config = berth_worker::WorkerConfig::new(&url, &node_token, name, state_dir);
        // Simulated GPUs where the machine has none that NVML sees (a laptop, CI).
        config.simulate_gpus = options
            .gpus
            .clone()
            .or_else(|| (!berth_worker::gpu::nvml_available()).then(|| "8xH100".to_string()));
        config.simulate_cpus = options.cpus;
        config.simulate_threads_per_core = options.threads_per_core;
        config.simulate_memory_mib = options.memory_mib;
        config.kill_wait = Duration::from_secs(10);
        // The one person running `berth dev` administers this cluster: their jobs run as
        // them, root included.
        config.allow_root_jobs = true;
        // Stopping `berth dev` stops the cluster's jobs too (and removes their cgroups).
        config.stop_jobs_on_shutdown = true;
        let stop = shutdown.clone();
        let label = format!("worker {name}");
        let context = label.clone();
        tasks.push((
            label,
            tokio::spawn(async move {
                let r = berth_worker::run(config, stop.wait())
                    .await
                    .context(context);
                stop.trigger();
                r
            }),
        ));
    }

    wait_until(shutdown, "the workers to register", || async {
        match client.node_list().await {
            Ok(list) => names
                .iter()
                .all(|n| list.items.iter().any(|node| &node.name == n)),
            Err(_) => false,
        }
    })
    .await?;

    let config_path = client_config_path().context("no configuration directory")?;
    write_client_config(
        &config_path,
        &ClientConfig {
            url: Some(url.clone()),
            token: Some(admin_token.clone()),
        },
    )?;

    let nodes = client.node_list().await?;
    println!("berth dev is running");
    println!("  api:      {url}");
    println!("  console:  {url}/ (log in with the token below)");
    println!("  openapi:  {url}/openapi.json");
    println!("  user:     {user} (admin)");
    println!("  token:    {admin_token}");
    println!("  config:   {}", config_path.display());
    println!("  data:     {}", data_dir.display());
    for node in nodes.items.iter().filter(|n| names.contains(&n.name)) {
        let model = node
            .gpus
            .first()
            .map(|g| g.model.as_str())
            .unwrap_or("no GPUs");
        println!("  node:     {} ({} x {model})", node.name, node.gpus.len());
    }
    for (name, pool) in &file.pools {
        let types: Vec<&str> = pool
            .instance_types
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        println!(
            "  pool:     {name} ({:?}, {}..{} nodes of {}; `berth pools {name}`)",
            pool.provider,
            pool.min_nodes,
            pool.max_nodes,
            types.join(", ")
        );
    }
    println!(
        "Try: berth submit examples/single_gpu.sbatch; berth queue; berth nodes. Ctrl-C stops."
    );

    if options.demo {
        if let Err(e) = run_demo(&client, data_dir).await {
            eprintln!("berth dev: demo: {e:#}");
        }
    }

    // Run until a signal, or until a part stops on its own (an error).
    shutdown.wait().await;
    eprintln!("berth dev: shutting down");
    let mut first_error = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    for (name, task) in tasks {
        match tokio::time::timeout_at(deadline, task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => {
                eprintln!("berth dev: {e:#}");
                first_error.get_or_insert(e);
            }
            Ok(Err(e)) => {
                eprintln!("berth dev: {name}: {e}");
            }
            Err(_) => eprintln!("berth dev: {name} did not stop within 30 s of the signal"),
        }
    }
    // A local pool's instances are processes of their own (they outlive a scheduler, as
    // instances do): stopping `berth dev` terminates them.
    terminate_local_instances(&local_cloud).await;
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Terminates every instance the local provider keeps under `state_dir`, and its
/// instance metadata service (which stops once its port file is gone).
async fn terminate_local_instances(state_dir: &Path) {
    use berth_cloud::Provider;
    let _ = std::fs::remove_file(state_dir.join("metadata.port"));
    let Ok(entries) = std::fs::read_dir(state_dir.join("instances")) else {
        return;
    };
    let ids: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|id| {
            berth_cloud::local::instance_record(state_dir, id).is_some_and(|r| !r.terminated)
        })
        .collect();
    if ids.is_empty() {
        return;
    }
    eprintln!("berth dev: terminating {} local instance(s)", ids.len());
    let provider = berth_cloud::LocalProvider::new(
        state_dir.to_path_buf(),
        std::path::PathBuf::from("berth"),
        Default::default(),
        Vec::new(),
    );
    if let Err(e) = provider.terminate(&ids).await {
        eprintln!("berth dev: terminating local instances: {e}");
    }
    // Their SIGKILL follows a few seconds after SIGTERM.
    tokio::time::sleep(Duration::from_secs(6)).await;
}

async fn wait_until<F, Fut>(shutdown: &Shutdown, what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        if check().await {
            return Ok(());
        }
        if shutdown.is_triggered() {
            bail!("stopped while waiting for {what}");
        }
        if started.elapsed() > STARTUP_TIMEOUT {
            bail!(
                "timed out after {}s waiting for {what}",
                STARTUP_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn run_demo(client: &Client, data_dir: &Path) -> anyhow::Result<()> {
    let demo_dir = data_dir.join("demo");
    std::fs::create_dir_all(&demo_dir)?;
    let (script, shown) = demo_script();
    let job = berth_core::wire::JobCreate {
        script: Some(script),
        args: vec![],
        spec: None,
        submit_dir: Some(demo_dir.to_string_lossy().into_owned()),
        environment: crate::submit::submit_environment(),
        script_name: Some("single_gpu.sbatch".into()),
        script_args: Vec::new(),
    };
    let created = client.job_create(&job, None).await?;
    println!(
        "\ndemo: submitted {shown} as job {} (from {})",
        created.id,
        demo_dir.display()
    );
    println!("--- output of job {} ---", created.id);
    let job = crate::submit::follow_to_end(client, created.id).await?;
    println!("--- end of output ---");
    println!(
        "demo: job {} {}, exit code {}:{}",
        job.id,
        job.state,
        job.exit_code.unwrap_or(0),
        job.exit_signal.unwrap_or(0)
    );
    Ok(())
}
