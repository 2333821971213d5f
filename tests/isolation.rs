//! Isolation: a worker running as root runs jobs (batch shell and step tasks) as their
//! submitting user, and fails a job whose user has no account on the node, naming it, or
//! who is root there (unless the worker allows root jobs).

use crate::cluster::{Options, TestCluster, SECRET};
use berth_core::auth::Role;
use berth_core::state::JobState;

async fn submit_as(c: &TestCluster, user: &str, script: &str) -> i64 {
    c.submit_as(user, script, &[], &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_run_as_their_user_and_unknown_users_fail_clearly() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: switching users needs a worker running as root");
        return;
    }
    let nobody = nix::unistd::User::from_name("nobody").unwrap().unwrap();
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            ..Default::default()
        },
        &["--run-as", "submitter"],
    )
    .await;
    // The submit directory must be reachable by the job's user.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let id = submit_as(
        &c,
        "nobody",
        "#!/bin/bash\n#SBATCH -t 5 -o /tmp/berth-isolation-%j.out\n\
         echo batch uid=$(id -u) gid=$(id -g)\n\
         touch $BERTH_CHECKPOINT_DIR/mine && echo ckpt=writable\n\
         srun bash -c 'echo task uid=$(id -u)'\n",
    )
    .await;
    let job = c.wait_ended(id, 60).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert!(
        out.contains(&format!("batch uid={} gid={}", nobody.uid, nobody.gid)),
        "{out}"
    );
    assert!(out.contains("ckpt=writable"), "{out}");
    assert!(out.contains(&format!("task uid={}", nobody.uid)), "{out}");
    let _ = std::fs::remove_file(format!("/tmp/berth-isolation-{id}.out"));

    let ghost = submit_as(&c, "ghost-user-4", "#!/bin/bash\ntrue\n").await;
    let job = c.wait_ended(ghost, 60).await;
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.reason.as_deref(), Some("JobLaunchFailure"));
    let reason = job.state_description.unwrap_or_default();
    assert!(
        reason.contains("user ghost-user-4 does not exist on node node-1"),
        "{reason}"
    );

    // Root's jobs do not run as root unless the node's administrator allows it.
    let rooted = submit_as(&c, "root", "#!/bin/bash\nid -u\n").await;
    let job = c.wait_ended(rooted, 60).await;
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.reason.as_deref(), Some("JobLaunchFailure"));
    let reason = job.state_description.unwrap_or_default();
    assert!(
        reason.contains("user root is root on node node-1"),
        "{reason}"
    );
    assert!(c.output(rooted).await.is_empty());

    // A job names only output files its user may write: a root-owned file is neither
    // truncated nor handed over, and nothing is made where the user may not write.
    let victim = c.dir.join("root-owned.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let forbidden_dir = c.dir.join("root-only");
    std::fs::create_dir_all(&forbidden_dir).unwrap();
    std::fs::set_permissions(&forbidden_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for output in [
        victim.display().to_string(),
        forbidden_dir.join("new.out").display().to_string(),
    ] {
        let id = submit_as(
            &c,
            "nobody",
            &format!("#!/bin/bash\n#SBATCH -o {output}\necho overwritten\n"),
        )
        .await;
        let job = c.wait_ended(id, 60).await;
        assert_eq!(job.state, JobState::Failed, "{job:?}");
        let reason = job.state_description.unwrap_or_default();
        assert!(reason.contains("nobody may not write it"), "{reason}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&victim).unwrap().uid(), 0, "still root's");
    assert!(!forbidden_dir.join("new.out").exists());
    // Those were the jobs' faults, not the node's: it stays in service, undrained.
    let node: berth_core::wire::Node = c.get("/v1/nodes/node-1").await;
    assert!(
        node.reason.is_none()
            && !matches!(
                node.state,
                berth_core::state::NodeState::Draining | berth_core::state::NodeState::Drained
            ),
        "{node:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_cpu_limits_come_from_cgroups_and_an_oom_kill_ends_out_of_memory() {
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
    // The batch shell starts inside its job's group, with the job's CPU quota.
    let id = c
        .submit(
            "#!/bin/bash\n#SBATCH -c 2 --mem=256M -t 5\n\
             grep -c 'berth/.*job_' /proc/self/cgroup | sed 's/^/in_job_groups=/'\n\
             srun bash -c \"grep -c 'berth/.*job_' /proc/self/cgroup | sed 's/^/task_in_job_groups=/'\"\n",
            &[],
        )
        .await;
    let job = c.wait_ended(id, 60).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    for key in ["in_job_groups", "task_in_job_groups"] {
        let groups: u32 = out
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key} in {out}"))
            .parse()
            .unwrap();
        assert!(groups >= 1, "{out}");
    }

    // Past its memory limit the kernel kills it: OUT_OF_MEMORY, not FAILED.
    let id = c
        .submit(
            "#!/bin/bash\n#SBATCH --mem=64M -t 5\n\
             python3 -c 'x = bytearray(512 * 1024 * 1024); print(len(x))'\n",
            &[],
        )
        .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(
        job.state,
        JobState::OutOfMemory,
        "{job:?}\n{}",
        c.output(id).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cannot_open_gpu_devices_it_does_not_hold() {
    use berth_worker::cgroup::DeviceControl;
    let hierarchy = berth_worker::cgroup::detect(std::path::Path::new("/sys/fs/cgroup"));
    let control = hierarchy.as_ref().map(|h| h.device_control());
    if !nix::unistd::geteuid().is_root() || control != Some(DeviceControl::V1Devices) {
        eprintln!(
            "SKIPPED a_job_cannot_open_gpu_devices_it_does_not_hold: needs root and the cgroup v1 \
             devices hierarchy (found {control:?}); device isolation is not enforced here"
        );
        return;
    }
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    // Device nodes like the driver's /dev/nvidia0..7 (major 195, minor = GPU index). No
    // driver answers behind them: opening one's own GPU fails "No such device or
    // address" (ENXIO), while the device cgroup refuses another GPU first (EPERM).
    let dev = c.dir.join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    for minor in 0..8 {
        let node = dev.join(format!("nvidia{minor}"));
        let made = std::process::Command::new("mknod")
            .arg(&node)
            .args(["c", "195", &minor.to_string()])
            .status()
            .unwrap();
        assert!(made.success(), "mknod {}", node.display());
    }
    let dev = dev.display();
    let id = c
        .submit(
            &format!(
                "#!/bin/bash\n\
                 own=$SLURM_JOB_GPUS; other=$(( (own + 1) % 8 ))\n\
                 echo gpus=$own\n\
                 (: < {dev}/nvidia$own) 2>&1 | sed 's/^/own: /'\n\
                 (: < {dev}/nvidia$other) 2>&1 | sed 's/^/other: /'\n\
                 srun bash -c \"(: < {dev}/nvidia$other) 2>&1 | sed 's/^/step other: /'\"\n\
                 srun bash -c \"(: < {dev}/nvidia$own) 2>&1 | sed 's/^/step own: /'\"\n\
                 true\n"
            ),
            &["--gres=gpu:1", "-t", "5"],
        )
        .await;
    let job = c.wait_ended(id, 60).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    let line = |prefix: &str| {
        out.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line in\n{out}"))
            .to_string()
    };
    assert!(line("other: ").contains("Operation not permitted"), "{out}");
    assert!(
        line("step other: ").contains("Operation not permitted"),
        "{out}"
    );
    assert!(line("own: ").contains("No such device or address"), "{out}");
    assert!(
        line("step own: ").contains("No such device or address"),
        "{out}"
    );
}

/// Output files: made by the job's user with the submitter's umask (Slurm's `SLURM_UMASK`,
/// which `sbatch`/`berth submit` send; 0077 for a REST submission without one), and a
/// character device such as `/dev/null` is a valid output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_files_follow_the_submitters_umask_and_may_be_dev_null() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: switching users needs a worker running as root");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    crate::attacks::unix_user("bxw-carol");
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            ..Default::default()
        },
        &["--run-as", "submitter"],
    )
    .await;
    std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = c.dir.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let s = shared.display();
    let mode = |path: std::path::PathBuf| {
        std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };

    let token = berth_api::mint_token(SECRET, "bxw-carol", Role::User, 600);
    let private = c
        .submit_as(
            "bxw-carol",
            &format!("#!/bin/bash\n#SBATCH -o {s}/private-%j.out\necho hi\n"),
            &[],
            &[],
        )
        .await;
    let group = c
        .submit_as(
            "bxw-carol",
            &format!("#!/bin/bash\n#SBATCH -o {s}/group-%j.out\necho hi\n"),
            &[],
            &[("SLURM_UMASK", "0027")],
        )
        .await;
    let null = c
        .submit_as(
            "bxw-carol",
            &format!(
                "#!/bin/bash\n#SBATCH -o /dev/null -e {s}/null-%j.err\necho to-null\necho to-err >&2\n"
            ),
            &[],
            &[],
        )
        .await;
    for id in [private, group, null] {
        let job = c.wait_ended(id, 60).await;
        assert_eq!(job.state, JobState::Completed, "{job:?}");
    }
    assert_eq!(mode(shared.join(format!("private-{private}.out"))), 0o600);
    assert_eq!(mode(shared.join(format!("group-{group}.out"))), 0o640);
    assert_eq!(
        std::fs::read_to_string(shared.join(format!("null-{null}.err"))).unwrap(),
        "to-err\n"
    );
    assert!(!c.output(null).await.contains("to-null"));

    // `berth submit` sends the submitter's umask.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 0002; exec {} submit --parsable -o {s}/cli-%j.out --wrap 'echo hi'",
            crate::cluster::berth_bin()
        ))
        .current_dir(&c.dir)
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &token)
        .env("HOME", &c.dir)
        .env("XDG_CONFIG_HOME", c.dir.join("config"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let id: i64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert_eq!(mode(shared.join(format!("cli-{id}.out"))), 0o664);
}

/// A memory limit too small for the job (`--mem=1M`) is the job's business: whether its
/// process is killed in the job's cgroup before it runs anything (FAILED, naming the
/// memory limit), once it runs (OUT_OF_MEMORY), or the little script fits (COMPLETED),
/// the job ends without a requeue and the node is neither drained nor blamed. (A user
/// could otherwise take every node out of service by submitting `--mem=1M` jobs; the
/// shepherd that reports a launch never enters the job's groups, so the OOM killer
/// cannot pick it instead of the job.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_limit_too_small_fails_the_job_never_the_node() {
    let hierarchy = berth_worker::cgroup::detect(std::path::Path::new("/sys/fs/cgroup"));
    if !nix::unistd::geteuid().is_root() || hierarchy.is_none() {
        eprintln!("skipped: needs root and cgroups (v2, or v1 memory/cpu)");
        return;
    }
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            ..Default::default()
        },
        &["--run-as", "submitter"],
    )
    .await;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(
            submit_as(
                &c,
                "nobody",
                "#!/bin/bash\n#SBATCH --mem=1M -t 5 -o /dev/null\necho started\n",
            )
            .await,
        );
    }
    for id in ids {
        let job = c.wait_ended(id, 90).await;
        assert!(
            matches!(
                job.state,
                JobState::Failed | JobState::OutOfMemory | JobState::Completed
            ),
            "{job:?}"
        );
        assert_eq!(job.restart_count, 0, "not requeued: {job:?}");
        if job.state == JobState::Failed {
            let reason = job.state_description.unwrap_or_default();
            assert!(reason.contains("memory limit"), "{reason}");
        }
    }
    let node: berth_core::wire::Node = c.get("/v1/nodes/node-1").await;
    assert!(
        node.reason.is_none()
            && !matches!(
                node.state,
                berth_core::state::NodeState::Draining | berth_core::state::NodeState::Drained
            ),
        "{node:?}"
    );
}
