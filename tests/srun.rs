//! srun's common options as Slurm users type them (issue 15): inside a batch job
//! `--wait`, `-u`, `--distribution`, `--output/--error` patterns, `--multi-prog`, `--mpi`,
//! `--cpu-bind`, `--het-group`; `--wait` and `--time` stopping a step; `scancel`'s step
//! cancellation through the api; and srun outside an allocation making its own job.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use berth_core::step::{Step, StepList, StepState};
use reqwest::Method;

/// Runs `srun ARGS` as the cluster's admin, outside any allocation.
fn srun_outside(c: &TestCluster, args: &[&str]) -> (i32, String, String) {
    c.slurm_command("srun", &c.token, args)
}

/// The job id in srun's "job N has been allocated resources".
fn job_of(stderr: &str) -> i64 {
    stderr
        .split_whitespace()
        .skip_while(|w| *w != "job")
        .nth(1)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no job id in {stderr}"))
}

fn value<'a>(out: &'a str, key: &str) -> Option<&'a str> {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::trim)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srun_takes_slurms_common_step_options_inside_a_batch_job() {
    let c = TestCluster::start(Options::default()).await;
    let script = r#"#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 -t 5
echo begin
srun --wait=60 -n 2 hostname
echo wait_exit=$?
srun -u -n 1 echo unbuffered
echo u_exit=$?
srun -N 2 -n 4 -m cyclic bash -c 'echo cyc=$SLURM_PROCID node=$SLURMD_NODENAME local=$SLURM_LOCALID'
srun -n 2 --output=out-%t.txt --error=err-%2t-%j.txt bash -c 'echo to-file-$SLURM_PROCID; echo err-$SLURM_PROCID >&2'
echo file_exit=$?
echo "files=$(cat out-0.txt out-1.txt err-00-$SLURM_JOB_ID.txt err-01-$SLURM_JOB_ID.txt | tr '\n' ' ')"
cat > mp.conf <<'CONF'
# a leader and two workers
0 echo leader %t
1-2 echo worker %t offset %o
CONF
srun -n 3 -l --multi-prog mp.conf | sort
srun --mpi=pmix true
echo pmix=$?
srun --mpi=none -n 1 echo mpi-none
srun --cpu-bind=cores -n 1 echo bound
echo bind_exit=$?
srun --het-group=0 -n 1 true
echo het=$?
srun --het-group=1 true
echo het1=$?
srun --cpu_b=none --accel=g --mem-bind=local --network=sn_all -n 1 bash -c 'echo network=$SLURM_NETWORK'
echo prefixes=$?
srun --container-image=nvcr.io/nvidia/pytorch:24.05-py3 true
echo pyxis=$?
srun --container=/srv/bundle true
echo oci=$?
srun --accel-bind=x true
echo accel_bad=$?
srun --distribution=arbitrary true
echo arbitrary=$?
"#;
    let id = c.submit(script, &[]).await;
    let job = c.wait_ended(id, 120).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");

    // The acceptance line: two lines, exit 0.
    let hosts: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "begin")
        .skip(1)
        .take_while(|l| !l.starts_with("wait_exit="))
        .collect();
    assert_eq!(hosts.len(), 2, "{out}");
    assert_eq!(value(&out, "wait_exit"), Some("0"), "{out}");
    assert!(out.contains("\nunbuffered\n"), "{out}");
    assert_eq!(value(&out, "u_exit"), Some("0"), "{out}");

    // Cyclic: task ids go round the nodes.
    let mut cyclic: Vec<(u32, String, u32)> = out
        .lines()
        .filter(|l| l.starts_with("cyc="))
        .map(|l| {
            let f: std::collections::BTreeMap<&str, &str> = l
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .collect();
            (
                f["cyc"].parse().unwrap(),
                f["node"].to_string(),
                f["local"].parse().unwrap(),
            )
        })
        .collect();
    cyclic.sort();
    assert_eq!(
        cyclic,
        vec![
            (0, "node-1".to_string(), 0),
            (1, "node-2".to_string(), 0),
            (2, "node-1".to_string(), 1),
            (3, "node-2".to_string(), 1),
        ],
        "{out}"
    );

    // --output/--error: per-task files, nothing printed by srun.
    assert_eq!(value(&out, "file_exit"), Some("0"), "{out}");
    assert_eq!(
        value(&out, "files"),
        Some("to-file-0 to-file-1 err-0 err-1"),
        "{out}"
    );
    assert!(!out.contains("\nto-file-"), "printed as well: {out}");

    // --multi-prog: each task its line, %t and %o.
    for line in [
        "0: leader 0",
        "1: worker 1 offset 0",
        "2: worker 2 offset 1",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }

    // Refused by name, or accepted with a warning.
    assert_eq!(value(&out, "pmix"), Some("1"), "{out}");
    assert!(
        out.contains("--mpi=pmix: Berth runs no PMI server"),
        "{out}"
    );
    assert!(out.contains("\nmpi-none\n"), "{out}");
    assert!(out.contains("\nbound\n"), "{out}");
    assert_eq!(value(&out, "bind_exit"), Some("0"), "{out}");
    assert!(
        out.contains("--cpu-bind=cores: tasks are not bound"),
        "{out}"
    );
    // Issue 29: the only component of a job is 0; another is refused by name.
    assert_eq!(value(&out, "het"), Some("0"), "{out}");
    assert_eq!(value(&out, "het1"), Some("1"), "{out}");
    assert!(
        out.contains(
            "--het-group=1: Attempt to run a job step with het group value of 1, but the job \
             allocation has maximum value of 0"
        ),
        "{out}"
    );
    // Issue 29: Slurm's other spellings and options run as getopt_long prefixes too;
    // --network reaches the tasks as Slurm's srun passes it.
    assert_eq!(value(&out, "prefixes"), Some("0"), "{out}");
    assert_eq!(value(&out, "network"), Some("sn_all"), "{out}");
    assert!(
        out.contains("--mem-bind=local: memory is not bound"),
        "{out}"
    );
    // Containers: a clear refusal naming the option.
    assert_eq!(value(&out, "pyxis"), Some("1"), "{out}");
    assert!(
        out.contains(
            "--container-image=nvcr.io/nvidia/pytorch:24.05-py3: the pyxis plugin (enroot \
             containers) is not available on Berth yet"
        ),
        "{out}"
    );
    assert_eq!(value(&out, "oci"), Some("1"), "{out}");
    assert!(
        out.contains(
            "--container=/srv/bundle: OCI containers (Slurm's oci.conf) are not available"
        ),
        "{out}"
    );
    assert_eq!(value(&out, "accel_bad"), Some("1"), "{out}");
    assert!(out.contains("Invalid --accel-bind specification"), "{out}");
    assert_eq!(value(&out, "arbitrary"), Some("1"), "{out}");
    assert!(
        out.contains("--distribution=arbitrary: arbitrary needs SLURM_HOSTFILE"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_and_time_stop_a_step_and_the_api_cancels_one() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script = r#"#!/bin/bash
#SBATCH -n 2 -t 10
start=$(date +%s)
srun -n 2 --wait=2 bash -c 'if [ $SLURM_PROCID = 0 ]; then exit 3; fi; sleep 300'
echo wait_cut=$? took=$(( $(date +%s) - start ))
start=$(date +%s)
srun -n 1 -t 0:03 sleep 300
echo time_cut=$? took=$(( $(date +%s) - start ))
srun -n 1 sleep 300
echo cancelled=$?
"#;
    let id = c.submit(script, &[]).await;
    // Step 2 is cancelled through the api (`scancel ID.2`) once it runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let steps: StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
        if steps.items.iter().any(|s| s.step_id == 2) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "step 2 never started");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    let (code, _, stderr) = c.slurm_command("scancel", &c.token, &[&format!("{id}.2")]);
    assert_eq!(code, 0, "{stderr}");
    let step: Step = c.get(&format!("/v1/jobs/{id}/steps/2")).await;
    assert!(
        step.kill_reason
            .as_deref()
            .unwrap_or("")
            .starts_with("cancelled by"),
        "{step:?}"
    );
    let (code, _, stderr) = c.slurm_command("scancel", &c.token, &[&format!("{id}.9")]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!(
            "Kill job error on job step id {id}.9: Invalid job id specified"
        )),
        "{stderr}"
    );
    let (status, _) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{id}/steps/9/cancel"),
            Some(&c.token),
            None,
        )
        .await;
    assert_eq!(status, 404);

    let job = c.wait_ended(id, 120).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    let took = |key: &str| -> (i32, u64) {
        let line = out
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("{key}: {out}"));
        let f: std::collections::BTreeMap<&str, &str> = line
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .collect();
        (
            f[key.trim_end_matches('=')].parse().unwrap(),
            f["took"].parse().unwrap(),
        )
    };
    let (code, secs) = took("wait_cut=");
    assert_ne!(code, 0, "{out}");
    assert!(secs < 200, "the sleeping task was not stopped: {out}");
    // Issue 29: which task ended with which code, then each task's state, in Slurm's
    // srun's words and order; the task srun stopped is not reported as killed.
    let said: Vec<&str> = out.lines().filter(|l| l.starts_with("srun: ")).collect();
    let first = said
        .iter()
        .position(|l| l.starts_with("srun: error: node-1: task 0: "))
        .unwrap_or_else(|| panic!("task 0's end not said: {out}"));
    assert_eq!(
        said[first..first + 5],
        [
            "srun: error: node-1: task 0: Exited with exit code 3".to_string(),
            "srun: First task exited 2s ago".to_string(),
            format!("srun: StepId={id}.0 task 1: running"),
            format!("srun: StepId={id}.0 task 0: exited abnormally"),
            format!("srun: Terminating StepId={id}.0"),
        ],
        "{out}"
    );
    assert!(!out.contains("task 1: Terminated"), "{out}");
    let (code, secs) = took("time_cut=");
    assert_ne!(code, 0, "{out}");
    assert!(secs < 200, "{out}");
    assert!(out.contains("DUE TO TIME LIMIT"), "{out}");
    assert_ne!(value(&out, "cancelled"), Some("0"), "{out}");

    let steps: StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
    let states: Vec<StepState> = steps.items.iter().map(|s| s.state).collect();
    assert_eq!(
        states,
        vec![
            StepState::Cancelled,
            StepState::Cancelled,
            StepState::Cancelled
        ],
        "{steps:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srun_outside_an_allocation_makes_a_job_and_runs_the_step_in_it() {
    let c = TestCluster::start(Options::default()).await;
    let (code, stdout, stderr) = srun_outside(
        &c,
        &[
            "-N2",
            "--gpus-per-node=1",
            "--comment=made by srun",
            "-l",
            "bash",
            "-c",
            "echo rank=$SLURM_PROCID node=$SLURMD_NODENAME job=$SLURM_JOB_ID \
             nodes=$SLURM_JOB_NODELIST/$SLURM_NNODES name=$SLURM_JOB_NAME; \
             [ $SLURM_PROCID = 0 ] && echo token=$BERTH_TOKEN >&2; true",
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let id = job_of(&stderr);
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    // The tasks get the job's variables, as Slurm's srun gives them.
    assert_eq!(
        lines,
        vec![
            format!("0: rank=0 node=node-1 job={id} nodes=node-[1-2]/2 name=bash"),
            format!("1: rank=1 node=node-2 job={id} nodes=node-[1-2]/2 name=bash"),
        ],
        "{stderr}"
    );
    assert!(stderr.contains("has been allocated resources"), "{stderr}");
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert_eq!(job.num_nodes, 2);
    assert_eq!(job.name, "bash");
    // --comment outside an allocation is the job's, as Slurm's srun allocates it.
    assert_eq!(job.spec.comment.as_deref(), Some("made by srun"), "{job:?}");
    // srun's own credential (its user's token) is neither stored with the step nor
    // given to its tasks: they hold a token of the job's run, refused once it has ended.
    let task_token = stderr
        .lines()
        .find_map(|l| l.split_once("token=").map(|(_, t)| t.trim().to_string()))
        .unwrap_or_else(|| panic!("no token line in {stderr}"));
    assert!(!task_token.is_empty() && task_token != c.token, "{stderr}");
    let (status, body) = c
        .call(Method::GET, "/v1/whoami", Some(&task_token), None)
        .await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|d| d.contains(&format!("run 0 of job {id}"))),
        "{body}"
    );
    let stored: Vec<Option<String>> =
        sqlx::query_scalar("SELECT environment->>'BERTH_TOKEN' FROM job_steps WHERE job_id = $1")
            .bind(id)
            .fetch_all(&c.db().await)
            .await
            .unwrap();
    assert_eq!(stored, vec![None], "a step stored srun's token");

    // The step's exit code is srun's, and the job's.
    let (code, _, stderr) = srun_outside(&c, &["-J", "seven", "sh", "-c", "exit 7"]);
    assert_eq!(code, 7, "{stderr}");
    let job = c.wait_ended(job_of(&stderr), 60).await;
    assert_eq!(
        (job.state, job.exit_code),
        (JobState::Failed, Some(7)),
        "{job:?}"
    );
    // Refused options create nothing.
    let db = c.db().await;
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM jobs")
            .fetch_one(&db)
            .await
            .unwrap()
    };
    let before = count().await;
    let (code, _, stderr) = srun_outside(&c, &["--mpi=pmix", "true"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("--mpi=pmix"), "{stderr}");
    let (code, _, stderr) = srun_outside(&c, &["--pty", "-o", "out.txt", "bash"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--pty: task 0's input and output are the terminal; --output"),
        "{stderr}"
    );
    // A bad file pattern or --multi-prog file is refused before a job is made.
    let (code, _, stderr) = srun_outside(&c, &["-o", "out-%q", "true"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("%q is not one of srun's"), "{stderr}");
    let (code, _, stderr) = srun_outside(&c, &["--multi-prog", "no-such.conf"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--multi-prog: reading no-such.conf"),
        "{stderr}"
    );
    // An unknown option is refused in Slurm's words and takes nothing with it.
    let (code, _, stderr) = srun_outside(&c, &["--bogus", "5", "true"]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("srun: unrecognized option '--bogus'"),
        "{stderr}"
    );
    assert_eq!(count().await, before, "a refused srun created a job");
}

/// Drives `salloc ARGS` through a pseudo-terminal (Python's `pty`), as a user at a
/// terminal: waits for the allocation, types `input` into its shell, reads until it exits.
/// Returns (salloc's exit code, everything the terminal showed).
fn salloc_on_a_terminal(c: &TestCluster, args: &[&str], input: &str) -> (i32, String) {
    let bin = c.dir.join("slurm-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("salloc");
    if !link.exists() {
        std::os::unix::fs::symlink(crate::cluster::berth_bin(), &link).unwrap();
    }
    const DRIVER: &str = r#"
import os, pty, select, sys, time
argv = sys.argv[1:-1]
typed = sys.argv[-1].encode()
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
seen = b""
sent = False
deadline = time.time() + 120
while time.time() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.5)
    if ready:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        seen += data
    if not sent and b"are ready for job" in seen:
        time.sleep(0.5)
        os.write(fd, typed)
        sent = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let mut command = std::process::Command::new("python3");
    command
        .arg("-c")
        .arg(DRIVER)
        .arg(&link)
        .args(args)
        .arg(input)
        .current_dir(&c.dir)
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &c.token)
        .env("HOME", &c.dir)
        .env("XDG_CONFIG_HOME", c.dir.join("config"))
        .env("SHELL", "/bin/sh")
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env_remove("SLURM_JOB_ID");
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn salloc_gives_a_shell_whose_srun_runs_on_the_allocation() {
    let c = TestCluster::start(Options::default()).await;
    for name in ["srun", "squeue"] {
        // The shell finds srun (and squeue) as a user's PATH would.
        c.slurm_command(name, &c.token, &["--help"]);
    }
    let (code, screen) = salloc_on_a_terminal(
        &c,
        &["-N", "2", "--gpus-per-node=1", "-t", "5"],
        "srun -l bash -c 'echo on=$SLURMD_NODENAME'; echo SRUN_EXIT=$?; echo IN_JOB=$SLURM_JOB_ID NODES=$SLURM_JOB_NODELIST; exit 3\n",
    );
    assert_eq!(code, 3, "salloc exits with its shell's code:\n{screen}");
    for line in [
        "salloc: Granted job allocation",
        "0: on=node-1",
        "1: on=node-2",
        "SRUN_EXIT=0",
        "NODES=node-[1-2]",
        "salloc: Relinquishing job allocation",
    ] {
        assert!(screen.contains(line), "{line}:\n{screen}");
    }
    let id: i64 = screen
        .split("IN_JOB=")
        .nth(2)
        .or_else(|| screen.split("IN_JOB=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{screen}"));
    let job = c.wait_ended(id, 60).await;
    assert_eq!(
        job.state,
        JobState::Cancelled,
        "released when the shell exits"
    );
    assert_eq!(job.num_nodes, 2);
    let steps: StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
    assert_eq!(steps.items.len(), 1);
    assert_eq!(steps.items[0].state, StepState::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sattach_prints_a_running_steps_output() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script = "#!/bin/bash\n#SBATCH -n 2 -t 5\n\
        srun -n 2 bash -c 'for i in 1 2 3 4; do echo tick$i-$SLURM_PROCID; echo warn$i-$SLURM_PROCID >&2; sleep 1; done'\n";
    let id = c.submit(script, &[]).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while c
        .get::<StepList>(&format!("/v1/jobs/{id}/steps"))
        .await
        .items
        .is_empty()
    {
        assert!(std::time::Instant::now() < deadline, "no step");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let step = format!("{id}.0");
    let (code, stdout, stderr) = c.slurm_command("sattach", &c.token, &["-l", &step]);
    assert_eq!(code, 0, "{stderr}");
    for line in ["0: tick4-0", "1: tick4-1", "0: tick1-0"] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    assert!(stderr.contains("1: warn4-1"), "{stderr}");
    let (code, stdout, stderr) = c.slurm_command(
        "sattach",
        &c.token,
        &["--output-filter=1", "--error-filter=0", &step],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("tick4-1") && !stdout.contains("tick4-0"),
        "{stdout}"
    );
    assert!(
        stderr.contains("warn4-0") && !stderr.contains("warn4-1"),
        "{stderr}"
    );
    let (code, _, stderr) = c.slurm_command("sattach", &c.token, &[&format!("{id}.7")]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!("Job step {id}.7 does not exist")),
        "{stderr}"
    );
    let (code, _, stderr) = c.slurm_command("sattach", &c.token, &[&id.to_string()]);
    assert_eq!(code, 1);
    assert!(stderr.contains("is not a step id"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sbcast_copies_a_file_to_every_node_of_the_job() {
    let c = TestCluster::start(Options::default()).await;
    // 2.5 MiB: three steps' worth.
    let script = r#"#!/bin/bash
#SBATCH -N 2 -t 5
set -e
dest=$(mktemp -d)
head -c 2621440 /dev/urandom > data.bin
chmod 750 data.bin
sbcast -p data.bin $dest/copy.bin
echo "source=$(sha256sum < data.bin | cut -c1-64)"
srun -N 2 -l bash -c "echo copy=\$(sha256sum < $dest/copy.bin | cut -c1-64) mode=\$(stat -c %a $dest/copy.bin)"
set +e
sbcast data.bin $dest/copy.bin
echo again=$?
sbcast -f data.bin $dest/copy.bin
echo forced=$?
sbcast missing.bin $dest/x
echo missing=$?
"#;
    let id = c.submit(script, &[]).await;
    let job = c.wait_ended(id, 120).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    let source = value(&out, "source").unwrap_or_else(|| panic!("{out}"));
    for task in ["0", "1"] {
        let line = format!("{task}: copy={source} mode=750");
        assert!(out.contains(&line), "{line}: {out}");
    }
    assert_eq!(value(&out, "again"), Some("1"), "{out}");
    assert!(out.contains("exists (use -f to replace it)"), "{out}");
    assert_eq!(value(&out, "forced"), Some("0"), "{out}");
    assert_eq!(value(&out, "missing"), Some("1"), "{out}");
    assert!(
        out.contains("sbcast: error: Can't open `missing.bin`"),
        "{out}"
    );
}

/// Starts `name ARGS` (salloc, srun) as the cluster's admin in a process group of its own,
/// its stdout and stderr to files under the cluster's directory; returns the child and
/// its stderr file.
fn spawn_slurm(
    c: &TestCluster,
    name: &str,
    args: &[&str],
) -> (std::process::Child, std::path::PathBuf) {
    use std::os::unix::process::CommandExt;
    let bin = c.dir.join("slurm-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join(name);
    if !link.exists() {
        std::os::unix::fs::symlink(crate::cluster::berth_bin(), &link).unwrap();
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let err = c.dir.join(format!("{name}-{stamp}.err"));
    let child = std::process::Command::new(&link)
        .args(args)
        .current_dir(&c.dir)
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &c.token)
        .env("HOME", &c.dir)
        .env("XDG_CONFIG_HOME", c.dir.join("config"))
        .env_remove("SLURM_JOB_ID")
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(c.dir.join(format!("{name}-{stamp}.out"))).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    (child, err)
}

/// Waits (up to 90 s) until `file` holds `text`; returns the file's text.
async fn wait_for_text(file: &std::path::Path, text: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let now = std::fs::read_to_string(file).unwrap_or_default();
        if now.contains(text) {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {text:?} in {}:\n{now}",
            file.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// SIGKILLs a child's whole process group (what it started too) and reaps it.
fn kill_group(child: &mut std::process::Child) {
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
}

/// Slurm's `InactiveLimit`: a salloc, or an srun outside an allocation, killed with SIGKILL
/// (no chance to give its allocation back) leaves a job that ends once the cluster's
/// inactive limit has passed without a keep-alive: TIMEOUT, reason `InactiveLimit`, its
/// processes stopped. A live salloc keeps its job well past the limit, and a batch job
/// running longer than the limit is not affected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_sallocs_or_sruns_job_ends_after_the_inactive_limit() {
    const LIMIT: u64 = 5;
    let c = TestCluster::start(Options {
        workers: 1,
        scheduler_config: "inactive_limit_seconds = 5\n",
        ..Default::default()
    })
    .await;
    // A batch job that outlives the limit three times over.
    let batch = c
        .submit(
            "#!/bin/bash\n#SBATCH -t 5\nsleep 16\necho batch-done\n",
            &[],
        )
        .await;

    // salloc, SIGKILLed once its allocation is granted.
    let (mut salloc, err) = spawn_slurm(&c, "salloc", &["-t", "10", "sleep", "300"]);
    let said = wait_for_text(&err, "Granted job allocation").await;
    let id: i64 = said
        .split("Granted job allocation ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    // Alive past the limit while salloc runs.
    tokio::time::sleep(std::time::Duration::from_secs(2 * LIMIT)).await;
    assert_eq!(c.job(id).await.state, JobState::Running, "{said}");
    let killed = std::time::Instant::now();
    salloc.kill().unwrap();
    let _ = salloc.wait();
    let job = c.wait_ended(id, 60).await;
    assert_eq!(
        (job.state, job.reason.as_deref()),
        (JobState::Timeout, Some("InactiveLimit")),
        "{job:?}"
    );
    let took = killed.elapsed().as_secs();
    assert!(
        (LIMIT - 1..LIMIT + 20).contains(&took),
        "ended {took} s after salloc was killed (limit {LIMIT} s)"
    );
    kill_group(&mut salloc);

    // srun outside an allocation, SIGKILLed while its step runs: the job ends, and the
    // step's task with it.
    let (mut srun, err) = spawn_slurm(&c, "srun", &["-t", "10", "sleep", "300"]);
    let said = wait_for_text(&err, "has been allocated resources").await;
    let id = job_of(&said);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let steps: StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
        if steps
            .items
            .first()
            .is_some_and(|s| s.tasks.iter().all(|t| t.started_at.is_some()))
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no step: {steps:?}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    srun.kill().unwrap();
    let _ = srun.wait();
    let job = c.wait_ended(id, 60).await;
    assert_eq!(
        (job.state, job.reason.as_deref()),
        (JobState::Timeout, Some("InactiveLimit")),
        "{job:?}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let step: Step = c.get(&format!("/v1/jobs/{id}/steps/0")).await;
        if step.state != StepState::Running {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{step:?}");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    kill_group(&mut srun);

    // A live salloc whose command outlasts the limit keeps its job to the end.
    let (code, stdout, stderr) = c.slurm_command(
        "salloc",
        &c.token,
        &["-t", "5", "sh", "-c", "sleep 12; echo still=$SLURM_JOB_ID"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let id: i64 = value(&stdout, "still")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}\n{stderr}"));
    let job = c.wait_ended(id, 60).await;
    assert_eq!(
        (job.state, job.reason.as_deref()),
        (JobState::Cancelled, Some("None")),
        "relinquished by salloc, not ended for inactivity: {job:?}"
    );

    let job = c.wait_ended(batch, 60).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
}

/// The `SLURM_*` variables a command printed with `env | grep ^SLURM_`.
fn slurm_lines(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.starts_with("SLURM_"))
        .filter_map(|l| l.split_once('='))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// A step's tasks under salloc have the job's Slurm variables as the batch shell of a job
/// with the same options has them (`SLURM_JOB_USER`, `SLURM_CPUS_ON_NODE`,
/// `SLURM_JOB_CPUS_PER_NODE`, `SLURM_MEM_PER_NODE`, `SLURM_JOB_START_TIME` …), not only
/// what salloc's shell was given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_tasks_under_salloc_have_the_batch_jobs_variables() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    c.slurm_command("srun", &c.token, &["--help"]);
    let options = ["-n", "2", "-c", "2", "--mem=1G", "-t", "5"];
    let batch = c
        .submit(
            "#!/bin/bash\necho BEGIN; env | grep ^SLURM_ | sort; echo END\n",
            &options,
        )
        .await;
    let job = c.wait_ended(batch, 60).await;
    let out = c.output(batch).await;
    assert_eq!(job.state, JobState::Completed, "{out}");
    let batch_vars = slurm_lines(&out);

    let (code, screen) = salloc_on_a_terminal(
        &c,
        &options,
        "srun -n 1 bash -c 'echo BEGIN; env | grep ^SLURM_ | sort; echo END' > step-env.txt; exit 0\n",
    );
    assert_eq!(code, 0, "{screen}");
    let step_text = std::fs::read_to_string(c.dir.join("step-env.txt")).unwrap();
    let step_vars = slurm_lines(&step_text);
    let id: i64 = step_vars["SLURM_JOB_ID"].parse().unwrap();
    let salloc_job = c.job(id).await;

    // Every variable of the batch job's own processes is there (the batch shell's own
    // pid aside).
    let missing: Vec<&String> = batch_vars
        .keys()
        .filter(|n| *n != "SLURM_TASK_PID" && !step_vars.contains_key(*n))
        .collect();
    assert!(missing.is_empty(), "missing {missing:?}:\n{step_text}");
    assert_eq!(step_vars["SLURM_JOB_USER"], salloc_job.user, "{step_text}");
    for same in [
        "SLURM_CPUS_ON_NODE",
        "SLURM_JOB_CPUS_PER_NODE",
        "SLURM_MEM_PER_NODE",
        "SLURM_TASKS_PER_NODE",
        "SLURM_JOB_NUM_NODES",
        "SLURM_CLUSTER_NAME",
        "SLURM_JOB_PARTITION",
    ] {
        assert_eq!(
            step_vars.get(same),
            batch_vars.get(same),
            "{same}:\n{step_text}\n{out}"
        );
    }
    assert_eq!(
        step_vars["SLURM_JOB_START_TIME"],
        salloc_job.start_time.unwrap().timestamp().to_string()
    );
    assert_eq!(step_vars["SLURM_STEP_ID"], "0", "{step_text}");
}

/// Issue 29: the acceptance line with Slurm's other spellings runs; a step whose task was
/// killed by SIGTERM: srun says so in Slurm's words and exits 143, and sacct shows its
/// ExitCode as Slurm's does (`0:15`, not `143:15`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm_spellings_run_and_a_sigterm_step_shows_0_15_in_sacct() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script = "#!/bin/bash\n#SBATCH -t 5\n\
        srun --comment x --cpu_bind=cores --accel-bind=g true\n\
        echo slurm_spellings=$?\n\
        srun bash -c 'kill -TERM $$'\n\
        echo killed=$?\n\
        srun bash -c 'exit 4'\n\
        echo exited=$?\n";
    let id = c.submit(script, &[]).await;
    let job = c.wait_ended(id, 60).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert_eq!(value(&out, "slurm_spellings"), Some("0"), "{out}");
    assert_eq!(value(&out, "killed"), Some("143"), "{out}");
    assert!(
        out.contains("srun: error: node-1: task 0: Terminated\n"),
        "{out}"
    );
    assert_eq!(value(&out, "exited"), Some("4"), "{out}");
    assert!(
        out.contains("srun: error: node-1: task 0: Exited with exit code 4\n"),
        "{out}"
    );
    let (code, stdout, stderr) = c.slurm_command(
        "sacct",
        &c.token,
        &[
            "-j",
            &id.to_string(),
            "-P",
            "-n",
            "--format",
            "JobID,ExitCode,DerivedExitCode",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.contains(&format!("{id}.0|0:0|").as_str()), "{stdout}");
    assert!(
        lines.contains(&format!("{id}.1|0:15|").as_str()),
        "{stdout}"
    );
    assert!(lines.contains(&format!("{id}.2|4:0|").as_str()), "{stdout}");
    // The job's derived code: the highest step's as Slurm ranks them (4:0 over 0:15).
    assert!(
        lines.contains(&format!("{id}|0:0|4:0").as_str()),
        "{stdout}"
    );
}
