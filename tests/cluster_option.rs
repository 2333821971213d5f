//! The cluster's name and `-M/--clusters` (issue 29): a cluster configured as `gpu-east`
//! says so (`GET /v1/cluster`, slurmrestd's `meta`, the job's `SLURM_CLUSTER_NAME`);
//! sbatch, squeue, sinfo, scancel, scontrol and sacct take `-M all` and `-M gpu-east` as
//! this cluster, printing as Slurm prints for one cluster of `-M`; another name is refused
//! in Slurm's words, with nothing submitted or cancelled.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;

const REFUSED_OTHER: &str = "No cluster 'other' known by database.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_six_commands_take_all_and_this_clusters_name_and_refuse_another() {
    let c = TestCluster::start(Options {
        workers: 1,
        top_config: "cluster_name = \"gpu-east\"",
        ..Default::default()
    })
    .await;
    let token = c.token.clone();
    let run = |name: &str, args: &[&str]| c.slurm_command(name, &token, args);

    // The api says the name; slurmrestd's answers carry it.
    let info: serde_json::Value = c.get("/v1/cluster").await;
    assert_eq!(info["name"], "gpu-east", "{info}");
    let jobs: serde_json::Value = c.get("/slurm/v0.0.44/jobs/").await;
    assert_eq!(jobs["meta"]["slurm"]["cluster"], "gpu-east", "{jobs}");

    // sbatch: `on cluster NAME` (and `ID;NAME` when parsable), as Slurm's sbatch with -M.
    let (code, out, err) = run(
        "sbatch",
        &["-M", "all", "--wrap", "echo name=$SLURM_CLUSTER_NAME"],
    );
    assert_eq!(code, 0, "{err}");
    let ran: i64 = out
        .trim()
        .strip_prefix("Submitted batch job ")
        .and_then(|rest| rest.strip_suffix(" on cluster gpu-east"))
        .unwrap_or_else(|| panic!("{out}"))
        .parse()
        .unwrap();
    let (code, out, err) = run(
        "sbatch",
        &[
            "--clusters=gpu-east",
            "--parsable",
            "--begin=now+1hour",
            "--wrap",
            "true",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (id, name) = out
        .trim()
        .split_once(';')
        .unwrap_or_else(|| panic!("{out}"));
    let pending: i64 = id.parse().unwrap();
    assert_eq!(name, "gpu-east");
    // Slurm's other spelling; `--clus` is ambiguous (`--cluster-constraint`) as in Slurm.
    let (code, out, err) = run(
        "sbatch",
        &["--cluster=all", "--begin=now+1hour", "--wrap", "true"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.ends_with(" on cluster gpu-east\n"), "{out}");
    // Without -M: Slurm's line alone.
    let (code, out, err) = run("sbatch", &["--begin=now+1hour", "--wrap", "true"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Submitted batch job ") && !out.contains("cluster"),
        "{out}"
    );

    // Another cluster: refused in Slurm's words, nothing submitted, from the command line,
    // from the script, or through the REST api.
    let before = c.get::<serde_json::Value>("/v1/jobs?limit=1000").await["items"]
        .as_array()
        .unwrap()
        .len();
    let (code, out, err) = run("sbatch", &["-M", "other", "--wrap", "true"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains(&format!("sbatch: error: {REFUSED_OTHER}")),
        "{err}"
    );
    assert!(
        err.contains("'other' can't be reached now, or it is an invalid entry for --cluster."),
        "{err}"
    );
    let (code, _, err) = run("sbatch", &["-M", "gpu-east,other", "--wrap", "true"]);
    assert_eq!(code, 1);
    assert!(err.contains(REFUSED_OTHER), "{err}");
    let (status, problem) = c
        .try_submit("#!/bin/sh\n#SBATCH -M other\ntrue\n", &[])
        .await
        .unwrap_err();
    assert_eq!(status, 400);
    assert_eq!(problem.field.as_deref(), Some("clusters"), "{problem:?}");
    assert!(problem.detail.contains(REFUSED_OTHER), "{problem:?}");
    let after = c.get::<serde_json::Value>("/v1/jobs?limit=1000").await["items"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after, "a refused submission made a job");

    // The job ran with the cluster's name in its environment.
    let job = c.wait_ended(ran, 60).await;
    assert_eq!(job.state, JobState::Completed);
    assert!(c.output(ran).await.contains("name=gpu-east"));

    // squeue and sinfo: `CLUSTER: NAME` above the table (none with -h), as Slurm prints
    // each cluster of -M; the table itself is the one without -M.
    for command in ["squeue", "sinfo"] {
        let (code, plain, err) = run(command, &[]);
        assert_eq!(code, 0, "{err}");
        for value in ["all", "gpu-east", "GPU-EAST", "-1"] {
            let (code, out, err) = run(command, &["-M", value]);
            assert_eq!(code, 0, "{command} -M {value}: {err}");
            assert_eq!(
                out,
                format!("CLUSTER: gpu-east\n{plain}"),
                "{command} -M {value}"
            );
        }
        let (code, out, err) = run(command, &["--clusters=all", "--noheader"]);
        assert_eq!(code, 0, "{err}");
        assert!(!out.contains("CLUSTER:"), "{out}");
        let (code, out, err) = run(command, &["-M", "other"]);
        assert_eq!(code, 1, "{command}: {out}");
        assert!(
            err.contains(&format!("{command}: error: {REFUSED_OTHER}")),
            "{err}"
        );
        assert!(out.is_empty(), "{out}");
    }
    let (_, out, _) = run("squeue", &["-M", "all", "-j", &pending.to_string()]);
    assert!(out.contains(&pending.to_string()), "{out}");

    // sacct: as without the option (Slurm prints one cluster's runs alike); -L too.
    let (code, plain, err) = run("sacct", &["-j", &ran.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(plain.contains("COMPLETED"), "{plain}");
    let ran_text = ran.to_string();
    for args in [&["-M", "all"][..], &["--clusters", "gpu-east"], &["-L"]] {
        let args = [args, &["-j", &ran_text]].concat();
        let (code, out, err) = run("sacct", &args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(out, plain, "{args:?}");
    }
    let (code, _, err) = run("sacct", &["-M", "other", "-j", &ran.to_string()]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("sacct: error: {REFUSED_OTHER}")),
        "{err}"
    );

    // scontrol: -M before the command, or SLURM_CLUSTERS.
    let (code, out, err) = run(
        "scontrol",
        &["-M", "all", "show", "job", &pending.to_string()],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("JobId={pending}")), "{out}");
    let (code, _, err) = run(
        "scontrol",
        &["-Mother", "show", "job", &pending.to_string()],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("scontrol: error: {REFUSED_OTHER}")),
        "{err}"
    );
    let squeue_link = c.dir.join("slurm-bin/squeue");
    let env_run = |value: &str| {
        std::process::Command::new(&squeue_link)
            .current_dir(&c.dir)
            .env("BERTH_URL", &c.url)
            .env("BERTH_TOKEN", &token)
            .env("HOME", &c.dir)
            .env("XDG_CONFIG_HOME", c.dir.join("config"))
            .env("SLURM_CLUSTERS", value)
            .output()
            .unwrap()
    };
    let refused = env_run("other");
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains(REFUSED_OTHER));
    let taken = env_run("gpu-east");
    assert!(taken.status.success());
    assert!(String::from_utf8_lossy(&taken.stdout).starts_with("CLUSTER: gpu-east\n"));

    // scancel: another cluster touches nothing; this one cancels.
    let (code, _, err) = run("scancel", &["-M", "other", &pending.to_string()]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("scancel: error: {REFUSED_OTHER}")),
        "{err}"
    );
    assert_eq!(c.job(pending).await.state, JobState::Pending);
    let (code, _, err) = run("scancel", &["-M", "all", &pending.to_string()]);
    assert_eq!(code, 0, "{err}");
    let job = c.wait_ended(pending, 30).await;
    assert_eq!(job.state, JobState::Cancelled);
}
