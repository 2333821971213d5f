//! What operators do to a running cluster: drain and resume nodes (with the jobs on them
//! finishing and the queue moving to the nodes that come back), define and delete
//! partitions that the scheduler honours, and manage QOS — through the api and the `berth`
//! command, with an operator's token, each call audited.

use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use berth_core::state::{JobState, NodeState};
use berth_core::wire::Node;
use reqwest::Method;
use serde_json::json;
use std::time::{Duration, Instant};

async fn node(c: &TestCluster, name: &str) -> Node {
    c.get(&format!("/v1/nodes/{name}")).await
}

async fn wait_node(c: &TestCluster, name: &str, state: NodeState) -> Node {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = node(c, name).await;
        if n.state == state {
            return n;
        }
        assert!(
            Instant::now() < deadline,
            "{name} never became {state:?}: {n:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_drain_and_resume_nodes() {
    let c = TestCluster::start(Options::default()).await;
    let olga = c.token_for("olga", Role::Operator);
    let ursula = c.token_for("ursula", Role::User);

    // A whole-node job runs somewhere; the operator drains that node and the other one.
    let big = c
        .submit("#!/bin/bash\nsleep 600\n", &["--gres=gpu:8"])
        .await;
    let big_job = c.wait_for(big, 60, |j| j.state == JobState::Running).await;
    let busy = big_job.allocations[0].node.clone();
    let other = if busy == "node-1" { "node-2" } else { "node-1" };
    let (code, out, err) = c.cli(&olga, &["node", "drain", &busy, "--reason", "bad fan"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("bad fan"), "{out}");
    let n = node(&c, &busy).await;
    assert_eq!(n.state, NodeState::Draining, "its job still runs: {n:?}");
    assert_eq!(n.reason.as_deref(), Some("bad fan"));
    // Who drained it and when: sinfo -R's USER and TIMESTAMP.
    assert_eq!(n.reason_user.as_deref(), Some("olga"), "{n:?}");
    let since = chrono::Utc::now() - n.reason_time.expect("a drain time");
    assert!(since < chrono::Duration::minutes(2), "{n:?}");
    let (code, out, err) = c.slurm_command("sinfo", &c.token, &["-R", "-n", &busy]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("bad fan"))
        .unwrap_or_else(|| panic!("{out}"));
    // `%20E %9u %19H %N`: the reason, who, when (local time), the nodes.
    assert_eq!(line[21..30].trim_end(), "olga", "{out}");
    assert!(
        chrono::NaiveDateTime::parse_from_str(&line[31..50], "%Y-%m-%dT%H:%M:%S").is_ok(),
        "{out}"
    );
    let (s, drained) = c
        .call(
            Method::POST,
            &format!("/v1/nodes/{other}/drain"),
            Some(&olga),
            Some(json!({"reason": "firmware update"})),
        )
        .await;
    assert_eq!(s, 200, "{drained}");
    assert_eq!(drained["state"], "DRAINED", "nothing runs there: {drained}");

    // Refusals: a plain user, no reason, an unknown node.
    let (s, p) = c
        .call(
            Method::POST,
            &format!("/v1/nodes/{other}/resume"),
            Some(&ursula),
            None,
        )
        .await;
    assert_eq!(s, 403, "{p}");
    let (s, p) = c
        .call(
            Method::POST,
            &format!("/v1/nodes/{other}/drain"),
            Some(&olga),
            Some(json!({"reason": "  "})),
        )
        .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("reason")), "{p}");
    for body in [
        json!({"reason": "line1\nline2\u{1b}[31m"}),
        // Bidirectional overrides would show the reason in another order than it reads.
        json!({"reason": "fan \u{202e}lautcA"}),
        json!({}),
    ] {
        let (s, p) = c
            .call(
                Method::POST,
                &format!("/v1/nodes/{other}/drain"),
                Some(&olga),
                Some(body),
            )
            .await;
        assert_eq!((s, p["field"].as_str()), (400, Some("reason")), "{p}");
    }
    // A host list naming an unknown node changes nothing.
    let (code, _, err) = c.cli(
        &olga,
        &["scontrol", "update", "NodeName=node-[1-3]", "State=RESUME"],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("node-3") && err.contains("nothing changed"),
        "{err}"
    );
    assert_eq!(node(&c, other).await.state, NodeState::Drained);
    let (code, _, err) = c.cli(&olga, &["node", "resume", "node-99"]);
    assert_ne!(code, 0);
    assert!(err.contains("node-99"), "{err}");

    // The big job keeps running; a new job waits while both nodes are drained.
    let small = c.submit("#!/bin/bash\necho ran\n", &["--gres=gpu:1"]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pending = c.job(small).await;
    assert_eq!(pending.state, JobState::Pending, "{pending:?}");
    assert_eq!(c.job(big).await.state, JobState::Running);

    // The drained node's job ends: the node is DRAINED, not back in service.
    let (s, _) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{big}/cancel"),
            Some(&c.token),
            None,
        )
        .await;
    assert_eq!(s, 200);
    c.wait_ended(big, 60).await;
    let n = wait_node(&c, &busy, NodeState::Drained).await;
    assert_eq!(n.reason.as_deref(), Some("bad fan"));
    assert_eq!(c.job(small).await.state, JobState::Pending);

    // Resuming it (as scontrol does) lets the queue run there.
    let (code, out, err) = c.cli(
        &olga,
        &[
            "scontrol",
            "update",
            &format!("NodeName={busy}"),
            "State=RESUME",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let done = c.wait_ended(small, 60).await;
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    assert_eq!(done.allocations[0].node, busy, "only {busy} was in service");
    let n = node(&c, &busy).await;
    assert_eq!(
        (n.state, n.reason, n.reason_user, n.reason_time),
        (NodeState::Idle, None, None, None)
    );
    let (code, _, err) = c.cli(
        &olga,
        &[
            "scontrol",
            "update",
            &format!("NodeName={other}"),
            "State=DRAIN",
        ],
    );
    assert_ne!(code, 0, "a drain needs a reason");
    assert!(err.contains("Reason"), "{err}");

    // Every change is in the audit log, as the operator.
    let (_, audit) = c
        .call(Method::GET, "/v1/audit?actor=olga", Some(&c.token), None)
        .await;
    let paths: Vec<&str> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"].as_u64() == Some(200))
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    for want in [
        format!("/v1/nodes/{busy}/drain"),
        format!("/v1/nodes/{other}/drain"),
        format!("/v1/nodes/{busy}/resume"),
    ] {
        assert!(paths.contains(&want.as_str()), "{want} not in {paths:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_define_partitions_the_scheduler_honours() {
    let c = TestCluster::start(Options::default()).await;
    let olga = c.token_for("olga", Role::Operator);
    let ursula = c.token_for("ursula", Role::User);

    // A partition of node-2 only, with a 10-minute MaxTime and a higher tier.
    let (code, out, err) = c.cli(
        &olga,
        &[
            "partition",
            "set",
            "debug",
            "Nodes=node-2",
            "MaxTime=10",
            "DefaultTime=5",
            "PriorityTier=2",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("PartitionName=debug"), "{out}");
    assert!(out.contains("MaxTime=00:10:00"), "{out}");
    let (s, p) = c
        .call(Method::GET, "/v1/partitions/debug", Some(&ursula), None)
        .await;
    assert_eq!(s, 200, "{p}");
    assert_eq!(p["nodes"], json!(["node-2"]));
    assert_eq!(p["priority_tier"], 2);
    assert_eq!(p["total_gpus"], 8);
    // Users may read partitions but not change them; bad definitions name the field.
    let (s, _) = c
        .call(
            Method::PUT,
            "/v1/partitions/mine",
            Some(&ursula),
            Some(json!({})),
        )
        .await;
    assert_eq!(s, 403);
    for (body, field) in [
        (json!({"default_time": 600, "max_time": 60}), "default_time"),
        (json!({"allowed_qos": ["no-such-qos"]}), "allowed_qos"),
        (json!({"nodes": ["bad name"]}), "nodes"),
        (json!({"max_nodes": 0}), "max_nodes"),
    ] {
        let (s, p) = c
            .call(Method::PUT, "/v1/partitions/bad", Some(&olga), Some(body))
            .await;
        assert_eq!((s, p["field"].as_str()), (400, Some(field)), "{p}");
    }
    let (s, _) = c
        .call(Method::GET, "/v1/partitions/bad", Some(&olga), None)
        .await;
    assert_eq!(s, 404, "a refused definition leaves nothing behind");

    // Jobs in it run only on node-2 and get its DefaultTime; over MaxTime they wait.
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(
            c.submit("#!/bin/bash\nsleep 600\n", &["-p", "debug", "--gres=gpu:1"])
                .await,
        );
    }
    for id in &ids {
        let j = c.wait_for(*id, 60, |j| j.state == JobState::Running).await;
        assert_eq!(j.allocations[0].node, "node-2", "{j:?}");
        assert_eq!(j.time_limit, Some(300));
    }
    match c
        .try_submit("#!/bin/bash\ntrue\n", &["-p", "debug", "--time=20"])
        .await
    {
        Err((400, p)) => assert_eq!(p.field.as_deref(), Some("--time"), "{p:?}"),
        other => panic!("over MaxTime is refused at submission: {other:?}"),
    }
    // A job that fits the limit waits for GPUs; lowering MaxTime under it makes it wait
    // for the partition instead, from the scheduler's next pass.
    let long = c
        .submit(
            "#!/bin/bash\ntrue\n",
            &["-p", "debug", "--time=8", "--gres=gpu:8"],
        )
        .await;
    c.wait_for(long, 30, |j| j.reason.as_deref() == Some("Resources"))
        .await;
    let (code, out, err) = c.cli(&olga, &["partition", "set", "debug", "MaxTime=5"]);
    assert_eq!(code, 0, "{out}{err}");
    let j = c
        .wait_for(long, 30, |j| {
            j.reason.as_deref() == Some("PartitionTimeLimit")
        })
        .await;
    assert_eq!(j.state, JobState::Pending);

    // Deleting it is refused while jobs are in it, allowed once they have ended.
    let (s, p) = c
        .call(Method::DELETE, "/v1/partitions/debug", Some(&olga), None)
        .await;
    assert_eq!(
        (s, p["code"].as_str()),
        (409, Some("partition_in_use")),
        "{p}"
    );
    for id in ids.iter().chain([&long]) {
        c.call(
            Method::POST,
            &format!("/v1/jobs/{id}/cancel"),
            Some(&c.token),
            None,
        )
        .await;
        c.wait_ended(*id, 60).await;
    }
    let (code, out, err) = c.cli(&olga, &["partition", "delete", "debug"]);
    assert_eq!(code, 0, "{out}{err}");
    let (s, _) = c
        .call(Method::GET, "/v1/partitions/debug", Some(&olga), None)
        .await;
    assert_eq!(s, 404);
    let ended = c.job(ids[0]).await;
    assert_eq!(
        ended.partition, "debug",
        "ended jobs keep their partition's name"
    );
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/jobs",
            Some(&c.token),
            Some(json!({"script": "#!/bin/bash\ntrue\n", "args": ["-p", "debug"]})),
        )
        .await;
    assert_eq!(s, 400, "no partition debug any more");

    // A partition with a MaxTime and no DefaultTime gives jobs its MaxTime; scontrol
    // update of a missing partition is refused instead of making one.
    let (code, out, err) = c.cli(
        &olga,
        &["scontrol", "create", "PartitionName=capped", "MaxTime=10"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let capped = c.submit("#!/bin/bash\ntrue\n", &["-p", "capped"]).await;
    assert_eq!(c.job(capped).await.time_limit, Some(600));
    let (code, _, err) = c.cli(
        &olga,
        &["scontrol", "update", "PartitionName=cappd", "MaxTime=5"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("Invalid partition name"), "{err}");
    let (s, _) = c
        .call(Method::GET, "/v1/partitions/cappd", Some(&olga), None)
        .await;
    assert_eq!(s, 404);
    let (code, _, err) = c.cli(
        &olga,
        &["scontrol", "create", "PartitionName=capped", "MaxTime=5"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("already exists"), "{err}");
    // Limits past 100 years are refused (they overflowed the scheduler's arithmetic).
    match c
        .try_submit("#!/bin/bash\ntrue\n", &["-t", "106751991167300-00:00:00"])
        .await
    {
        Err((400, p)) => assert!(
            p.field.as_deref().is_some_and(|f| f.starts_with("-t"))
                && p.detail.contains("100 years"),
            "{p:?}"
        ),
        other => panic!("{other:?}"),
    }
    let (s, p) = c
        .call(
            Method::PUT,
            "/v1/partitions/huge",
            Some(&olga),
            Some(json!({"max_time": 9_223_372_036_854_775_807u64})),
        )
        .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("max_time")), "{p}");

    // A new default takes over from the old one, which cannot be deleted while default.
    let (s, p) = c
        .call(Method::DELETE, "/v1/partitions/gpu", Some(&olga), None)
        .await;
    assert_eq!(
        (s, p["code"].as_str()),
        (409, Some("default_partition")),
        "{p}"
    );
    let (code, out, err) = c.cli(
        &olga,
        &[
            "scontrol",
            "create",
            "PartitionName=main",
            "Default=YES",
            "MaxTime=UNLIMITED",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let job = c.submit("#!/bin/bash\ntrue\n", &[]).await;
    assert_eq!(c.job(job).await.partition, "main");
    let (_, list) = c
        .call(Method::GET, "/v1/partitions", Some(&ursula), None)
        .await;
    let defaults: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["is_default"] == true)
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(defaults, vec!["main"]);

    // Operators manage QOS too.
    let (code, out, err) = c.cli(&olga, &["qos", "set", "urgent", "Priority=100"]);
    assert_eq!(code, 0, "{out}{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_running_only_cpu_jobs_is_mixed_not_idle() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    assert_eq!(node(&c, "node-1").await.state, NodeState::Idle);
    let id = c.submit("#!/bin/bash\nsleep 600\n", &["-c", "1"]).await;
    let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    assert_eq!(job.gpus_per_node, 0, "{job:?}");
    let n = node(&c, "node-1").await;
    assert_eq!((n.state, n.gpus_allocated), (NodeState::Mixed, 0), "{n:?}");
    let (_, out, _) = c.cli(&c.token, &["nodes", "-N"]);
    assert!(out.contains("mix"), "{out}");
}

/// Issue 29: a node whose GPUs are all held but whose CPUs are not is MIXED, as Slurm
/// counts node states by CPUs; once its CPUs are all held too it is ALLOCATED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_every_gpu_held_and_cpus_free_is_mixed() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100",
        ..Default::default()
    })
    .await;
    let n = node(&c, "node-1").await;
    assert!(n.cpus_effective >= 2, "{n:?}");
    let gpus = c
        .submit(
            "#!/bin/bash\nsleep 600\n",
            &["--gres=gpu:2", "-c", "1", "--mem=100M"],
        )
        .await;
    c.wait_for(gpus, 60, |j| j.state == JobState::Running).await;
    let n = node(&c, "node-1").await;
    assert_eq!((n.state, n.gpus_allocated), (NodeState::Mixed, 2), "{n:?}");
    let (_, out, _) = c.slurm_command("sinfo", &c.token, &["-h", "-o", "%t"]);
    assert_eq!(out.trim(), "mix", "{out}");
    // The rest of its CPUs: ALLOCATED.
    let rest = (n.cpus_effective - n.cpus_allocated).to_string();
    let cpus = c.submit("#!/bin/bash\nsleep 600\n", &["-c", &rest]).await;
    c.wait_for(cpus, 60, |j| j.state == JobState::Running).await;
    let n = node(&c, "node-1").await;
    assert_eq!(n.state, NodeState::Allocated, "{n:?}");
    let (_, out, _) = c.slurm_command("sinfo", &c.token, &["-h", "-o", "%t"]);
    assert_eq!(out.trim(), "alloc", "{out}");
}

/// `[qos.NAME]` and `[partitions.NAME]` in the server's configuration file: applied when
/// the api starts (the scheduler honours them like API-defined ones), and a bad definition
/// stops the api with an error naming the table and field, writing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qos_and_partitions_defined_in_the_configuration_file() {
    // `scheduler_config` lands at the end of `[scheduler]`; the tables after it are the
    // file's own top-level tables.
    let c = TestCluster::start(Options {
        workers: 1,
        scheduler_config: "
[qos.urgent]
priority = 500
preempt = [\"normal\"]
preempt_mode = \"REQUEUE\"
max_tres_per_user = { gpu = 2 }

[partitions.short]
nodes = [\"node-1\"]
default_time = 120
max_time = 600
priority_tier = 3
allowed_qos = [\"urgent\"]
",
        ..Options::default()
    })
    .await;
    let ursula = c.token_for("ursula", Role::User);
    let (s, q) = c
        .call(Method::GET, "/v1/qos/urgent", Some(&ursula), None)
        .await;
    assert_eq!(s, 200, "{q}");
    assert_eq!(q["spec"]["priority"], 500);
    assert_eq!(q["spec"]["preempt"], json!(["normal"]));
    assert_eq!(q["spec"]["max_tres_per_user"], json!({"gpu": 2}));
    let (s, p) = c
        .call(Method::GET, "/v1/partitions/short", Some(&ursula), None)
        .await;
    assert_eq!(s, 200, "{p}");
    assert_eq!(p["max_time"], 600);
    assert_eq!(p["allowed_qos"], json!(["urgent"]));
    let (s, p) = c
        .call(Method::GET, "/v1/partitions/gpu", Some(&ursula), None)
        .await;
    assert_eq!((s, p["is_default"].as_bool()), (200, Some(true)), "{p}");

    // The partition takes only its QOS; its jobs get its DefaultTime and run, and the
    // QOS's per-user GPU limit holds the second 2-GPU job back.
    match c
        .try_submit("#!/bin/bash\ntrue\n", &["-p", "short", "--gres=gpu:1"])
        .await
    {
        Err((_, p)) => assert_eq!(p.field.as_deref(), Some("--qos"), "{p:?}"),
        Ok(id) => panic!("job {id} was taken without the partition's QOS"),
    }
    let first = c
        .submit(
            "#!/bin/bash\nsleep 600\n",
            &["-p", "short", "--qos=urgent", "--gres=gpu:2"],
        )
        .await;
    let second = c
        .submit(
            "#!/bin/bash\nsleep 600\n",
            &["-p", "short", "--qos=urgent", "--gres=gpu:2"],
        )
        .await;
    let j = c
        .wait_for(first, 60, |j| j.state == JobState::Running)
        .await;
    assert_eq!(j.time_limit, Some(120));
    let j = c
        .wait_for(second, 30, |j| {
            j.reason.as_deref() == Some("QOSMaxGRESPerUser")
        })
        .await;
    assert_eq!(j.state, JobState::Pending);

    // A file whose QOS preempts an unknown QOS: the api exits naming the field, and
    // nothing of that file is written.
    let bad = c.dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[qos.gold]\npriority = 1\n[qos.silver]\npreempt = [\"bronze\"]\n",
    )
    .unwrap();
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
    assert!(
        stderr.contains("qos.silver.preempt: no QOS bronze"),
        "{stderr}"
    );
    let (s, _) = c
        .call(Method::GET, "/v1/qos/gold", Some(&ursula), None)
        .await;
    assert_eq!(s, 404, "nothing of a refused file is written");
}
