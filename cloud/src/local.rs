//! The `local` provider: a "cloud" made of a state directory and real `berth worker`
//! processes with simulated GPUs on this machine, for `berth dev --pool …` and the tests.
//! It is honest, not a mock: launches are all-or-nothing and idempotent in their token,
//! instances boot (after `boot_delay`), join with their one-time bootstrap token, run
//! jobs, survive the scheduler that launched them, and vanish when terminated or when
//! their process dies.
//!
//! Layout of the state directory:
//!
//! * `launches/<client_token>.json`: a launch ([`LaunchRecord`]), written (temp file +
//!   rename) before anything is spawned, naming the instance ids it creates in
//!   launch-index order. A repeated launch answers these instances and spawns only those
//!   that never started.
//! * `instances/<id>/instance.json` ([`InstanceRecord`]): type, zone, tags, launch index,
//!   node name, market, launch time, the worker's pid and process start time (so that a
//!   reused pid is not taken for the instance) and whether it was terminated;
//!   `instances/<id>/worker/` the worker's state directory; `instances/<id>/worker.log`
//!   its output; `instances/<id>/spot-instance-action`, when present, an interruption
//!   notice ([`interruption_notice`]).
//! * `inject.toml`: read at every launch and by the metadata service, so a test can
//!   change it while the cluster runs: `capacity_errors = ["type", "type/zone"]` fail
//!   launches with `InsufficientInstanceCapacity`; `interrupt = ["node or instance id"]`
//!   gives those instances an interruption notice.
//! * `metadata.port`: the port of the instance metadata service (`berth cloud-metadata
//!   --state-dir DIR`, a detached process that outlives the scheduler as the instances
//!   do), which serves EC2's IMDSv2 paths under `/<instance-id>/`; each worker gets
//!   `--metadata-url http://127.0.0.1:<port>/<instance-id>`.
//!
//! Each worker runs in its own session (`setsid`; a process group where `setsid` is
//! missing) with its output in its log; its bootstrap token is passed only in
//! `BERTH_BOOTSTRAP_TOKEN`, never in its arguments, and the scheduler's secrets
//! (`BERTH_JWT_SECRET`, `DATABASE_URL`, tokens, passwords, AWS keys) are removed from its
//! environment. Termination sends SIGTERM to every process of the instance's session
//! (the worker and its jobs, as a VM's shutdown does) and SIGKILL a few seconds later.
//!
//! Launches are serialized within one provider; two schedulers never launch at once (one
//! leads).

use crate::{Instance, InstanceState, LaunchError, LaunchRequest, Provider, ProviderError};
use berth_core::pool::{LocalOptions, Market};
use berth_core::wire::Interruption;
use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The zone of instances launched without one.
pub const DEFAULT_ZONE: &str = "local-a";

/// Seconds between an instance's SIGTERM and its SIGKILL.
pub const TERMINATE_GRACE: Duration = Duration::from_secs(5);

/// Seconds between the interruption notice and the instance's end, as on EC2.
pub const NOTICE_SECONDS: i64 = 120;

/// Environment variables never passed to an instance (the scheduler's secrets); besides
/// these, any name ending in `_SECRET`, `_PASSWORD`, `_TOKEN` or `_KEY`.
const SECRET_VARIABLES: &[&str] = &[
    "BERTH_JWT_SECRET",
    "DATABASE_URL",
    "BERTH_TOKEN",
    "BERTH_NODE_TOKEN",
    "BERTH_BOOTSTRAP_TOKEN",
    "BERTH_METADATA_URL",
    "PGPASSWORD",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

/// A launch as recorded before its instances are spawned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchRecord {
    /// The idempotency token (the launch id).
    pub client_token: String,
    /// `berth:cluster`.
    pub cluster: String,
    /// `berth:pool`.
    pub pool: String,
    /// The instance type.
    pub instance_type: String,
    /// The zone.
    pub zone: String,
    /// On-demand or spot.
    pub market: Market,
    /// The instance ids, in launch-index order.
    pub instances: Vec<String>,
    /// The node names, in launch-index order.
    pub nodes: Vec<String>,
    /// When the launch was recorded.
    pub created_at: DateTime<Utc>,
}

/// One instance's record (`instances/<id>/instance.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceRecord {
    /// `local-<12 hex digits>`.
    pub id: String,
    /// The instance type.
    pub instance_type: String,
    /// The zone.
    pub zone: String,
    /// On-demand or spot.
    pub market: Market,
    /// Its tags: Berth's (`berth:cluster`, `berth:pool`, `berth:launch`, `berth:nodes`,
    /// `Name`) and the pool's.
    pub tags: BTreeMap<String, String>,
    /// Its index in its launch (EC2's `AmiLaunchIndex`).
    pub launch_index: u32,
    /// The node it boots as.
    pub node: String,
    /// When it was launched.
    pub launched_at: DateTime<Utc>,
    /// Seconds it boots before its worker starts.
    pub boot_delay: u64,
    /// The worker's pid (its session leader), once spawned.
    pub pid: Option<i32>,
    /// The process's start time (`/proc/<pid>/stat` field 22, clock ticks since boot),
    /// which tells the instance's process from a later one with the same pid.
    pub start_time: Option<u64>,
    /// Terminated by [`Provider::terminate`].
    pub terminated: bool,
    /// When.
    pub terminated_at: Option<DateTime<Utc>>,
}

impl InstanceRecord {
    fn tag(&self, key: &str) -> Option<&str> {
        self.tags.get(key).map(String::as_str)
    }
}

/// What `inject.toml` in the state directory injects.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inject {
    /// Instance types (`type` or `type/zone`) whose launches fail with
    /// `InsufficientInstanceCapacity`.
    #[serde(default)]
    pub capacity_errors: Vec<String>,
    /// Node names or instance ids with an interruption notice.
    #[serde(default)]
    pub interrupt: Vec<String>,
}

/// Reads `<state_dir>/inject.toml` (empty when there is none).
///
/// # Errors
/// A message naming the file when it cannot be read or parsed.
pub fn read_inject(state_dir: &Path) -> Result<Inject, String> {
    let path = state_dir.join("inject.toml");
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Inject::default()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Whether `id` may name an instance (or a launch) in paths: 1 to 64 letters, digits or
/// `_.-`, not `.` or `..`.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

/// The directory of instance `id`.
pub fn instance_dir(state_dir: &Path, id: &str) -> PathBuf {
    state_dir.join("instances").join(id)
}

/// Instance `id`'s record, when it has one.
pub fn instance_record(state_dir: &Path, id: &str) -> Option<InstanceRecord> {
    if !valid_id(id) {
        return None;
    }
    let text = std::fs::read_to_string(instance_dir(state_dir, id).join("instance.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// The interruption notice of instance `id`, as EC2's `spot/instance-action` gives it:
/// from `instances/<id>/spot-instance-action` (EC2's JSON, an RFC 3339 time, or empty:
/// terminate [`NOTICE_SECONDS`] after the file was written), or when `inject.toml`'s
/// `interrupt` lists the instance id or its node name (terminate [`NOTICE_SECONDS`] after
/// `inject.toml` was written). `None`: no notice.
pub fn interruption_notice(state_dir: &Path, id: &str) -> Option<Interruption> {
    if !valid_id(id) {
        return None;
    }
    let after_mtime = |path: &Path| {
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
        Some(Interruption {
            action: "terminate".into(),
            time: DateTime::<Utc>::from(modified) + chrono::Duration::seconds(NOTICE_SECONDS),
        })
    };
    let file = instance_dir(state_dir, id).join("spot-instance-action");
    if let Ok(text) = std::fs::read_to_string(&file) {
        let text = text.trim();
        if let Ok(notice) = serde_json::from_str::<Interruption>(text) {
            return Some(notice);
        }
        if let Ok(time) = DateTime::parse_from_rfc3339(text) {
            return Some(Interruption {
                action: "terminate".into(),
                time: time.with_timezone(&Utc),
            });
        }
        return after_mtime(&file);
    }
    let inject = read_inject(state_dir).ok()?;
    let node = instance_record(state_dir, id).map(|r| r.node);
    inject
        .interrupt
        .iter()
        .any(|n| n == id || Some(n) == node.as_ref())
        .then(|| after_mtime(&state_dir.join("inject.toml")))
        .flatten()
}

/// Writes `bytes` to `path` atomically (a temp file beside it, then a rename), mode 0600.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), String> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| e.to_string())?;
    write_atomic(path, &bytes).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// A process's start time (`/proc/<pid>/stat` field 22), `None` when it is gone or a
/// zombie.
pub fn process_start_time(pid: i32) -> Option<u64> {
    let (_, state, _, start) = proc_stat(pid)?;
    (state != 'Z' && state != 'X').then_some(start)
}

/// `(session id, state, process group, start time)` of a process.
fn proc_stat(pid: i32) -> Option<(i32, char, i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields start after the last `)`.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); field n is rest[n - 3].
    let state = fields.first()?.chars().next()?;
    let group = fields.get(2)?.parse().ok()?;
    let session = fields.get(3)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((session, state, group, start))
}

/// Whether the instance's process is the one recorded and alive.
fn alive(record: &InstanceRecord) -> bool {
    match (record.pid, record.start_time) {
        (Some(pid), Some(start)) => process_start_time(pid) == Some(start),
        _ => false,
    }
}

/// The live processes of an instance: its session (the worker and everything it started
/// that kept its session; its process group where it has no session of its own), started
/// no earlier than the worker.
fn instance_processes(pid: i32, start: u64) -> Vec<(i32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| {
            let (session, state, group, started) = proc_stat(p)?;
            ((session == pid || group == pid) && started >= start && state != 'Z')
                .then_some((p, started))
        })
        .collect()
}

fn signal_all(processes: &[(i32, u64)], signal: nix::sys::signal::Signal) {
    for &(pid, start) in processes {
        if process_start_time(pid) == Some(start) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
        }
    }
}

/// The `local` provider ([module docs](self)).
#[derive(Debug)]
pub struct LocalProvider {
    state_dir: PathBuf,
    berth_binary: PathBuf,
    options: LocalOptions,
    extra_worker_args: Vec<String>,
    metadata_service: bool,
    launching: tokio::sync::Mutex<()>,
}

impl LocalProvider {
    /// A provider keeping its instances under `state_dir` (made when missing), starting
    /// `berth_binary worker …` for each with `options` (boot delay, capacity errors) and
    /// `extra_worker_args` appended to every worker's arguments (`--kill-wait 2`).
    pub fn new(
        state_dir: PathBuf,
        berth_binary: PathBuf,
        options: LocalOptions,
        extra_worker_args: Vec<String>,
    ) -> Self {
        LocalProvider {
            state_dir,
            berth_binary,
            options,
            extra_worker_args,
            metadata_service: true,
            launching: tokio::sync::Mutex::new(()),
        }
    }

    /// Without the instance metadata service (workers get no `--metadata-url`): for a
    /// `berth_binary` that is not `berth` (process-lifecycle tests).
    pub fn without_metadata_service(mut self) -> Self {
        self.metadata_service = false;
        self
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    fn launch_path(&self, token: &str) -> PathBuf {
        self.state_dir
            .join("launches")
            .join(format!("{token}.json"))
    }

    fn capacity_error(&self, instance_type: &str, zone: &str) -> Result<Option<String>, String> {
        let inject = read_inject(&self.state_dir)?;
        let both = format!("{instance_type}/{zone}");
        Ok(self
            .options
            .capacity_errors
            .iter()
            .chain(inject.capacity_errors.iter())
            .find(|e| **e == instance_type || **e == both)
            .map(|_| {
                format!("We currently do not have sufficient {instance_type} capacity in the Availability Zone you requested ({zone}).")
            }))
    }

    async fn launch_inner(&self, req: &LaunchRequest) -> Result<Vec<Instance>, LaunchError> {
        if !valid_id(&req.client_token) {
            return Err(LaunchError::Other(format!(
                "client token {:?}: 1 to 64 letters, digits or `_.-`",
                req.client_token
            )));
        }
        if req.nodes.is_empty() {
            return Err(LaunchError::Other("a launch of no nodes".into()));
        }
        let _guard = self.launching.lock().await;
        for dir in ["launches", "instances"] {
            std::fs::create_dir_all(self.state_dir.join(dir))
                .map_err(|e| LaunchError::Other(format!("{}: {e}", self.state_dir.display())))?;
        }
        let path = self.launch_path(&req.client_token);
        let record: LaunchRecord = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| LaunchError::Other(format!("{}: {e}", path.display())))?,
            Err(_) => {
                let zone = req.zone.clone().unwrap_or_else(|| DEFAULT_ZONE.to_string());
                if let Some(message) = self
                    .capacity_error(&req.instance_type, &zone)
                    .map_err(LaunchError::Other)?
                {
                    return Err(LaunchError::Capacity {
                        code: "InsufficientInstanceCapacity".into(),
                        message,
                    });
                }
                let record = LaunchRecord {
                    client_token: req.client_token.clone(),
                    cluster: req.cluster.clone(),
                    pool: req.pool.clone(),
                    instance_type: req.instance_type.clone(),
                    zone,
                    market: req.market,
                    instances: req
                        .nodes
                        .iter()
                        .map(|_| format!("local-{:012x}", rand::random::<u64>() >> 16))
                        .collect(),
                    nodes: req.nodes.iter().map(|n| n.name.clone()).collect(),
                    created_at: Utc::now(),
                };
                write_json(&path, &record).map_err(LaunchError::Other)?;
                record
            }
        };
        let metadata_port = if self.metadata_service {
            Some(self.ensure_metadata().await.map_err(LaunchError::Other)?)
        } else {
            None
        };
        let mut instances = Vec::new();
        for (index, id) in record.instances.iter().enumerate() {
            let existing = instance_record(&self.state_dir, id);
            let record = match existing {
                Some(existing) if existing.pid.is_some() || existing.terminated => existing,
                _ => self
                    .spawn_instance(req, &record, index, id, metadata_port)
                    .map_err(LaunchError::Other)?,
            };
            instances.push(self.view(&record));
        }
        Ok(instances)
    }

    /// Records and starts instance `id`, the `index`th of `launch`.
    fn spawn_instance(
        &self,
        req: &LaunchRequest,
        launch: &LaunchRecord,
        index: usize,
        id: &str,
        metadata_port: Option<u16>,
    ) -> Result<InstanceRecord, String> {
        let dir = instance_dir(&self.state_dir, id);
        std::fs::create_dir_all(dir.join("worker"))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let node = req
            .nodes
            .get(index)
            .ok_or_else(|| format!("launch {} has no node {index}", launch.client_token))?;
        let mut tags = req.tags.clone();
        tags.insert(crate::TAG_CLUSTER.into(), req.cluster.clone());
        tags.insert(crate::TAG_POOL.into(), req.pool.clone());
        tags.insert(crate::TAG_LAUNCH.into(), req.client_token.clone());
        tags.insert(crate::TAG_NODES.into(), launch.nodes.join(","));
        tags.insert("Name".into(), node.name.clone());
        let mut record = InstanceRecord {
            id: id.to_string(),
            instance_type: launch.instance_type.clone(),
            zone: launch.zone.clone(),
            market: launch.market,
            tags,
            launch_index: index as u32,
            node: node.name.clone(),
            launched_at: Utc::now(),
            boot_delay: self.options.boot_delay,
            pid: None,
            start_time: None,
            terminated: false,
            terminated_at: None,
        };
        let record_path = dir.join("instance.json");
        write_json(&record_path, &record)?;
        let shape = &req.shape;
        let mut args: Vec<String> = vec![
            "worker".into(),
            "--api".into(),
            req.api_url.clone(),
            "--name".into(),
            node.name.clone(),
            "--simulate-gpus".into(),
            if shape.gpu_count == 0 {
                "0".into()
            } else {
                format!("{}x{}", shape.gpu_count, shape.gpu_model)
            },
            "--simulate-cpus".into(),
            shape.cpus.to_string(),
            "--simulate-memory".into(),
            shape.memory_mib.to_string(),
            "--state-dir".into(),
            dir.join("worker").to_string_lossy().into_owned(),
        ];
        if let Some(port) = metadata_port {
            args.extend([
                "--metadata-url".into(),
                format!("http://127.0.0.1:{port}/{id}"),
            ]);
        }
        if !req.features.is_empty() {
            args.extend(["--feature".into(), req.features.join(",")]);
        }
        args.extend(self.extra_worker_args.iter().cloned());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("worker.log"))
            .map_err(|e| format!("{}: {e}", dir.join("worker.log").display()))?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        // The boot delay, then the worker; its arguments are positional parameters,
        // never part of the script.
        let setsid = ["/usr/bin/setsid", "/bin/setsid"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.exists());
        let mut command = match setsid {
            Some(setsid) => {
                let mut c = tokio::process::Command::new(setsid);
                c.arg("/bin/sh");
                c
            }
            None => {
                let mut c = tokio::process::Command::new("/bin/sh");
                c.process_group(0);
                c
            }
        };
        command
            .arg("-c")
            .arg(r#"sleep "$0"; exec "$@""#)
            .arg(self.options.boot_delay.to_string())
            .arg(&self.berth_binary)
            .args(&args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .kill_on_drop(false);
        for (name, _) in std::env::vars_os() {
            let Some(name) = name.to_str() else { continue };
            if SECRET_VARIABLES.contains(&name)
                || ["_SECRET", "_PASSWORD", "_TOKEN", "_KEY"]
                    .iter()
                    .any(|s| name.ends_with(s))
            {
                command.env_remove(name);
            }
        }
        command.env("BERTH_BOOTSTRAP_TOKEN", &node.bootstrap_token);
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting {}: {e}", self.berth_binary.display()))?;
        let pid = child.id().map(|p| p as i32);
        record.pid = pid;
        record.start_time = pid.and_then(process_start_time);
        write_json(&record_path, &record)?;
        // Reap it when it ends (an instance whose process ends is gone).
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        tracing::info!(instance.id = %id, node.name = %node.name, pid, boot_delay = self.options.boot_delay, "local instance started");
        Ok(record)
    }

    /// The port of a live metadata service for this state directory, started when none
    /// answers.
    async fn ensure_metadata(&self) -> Result<u16, String> {
        let port_file = self.state_dir.join("metadata.port");
        let read_port = || {
            std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|p| p.trim().parse::<u16>().ok())
        };
        if let Some(port) = read_port() {
            if self.metadata_answers(port).await {
                return Ok(port);
            }
        }
        let _ = std::fs::remove_file(&port_file);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.state_dir.join("metadata.log"))
            .map_err(|e| format!("{}: {e}", self.state_dir.display()))?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let mut command = tokio::process::Command::new(&self.berth_binary);
        command
            .arg("cloud-metadata")
            .arg("--state-dir")
            .arg(&self.state_dir)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .process_group(0)
            .kill_on_drop(false);
        for secret in SECRET_VARIABLES {
            command.env_remove(secret);
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting the metadata service: {e}"))?;
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while tokio::time::Instant::now() < deadline {
            if let Some(port) = read_port() {
                if self.metadata_answers(port).await {
                    tracing::info!(port, state_dir = %self.state_dir.display(), "local instance metadata service started");
                    return Ok(port);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!(
            "the instance metadata service did not start (see {})",
            self.state_dir.join("metadata.log").display()
        ))
    }

    /// Whether the metadata service on `port` answers for this state directory.
    async fn metadata_answers(&self, port: u16) -> bool {
        let want =
            std::fs::canonicalize(&self.state_dir).unwrap_or_else(|_| self.state_dir.clone());
        let probe = async {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()?;
            stream
                .write_all(b"GET /_berth/metadata HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                .await
                .ok()?;
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer).await.ok()?;
            let text = String::from_utf8_lossy(&answer);
            let body = text.split_once("\r\n\r\n")?.1;
            let value: serde_json::Value = serde_json::from_str(body).ok()?;
            Some(value.get("state_dir")?.as_str()? == want.to_string_lossy())
        };
        matches!(
            tokio::time::timeout(Duration::from_secs(2), probe).await,
            Ok(Some(true))
        )
    }

    /// The instance as [`Provider::describe`] reports it.
    fn view(&self, record: &InstanceRecord) -> Instance {
        let live = alive(record);
        let state = if record.terminated {
            if live {
                InstanceState::ShuttingDown
            } else {
                InstanceState::Terminated
            }
        } else if record.pid.is_none() || !live {
            // Never started (a launch cut short before the spawn) or died by itself: gone,
            // as a vanished VM.
            if record.pid.is_none()
                && Utc::now() - record.launched_at < chrono::Duration::seconds(10)
            {
                InstanceState::Pending
            } else {
                InstanceState::Terminated
            }
        } else if Utc::now()
            < record.launched_at + chrono::Duration::seconds(record.boot_delay as i64)
        {
            InstanceState::Pending
        } else {
            InstanceState::Running
        };
        Instance {
            id: record.id.clone(),
            instance_type: record.instance_type.clone(),
            zone: Some(record.zone.clone()),
            state,
            launch_index: record.launch_index,
            launch_id: record.tag(crate::TAG_LAUNCH).map(str::to_string),
            pool: record.tag(crate::TAG_POOL).map(str::to_string),
            launched_at: Some(record.launched_at),
            market: record.market,
        }
    }

    fn terminate_inner(&self, ids: &[String]) -> Result<(), ProviderError> {
        for id in ids {
            let Some(mut record) = instance_record(&self.state_dir, id) else {
                continue;
            };
            let processes = match (record.pid, record.start_time) {
                (Some(pid), Some(start)) => instance_processes(pid, start),
                _ => Vec::new(),
            };
            if !record.terminated {
                record.terminated = true;
                record.terminated_at = Some(Utc::now());
                write_json(
                    &instance_dir(&self.state_dir, id).join("instance.json"),
                    &record,
                )
                .map_err(ProviderError)?;
                tracing::info!(instance.id = %id, node.name = %record.node, processes = processes.len(), "terminating local instance");
            }
            // The instance's disk goes with it (the worker's state, with its copy of
            // `berth`): only its record stays, for describe.
            let disk = instance_dir(&self.state_dir, id).join("worker");
            if processes.is_empty() {
                let _ = std::fs::remove_dir_all(&disk);
                continue;
            }
            signal_all(&processes, nix::sys::signal::Signal::SIGTERM);
            std::thread::spawn(move || {
                std::thread::sleep(TERMINATE_GRACE);
                signal_all(&processes, nix::sys::signal::Signal::SIGKILL);
                std::thread::sleep(std::time::Duration::from_millis(500));
                let _ = std::fs::remove_dir_all(&disk);
            });
        }
        Ok(())
    }

    fn describe_inner(&self, cluster: &str, pool: &str) -> Result<Vec<Instance>, ProviderError> {
        let dir = self.state_dir.join("instances");
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ProviderError(format!("{}: {e}", dir.display()))),
        };
        let mut instances: Vec<Instance> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|id| instance_record(&self.state_dir, &id))
            .filter(|r| {
                r.tag(crate::TAG_CLUSTER) == Some(cluster) && r.tag(crate::TAG_POOL) == Some(pool)
            })
            .map(|r| self.view(&r))
            .collect();
        instances.sort_by(|a, b| (a.launched_at, &a.id).cmp(&(b.launched_at, &b.id)));
        Ok(instances)
    }
}

impl Provider for LocalProvider {
    fn kind(&self) -> &'static str {
        "local"
    }

    fn launch<'a>(
        &'a self,
        req: &'a LaunchRequest,
    ) -> BoxFuture<'a, Result<Vec<Instance>, LaunchError>> {
        Box::pin(self.launch_inner(req))
    }

    fn terminate<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move { self.terminate_inner(ids) })
    }

    fn describe<'a>(
        &'a self,
        cluster: &'a str,
        pool: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Instance>, ProviderError>> {
        Box::pin(async move { self.describe_inner(cluster, pool) })
    }
}
