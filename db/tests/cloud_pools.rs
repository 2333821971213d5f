//! Pools' slots against a real PostgreSQL: a slot that job records name survives a
//! shrink (kept, with a reason, and back in service when the pool grows again) and the
//! pool's deletion (left DOWN outside any pool), so that `sacct` still names it; the
//! power requests; the hourly spend.

use berth_core::pool::PoolSpec;
use berth_db::cloud::{self, PoolDelete, PoolUpsert, PowerRequest};
use sqlx::PgPool;

fn spec(max_nodes: u32) -> PoolSpec {
    serde_json::from_value(serde_json::json!({
        "provider": "local",
        "max_nodes": max_nodes,
        "instance_types": [{"name": "sim", "gpus": "2xH100", "cpus": 8, "memory": "64G",
                            "price_per_hour": 1.25}]
    }))
    .unwrap()
}

async fn upsert(pool: &PgPool, max_nodes: u32) -> PoolUpsert {
    let mut tx = berth_db::begin(pool).await.unwrap();
    let r = cloud::pool_upsert_in_tx(&mut tx, "burst", &spec(max_nodes))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    r
}

async fn node(pool: &PgPool, name: &str) -> Option<(String, Option<String>, Option<String>)> {
    sqlx::query_as("SELECT state, reason, pool FROM nodes WHERE name = $1")
        .bind(name)
        .fetch_optional(pool)
        .await
        .unwrap()
}

/// Gives slot `name` an ended job's allocation (a job record naming it).
async fn with_history(pool: &PgPool, name: &str) {
    let job: i64 = sqlx::query_scalar(
        "INSERT INTO jobs (name, user_name, partition, num_nodes, num_tasks, script, stdout_pattern, spec)
         VALUES ('j', 'alice', 'gpu', 1, 1, '#!/bin/sh', 'slurm-%j.out', '{}') RETURNING id",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO allocations (job_id, run, node_id, node_index, term, released_at)
         SELECT $1, 0, id, 0, 1, now() FROM nodes WHERE name = $2",
    )
    .bind(job)
    .bind(name)
    .execute(pool)
    .await
    .unwrap();
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn slots_named_by_job_records_are_kept(pool: PgPool) {
    assert!(matches!(
        upsert(&pool, 3).await,
        PoolUpsert::Written { created: true, .. }
    ));
    with_history(&pool, "burst-3").await;
    // Shrunk: burst-3 stays (POWERED_DOWN, with why), out of service.
    assert_eq!(
        upsert(&pool, 2).await,
        PoolUpsert::Written {
            created: false,
            slots_kept: vec![]
        }
    );
    let (state, reason, p) = node(&pool, "burst-3").await.unwrap();
    assert_eq!(
        (state.as_str(), p.as_deref()),
        ("POWERED_DOWN", Some("burst"))
    );
    assert!(reason.unwrap().starts_with("above max_nodes (2)"));
    // Grown again: back, without the reason.
    upsert(&pool, 3).await;
    assert_eq!(node(&pool, "burst-3").await.unwrap().1, None);

    // A slot with an instance above max_nodes is left and said so.
    sqlx::query("UPDATE nodes SET state = 'UP', instance_id = 'i-1', instance_type = 'sim' WHERE name = 'burst-2'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(
        cloud::pool_hourly_spend(&pool, "burst").await.unwrap(),
        1.25
    );
    match upsert(&pool, 1).await {
        PoolUpsert::Written { slots_kept, .. } => assert_eq!(slots_kept, vec!["burst-2"]),
        other => panic!("{other:?}"),
    }
    assert!(node(&pool, "burst-2").await.is_some());

    // Power requests: pool nodes only; what is already so is nothing to do.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    assert_eq!(
        cloud::node_power_request_set_in_tx(&mut tx, "burst-2", "up")
            .await
            .unwrap(),
        PowerRequest::AlreadyThere("UP".into())
    );
    assert_eq!(
        cloud::node_power_request_set_in_tx(&mut tx, "burst-2", "down_force")
            .await
            .unwrap(),
        PowerRequest::Set
    );
    assert_eq!(
        cloud::node_power_request_set_in_tx(&mut tx, "nowhere", "up")
            .await
            .unwrap(),
        PowerRequest::Missing
    );
    tx.commit().await.unwrap();

    // Deleting waits for burst-2's instance; then burst-3 (job records) stays DOWN
    // outside any pool, the others go.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    assert_eq!(
        cloud::pool_delete_in_tx(&mut tx, "burst").await.unwrap(),
        PoolDelete::Busy {
            node: "burst-2".into(),
            state: "UP".into()
        }
    );
    drop(tx);
    sqlx::query(
        "UPDATE nodes SET state = 'POWERED_DOWN', instance_id = NULL WHERE name = 'burst-2'",
    )
    .execute(&pool)
    .await
    .unwrap();
    let mut tx = berth_db::begin(&pool).await.unwrap();
    assert_eq!(
        cloud::pool_delete_in_tx(&mut tx, "burst").await.unwrap(),
        PoolDelete::Deleted
    );
    tx.commit().await.unwrap();
    assert!(node(&pool, "burst-1").await.is_none());
    assert!(node(&pool, "burst-2").await.is_none());
    let (state, reason, p) = node(&pool, "burst-3").await.unwrap();
    assert_eq!((state.as_str(), p), ("DOWN", None));
    assert!(reason.unwrap().contains("pool burst deleted"));
    assert!(cloud::pool_get(&pool, "burst").await.unwrap().is_none());
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_partition_of_only_the_pools_nodes_is_not_emptied(pool: PgPool) {
    sqlx::query("INSERT INTO partitions (name, nodes) VALUES ('cloud', '{placeholder}')")
        .execute(&pool)
        .await
        .unwrap();
    let mut s = spec(2);
    s.partitions = vec!["cloud".into()];
    let mut tx = berth_db::begin(&pool).await.unwrap();
    cloud::pool_upsert_in_tx(&mut tx, "burst", &s)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let nodes: Vec<String> =
        sqlx::query_scalar("SELECT nodes FROM partitions WHERE name = 'cloud'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(nodes, ["burst-1", "burst-2", "placeholder"]);
    sqlx::query("UPDATE partitions SET nodes = '{burst-1,burst-2}' WHERE name = 'cloud'")
        .execute(&pool)
        .await
        .unwrap();
    let mut tx = berth_db::begin(&pool).await.unwrap();
    assert_eq!(
        cloud::pool_upsert_in_tx(&mut tx, "burst", &spec(2))
            .await
            .unwrap(),
        PoolUpsert::PartitionEmptied("cloud".into())
    );
    drop(tx);
    let mut tx = berth_db::begin(&pool).await.unwrap();
    assert_eq!(
        cloud::pool_delete_in_tx(&mut tx, "burst").await.unwrap(),
        PoolDelete::PartitionEmptied("cloud".into())
    );
}
