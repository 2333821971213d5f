//! Registration and the long-poll loop.
//!
//! The worker registers its node (retrying until the api answers), then syncs in a
//! loop. Each sync carries the reports not yet acknowledged, the job runs it
//! supervises and fresh GPU samples; the answer's new assignments are launched and its
//! cancellations passed to their jobs. A sync with reports asks the api not to hold
//! it; one without may be held up to `poll_wait_seconds`. When a job starts or ends
//! while a sync is held, that request is dropped and a new one carrying the report is
//! sent at once. Reports leave the queue only after a sync that carried them succeeded
//! (the api applies each at most once per (job, run, kind), so resending is safe).
//! Connection errors and 5xx answers are retried with backoff while jobs keep running.
//!
//! On shutdown (or a crash) the loop stops and supervision ends; job processes keep
//! running under their shepherds. A restarted worker finds the runs left unreported in
//! its state directory and supervises them again before its first sync. A worker told to
//! stop its jobs when it stops ([`crate::WorkerConfig::stop_jobs_on_shutdown`], as
//! `berth dev` does) stops them instead (SIGTERM, SIGKILL after the kill wait), keeps
//! their end reports in its journal (node failures: the api requeues them once it hears)
//! and removes their cgroups.
//!
//! An answer's signals (`scancel --signal`) go to the process groups the worker started
//! for their runs (never a process the answer names) and are acknowledged in the next
//! sync, so each is sent once (a worker that dies before that sends it again after its
//! restart).
//!
//! Each successful sync renews the node's lease ([`crate::lease`]), written where the
//! shepherds watch it; the long poll is held for at most a quarter of the lease. A run is
//! never started while an earlier run of the same job is still alive here (its
//! cancellation is applied first, the new run waits for its end). An answer that brings
//! nothing new (a cancellation already being carried out, a run that must wait) does not
//! make the worker sync again at once: it waits out the rest of the long poll (2 s at
//! most), unless something happens (a report) meanwhile.

use crate::api::{ApiClient, Backoff};
use crate::gpu::{detect_backend_for_node, GpuBackend, SimulatedBackend};
use crate::journal::Journal;
use berth_core::stats::{GpuFault, GpuFaultKind};
use std::time::Instant;

/// The file under the state directory that a simulated backend reads injected GPU
/// faults from (`xid INDEX CODE`, `lost INDEX`, `stuck INDEX`, one per line).
pub const FAULT_FILE: &str = "inject-gpu-faults";
use crate::launch::{JobHandle, LaunchSettings, Launcher};
use crate::lease::{lease_path, Lease};
use crate::output::OutputUploader;
use crate::task::{launch_task, TaskHandle};
use crate::{WorkerConfig, WorkerError};
use berth_core::step::{PtyApplied, StepTaskKey, StepTaskReport};
use berth_core::wire::{
    same_incarnation, Incarnation, Interruption, JobReport, NodeRegister, ReportKind, RunningJob,
    RunningTask, SyncRequest, SyncResponse,
};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::Instrument;

/// A job run's key: (job id, run).
type RunKey = (i64, u32);

/// A job run (or step task) that ended here: whether all its reports are acknowledged,
/// and its job's incarnation (another job that has the same id since a database failover
/// is not this one).
#[derive(Debug, Clone, Copy)]
struct Finished {
    acked: bool,
    incarnation: Option<Incarnation>,
}

impl Finished {
    fn new(incarnation: Option<Incarnation>) -> Self {
        Finished {
            acked: false,
            incarnation,
        }
    }
}

/// The longest a worker waits before its next sync after an answer that brought nothing
/// new (the api answers at once while it lists a cancellation the worker is already
/// carrying out).
const QUIET_MAX: Duration = Duration::from_secs(2);

/// Runs the worker until `shutdown` resolves: registers the node, then syncs with the
/// api, launching and stopping jobs as it says.
///
/// # Errors
/// [`WorkerError::InvalidGpuSpec`] for a bad `simulate_gpus`;
/// [`WorkerError::InvalidCpuLayout`] for `simulate_threads_per_core` over a CPU count that
/// is not a multiple of it; [`WorkerError::Client`]
/// when no HTTP client can be built; [`WorkerError::Api`] when the api refuses the node
/// for good (401/403, or a 4xx on registration).
pub async fn run(
    config: WorkerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), WorkerError> {
    let span = tracing::info_span!("worker", node.name = %config.name);
    run_inner(config, Box::pin(shutdown)).instrument(span).await
}

type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

async fn run_inner(config: WorkerConfig, mut shutdown: Shutdown) -> Result<(), WorkerError> {
    crate::run_dir::prepare_state_dir(&config.state_dir)?;
    let backend: Box<dyn GpuBackend> = match config.simulate_gpus.as_deref() {
        // Simulated GPUs take injected faults from the state directory (tests).
        Some(spec) => Box::new(
            SimulatedBackend::parse(spec, &config.name)?
                .with_fault_file(config.state_dir.join(FAULT_FILE)),
        ),
        None => detect_backend_for_node(None, &config.name)?,
    };
    let backend: Box<dyn GpuBackend> = match config.gpu_shards {
        Some(shards) => Box::new(crate::gpu::ShardedBackend::new(backend, shards)?),
        None => backend,
    };
    let client = ApiClient::with_ca(&config.api_url, &config.token, config.ca_pem.as_deref())?;
    let topology = crate::topology::CpuTopology::detect();
    let inventory = backend.inventory();
    // Simulated GPUs come with CPUs and memory in proportion, unless declared.
    let per_gpu =
        (backend.kind() == "simulated").then(|| crate::topology::simulated_resources(&inventory));
    let mut registration = NodeRegister {
        name: config.name.clone(),
        hostname: crate::host_name(),
        cpus: config
            .simulate_cpus
            .or(per_gpu.map(|(cpus, _)| cpus))
            .unwrap_or(topology.cpus.len() as u32)
            .max(1),
        memory_mib: config
            .simulate_memory_mib
            .or(per_gpu.map(|(_, mib)| mib))
            .unwrap_or_else(memory_mib),
        features: config.features.clone(),
        weight: config.weight,
        cpu_domains: Vec::new(),
        cpu_cores: Vec::new(),
        cpu_sockets: Vec::new(),
        gpus: inventory,
    };
    let simulated = config.simulate_cpus.is_some() || per_gpu.is_some();
    registration.cpu_domains = crate::topology::cpu_domains(
        registration.cpus,
        simulated,
        &registration.gpus,
        &topology.cpus,
        std::path::Path::new("/sys/devices/system/node"),
    );
    let layout = crate::topology::reported_layout(
        &topology,
        registration.cpus,
        simulated,
        config.simulate_threads_per_core,
    )
    .map_err(|reason| WorkerError::InvalidCpuLayout { reason })?;
    registration.cpu_cores = layout.cpu_cores.clone();
    registration.cpu_sockets = layout.cpu_sockets.clone();
    tracing::info!(
        gpu.backend = backend.kind(),
        gpus = registration.gpus.len(),
        cpus = registration.cpus,
        real_cpus = topology.cpus.len(),
        sockets = topology.sockets,
        cores_per_socket = topology.cores_per_socket,
        threads_per_core = topology.threads_per_core,
        simulated,
        simulated_threads_per_core = config.simulate_threads_per_core,
        memory_mib = registration.memory_mib,
        "registering"
    );
    if !register(&client, &registration, &mut shutdown).await? {
        return Ok(());
    }

    let (reports_tx, reports) = mpsc::unbounded_channel();
    let (step_reports_tx, step_reports) = mpsc::unbounded_channel();
    let settings = LaunchSettings {
        node_name: config.name.clone(),
        api_url: config.api_url.clone(),
        state_dir: config.state_dir.clone(),
        kill_wait: config.kill_wait,
        token: Some(config.token.clone()).filter(|token| !token.is_empty()),
        client_exe: client_exe(&config),
        checkpoint_root: config
            .checkpoint_root
            .clone()
            .unwrap_or_else(|| config.state_dir.join("checkpoints")),
        run_as_user: config.run_as_user,
        allow_root_jobs: config.allow_root_jobs,
        cgroups: if config.cgroups {
            crate::cgroup::detect(std::path::Path::new("/sys/fs/cgroup"))
        } else {
            None
        },
        gpu_minors: backend.device_minors(),
        devices: registration.gpus.clone(),
        lease: Some(lease_path(&config.state_dir)),
        cpus: layout.map.clone(),
    };
    crate::launch::client_command_dir(&settings)?;
    let devices = settings
        .cgroups
        .as_ref()
        .map(crate::cgroup::Hierarchy::device_control)
        .unwrap_or(crate::cgroup::DeviceControl::None);
    tracing::info!(cgroups = ?settings.cgroups, run_as_user = settings.run_as_user, gpu_devices = ?devices, "job isolation");
    if devices == crate::cgroup::DeviceControl::None && !settings.gpu_minors.is_empty() {
        tracing::warn!("no device cgroup here: jobs can open GPU devices they do not hold (CUDA_VISIBLE_DEVICES still names only theirs)");
    }
    let uploader = OutputUploader::from_client(client.clone());
    let (limits_tx, time_limits) = mpsc::unbounded_channel();
    let launcher = Launcher::new(settings.clone(), Some(uploader.clone()), reports_tx)
        .with_time_limit_notices(limits_tx);
    let journal = Journal::open(&config.state_dir).map_err(|source| WorkerError::Io {
        action: "open the report journal in",
        path: config.state_dir.clone(),
        source,
    })?;
    if !journal.pending().is_empty() {
        tracing::info!(
            reports = journal.pending().len(),
            "replaying reports from the journal"
        );
    }
    let (interruption_tx, interruption) = tokio::sync::watch::channel(None);
    let watcher = config.metadata_url.clone().map(|base| {
        tokio::spawn(crate::metadata::watch_interruption(
            base,
            config.metadata_poll_interval,
            interruption_tx.clone(),
        ))
    });
    let mut agent = Agent {
        signals_done: Vec::new(),
        signals_seen: std::collections::VecDeque::new(),
        _interruption_tx: interruption_tx,
        interruption,
        interruption_told: false,
        config,
        client,
        backend,
        launcher,
        reports,
        running: HashMap::new(),
        finished: HashMap::new(),
        resent_ends: HashSet::new(),
        journal,
        time_limits,
        pending_limits: Vec::new(),
        lease: None,
        health: Health {
            registered: registration.gpus.iter().map(|g| g.index).collect(),
            ..Health::default()
        },
        steps: StepTasks {
            settings: Arc::new(settings),
            uploader,
            reports_tx: step_reports_tx,
            reports: step_reports,
            running: HashMap::new(),
            finished: HashMap::new(),
            pending: Vec::new(),
        },
    };
    // Runs whose end is journaled but not yet acknowledged are not launched again.
    let ended: Vec<(RunKey, Option<Incarnation>)> = agent
        .journal
        .pending()
        .iter()
        .filter(|r| r.kind != ReportKind::Started)
        .map(|r| ((r.job_id, r.run), r.incarnation))
        .collect();
    for (key, incarnation) in ended {
        agent.finished.insert(key, Finished::new(incarnation));
    }
    // Runs a previous worker process left running are supervised again (their
    // shepherds kept them going and record how they end).
    for record in crate::launch::unreported_runs(&agent.config.state_dir) {
        let key = (record.assignment.job_id, record.assignment.run);
        tracing::info!(
            job.id = key.0,
            job.run = key.1,
            "found a job run from before the restart"
        );
        let handle = agent.launcher.adopt(record);
        agent.running.insert(key, handle);
    }
    // Step tasks a previous worker process left running are supervised again (their
    // shepherds record how they end); those from older workers are stopped and reported.
    let (adoptable, lost) = crate::task::unreported_tasks(&agent.steps.settings);
    for record in adoptable {
        let Some(launch) = record.launch.clone() else {
            continue;
        };
        let key = record.key;
        tracing::info!(
            job.id = key.job_id,
            step.id = key.step_id,
            task = key.task_id,
            "found a step task from before the restart"
        );
        let handle = crate::task::adopt_task(
            agent.steps.settings.clone(),
            Some(agent.steps.uploader.clone()),
            agent.steps.reports_tx.clone(),
            record,
            launch,
        );
        agent.steps.running.insert(key, handle);
    }
    for lost in lost {
        tracing::warn!(
            job.id = lost.key.job_id,
            step.id = lost.key.step_id,
            task = lost.key.task_id,
            "step task lost in the restart; stopped"
        );
        agent.steps.record(lost);
    }
    let result = agent.sync_loop(&mut shutdown, &registration).await;
    if let Some(watcher) = watcher {
        watcher.abort();
    }
    if agent.config.stop_jobs_on_shutdown {
        agent.stop_everything().await;
        tracing::info!("worker stopped with its jobs");
        return result;
    }
    for (_, job) in agent.running.drain() {
        job.abandon();
    }
    for (_, task) in agent.steps.running.drain() {
        task.abandon();
    }
    tracing::info!("worker stopped; running jobs are left running");
    result
}

/// Registers until the api accepts (true) or shutdown comes first (false).
async fn register(
    client: &ApiClient,
    registration: &NodeRegister,
    shutdown: &mut Shutdown,
) -> Result<bool, WorkerError> {
    let mut backoff = Backoff::new();
    loop {
        let attempt = client.post_ignore("/v1/nodes/register", registration);
        let result = tokio::select! {
            _ = shutdown.as_mut() => return Ok(false),
            result = attempt => result,
        };
        match result {
            Ok(()) => {
                tracing::info!("registered");
                return Ok(true);
            }
            Err(err) if err.is_retryable() => {
                let delay = backoff.next_delay();
                tracing::warn!(error = %err.chain(), retry_in_ms = delay.as_millis() as u64, "registration failed; retrying");
                tokio::select! {
                    _ = shutdown.as_mut() => return Ok(false),
                    _ = tokio::time::sleep(delay) => {}
                }
            }
            Err(err) => return Err(err),
        }
    }
}

/// This machine's memory, MiB (`MemTotal` in `/proc/meminfo`; 0 when unknown).
fn memory_mib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        })
        .map(|kib| kib / 1024)
        .unwrap_or(0)
}

/// How often the worker removes the directories of finished runs.
const SWEEP_INTERVAL: Duration = Duration::from_secs(600);

struct Agent {
    config: WorkerConfig,
    client: ApiClient,
    backend: Box<dyn GpuBackend>,
    launcher: Launcher,
    reports: mpsc::UnboundedReceiver<JobReport>,
    /// Job runs being supervised.
    running: HashMap<RunKey, JobHandle>,
    /// Job runs that ended, with whether all their reports are acknowledged; kept so
    /// that an assignment still listed is not launched again.
    finished: HashMap<RunKey, Finished>,
    /// Ended runs whose end this worker process sent again because the api assigned them.
    resent_ends: HashSet<RunKey>,
    /// Reports not yet acknowledged, oldest first, on disk (numbered, replayed after a
    /// restart).
    journal: Journal,
    /// Job step tasks.
    steps: StepTasks,
    /// GPU fault detection.
    health: Health,
    /// Runs at their time limit, announced by their supervisors…
    time_limits: mpsc::UnboundedReceiver<crate::launch::TimeLimitNotice>,
    /// … and not yet acknowledged by the api.
    pending_limits: Vec<crate::launch::TimeLimitNotice>,
    /// The lease of the last successful sync.
    lease: Option<Duration>,
    /// Keeps the interruption channel open when no metadata is watched.
    _interruption_tx: tokio::sync::watch::Sender<Option<Interruption>>,
    /// The instance's interruption notice, once the metadata watcher saw one
    /// ([`crate::metadata`]); sent in every sync from then on…
    interruption: tokio::sync::watch::Receiver<Option<Interruption>>,
    /// … and acknowledged by a successful sync.
    interruption_told: bool,
    /// Signals of the api's answers dealt with (sent or dropped), to acknowledge in the
    /// next sync.
    signals_done: Vec<i64>,
    /// The ids of the latest signals dealt with (at most [`SIGNALS_REMEMBERED`]), so that
    /// one the api lists again (its acknowledgement lost in a failover) is not sent twice.
    signals_seen: std::collections::VecDeque<i64>,
}

/// How many signal ids a worker remembers having sent.
const SIGNALS_REMEMBERED: usize = 4096;

/// GPU faults found from samples: XID errors, GPUs missing from the samples (lost), and
/// GPUs at 0 % under a running job for `gpu_stuck_after`. Each is reported once.
#[derive(Default)]
struct Health {
    /// The device indices the node registered with: one missing from the samples is lost.
    registered: Vec<u32>,
    reported: HashSet<GpuFault>,
    /// Since when each busy GPU has been at 0 %.
    zero_since: HashMap<u32, Instant>,
    /// Faults not yet acknowledged by the api.
    pending: Vec<GpuFault>,
}

impl Health {
    fn observe(
        &mut self,
        backend: &dyn GpuBackend,
        samples: &[berth_core::wire::GpuSample],
        busy: &[u32],
        stuck_after: Duration,
    ) {
        let now = Instant::now();
        let mut found = Vec::new();
        for (index, code) in backend.xid_errors() {
            found.push(GpuFault {
                index,
                kind: GpuFaultKind::Xid,
                xid: Some(code),
            });
        }
        for &index in &self.registered {
            match samples.iter().find(|s| s.index == index) {
                None => found.push(GpuFault {
                    index,
                    kind: GpuFaultKind::Lost,
                    xid: None,
                }),
                Some(sample)
                    if busy.contains(&index)
                        && sample.utilization_pct == 0
                        && backend.utilization_measured(index) =>
                {
                    let since = *self.zero_since.entry(index).or_insert(now);
                    if now.duration_since(since) >= stuck_after {
                        found.push(GpuFault {
                            index,
                            kind: GpuFaultKind::Stuck,
                            xid: None,
                        });
                    }
                }
                Some(_) => {
                    self.zero_since.remove(&index);
                }
            }
        }
        for fault in found {
            if self.reported.insert(fault.clone()) {
                tracing::warn!(gpu = fault.index, reason = %fault.reason(), "GPU fault");
                self.pending.push(fault);
            }
        }
    }
}

/// The step tasks of this node, kept like job runs: supervised, ended (with whether
/// their reports are acknowledged), and reports not yet acknowledged.
struct StepTasks {
    settings: Arc<LaunchSettings>,
    uploader: OutputUploader,
    reports_tx: mpsc::UnboundedSender<StepTaskReport>,
    reports: mpsc::UnboundedReceiver<StepTaskReport>,
    running: HashMap<StepTaskKey, TaskHandle>,
    finished: HashMap<StepTaskKey, Finished>,
    pending: Vec<StepTaskReport>,
}

impl StepTasks {
    fn record(&mut self, report: StepTaskReport) {
        if matches!(report.kind, ReportKind::Exited | ReportKind::LaunchFailed) {
            self.running.remove(&report.key);
            self.finished
                .insert(report.key, Finished::new(report.incarnation));
        }
        self.pending.push(report);
    }

    /// Launches new step tasks, stops cancelled ones, forgets ended ones the api no longer
    /// lists once their reports are acknowledged. Returns whether it started or stopped
    /// anything.
    fn apply(&mut self, response: &SyncResponse, acked_before: &[StepTaskKey]) -> bool {
        let mut acted = false;
        for (key, finished) in self.finished.iter_mut() {
            finished.acked = !self.pending.iter().any(|report| report.key == *key);
        }
        let listed: HashSet<StepTaskKey> = response.step_tasks.iter().map(|t| t.key).collect();
        for key in acked_before {
            if !listed.contains(key) {
                self.finished.remove(key);
            }
        }
        for launch in &response.step_tasks {
            let key = launch.key;
            if let Some(task) = self.running.get(&key) {
                if !same_incarnation(task.incarnation(), launch.incarnation) && task.cancel() {
                    // A task of another job that had this id (before a database failover)
                    // holds the key: it is stopped, and this one starts once it has ended.
                    tracing::warn!(job.id = key.job_id, step.id = key.step_id, task = key.task_id,
                        "a step task of another job that had this id is still running; stopping it first");
                    acted = true;
                }
                continue;
            }
            if self
                .finished
                .get(&key)
                .is_some_and(|f| !same_incarnation(f.incarnation, launch.incarnation))
            {
                self.finished.remove(&key);
            }
            if self.finished.contains_key(&key) {
                continue;
            }
            tracing::info!(
                job.id = key.job_id,
                step.id = key.step_id,
                task = key.task_id,
                "launching step task"
            );
            let handle = launch_task(
                self.settings.clone(),
                Some(self.uploader.clone()),
                self.reports_tx.clone(),
                launch.clone(),
            );
            self.running.insert(key, handle);
            acted = true;
        }
        for input in &response.pty_input {
            let Some(files) = self.running.get(&input.key).and_then(|t| t.pty()) else {
                continue;
            };
            match files.apply(input) {
                Ok(new) => acted |= new,
                Err(err) => tracing::warn!(
                    job.id = input.key.job_id,
                    step.id = input.key.step_id,
                    error = %err,
                    "terminal input not applied"
                ),
            }
        }
        for key in &response.step_cancellations {
            if let Some(task) = self.running.get(key) {
                if task.cancel() {
                    acted = true;
                    tracing::info!(
                        job.id = key.job_id,
                        step.id = key.step_id,
                        task = key.task_id,
                        "stopping step task"
                    );
                }
            }
        }
        acted
    }
}

/// What ended one wait on a sync.
enum Step {
    Shutdown,
    Answer(Result<SyncResponse, WorkerError>),
    Report(JobReport),
    TaskReport(StepTaskReport),
    TimeLimit(crate::launch::TimeLimitNotice),
    /// The instance got an interruption notice.
    Interruption,
}

impl Agent {
    async fn sync_loop(
        &mut self,
        shutdown: &mut Shutdown,
        registration: &NodeRegister,
    ) -> Result<(), WorkerError> {
        let path = format!("/v1/nodes/{}/sync", self.config.name);
        let mut backoff = Backoff::new();
        // Until when the last answer, which brought nothing new, stands for the long poll
        // it cut short.
        let mut quiet_until: Option<tokio::time::Instant> = None;
        let mut lease_lapsed = false;
        let mut swept_at: Option<tokio::time::Instant> = None;
        loop {
            if swept_at.is_none_or(|at| at.elapsed() >= SWEEP_INTERVAL) {
                self.sweep_finished_runs();
                swept_at = Some(tokio::time::Instant::now());
            }
            while let Ok(report) = self.reports.try_recv() {
                self.record(report);
            }
            while let Ok(report) = self.steps.reports.try_recv() {
                self.steps.record(report);
            }
            while let Ok(notice) = self.time_limits.try_recv() {
                self.pending_limits.push(notice);
            }
            if let Some(until) = quiet_until.take() {
                if !self.has_news() {
                    tokio::select! {
                        _ = shutdown.as_mut() => return Ok(()),
                        _ = tokio::time::sleep_until(until) => {}
                        Some(report) = self.reports.recv() => self.record(report),
                        Some(report) = self.steps.reports.recv() => self.steps.record(report),
                        Some(notice) = self.time_limits.recv() => self.pending_limits.push(notice),
                        Ok(()) = self.interruption.changed() => {}
                    }
                    continue;
                }
            }
            let request = self.request();
            let carried_limits = request.time_limits.len();
            let carried = request.reports.len();
            let carried_faults = request.gpu_faults.len();
            let carried_steps = request.step_reports.len();
            let carried_interruption = request.interruption.is_some();
            let carried_signals = request.signals_delivered.len();
            let steps_acked_before: Vec<StepTaskKey> = self
                .steps
                .finished
                .iter()
                .filter(|(_, f)| f.acked)
                .map(|(key, _)| *key)
                .collect();
            let acked_before: Vec<RunKey> = self
                .finished
                .iter()
                .filter(|(_, f)| f.acked)
                .map(|(key, _)| *key)
                .collect();
            let hold = Duration::from_secs(u64::from(request.wait_seconds));
            let sent_at = tokio::time::Instant::now();
            let sent_at_ms = crate::lease::now_ms();
            let step = {
                let sync = self.client.post::<_, SyncResponse>(&path, &request, hold);
                tokio::select! {
                    _ = shutdown.as_mut() => Step::Shutdown,
                    result = sync => Step::Answer(result),
                    Some(report) = self.reports.recv() => Step::Report(report),
                    Some(report) = self.steps.reports.recv() => Step::TaskReport(report),
                    Some(notice) = self.time_limits.recv() => Step::TimeLimit(notice),
                    Ok(()) = self.interruption.changed() => Step::Interruption,
                }
            };
            match step {
                Step::Shutdown => return Ok(()),
                Step::Report(report) => {
                    // Something happened: drop the held request, sync again now.
                    self.record(report);
                }
                Step::TaskReport(report) => self.steps.record(report),
                Step::TimeLimit(notice) => self.pending_limits.push(notice),
                // Tell the api now: drop the held request.
                Step::Interruption => {}
                Step::Answer(Ok(mut response)) => {
                    backoff.reset();
                    if carried_interruption {
                        self.interruption_told = true;
                    }
                    self.renew_lease(sent_at_ms, response.lease_ms);
                    lease_lapsed = false;
                    if let Some(remembered) = response.resend_after {
                        // The api's database forgot reports it had acknowledged (a
                        // failover): nothing of this sync was applied; send them again.
                        let again = self.journal.resend_after(remembered);
                        tracing::warn!(
                            remembered,
                            again,
                            "the api's database forgot reports it had acknowledged; sending them again"
                        );
                        continue;
                    }
                    for refused in &response.rejected {
                        tracing::warn!(job.id = refused.job_id, job.run = refused.run, seq = refused.seq,
                            source = ?refused.source, status = refused.status, detail = %refused.detail,
                            "the api refused a report for good; not sending it again");
                    }
                    self.journal.ack(carried);
                    for acked in self.steps.pending.drain(..carried_steps) {
                        if matches!(acked.kind, ReportKind::Exited | ReportKind::LaunchFailed) {
                            crate::task::mark_reported(&self.steps.settings, acked.key);
                        }
                    }
                    self.health.pending.drain(..carried_faults);
                    self.signals_done.drain(..carried_signals);
                    for (_, ack) in self.pending_limits.drain(..carried_limits) {
                        let _ = ack.send(());
                    }
                    let signals = std::mem::take(&mut response.signals);
                    let stepped = self.steps.apply(&response, &steps_acked_before);
                    let acted = self.apply(response, &acked_before);
                    // After the launches: a signal for a run or task started by this
                    // answer is sent once it has started.
                    let signalled = self.deliver_signals(&signals);
                    if !acted && !stepped && !signalled && !hold.is_zero() {
                        // Nothing new (a cancellation already being carried out, a run
                        // waiting for an earlier one): no new sync before the long poll
                        // would have ended (at most QUIET_MAX, so that new work is not
                        // kept waiting long), unless something happens here first.
                        quiet_until = Some(sent_at + hold.min(QUIET_MAX));
                    }
                }
                Step::Answer(Err(err)) => {
                    match &err {
                        WorkerError::Api {
                            status: 401 | 403, ..
                        } => return Err(err),
                        WorkerError::Api { status: 404, .. } => {
                            tracing::warn!(error = %err.chain(), "the api does not know this node; registering again");
                            if !register(&self.client, registration, shutdown).await? {
                                return Ok(());
                            }
                            continue;
                        }
                        _ if err.is_retryable() => {}
                        _ if carried > 0 || carried_steps > 0 => {
                            tracing::error!(error = %err.chain(), reports = carried, step_reports = carried_steps, "the api refused the reports; dropping them");
                            self.journal.ack(carried);
                            self.steps.pending.drain(..carried_steps);
                        }
                        _ => {}
                    }
                    let delay = backoff.next_delay();
                    tracing::warn!(error = %err.chain(), retry_in_ms = delay.as_millis() as u64, "sync failed; retrying");
                    if !lease_lapsed
                        && Lease::read(&lease_path(&self.config.state_dir))
                            .is_some_and(|lease| crate::lease::now_ms() >= lease.term_at_ms)
                    {
                        lease_lapsed = true;
                        tracing::error!(
                            "no contact with the api for the node's whole lease: its shepherds stop its runs, which the scheduler requeues"
                        );
                    }
                    tokio::select! {
                        _ = shutdown.as_mut() => return Ok(()),
                        _ = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
    }

    /// The next sync request: the queued reports (then the api must answer at once),
    /// the supervised runs, and fresh samples.
    fn request(&mut self) -> SyncRequest {
        let busy: Vec<u32> = self
            .running
            .values()
            .flat_map(|job| job.gpus().iter().copied())
            .chain(
                self.steps
                    .running
                    .values()
                    .flat_map(|t| t.gpus().iter().copied()),
            )
            .collect();
        let samples = self.backend.sample(&busy);
        self.health.observe(
            self.backend.as_ref(),
            &samples,
            &busy,
            self.config.gpu_stuck_after,
        );
        let mut running: Vec<RunningJob> = self
            .running
            .iter()
            .map(|(&(job_id, run), job)| RunningJob {
                job_id,
                run,
                incarnation: job.incarnation(),
            })
            .collect();
        running.sort_by_key(|job| (job.job_id, job.run));
        let mut running_tasks: Vec<RunningTask> = self
            .steps
            .running
            .iter()
            .map(|(&key, task)| RunningTask {
                key,
                incarnation: task.incarnation(),
            })
            .collect();
        running_tasks.sort_by_key(|task| task.key);
        let mut pty_applied: Vec<PtyApplied> = self
            .steps
            .running
            .values()
            .filter_map(|task| {
                task.pty().map(|files| PtyApplied {
                    key: task.key(),
                    seq: files.applied(),
                })
            })
            .collect();
        pty_applied.sort_by_key(|a| a.key);
        SyncRequest {
            acked_seq: Some(self.journal.acked_seq()),
            reports: self.journal.pending().to_vec(),
            running,
            samples,
            gpu_faults: self.health.pending.clone(),
            time_limits: self
                .pending_limits
                .iter()
                .map(|((job_id, run), _)| RunningJob {
                    job_id: *job_id,
                    run: *run,
                    incarnation: self
                        .running
                        .get(&(*job_id, *run))
                        .and_then(|job| job.incarnation()),
                })
                .collect(),
            wait_seconds: if self.has_news() {
                0
            } else {
                crate::lease::hold_seconds(self.config.poll_wait_seconds, self.lease)
            },
            running_tasks,
            step_reports: self.steps.pending.clone(),
            interruption: self.interruption.borrow().clone(),
            pty_applied,
            signals_delivered: self.signals_done.clone(),
            max_job_id: self.max_job_id(),
        }
    }

    /// The highest job id this worker remembers: its runs and step tasks, running or
    /// ended, and its journal's reports.
    fn max_job_id(&self) -> Option<i64> {
        self.running
            .keys()
            .chain(self.finished.keys())
            .map(|&(job_id, _)| job_id)
            .chain(self.steps.running.keys().map(|k| k.job_id))
            .chain(self.steps.finished.keys().map(|k| k.job_id))
            .chain(self.journal.max_job_id())
            .max()
    }

    /// Sends the signals of a sync answer (`scancel --signal`) to the processes this
    /// worker started for their runs: the batch shell alone (`batch`), its process group
    /// (`full`), the process groups of the run's step tasks (`steps`, `full`) or of one
    /// step's (`step`). Never a process the answer names: only the supervised ones of
    /// that run. Each is queued for acknowledgement, sent or not (a run or step that is
    /// not running here any more); one already dealt with is not sent again. Returns
    /// whether any was new.
    fn deliver_signals(&mut self, signals: &[berth_core::signal::SignalDelivery]) -> bool {
        use berth_core::signal::SignalTarget;
        let mut acted = false;
        for delivery in signals {
            if self.signals_seen.contains(&delivery.id) {
                if !self.signals_done.contains(&delivery.id) {
                    self.signals_done.push(delivery.id);
                }
                continue;
            }
            acted = true;
            let key = (delivery.job_id, delivery.run);
            let mut batch = false;
            if delivery.target.reaches_batch() {
                if let Some(job) = self.running.get(&key).filter(|job| {
                    !job.is_stopping() && same_incarnation(job.incarnation(), delivery.incarnation)
                }) {
                    batch = job.signal(crate::launch::BatchSignal {
                        signal: delivery.signal,
                        whole_group: delivery.target == SignalTarget::Full,
                    });
                }
            }
            let mut tasks = 0;
            for (task_key, task) in &self.steps.running {
                let aimed = task_key.job_id == delivery.job_id
                    && task_key.run == delivery.run
                    && same_incarnation(task.incarnation(), delivery.incarnation)
                    && match delivery.target {
                        SignalTarget::Steps | SignalTarget::Full => true,
                        SignalTarget::Step => Some(task_key.step_id) == delivery.step,
                        SignalTarget::Batch => false,
                    };
                if aimed && task.signal(delivery.signal) {
                    tasks += 1;
                }
            }
            tracing::info!(
                job.id = delivery.job_id,
                job.run = delivery.run,
                signal = delivery.signal,
                target = delivery.target.as_str(),
                step.id = delivery.step,
                batch,
                tasks,
                "signal"
            );
            self.signals_done.push(delivery.id);
            self.signals_seen.push_back(delivery.id);
            if self.signals_seen.len() > SIGNALS_REMEMBERED {
                self.signals_seen.pop_front();
            }
        }
        acted
    }

    /// Queues a report; an `Exited` or `LaunchFailed` ends the run's supervision.
    fn record(&mut self, report: JobReport) {
        if matches!(report.kind, ReportKind::Exited | ReportKind::LaunchFailed) {
            let key = (report.job_id, report.run);
            self.running.remove(&key);
            self.finished.insert(key, Finished::new(report.incarnation));
        }
        self.journal.append(report);
    }

    /// Whether something waits to be told to the api (then a sync is not held).
    fn has_news(&self) -> bool {
        !self.journal.pending().is_empty()
            || !self.steps.pending.is_empty()
            || !self.health.pending.is_empty()
            || !self.pending_limits.is_empty()
            || (!self.interruption_told && self.interruption.borrow().is_some())
    }

    /// Writes the lease of a successful sync sent at `sent_at_ms` (boot-time clock) where
    /// the shepherds watch it; without one (an api that gives none), removes it.
    fn renew_lease(&mut self, sent_at_ms: u64, lease_ms: Option<u64>) {
        let path = lease_path(&self.config.state_dir);
        match lease_ms {
            Some(ms) => {
                let lease = Duration::from_millis(ms);
                self.lease = Some(lease);
                let hold = crate::lease::hold_seconds(self.config.poll_wait_seconds, Some(lease));
                let renewed = Lease::new(
                    sent_at_ms,
                    lease,
                    self.config.kill_wait,
                    Duration::from_secs(u64::from(hold)),
                );
                if let Err(err) = renewed.write(&path) {
                    tracing::error!(error = %err, path = %path.display(), "could not renew the node's lease; its runs will be stopped when it runs out");
                }
            }
            None => {
                if self.lease.take().is_some() || path.exists() {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
    }

    /// Removes the directories of runs over for [`crate::run_dir::FINISHED_RUN_RETENTION`]
    /// (never one this worker supervises).
    fn sweep_finished_runs(&self) {
        let live: HashSet<RunKey> = self
            .running
            .keys()
            .copied()
            .chain(self.steps.running.keys().map(|k| (k.job_id, k.run)))
            .collect();
        let removed = crate::run_dir::sweep_finished_runs(
            &self.config.state_dir,
            &live,
            crate::run_dir::FINISHED_RUN_RETENTION,
        );
        if !removed.is_empty() {
            tracing::info!(
                runs = removed.len(),
                "removed the directories of finished runs"
            );
        }
    }

    /// Whether a run of job `job_id` earlier than `run` (batch shell or step task) is
    /// still alive here.
    fn earlier_run_alive(&self, job_id: i64, run: u32) -> bool {
        self.running
            .keys()
            .any(|&(job, earlier)| job == job_id && earlier < run)
            || self
                .steps
                .running
                .keys()
                .any(|task| task.job_id == job_id && task.run < run)
    }

    /// Stops every job and step task (SIGTERM, SIGKILL after the kill wait), waits for
    /// them (the kill wait and 5 s more at most), keeps their reports in the journal and
    /// removes the worker's job cgroups: the worker is stopping with its jobs.
    async fn stop_everything(&mut self) {
        let node_failure = crate::launch::Stop {
            node_failure: true,
            ..crate::launch::Stop::default()
        };
        for job in self.running.values() {
            job.stop(node_failure);
        }
        for task in self.steps.running.values() {
            task.cancel();
        }
        let within = self.config.kill_wait + Duration::from_secs(5);
        let deadline = tokio::time::Instant::now() + within;
        for (_, job) in self.running.drain() {
            job.finish_by(deadline).await;
        }
        for (_, task) in self.steps.running.drain() {
            task.finish_by(deadline).await;
        }
        while let Ok(report) = self.reports.try_recv() {
            self.record(report);
        }
        if let Some(hierarchy) = &self.steps.settings.cgroups {
            let prefix = crate::launch::cgroup_prefix(&self.steps.settings);
            hierarchy.remove_groups(&prefix).await;
        }
    }

    /// Applies a sync answer: passes cancellations on (with a preempted run's grace),
    /// launches new assignments (a run only once no earlier run of its job is alive
    /// here), moves the time limits that changed, and forgets ended runs whose reports
    /// were acknowledged before this sync and that the api no longer assigns. Returns
    /// whether it changed anything.
    fn apply(&mut self, response: SyncResponse, acked_before: &[RunKey]) -> bool {
        let mut acted = false;
        for (key, finished) in self.finished.iter_mut() {
            finished.acked = !self
                .journal
                .pending()
                .iter()
                .any(|report| (report.job_id, report.run) == *key);
        }
        let assigned: HashSet<RunKey> = response
            .assignments
            .iter()
            .map(|assignment| (assignment.job_id, assignment.run))
            .collect();
        for key in acked_before {
            if !assigned.contains(key) {
                self.finished.remove(key);
            }
        }
        for cancellation in response.cancellations {
            let key = (cancellation.job_id, cancellation.run);
            match self
                .running
                .get(&key)
                .filter(|job| same_incarnation(job.incarnation(), cancellation.incarnation))
            {
                Some(job) if job.is_stopping() => {}
                Some(job) => {
                    acted = true;
                    tracing::info!(
                        job.id = key.0,
                        job.run = key.1,
                        preempted = cancellation.preempted,
                        reclaimed = cancellation.reclaimed,
                        grace_seconds = cancellation.grace_seconds,
                        "cancelling"
                    );
                    job.stop(crate::launch::Stop {
                        preempted: cancellation.preempted,
                        grace: cancellation
                            .grace_seconds
                            .map(|s| Duration::from_secs(u64::from(s))),
                        node_failure: false,
                        reclaimed: cancellation.reclaimed,
                    });
                }
                None => {
                    tracing::debug!(
                        job.id = key.0,
                        job.run = key.1,
                        "cancellation for a run not running here"
                    )
                }
            }
        }
        for assignment in response.assignments {
            let key = (assignment.job_id, assignment.run);
            let incarnation = assignment.incarnation;
            // Runs of another job that had this id (before a database failover: the
            // database has never heard of them) are stopped; this job's run starts once
            // they have ended. Never two jobs under one id at once.
            let mut other_alive = false;
            for (&(job_id, run), job) in &self.running {
                if job_id == key.0 && !same_incarnation(job.incarnation(), incarnation) {
                    other_alive = true;
                    if !job.is_stopping() {
                        tracing::warn!(job.id = job_id, job.run = run,
                            "a run of another job that had this id (before a database failover) is still running; stopping it first");
                        job.cancel();
                        acted = true;
                    }
                }
            }
            if other_alive {
                continue;
            }
            if self.running.contains_key(&key) {
                continue;
            }
            if self
                .finished
                .get(&key)
                .is_some_and(|f| !same_incarnation(f.incarnation, incarnation))
            {
                // What ended here under this key was another job's.
                self.finished.remove(&key);
                self.resent_ends.remove(&key);
            }
            // This node never runs a job run twice, whatever the api says (after a
            // database failover it may assign a run that already ran here): it sends the
            // run's end again instead (once per worker process).
            match self.journal.run_record(key.0, key.1, incarnation) {
                crate::journal::RunRecord::Unknown if !self.finished.contains_key(&key) => {}
                crate::journal::RunRecord::Unknown => continue,
                crate::journal::RunRecord::Ended(_) => {
                    if self.resent_ends.insert(key)
                        && self.journal.resend_end(key.0, key.1, incarnation)
                    {
                        tracing::warn!(
                            job.id = key.0,
                            job.run = key.1,
                            "the api assigns a run that ended here; sending its end again"
                        );
                    }
                    self.finished
                        .entry(key)
                        .or_insert(Finished::new(incarnation));
                    acted = true;
                    continue;
                }
                crate::journal::RunRecord::Started if self.finished.contains_key(&key) => continue,
                crate::journal::RunRecord::Started => {
                    tracing::warn!(job.id = key.0, job.run = key.1,
                        "the api assigns a run that started here and is no longer supervised; reporting its end as unknown");
                    let lost = JobReport {
                        job_id: key.0,
                        run: key.1,
                        kind: ReportKind::Exited,
                        at: chrono::Utc::now(),
                        exit_code: None,
                        signal: None,
                        timed_out: false,
                        cancelled: false,
                        out_of_memory: false,
                        cpu_time_seconds: None,
                        max_rss_mib: None,
                        message: Some(
                            "it ended while the worker was away; its exit status is unknown"
                                .to_string(),
                        ),
                        seq: None,
                        pid: None,
                        launch_fault: None,
                        grant: assignment.grant,
                        node_failed: false,
                        incarnation,
                    };
                    self.record(lost);
                    acted = true;
                    continue;
                }
            }
            if self.earlier_run_alive(key.0, key.1) {
                tracing::debug!(
                    job.id = key.0,
                    job.run = key.1,
                    "waiting for an earlier run of the job to end"
                );
                continue;
            }
            tracing::info!(job.id = key.0, job.run = key.1, "launching");
            let job = self.launcher.launch(assignment);
            self.running.insert(key, job);
            acted = true;
        }
        for limit in &response.run_limits {
            if let Some(job) = self.running.get(&(limit.job_id, limit.run)) {
                let before = job.time_limit();
                if job.set_time_limit(limit.time_limit) {
                    acted = true;
                    tracing::info!(job.id = limit.job_id, job.run = limit.run, ?before,
                        time_limit = ?limit.time_limit, "time limit changed");
                }
            }
        }
        acted
    }
}

/// The `berth` executable that jobs run as `srun`, `scontrol` … and that runs their
/// shepherds. When jobs run as their submitting users, a copy in
/// `{state_dir}/bin/berth` (mode 0755, replaced atomically when it changes), since the
/// worker's own file may sit where those users cannot reach it (`/root/...`).
fn client_exe(config: &WorkerConfig) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let exe = std::env::current_exe().ok()?;
    if !config.run_as_user {
        return Some(exe);
    }
    let dir = config.state_dir.join("bin");
    let copy = dir.join("berth");
    let same = |a: &std::path::Path, b: &std::path::Path| -> bool {
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.len() == b.len() && a.modified().ok() <= b.modified().ok(),
            _ => false,
        }
    };
    if same(&exe, &copy) {
        return Some(copy);
    }
    let tmp = dir.join(format!(".berth.{}", std::process::id()));
    let made = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)))
        .and_then(|()| std::fs::copy(&exe, &tmp).map(|_| ()))
        .and_then(|()| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)))
        .and_then(|()| std::fs::rename(&tmp, &copy));
    match made {
        Ok(()) => Some(copy),
        Err(e) => {
            tracing::warn!(error = %e, path = %copy.display(), "could not copy the berth executable for jobs; they use the worker's own");
            let _ = std::fs::remove_file(&tmp);
            Some(exe)
        }
    }
}
