//! sbatch's whole option set as Slurm users type it (issue 15), with the binary linked as
//! `sbatch`: every option Slurm's sbatch documents is honoured or refused with a message
//! naming it (never "unrecognized"); an unknown option takes nothing with it; arguments
//! after the script reach it as `$1 $2 …`; `--test-only` prints Slurm's "Job N to start at
//! …" line and creates nothing; `--wait` prints only the submission line and exits with the
//! job's code; pyxis's `--container-image` and `--mail-type` are refused by name.

use crate::cluster::{berth_bin, example, Options, TestCluster};
use berth_core::state::JobState;

/// Runs `sbatch ARGS` (a link to `berth` named `sbatch`) in the cluster's directory with
/// the admin token, in UTC (so printed times read as UTC).
fn sbatch(c: &TestCluster, args: &[&str]) -> (i32, String, String) {
    let bin = c.dir.join("sbatch-bin");
    if !bin.is_dir() {
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(berth_bin(), bin.join("sbatch")).unwrap();
    }
    let out = std::process::Command::new(bin.join("sbatch"))
        .args(args)
        .current_dir(&c.dir)
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &c.token)
        .env("HOME", &c.dir)
        .env("XDG_CONFIG_HOME", c.dir.join("config"))
        .env("TZ", "UTC")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Writes `body` as the script `name` in the cluster's directory, submits it with
/// `sbatch`, and returns the error it must print (exit 1, nothing on stdout).
fn refused_script(c: &TestCluster, name: &str, body: &str) -> String {
    let script = c.dir.join(name);
    std::fs::write(&script, body).unwrap();
    let (code, out, err) = sbatch(c, &[script.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    err
}

/// Rows in the cluster's jobs table.
async fn job_rows(c: &TestCluster) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&c.db().await)
        .await
        .unwrap()
}

/// The id of `Submitted batch job N`.
fn submitted(out: &str) -> i64 {
    out.lines()
        .find_map(|l| l.strip_prefix("Submitted batch job "))
        .unwrap_or_else(|| panic!("no submission line in {out:?}"))
        .trim()
        .parse()
        .unwrap()
}

/// Slurm's `--test-only` answer, `sbatch: Job N to start at TIME using P processors on
/// nodes NODES in partition PART` (one line): `(N, TIME, P, NODES, PART)`.
fn will_run_line(err: &str) -> Option<(i64, chrono::DateTime<chrono::Utc>, u32, String, String)> {
    let rest = err.strip_suffix('\n')?.strip_prefix("sbatch: Job ")?;
    if rest.contains('\n') {
        return None;
    }
    let (id, rest) = rest.split_once(" to start at ")?;
    let (at, rest) = rest.split_once(" using ")?;
    let (cpus, rest) = rest.split_once(" processors on nodes ")?;
    let (nodes, partition) = rest.split_once(" in partition ")?;
    let at = chrono::NaiveDateTime::parse_from_str(at, "%Y-%m-%dT%H:%M:%S")
        .ok()?
        .and_utc();
    Some((
        id.parse().ok()?,
        at,
        cpus.parse().ok()?,
        nodes.to_string(),
        partition.to_string(),
    ))
}

/// What `sbatch` must do with an option.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// Submitted.
    Ok,
    /// Refused (exit 1), the message naming the option and holding this reason.
    Refused(&'static str),
}

/// Slurm's documented sbatch options (<https://slurm.schedmd.com/sbatch.html>, 25.05;
/// pyxis's `--container-*`), each as a script might write it, and what Berth must do. The
/// client-side ones (`--help`, `--usage`, `--version`, `--test-only`, `--wait`, `--wrap`)
/// are checked by the tests below.
const SLURM_OPTIONS: &[(&[&str], Want)] = &[
    (&["--account=root"], Want::Ok),
    (&["-A", "root"], Want::Ok),
    (&["--acctg-freq=task=30"], Want::Refused("interval")),
    (&["--array=0-1"], Want::Ok),
    (&["-a", "0-1"], Want::Ok),
    (&["--batch=a100"], Want::Refused("first node")),
    (&["--bb=capacity=1G"], Want::Refused("burst buffer")),
    (&["--bbf=bb.conf"], Want::Refused("burst buffer")),
    (&["--begin=now+1hour"], Want::Ok),
    (&["-b", "now+1hour"], Want::Ok),
    (&["--chdir=/tmp"], Want::Ok),
    (&["-D", "/tmp"], Want::Ok),
    (
        &["--cluster-constraint=west"],
        Want::Refused("single cluster"),
    ),
    // Honoured for `all` and the cluster's own name (tests/cluster_option.rs); another
    // name is refused in Slurm's words.
    (
        &["--clusters=west"],
        Want::Refused("No cluster 'west' known by database."),
    ),
    (
        &["-M", "west"],
        Want::Refused("No cluster 'west' known by database."),
    ),
    (
        &["--cluster=west"],
        Want::Refused("No cluster 'west' known by database."),
    ),
    (&["--comment=nightly run"], Want::Ok),
    // Honoured: checked against the nodes, none of which has the feature.
    (&["--constraint=nvlink"], Want::Refused("feature")),
    (&["-C", "nvlink"], Want::Refused("feature")),
    (&["--container=/oci/bundle"], Want::Refused("OCI")),
    (&["--container-id=abc"], Want::Refused("OCI")),
    (&["--contiguous"], Want::Refused("contiguous")),
    (&["--core-spec=2"], Want::Refused("cores")),
    (&["-S", "2"], Want::Refused("cores")),
    (&["--cores-per-socket=4"], Want::Refused("sockets")),
    (&["--cpu-freq=high"], Want::Refused("frequenc")),
    (&["--cpus-per-gpu=1", "--gres=gpu:1"], Want::Ok),
    (&["--cpus-per-task=1"], Want::Ok),
    (&["-c", "1"], Want::Ok),
    (&["--deadline=now+2hours"], Want::Refused("deadline")),
    (&["--delay-boot=10"], Want::Ok),
    (&["--dependency=singleton"], Want::Ok),
    (&["-d", "singleton"], Want::Ok),
    (&["--distribution=block"], Want::Ok),
    (&["-m", "cyclic"], Want::Refused("block")),
    (&["--error=err-%j.log"], Want::Ok),
    (&["-e", "err-%j.log"], Want::Ok),
    (&["--exclude=node-2"], Want::Ok),
    (&["-x", "node-2"], Want::Ok),
    (&["--exclusive"], Want::Ok),
    (&["--export=ALL,EXTRA=1"], Want::Ok),
    (&["--export-file=vars.env"], Want::Refused("--export")),
    (&["--extra=rack=1"], Want::Refused("Extra")),
    (&["--extra-node-info=2:4:1"], Want::Refused("sockets")),
    (&["-B", "2:4:1"], Want::Refused("sockets")),
    (&["--get-user-env"], Want::Ok),
    (&["--gid=100"], Want::Refused("another user")),
    (&["--gpu-bind=closest"], Want::Refused("bind")),
    (&["--gpu-freq=high"], Want::Refused("GPU clocks")),
    (&["--gpus=1"], Want::Ok),
    (&["-G", "1"], Want::Ok),
    (&["--gpus-per-node=1"], Want::Ok),
    (&["--gpus-per-socket=1"], Want::Refused("sockets")),
    (&["--gpus-per-task=1"], Want::Ok),
    (&["--gres=gpu:1"], Want::Ok),
    (&["--gres-flags=enforce-binding"], Want::Refused("binding")),
    (&["--hint=nomultithread"], Want::Ok),
    (&["--hold"], Want::Ok),
    (&["-H"], Want::Ok),
    (&["--ignore-pbs"], Want::Ok),
    (&["--input=/dev/null"], Want::Ok),
    (&["-i", "data.txt"], Want::Refused("/dev/null")),
    (&["--job-name=sweep"], Want::Ok),
    (&["-J", "sweep"], Want::Ok),
    (
        &["--kill-on-invalid-dep=yes"],
        Want::Refused("kill_invalid_depend"),
    ),
    (&["--licenses=matlab"], Want::Refused("licenses")),
    (&["-L", "matlab"], Want::Refused("licenses")),
    (&["--mail-type=END"], Want::Refused("e-mail")),
    (&["--mail-type=NONE"], Want::Ok),
    (&["--mail-user=alice@example.org"], Want::Ok),
    (&["--mcs-label=x"], Want::Refused("MCS")),
    (&["--mem=1G"], Want::Ok),
    (&["--mem-bind=local"], Want::Refused("bind")),
    (&["--mem-per-cpu=512"], Want::Ok),
    (&["--mem-per-gpu=1G", "--gres=gpu:1"], Want::Ok),
    (&["--mincpus=4"], Want::Refused("cpus-per-task")),
    (&["--network=sn_all"], Want::Refused("network")),
    (&["--nice=10"], Want::Ok),
    (&["--no-kill"], Want::Refused("NODE_FAIL")),
    (&["-k"], Want::Refused("NODE_FAIL")),
    (&["--no-requeue"], Want::Ok),
    (&["--nodefile=hosts.txt"], Want::Refused("files")),
    (&["-F", "hosts.txt"], Want::Refused("files")),
    (&["--nodelist=node-1"], Want::Ok),
    (&["-w", "node-1"], Want::Ok),
    (&["--nodes=1"], Want::Ok),
    (&["-N", "1"], Want::Ok),
    (&["--ntasks=1"], Want::Ok),
    (&["-n", "1"], Want::Ok),
    (&["--ntasks-per-core=1"], Want::Refused("sockets")),
    (&["--ntasks-per-gpu=1"], Want::Refused("gpus-per-task")),
    (&["--ntasks-per-node=1"], Want::Ok),
    (&["--ntasks-per-socket=1"], Want::Refused("sockets")),
    (&["--oom-kill-step"], Want::Refused("OUT_OF_MEMORY")),
    (&["--open-mode=append"], Want::Ok),
    (&["--output=out-%j.log"], Want::Ok),
    (&["-o", "out-%j.log"], Want::Ok),
    (&["--overcommit"], Want::Ok),
    (&["-O"], Want::Ok),
    (&["--oversubscribe"], Want::Refused("shares")),
    (&["-s"], Want::Refused("shares")),
    (&["--parsable"], Want::Ok),
    (&["--partition=gpu"], Want::Ok),
    (&["-p", "gpu"], Want::Ok),
    (&["--prefer=nvlink"], Want::Refused("preferences")),
    (&["--priority=100"], Want::Refused("operators")),
    (&["--profile=task"], Want::Refused("profile")),
    (&["--propagate"], Want::Refused("limits")),
    (&["--propagate=NONE"], Want::Ok),
    (&["--qos=normal"], Want::Ok),
    (&["-q", "normal"], Want::Ok),
    (&["--quiet"], Want::Ok),
    (&["-Q"], Want::Ok),
    (&["--reboot"], Want::Refused("reboot")),
    (&["--requeue"], Want::Ok),
    // Honoured: checked against the cluster's reservations, which have no `maint`.
    (&["--reservation=maint"], Want::Refused("maint")),
    (&["--segment=2"], Want::Refused("topology")),
    (&["--signal=B:USR1@60"], Want::Ok),
    (&["--sockets-per-node=1"], Want::Refused("sockets")),
    (&["--spread-job"], Want::Refused("spread")),
    (&["--stepmgr"], Want::Refused("step manager")),
    (&["--switches=1"], Want::Refused("topology")),
    (&["--thread-spec=1"], Want::Refused("sockets")),
    (&["--threads-per-core=1"], Want::Refused("sockets")),
    (&["--time=10"], Want::Ok),
    (&["-t", "10"], Want::Ok),
    (&["--time-min=5"], Want::Ok),
    (&["--tmp=1G"], Want::Refused("disk")),
    (&["--tres-bind=gres/gpu:closest"], Want::Refused("bind")),
    (&["--tres-per-task=cpu=1"], Want::Ok),
    (&["--uid=0"], Want::Refused("another user")),
    (&["--use-min-nodes"], Want::Ok),
    (&["--verbose"], Want::Ok),
    (&["-v"], Want::Ok),
    (&["--wait-all-nodes=1"], Want::Ok),
    (&["--wckey=project-x"], Want::Ok),
    (
        &["--container-image=nvcr.io#nvidia/pytorch:24.05-py3"],
        Want::Refused("pyxis"),
    ),
    (&["--container-mounts=/data:/data"], Want::Refused("pyxis")),
    (&["--container-workdir=/work"], Want::Refused("pyxis")),
    (&["--container-name=torch"], Want::Refused("pyxis")),
    (&["--container-save=/tmp/x.sqsh"], Want::Refused("pyxis")),
    (&["--container-env=PATH"], Want::Refused("pyxis")),
    (&["--container-mount-home"], Want::Refused("pyxis")),
    (&["--no-container-mount-home"], Want::Refused("pyxis")),
    (&["--container-remap-root"], Want::Refused("pyxis")),
    (&["--no-container-remap-root"], Want::Refused("pyxis")),
    (&["--container-entrypoint"], Want::Refused("pyxis")),
    (&["--no-container-entrypoint"], Want::Refused("pyxis")),
    (&["--container-entrypoint-log"], Want::Refused("pyxis")),
    (&["--container-writable"], Want::Refused("pyxis")),
    (&["--container-readonly"], Want::Refused("pyxis")),
];

/// The long name an argv fragment's first word names (`-N` → `nodes`).
fn long_name(word: &str) -> String {
    match word.strip_prefix("--") {
        Some(long) => long.split('=').next().unwrap().to_string(),
        None => {
            let c = word.chars().nth(1).unwrap();
            berth_core::sbatch::short_option(c)
                .unwrap()
                .long
                .to_string()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_sbatch_option_is_honoured_or_refused_by_name() {
    let c = TestCluster::start(Options::default()).await;
    let script = c.dir.join("job.sh");
    std::fs::write(&script, "#!/bin/bash\ntrue\n").unwrap();
    let script = script.to_str().unwrap();
    // Every option of Slurm's list is in Berth's table, and the table holds the client's
    // own ones too.
    let table: Vec<&str> = berth_core::sbatch::supported_options().collect();
    for (fragment, _) in SLURM_OPTIONS {
        let name = long_name(fragment[0]);
        assert!(
            table.contains(&name.as_str()),
            "--{name} is not in the table"
        );
    }
    for name in ["help", "usage", "version", "test-only", "wait", "wrap"] {
        assert!(table.contains(&name), "--{name} is not in the table");
    }
    let mut failures = Vec::new();
    for (fragment, want) in SLURM_OPTIONS {
        let name = long_name(fragment[0]);
        // Held: nothing runs.
        let mut args = vec!["--hold"];
        args.extend_from_slice(fragment);
        args.push(script);
        let (code, out, err) = sbatch(&c, &args);
        let fine = match want {
            Want::Ok if fragment[0] == "--parsable" => {
                code == 0 && out.trim().parse::<i64>().is_ok()
            }
            Want::Ok => code == 0 && out.starts_with("Submitted batch job "),
            Want::Refused(reason) => {
                code == 1
                    && err.starts_with("sbatch: error: ")
                    // Named as written (`-M west`) or by its long name (the api's
                    // checks name the field: `--constraint`).
                    && (err.contains(fragment[0].split('=').next().unwrap())
                        || err.contains(&format!("--{name}"))
                        // Slurm's line for -M names the option so.
                        || (name.starts_with("cluster")
                            && err.contains("invalid entry for --cluster.")))
                    && err.contains(reason)
                    && out.is_empty()
            }
        };
        // Never Slurm's answer for an option it does not have.
        if !fine || err.contains("unrecognized") || err.contains("invalid option") {
            failures.push(format!(
                "{fragment:?} ({want:?}): exit {code}\nstdout: {out}\nstderr: {err}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // What honoured options did to the job: a few read back.
    let (_, out, err) = sbatch(
        &c,
        &[
            "--hold",
            "--wckey=project-x",
            "--tres-per-task=cpu=2,gres/gpu=1",
            "--get-user-env",
            script,
        ],
    );
    let job = c.job(submitted(&out)).await;
    assert_eq!(job.spec.wckey.as_deref(), Some("project-x"), "{err}");
    assert_eq!(
        (job.spec.cpus_per_task, job.spec.gpus_per_task),
        (Some(2), Some(1))
    );
    // --help, --usage and --version answer without submitting.
    let before = job_rows(&c).await;
    for flag in ["--help", "--usage", "-h"] {
        let (code, out, _) = sbatch(&c, &[flag]);
        assert_eq!(code, 0, "{flag}");
        assert!(out.contains("sbatch"), "{flag}: {out}");
    }
    let (code, out, _) = sbatch(&c, &["-V"]);
    assert_eq!((code, out.starts_with("berth ")), (0, true), "{out}");
    assert_eq!(job_rows(&c).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_options_never_take_the_next_argument() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    // Found failing: "unable to open file echo hi".
    let (code, out, err) = sbatch(&c, &["--foo", "--wrap", "echo hi"]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.starts_with("sbatch: error: unrecognized option '--foo'\n"),
        "{err}"
    );
    assert!(!err.contains("unable to open"), "{err}");
    let (code, _, err) = sbatch(&c, &["-Z", "job.sh"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("sbatch: error: invalid option -- 'Z'"),
        "{err}"
    );
    // In a script, the line is named.
    let err = refused_script(
        &c,
        "typo.sbatch",
        "#!/bin/bash\n#SBATCH --gpus-per-nod=1\n#SBATCH --frobnicate\ntrue\n",
    );
    assert!(
        err.contains("line 3") && err.contains("unrecognized option '--frobnicate'"),
        "{err}"
    );
    assert_eq!(job_rows(&c).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyxis_and_mail_options_are_refused_naming_the_line_and_why() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let pyxis = std::fs::read_to_string(example("pyxis_container.sbatch")).unwrap();
    let err = refused_script(&c, "pyxis_container.sbatch", &pyxis);
    assert!(
        err.contains("line 4")
            && err.contains("--container-image")
            && err.contains("pyxis plugin (enroot containers) is not available on Berth"),
        "{err}"
    );
    let err = refused_script(
        &c,
        "mail.sbatch",
        "#!/bin/bash\n#SBATCH --mail-type=END,FAIL\n#SBATCH --mail-user=me@example.org\ntrue\n",
    );
    assert!(
        err.contains("line 2") && err.contains("--mail-type") && err.contains("webhook"),
        "{err}"
    );
    // The api holds a structured spec (REST clients) to the same rule.
    let (status, body) = c
        .call(
            reqwest::Method::POST,
            "/v1/jobs",
            Some(&c.token),
            Some(serde_json::json!({
                "script": "#!/bin/bash\ntrue\n",
                "spec": {"mail_type": "END"}
            })),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["field"], "--mail-type", "{body}");
    assert_eq!(job_rows(&c).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_arguments_reach_the_script_verbatim() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script = example("script_args.sbatch");
    let (code, out, err) = sbatch(
        &c,
        &[
            script.to_str().unwrap(),
            "ckpt-0420",
            "lr sweep",
            "$(touch injected)",
            "--fp16",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let id = submitted(&out);
    let job = c.wait_ended(id, 120).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    let output = std::fs::read_to_string(c.dir.join(format!("eval-{id}.out"))).unwrap();
    assert_eq!(
        output.lines().take(5).collect::<Vec<_>>(),
        [
            "count=4",
            "arg=[ckpt-0420]",
            "arg=[lr sweep]",
            "arg=[$(touch injected)]",
            "arg=[--fp16]"
        ],
        "{output}"
    );
    assert!(output.contains("checkpoint=ckpt-0420 gpus=0"), "{output}");
    assert!(!c.dir.join("injected").exists());
    // An array's tasks get them too.
    let (code, out, err) = sbatch(&c, &["--array=1-2", script.to_str().unwrap(), "task-arg"]);
    assert_eq!(code, 0, "{err}");
    let array = submitted(&out);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let outputs = loop {
        let page: berth_core::wire::JobList = c.get("/v1/jobs?limit=1000").await;
        let tasks: Vec<_> = page
            .items
            .into_iter()
            .filter(|j| j.id == array || j.array_job_id == Some(array))
            .collect();
        if tasks.len() == 2 && tasks.iter().all(|j| j.state.is_terminal()) {
            break tasks
                .iter()
                .map(|j| std::fs::read_to_string(c.dir.join(format!("eval-{}.out", j.id))))
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "array not done: {tasks:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    for output in outputs {
        assert!(output.starts_with("count=1\narg=[task-arg]\n"), "{output}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_only_prints_the_expected_start_and_creates_nothing() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script = example("test_only.sbatch");
    let script = script.to_str().unwrap();
    let started = chrono::Utc::now();
    let (code, out, err) = sbatch(&c, &["--test-only", script]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let (id, at, cpus, nodes, partition) = will_run_line(&err).unwrap_or_else(|| panic!("{err:?}"));
    assert_eq!((nodes.as_str(), partition.as_str()), ("node-1", "gpu"));
    // An idle node: it would start now.
    assert!(
        at >= started - chrono::Duration::seconds(1) && at <= chrono::Utc::now(),
        "{err}"
    );
    assert!(cpus >= 1, "{err}");
    // Created nothing: no job row, the printed id names no job, squeue shows nothing.
    assert_eq!(job_rows(&c).await, 0);
    let (status, _) = c
        .call(
            reqwest::Method::GET,
            &format!("/v1/jobs/{id}"),
            Some(&c.token),
            None,
        )
        .await;
    assert_eq!(status, 404);
    let (_, queue, _) = c.cli(&c.token, &["queue", "-h"]);
    assert_eq!(queue, "");

    // Another job holds the node's 8 GPUs for at most 10 minutes: the test job would start
    // when it ends.
    let (_, out, err) = sbatch(&c, &["--gres=gpu:8", "--time=10", "--wrap", "sleep 300"]);
    let busy = submitted(&out);
    let running = c.wait_for(busy, 60, |j| j.state == JobState::Running).await;
    let (code, _, err2) = sbatch(&c, &["--test-only", script]);
    assert_eq!(code, 0, "{err}{err2}");
    let (_, at, _, nodes, _) = will_run_line(&err2).unwrap_or_else(|| panic!("{err2:?}"));
    assert_eq!(nodes, "node-1");
    let end = running.start_time.unwrap() + chrono::Duration::seconds(600);
    assert!(
        (at - end).num_seconds().abs() <= 5,
        "expected about {end}, got {err2}"
    );
    assert_eq!(job_rows(&c).await, 1, "only the busy job");

    // A later --begin: no earlier than that (the node frees in 10 minutes, begin is in
    // an hour).
    let (code, _, err) = sbatch(&c, &["--test-only", "--begin=now+1hour", script]);
    assert_eq!(code, 0, "{err}");
    let (_, at, _, nodes, _) = will_run_line(&err).unwrap_or_else(|| panic!("{err:?}"));
    assert_eq!(nodes, "node-1");
    let begin = chrono::Utc::now() + chrono::Duration::seconds(3600);
    assert!(
        (at - begin).num_seconds().abs() <= 5,
        "expected about {begin}, got {err}"
    );
    // A held job is given no start.
    let (code, _, err) = sbatch(&c, &["--test-only", "--hold", script]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with("sbatch: Job ")
            && err.ends_with(" has no expected start yet (JobHeldUser) in partition gpu\n"),
        "{err}"
    );
    // Errors print as a real submission's would and exit 1; nothing is created.
    let (code, _, err) = sbatch(&c, &["--test-only", "--gres=gpu:64", script]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("sbatch: error: Batch job submission failed: ") && err.contains("--gres"),
        "{err}"
    );
    let (code, _, err) = sbatch(&c, &["--test-only", "--time=soon", script]);
    assert_eq!(code, 1);
    assert!(err.contains("--time=soon"), "{err}");
    assert_eq!(job_rows(&c).await, 1);
    // POST /v1/jobs refuses --test-only rather than create a job.
    let (status, body) = c
        .call(
            reqwest::Method::POST,
            "/v1/jobs",
            Some(&c.token),
            Some(serde_json::json!({
                "script": "#!/bin/bash\n#SBATCH --test-only\ntrue\n"
            })),
        )
        .await;
    assert_eq!((status, body["field"].as_str()), (400, Some("--test-only")));
    assert_eq!(job_rows(&c).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sbatch_wait_prints_only_the_submission_and_exits_with_the_jobs_code() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let (code, out, err) = sbatch(
        &c,
        &["--wait", example("wait_exit_code.sbatch").to_str().unwrap()],
    );
    assert_eq!(code, 3, "{out}{err}");
    let id = submitted(&out);
    assert_eq!(out, format!("Submitted batch job {id}\n"));
    assert_eq!(err, "");
    let job = c.job(id).await;
    assert_eq!((job.state, job.exit_code), (JobState::Failed, Some(3)));
    let output = std::fs::read_to_string(c.dir.join(format!("ci-smoke-{id}.out"))).unwrap();
    assert_eq!(output, "smoke test output\n");
}

/// sbatch's input environment variables set options between the script's `#SBATCH` lines
/// and the command line, as Slurm orders them (command line > environment > script).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sbatch_environment_variables_beat_the_script_and_lose_to_the_command_line() {
    let c = TestCluster::start(Options {
        workers: 1,
        top_config: "cluster_name = \"east\"",
        ..Default::default()
    })
    .await;
    sbatch(&c, &["--version"]);
    let script = c.dir.join("named.sh");
    std::fs::write(
        &script,
        "#!/bin/bash\n#SBATCH -J from-script -t 7\n#SBATCH -M other\ntrue\n",
    )
    .unwrap();
    let script = script.to_str().unwrap();
    let run = |envs: &[(&str, &str)], args: &[&str]| {
        let out = std::process::Command::new(c.dir.join("sbatch-bin/sbatch"))
            .args(args)
            .arg("--hold")
            .arg(script)
            .current_dir(&c.dir)
            .env("BERTH_URL", &c.url)
            .env("BERTH_TOKEN", &c.token)
            .env("HOME", &c.dir)
            .env("XDG_CONFIG_HOME", c.dir.join("config"))
            .envs(envs.iter().copied())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // The script's `-M other` alone is refused; SBATCH_CLUSTERS beats it.
    let (code, _, err) = run(&[], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("No cluster 'other'"), "{err}");
    let env = [
        ("SBATCH_CLUSTERS", "east"),
        ("SBATCH_JOB_NAME", "from-env"),
        ("SBATCH_TIMELIMIT", "9"),
    ];
    let (code, out, err) = run(&env, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.ends_with(" on cluster east\n"), "{out}");
    let job = c
        .job(submitted(out.replace(" on cluster east", "").as_str()))
        .await;
    assert_eq!((job.name.as_str(), job.time_limit), ("from-env", Some(540)));
    // The command line beats the environment.
    let (code, out, err) = run(&env, &["-J", "from-cli"]);
    assert_eq!(code, 0, "{err}");
    let job = c
        .job(submitted(out.replace(" on cluster east", "").as_str()))
        .await;
    assert_eq!(job.name, "from-cli");
    // A refused option set from the environment is refused naming it.
    let (code, _, err) = run(
        &[("SBATCH_CLUSTERS", "east"), ("SBATCH_CONTAINER", "/x")],
        &[],
    );
    assert_eq!(code, 1);
    assert!(err.contains("--container"), "{err}");
}
