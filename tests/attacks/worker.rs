//! The worker's room: what an ordinary user with a job on a shared node tries against the
//! worker running as root.
//!
//! * Loader variables (`LD_PRELOAD`, `LD_DEBUG_OUTPUT` …) in a job's environment, given
//!   through `POST /v1/jobs`, `#SBATCH --export` or `srun`'s environment, reach only the
//!   job's own processes (after the switch to its user), never a process running as root.
//!   `libpcprofile.so` (glibc's) makes this observable: preloaded, it creates or truncates
//!   the file named by `PCPROFILE_OUTPUT` with the privileges of the process it is loaded
//!   into, so a root process loading it overwrites a root-owned file.
//! * Another tenant's job records (the run directory, `run.json`, the job token, the
//!   script), output files and signal reason file are out of reach.
//! * An output file swapped for a symbolic link (to a root-only file) or a FIFO is neither
//!   shipped nor able to stall the worker; links planted where the worker makes a job's
//!   directories (a shared checkpoint root) or writes into them (the signal reason file)
//!   hand nobody a root-owned file.

use super::{can_switch_users, unix_user};
use crate::cluster::{Options, TestCluster, SECRET};
use berth_core::auth::Role;
use berth_core::state::JobState;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const ALICE: &str = "bxw-alice";
const BOB: &str = "bxw-bob";

/// A one-worker cluster running jobs as their submitting users, its directory open to
/// them (as a submit directory would be).
async fn cluster(extra: &[&str]) -> TestCluster {
    let mut args = vec!["--run-as", "submitter"];
    args.extend_from_slice(extra);
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            ..Default::default()
        },
        &args,
    )
    .await;
    std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    c
}

/// Submits `script` over REST as `user` with `environment` (besides the test's `PATH`).
async fn submit_as(
    c: &TestCluster,
    user: &str,
    script: &str,
    args: &[&str],
    environment: &[(&str, &str)],
) -> i64 {
    c.submit_as(user, script, args, environment).await
}

/// glibc's `libpcprofile.so`, where this machine has it.
fn pcprofile() -> Option<PathBuf> {
    [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/usr/lib",
    ]
    .iter()
    .map(|dir| Path::new(dir).join("libpcprofile.so"))
    .find(|path| path.exists())
}

/// A root-owned directory of mode `mode` under the cluster's directory.
fn root_dir(c: &TestCluster, name: &str, mode: u32) -> PathBuf {
    let dir = c.dir.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
    dir
}

/// A root-owned file holding `precious`, mode 0644.
fn precious(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, "precious\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path
}

/// Whether `path` still holds `precious` and belongs to root.
fn untouched(path: &Path) -> bool {
    let meta = std::fs::symlink_metadata(path).unwrap();
    meta.uid() == 0 && std::fs::read_to_string(path).unwrap_or_default() == "precious\n"
}

/// Runs `command` as `user` through `su`.
fn run_as(user: &str, command: &str) -> std::process::Output {
    std::process::Command::new("su")
        .args([user, "-s", "/bin/sh", "-c", command])
        .output()
        .unwrap()
}

/// The owners of the files in `dir` whose names start with `prefix`.
fn owners(dir: &Path, prefix: &str) -> Vec<(String, u32)> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().uid(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loader_variables_of_a_job_never_reach_a_root_process() {
    if !can_switch_users("loader_variables_of_a_job_never_reach_a_root_process") {
        return;
    }
    let Some(pcprofile) = pcprofile() else {
        eprintln!("loader_variables_of_a_job_never_reach_a_root_process: skipped: no libpcprofile.so (glibc) here");
        return;
    };
    let pcprofile = pcprofile.display().to_string();
    let alice = unix_user(ALICE);
    let c = cluster(&[]).await;
    let vault = root_dir(&c, "vault", 0o755);
    // Where alice may write: the loader's debug files there show which uid loaded them.
    let trail = c.dir.join("trail");
    std::fs::create_dir_all(&trail).unwrap();
    nix::unistd::chown(&trail, Some(alice.uid), Some(alice.gid)).unwrap();
    std::fs::set_permissions(&trail, std::fs::Permissions::from_mode(0o700)).unwrap();
    let t = trail.display();
    let mut breaches = Vec::new();

    // 1. The submission's environment (POST /v1/jobs).
    let rest = precious(&vault, "rest");
    let ld_rest = format!("{t}/rest-ld");
    let id = submit_as(
        &c,
        ALICE,
        &format!("#!/bin/bash\n#SBATCH -t 5 -o {t}/rest.out\necho preload=$LD_PRELOAD\n"),
        &[],
        &[
            ("LD_PRELOAD", &pcprofile),
            ("PCPROFILE_OUTPUT", rest.to_str().unwrap()),
            ("LD_DEBUG", "files"),
            ("LD_DEBUG_OUTPUT", &ld_rest),
        ],
    )
    .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    // The variables do reach the job itself.
    assert!(
        c.output(id).await.contains(&format!("preload={pcprofile}")),
        "{}",
        c.output(id).await
    );
    if !untouched(&rest) {
        breaches.push("POST /v1/jobs environment: LD_PRELOAD ran in a root process and overwrote a root-owned file".to_string());
    }

    // 2. `#SBATCH --export=NONE,NAME=value,…`.
    let export = precious(&vault, "export");
    let id = submit_as(
        &c,
        ALICE,
        &format!(
            "#!/bin/bash\n#SBATCH -t 5 -o {t}/export.out\n\
             #SBATCH --export=NONE,LD_PRELOAD={pcprofile},PCPROFILE_OUTPUT={},LD_DEBUG=files,LD_DEBUG_OUTPUT={t}/export-ld\n\
             echo preload=$LD_PRELOAD\n",
            export.display()
        ),
        &[],
        &[],
    )
    .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert!(c.output(id).await.contains(&format!("preload={pcprofile}")));
    if !untouched(&export) {
        breaches.push(
            "#SBATCH --export: LD_PRELOAD ran in a root process and overwrote a root-owned file"
                .to_string(),
        );
    }

    // 3. A step's environment (srun inside the job).
    let step = precious(&vault, "step");
    let id = submit_as(
        &c,
        ALICE,
        &format!(
            "#!/bin/bash\n#SBATCH -t 5 -o {t}/step.out\n\
             LD_PRELOAD={pcprofile} PCPROFILE_OUTPUT={} LD_DEBUG=files LD_DEBUG_OUTPUT={t}/step-ld \
             srun bash -c 'echo step preload=$LD_PRELOAD'\n",
            step.display()
        ),
        &[],
        &[],
    )
    .await;
    let job = c.wait_ended(id, 60).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert!(out.contains(&format!("step preload={pcprofile}")), "{out}");
    if !untouched(&step) {
        breaches.push(
            "srun environment: LD_PRELOAD ran in a root process and overwrote a root-owned file"
                .to_string(),
        );
    }

    // Every file the loader wrote for these jobs was written by alice's processes.
    for prefix in ["rest-ld", "export-ld", "step-ld"] {
        let written = owners(&trail, prefix);
        assert!(
            !written.is_empty(),
            "no {prefix}.* file: the job never saw LD_DEBUG_OUTPUT"
        );
        for (name, uid) in written {
            if uid != alice.uid.as_raw() {
                breaches.push(format!("{name}: written by uid {uid} (LD_DEBUG_OUTPUT honoured by a process not running as {ALICE})"));
            }
        }
    }
    assert!(breaches.is_empty(), "{breaches:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenants_job_records_token_and_output_are_out_of_reach() {
    if !can_switch_users("another_tenants_job_records_token_and_output_are_out_of_reach") {
        return;
    }
    let alice = unix_user(ALICE);
    unix_user(BOB);
    let c = cluster(&[]).await;
    let shared = root_dir(&c, "shared", 0o1777);
    let trail = c.dir.join("alice-trail");
    std::fs::create_dir_all(&trail).unwrap();
    nix::unistd::chown(&trail, Some(alice.uid), Some(alice.gid)).unwrap();
    std::fs::set_permissions(&trail, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (s, t) = (shared.display(), trail.display());
    // Alice's job keeps its token where only she can read it, for the test to look for.
    let a = submit_as(
        &c,
        ALICE,
        &format!(
            "#!/bin/bash\n#SBATCH -t 5 -o {s}/alice-%j.out\n# alice-script-marker\n\
             echo -n \"$BERTH_TOKEN\" > {t}/token\necho alice-secret\nsleep 120\n"
        ),
        &[],
        &[],
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !c.output(a).await.contains("alice-secret") {
        assert!(Instant::now() < deadline, "alice's job never ran");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let token = match std::fs::read_to_string(trail.join("token")) {
        Ok(token) => token,
        Err(e) => panic!(
            "alice's job kept no token ({e}); its output:\n{}",
            c.output(a).await
        ),
    };
    assert!(!token.is_empty());

    // Bob's job tries everything of alice's run that it can name.
    let state = c.dir.join("node-1");
    let st = state.display();
    let b = submit_as(
        &c,
        BOB,
        &format!(
            "#!/bin/bash\n#SBATCH -t 5 -o {s}/bob-%j.out\n\
             ls {st}/jobs/ 2>/dev/null && echo LISTED\n\
             ls {st}/spool/ 2>/dev/null && echo LISTED\n\
             for f in {st}/jobs/{a}.0/run.json {st}/jobs/{a}.0/spec.json {st}/jobs/{a}.0/script.sh \
                      {st}/spool/{a}.0/script.sh {st}/jobs/{a}.0/signal_reason {st}/spool/{a}.0/signal_reason \
                      {s}/alice-{a}.out; do\n\
               cat \"$f\" 2>/dev/null && echo \"READ $f\"\n\
             done\n\
             grep -rl \"{token}\" {st} {s} 2>/dev/null | sed 's/^/TOKEN IN /'\n\
             echo probed\n"
        ),
        &[],
        &[],
    )
    .await;
    let job = c.wait_ended(b, 60).await;
    let out = c.output(b).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert!(out.contains("probed"), "{out}");
    for leak in [
        "LISTED",
        "READ ",
        "TOKEN IN",
        "alice-secret",
        "alice-script-marker",
        token.as_str(),
    ] {
        assert!(!out.contains(leak), "bob's job saw {leak:?}:\n{out}");
    }

    // What `ls -l` shows: alice's output follows her (REST default) umask 0077, and no file
    // that others or another group may read holds her token.
    let mode = std::fs::metadata(shared.join(format!("alice-{a}.out")))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "alice's output file: {mode:o}");
    let mut exposed = Vec::new();
    let mut stack = vec![state.clone(), shared.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = entry.path().symlink_metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file()
                && meta.uid() != alice.uid.as_raw()
                && meta.mode() & 0o044 != 0
                && std::fs::read_to_string(entry.path())
                    .unwrap_or_default()
                    .contains(&token)
            {
                exposed.push(entry.path());
            }
        }
    }
    assert!(
        exposed.is_empty(),
        "alice's job token in files others may read: {exposed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_file_swapped_for_a_link_or_a_fifo_is_never_shipped() {
    if !can_switch_users("an_output_file_swapped_for_a_link_or_a_fifo_is_never_shipped") {
        return;
    }
    unix_user(ALICE);
    let c = cluster(&[]).await;
    let vault = root_dir(&c, "vault", 0o700);
    let secret = vault.join("secret");
    std::fs::write(&secret, "TOPSECRET root's own\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let shared = root_dir(&c, "shared", 0o1777);
    let s = shared.display();

    // The job replaces its own output file with a link to a root-only file.
    let id = submit_as(
        &c,
        ALICE,
        &format!(
            "#!/bin/bash\n#SBATCH -t 5 -o {s}/swap-%j.out\n\
             out={s}/swap-$SLURM_JOB_ID.out\nrm -f $out\nln -s {} $out\nsleep 3\n",
            secret.display()
        ),
        &[],
        &[],
    )
    .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    let out = c.output(id).await;
    assert!(
        !out.contains("TOPSECRET"),
        "a root-only file was shipped as the job's output: {out:?}"
    );

    // A FIFO in its place must not stall the worker's shipping (the job still ends).
    let id = submit_as(
        &c,
        ALICE,
        &format!(
            "#!/bin/bash\n#SBATCH -t 5 -o {s}/fifo-%j.out\n\
             out={s}/fifo-$SLURM_JOB_ID.out\nrm -f $out\nmkfifo $out\necho gone\n"
        ),
        &[],
        &[],
    )
    .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_planted_where_the_worker_writes_for_a_job_hand_over_no_root_file() {
    if !can_switch_users("links_planted_where_the_worker_writes_for_a_job_hand_over_no_root_file") {
        return;
    }
    let alice = unix_user(ALICE);
    unix_user(BOB);
    // A checkpoint root on shared scratch storage that every user may write (1777).
    let scratch = std::env::temp_dir().join(format!(
        "bxw-scratch-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let c = cluster(&["--checkpoint-root", scratch.to_str().unwrap()]).await;
    let vault = root_dir(&c, "vault", 0o755);
    // A directory of root's (like /etc): handed to alice, she could write in it.
    let root_owned = root_dir(&c, "vault/conf.d", 0o755);
    let root_file = precious(&root_owned, "settings");
    let shared = root_dir(&c, "shared", 0o1777);
    let s = shared.display();

    // Bob plants a link named after alice's (held) job in the checkpoint root.
    let id = submit_as(
        &c,
        ALICE,
        &format!(
            "#!/bin/bash\n#SBATCH -t 5 -o {s}/ckpt-%j.out\ntouch $BERTH_CHECKPOINT_DIR/mine && echo ckpt=ok\n"
        ),
        &["--hold"],
        &[],
    )
    .await;
    let planted = run_as(
        BOB,
        &format!("ln -s {} {}/{id}", root_owned.display(), scratch.display()),
    );
    assert!(planted.status.success(), "{planted:?}");
    let token = berth_api::mint_token(SECRET, ALICE, Role::User, 600);
    let r = c
        .http
        .post(format!("{}/v1/jobs/{id}/release", c.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let job = c.wait_ended(id, 60).await;
    let meta = std::fs::metadata(&root_owned).unwrap();
    assert!(
        meta.uid() == 0 && meta.mode() & 0o777 == 0o755 && untouched(&root_file),
        "the worker gave root's directory to {ALICE}: owner {}, mode {:o}",
        meta.uid(),
        meta.mode() & 0o777
    );
    // Alice's job still gets a checkpoint directory of her own in place of the link.
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert!(c.output(id).await.contains("ckpt=ok"));
    let ckpt = scratch.join(id.to_string()).symlink_metadata().unwrap();
    assert!(ckpt.is_dir());
    assert_eq!(ckpt.uid(), alice.uid.as_raw());

    // Bob plants a directory of his own under the next job's id: alice's job neither
    // fails nor is requeued, the node is not drained, and bob's directory is moved aside
    // untouched.
    let id = submit_as(
        &c,
        ALICE,
        &format!(
            "#!/bin/bash\n#SBATCH -t 5 -o {s}/ckpt-%j.out\ntouch $BERTH_CHECKPOINT_DIR/mine && echo ckpt=ok\n"
        ),
        &["--hold"],
        &[],
    )
    .await;
    let planted = run_as(
        BOB,
        &format!(
            "mkdir {0}/{id} && echo bob > {0}/{id}/his",
            scratch.display()
        ),
    );
    assert!(planted.status.success(), "{planted:?}");
    let r = c
        .http
        .post(format!("{}/v1/jobs/{id}/release", c.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let job = c.wait_ended(id, 60).await;
    assert_eq!(
        (job.state, job.restart_count),
        (JobState::Completed, 0),
        "{job:?}"
    );
    assert!(c.output(id).await.contains("ckpt=ok"));
    let ckpt = scratch.join(id.to_string()).symlink_metadata().unwrap();
    assert_eq!(ckpt.uid(), alice.uid.as_raw());
    let aside: Vec<_> = std::fs::read_dir(&scratch)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!(".{id}.taken-by-uid-"))
        })
        .collect();
    assert_eq!(aside.len(), 1, "bob's directory moved aside");
    assert_eq!(
        std::fs::read_to_string(aside[0].path().join("his")).unwrap(),
        "bob\n"
    );
    let node: berth_core::wire::Node = c.get("/v1/nodes/node-1").await;
    assert!(node.reason.is_none(), "{node:?}");

    // The signal reason file: the job replaces it with a link to a root-owned file; the
    // worker writes the reason before the SIGTERM without following the link.
    let reason_victim = precious(&vault, "reason");
    let id = submit_as(
        &c,
        ALICE,
        &format!(
            "#!/bin/bash\n#SBATCH -t 5 -o {s}/reason-%j.out\n\
             ln -sf {} \"$BERTH_SIGNAL_REASON_FILE\" 2>/dev/null\n\
             trap 'echo reason=$(cat $BERTH_SIGNAL_REASON_FILE); exit 0' TERM\n\
             echo planted\nsleep 120 & wait\n",
            reason_victim.display()
        ),
        &[],
        &[],
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !c.output(id).await.contains("planted") {
        assert!(Instant::now() < deadline, "the job never ran");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let r = c
        .http
        .post(format!("{}/v1/jobs/{id}/cancel", c.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    // CANCELLED at once; the worker then writes the reason and signals the job, whose
    // TERM handler prints what it reads.
    c.wait_ended(id, 60).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out = c.output(id).await;
    while !out.contains("reason=") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        out = c.output(id).await;
    }
    assert!(
        untouched(&reason_victim),
        "the worker wrote the signal reason through the job's link"
    );
    assert!(
        out.contains("reason=cancelled"),
        "{out}\n{}",
        c.log("node-1")
    );
    let _ = std::fs::remove_dir_all(&scratch);
}
