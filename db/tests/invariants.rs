//! The database's own guarantees, checked against a real PostgreSQL: a GPU or a CPU can
//! never be held by two live allocations, and the leader lease fences deposed leaders.

use berth_db::{allocation, job, lease, node, DbError};
use sqlx::PgPool;

async fn one_node_one_job(pool: &PgPool) -> (i64, i64, i64) {
    let mut tx = berth_db::begin(pool).await.unwrap();
    let gpus: Vec<node::GpuInsert> = (0..4)
        .map(|i| node::GpuInsert {
            index: i,
            uuid: format!("GPU-test-{i}"),
            model: "NVIDIA H100 80GB HBM3".into(),
            memory_mib: 81559,
            domain: None,
            kind: "gpu".into(),
            parent: None,
        })
        .collect();
    let node_id = node::node_register_in_tx(&mut tx, "n1", "host", 8, 1024, &[], &gpus)
        .await
        .unwrap();
    let insert = job::JobInsert {
        name: "a".into(),
        user_name: "alice".into(),
        account: None,
        partition: "gpu".into(),
        qos: None,
        num_nodes: 1,
        num_tasks: 1,
        cpus_per_task: 1,
        gpus_per_node: 2,
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
    };
    let a = job::job_insert_in_tx(&mut tx, &insert).await.unwrap();
    let b = job::job_insert_in_tx(&mut tx, &insert).await.unwrap();
    tx.commit().await.unwrap();
    (node_id, a, b)
}

/// Job `job_id`'s first run on node `node_id`, holding `gpus` and no CPUs.
fn gpus_only<'a>(job_id: i64, node_id: i64, gpus: &'a [i32]) -> allocation::AllocationInsert<'a> {
    allocation::AllocationInsert {
        job_id,
        run: 0,
        node_id,
        node_index: 0,
        gpu_indices: gpus,
        cpu_ids: &[],
        mem_mib: 0,
        exclusive: false,
        term: 1,
    }
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_held_cpu_cannot_be_allocated_again(pool: PgPool) {
    let (node_id, a, b) = one_node_one_job(&pool).await;
    let with_cpus = |job_id, gpus, cpus| allocation::AllocationInsert {
        cpu_ids: cpus,
        mem_mib: 256,
        ..gpus_only(job_id, node_id, gpus)
    };
    let mut tx = berth_db::begin(&pool).await.unwrap();
    allocation::allocation_insert_in_tx(&mut tx, &with_cpus(a, &[0], &[0, 1, 2]))
        .await
        .unwrap();
    tx.commit().await.unwrap();

    // Other GPUs, but CPU 2 is held.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    let err = allocation::allocation_insert_in_tx(&mut tx, &with_cpus(b, &[1], &[2, 3]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DbError::Conflict { constraint, .. } if constraint == "allocation_cpus_one_live_holder"),
        "{err:?}"
    );
    drop(tx);
    // Other CPUs of the same node are free.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    allocation::allocation_insert_in_tx(&mut tx, &with_cpus(b, &[1], &[3, 4]))
        .await
        .unwrap();
    let mut conn = pool.acquire().await.unwrap();
    let holdings = allocation::allocation_node_holdings_in_tx(&mut tx, node_id, &[])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(holdings.held_cpu_ids, vec![0, 1, 2, 3, 4]);
    assert_eq!(holdings.held_mem_mib, 512);
    assert_eq!((holdings.cpus, holdings.memory_mib), (8, 1024));
    drop(tx);

    // Once released, the CPUs may be allocated again.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    allocation::allocation_release_job_in_tx(&mut tx, a, 0)
        .await
        .unwrap();
    allocation::allocation_insert_in_tx(&mut tx, &with_cpus(b, &[1], &[1, 2]))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let live = berth_db::snapshot::read_allocations_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(live.len(), 1);
    assert_eq!(
        (live[0].job_id, &live[0].cpu_ids, live[0].mem_mib),
        (b, &vec![1, 2], 256)
    );
    let holdings = allocation::allocation_node_holdings_in_tx(&mut conn, node_id, &[])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(holdings.held_cpu_ids, vec![1, 2]);
    assert_eq!(holdings.held_mem_mib, 256);
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_held_gpu_cannot_be_allocated_again(pool: PgPool) {
    let (node_id, a, b) = one_node_one_job(&pool).await;
    let mut tx = berth_db::begin(&pool).await.unwrap();
    allocation::allocation_insert_in_tx(&mut tx, &gpus_only(a, node_id, &[0, 1]))
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let mut tx = berth_db::begin(&pool).await.unwrap();
    let err = allocation::allocation_insert_in_tx(&mut tx, &gpus_only(b, node_id, &[1, 2]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DbError::Conflict { constraint, .. } if constraint == "allocation_gpus_one_live_holder"),
        "{err:?}"
    );
    drop(tx);

    // Once released, the GPU may be allocated again, and the history keeps both rows.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    allocation::allocation_release_job_in_tx(&mut tx, a, 0)
        .await
        .unwrap();
    allocation::allocation_insert_in_tx(&mut tx, &gpus_only(b, node_id, &[1, 2]))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let mut conn = pool.acquire().await.unwrap();
    let live = berth_db::snapshot::read_allocations_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].job_id, b);
    assert_eq!(live[0].gpu_indices, vec![1, 2]);
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_gpu_the_node_lacks_cannot_be_allocated(pool: PgPool) {
    let (node_id, a, _) = one_node_one_job(&pool).await;
    let mut tx = berth_db::begin(&pool).await.unwrap();
    let err = allocation::allocation_insert_in_tx(&mut tx, &gpus_only(a, node_id, &[7]))
        .await
        .unwrap_err();
    assert!(matches!(err, DbError::ForeignKey { .. }), "{err:?}");
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn the_lease_has_one_holder_and_fences_old_terms(pool: PgPool) {
    let t1 = lease::lease_acquire(&pool, "scheduler", "a", 30.0)
        .await
        .unwrap();
    assert_eq!(t1, Some(1));
    assert_eq!(
        lease::lease_acquire(&pool, "scheduler", "b", 30.0)
            .await
            .unwrap(),
        None
    );
    assert!(lease::lease_renew(&pool, "scheduler", "a", 1, 30.0)
        .await
        .unwrap());
    assert!(!lease::lease_renew(&pool, "scheduler", "b", 1, 30.0)
        .await
        .unwrap());

    // a's lease lapses: b takes over with a new term, and a's term no longer writes.
    lease::lease_release(&pool, "scheduler", "a", 1)
        .await
        .unwrap();
    assert_eq!(
        lease::lease_acquire(&pool, "scheduler", "b", 30.0)
            .await
            .unwrap(),
        Some(2)
    );
    let mut tx = berth_db::begin(&pool).await.unwrap();
    assert!(!lease::lease_check_in_tx(&mut tx, "scheduler", 1)
        .await
        .unwrap());
    assert!(lease::lease_check_in_tx(&mut tx, "scheduler", 2)
        .await
        .unwrap());
    drop(tx);
    assert!(!lease::lease_renew(&pool, "scheduler", "a", 1, 30.0)
        .await
        .unwrap());
    assert_eq!(
        lease::lease_current(&pool, "scheduler").await.unwrap(),
        Some(("b".to_string(), 2))
    );
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn check_constraints_refuse_impossible_jobs(pool: PgPool) {
    let err = sqlx::query("UPDATE jobs SET state = 'COMPLETED'")
        .execute(&pool)
        .await;
    assert!(err.is_ok(), "no rows, no violation");
    let (_, a, _) = one_node_one_job(&pool).await;
    let err = sqlx::query("UPDATE jobs SET state = 'COMPLETED' WHERE id = $1")
        .bind(a)
        .execute(&pool)
        .await
        .unwrap_err();
    assert!(matches!(DbError::from(err), DbError::Check { .. }));
}
