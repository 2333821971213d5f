//! Node resources (issue 11): what workers declare (`--simulate-cpus`, `--simulate-memory`,
//! `--feature`), what operators set (`PATCH /v1/nodes/{name}`, `berth node set`,
//! `scontrol update NodeName=…`, `[nodes.NAME]` in the server config), that operators'
//! values survive a worker's re-registration, sinfo's CPU, memory and feature fields, and
//! a job's cpuset.

use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use berth_core::state::JobState;
use berth_core::wire::Node;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

async fn node(c: &TestCluster, name: &str) -> Node {
    c.get(&format!("/v1/nodes/{name}")).await
}

/// Workers declare simulated CPUs, memory and features; operators (not users) change them
/// by REST, `berth node set` and `scontrol update`; bad values are refused naming the
/// field; the values survive the worker's re-registration; sinfo shows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_configure_nodes_and_the_settings_survive_reregistration() {
    let mut c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            ..Options::default()
        },
        &[
            "--simulate-cpus",
            "96",
            "--simulate-memory",
            "1T",
            "--feature",
            "a100",
        ],
    )
    .await;
    let n = node(&c, "node-1").await;
    assert_eq!(
        (n.cpus, n.cpus_effective, n.memory_mib, n.weight),
        (96, 96, 1024 * 1024, 1),
        "{n:?}"
    );
    assert_eq!(n.features, vec!["a100"]);

    // A plain user may not; an operator may.
    let user = c.token_for("ursula", Role::User);
    let operator = c.token_for("olga", Role::Operator);
    let change = json!({"features": ["h100", "ib"], "weight": 10, "core_spec_count": 4,
                        "mem_spec_limit_mib": 8192});
    let (s, p) = c
        .call(
            Method::PATCH,
            "/v1/nodes/node-1",
            Some(&user),
            Some(change.clone()),
        )
        .await;
    assert_eq!(s, 403, "{p}");
    assert_eq!(node(&c, "node-1").await.features, vec!["a100"]);
    let (s, n) = c
        .call(
            Method::PATCH,
            "/v1/nodes/node-1",
            Some(&operator),
            Some(change),
        )
        .await;
    assert_eq!(s, 200, "{n}");
    assert_eq!(n["features"], json!(["h100", "ib"]));
    assert_eq!(n["weight"], 10);
    assert_eq!(n["cpus_effective"], 92);
    assert_eq!(n["memory_effective_mib"], 1024 * 1024 - 8192);

    // Bad values are refused naming the field, and change nothing.
    for (body, field) in [
        (json!({"cpus": 0}), "cpus"),
        (json!({"core_spec_count": 96}), "core_spec_count"),
        (
            json!({"mem_spec_limit_mib": 1024 * 1024}),
            "mem_spec_limit_mib",
        ),
        (json!({"features": ["a b"]}), "features"),
        (json!({"weight": -1}), "weight"),
        (json!({"sockets": 2}), "sockets"),
        // More CPUs than a node can have (Slurm's 16-bit count).
        (json!({"cpus": 65_536}), "cpus"),
    ] {
        let (s, p) = c
            .call(
                Method::PATCH,
                "/v1/nodes/node-1",
                Some(&operator),
                Some(body.clone()),
            )
            .await;
        assert_eq!(s, 400, "{body}: {p}");
        assert!(
            p["field"] == field || p["detail"].as_str().unwrap_or("").contains(field),
            "{body}: {p}"
        );
    }
    let n = node(&c, "node-1").await;
    assert_eq!((n.cpus, n.core_spec_count, n.weight), (96, 4, 10), "{n:?}");
    let (s, _) = c
        .call(
            Method::PATCH,
            "/v1/nodes/node-9",
            Some(&operator),
            Some(json!({"weight": 1})),
        )
        .await;
    assert_eq!(s, 404);

    // `berth node set` and `scontrol update NodeName=…` (slurm.conf's names).
    let (code, out, err) = c.cli(
        &operator,
        &["node", "set", "node-1", "CPUs=64", "RealMemory=512G"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("CPUS(A/I/O/T)") && out.contains("0/60/4/64"),
        "{out}"
    );
    let (code, _, err) = c.cli(&user, &["node", "set", "node-1", "Weight=1"]);
    assert_ne!(code, 0);
    assert!(err.contains("403") || err.contains("operator"), "{err}");
    let (code, _, err) = c.cli(&operator, &["node", "set", "node-1", "Sockets=2"]);
    assert_ne!(code, 0);
    assert!(err.contains("Sockets"), "{err}");
    let (code, _, err) = c.cli(&operator, &["node", "set", "node-1", "RealMemory=lots"]);
    assert_ne!(code, 0);
    assert!(err.contains("RealMemory"), "{err}");
    let (code, out, err) = c.cli(
        &operator,
        &["scontrol", "update", "NodeName=node-1", "Weight=5"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let n = node(&c, "node-1").await;
    assert_eq!(
        (n.cpus, n.memory_mib, n.weight),
        (64, 512 * 1024, 5),
        "{n:?}"
    );

    // The worker registers again (a restart): what operators set stays.
    let db = c.db().await;
    sqlx::query("UPDATE nodes SET hostname = 'before-restart' WHERE name = 'node-1'")
        .execute(&db)
        .await
        .unwrap();
    c.restart("node-1");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let host: String = sqlx::query_scalar("SELECT hostname FROM nodes WHERE name = 'node-1'")
            .fetch_one(&db)
            .await
            .unwrap();
        if host != "before-restart" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "node-1 did not register again:\n{}",
            c.log("node-1")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let n = node(&c, "node-1").await;
    assert_eq!(
        (n.cpus, n.memory_mib, n.weight, n.core_spec_count),
        (64, 512 * 1024, 5, 4),
        "{n:?}"
    );
    assert_eq!(n.features, vec!["h100", "ib"]);

    // `default` returns a setting to what the worker reports.
    let (code, out, err) = c.cli(&operator, &["node", "set", "node-1", "CPUs=default"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(node(&c, "node-1").await.cpus, 96);

    // sinfo's fields: %C allocated/idle/other/total (CoreSpecCount's 4 are "other"),
    // %c CPUs, %m memory, %f features, %w weight.
    let (code, out, err) = c.cli(&user, &["nodes", "-o", "%N %C %c %m %f %w"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        vec![
            "NODELIST CPUS(A/I/O/T) CPUS MEMORY AVAIL_FEATURES WEIGHT",
            "node-1 0/92/4/96 96 524288 h100,ib 5",
        ],
        "{out}"
    );
    let (code, _, err) = c.cli(&user, &["nodes", "-o", "%N %v"]);
    assert_ne!(code, 0);
    assert!(err.contains("%v"), "{err}");
    let (_, out, _) = c.cli(&user, &["nodes", "--gpus"]);
    assert!(
        out.contains("0/92/4/96") && out.contains("h100,ib"),
        "{out}"
    );
}

/// `[nodes.NAME]` in the server's configuration: applied when the api starts, also to a
/// node whose worker registers later; a bad value stops the api naming the table and field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_settings_from_the_configuration_file() {
    let mut c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100",
        scheduler_config: "
[nodes.node-1]
features = [\"h100\", \"nvlink\"]
weight = 7
core_spec_count = 2
mem_spec_limit_mib = 1024

[nodes.node-2]
cpus = 4
memory_mib = 8192
",
        ..Options::default()
    })
    .await;
    // 2 simulated GPUs: 24 CPUs and 256 GiB by default, less the reserves.
    let n = node(&c, "node-1").await;
    assert_eq!(n.features, vec!["h100", "nvlink"]);
    assert_eq!(
        (
            n.weight,
            n.cpus,
            n.cpus_effective,
            n.memory_mib,
            n.memory_effective_mib
        ),
        (7, 24, 22, 256 * 1024, 256 * 1024 - 1024),
        "{n:?}"
    );
    // A node named before it ever registered takes its settings when it does.
    c.start_worker("node-2");
    let n = c.wait_node("node-2", 60, |_| true).await;
    assert_eq!((n.cpus, n.memory_mib, n.weight), (4, 8192, 1), "{n:?}");

    let bad = c.dir.join("bad-nodes.toml");
    std::fs::write(&bad, "[nodes.node-1]\ncpus = 0\n").unwrap();
    let out = std::process::Command::new(crate::cluster::berth_bin())
        .args([
            "server",
            "--role",
            "api",
            "--listen",
            "127.0.0.1:0",
            "--config",
        ])
        .arg(&bad)
        .env("DATABASE_URL", &c.db_url)
        .env("BERTH_JWT_SECRET", "a-test-secret-of-enough-length")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("nodes.node-1.cpus"), "{stderr}");
    assert_eq!(node(&c, "node-1").await.cpus, 24);
}

/// A job runs only on its allocated CPUs (its cpuset, or its affinity where there is no
/// cpuset controller), and its environment says how many it has. On a node declaring 2
/// CPUs, a `-c 1` job's `Cpus_allowed_list` holds one CPU. Needs the scheduler's commit
/// to fill the allocation's CPU ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_cpuset_holds_its_cores() {
    one_cpu_job(&["--simulate-cpus", "2", "--simulate-memory", "4G"]).await;
}

/// Without cgroups (`--no-cgroups`) the shepherd pins the job to its CPUs instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cgroups_a_job_is_pinned_to_its_cores() {
    one_cpu_job(&[
        "--simulate-cpus",
        "2",
        "--simulate-memory",
        "4G",
        "--no-cgroups",
    ])
    .await;
}

/// A step's tasks on every node of a job, the batch node's and the others, run only on
/// the job's CPUs there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_tasks_on_every_node_hold_only_the_jobs_cores() {
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 2,
            gpus: "1xH100",
            ..Options::default()
        },
        &["--simulate-cpus", "2", "--simulate-memory", "4G"],
    )
    .await;
    let id = c
        .submit(
            "#!/bin/bash
srun bash -c 'echo on=$SLURMD_NODENAME $(grep Cpus_allowed_list /proc/self/status)'
",
            &["-N", "2", "-c", "1"],
        )
        .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    let out = c.output(id).await;
    let lists: Vec<(&str, &str)> = out
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("on=")?;
            let (node, list) = rest.split_once(" Cpus_allowed_list:")?;
            Some((node, list.trim()))
        })
        .collect();
    assert_eq!(lists.len(), 2, "{out}");
    assert_ne!(lists[0].0, lists[1].0, "{out}");
    for (node, list) in lists {
        assert!(
            !list.is_empty() && list.chars().all(|ch| ch.is_ascii_digit()),
            "a task on {node} may run on CPUs {list}, not on one\n{out}"
        );
    }
}

async fn one_cpu_job(worker_args: &[&str]) {
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            gpus: "1xH100",
            ..Options::default()
        },
        worker_args,
    )
    .await;
    let id = c
        .submit(
            "#!/bin/bash\ngrep Cpus_allowed_list /proc/self/status\necho cpus=$SLURM_CPUS_ON_NODE per_node=$SLURM_JOB_CPUS_PER_NODE\n",
            &["-c", "1"],
        )
        .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    let out = c.output(id).await;
    assert!(out.contains("cpus=1 per_node=1"), "{out}");
    let list = out
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or_else(|| panic!("{out}"))
        .trim()
        .to_string();
    // One CPU: a single id, no range or list.
    assert!(
        !list.is_empty() && list.chars().all(|ch| ch.is_ascii_digit()),
        "the job may run on CPUs {list}, not on one\n{out}"
    );
}

/// Issue 27: a node's view shows a plain user the job holding a GPU only when it is a job
/// they may see; another tenant's shows as allocated, without its id or its GPU use (an
/// invisible job answers like an absent one, SECURITY.md). Admins see every job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_shows_another_tenants_job_only_as_an_allocated_gpu() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100",
        poll_wait: Some(1),
        ..Default::default()
    })
    .await;
    let id = c
        .submit_as("ursula", "#!/bin/bash\nsleep 60\n", &["--gres=gpu:1"], &[])
        .await;
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let held = |view: &serde_json::Value| -> Vec<serde_json::Value> {
        view["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["allocated"] == true)
            .cloned()
            .collect()
    };
    let as_user = |user: &str| c.token_for(user, Role::User);
    for (who, token, sees) in [
        ("the owner", as_user("ursula"), true),
        ("another tenant", as_user("otto"), false),
        ("an admin", c.token.clone(), true),
    ] {
        let (s, one) = c
            .call(reqwest::Method::GET, "/v1/nodes/node-1", Some(&token), None)
            .await;
        assert_eq!(s, 200, "{one}");
        let (s, list) = c
            .call(reqwest::Method::GET, "/v1/nodes", Some(&token), None)
            .await;
        assert_eq!(s, 200, "{list}");
        for view in [&one, &list["items"][0]] {
            let gpus = held(view);
            assert_eq!(gpus.len(), 1, "{who}: {view}");
            assert_eq!(view["gpus_allocated"], 1, "{who}: {view}");
            if sees {
                assert_eq!(gpus[0]["job_id"], id, "{who}: {view}");
            } else {
                assert!(gpus[0]["job_id"].is_null(), "{who}: {view}");
                assert!(gpus[0]["utilization_pct"].is_null(), "{who}: {view}");
                assert!(gpus[0]["memory_used_mib"].is_null(), "{who}: {view}");
            }
        }
    }
}
