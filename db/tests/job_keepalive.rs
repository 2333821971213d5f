//! Keep-alives of interactive allocations (Slurm's `InactiveLimit`): a job whose client's
//! last keep-alive has expired ends (pending: CANCELLED, running: TIMEOUT, reason
//! `InactiveLimit`); one with a fresh keep-alive, and one that never had any (sbatch's),
//! are left alone.

use berth_db::{job, job_keepalive};
use sqlx::PgPool;

async fn insert(pool: &PgPool, name: &str, state: &str) -> i64 {
    let mut tx = berth_db::begin(pool).await.unwrap();
    let id = job::job_insert_in_tx(
        &mut tx,
        &job::JobInsert {
            name: name.into(),
            user_name: "alice".into(),
            account: None,
            partition: "gpu".into(),
            qos: None,
            num_nodes: 1,
            num_tasks: 1,
            cpus_per_task: 1,
            gpus_per_node: 0,
            gpu_type: None,
            exclusive: false,
            whole_node: false,
            mem_mib: None,
            time_limit: Some(600),
            hold: false,
            script: "#!/bin/sh\nwhile :; do sleep 3600; done\n".into(),
            submit_dir: None,
            work_dir: None,
            stdout_pattern: "/dev/null".into(),
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
    // The states the scheduler and workers would have brought them to.
    sqlx::query(
        "UPDATE jobs SET state = $2,
                start_time = CASE WHEN $2 = 'PENDING' THEN NULL ELSE now() END,
                end_time = CASE WHEN $2 IN ('PENDING', 'RUNNING') THEN NULL ELSE now() END
         WHERE id = $1",
    )
    .bind(id)
    .bind(state)
    .execute(pool)
    .await
    .unwrap();
    id
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_silent_clients_job_ends_and_the_others_stay(pool: PgPool) {
    let pending = insert(&pool, "pending-silent", "PENDING").await;
    let running = insert(&pool, "running-silent", "RUNNING").await;
    let alive = insert(&pool, "running-alive", "RUNNING").await;
    let batch = insert(&pool, "sbatch", "RUNNING").await;
    let ended = insert(&pool, "ended", "COMPLETED").await;

    // A zero limit: expired as soon as it is recorded.
    for id in [pending, running] {
        assert!(job_keepalive::job_keepalive_record(&pool, id, 0.0)
            .await
            .unwrap()
            .is_some());
    }
    let until = job_keepalive::job_keepalive_record(&pool, alive, 3600.0)
        .await
        .unwrap()
        .expect("a running job takes a keep-alive");
    assert!(until > chrono::Utc::now() + chrono::Duration::seconds(3500));
    // An ended job has no allocation to keep alive.
    assert_eq!(
        job_keepalive::job_keepalive_record(&pool, ended, 60.0)
            .await
            .unwrap(),
        None
    );
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert_eq!(
        job_keepalive::job_keepalive_expired_list(&pool)
            .await
            .unwrap(),
        vec![pending, running]
    );

    let mut tx = berth_db::begin(&pool).await.unwrap();
    let ends = job_keepalive::job_keepalive_expired_end_in_tx(&mut tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        ends,
        vec![
            job_keepalive::InactiveEnd {
                job_id: pending,
                state: "CANCELLED".into()
            },
            job_keepalive::InactiveEnd {
                job_id: running,
                state: "TIMEOUT".into()
            },
        ]
    );
    for (id, state, reason) in [
        (pending, "CANCELLED", Some("InactiveLimit")),
        (running, "TIMEOUT", Some("InactiveLimit")),
        (alive, "RUNNING", None),
        (batch, "RUNNING", None),
    ] {
        let row = job::job_get(&pool, id).await.unwrap().unwrap();
        assert_eq!(
            (row.state.as_str(), row.reason.as_deref()),
            (state, reason),
            "{}",
            row.name
        );
        assert_eq!(row.end_time.is_some(), state != "RUNNING", "{}", row.name);
    }
    // Done once: nothing is left to end.
    assert!(job_keepalive::job_keepalive_expired_list(&pool)
        .await
        .unwrap()
        .is_empty());
    let events: i64 =
        sqlx::query_scalar("SELECT count(*) FROM job_events WHERE kind = 'inactive_limit'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(events, 2);
}
