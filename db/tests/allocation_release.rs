//! Releasing an allocation never breaks `released_at >= created_at`, even from a
//! transaction that began before the allocation was made (issue 10, item 14: under load
//! the api answered 500 to a sync because `released_at = now()`, the transaction's
//! start, fell before `created_at`).

use berth_db::{allocation, job, node};
use sqlx::PgPool;
use std::time::Duration;

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_transaction_older_than_the_allocation_releases_it(pool: PgPool) {
    let mut tx = berth_db::begin(&pool).await.unwrap();
    let gpus = vec![node::GpuInsert {
        index: 0,
        uuid: "GPU-release-0".into(),
        model: "NVIDIA H100 80GB HBM3".into(),
        memory_mib: 81559,
        domain: None,
        kind: "gpu".into(),
        parent: None,
    }];
    let node_id = node::node_register_in_tx(&mut tx, "n1", "host", 8, 1024, &[], &gpus)
        .await
        .unwrap();
    let job_id = job::job_insert_in_tx(
        &mut tx,
        &job::JobInsert {
            name: "a".into(),
            user_name: "alice".into(),
            account: None,
            partition: "gpu".into(),
            qos: None,
            num_nodes: 1,
            num_tasks: 1,
            cpus_per_task: 1,
            gpus_per_node: 1,
            gpu_type: None,
            exclusive: false,
            whole_node: false,
            mem_mib: None,
            time_limit: Some(60),
            hold: false,
            script: "#!/bin/sh\ntrue\n".into(),
            submit_dir: None,
            work_dir: None,
            stdout_pattern: "slurm-%j.out".into(),
            stderr_pattern: None,
            environment: serde_json::json!({}),
            spec: serde_json::json!({}),
            reason: None,
            nice: 0,
            begin_time: None,
            dependency: None,
            array_pending: None,
            array_max_running: None,
            array_task_count: None,
            gres: "gpu".into(),
            cpus_per_node: 1,
            mem_per_node_mib: None,
            nodelist: Vec::new(),
            exclude: Vec::new(),
            partitions: Vec::new(),
            time_min: None,
            script_args: Vec::new(),
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    // The releasing transaction starts first (its now() is fixed from here) ...
    let mut old = berth_db::begin(&pool).await.unwrap();
    let started: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(&mut *old)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    // ... the allocation is made and committed after it began ...
    let mut tx = berth_db::begin(&pool).await.unwrap();
    allocation::allocation_insert_in_tx(
        &mut tx,
        &allocation::AllocationInsert {
            job_id,
            run: 0,
            node_id,
            node_index: 0,
            gpu_indices: &[0],
            cpu_ids: &[],
            mem_mib: 0,
            exclusive: false,
            term: 1,
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    // ... and it still releases the allocation (READ COMMITTED sees it).
    let released = allocation::allocation_release_job_in_tx(&mut old, job_id, 0)
        .await
        .expect("the release keeps released_at >= created_at");
    assert_eq!(released, vec![node_id]);
    old.commit().await.unwrap();
    let (created, released_at): (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>) =
        sqlx::query_as("SELECT created_at, released_at FROM allocations WHERE job_id = $1")
            .bind(job_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(
        created > started,
        "the allocation is younger than the releasing transaction"
    );
    assert_eq!(released_at, created, "released no earlier than made");
}
