//! Workers joining with bootstrap tokens and holding credentials for their own node only.

use crate::cluster::{berth_bin, Options, TestCluster};
use reqwest::Method;
use serde_json::json;
use std::time::{Duration, Instant};

async fn wait_node(c: &TestCluster, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let nodes: serde_json::Value = c.get("/v1/nodes").await;
        let up = nodes["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["name"] == name && n["last_heartbeat"].is_string());
        if up {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name} did not join:\n{}",
            c.log(name)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_joins_with_a_one_time_bootstrap_token_and_acts_only_as_its_node() {
    let mut c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    // berth token bootstrap (admins only).
    let out = std::process::Command::new(berth_bin())
        .args(["token", "bootstrap", "--ttl-minutes", "10"])
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &c.token)
        .env("HOME", &c.dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bootstrap = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(bootstrap.starts_with("berth_boot_"));
    let user = c.token_for("uma", berth_core::auth::Role::User);
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/bootstrap-tokens",
            Some(&user),
            Some(json!({})),
        )
        .await;
    assert_eq!(s, 403);

    // The worker joins with it and keeps its credential.
    let state = c.dir.join("node-b");
    let state_arg = state.to_str().unwrap().to_string();
    let url = c.url.clone();
    let args = [
        "worker",
        "--api",
        url.as_str(),
        "--bootstrap-token",
        bootstrap.as_str(),
        "--name",
        "node-b",
        "--simulate-gpus",
        "2xA100",
        "--state-dir",
        state_arg.as_str(),
        "--kill-wait",
        "1",
    ];
    c.spawn_berth("node-b", &args);
    wait_node(&c, "node-b").await;
    let credential = std::fs::read_to_string(state.join("node-credential")).unwrap();
    assert!(credential.starts_with("berth_node_"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(state.join("node-credential"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "the credential file is private");

    // One-time: a second join is refused; a bootstrap token is no bearer for other routes.
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/join",
            Some(&bootstrap),
            Some(json!({"name": "node-c"})),
        )
        .await;
    assert_eq!(s, 401);
    let (s, _) = c
        .call(Method::GET, "/v1/nodes", Some(&bootstrap), None)
        .await;
    assert_eq!(s, 401);

    // The credential works for node-b's routes only.
    let sync = json!({"wait_seconds": 0});
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/node-b/sync",
            Some(&credential),
            Some(sync.clone()),
        )
        .await;
    assert_eq!(s, 200);
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/node-1/sync",
            Some(&credential),
            Some(sync),
        )
        .await;
    assert_eq!(s, 403);
    let (s, _) = c
        .call(Method::GET, "/v1/jobs", Some(&credential), None)
        .await;
    assert_eq!(s, 403);
    // It uploads output only for jobs on node-b.
    let job = c.submit("#!/bin/bash\ntrue\n", &["--hold"]).await;
    let (s, _) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{job}/output"),
            Some(&credential),
            Some(json!({"run": 0, "stream": "stdout", "offset": 0, "data": "forged"})),
        )
        .await;
    assert_eq!(s, 404);

    // A restart reuses the kept credential (the bootstrap token is spent).
    c.stop("node-b");
    c.spawn_berth("node-b", &args);
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/node-b/sync",
            Some(&credential),
            Some(json!({"wait_seconds": 0})),
        )
        .await;
    assert_eq!(s, 200);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !c.log("node-b").contains("registered") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        c.log("node-b").contains("registered"),
        "the restarted worker registers with its kept credential:\n{}",
        c.log("node-b")
    );
    // Restarted without any token (none on the command line or in the environment), it
    // starts with the credential it kept.
    c.stop("node-b");
    let before = c.log("node-b").matches("registered").count();
    let without: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| *a != "--bootstrap-token" && *a != bootstrap.as_str())
        .collect();
    c.spawn_berth("node-b", &without);
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.log("node-b").matches("registered").count() == before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        c.log("node-b").matches("registered").count() > before,
        "the worker restarts on its kept credential alone:\n{}",
        c.log("node-b")
    );

    // A reusable token joins several nodes until it expires; it never joins a name that
    // has joined already: only an admin re-keys a node.
    let (_, reusable) = c
        .call(
            Method::POST,
            "/v1/nodes/bootstrap-tokens",
            Some(&c.token),
            Some(json!({"one_time": false, "ttl_minutes": 5})),
        )
        .await;
    let reusable = reusable["token"].as_str().unwrap().to_string();
    let mut creds = Vec::new();
    for name in ["pool-1", "pool-2"] {
        let (s, joined) = c
            .call(
                Method::POST,
                "/v1/nodes/join",
                Some(&reusable),
                Some(json!({"name": name})),
            )
            .await;
        assert_eq!(s, 200, "{joined}");
        creds.push(joined["credential"].as_str().unwrap().to_string());
    }
    let (s, problem) = c
        .call(
            Method::POST,
            "/v1/nodes/join",
            Some(&reusable),
            Some(json!({"name": "pool-1"})),
        )
        .await;
    assert_eq!(s, 409, "{problem}");
    assert_eq!(problem["code"], "node_exists", "{problem}");
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/pool-1/credential",
            Some(&user),
            None,
        )
        .await;
    assert_eq!(s, 403, "only admins re-key");
    let (s, rekeyed) = c
        .call(
            Method::POST,
            "/v1/nodes/pool-1/credential",
            Some(&c.token),
            None,
        )
        .await;
    assert_eq!(s, 200, "{rekeyed}");
    assert_eq!(rekeyed["node"], "pool-1");
    creds.push(rekeyed["credential"].as_str().unwrap().to_string());
    let register = |name: &str| json!({"name": name, "hostname": name, "cpus": 4, "memory_mib": 1024, "gpus": []});
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/register",
            Some(&creds[0]),
            Some(register("pool-1")),
        )
        .await;
    assert_eq!(s, 401, "revoked by the re-key");
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/register",
            Some(&creds[2]),
            Some(register("pool-1")),
        )
        .await;
    assert_eq!(s, 200);
    // The same GPU index twice is a 400 naming the field, and the node keeps what it had.
    let gpu = json!({"index": 0, "uuid": "GPU-dup", "model": "H100", "memory_mib": 1024});
    let (s, problem) = c
        .call(
            Method::POST,
            "/v1/nodes/register",
            Some(&creds[2]),
            Some(
                json!({"name": "pool-1", "hostname": "pool-1", "cpus": 8, "memory_mib": 1024,
                        "gpus": [gpu, gpu]}),
            ),
        )
        .await;
    assert_eq!(s, 400, "{problem}");
    assert_eq!(problem["field"], "gpus.index", "{problem}");
    // More devices than the scheduler places on, or a shard without its GPU: 400 too.
    let many: Vec<serde_json::Value> = (0..129)
        .map(|i| json!({"index": i, "uuid": format!("GPU-{i}"), "model": "H100", "memory_mib": 1024}))
        .collect();
    let orphan = json!({"index": 0, "uuid": "GPU-s", "model": "H100", "memory_mib": 1024,
                        "kind": "shard"});
    // So are more CPUs than a node can have (Slurm's 16-bit count): the api and the
    // scheduler list a node's CPU ids, and would hold billions of them.
    for (cpus, gpus, field) in [
        (8, json!(many), "gpus"),
        (8, json!([orphan]), "gpus.parent"),
        (65_536, json!([]), "cpus"),
        (2_147_483_647, json!([]), "cpus"),
    ] {
        let (s, problem) = c
            .call(
                Method::POST,
                "/v1/nodes/register",
                Some(&creds[2]),
                Some(json!({"name": "pool-1", "hostname": "pool-1", "cpus": cpus,
                            "memory_mib": 1024, "gpus": gpus})),
            )
            .await;
        assert_eq!(
            (s, problem["field"].as_str()),
            (400, Some(field)),
            "{problem}"
        );
    }
    let (_, nodes) = c.call(Method::GET, "/v1/nodes", Some(&c.token), None).await;
    let node = nodes["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "pool-1")
        .unwrap();
    assert_eq!(
        node["cpus"], 4,
        "a refused registration changes nothing: {node}"
    );
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/register",
            Some(&creds[1]),
            Some(register("pool-1")),
        )
        .await;
    assert_eq!(s, 403, "pool-2's credential is not pool-1's");
    // Expired: refused.
    let db = c.db().await;
    sqlx::query("UPDATE node_bootstrap_tokens SET created_at = now() - interval '1 hour', expires_at = now() - interval '1 second'")
        .execute(&db)
        .await
        .unwrap();
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/join",
            Some(&reusable),
            Some(json!({"name": "pool-3"})),
        )
        .await;
    assert_eq!(s, 401);
    // Joins are audited, as the node.
    let (_, audit) = c
        .call(
            Method::GET,
            "/v1/audit?actor=node:pool-2",
            Some(&c.token),
            None,
        )
        .await;
    let paths: Vec<&str> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["/v1/nodes/register", "/v1/nodes/join"]);
}
