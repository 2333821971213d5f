//! squeue's list (`job_queue_list`): the jobs of the states asked for, by id, in pages,
//! whether it reads the jobs not ended along `jobs_active` (squeue's default states) or
//! each state along `(state, id)` (any ended state asked for).

use berth_db::job::{job_queue_list, JobFilter};
use sqlx::PgPool;

/// Inserts a job of `user` in `state` (times as the scheduler and workers set them).
async fn insert(pool: &PgPool, user: &str, state: &str) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO jobs (name, user_name, partition, state, num_nodes, num_tasks, script,
                           stdout_pattern, spec, start_time, end_time)
         VALUES ('q', $1, 'gpu', $2, 1, 1, '#!/bin/sh\n', '/dev/null', '{}',
                 CASE WHEN $2 = 'PENDING' THEN NULL ELSE now() END,
                 CASE WHEN $2 IN ('PENDING', 'RUNNING', 'COMPLETING') THEN NULL ELSE now() END)
         RETURNING id",
    )
    .bind(user)
    .bind(state)
    .fetch_one(pool)
    .await
    .unwrap()
}

fn filter(states: &[&str], after_id: i64, limit: i64) -> JobFilter {
    JobFilter {
        states: Some(states.iter().map(|s| s.to_string()).collect()),
        after_id,
        limit,
        ..Default::default()
    }
}

async fn ids(pool: &PgPool, f: &JobFilter) -> Vec<i64> {
    job_queue_list(pool, f)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect()
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn the_queue_lists_the_states_asked_for_by_id_in_pages(pool: PgPool) {
    let mut by_state: Vec<(&str, i64)> = Vec::new();
    for (i, state) in [
        "PENDING",
        "COMPLETED",
        "RUNNING",
        "FAILED",
        "PENDING",
        "COMPLETING",
        "CANCELLED",
        "RUNNING",
        "PENDING",
    ]
    .into_iter()
    .enumerate()
    {
        let user = if i % 2 == 0 { "alice" } else { "bob" };
        by_state.push((state, insert(&pool, user, state).await));
    }
    let of = |states: &[&str]| -> Vec<i64> {
        by_state
            .iter()
            .filter(|(s, _)| states.contains(s))
            .map(|(_, id)| *id)
            .collect()
    };

    // squeue's default: pending and running jobs only, by id; ended ones never.
    let active = ["PENDING", "RUNNING"];
    assert_eq!(ids(&pool, &filter(&active, 0, 100)).await, of(&active));
    // Pages: a limit, then the rest after the last id.
    let first = ids(&pool, &filter(&active, 0, 3)).await;
    assert_eq!(first, of(&active)[..3]);
    let rest = ids(&pool, &filter(&active, *first.last().unwrap(), 100)).await;
    assert_eq!(rest, of(&active)[3..]);
    // The other filters still apply.
    let alice = JobFilter {
        user_name: Some("alice".into()),
        ..filter(&active, 0, 100)
    };
    for row in job_queue_list(&pool, &alice).await.unwrap() {
        assert_eq!(row.user_name, "alice");
        assert!(active.contains(&row.state.as_str()), "{}", row.state);
    }
    // A state of ended jobs, alone or beside active ones, reads them too.
    let mixed = ["COMPLETED", "COMPLETING", "PENDING"];
    assert_eq!(ids(&pool, &filter(&mixed, 0, 100)).await, of(&mixed));
    let ended = ["FAILED", "CANCELLED"];
    assert_eq!(ids(&pool, &filter(&ended, 0, 100)).await, of(&ended));
    // No states given: every job.
    let every = JobFilter {
        states: None,
        ..filter(&[], 0, 100)
    };
    assert_eq!(ids(&pool, &every).await.len(), by_state.len());
}
