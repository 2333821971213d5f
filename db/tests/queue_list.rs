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

/// Adds an allocation of `job`'s run `run` on node `node` at `index`.
async fn allocate(
    pool: &PgPool,
    job: i64,
    run: i32,
    node: i64,
    index: i32,
    gpus: &[i32],
    cpus: &[i32],
) {
    sqlx::query(
        "INSERT INTO allocations (job_id, run, node_id, node_index, gpu_indices, cpu_ids, term)
         VALUES ($1, $2, $3, $4, $5, $6, 1)",
    )
    .bind(job)
    .bind(run)
    .bind(node)
    .bind(index)
    .bind(gpus)
    .bind(cpus)
    .execute(pool)
    .await
    .unwrap();
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_job_not_pending_carries_what_its_current_run_holds(pool: PgPool) {
    let mut nodes = Vec::new();
    for name in ["n-b", "n-a"] {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO nodes (name, hostname, cpus, memory_mib) VALUES ($1, $1, 8, 1024)
             RETURNING id",
        )
        .bind(name)
        .fetch_one(&pool)
        .await
        .unwrap();
        nodes.push(id);
    }
    let whole = insert(&pool, "alice", "RUNNING").await;
    sqlx::query("UPDATE jobs SET whole_node = true WHERE id = $1")
        .bind(whole)
        .execute(&pool)
        .await
        .unwrap();
    allocate(&pool, whole, 0, nodes[0], 0, &[0, 1, 2], &[0, 1]).await;
    allocate(&pool, whole, 0, nodes[1], 1, &[0], &[2, 3, 4]).await;
    // Requeued once: its first run's allocation is not its current one.
    let requeued = insert(&pool, "alice", "RUNNING").await;
    allocate(&pool, requeued, 0, nodes[1], 0, &[3], &[5]).await;
    sqlx::query("UPDATE jobs SET restart_count = 1 WHERE id = $1")
        .bind(requeued)
        .execute(&pool)
        .await
        .unwrap();
    let shared = insert(&pool, "alice", "RUNNING").await;
    allocate(&pool, shared, 0, nodes[1], 0, &[4, 5], &[6]).await;
    // A pending job is never looked up, whatever rows it has.
    let pending = insert(&pool, "alice", "PENDING").await;
    allocate(&pool, pending, 0, nodes[0], 0, &[6], &[7]).await;

    let rows = job_queue_list(&pool, &filter(&["PENDING", "RUNNING"], 0, 100))
        .await
        .unwrap();
    let of = |id: i64| {
        let r = rows.iter().find(|r| r.id == id).unwrap();
        (r.alloc_nodes.clone(), r.alloc_cpus, r.alloc_node_gpus)
    };
    let names = |n: &[&str]| Some(n.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    // By node index; every node's CPUs; the first node's GPUs for a whole-node job.
    assert_eq!(of(whole), (names(&["n-b", "n-a"]), Some(5), Some(3)));
    assert_eq!(of(requeued), (None, None, None));
    assert_eq!(of(shared), (names(&["n-a"]), Some(1), None));
    assert_eq!(of(pending), (None, None, None));
    // The same through the read of every state (the other query).
    let every = JobFilter {
        states: None,
        ..filter(&[], 0, 100)
    };
    let all = job_queue_list(&pool, &every).await.unwrap();
    let w = all.iter().find(|r| r.id == whole).unwrap();
    assert_eq!(
        (w.alloc_nodes.clone(), w.alloc_cpus, w.alloc_node_gpus),
        (names(&["n-b", "n-a"]), Some(5), Some(3))
    );
}

/// Slurm's `MinJobAge` (issue 27): the live queue shows an ended job only while it ended
/// less than `min_job_age` ago; jobs not ended always; and `job_live_count` (what
/// `MaxJobCount` counts) agrees with it.
#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn ended_jobs_leave_the_live_queue_after_min_job_age(pool: PgPool) {
    let pending = insert(&pool, "alice", "PENDING").await;
    let recent = insert(&pool, "alice", "COMPLETED").await;
    let old = insert(&pool, "alice", "FAILED").await;
    let running = insert(&pool, "alice", "RUNNING").await;
    sqlx::query(
        "UPDATE jobs SET submit_time = now() - interval '20 minutes',
                start_time = now() - interval '15 minutes',
                end_time = now() - interval '10 minutes'
         WHERE id = $1",
    )
    .bind(old)
    .execute(&pool)
    .await
    .unwrap();
    let since = chrono::Utc::now() - chrono::Duration::seconds(300);
    let live = JobFilter {
        states: None,
        ended_after: Some(since),
        ..filter(&[], 0, 100)
    };
    assert_eq!(ids(&pool, &live).await, vec![pending, recent, running]);
    let ended = JobFilter {
        ended_after: Some(since),
        ..filter(&["COMPLETED", "FAILED"], 0, 100)
    };
    assert_eq!(ids(&pool, &ended).await, vec![recent]);
    // Without the bound (min_job_age 0), every ended job stays.
    let every = JobFilter {
        states: None,
        ..filter(&[], 0, 100)
    };
    assert_eq!(
        ids(&pool, &every).await,
        vec![pending, recent, old, running]
    );
    assert_eq!(
        berth_db::job::job_live_count(&pool, Some(since))
            .await
            .unwrap(),
        3
    );
    assert_eq!(berth_db::job::job_live_count(&pool, None).await.unwrap(), 4);
}
