use super::*;
use berth_core::spec::OpenMode;
use std::os::unix::fs::PermissionsExt;
use std::time::Instant;

/// A fresh directory under the system temp dir for one test.
fn test_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("berth-worker-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn settings(dir: &Path) -> LaunchSettings {
    LaunchSettings {
        node_name: "node-2".to_string(),
        api_url: "http://127.0.0.1:9".to_string(),
        state_dir: dir.join("state"),
        kill_wait: Duration::from_secs(1),
        token: Some("node-secret".to_string()),
        client_exe: None,
        checkpoint_root: dir.join("checkpoints"),
        run_as_user: false,
        allow_root_jobs: false,
        cgroups: None,
        cpus: Default::default(),
        gpu_minors: Vec::new(),
        devices: Vec::new(),
        lease: None,
    }
}

fn assignment(job_id: i64, script: &str, work_dir: &Path) -> Assignment {
    Assignment {
        job_id,
        run: 0,
        name: "test-job".to_string(),
        user: "alice".to_string(),
        account: Some("research".to_string()),
        partition: "gpu".to_string(),
        script: script.to_string(),
        script_args: Vec::new(),
        submit_dir: Some("/home/alice".to_string()),
        work_dir: Some(work_dir.display().to_string()),
        stdout: "slurm-%j.out".to_string(),
        stderr: None,
        open_mode: OpenMode::Truncate,
        time_limit: None,
        gpus: vec![],
        node_index: 0,
        nodes: vec!["node-2".to_string()],
        ntasks: 1,
        cpus_per_task: None,
        ntasks_per_node: None,
        environment: BTreeMap::new(),
        array_job_id: None,
        array_task_id: None,
        array_task_count: None,
        slurm_variables: Default::default(),
        gpus_per_task: None,
        memory_limit_mib: None,
        cpu_limit: None,
        cpu_ids: Vec::new(),
        threads_per_core: None,
        warning_signal: None,
        job_token: Some("job-token".to_string()),
        grant: None,
        incarnation: None,
    }
}

/// Launches `assignment` and collects its reports until the last one.
async fn run_to_end(
    settings: LaunchSettings,
    assignment: Assignment,
    during: impl FnOnce(&JobHandle),
) -> Vec<JobReport> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let launcher = Launcher::new(settings, None, tx);
    let handle = launcher.launch(assignment);
    let mut reports = Vec::new();
    let mut during = Some(during);
    while let Some(report) = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .unwrap()
    {
        let last = report.kind != ReportKind::Started;
        if report.kind == ReportKind::Started {
            if let Some(during) = during.take() {
                during(&handle);
            }
        }
        reports.push(report);
        if last {
            break;
        }
    }
    reports
}

fn read_env(file: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie waiting for its reaper is dead too.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

async fn wait_gone(pid: i32) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn runs_a_script_with_slurm_environment() {
    let dir = test_dir("env");
    let mut job = assignment(
        42,
        "#!/bin/bash\necho \"pid=$$\"\nenv\necho 'to stderr' >&2\n",
        &dir,
    );
    job.gpus = vec![1, 3];
    job.nodes = vec!["node-1".into(), "node-2".into(), "node-3".into()];
    job.node_index = 1;
    job.stdout = "logs/%x-%j.out".to_string();
    job.environment
        .insert("FROM_SUBMIT".to_string(), "yes".to_string());
    let reports = run_to_end(settings(&dir), job, |_| {}).await;

    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0].kind, ReportKind::Started);
    assert_eq!(reports[1].kind, ReportKind::Exited);
    assert_eq!(reports[1].exit_code, Some(0));
    assert!(!reports[1].timed_out && !reports[1].cancelled);

    let out = dir.join("logs/test-job-42.out");
    let env = read_env(&out);
    assert_eq!(env["SLURM_JOB_ID"], "42");
    assert_eq!(env["SLURM_JOB_NODELIST"], "node-[1-3]");
    assert_eq!(env["SLURM_NNODES"], "3");
    assert_eq!(env["SLURM_NODEID"], "1");
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "1,3");
    assert_eq!(env["SLURM_JOB_GPUS"], "1,3");
    assert_eq!(env["SLURM_GPUS_ON_NODE"], "2");
    assert_eq!(env["SLURM_JOB_ACCOUNT"], "research");
    assert_eq!(env["SLURMD_NODENAME"], "node-2");
    assert_eq!(env["SLURM_SUBMIT_DIR"], "/home/alice");
    assert_eq!(env["BERTH_JOB_ID"], "42");
    assert_eq!(env["FROM_SUBMIT"], "yes");
    assert_eq!(env["PWD"], dir.display().to_string());
    assert_eq!(env["SLURM_TASK_PID"], env["pid"]);
    assert!(!env.contains_key("SLURM_ARRAY_TASK_ID"));
    // stderr shares the stdout file when --error is not given.
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("to stderr"));

    let script = dir.join("state/spool/42.0/script.sh");
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[tokio::test]
async fn separate_stderr_append_and_scratch_dir() {
    let dir = test_dir("streams");
    let mut job = assignment(7, "echo out\necho err >&2\nexit 3\n", &dir);
    job.work_dir = None;
    job.stdout = format!("{}/o-%j.txt", dir.display());
    job.stderr = Some(format!("{}/e-%j.txt", dir.display()));
    job.open_mode = OpenMode::Append;
    std::fs::write(dir.join("o-7.txt"), "earlier\n").unwrap();
    let reports = run_to_end(settings(&dir), job, |_| {}).await;

    assert_eq!(reports[1].exit_code, Some(3));
    assert_eq!(
        std::fs::read_to_string(dir.join("o-7.txt")).unwrap(),
        "earlier\nout\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("e-7.txt")).unwrap(),
        "err\n"
    );
    assert!(dir.join("state/spool/7.0/work").is_dir());
}

#[tokio::test]
async fn missing_work_dir_fails_the_launch() {
    let dir = test_dir("nowork");
    let job = assignment(8, "true\n", &dir.join("does/not/exist"));
    let reports = run_to_end(settings(&dir), job, |_| {}).await;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].kind, ReportKind::LaunchFailed);
    let message = reports[0].message.as_deref().unwrap();
    assert!(message.contains("does/not/exist"), "{message}");
}

#[tokio::test]
async fn time_limit_terminates_the_job() {
    let dir = test_dir("timelimit");
    let mut job = assignment(
        9,
        "trap 'echo got TERM; exit 3' TERM\nwhile true; do sleep 0.1; done\n",
        &dir,
    );
    job.time_limit = Some(1);
    let started = Instant::now();
    let reports = run_to_end(settings(&dir), job, |_| {}).await;
    let exited = &reports[1];
    assert!(exited.timed_out);
    assert!(!exited.cancelled);
    assert_eq!(exited.exit_code, Some(3));
    assert!(started.elapsed() < Duration::from_secs(5));
    let text = std::fs::read_to_string(dir.join("slurm-9.out")).unwrap();
    assert!(text.contains("got TERM"), "{text}");
}

#[tokio::test]
async fn time_limit_kills_a_job_that_ignores_term() {
    let dir = test_dir("ignoreterm");
    let mut job = assignment(10, "trap '' TERM\nsleep 60\n", &dir);
    job.time_limit = Some(1);
    let started = Instant::now();
    let reports = run_to_end(settings(&dir), job, |_| {}).await;
    let exited = &reports[1];
    assert!(exited.timed_out);
    assert_eq!(exited.signal, Some(9));
    assert_eq!(exited.exit_code, None);
    // 1 s limit + 1 s kill wait.
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert!(started.elapsed() < Duration::from_secs(6));
}

#[tokio::test]
async fn a_lowered_time_limit_moves_the_deadline() {
    let dir = test_dir("movelimit");
    let mut job = assignment(31, "sleep 60\n", &dir);
    job.time_limit = Some(600);
    let started = Instant::now();
    let reports = run_to_end(settings(&dir), job, |handle| {
        assert_eq!(handle.time_limit(), Some(600));
        assert!(handle.set_time_limit(Some(1)));
        assert!(
            !handle.set_time_limit(Some(1)),
            "the same limit is no change"
        );
    })
    .await;
    let exited = &reports[1];
    assert!(exited.timed_out);
    assert!(!exited.cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    let reason = std::fs::read_to_string(signal_reason_file(&settings(&dir), 31, 0)).unwrap();
    assert_eq!(reason, "time_limit\n");
}

#[tokio::test]
async fn a_preempted_job_gets_its_grace_not_the_kill_wait() {
    let dir = test_dir("grace");
    let ready = dir.join("ready");
    // The TERM handler needs 3 s; the kill wait is 1 s, the grace 10 s.
    let script = format!(
        "trap 'echo reason=$(cat $BERTH_SIGNAL_REASON_FILE); sleep 3; echo cleaned; exit 0' TERM\n\
         touch {}\nsleep 60 & wait\n",
        ready.display()
    );
    let job = assignment(32, &script, &dir);
    let reports = run_to_end(settings(&dir), job, |handle| {
        let until = Instant::now() + Duration::from_secs(10);
        while !ready.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        handle.stop(Stop {
            preempted: true,
            grace: Some(Duration::from_secs(10)),
            ..Stop::default()
        });
        // Only the first request counts.
        handle.cancel();
    })
    .await;
    let exited = &reports[1];
    assert!(exited.cancelled);
    assert!(!exited.timed_out);
    assert_eq!((exited.exit_code, exited.signal), (Some(0), None));
    let text = std::fs::read_to_string(dir.join("slurm-32.out")).unwrap();
    assert_eq!(text, "reason=preempted\ncleaned\n");
    let ending = std::fs::read_to_string(run_dir(&settings(&dir), 32, 0).join("ending"));
    assert_eq!(ending.unwrap(), "preempted");
}

/// `scancel -b` reaches the batch shell alone, `scancel -f` its whole process group
/// (what it started too), and the job goes on to end as its script says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_signal_reaches_the_shell_alone_or_its_whole_group() {
    let dir = test_dir("batch-signal");
    let ready = dir.join("ready");
    let out = dir.join("slurm-35.out");
    let script = format!(
        "trap 'echo shell got USR1' USR1\n\
         bash -c 'trap \"echo child got USR1; exit 0\" USR1; while :; do sleep 0.05; done' &\n\
         child=$!\ntouch {}\n\
         while kill -0 $child 2>/dev/null; do wait $child; done\necho end\n",
        ready.display()
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    let launcher = Launcher::new(settings(&dir), None, tx);
    let handle = launcher.launch(assignment(35, &script, &dir));
    let lines = |line: &str| {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == line)
            .count()
    };
    let until = Instant::now() + Duration::from_secs(10);
    while !ready.exists() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(handle.signal(BatchSignal {
        signal: 10,
        whole_group: false
    }));
    while lines("shell got USR1") == 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The child, still running, got nothing.
    assert_eq!(lines("child got USR1"), 0);
    assert!(handle.signal(BatchSignal {
        signal: 10,
        whole_group: true
    }));
    let exited = loop {
        let report = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .unwrap()
            .unwrap();
        if report.kind != ReportKind::Started {
            break report;
        }
    };
    assert_eq!(exited.kind, ReportKind::Exited);
    assert!(!exited.cancelled);
    assert_eq!((exited.exit_code, exited.signal), (Some(0), None));
    assert_eq!(
        (
            lines("shell got USR1"),
            lines("child got USR1"),
            lines("end")
        ),
        (2, 1, 1),
        "{}",
        std::fs::read_to_string(&out).unwrap_or_default()
    );
    // Once the run has ended, a signal has no one to go to.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while !handle.is_finished() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(!handle.signal(BatchSignal {
        signal: 10,
        whole_group: true
    }));
}

#[tokio::test]
async fn a_reclaimed_job_gets_its_warning_signal_and_the_reclaimed_reason() {
    let dir = test_dir("reclaim");
    let ready = dir.join("ready");
    let script = format!(
        "trap 'echo caught USR1 reason=$(cat $BERTH_SIGNAL_REASON_FILE); exit 0' USR1\n\
         touch {}\nsleep 60 & wait\n",
        ready.display()
    );
    let mut job = assignment(34, &script, &dir);
    job.warning_signal = berth_core::signal::parse_warning_signal("B:USR1@60");
    let started = Instant::now();
    let reports = run_to_end(settings(&dir), job, |handle| {
        let until = Instant::now() + Duration::from_secs(10);
        while !ready.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        handle.stop(Stop {
            reclaimed: true,
            grace: Some(Duration::from_secs(30)),
            ..Stop::default()
        });
    })
    .await;
    let exited = &reports[1];
    assert!(exited.cancelled);
    assert_eq!((exited.exit_code, exited.signal), (Some(0), None));
    assert!(started.elapsed() < Duration::from_secs(15));
    let text = std::fs::read_to_string(dir.join("slurm-34.out")).unwrap();
    assert_eq!(text, "caught USR1 reason=reclaimed\n");
    let ending = std::fs::read_to_string(run_dir(&settings(&dir), 34, 0).join("ending"));
    assert_eq!(ending.unwrap(), "reclaimed");
}

#[tokio::test]
async fn a_reclaimed_job_without_a_warning_gets_sigterm_within_its_grace() {
    let dir = test_dir("reclaim-term");
    let ready = dir.join("ready");
    let script = format!("trap '' TERM\ntouch {}\nsleep 60\n", ready.display());
    let job = assignment(35, &script, &dir);
    let mut slow = settings(&dir);
    slow.kill_wait = Duration::from_secs(30);
    let started = Instant::now();
    let reports = run_to_end(slow, job, |handle| {
        let until = Instant::now() + Duration::from_secs(10);
        while !ready.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        handle.stop(Stop {
            reclaimed: true,
            grace: Some(Duration::from_secs(2)),
            ..Stop::default()
        })
    })
    .await;
    // SIGTERM ignored: SIGKILL when the instance goes (2 s), not after the kill wait.
    assert_eq!(reports[1].signal, Some(9));
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn a_grace_of_zero_kills_right_after_the_term() {
    let dir = test_dir("nograce");
    let ready = dir.join("ready");
    let script = format!("trap '' TERM\ntouch {}\nsleep 60\n", ready.display());
    let job = assignment(33, &script, &dir);
    let mut slow = settings(&dir);
    slow.kill_wait = Duration::from_secs(30);
    let started = Instant::now();
    let reports = run_to_end(slow, job, |handle| {
        let until = Instant::now() + Duration::from_secs(10);
        while !ready.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        handle.stop(Stop {
            preempted: true,
            grace: Some(Duration::ZERO),
            ..Stop::default()
        })
    })
    .await;
    assert_eq!(reports[1].signal, Some(9));
    // Not after the 30 s kill wait.
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn cancellation_kills_the_whole_process_group() {
    let dir = test_dir("cancel");
    let pid_file = dir.join("child.pid");
    let script = format!(
        "sleep 300 &\necho $! > {}.tmp && mv {0}.tmp {0}\nwait\n",
        pid_file.display()
    );
    let job = assignment(11, &script, &dir);
    let reports = run_to_end(settings(&dir), job, |handle| {
        let until = Instant::now() + Duration::from_secs(10);
        while !pid_file.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        handle.cancel();
    })
    .await;
    let exited = &reports[1];
    assert!(exited.cancelled);
    assert!(!exited.timed_out);
    assert_eq!(exited.signal, Some(15));
    let child: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(child).await, "background sleep {child} survived");
}

#[tokio::test]
async fn no_process_outlives_the_batch_shell() {
    let dir = test_dir("leftover");
    let pid_file = dir.join("child.pid");
    let script = format!("sleep 300 &\necho $! > {}\nexit 0\n", pid_file.display());
    let reports = run_to_end(settings(&dir), assignment(12, &script, &dir), |_| {}).await;
    assert_eq!(reports[1].exit_code, Some(0));
    let child: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(child).await, "background sleep {child} survived");
}

#[test]
fn environment_hides_credentials_and_unallocated_gpus() {
    let dir = PathBuf::from("/tmp/work");
    let mut job = assignment(5, "true", &dir);
    job.array_job_id = Some(4);
    job.array_task_id = Some(1);
    job.array_task_count = Some(3);
    job.cpus_per_task = Some(8);
    let inherited = [
        ("BERTH_TOKEN", "abc"),
        ("OTHER_SECRET", "node-secret"),
        ("CUDA_VISIBLE_DEVICES", "0,1,2,3"),
        ("PATH", "/usr/bin:/bin"),
    ]
    .map(|(name, value)| (name.to_string(), value.to_string()));
    let env = job_environment(&settings(&dir), &job, &dir, inherited);
    assert_eq!(env["BERTH_TOKEN"], "job-token");
    assert!(!env.contains_key("OTHER_SECRET"));
    assert!(!env.contains_key("CUDA_VISIBLE_DEVICES"));
    assert!(!env.contains_key("GPU_DEVICE_ORDINAL"));
    assert_eq!(env["SLURM_GPUS_ON_NODE"], "0");
    assert_eq!(env["PATH"], "/usr/bin:/bin");
    assert_eq!(env["SLURM_ARRAY_JOB_ID"], "4");
    assert_eq!(env["SLURM_ARRAY_TASK_ID"], "1");
    assert_eq!(env["SLURM_ARRAY_TASK_COUNT"], "3");
    assert_eq!(env["SLURM_ARRAY_TASK_MAX"], "2");
    assert_eq!(env["SLURM_CPUS_PER_TASK"], "8");
    assert_eq!(env["SLURM_JOB_NODELIST"], "node-2");
    assert_eq!(env["SLURM_CLUSTER_NAME"], "berth");
}

#[test]
fn the_umask_is_the_submitters_else_private() {
    let env = |mask: &str| -> BTreeMap<String, String> {
        [("SLURM_UMASK".to_string(), mask.to_string())].into()
    };
    assert_eq!(job_umask(&env("0022")), 0o022);
    assert_eq!(job_umask(&env("027")), 0o027);
    assert_eq!(job_umask(&env("rw-")), DEFAULT_UMASK);
    assert_eq!(job_umask(&env("07777")), DEFAULT_UMASK);
    assert_eq!(job_umask(&BTreeMap::new()), 0o077);
}

#[test]
fn a_job_of_its_own_user_inherits_nothing_of_the_worker() {
    let dir = PathBuf::from("/tmp/work");
    let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .unwrap();
    let user = JobUser {
        name: me.name.clone(),
        uid: me.uid,
        gid: me.gid,
    };
    let inherited = inherited_environment(&settings(&dir), Some(&user));
    let names: Vec<&str> = inherited.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["USER", "LOGNAME", "HOME", "SHELL"]);
    let mut job = assignment(5, "true", &dir);
    job.environment
        .insert("HOME".to_string(), "/home/elsewhere".to_string());
    let env = job_environment(&settings(&dir), &job, &dir, inherited);
    assert_eq!(env["HOME"], "/home/elsewhere", "the submission's wins");
    assert_eq!(env["USER"], me.name);
    assert!(!env.contains_key("CARGO"), "nothing of the worker's own");
}

/// The devices of a simulated node of `spec`.
fn node_devices(spec: &str) -> Vec<GpuInfo> {
    use crate::gpu::GpuBackend;
    crate::gpu::SimulatedBackend::parse(spec, "node-2")
        .unwrap()
        .inventory()
}

#[test]
fn held_devices_name_gpus_mig_instances_and_shard_gpus() {
    // Whole GPUs: by index, in the order held, as before devices had kinds (also for
    // indices the node does not list).
    let whole = node_devices("4xH100");
    let held = HeldDevices::new(&whole, &[3, 1]);
    assert_eq!(held.visible, ["3", "1"]);
    assert_eq!(held.physical, [3, 1]);
    assert_eq!((held.gpus, held.shards), (2, 0));
    assert_eq!(
        HeldDevices::new(&[], &[1, 3]).visible_list().as_deref(),
        Some("1,3")
    );
    assert_eq!(HeldDevices::new(&whole, &[]), HeldDevices::default());
    assert_eq!(HeldDevices::new(&whole, &[]).visible_list(), None);

    // MIG instances: by UUID; their GPUs each once.
    let mig = node_devices("2xA100:mig=3g.40gb*2");
    let held = HeldDevices::new(&mig, &[0, 1, 2]);
    assert_eq!(
        held.visible,
        [
            mig[0].uuid.clone(),
            mig[1].uuid.clone(),
            mig[2].uuid.clone()
        ]
    );
    assert!(held.visible.iter().all(|v| v.starts_with("MIG-sim-")));
    assert_eq!(held.physical_list().as_deref(), Some("0,1"));
    assert_eq!((held.gpus, held.shards), (3, 0));

    // Shards: by their GPU's index, each GPU once.
    let shards = node_devices("4xH100:shards=4");
    let held = HeldDevices::new(&shards, &[4, 5, 6, 13]);
    assert_eq!(held.visible_list().as_deref(), Some("1,3"));
    assert_eq!(held.physical_list().as_deref(), Some("1,3"));
    assert_eq!((held.gpus, held.shards), (0, 4));
}

#[test]
fn environment_names_mig_instances_and_shard_gpus() {
    let dir = PathBuf::from("/tmp/work");
    let mut settings = settings(&dir);
    settings.devices = node_devices("2xA100:mig=3g.40gb*2");
    let mut job = assignment(6, "true", &dir);
    job.gpus = vec![2, 3];
    let inherited = [("SLURM_SHARDS_ON_NODE".to_string(), "9".to_string())];
    let env = job_environment(&settings, &job, &dir, inherited);
    let visible = format!("{},{}", settings.devices[2].uuid, settings.devices[3].uuid);
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], visible);
    assert_eq!(env["GPU_DEVICE_ORDINAL"], visible);
    assert_eq!(env["SLURM_JOB_GPUS"], "1");
    assert_eq!(env["SLURM_GPUS_ON_NODE"], "2");
    assert!(!env.contains_key("SLURM_SHARDS_ON_NODE"));

    settings.devices = node_devices("8xH100:shards=2/2");
    job.gpus = vec![6, 7, 8];
    let env = job_environment(&settings, &job, &dir, []);
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "3,4");
    assert_eq!(env["GPU_DEVICE_ORDINAL"], "3,4");
    assert_eq!(env["SLURM_JOB_GPUS"], "3,4");
    assert_eq!(env["SLURM_GPUS_ON_NODE"], "0");
    assert_eq!(env["SLURM_SHARDS_ON_NODE"], "3");

    // A whole-GPU node names its GPUs as it always did.
    settings.devices = node_devices("4xH100");
    job.gpus = vec![1, 3];
    let env = job_environment(&settings, &job, &dir, []);
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "1,3");
    assert_eq!(env["SLURM_JOB_GPUS"], "1,3");
    assert_eq!(env["SLURM_GPUS_ON_NODE"], "2");
    assert!(!env.contains_key("SLURM_SHARDS_ON_NODE"));
}
