//! The commit places CPUs and memory: under the node lock it re-checks that the node
//! still has what the plan placed, picks concrete CPU ids (lowest free, packed), stores
//! them and the memory with the allocation, skips a start that no longer fits, and
//! stores the shorter time limit backfill started a job with. The snapshot reads them
//! back.

use crate::{insert, register};
use berth_db::{allocation, job, lease};
use berth_scheduler::cycle::{self, Outcome, SnapshotCache};
use berth_scheduler::planner::{Placement, Plan, PlannerConfig, Start};
use berth_scheduler::LEASE_ROLE;
use chrono::Utc;
use sqlx::PgPool;

async fn submit(pool: &PgPool) -> i64 {
    let mut tx = berth_db::begin(pool).await.unwrap();
    let id = job::job_insert_in_tx(&mut tx, &insert("alice", 0))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    id
}

fn start(job_id: i64, node_id: i64, cpus: u32, mem_mib: u64, limit: Option<i64>) -> Start {
    Start {
        job_id,
        array_task_id: None,
        placements: vec![Placement {
            node_id,
            gpus: vec![],
            cpus,
            mem_mib,
        }],
        exclusive: false,
        priority: 1,
        time_limit: limit,
    }
}

fn plan(starts: Vec<Start>) -> Plan {
    Plan {
        starts,
        ..Plan::default()
    }
}

async fn held(pool: &PgPool, job_id: i64) -> Option<(Vec<i32>, i64)> {
    allocation::allocation_list_for_jobs(pool, &[job_id])
        .await
        .unwrap()
        .first()
        .map(|a| (a.cpu_ids.clone(), a.mem_mib))
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn the_commit_picks_free_cpus_and_skips_a_start_that_no_longer_fits(pool: PgPool) {
    // 8 CPUs, 1024 MiB.
    let n1 = register(&pool, "n1").await;
    let (a, b, c, d) = (
        submit(&pool).await,
        submit(&pool).await,
        submit(&pool).await,
        submit(&pool).await,
    );
    let term = lease::lease_acquire(&pool, LEASE_ROLE, "test", 30.0)
        .await
        .unwrap()
        .unwrap();
    let outcome = cycle::commit(
        &pool,
        term,
        &plan(vec![
            start(a, n1, 3, 512, None),
            // Backfill shortened its limit to fit (`--time-min`).
            start(b, n1, 4, 256, Some(120)),
            // One CPU is left: it no longer fits.
            start(c, n1, 2, 0, None),
            // 256 MiB are left: it no longer fits.
            start(d, n1, 1, 512, None),
        ]),
    )
    .await
    .unwrap();
    assert_eq!(outcome, Outcome::Committed { started: 2 });
    assert_eq!(held(&pool, a).await, Some((vec![0, 1, 2], 512)));
    assert_eq!(held(&pool, b).await, Some((vec![3, 4, 5, 6], 256)));
    assert_eq!(held(&pool, c).await, None);
    assert_eq!(held(&pool, d).await, None);
    let job_b = job::job_get(&pool, b).await.unwrap().unwrap();
    assert_eq!(
        (job_b.state.as_str(), job_b.time_limit),
        ("RUNNING", Some(120))
    );
    let job_a = job::job_get(&pool, a).await.unwrap().unwrap();
    assert_eq!(job_a.time_limit, Some(600), "its own limit is kept");
    for id in [c, d] {
        assert_eq!(
            job::job_get(&pool, id).await.unwrap().unwrap().state,
            "PENDING"
        );
    }

    // The planner sees what the allocations hold.
    let snap = SnapshotCache::new()
        .refresh(&pool, Utc::now(), &PlannerConfig::default())
        .await
        .unwrap()
        .snapshot;
    let mut running: Vec<(i64, u32, u64)> = snap
        .running
        .iter()
        .map(|r| (r.job_id, r.cpus, r.mem_mib))
        .collect();
    running.sort_unstable();
    assert_eq!(running, vec![(a, 3, 512), (b, 4, 256)]);
    let mut jobs: Vec<(i64, u32)> = snap
        .running_jobs
        .iter()
        .map(|r| (r.job_id, r.cpus))
        .collect();
    jobs.sort_unstable();
    assert_eq!(jobs, vec![(a, 3), (b, 4)], "CPUs held, not asked (1 each)");

    // Once a ends, its CPUs and memory are free again: c gets the lowest ids.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    allocation::allocation_release_job_in_tx(&mut tx, a, 0)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let outcome = cycle::commit(
        &pool,
        term,
        &plan(vec![start(c, n1, 2, 0, None), start(d, n1, 1, 512, None)]),
    )
    .await
    .unwrap();
    assert_eq!(outcome, Outcome::Committed { started: 2 });
    assert_eq!(held(&pool, c).await, Some((vec![0, 1], 0)));
    assert_eq!(held(&pool, d).await, Some((vec![2], 512)));
}
