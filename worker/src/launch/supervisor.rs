//! The supervisor task of one run: preparing it (directories, script, working directory,
//! output files, the shepherd's spec), starting it, waiting for its end, its time limit,
//! a cancellation or a signal, and reporting.

#[allow(unused_imports)]
use super::*;

/// Why the wait for the batch shell ended.
pub(crate) enum Ending {
    Exited(Result<ShepherdStatus, String>),
    TimeLimit,
    Stopped(Stop),
}

pub(crate) struct Supervisor {
    pub(crate) settings: Arc<LaunchSettings>,
    pub(crate) uploader: Option<OutputUploader>,
    pub(crate) reports: mpsc::UnboundedSender<JobReport>,
    /// Set once when the run must stop.
    pub(crate) stop: watch::Receiver<Option<Stop>>,
    /// The time limit to enforce, seconds from the launch.
    pub(crate) time_limit: watch::Receiver<Option<u64>>,
    pub(crate) time_limits: Option<mpsc::UnboundedSender<TimeLimitNotice>>,
    /// Signals to send to the batch shell while it runs.
    pub(crate) signals: mpsc::UnboundedReceiver<BatchSignal>,
}

/// A job ready to spawn.
pub(crate) struct Prepared {
    pub(crate) start: Start,
    pub(crate) script: PathBuf,
    pub(crate) files: RunFiles,
    pub(crate) cgroup: Option<crate::cgroup::JobCgroup>,
    /// The job's user, whose output files alone are shipped.
    pub(crate) user: Option<JobUser>,
}

impl Supervisor {
    pub(crate) async fn supervise(self, assignment: Assignment) {
        let prepared = match prepare(&self.settings, &assignment) {
            Ok(prepared) => prepared,
            Err(err) => return self.launch_failed(&assignment, &err),
        };
        let Prepared {
            start,
            script,
            files,
            cgroup,
            user,
        } = prepared;
        // Recorded before the spawn, with the pid still unknown, so that a worker killed
        // between the spawn and the shepherd's pid file still finds this run after a
        // restart and never launches it a second time.
        let shepherded = matches!(start, Start::Shepherd(_));
        if shepherded {
            let provisional = RunRecord {
                assignment: assignment.clone(),
                batch_pid: 0,
                pid_start: None,
                launched_at: Utc::now(),
                outputs: Vec::new(),
                cgroup: cgroup.clone(),
            };
            write_record(&files, &provisional);
        }
        let (waiter, pid, outputs) = match spawn_supervised(start, &files).await {
            Ok(spawned) => spawned,
            Err(err) => {
                tracing::debug!(script = %script.display(), "the job did not start");
                return self.launch_failed(&assignment, &err);
            }
        };
        let record = RunRecord {
            assignment,
            batch_pid: pid,
            pid_start: process_start_ticks(pid),
            launched_at: Utc::now(),
            outputs,
            cgroup,
        };
        if shepherded {
            write_record(&files, &record);
        }
        tracing::info!(pid, gpus = ?record.assignment.gpus, "job started");
        let mut started = report(&record.assignment, ReportKind::Started);
        started.pid = u32::try_from(pid).ok();
        self.send(started);
        let owner = user.map(|user| user.uid.as_raw());
        self.follow(record, waiter, files, false, owner).await;
    }

    /// Supervises a run a previous worker started (from its `run.json`).
    pub(crate) async fn adopt(self, mut record: RunRecord) {
        let files = RunFiles::new(&run_dir(
            &self.settings,
            record.assignment.job_id,
            record.assignment.run,
        ));
        if record.batch_pid == 0 {
            // The previous worker died between the spawn and the shepherd's pid file: the
            // shepherd writes it as soon as the batch shell runs.
            if let Some(pid) = await_pid(&files).await {
                record.batch_pid = pid;
                record.pid_start = process_start_ticks(pid);
                record.outputs = files.opened_outputs();
            } else {
                let err = launch_error(
                    &files,
                    "the worker restarted before the shepherd started the batch shell",
                );
                return self.launch_failed(&record.assignment, &err);
            }
            write_record(&files, &record);
        }
        let ending = files.ending.exists();
        tracing::info!(
            pid = record.batch_pid,
            ending,
            "supervising a job started before a restart"
        );
        let waiter = Waiter::Adopted {
            files: files.clone(),
            pid: record.batch_pid,
            start: record.pid_start,
        };
        let owner = job_user(&self.settings, &record.assignment.user)
            .ok()
            .flatten()
            .map(|user| user.uid.as_raw());
        self.follow(record, waiter, files, true, owner).await;
    }

    /// Ships the output (regular files of `owner`, the job's uid, when it has its own
    /// user), enforces the limits, waits for the end and reports it.
    pub(crate) async fn follow(
        mut self,
        record: RunRecord,
        mut waiter: Waiter,
        files: RunFiles,
        adopted: bool,
        owner: Option<u32>,
    ) {
        let assignment = &record.assignment;
        let group = Pid::from_raw(record.batch_pid);
        let mut tails = JoinSet::new();
        let mut stops = Vec::new();
        if let Some(uploader) = &self.uploader {
            for (stream, path, start) in record.outputs.clone() {
                let (stop, stopped) = oneshot::channel();
                stops.push(stop);
                let tail = OutputTail {
                    job_id: assignment.job_id,
                    run: assignment.run,
                    incarnation: assignment.incarnation,
                    step: None,
                    stream,
                    path,
                    start,
                    progress: Some(files.progress(stream)),
                    owner,
                    interval: crate::output::TAIL_INTERVAL,
                };
                tails.spawn(tail.follow(uploader.clone(), stopped).in_current_span());
            }
        }

        let (status, timed_out, cancelled, node_failure) = self
            .wait(&mut waiter, group, &record, &files, adopted)
            .await;
        let ended_at = Utc::now();
        // Nothing of the job outlives its batch shell.
        signal_group(group, Signal::SIGKILL);

        for stop in stops {
            let _ = stop.send(());
        }
        while tails.join_next().await.is_some() {}

        let mut exited = report(assignment, ReportKind::Exited);
        exited.at = ended_at;
        exited.timed_out = timed_out;
        exited.cancelled = cancelled;
        exited.node_failed = node_failure;
        if let Some(group) = record.cgroup.clone() {
            exited.out_of_memory = group.oom_killed();
            let usage = group.usage();
            exited.cpu_time_seconds = usage.cpu_seconds;
            exited.max_rss_mib = usage.memory_peak_mib;
            tokio::spawn(async move { group.remove_when_empty().await });
        }
        match status {
            Ok(status) => {
                exited.exit_code = status.exit_code;
                exited.signal = status.signal;
                if status.fenced {
                    // Its shepherd stopped it: the node's lease ran out.
                    exited.node_failed = true;
                    exited.cancelled = false;
                    exited.message = Some(
                        "stopped on its node, which had no contact with the api for its whole lease"
                            .to_string(),
                    );
                }
            }
            Err(message) => {
                tracing::error!(error = %message, "no exit status for the batch shell");
                exited.message = Some(message);
            }
        }
        tracing::info!(
            exit_code = exited.exit_code,
            signal = exited.signal,
            timed_out,
            cancelled,
            out_of_memory = exited.out_of_memory,
            node_failed = exited.node_failed,
            "job exited"
        );
        if let Err(err) = crate::run_dir::write_private(&files.reported, b"") {
            tracing::debug!(error = %err, "could not mark the run reported");
        }
        self.send(exited);
    }

    /// Waits for the batch shell, enforcing the time limit (counted from the launch, and
    /// moved when the api changes it), its `--signal=B:` warning and cancellation.
    /// Returns how it ended and whether the time limit, a cancellation or the node
    /// (stopping with its worker) ended it. An adopted run that was already being stopped
    /// (its `ending` file) is stopped again.
    pub(crate) async fn wait(
        &mut self,
        waiter: &mut Waiter,
        group: Pid,
        record: &RunRecord,
        files: &RunFiles,
        adopted: bool,
    ) -> (Result<ShepherdStatus, String>, bool, bool, bool) {
        let assignment = &record.assignment;
        let started = tokio::time::Instant::now();
        let at_wall = |offset: u64| {
            let when = record.launched_at + chrono::Duration::seconds(offset as i64);
            let now = tokio::time::Instant::now();
            now + (when - Utc::now()).to_std().unwrap_or(Duration::ZERO)
        };
        let batch_warning = assignment.warning_signal.filter(|w| w.batch_only);
        let prior = if adopted {
            std::fs::read_to_string(&files.ending).ok()
        } else {
            None
        };
        let mut warned = false;
        let ending = match prior.as_deref().map(str::trim) {
            Some("time_limit") => Ending::TimeLimit,
            Some("preempted") => Ending::Stopped(Stop {
                preempted: true,
                ..Stop::default()
            }),
            Some("node_failure") => Ending::Stopped(Stop {
                node_failure: true,
                ..Stop::default()
            }),
            Some("reclaimed") => Ending::Stopped(Stop {
                reclaimed: true,
                ..Stop::default()
            }),
            Some(_) => Ending::Stopped(Stop::default()),
            None => loop {
                let time_limit = *self.time_limit.borrow_and_update();
                let deadline = time_limit.map(at_wall);
                let warning = batch_warning.and_then(|w| {
                    let limit = time_limit?;
                    let at = at_wall(limit - w.seconds.min(limit));
                    // A restarted worker does not repeat a warning already due.
                    (!adopted || at > started).then_some((w, at))
                });
                let at_limit = async {
                    match deadline {
                        Some(deadline) => tokio::time::sleep_until(deadline).await,
                        None => std::future::pending().await,
                    }
                };
                let at_warning = async {
                    match warning {
                        Some((_, at)) if !warned => tokio::time::sleep_until(at).await,
                        _ => std::future::pending().await,
                    }
                };
                let stop_rx = &mut self.stop;
                let stopped = async {
                    let stop = stop_rx.wait_for(Option::is_some).await.map(|stop| *stop);
                    match stop {
                        Ok(stop) => stop,
                        // The handle is gone (the worker is shutting down): no more stops.
                        Err(_) => std::future::pending().await,
                    }
                };
                let limit_rx = &mut self.time_limit;
                let limit_moved = async {
                    if limit_rx.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    status = waiter.wait() => break Ending::Exited(status),
                    _ = at_limit => break Ending::TimeLimit,
                    stop = stopped => break Ending::Stopped(stop.unwrap_or_default()),
                    _ = limit_moved => {
                        let limit = *self.time_limit.borrow();
                        tracing::info!(time_limit = ?limit, "the job's time limit changed");
                        // A limit raised past a warning already sent warns again.
                        if let (Some(w), Some(limit)) = (batch_warning, limit) {
                            if at_wall(limit - w.seconds.min(limit)) > tokio::time::Instant::now() {
                                warned = false;
                            }
                        }
                    }
                    _ = at_warning => {
                        warned = true;
                        if let Some((w, _)) = warning {
                            tracing::info!(signal = w.signal, seconds = w.seconds, "sending the time-limit warning to the batch shell");
                            write_signal_reason(&self.settings, assignment.job_id, assignment.run, StopReason::TimeLimit);
                            send_signal(group, None, w.signal, false);
                        }
                    }
                    Some(sent) = self.signals.recv() => {
                        tracing::info!(signal = sent.signal, whole_group = sent.whole_group, "signalling the batch shell (scancel)");
                        send_signal(group, Some(record.pid_start), sent.signal, sent.whole_group);
                    }
                }
            },
        };
        let reclaim_grace = match &ending {
            Ending::Stopped(stop) if stop.reclaimed => stop.grace,
            _ => None,
        };
        let (reason, kill_wait) = match ending {
            Ending::Exited(status) => return (status, false, false, false),
            Ending::TimeLimit => {
                let time_limit = *self.time_limit.borrow();
                tracing::info!(?time_limit, "job reached its time limit");
                (StopReason::TimeLimit, self.settings.kill_wait)
            }
            Ending::Stopped(stop) => {
                let kill_wait = stop.grace.unwrap_or(self.settings.kill_wait);
                if stop.node_failure {
                    tracing::info!("the node stops the job");
                    (StopReason::NodeFailure, kill_wait)
                } else if stop.reclaimed {
                    tracing::info!(
                        grace_seconds = stop.grace.map(|g| g.as_secs()),
                        "the node's instance is being reclaimed; stopping the job"
                    );
                    (StopReason::Reclaimed, kill_wait)
                } else if stop.preempted {
                    tracing::info!(grace_seconds = kill_wait.as_secs(), "job preempted");
                    (StopReason::Preempted, kill_wait)
                } else {
                    tracing::info!("job cancelled");
                    (StopReason::Cancelled, kill_wait)
                }
            }
        };
        let timed_out = reason == StopReason::TimeLimit;
        if let Err(err) = crate::run_dir::write_private(&files.ending, reason.as_str().as_bytes()) {
            tracing::debug!(error = %err, "could not record the ending");
        }
        if let (true, Some(notices)) = (timed_out, &self.time_limits) {
            // The api records the TIMEOUT decision before the first signal.
            let (ack, acked) = oneshot::channel();
            if notices
                .send(((assignment.job_id, assignment.run), ack))
                .is_ok()
                && tokio::time::timeout(TIME_LIMIT_RECORD_WAIT, acked)
                    .await
                    .is_err()
            {
                tracing::warn!("the api did not confirm the time limit in time; signalling anyway");
            }
        }
        write_signal_reason(&self.settings, assignment.job_id, assignment.run, reason);
        let status = if reason == StopReason::Reclaimed {
            reclaim(
                waiter,
                group,
                assignment.warning_signal,
                reclaim_grace,
                self.settings.kill_wait,
            )
            .await
        } else {
            terminate(waiter, group, kill_wait).await
        };
        let node_failure = reason == StopReason::NodeFailure;
        (status, timed_out, !timed_out && !node_failure, node_failure)
    }

    pub(crate) fn launch_failed(&self, assignment: &Assignment, err: &WorkerError) {
        let message = err.chain();
        tracing::warn!(error = %message, "job launch failed");
        let mut failed = report(assignment, ReportKind::LaunchFailed);
        failed.message = Some(message);
        failed.launch_fault = Some(err.launch_fault());
        self.send(failed);
        // A restarted worker must not find this run again (its report is journaled).
        let files = RunFiles::new(&run_dir(&self.settings, assignment.job_id, assignment.run));
        if files.record.exists() {
            let _ = crate::run_dir::write_private(&files.reported, b"");
        }
    }

    pub(crate) fn send(&self, report: JobReport) {
        if self.reports.send(report).is_err() {
            tracing::debug!("report dropped: the worker is shutting down");
        }
    }
}

pub(crate) fn report(assignment: &Assignment, kind: ReportKind) -> JobReport {
    JobReport {
        job_id: assignment.job_id,
        run: assignment.run,
        kind,
        at: Utc::now(),
        exit_code: None,
        signal: None,
        timed_out: false,
        cancelled: false,
        out_of_memory: false,
        cpu_time_seconds: None,
        max_rss_mib: None,
        message: None,
        seq: None,
        pid: None,
        launch_fault: None,
        grant: assignment.grant.clone(),
        node_failed: false,
        incarnation: assignment.incarnation,
    }
}

/// Makes the run's directories, writes the script, names the working directory and the
/// output files, and writes the shepherd's spec: everything of the job goes to the spec,
/// nothing to a root process's command line or environment.
pub(crate) fn prepare(
    settings: &LaunchSettings,
    assignment: &Assignment,
) -> Result<Prepared, WorkerError> {
    let user = job_user(settings, &assignment.user)?;
    let (job_id, run) = (assignment.job_id, assignment.run);
    let job_dir = run_dir(settings, job_id, run);
    crate::run_dir::ensure_dir(&job_dir, crate::run_dir::RUN_DIR_MODE)?;
    let files = RunFiles::new(&job_dir);
    files.clear();

    // The job user's own directory of the run: the script, the scratch directory and the
    // signal reason file.
    let own = crate::run_dir::user_dir(settings, job_id, run, user.as_ref())?;
    let script = own.join("script.sh");
    crate::run_dir::replace_file_in(&own, "script.sh", assignment.script.as_bytes(), 0o700)
        .map_err(|source| WorkerError::Io {
            action: "write the batch script",
            path: script.clone(),
            source,
        })?;
    let (work_dir, make_work_dir) = match &assignment.work_dir {
        Some(dir) => (PathBuf::from(dir), false),
        None => (own.join("work"), true),
    };

    let values = PatternValues {
        job_id,
        job_name: &assignment.name,
        array_job_id: assignment.array_job_id,
        array_task_id: assignment.array_task_id,
        user: &assignment.user,
        node_name: &settings.node_name,
        node_index: assignment.node_index,
        task_id: 0,
    };
    let resolve = |pattern: &str| {
        let path = PathBuf::from(pattern::expand(pattern, &values));
        if path.is_absolute() {
            path
        } else {
            work_dir.join(path)
        }
    };
    let stdout_path = resolve(&assignment.stdout);
    let mut outputs = vec![OutputSpec {
        stream: OutputStream::Stdout,
        path: stdout_path.clone(),
        open_mode: assignment.open_mode,
        private: false,
    }];
    if let Some(path) = assignment.stderr.as_deref().map(resolve) {
        if path != stdout_path {
            outputs.push(OutputSpec {
                stream: OutputStream::Stderr,
                path,
                open_mode: assignment.open_mode,
                private: false,
            });
        }
    }

    let mut environment = job_environment(
        settings,
        assignment,
        &work_dir,
        inherited_environment(settings, user.as_ref()),
    );
    let checkpoints = checkpoint_dir(settings, job_id, user.as_ref())?;
    environment.insert(
        "BERTH_CHECKPOINT_DIR".to_string(),
        checkpoints.display().to_string(),
    );
    put_commands_on_path(settings, &mut environment)?;
    let limits = crate::cgroup::Limits {
        memory_mib: assignment.memory_limit_mib,
        cpus: assignment.cpu_limit,
        cpu_ids: settings
            .cpus
            .real_cpus(&assignment.cpu_ids, assignment.threads_per_core),
    };
    let cgroup = job_cgroup(settings, job_id, run, &limits, &assignment.gpus);
    // Without a cpuset the exec stage pins the job to its CPUs (sched_setaffinity).
    let cpu_affinity = match &cgroup {
        Some(group) if group.cpuset => Vec::new(),
        _ => limits.cpu_ids.clone(),
    };
    // The batch shell learns its own pid (SLURM_TASK_PID) and then becomes
    // `bash script.sh ARGS…` in the same process. The script's arguments (`sbatch job.sh a
    // b`) are argv words after the script's path ("$0"), passed on as "$@": never part of
    // the shell text.
    let bash = if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/usr/bin/bash"
    };
    let spec = ShepherdSpec {
        user: user.as_ref().map(|user| user.name.clone()),
        umask: job_umask(&assignment.environment),
        work_dir,
        make_work_dir,
        argv: [
            bash.to_string(),
            "-c".to_string(),
            "export SLURM_TASK_PID=$$; exec bash \"$0\" \"$@\"".to_string(),
            script.display().to_string(),
        ]
        .into_iter()
        .chain(assignment.script_args.iter().cloned())
        .collect(),
        environment,
        outputs,
        cgroups: cgroup.iter().flat_map(|group| group.dirs.clone()).collect(),
        cpu_affinity,
        pid_file: files.pid.clone(),
        status_file: files.status.clone(),
        outputs_file: files.outputs.clone(),
        lease: settings.lease.clone(),
        reason_dir: Some(own.clone()),
        pty: None,
    };
    let start = start_command(settings.client_exe.as_deref(), &files, &spec)?;
    Ok(Prepared {
        start,
        script,
        files,
        cgroup,
        user,
    })
}
