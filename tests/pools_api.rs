//! Cloud node pools as admins and users see them: `PUT|GET|DELETE /v1/pools`, the slots in
//! `GET /v1/nodes` and sinfo (`idle~`), `berth pools`, power requests (`berth node
//! power-up`, `scontrol update State=POWER_UP`), partition membership, and a pool node's
//! worker joining with a bootstrap token bound to its name (the scheduler's reconciler,
//! which marks slots POWERING_UP and mints those tokens, is stood in for by SQL here).

use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use reqwest::Method;
use serde_json::{json, Value};

fn spec(max_nodes: u32) -> Value {
    json!({
        "provider": "local",
        "max_nodes": max_nodes,
        "features": ["cloud"],
        "instance_types": [
            {"name": "sim-8xh100", "gpus": "8xH100", "cpus": 32, "memory": "256G",
             "price_per_hour": 2.5},
            {"name": "sim-4xa100", "gpus": "4xA100", "cpus": 16, "memory": "128G"}
        ]
    })
}

async fn join(c: &TestCluster, token: &str, name: &str) -> (u16, Value) {
    c.call(
        Method::POST,
        "/v1/nodes/join",
        Some(token),
        Some(json!({"name": name})),
    )
    .await
}

async fn node(c: &TestCluster, name: &str) -> Option<Value> {
    let nodes: Value = c.get("/v1/nodes").await;
    nodes["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_pool_shows_powered_down_slots_to_everyone_and_obeys_only_admins() {
    // No scheduler: what the api records is checked before any reconciler acts on it
    // (tests/pools.rs covers the scheduler's side).
    let c = TestCluster::start(Options {
        workers: 1,
        schedulers: 0,
        ..Default::default()
    })
    .await;
    let admin = Some(c.token.as_str());
    let operator = c.token_for("olga", Role::Operator);
    let user = c.token_for("uma", Role::User);

    // Non-admins may not declare or delete pools.
    let (s, _) = c
        .call(
            Method::PUT,
            "/v1/pools/burst",
            Some(&operator),
            Some(spec(3)),
        )
        .await;
    assert_eq!(s, 403);
    let (s, _) = c
        .call(Method::PUT, "/v1/pools/burst", Some(&user), Some(spec(3)))
        .await;
    assert_eq!(s, 403);

    // Bad specs are refused naming the field.
    let mut bad = spec(3);
    bad["max_nodes"] = json!(0);
    let (s, p) = c
        .call(Method::PUT, "/v1/pools/burst", admin, Some(bad))
        .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("max_nodes")), "{p}");
    let mut bad = spec(3);
    bad["instance_types"][0]["memory"] = json!("lots");
    let (s, p) = c
        .call(Method::PUT, "/v1/pools/burst", admin, Some(bad))
        .await;
    assert_eq!(
        (s, p["field"].as_str()),
        (400, Some("instance_types[0].memory")),
        "{p}"
    );
    let (s, p) = c
        .call(Method::PUT, "/v1/pools/Burst", admin, Some(spec(3)))
        .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("name")), "{p}");
    let mut bad = spec(3);
    bad["partitions"] = json!(["nowhere"]);
    let (s, p) = c
        .call(Method::PUT, "/v1/pools/burst", admin, Some(bad))
        .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("partitions")), "{p}");
    // A slot name taken by a static node.
    let (s, p) = c
        .call(Method::PUT, "/v1/pools/node", admin, Some(spec(2)))
        .await;
    assert_eq!(s, 409, "node-1 is a static node: {p}");

    // Created: max_nodes POWERED_DOWN slots of the first type's shape.
    let (s, pool) = c
        .call(Method::PUT, "/v1/pools/burst", admin, Some(spec(3)))
        .await;
    assert_eq!(s, 201, "{pool}");
    assert_eq!(pool["nodes_by_state"], json!({"POWERED_DOWN": 3}));
    assert_eq!(pool["nodes_active"], 0);
    assert_eq!(pool["hourly_spend"], 0.0);
    let (s, _) = c
        .call(Method::PUT, "/v1/pools/burst", admin, Some(spec(3)))
        .await;
    assert_eq!(s, 200, "declaring again replaces");
    for name in ["burst-1", "burst-2", "burst-3"] {
        let n = node(&c, name).await.unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(n["state"], "POWERED_DOWN", "{n}");
        assert_eq!(n["pool"], "burst");
        assert_eq!(n["cpus"], 32);
        assert_eq!(n["memory_mib"], 262_144);
        assert_eq!(n["gpus"].as_array().unwrap().len(), 8);
        assert_eq!(n["gpus"][0]["model"], "H100");
        assert_eq!(n["features"], json!(["cloud"]));
        assert!(n["instance_id"].is_null());
    }
    // Any user reads pools.
    let (s, list) = c.call(Method::GET, "/v1/pools", Some(&user), None).await;
    assert_eq!(s, 200);
    assert_eq!(list["items"][0]["name"], "burst");
    let (s, one) = c
        .call(Method::GET, "/v1/pools/burst", Some(&user), None)
        .await;
    assert_eq!(s, 200);
    assert_eq!(one["nodes"].as_array().unwrap().len(), 3);
    assert_eq!(one["nodes"][0]["name"], "burst-1");

    // sinfo shows them powered down, `berth pools` counts them.
    let (code, out, err) = c.cli(&user, &["nodes"]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("burst-[1-3]"))
        .unwrap_or_else(|| panic!("no burst line:\n{out}"));
    assert!(line.contains("idle~"), "{out}");
    let (code, out, err) = c.cli(&user, &["pools"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("POOL"), "{out}");
    let row = out.lines().find(|l| l.starts_with("burst")).unwrap();
    assert!(
        row.contains("local") && row.contains("0/3") && row.contains("idle~:3"),
        "{out}"
    );
    let (code, out, _) = c.cli(&user, &["pools", "burst"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("burst-3") && out.contains("POWERED_DOWN"),
        "{out}"
    );
    let (code, out, _) = c.cli(&user, &["pools", "burst", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["spec"]["max_nodes"], 3);

    // Power requests: operators and admins, pool nodes only.
    let db = c.db().await;
    let request = |name: &'static str| {
        let db = db.clone();
        async move {
            sqlx::query_scalar::<_, Option<String>>(
                "SELECT power_request FROM nodes WHERE name = $1",
            )
            .bind(name)
            .fetch_one(&db)
            .await
            .unwrap()
        }
    };
    let (code, _, err) = c.cli(&operator, &["node", "power-up", "burst-1"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(request("burst-1").await.as_deref(), Some("up"));
    let (code, _, err) = c.cli(
        &c.token,
        &["scontrol", "update", "NodeName=burst-2", "State=POWER_UP"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(request("burst-2").await.as_deref(), Some("up"));
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/burst-2/power",
            Some(&user),
            Some(json!({"action": "up"})),
        )
        .await;
    assert_eq!(s, 403);
    // Powering down a powered-down node is nothing to do (and drops the pending up).
    let (code, _, err) = c.cli(&operator, &["node", "power-down", "burst-2"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(request("burst-2").await, None);
    let (s, p) = c
        .call(
            Method::POST,
            "/v1/nodes/node-1/power",
            admin,
            Some(json!({"action": "down"})),
        )
        .await;
    assert_eq!(s, 409, "a static node has no power to switch: {p}");
    let (code, _, err) = c.cli(&c.token, &["node", "power-up", "node-1"]);
    assert_ne!(code, 0);
    assert!(err.contains("node-1"), "{err}");

    // Shrinking removes the powered-down slots above max_nodes.
    let (s, pool) = c
        .call(Method::PUT, "/v1/pools/burst", admin, Some(spec(2)))
        .await;
    assert_eq!(s, 200, "{pool}");
    assert!(node(&c, "burst-3").await.is_none(), "burst-3 removed");
    assert!(node(&c, "burst-2").await.is_some());

    // Deleting is refused while a node is not powered down.
    sqlx::query(
        "UPDATE nodes SET state = 'POWERING_UP', launched_at = now() WHERE name = 'burst-1'",
    )
    .execute(&db)
    .await
    .unwrap();
    let (s, _) = c
        .call(Method::DELETE, "/v1/pools/burst", Some(&operator), None)
        .await;
    assert_eq!(s, 403);
    let (s, p) = c.call(Method::DELETE, "/v1/pools/burst", admin, None).await;
    assert_eq!(s, 409, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("burst-1"), "{p}");
    let (code, out, _) = c.cli(&c.token, &["nodes"]);
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .any(|l| l.contains("idle#") && l.contains("burst-1")),
        "{out}"
    );
    // (The scheduler may have launched it meanwhile: forget that instance too.)
    sqlx::query(
        "UPDATE nodes SET state = 'POWERED_DOWN', instance_id = NULL, launch_id = NULL \
         WHERE name = 'burst-1'",
    )
    .execute(&db)
    .await
    .unwrap();
    let (code, _, err) = c.cli(&c.token, &["pool", "delete", "burst"]);
    assert_eq!(code, 0, "{err}");
    assert!(node(&c, "burst-1").await.is_none());
    let (s, _) = c.call(Method::GET, "/v1/pools/burst", admin, None).await;
    assert_eq!(s, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_nodes_join_the_partitions_it_names_and_leave_them() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let admin = Some(c.token.as_str());
    let (s, _) = c
        .call(
            Method::PUT,
            "/v1/partitions/cloud",
            admin,
            Some(json!({"nodes": ["node-1"]})),
        )
        .await;
    assert_eq!(s, 201);
    // Declared with `berth pool set` from a TOML file.
    let file = c.dir.join("pool.toml");
    std::fs::write(
        &file,
        "provider = \"local\"\nmax_nodes = 2\npartitions = [\"cloud\"]\n\n[[instance_types]]\nname = \"sim-2xh100\"\ngpus = \"2xH100\"\ncpus = 8\nmemory = \"64G\"\n",
    )
    .unwrap();
    let (code, out, err) = c.cli(
        &c.token,
        &["pool", "set", "spot", "--file", file.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("spot"), "{out}");
    let p: Value = c.get("/v1/partitions/cloud").await;
    assert_eq!(p["nodes"], json!(["node-1", "spot-1", "spot-2"]));
    // The partition redefined keeps the pool's slots.
    let (s, p) = c
        .call(
            Method::PUT,
            "/v1/partitions/cloud",
            admin,
            Some(json!({"nodes": ["node-1"], "max_time": 600})),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(p["nodes"], json!(["node-1", "spot-1", "spot-2"]));
    let n = node(&c, "spot-1").await.unwrap();
    assert!(
        n["partitions"]
            .as_array()
            .unwrap()
            .contains(&json!("cloud")),
        "{n}"
    );
    // A bad file names the option.
    std::fs::write(&file, "provider = \"local\"\nmax_nodez = 2\n").unwrap();
    let (code, _, err) = c.cli(
        &c.token,
        &["pool", "set", "spot", "--file", file.to_str().unwrap()],
    );
    assert_ne!(code, 0);
    assert!(err.contains("--file") && err.contains("max_nodez"), "{err}");
    // No longer named: the slots leave.
    let mut s2 = spec(2);
    s2["instance_types"] =
        json!([{"name": "sim-2xh100", "gpus": "2xH100", "cpus": 8, "memory": "64G"}]);
    let (s, _) = c.call(Method::PUT, "/v1/pools/spot", admin, Some(s2)).await;
    assert_eq!(s, 200);
    let p: Value = c.get("/v1/partitions/cloud").await;
    assert_eq!(p["nodes"], json!(["node-1"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_node_joins_only_with_the_token_bound_to_it_while_powering_up() {
    // No scheduler: the slot is made POWERING_UP by hand, as a launch would, and no
    // reconciler must act on that pretend instance.
    let mut c = TestCluster::start(Options {
        workers: 0,
        schedulers: 0,
        ..Default::default()
    })
    .await;
    let admin_token = c.token.clone();
    let admin = Some(admin_token.as_str());
    let (s, p) = c
        .call(Method::PUT, "/v1/pools/burst", admin, Some(spec(2)))
        .await;
    assert_eq!(s, 201, "{p}");
    let db = c.db().await;
    let mint = |node: &'static str| {
        let db = db.clone();
        async move {
            let token =
                berth_api::auth::secret_with_prefix(berth_api::auth::BOOTSTRAP_TOKEN_PREFIX);
            berth_db::node_credential::bootstrap_token_insert_for_node(
                &db,
                &berth_api::auth::api_token_hash(&token),
                node,
                chrono::Utc::now() + chrono::Duration::minutes(10),
            )
            .await
            .unwrap();
            token
        }
    };
    // What the reconciler does at launch: burst-1 POWERING_UP, a token bound to it.
    sqlx::query(
        "UPDATE nodes SET state = 'POWERING_UP', launched_at = now() - interval '7 seconds',
                          power_changed_at = now(), reason = 'launching'
         WHERE name = 'burst-1'",
    )
    .execute(&db)
    .await
    .unwrap();
    let token1 = mint("burst-1").await;
    // Bound to burst-1: not usable for burst-2, and it is not spent by trying.
    let (s, p) = join(&c, &token1, "burst-2").await;
    assert_eq!(s, 403, "{p}");
    // burst-2 is POWERED_DOWN: its own bound token does not join it.
    let token2 = mint("burst-2").await;
    let (s, p) = join(&c, &token2, "burst-2").await;
    assert_eq!(s, 409, "{p}");
    // An admin's unbound token does not take a pool slot's name.
    let (s, t) = c
        .call(
            Method::POST,
            "/v1/nodes/bootstrap-tokens",
            admin,
            Some(json!({"ttl_minutes": 5})),
        )
        .await;
    assert_eq!(s, 201);
    let (s, p) = join(&c, t["token"].as_str().unwrap(), "burst-1").await;
    assert_eq!(s, 409, "{p}");

    // A real worker joins with the bound token (from its environment) and registers:
    // burst-1 is in service, with a `joined` event.
    let state = c.dir.join("burst-1");
    let url = c.url.clone();
    c.spawn_berth_env(
        "burst-1",
        &[
            "worker",
            "--api",
            url.as_str(),
            "--name",
            "burst-1",
            "--simulate-gpus",
            "8xH100",
            "--state-dir",
            state.to_str().unwrap(),
            "--kill-wait",
            "1",
            "--run-as",
            "worker",
        ],
        &[("BERTH_BOOTSTRAP_TOKEN", token1.as_str())],
    );
    let n = c
        .wait_node("burst-1", 30, |n| {
            n.state == berth_core::state::NodeState::Idle
        })
        .await;
    assert_eq!(n.reason, None);
    assert_eq!(n.pool.as_deref(), Some("burst"));
    assert!(
        n.features.contains(&"cloud".to_string()),
        "{:?}",
        n.features
    );
    let (joined, seconds): (String, Option<bool>) = sqlx::query_as(
        "SELECT kind, idle_since IS NOT NULL AND power_changed_at >= launched_at
         FROM cloud_events e JOIN nodes n ON n.name = e.node_name
         WHERE e.node_name = 'burst-1' ORDER BY e.id DESC LIMIT 1",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!((joined.as_str(), seconds), ("joined", Some(true)));
    let pool: Value = c.get("/v1/pools/burst").await;
    assert_eq!(pool["events"][0]["kind"], "joined");
    assert!(
        pool["events"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("after its launch"),
        "{pool}"
    );
    assert_eq!(pool["nodes_by_state"]["IDLE"], 1, "{pool}");

    // What the reconciler records of an instance shows in the node, the pool and
    // `berth pools NAME`: id, type, market, zone, spend; launches in flight and live
    // cooldowns (an expired one is not shown).
    sqlx::query(
        "UPDATE nodes SET instance_id = 'i-0abc', instance_type = 'sim-8xh100',
                          market = 'spot', zone = 'local-a'
         WHERE name = 'burst-1'",
    )
    .execute(&db)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO cloud_launches (id, pool, node_names, instance_type, market, term)
         VALUES (gen_random_uuid(), 'burst', '{burst-2}', 'sim-8xh100', 'spot', 1)",
    )
    .execute(&db)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO pool_cooldowns (pool, instance_type, zone, until, error) VALUES
           ('burst', 'sim-8xh100', 'local-b', now() + interval '1 hour', 'InsufficientInstanceCapacity'),
           ('burst', 'sim-4xa100', '', now() - interval '1 second', 'InsufficientInstanceCapacity')",
    )
    .execute(&db)
    .await
    .unwrap();
    let n = node(&c, "burst-1").await.unwrap();
    assert_eq!(
        (
            &n["instance_id"],
            &n["instance_type"],
            &n["market"],
            &n["zone"]
        ),
        (
            &json!("i-0abc"),
            &json!("sim-8xh100"),
            &json!("spot"),
            &json!("local-a")
        )
    );
    let pool: Value = c.get("/v1/pools/burst").await;
    assert_eq!(pool["hourly_spend"], 2.5, "{pool}");
    assert_eq!(pool["nodes_active"], 1);
    assert_eq!(pool["launches_in_flight"], 1);
    assert_eq!(pool["cooldowns"].as_array().unwrap().len(), 1, "{pool}");
    assert_eq!(pool["cooldowns"][0]["zone"], "local-b");
    assert_eq!(pool["nodes"][0]["market"], "spot");
    assert!(
        pool["nodes"][0]["age_seconds"].as_u64().unwrap() >= 7,
        "{pool}"
    );
    let (code, out, err) = c.cli(&c.token, &["pools", "burst"]);
    assert_eq!(code, 0, "{err}");
    let row = out.lines().find(|l| l.starts_with("burst-1 ")).unwrap();
    assert!(
        row.contains("IDLE") && row.contains("i-0abc") && row.contains("spot"),
        "{out}"
    );
    assert!(out.contains("1/2") && out.contains("2.50"), "{out}");
    assert!(out.contains("local-b") && out.contains("joined"), "{out}");

    // Used once: a second join is refused.
    let (s, _) = join(&c, &token1, "burst-1").await;
    assert_eq!(s, 401);
    // A pool with a node in service is not deleted.
    let (s, _) = c.call(Method::DELETE, "/v1/pools/burst", admin, None).await;
    assert_eq!(s, 409);

    // The instance terminated: its credential revoked, the slot powered down; a worker
    // registering for it is refused.
    c.stop("burst-1");
    assert_eq!(
        berth_db::node_credential::node_credential_revoke_for_node(&db, "burst-1")
            .await
            .unwrap(),
        1
    );
    sqlx::query(
        "UPDATE nodes SET state = 'POWERED_DOWN', instance_id = NULL WHERE name = 'burst-1'",
    )
    .execute(&db)
    .await
    .unwrap();
    let node_token = c.token_for("node:burst-1", Role::Node);
    let (s, p) = c
        .call(
            Method::POST,
            "/v1/nodes/register",
            Some(&node_token),
            Some(json!({"name": "burst-1", "hostname": "x", "cpus": 4, "memory_mib": 1024, "gpus": []})),
        )
        .await;
    assert_eq!(s, 409, "{p}");
}

/// `[pools.NAME]` in the server's configuration: declared when the api starts; a bad one
/// stops it naming `pools.NAME.field`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pools_from_the_configuration_file() {
    let c = TestCluster::start(Options {
        workers: 0,
        scheduler_config: "
[pools.cfg]
provider = \"local\"
max_nodes = 2
idle_timeout = 20

[[pools.cfg.instance_types]]
name = \"sim-8xh100\"
gpus = \"8xH100\"
cpus = 32
memory = \"256G\"
",
        ..Options::default()
    })
    .await;
    let pool: Value = c.get("/v1/pools/cfg").await;
    assert_eq!(pool["spec"]["idle_timeout"], 20);
    assert_eq!(pool["nodes_by_state"], json!({"POWERED_DOWN": 2}));
    assert_eq!(
        node(&c, "cfg-2").await.unwrap()["gpus"]
            .as_array()
            .unwrap()
            .len(),
        8
    );

    let bad = c.dir.join("bad-pools.toml");
    std::fs::write(
        &bad,
        "[pools.bad]\nprovider = \"local\"\nmax_nodes = 0\n[[pools.bad.instance_types]]\nname = \"t\"\ncpus = 1\nmemory = \"1G\"\n",
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
    assert!(stderr.contains("pools.bad.max_nodes"), "{stderr}");
    let (s, _) = c
        .call(Method::GET, "/v1/pools/bad", Some(&c.token), None)
        .await;
    assert_eq!(s, 404);
}
