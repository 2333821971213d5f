//! The leader's reconcilers against a real PostgreSQL: node timeout (DOWN, requeue or
//! NODE_FAIL, gangs as a whole), return to service, stuck allocations, and the fencing
//! term on every write.

use crate::register;
use berth_db::{allocation, job, lease, node};
use berth_scheduler::reconcile::{reconcile, ReconcileSettings, ReturnToService};
use berth_scheduler::LEASE_ROLE;
use sqlx::PgPool;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(3600);

fn settings(rts: ReturnToService) -> ReconcileSettings {
    ReconcileSettings {
        node_timeout: Duration::from_secs(30),
        return_to_service: rts,
        completing_timeout: Duration::from_secs(120),
    }
}

/// A running job on `nodes` (2 GPUs each), placed under `term`.
async fn running_job(pool: &PgPool, nodes: &[i64], spec: serde_json::Value, term: i64) -> i64 {
    let insert = job::JobInsert {
        name: "a".into(),
        num_nodes: nodes.len() as i32,
        time_limit: Some(60),
        spec,
        ..crate::insert("alice", 2)
    };
    let mut tx = berth_db::begin(pool).await.unwrap();
    let id = job::job_insert_in_tx(&mut tx, &insert).await.unwrap();
    assert!(job::job_start_in_tx(&mut tx, id, term, None).await.unwrap());
    for (index, n) in nodes.iter().enumerate() {
        let held: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM allocation_gpus WHERE node_id = $1 AND released_at IS NULL",
        )
        .bind(n)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
        let first = held as i32;
        allocation::allocation_insert_in_tx(
            &mut tx,
            &allocation::AllocationInsert {
                job_id: id,
                run: 0,
                node_id: *n,
                node_index: index as i32,
                gpu_indices: &[first, first + 1],
                cpu_ids: &[],
                mem_mib: 0,
                exclusive: false,
                term,
            },
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    id
}

async fn silence(pool: &PgPool, node: &str) {
    sqlx::query("UPDATE nodes SET last_heartbeat = now() - interval '1 hour' WHERE name = $1")
        .bind(node)
        .execute(pool)
        .await
        .unwrap();
}

async fn live_allocations(pool: &PgPool, job: i64) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM allocations WHERE job_id = $1 AND released_at IS NULL")
        .bind(job)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn lead(pool: &PgPool, holder: &str) -> i64 {
    sqlx::query("UPDATE leader_lease SET expires_at = now() - interval '1 second'")
        .execute(pool)
        .await
        .unwrap();
    lease::lease_acquire(pool, LEASE_ROLE, holder, 30.0)
        .await
        .unwrap()
        .unwrap()
}

async fn state(pool: &PgPool, name: &str) -> (String, Option<String>) {
    let n = node::node_get_by_name(pool, name).await.unwrap().unwrap();
    (n.state, n.reason)
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_silent_node_goes_down_and_its_jobs_requeue_or_fail_as_a_whole(pool: PgPool) {
    let n1 = register(&pool, "n1").await;
    let n2 = register(&pool, "n2").await;
    let old = lead(&pool, "a").await;
    let gang = running_job(&pool, &[n1, n2], serde_json::json!({}), old).await;
    let single = running_job(&pool, &[n2], serde_json::json!({ "requeue": false }), old).await;
    let elsewhere = running_job(&pool, &[n1], serde_json::json!({}), old).await;
    silence(&pool, "n2").await;
    let rts = settings(ReturnToService::NonResponsive);

    // A deposed leader writes nothing.
    let term = lead(&pool, "b").await;
    let report = reconcile(&pool, old, LONG, &rts).await.unwrap();
    assert!(report.deposed);
    assert_eq!(state(&pool, "n2").await.0, "UP");
    assert_eq!(
        job::job_get(&pool, gang).await.unwrap().unwrap().state,
        "RUNNING"
    );

    // A leader that has not led for a whole node timeout does not judge silence yet.
    let report = reconcile(&pool, term, Duration::from_secs(5), &rts)
        .await
        .unwrap();
    assert!(report.nodes_down.is_empty());

    let report = reconcile(&pool, term, LONG, &rts).await.unwrap();
    assert_eq!(report.nodes_down, vec!["n2".to_string()]);
    assert_eq!(report.requeued, vec![gang]);
    assert_eq!(report.node_failed, vec![single]);
    assert_eq!(
        state(&pool, "n2").await,
        ("DOWN".into(), Some("Not responding".into()))
    );

    let g = job::job_get(&pool, gang).await.unwrap().unwrap();
    assert_eq!((g.state.as_str(), g.restart_count), ("PENDING", 1));
    assert_eq!((g.start_time, g.end_time, g.exit_code), (None, None, None));
    assert_eq!(
        live_allocations(&pool, gang).await,
        0,
        "both nodes released"
    );
    let s = job::job_get(&pool, single).await.unwrap().unwrap();
    assert_eq!(
        (s.state.as_str(), s.reason.as_deref(), s.restart_count),
        ("NODE_FAIL", Some("NodeDown"), 0)
    );
    assert!(s.end_time.is_some());
    assert_eq!(live_allocations(&pool, single).await, 0);
    let e = job::job_get(&pool, elsewhere).await.unwrap().unwrap();
    assert_eq!(e.state, "RUNNING");
    assert_eq!(live_allocations(&pool, elsewhere).await, 1);

    // A second pass changes nothing more.
    let again = reconcile(&pool, term, LONG, &rts).await.unwrap();
    assert!(again.nodes_down.is_empty() && again.requeued.is_empty());
    assert_eq!(
        job::job_get(&pool, gang)
            .await
            .unwrap()
            .unwrap()
            .restart_count,
        1
    );
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_down_node_that_syncs_again_returns_as_return_to_service_says(pool: PgPool) {
    register(&pool, "n1").await;
    register(&pool, "n2").await;
    let term = lead(&pool, "a").await;
    silence(&pool, "n1").await;
    let never = settings(ReturnToService::Never);
    reconcile(&pool, term, LONG, &never).await.unwrap();
    // n2 was set DOWN by an operator for another reason.
    sqlx::query("UPDATE nodes SET state = 'DOWN', reason = 'bad PSU' WHERE name = 'n2'")
        .execute(&pool)
        .await
        .unwrap();
    // Both sync again.
    sqlx::query("UPDATE nodes SET last_heartbeat = now()")
        .execute(&pool)
        .await
        .unwrap();
    let r = reconcile(&pool, term, LONG, &never).await.unwrap();
    assert!(r.nodes_returned.is_empty());
    assert_eq!(state(&pool, "n1").await.0, "DOWN");
    let r = reconcile(&pool, term, LONG, &settings(ReturnToService::NonResponsive))
        .await
        .unwrap();
    assert_eq!(r.nodes_returned, vec!["n1".to_string()]);
    assert_eq!(state(&pool, "n1").await, ("UP".into(), None));
    assert_eq!(state(&pool, "n2").await.0, "DOWN");
    let r = reconcile(&pool, term, LONG, &settings(ReturnToService::Any))
        .await
        .unwrap();
    assert_eq!(r.nodes_returned, vec!["n2".to_string()]);
    assert_eq!(state(&pool, "n2").await, ("UP".into(), None));
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn an_allocation_stuck_after_its_job_ended_is_released_and_the_node_drained(pool: PgPool) {
    let n1 = register(&pool, "n1").await;
    let n2 = register(&pool, "n2").await;
    let term = lead(&pool, "a").await;
    let cancelled = running_job(&pool, &[n1], serde_json::json!({}), term).await;
    let completing = running_job(&pool, &[n2], serde_json::json!({}), term).await;
    let recent = running_job(&pool, &[n2], serde_json::json!({}), term).await;
    // One was cancelled an hour ago and its node never reported the processes gone; one
    // has been COMPLETING as long; one was cancelled just now.
    sqlx::query("UPDATE jobs SET submit_time = now() - interval '2 hours', start_time = now() - interval '2 hours' WHERE id = ANY($1)")
        .bind(vec![cancelled, completing])
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE jobs SET state = 'CANCELLED', end_time = now() - interval '1 hour' WHERE id = $1",
    )
    .bind(cancelled)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("UPDATE jobs SET state = 'CANCELLED', end_time = now() WHERE id = $1")
        .bind(recent)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE jobs SET state = 'COMPLETING' WHERE id = $1")
        .bind(completing)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE allocations SET created_at = now() - interval '2 hours' WHERE job_id = ANY($1)",
    )
    .bind(vec![cancelled, completing])
    .execute(&pool)
    .await
    .unwrap();
    let r = reconcile(
        &pool,
        term,
        Duration::ZERO,
        &settings(ReturnToService::NonResponsive),
    )
    .await
    .unwrap();
    let mut released = r.stuck_released.clone();
    released.sort();
    assert_eq!(released, vec![cancelled, completing]);
    assert_eq!(live_allocations(&pool, cancelled).await, 0);
    assert_eq!(live_allocations(&pool, completing).await, 0);
    assert_eq!(live_allocations(&pool, recent).await, 1, "within the bound");
    let c = job::job_get(&pool, cancelled).await.unwrap().unwrap();
    assert_eq!(c.state, "CANCELLED", "an ended job keeps its state");
    let f = job::job_get(&pool, completing).await.unwrap().unwrap();
    assert_eq!(
        (f.state.as_str(), f.reason.as_deref()),
        ("FAILED", Some("Kill task failed"))
    );
    assert!(f.end_time.is_some());
    for name in ["n1", "n2"] {
        assert_eq!(
            state(&pool, name).await,
            ("DRAINED".into(), Some("Kill task failed".into())),
            "{name}"
        );
    }
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_run_requeued_after_long_work_is_not_stuck_until_the_bound_passes_after_the_requeue(
    pool: PgPool,
) {
    let n1 = register(&pool, "n1").await;
    let term = lead(&pool, "a").await;
    let fresh = running_job(&pool, &[n1], serde_json::json!({}), term).await;
    let old = running_job(&pool, &[n1], serde_json::json!({}), term).await;
    // Both ran for two hours; one was requeued just now (its node is still stopping it),
    // the other an hour ago and its node never reported the processes gone.
    sqlx::query(
        "UPDATE allocations SET created_at = now() - interval '2 hours' WHERE job_id = ANY($1)",
    )
    .bind(vec![fresh, old])
    .execute(&pool)
    .await
    .unwrap();
    for id in [fresh, old] {
        let mut tx = berth_db::begin(&pool).await.unwrap();
        assert!(job::job_requeue_in_tx(&mut tx, id, "alice")
            .await
            .unwrap()
            .is_some());
        tx.commit().await.unwrap();
    }
    sqlx::query(
        "UPDATE job_events SET at = now() - interval '1 hour' WHERE job_id = $1 AND kind = 'requeued'",
    )
    .bind(old)
    .execute(&pool)
    .await
    .unwrap();
    let r = reconcile(
        &pool,
        term,
        Duration::ZERO,
        &settings(ReturnToService::NonResponsive),
    )
    .await
    .unwrap();
    assert_eq!(r.stuck_released, vec![old]);
    assert_eq!(
        live_allocations(&pool, fresh).await,
        1,
        "requeued within the bound: still held while its node stops it"
    );
    assert_eq!(live_allocations(&pool, old).await, 0);
}
