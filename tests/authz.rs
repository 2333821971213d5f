//! The authorisation matrix, generated from the checked-in OpenAPI document
//! (`openapi/berth.json`): every operation × every kind of caller (no token, expired,
//! wrong signature, `alg: none`, wrong audience, each role, API tokens of each scope,
//! another tenant, a running job's own token) is sent to a running cluster and must get exactly the status the rules
//! below give. An operation with no rule fails the test, so a new endpoint cannot ship
//! without deciding who may call it.

use crate::cluster::{Options, TestCluster, SECRET};
use berth_core::auth::{Claims, Role, AUDIENCE, ISSUER};
use reqwest::Method;
use serde_json::{json, Value};

/// Who calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    NoToken,
    Expired,
    WrongSignature,
    AlgNone,
    WrongAudience,
    Admin,
    Operator,
    /// ursula, who owns the resources the requests name.
    Owner,
    /// otto, a user of another account: another tenant.
    OtherTenant,
    /// The worker of node-x.
    Node,
    /// ursula's API token with the read-only scope.
    ReadOnlyToken,
    /// ursula's API token with the submit scope.
    SubmitToken,
    /// The token of ursula's running job (`BERTH_TOKEN` inside it): the fixture's
    /// `running` job, run 0.
    JobToken,
}

const EVERYONE: [Who; 13] = [
    Who::NoToken,
    Who::Expired,
    Who::WrongSignature,
    Who::AlgNone,
    Who::WrongAudience,
    Who::Admin,
    Who::Operator,
    Who::Owner,
    Who::OtherTenant,
    Who::Node,
    Who::ReadOnlyToken,
    Who::SubmitToken,
    Who::JobToken,
];

fn jwt(secret: &str, sub: &str, role: Role, aud: &str, exp_offset: i64) -> String {
    let now = chrono::Utc::now().timestamp();
    let claims = Claims {
        sub: sub.into(),
        role,
        iss: ISSUER.into(),
        aud: aud.into(),
        iat: now,
        exp: now + exp_offset,
        job_id: None,
        run: None,
        inc: None,
    };
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

/// The status `who` must get for `op` (operation id), or `None` when the matrix has no
/// rule for the operation.
fn expected(op: &str, who: Who, secured: bool) -> Option<u16> {
    use Who::*;
    let known = [
        "health_live",
        "health_ready",
        "job_create",
        "job_will_run",
        "job_list",
        "queue_list",
        "job_get",
        "job_cancel",
        "job_output",
        "job_output_upload",
        "node_list",
        "node_register",
        "node_sync",
        "partition_list",
        "user_create",
        "user_list",
        "user_get",
        "user_delete",
        "account_create",
        "account_list",
        "account_update",
        "account_delete",
        "membership_set",
        "membership_delete",
        "token_create",
        "token_list",
        "token_revoke",
        "audit_list",
        "node_bootstrap_create",
        "node_join",
        "fairshare_list",
        "qos_list",
        "qos_get",
        "qos_put",
        "job_update",
        "job_hold",
        "job_release",
        "job_top",
        "job_requeue",
        "job_keepalive",
        "job_task_cancel",
        "job_signal",
        "job_priority",
        "job_stats",
        "job_gpu_samples",
        "job_script",
        "step_list",
        "step_create",
        "step_get",
        "step_cancel",
        "step_input",
        "step_output",
        "step_output_upload",
        "node_get",
        "node_drain",
        "node_resume",
        "node_update",
        "partition_get",
        "partition_put",
        "partition_delete",
        "job_cancel_batch",
        "job_hold_batch",
        "job_release_batch",
        "node_rekey",
        "reservation_list",
        "reservation_get",
        "reservation_create",
        "reservation_update",
        "reservation_delete",
        "pool_list",
        "pool_get",
        "pool_put",
        "pool_delete",
        "node_power",
        "accounting_job_list",
        "usage_get",
        "usage_cluster_get",
        "usage_cluster_timeline",
        "event_list",
        "webhook_create",
        "webhook_list",
        "webhook_get",
        "webhook_update",
        "webhook_delete",
        "webhook_test",
        "webhook_delivery_list",
        "webhook_redeliver",
        "whoami_get",
        "cluster_get",
        "oidc_issuer_list",
    ];
    if !known.contains(&op) {
        return None;
    }
    if !secured {
        return Some(200);
    }
    if matches!(
        who,
        NoToken | Expired | WrongSignature | AlgNone | WrongAudience
    ) {
        return Some(401);
    }
    // Only a bootstrap token joins a node; no caller here holds one (tests/node_join.rs
    // covers the bootstrap tokens themselves).
    if op == "node_join" {
        return Some(401);
    }
    // Any valid credentials may ask who they are, and which cluster this is.
    if op == "whoami_get" || op == "cluster_get" {
        return Some(200);
    }
    // A job's token: its user's job list and submissions, and its own job (the fixture's
    // running job: stats and steps; read, update, cancel, requeue); any other job is
    // unknown to it; nothing else.
    if who == JobToken {
        return Some(match op {
            "job_create" | "step_create" => 201,
            "job_signal" => 202,
            "job_will_run"
            | "job_list"
            | "queue_list"
            | "job_cancel_batch"
            | "job_stats"
            | "job_gpu_samples"
            | "job_script"
            | "step_list"
            | "step_get"
            | "step_cancel"
            | "step_output"
            | "accounting_job_list" => 200,
            "job_get" | "job_cancel" | "job_output" | "job_requeue" | "job_priority"
            | "job_update" => 404,
            _ => 403,
        });
    }
    let read = matches!(
        op,
        "job_list"
            | "queue_list"
            | "job_get"
            | "job_output"
            | "node_list"
            | "partition_list"
            | "partition_get"
            | "node_get"
            | "user_list"
            | "user_get"
            | "account_list"
            | "token_list"
            | "audit_list"
            | "fairshare_list"
            | "qos_list"
            | "qos_get"
            | "job_priority"
            | "job_stats"
            | "job_gpu_samples"
            | "job_script"
            | "step_list"
            | "step_get"
            | "step_output"
            | "reservation_list"
            | "reservation_get"
            | "pool_list"
            | "pool_get"
            | "accounting_job_list"
            | "usage_get"
            | "usage_cluster_get"
            | "usage_cluster_timeline"
            | "event_list"
            | "webhook_list"
            | "webhook_get"
            | "webhook_delivery_list"
    );
    // API token scopes refuse before anything else.
    if who == ReadOnlyToken && !read {
        return Some(403);
    }
    // A submit-scoped token is for CI pipelines that submit and manage their own runs:
    // it may write under /v1/jobs (submit, cancel, hold, release, top, update, requeue, cancel
    // an array task, run steps); the worker routes there still refuse it (below).
    let job_write = matches!(
        op,
        "job_create"
            | "job_will_run"
            | "job_cancel"
            | "job_output_upload"
            | "job_update"
            | "job_hold"
            | "job_release"
            | "job_top"
            | "job_requeue"
            | "job_keepalive"
            | "job_task_cancel"
            | "job_signal"
            | "step_create"
            | "step_cancel"
            | "step_input"
            | "step_output_upload"
            | "job_cancel_batch"
            | "job_hold_batch"
            | "job_release_batch"
    );
    if who == SubmitToken && !read && !job_write {
        return Some(403);
    }
    let success = |op: &str| match op {
        "job_create"
        | "user_create"
        | "account_create"
        | "token_create"
        | "node_bootstrap_create"
        | "qos_put"
        | "partition_put"
        | "reservation_create"
        | "pool_put"
        | "step_create" => 201,
        "job_output_upload" | "step_output_upload" | "user_delete" | "account_delete"
        | "membership_delete" | "token_revoke" | "partition_delete" | "reservation_delete"
        | "pool_delete" | "webhook_delete" => 204,
        "webhook_create" => 201,
        "webhook_test" | "webhook_redeliver" | "job_signal" => 202,
        // The fixture's step has no terminal: the caller passes, the step refuses.
        "step_input" => 409,
        _ => 200,
    };
    let worker_route = matches!(
        op,
        "node_register" | "node_sync" | "job_output_upload" | "step_output_upload"
    );
    let staff_only = matches!(
        op,
        "user_create"
            | "user_list"
            | "user_delete"
            | "account_create"
            | "account_update"
            | "account_delete"
            | "membership_set"
            | "membership_delete"
            // Operators drain and resume nodes and manage partitions and QOS.
            | "node_drain"
            | "node_resume"
            | "node_update"
            | "partition_put"
            | "partition_delete"
            | "qos_put"
            // Operators and admins hold nodes for others; users read what they may use.
            | "reservation_create"
            | "reservation_update"
            | "reservation_delete"
            // Operators power pool nodes up and down; admins declare pools (below).
            | "node_power"
    );
    // Webhooks are their creator's (and admins'): ursula's are unknown to others.
    let webhook_of_owner = matches!(
        op,
        "webhook_get"
            | "webhook_update"
            | "webhook_delete"
            | "webhook_test"
            | "webhook_delivery_list"
            | "webhook_redeliver"
    );
    // Resources named in the path that belong to the owner (ursula).
    let owners_resource = matches!(
        op,
        "job_get"
            | "job_cancel"
            | "job_output"
            | "user_get"
            | "token_revoke"
            | "job_update"
            | "job_hold"
            | "job_release"
            | "job_top"
            | "job_requeue"
            | "job_keepalive"
            | "job_task_cancel"
            | "job_signal"
            | "job_priority"
            | "job_stats"
            | "job_gpu_samples"
            | "job_script"
            | "step_list"
            | "step_create"
            | "step_get"
            | "step_cancel"
            | "step_input"
            | "step_output"
            // The fixture's reservation admits the owner only.
            | "reservation_get"
    ) || webhook_of_owner;
    Some(match who {
        // Only the owner's salloc or srun keeps an allocation alive (not staff's).
        Admin | Operator if op == "job_keepalive" => 403,
        // The fixture's job is pending, never placed: its output is no one's to upload.
        Admin if op == "job_output_upload" => 404,
        Admin => success(op),
        // The fixture's jobs are not on node-x: their output is not node-x's to upload.
        Node if matches!(op, "job_output_upload" | "step_output_upload") => 404,
        Node => {
            if worker_route {
                success(op)
            } else {
                403
            }
        }
        _ if worker_route => 403,
        _ if matches!(
            op,
            "audit_list" | "node_bootstrap_create" | "node_rekey" | "pool_put" | "pool_delete"
        ) =>
        {
            403
        }
        // Operators revoke only their own tokens: ursula's is invisible to them.
        Operator if op == "token_revoke" => 404,
        Operator if webhook_of_owner => 404,
        // A step runs code as the job's user: operators control jobs but do not run code
        // in them (admins may, like Slurm's root).
        Operator if matches!(op, "step_create" | "step_input") => 403,
        Operator => success(op),
        _ if staff_only => 403,
        OtherTenant if owners_resource => 404,
        Owner | OtherTenant | ReadOnlyToken | SubmitToken => success(op),
        NoToken | Expired | WrongSignature | AlgNone | WrongAudience | JobToken => {
            unreachable!()
        }
    })
}

/// A reservation of node-x in a day for `user` (`MAINT,IGNORE_JOBS`: any number of them
/// may overlap, whatever runs there).
fn reservation_body(name: &str, user: &str) -> Value {
    json!({
        "name": name,
        "start_time": "now+1day",
        "duration": "10",
        "nodes": "node-x",
        "users": [user],
        "flags": ["MAINT", "IGNORE_JOBS"],
    })
}

/// A one-node local pool (a 1-GPU slot, never launched here).
fn pool_body() -> Value {
    json!({
        "provider": "local",
        "max_nodes": 1,
        "instance_types": [{"name": "sim", "gpus": "1xH100", "cpus": 2, "memory": "4G"}]
    })
}

struct Fixture {
    /// ursula's pending job (begins in an hour: prioritized, never started here).
    job: i64,
    /// ursula's running job, with one step (`step`).
    running: i64,
    step: i64,
    /// ursula's webhook, with one (test) delivery.
    webhook: i64,
    delivery: i64,
    counter: std::sync::atomic::AtomicU32,
}

impl Fixture {
    fn next(&self) -> u32 {
        self.counter
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }
}

/// The request for `op` at `path` (with `{…}` placeholders), with fresh resources where
/// the call consumes one.
async fn prepare(
    c: &TestCluster,
    f: &Fixture,
    op: &str,
    path: &str,
    owner: &str,
) -> (String, Option<Value>) {
    let admin = Some(c.token.as_str());
    let n = f.next();
    // A fresh job of the owner for the calls that consume one.
    let fresh = |script: &'static str| async move {
        let (s, job) = c
            .call(
                Method::POST,
                "/v1/jobs",
                Some(owner),
                Some(json!({ "script": script })),
            )
            .await;
        assert_eq!(s, 201, "{job}");
        job["id"].as_i64().unwrap()
    };
    const HELD: &str = "#!/bin/bash\n#SBATCH --hold\ntrue\n";
    let job = match op {
        // Pending, not held, and not about to start.
        "job_hold" | "job_update" => fresh("#!/bin/bash\n#SBATCH --begin=now+1hour\ntrue\n").await,
        // The same, once the scheduler has given it a priority (top compares them).
        "job_top" => {
            let id = fresh("#!/bin/bash\n#SBATCH --begin=now+1hour\ntrue\n").await;
            c.wait_for(id, 60, |j| j.priority.is_some()).await;
            id
        }
        "job_release" | "job_cancel" | "job_cancel_batch" | "job_release_batch" => {
            fresh(HELD).await
        }
        "job_hold_batch" => fresh("#!/bin/bash\n#SBATCH --begin=now+1hour\ntrue\n").await,
        // Kept alive, it would end once its keep-alive expires: never the shared job.
        "job_keepalive" => fresh("#!/bin/bash\n#SBATCH --begin=now+1hour\ntrue\n").await,
        "job_task_cancel" => {
            fresh("#!/bin/bash\n#SBATCH --hold\n#SBATCH --array=0-3\ntrue\n").await
        }
        // Ended (cancelled by an admin): requeue puts it back to pending.
        "job_requeue" => {
            let id = fresh(HELD).await;
            let (s, _) = c
                .call(Method::POST, &format!("/v1/jobs/{id}/cancel"), admin, None)
                .await;
            assert_eq!(s, 200);
            id
        }
        _ if path.contains("/steps")
            || matches!(
                op,
                "job_stats" | "job_gpu_samples" | "job_script" | "job_signal"
            ) =>
        {
            f.running
        }
        _ => f.job,
    };
    let mut path = if path.starts_with("/v1/jobs/") {
        path.replace("{id}", &job.to_string())
            .replace("{step}", &f.step.to_string())
            .replace("{task}", "1")
    } else {
        path.to_string()
    };
    let body = match op {
        "job_create" | "job_will_run" => {
            Some(json!({"script": "#!/bin/bash\n#SBATCH --hold\ntrue\n"}))
        }
        "job_output_upload" => {
            Some(json!({"run": 0, "stream": "stdout", "offset": n * 10, "data": "x"}))
        }
        // CONT: harmless to the fixture's running step, which goes on.
        "job_signal" => Some(json!({"signal": "CONT"})),
        "node_register" => Some(json!({
            "name": "node-x", "hostname": "x", "cpus": 4, "memory_mib": 1024, "gpus": []
        })),
        "node_sync" => {
            path = path.replace("{name}", "node-x");
            Some(json!({"wait_seconds": 0}))
        }
        "user_create" => Some(json!({"name": format!("new-{n}")})),
        "user_get" => {
            path = path.replace("{name}", "ursula");
            None
        }
        "user_delete" => {
            let name = format!("gone-{n}");
            c.call(
                Method::POST,
                "/v1/users",
                admin,
                Some(json!({"name": name})),
            )
            .await;
            path = path.replace("{name}", &name);
            None
        }
        "account_create" => Some(json!({"name": format!("acct-{n}"), "parent": "tenant-a"})),
        "account_update" => {
            let name = format!("upd-{n}");
            c.call(
                Method::POST,
                "/v1/accounts",
                admin,
                Some(json!({"name": name})),
            )
            .await;
            path = path.replace("{name}", &name);
            Some(json!({"grp_tres": {"gpu": 8, "cpu": 64}, "shares": 2}))
        }
        "account_delete" => {
            let name = format!("old-{n}");
            c.call(
                Method::POST,
                "/v1/accounts",
                admin,
                Some(json!({"name": name})),
            )
            .await;
            path = path.replace("{name}", &name);
            None
        }
        "membership_set" => {
            path = path
                .replace("{name}", "tenant-a")
                .replace("{user}", "ursula");
            Some(json!({"default": true}))
        }
        "membership_delete" => {
            let user = format!("member-{n}");
            c.call(
                Method::POST,
                "/v1/users",
                admin,
                Some(json!({"name": user})),
            )
            .await;
            c.call(
                Method::PUT,
                &format!("/v1/accounts/tenant-a/users/{user}"),
                admin,
                Some(json!({})),
            )
            .await;
            path = path.replace("{name}", "tenant-a").replace("{user}", &user);
            None
        }
        "token_create" => Some(json!({"name": format!("t-{n}")})),
        "node_bootstrap_create" => Some(json!({"ttl_minutes": 5})),
        "node_join" => Some(json!({"name": format!("joined-{n}")})),
        "node_rekey" => {
            path = path.replace("{name}", &format!("rekeyed-{n}"));
            None
        }
        "job_update" => Some(json!({"nice": 10})),
        "job_cancel_batch" | "job_hold_batch" | "job_release_batch" => {
            Some(json!({"jobs": [job.to_string()]}))
        }
        "step_create" => Some(json!({"command": ["true"]})),
        "step_input" => Some(json!({"data": "bHMK"})),
        "step_output_upload" => Some(json!({
            "run": 0, "task_id": 0, "stream": "stdout", "offset": 1000 + n * 10, "data": "x"
        })),
        "qos_get" => {
            path = path.replace("{name}", "normal");
            None
        }
        "qos_put" => {
            path = path.replace("{name}", &format!("qos-{n}"));
            Some(json!({"priority": 10}))
        }
        // node-x runs nothing: draining and resuming it disturbs no job.
        "node_get" | "node_resume" => {
            path = path.replace("{name}", "node-x");
            None
        }
        "node_drain" => {
            path = path.replace("{name}", "node-x");
            Some(json!({"reason": "authz matrix"}))
        }
        "node_update" => {
            path = path.replace("{name}", "node-x");
            Some(json!({"weight": 3}))
        }
        "partition_get" => {
            path = path.replace("{name}", "gpu");
            None
        }
        "reservation_get" => {
            // Made once; later calls are answered 409 and change nothing.
            c.call(
                Method::POST,
                "/v1/reservations",
                admin,
                Some(reservation_body("authz-resv", "ursula")),
            )
            .await;
            path = path.replace("{name}", "authz-resv");
            None
        }
        "reservation_create" => Some(reservation_body(&format!("resv-{n}"), "ursula")),
        "reservation_update" | "reservation_delete" => {
            let name = format!("resv-x-{n}");
            c.call(
                Method::POST,
                "/v1/reservations",
                admin,
                Some(reservation_body(&name, "ursula")),
            )
            .await;
            path = path.replace("{name}", &name);
            (op == "reservation_update").then(|| json!({"duration": "20"}))
        }
        "partition_put" => {
            path = path.replace("{name}", &format!("part-{n}"));
            Some(json!({"nodes": ["node-x"]}))
        }
        "partition_delete" => {
            let name = format!("gone-part-{n}");
            c.call(
                Method::PUT,
                &format!("/v1/partitions/{name}"),
                admin,
                Some(json!({})),
            )
            .await;
            path = path.replace("{name}", &name);
            None
        }
        "pool_get" => {
            path = path.replace("{name}", "authz-pool");
            None
        }
        // authz-pool-1 is POWERED_DOWN: powering it down again changes nothing.
        "node_power" => {
            path = path.replace("{name}", "authz-pool-1");
            Some(json!({"action": "down"}))
        }
        "pool_put" => {
            path = path.replace("{name}", &format!("pool-{n}"));
            Some(pool_body())
        }
        "pool_delete" => {
            let name = format!("gone-pool-{n}");
            c.call(
                Method::PUT,
                &format!("/v1/pools/{name}"),
                admin,
                Some(pool_body()),
            )
            .await;
            path = path.replace("{name}", &name);
            None
        }
        "webhook_create" => {
            Some(json!({"url": "https://hooks.invalid/x", "events": ["berth.job.ended"]}))
        }
        "webhook_update" => {
            path = path.replace("{id}", &f.webhook.to_string());
            Some(json!({"enabled": true}))
        }
        "webhook_get" | "webhook_test" | "webhook_delivery_list" | "webhook_redeliver" => {
            path = path
                .replace("{id}", &f.webhook.to_string())
                .replace("{delivery}", &f.delivery.to_string());
            None
        }
        "webhook_delete" => {
            let (s, w) = c
                .call(
                    Method::POST,
                    "/v1/webhooks",
                    Some(owner),
                    Some(json!({"url": "https://hooks.invalid/gone", "events": ["*"]})),
                )
                .await;
            assert_eq!(s, 201, "{w}");
            path = path.replace("{id}", &w["id"].to_string());
            None
        }
        "token_revoke" => {
            let (_, t) = c
                .call(
                    Method::POST,
                    "/v1/tokens",
                    Some(owner),
                    Some(json!({"name": format!("victim-{n}")})),
                )
                .await;
            path = path.replace("{id}", &t["id"].to_string());
            None
        }
        _ => None,
    };
    (path, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_every_caller_as_the_rules_say() {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../openapi/berth.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let admin = c.token.clone();
    let a = Some(admin.as_str());

    // Two tenants: ursula in tenant-a, otto in tenant-b.
    for (acct, user) in [("tenant-a", "ursula"), ("tenant-b", "otto")] {
        c.call(Method::POST, "/v1/accounts", a, Some(json!({"name": acct})))
            .await;
        c.call(Method::POST, "/v1/users", a, Some(json!({"name": user})))
            .await;
        c.call(
            Method::PUT,
            &format!("/v1/accounts/{acct}/users/{user}"),
            a,
            Some(json!({})),
        )
        .await;
    }
    let owner = c.token_for("ursula", Role::User);
    let (s, job) = c
        .call(
            Method::POST,
            "/v1/jobs",
            Some(&owner),
            Some(json!({"script": "#!/bin/bash\n#SBATCH --begin=now+1hour\ntrue\n"})),
        )
        .await;
    assert_eq!(s, 201);
    let mut scoped = std::collections::HashMap::new();
    for scope in ["read-only", "submit"] {
        let (s, t) = c
            .call(
                Method::POST,
                "/v1/tokens",
                Some(&owner),
                Some(json!({"name": scope, "scope": scope})),
            )
            .await;
        assert_eq!(s, 201);
        scoped.insert(scope, t["token"].as_str().unwrap().to_string());
    }
    let good = jwt(SECRET, "alice", Role::Admin, AUDIENCE, 3600);
    let parts: Vec<&str> = good.split('.').collect();
    // {"alg":"none","typ":"JWT"}
    let alg_none = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{}.", parts[1]);
    // A running job of ursula's on the cluster's worker, with one step.
    let (s, running) = c
        .call(
            Method::POST,
            "/v1/jobs",
            Some(&owner),
            Some(json!({"script": "#!/bin/bash\nsleep 600\n"})),
        )
        .await;
    assert_eq!(s, 201, "{running}");
    let running = running["id"].as_i64().unwrap();
    let job_token = c.job_token("ursula", running, 0).await;
    let token = |who: Who| -> Option<String> {
        Some(match who {
            Who::NoToken => return None,
            Who::Expired => jwt(SECRET, "alice", Role::Admin, AUDIENCE, -3600),
            Who::WrongSignature => jwt("not-the-secret", "alice", Role::Admin, AUDIENCE, 3600),
            Who::AlgNone => alg_none.clone(),
            Who::WrongAudience => jwt(SECRET, "alice", Role::Admin, "someone-else", 3600),
            Who::Admin => admin.clone(),
            Who::Operator => c.token_for("olga", Role::Operator),
            Who::Owner => owner.clone(),
            Who::OtherTenant => c.token_for("otto", Role::User),
            Who::Node => c.token_for("node:node-x", Role::Node),
            Who::ReadOnlyToken => scoped["read-only"].clone(),
            Who::SubmitToken => scoped["submit"].clone(),
            Who::JobToken => job_token.clone(),
        })
    };
    c.wait_for(running, 60, |j| {
        j.state == berth_core::state::JobState::Running
    })
    .await;
    let (s, step) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{running}/steps"),
            Some(&owner),
            Some(json!({"command": ["true"]})),
        )
        .await;
    assert_eq!(s, 201, "{step}");
    // A pool with one powered-down slot (authz-pool-1), declared once the running job
    // runs (no job is placed on it).
    let (s, p) = c
        .call(Method::PUT, "/v1/pools/authz-pool", a, Some(pool_body()))
        .await;
    assert_eq!(s, 201, "{p}");
    // node-x registers after the running job started, so that job is not on node-x.
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/nodes/register",
            a,
            Some(json!({"name": "node-x", "hostname": "x", "cpus": 4, "memory_mib": 1024, "gpus": []})),
        )
        .await;
    assert_eq!(s, 200);
    // The pending job's priority factors appear after a scheduler cycle.
    let pending = job["id"].as_i64().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (s, _) = c
            .call(
                Method::GET,
                &format!("/v1/jobs/{pending}/priority"),
                Some(&owner),
                None,
            )
            .await;
        if s == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no priority for job {pending}: {s}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // ursula's webhook, with a test delivery.
    let (s, webhook) = c
        .call(
            Method::POST,
            "/v1/webhooks",
            Some(&owner),
            Some(json!({"url": "https://hooks.invalid/authz", "events": ["berth.job.*"]})),
        )
        .await;
    assert_eq!(s, 201, "{webhook}");
    let webhook = webhook["id"].as_i64().unwrap();
    let (s, delivery) = c
        .call(
            Method::POST,
            &format!("/v1/webhooks/{webhook}/test"),
            Some(&owner),
            None,
        )
        .await;
    assert_eq!(s, 202, "{delivery}");
    let fixture = Fixture {
        job: pending,
        running,
        step: step["step_id"].as_i64().unwrap(),
        webhook,
        delivery: delivery["id"].as_i64().unwrap(),
        counter: Default::default(),
    };

    let mut failures = Vec::new();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Ok(method) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            let id = op["operationId"].as_str().unwrap();
            let secured = op["security"]
                .as_array()
                .is_some_and(|s| s.iter().any(|r| r.get("bearer").is_some()));
            for who in EVERYONE {
                let Some(want) = expected(id, who, secured) else {
                    failures.push(format!("{id}: no rule in the authorisation matrix"));
                    break;
                };
                let (p, body) = prepare(&c, &fixture, id, path, &owner).await;
                let (got, answer) = c
                    .call(method.clone(), &p, token(who).as_deref(), body)
                    .await;
                checked += 1;
                if got != want {
                    failures.push(format!(
                        "{method} {p} ({id}) as {who:?}: want {want}, got {got}: {answer}"
                    ));
                }
                if got == 401 {
                    assert_eq!(answer["code"], "unauthorized", "{id} {who:?}");
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 49 * EVERYONE.len(), "only {checked} cases");
}
