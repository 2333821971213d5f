//! Advance reservations end to end: `scontrol create|update|delete|show reservation` and
//! `/v1/reservations` (who may write and see them, the refusals: bad fields, busy nodes,
//! overlaps, unknown or foreign `--reservation` at submission), and what the scheduler
//! does with them: a maintenance window keeps plain jobs off its node while its own jobs
//! run, and a future window leaves the node to short jobs that end before it.

use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use berth_core::state::JobState;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const SLEEP: &str = "#!/bin/bash\nsleep 300\n";

fn one_node() -> Options {
    Options {
        workers: 1,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reservations_are_managed_like_slurms_and_checked_at_submission() {
    let c = TestCluster::start(one_node()).await;
    let olga = c.token_for("olga", Role::Operator);
    let bob = c.token_for("bob", Role::User);
    let carol = c.token_for("carol", Role::User);

    // A plain user may not create one.
    let (s, p) = c
        .call(
            Method::POST,
            "/v1/reservations",
            Some(&bob),
            Some(json!({"name": "mine", "duration": "10", "nodes": "node-1", "users": ["bob"]})),
        )
        .await;
    assert_eq!(s, 403, "{p}");

    // An operator creates a maintenance window in an hour, as with Slurm.
    let (code, out, err) = c.cli(
        &olga,
        &[
            "scontrol",
            "create",
            "reservation",
            "ReservationName=maint",
            "StartTime=now+1hour",
            "Duration=10",
            "Nodes=node-1",
            "Users=bob",
            "Flags=MAINT",
        ],
    );
    assert_eq!(
        (code, out.as_str()),
        (0, "Reservation created: maint\n"),
        "{err}"
    );
    let (code, out, err) = c.cli(&olga, &["scontrol", "show", "reservation", "maint"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("ReservationName=maint StartTime="), "{out}");
    for part in [
        " Duration=00:10:00\n",
        "   Nodes=node-1 NodeCnt=1 CoreCnt=",
        " PartitionName=(null) Flags=MAINT\n",
        "   TRES=cpu=",
        ",gres/gpu=8\n",
        "   Users=bob Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE",
    ] {
        assert!(out.contains(part), "{part:?} in\n{out}");
    }

    // Users see the reservations they may use, and no other.
    let (s, list) = c
        .call(Method::GET, "/v1/reservations", Some(&bob), None)
        .await;
    assert_eq!(s, 200);
    assert_eq!(list["items"][0]["name"], "maint");
    let (_, list) = c
        .call(Method::GET, "/v1/reservations", Some(&carol), None)
        .await;
    assert_eq!(list["items"], json!([]));
    let (s, _) = c
        .call(Method::GET, "/v1/reservations/maint", Some(&carol), None)
        .await;
    assert_eq!(s, 404);
    let (code, out, _) = c.cli(&carol, &["scontrol", "show", "reservation"]);
    assert_eq!((code, out.as_str()), (0, "No reservations in the system\n"));

    // Bad definitions: 422 naming the field.
    let create = |body: serde_json::Value| {
        let olga = olga.clone();
        let c = &c;
        async move {
            let (s, p) = c
                .call(Method::POST, "/v1/reservations", Some(&olga), Some(body))
                .await;
            (s, p["field"].as_str().unwrap_or_default().to_string(), p)
        }
    };
    for (body, field) in [
        (
            json!({"name": "r", "duration": "abc", "nodes": "node-1", "users": ["bob"]}),
            "duration",
        ),
        (
            json!({"name": "r", "nodes": "node-1", "users": ["bob"]}),
            "duration",
        ),
        (
            json!({"name": "r", "duration": "10", "nodes": "node-1"}),
            "users",
        ),
        (
            json!({"name": "r", "duration": "10", "nodes": "node-9", "users": ["bob"]}),
            "nodes",
        ),
        (
            json!({"name": "r", "duration": "10", "users": ["bob"]}),
            "nodes",
        ),
        (
            json!({"name": "r", "duration": "10", "nodes": "node-1", "node_cnt": 1, "users": ["bob"]}),
            "nodes",
        ),
        (
            json!({"name": "r", "duration": "10", "node_cnt": 2, "users": ["bob"]}),
            "node_cnt",
        ),
        (
            json!({"name": "r", "duration": "10", "gpus": 9, "users": ["bob"]}),
            "gpus",
        ),
        (
            json!({"name": "r", "start_time": "yesterday", "duration": "10", "nodes": "node-1", "users": ["bob"]}),
            "start_time",
        ),
        (
            json!({"name": "r", "start_time": "now+2hours", "end_time": "now+1hour", "nodes": "node-1", "users": ["bob"]}),
            "end_time",
        ),
        (
            json!({"name": "r", "start_time": "2020-01-01T00:00", "duration": "10", "nodes": "node-1", "users": ["bob"]}),
            "end_time",
        ),
        (
            json!({"name": "r", "duration": "2-0", "nodes": "node-1", "users": ["bob"], "flags": ["DAILY"]}),
            "duration",
        ),
        (
            json!({"name": "-r", "duration": "10", "nodes": "node-1", "users": ["bob"]}),
            "name",
        ),
        (
            json!({"name": "r", "duration": "10", "nodes": "node-1", "accounts": ["nosuch"]}),
            "accounts",
        ),
    ] {
        let (s, f, p) = create(body.clone()).await;
        assert_eq!((s, f.as_str()), (422, field), "{body}: {p}");
    }
    // Taken names and overlaps: 409. A later window, or a MAINT one, may share the node.
    let (s, _, p) = create(json!({"name": "maint", "start_time": "now+5hours", "duration": "10", "nodes": "node-1", "users": ["bob"]})).await;
    assert_eq!(
        (s, p["code"].as_str()),
        (409, Some("reservation_exists")),
        "{p}"
    );
    let (s, _, p) = create(json!({"name": "other", "start_time": "now+65minutes", "duration": "60", "nodes": "node-1", "users": ["bob"]})).await;
    assert_eq!(
        (s, p["code"].as_str()),
        (409, Some("reservation_overlap")),
        "{p}"
    );
    let (s, _, p) = create(json!({"name": "other", "start_time": "now+3hours", "duration": "60", "node_cnt": 1, "users": ["bob"]})).await;
    assert_eq!(s, 201, "{p}");
    assert_eq!(p["node_list"], "node-1");
    let (s, _, p) = create(json!({"name": "audit", "start_time": "now+65minutes", "duration": "5", "nodes": "node-1", "users": ["bob"], "flags": ["MAINT"]})).await;
    assert_eq!(s, 201, "{p}");
    // GPU-count reservations take GPUs no overlapping one holds.
    let (s, _, p) = create(json!({"name": "g1", "start_time": "now+8hours", "duration": "60", "gpus": 2, "users": ["bob"]})).await;
    assert_eq!(s, 201, "{p}");
    assert_eq!(p["nodes"], json!([{"name": "node-1", "gpus": [0, 1]}]));
    assert_eq!(p["tres"], "gres/gpu=2");
    let (s, _, p) = create(json!({"name": "g2", "start_time": "now+8hours", "duration": "60", "gpus": 6, "users": ["bob"]})).await;
    assert_eq!(s, 201, "{p}");
    assert_eq!(p["nodes"][0]["gpus"], json!([2, 3, 4, 5, 6, 7]));
    let (s, _, p) = create(json!({"name": "g3", "start_time": "now+8hours", "duration": "60", "gpus": 1, "users": ["bob"]})).await;
    assert_eq!((s, p["code"].as_str()), (409, Some("nodes_busy")), "{p}");

    // --reservation at submission: unknown or foreign ones are refused naming it.
    let (s, p) = c
        .call(
            Method::POST,
            "/v1/jobs",
            Some(&bob),
            Some(json!({"script": "#!/bin/bash\ntrue\n", "args": ["--reservation=nosuch"]})),
        )
        .await;
    assert_eq!(
        (s, p["field"].as_str()),
        (422, Some("--reservation")),
        "{p}"
    );
    let (s, p) = c
        .call(
            Method::POST,
            "/v1/jobs",
            Some(&carol),
            Some(json!({"script": "#!/bin/bash\ntrue\n", "args": ["--reservation=maint"]})),
        )
        .await;
    assert_eq!(
        (s, p["field"].as_str()),
        (422, Some("--reservation")),
        "{p}"
    );
    let id = c
        .submit_as(
            "bob",
            "#!/bin/bash\n#SBATCH --reservation=maint\ntrue\n",
            &[],
            &[],
        )
        .await;
    assert_eq!(c.job(id).await.spec.reservation.as_deref(), Some("maint"));
    let (code, out, _) = c.cli(&bob, &["scontrol", "show", "job", &id.to_string()]);
    assert_eq!(code, 0);
    assert!(out.contains("   Reservation=maint\n"), "{out}");
    let (code, out, err) = c.cli(&c.token, &["cancel", &id.to_string()]);
    assert_eq!(code, 0, "{out}{err}");
    c.wait_ended(id, 30).await;

    // Busy nodes: a running job with a 30-minute limit keeps a reservation from starting
    // before it ends, unless IGNORE_JOBS.
    let busy = c.submit(SLEEP, &["-t", "30", "--gpus=1"]).await;
    c.wait_for(busy, 60, |j| j.state == JobState::Running).await;
    let (s, _, p) =
        create(json!({"name": "now", "duration": "10", "nodes": "node-1", "users": ["bob"]})).await;
    assert_eq!((s, p["code"].as_str()), (409, Some("nodes_busy")), "{p}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .starts_with("Requested nodes are busy"),
        "{p}"
    );
    let (s, _, p) = create(json!({"name": "now", "duration": "10", "nodes": "node-1", "users": ["bob"], "flags": ["IGNORE_JOBS"]})).await;
    assert_eq!(s, 201, "{p}");
    assert_eq!(p["state"], "ACTIVE");
    let (s, _, p) = create(json!({"name": "late", "start_time": "now+45minutes", "duration": "10", "nodes": "node-1", "users": ["bob"]})).await;
    assert_eq!(s, 201, "{p}");

    // Update and delete, as scontrol does them.
    let (code, out, err) = c.cli(
        &olga,
        &[
            "scontrol",
            "update",
            "ReservationName=maint",
            "Duration=20",
            "Users=bob,carol",
        ],
    );
    assert_eq!((code, out.as_str()), (0, "Reservation updated.\n"), "{err}");
    let (s, r) = c
        .call(Method::GET, "/v1/reservations/maint", Some(&carol), None)
        .await;
    assert_eq!((s, r["duration"].as_u64()), (200, Some(1200)), "{r}");
    let (code, _, err) = c.cli(&bob, &["scontrol", "delete", "ReservationName=maint"]);
    assert_ne!(code, 0, "{err}");
    let (code, _, err) = c.cli(&olga, &["reservation", "delete", "maint"]);
    assert_eq!(code, 0, "{err}");
    let (s, _) = c
        .call(Method::GET, "/v1/reservations/maint", Some(&olga), None)
        .await;
    assert_eq!(s, 404);
    let (code, _, err) = c.cli(&olga, &["scontrol", "delete", "ReservationName=maint"]);
    assert_ne!(code, 0);
    assert!(err.contains("no reservation maint"), "{err}");
}

/// The acceptance check (needs the planner's reservation semantics): a maintenance
/// reservation on the only node keeps a plain job pending while a job that names it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_maintenance_reservation_keeps_plain_jobs_off_its_node() {
    let c = TestCluster::start(one_node()).await;
    let (code, out, err) = c.cli(
        &c.token,
        &[
            "scontrol",
            "create",
            "reservation",
            "ReservationName=maint",
            "StartTime=now",
            "Duration=10",
            "Nodes=node-1",
            "Users=alice",
            "Flags=MAINT",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let plain = c.submit(SLEEP, &["--gpus=1"]).await;
    let inside = c.submit(SLEEP, &["--gpus=1", "--reservation=maint"]).await;
    let job = c
        .wait_for(inside, 60, |j| j.state == JobState::Running)
        .await;
    assert_eq!(job.nodelist.as_deref(), Some("node-1"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let plain = c.job(plain).await;
    assert_eq!(plain.state, JobState::Pending, "{:?}", plain.reason);
    c.cli(
        &c.token,
        &["cancel", &inside.to_string(), &plain.id.to_string()],
    );
}

/// Backfill around a future window (needs the planner's reservation semantics): a short
/// job that ends before the reservation starts runs now; a long one waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_future_reservation_leaves_its_node_to_jobs_that_end_before_it() {
    let c = TestCluster::start(one_node()).await;
    let (code, out, err) = c.cli(
        &c.token,
        &[
            "scontrol",
            "create",
            "reservation",
            "ReservationName=later",
            "StartTime=now+30minutes",
            "Duration=60",
            "Nodes=node-1",
            "Users=root",
            "Flags=MAINT",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let long = c.submit(SLEEP, &["--gpus=1", "-t", "60"]).await;
    let short = c.submit(SLEEP, &["--gpus=1", "-t", "10"]).await;
    c.wait_for(short, 60, |j| j.state == JobState::Running)
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let long = c.job(long).await;
    assert_eq!(long.state, JobState::Pending, "{:?}", long.reason);
    c.cli(
        &c.token,
        &["cancel", &short.to_string(), &long.id.to_string()],
    );
}
