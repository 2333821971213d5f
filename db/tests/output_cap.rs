//! The output cap against a real PostgreSQL: what the database keeps per run and stream
//! stays within the cap whatever offsets a node sends, a repeated chunk changes nothing
//! (even near the cap), and the chunk that reaches the cap is cut on a character
//! boundary and marks the stream truncated.

use berth_db::output;
use sqlx::PgPool;

async fn a_job(pool: &PgPool) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO jobs (name, user_name, partition, num_nodes, num_tasks, script, stdout_pattern, spec)
         VALUES ('out', 'alice', 'gpu', 1, 1, '#!/bin/sh', 'slurm-%j.out', '{}') RETURNING id",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

async fn append(
    pool: &PgPool,
    job: i64,
    run: i32,
    offset: i64,
    data: &str,
    cap: u64,
) -> output::OutputAppended {
    let mut tx = berth_db::begin(pool).await.unwrap();
    let r = output::output_append_in_tx(&mut tx, job, run, "stdout", offset, data, Some(cap))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    r
}

async fn stored(pool: &PgPool, job: i64, run: i32) -> String {
    let rows = output::output_read(pool, job, "stdout", run - 1, i64::MAX, 1000)
        .await
        .unwrap();
    let bytes: Vec<u8> = rows
        .iter()
        .filter(|r| r.run == run)
        .flat_map(|r| r.data.clone())
        .collect();
    String::from_utf8(bytes).unwrap()
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn the_database_keeps_at_most_the_cap_per_run_and_stream(pool: PgPool) {
    let job = a_job(&pool).await;
    // 10 bytes of cap: 6 fit, then a repeat of them near the cap changes nothing.
    let r = append(&pool, job, 0, 0, "abcdef", 10).await;
    assert_eq!((r.stored, r.truncated), (6, false));
    let r = append(&pool, job, 0, 0, "abcdef", 10).await;
    assert_eq!((r.stored, r.truncated), (0, false), "a repeated chunk");
    // The chunk that reaches the cap is cut before a character it would split.
    let r = append(&pool, job, 0, 6, "ghi\u{e9}j", 10).await;
    assert_eq!((r.stored, r.truncated), (3, true));
    assert_eq!(stored(&pool, job, 0).await, "abcdefghi");
    // Made-up offsets do not get past it.
    for offset in [1, 2, 100, 1_000_000] {
        let r = append(&pool, job, 0, offset, "zzzz", 10).await;
        assert_eq!((r.stored, r.truncated), (0, true));
    }
    assert_eq!(stored(&pool, job, 0).await, "abcdefghi");
    let truncations = output::output_truncations(&pool, job, "stdout")
        .await
        .unwrap();
    assert_eq!(truncations.len(), 1);
    assert_eq!((truncations[0].run, truncations[0].bytes), (0, 9));
    assert_eq!(
        output::output_truncated_jobs(&pool, &[job]).await.unwrap(),
        vec![job]
    );
    // The next run (a requeue) has a cap of its own.
    let r = append(&pool, job, 1, 0, "0123456789", 10).await;
    assert_eq!((r.stored, r.truncated), (10, false));
    assert_eq!(stored(&pool, job, 1).await, "0123456789");
}

/// A step task of `job` (step 0, task 0, run 0) on a node of its own.
async fn a_step_task(pool: &PgPool, job: i64) {
    let node: i64 = sqlx::query_scalar(
        "INSERT INTO nodes (name, hostname, cpus, memory_mib) VALUES ('n-out', 'n', 2, 1024) RETURNING id",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO job_steps (job_id, run, step_id, command) VALUES ($1, 0, 0, '{yes}')")
        .bind(job)
        .execute(pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO step_tasks (job_id, run, step_id, task_id, node_id, node_index, local_id)
         VALUES ($1, 0, 0, 0, $2, 0, 0)",
    )
    .bind(job)
    .bind(node)
    .execute(pool)
    .await
    .unwrap();
}

async fn step_append(pool: &PgPool, job: i64, offset: i64, data: &[u8], cap: u64) -> usize {
    let mut tx = berth_db::begin(pool).await.unwrap();
    let kept = berth_db::step::step_output_append_in_tx(
        &mut tx,
        job,
        0,
        0,
        0,
        "stdout",
        offset,
        data,
        Some(cap),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    kept
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_step_tasks_output_is_capped_too_and_says_so(pool: PgPool) {
    let job = a_job(&pool).await;
    a_step_task(&pool, job).await;
    assert_eq!(step_append(&pool, job, 0, b"yes\nyes\n", 10).await, 8);
    assert_eq!(
        step_append(&pool, job, 0, b"yes\nyes\n", 10).await,
        0,
        "a repeat"
    );
    assert_eq!(step_append(&pool, job, 8, b"yes\nyes\n", 10).await, 2);
    // Past the cap nothing more is kept, at any offset.
    for offset in [10, 16, 1_000_000] {
        assert_eq!(step_append(&pool, job, offset, b"yes\n", 10).await, 0);
    }
    let rows = berth_db::step::step_output_read(&pool, job, 0, 0, -1, 1000)
        .await
        .unwrap();
    let text: Vec<u8> = rows.iter().flat_map(|r| r.data.clone()).collect();
    let text = String::from_utf8(text).unwrap();
    assert_eq!(
        text,
        "yes\nyes\nye\n[berth: output truncated after 10 bytes; the node's file has it whole]\n"
    );
}
