//! Usage charging reads the queue of released runs (`usage_pending`), not the history of
//! allocations, and charges exactly what the former scan of the last week's allocations
//! charged.

use berth_core::priority::BillingWeights;
use berth_db::{allocation, job, usage};
use berth_scheduler::fairshare;
use chrono::{DateTime, Duration, Utc};
use sqlx::PgPool;

/// The query charging used before the queue: every allocation released in the last 7
/// days against the ledger.
const HISTORY_SCAN: &str = r#"SELECT a.job_id, a.run,
          COALESCE(j.account, u.default_account, 'root'),
          j.user_name,
          (j.num_tasks::bigint * j.cpus_per_task::bigint),
          SUM(cardinality(a.gpu_indices))::bigint,
          COALESCE(q.usage_factor, 1),
          GREATEST(0, EXTRACT(EPOCH FROM MAX(a.released_at) - MIN(a.created_at)))::bigint,
          MAX(a.released_at)
   FROM allocations a
   JOIN jobs j ON j.id = a.job_id
   LEFT JOIN users u ON u.name = j.user_name
   LEFT JOIN qos q ON q.name = COALESCE(j.qos, 'normal')
   WHERE (a.job_id, a.run) IN (
           SELECT r.job_id, r.run FROM allocations r
           WHERE r.released_at IS NOT NULL AND r.released_at > $1::timestamptz - interval '7 days'
             AND NOT EXISTS (SELECT 1 FROM usage_charges c
                             WHERE c.job_id = r.job_id AND c.run = r.run))
   GROUP BY a.job_id, a.run, j.account, u.default_account, j.user_name, j.num_tasks,
            j.cpus_per_task, q.usage_factor
   HAVING bool_and(a.released_at IS NOT NULL)
   ORDER BY MAX(a.released_at), a.job_id, a.run
   LIMIT $2"#;

type Run = (i64, i32, String, String, i64, i64, f64, i64, DateTime<Utc>);

async fn history_scan(pool: &PgPool, now: DateTime<Utc>) -> Vec<Run> {
    sqlx::query_as(HISTORY_SCAN)
        .bind(now)
        .bind(1000_i64)
        .fetch_all(pool)
        .await
        .unwrap()
}

async fn from_queue(pool: &PgPool, now: DateTime<Utc>) -> Vec<Run> {
    usage::usage_uncharged_runs(pool, now, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.job_id,
                r.run,
                r.account,
                r.user_name,
                r.cpus,
                r.gpus,
                r.usage_factor,
                r.elapsed,
                r.ended,
            )
        })
        .collect()
}

/// A job of `user` (account `account`, QOS `qos`) with run `run` on `nodes`, each
/// allocation made `ago` before now.
async fn placed(
    pool: &PgPool,
    user: &str,
    account: Option<&str>,
    qos: Option<&str>,
    nodes: &[i64],
    ago: Duration,
) -> i64 {
    let insert = job::JobInsert {
        account: account.map(str::to_string),
        qos: qos.map(str::to_string),
        num_nodes: nodes.len() as i32,
        num_tasks: 2,
        cpus_per_task: 3,
        ..crate::insert(user, 1)
    };
    let mut tx = berth_db::begin(pool).await.unwrap();
    let id = job::job_insert_in_tx(&mut tx, &insert).await.unwrap();
    assert!(job::job_start_in_tx(&mut tx, id, 1, None).await.unwrap());
    for (index, n) in nodes.iter().enumerate() {
        let free: i32 = sqlx::query_scalar(
            "SELECT min(g.index) FROM gpus g WHERE g.node_id = $1 AND NOT EXISTS (
                 SELECT 1 FROM allocation_gpus h
                 WHERE h.node_id = g.node_id AND h.gpu_index = g.index AND h.released_at IS NULL)",
        )
        .bind(n)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
        allocation::allocation_insert_in_tx(
            &mut tx,
            &allocation::AllocationInsert {
                job_id: id,
                run: 0,
                node_id: *n,
                node_index: index as i32,
                gpu_indices: &[free],
                cpu_ids: &[],
                mem_mib: 0,
                exclusive: false,
                term: 1,
            },
        )
        .await
        .unwrap();
    }
    sqlx::query("UPDATE allocations SET created_at = now() - $2 WHERE job_id = $1")
        .bind(id)
        .bind(ago)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    id
}

/// Releases the allocation of `job` on `node` (every node when `None`), `ago` before now.
async fn release(pool: &PgPool, job: i64, node: Option<i64>, ago: Duration) {
    sqlx::query(
        "UPDATE allocations SET released_at = now() - $3
         WHERE job_id = $1 AND ($2::bigint IS NULL OR node_id = $2) AND released_at IS NULL",
    )
    .bind(job)
    .bind(node)
    .bind(ago)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE allocation_gpus g SET released_at = a.released_at FROM allocations a
         WHERE g.allocation_id = a.id AND a.job_id = $1 AND a.released_at IS NOT NULL",
    )
    .bind(job)
    .execute(pool)
    .await
    .unwrap();
}

async fn queued(pool: &PgPool) -> Vec<(i64, i32)> {
    sqlx::query_as("SELECT job_id, run FROM usage_pending ORDER BY job_id, run")
        .fetch_all(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn charging_from_the_queue_charges_what_the_history_scan_did(pool: PgPool) {
    let n1 = crate::register(&pool, "n1").await;
    let n2 = crate::register(&pool, "n2").await;
    sqlx::raw_sql(
        "INSERT INTO accounts (name, parent, shares) VALUES ('physics', 'root', 1);
         INSERT INTO users (name, default_account) VALUES ('bob', 'physics');
         INSERT INTO qos (name, usage_factor) VALUES ('cheap', 0.5)
             ON CONFLICT (name) DO UPDATE SET usage_factor = 0.5;",
    )
    .execute(&pool)
    .await
    .unwrap();
    let h = Duration::hours;
    // Ended an hour ago, charged to the user's default account.
    let a = placed(&pool, "bob", None, None, &[n1], h(3)).await;
    release(&pool, a, None, h(1)).await;
    // Ended with an account and a QOS of its own.
    let b = placed(&pool, "alice", Some("physics"), Some("cheap"), &[n2], h(2)).await;
    release(&pool, b, None, Duration::minutes(5)).await;
    // Two nodes, one still held: not charged yet.
    let c = placed(&pool, "carol", None, None, &[n1, n2], h(1)).await;
    release(&pool, c, Some(n1), Duration::minutes(10)).await;
    // Ended 8 days ago (the scheduler did not see it in time): never charged.
    let d = placed(&pool, "dave", None, None, &[n2], h(24 * 9)).await;
    release(&pool, d, None, h(24 * 8)).await;
    // Still running.
    let _e = placed(&pool, "erin", None, None, &[n1], h(1)).await;

    let now = Utc::now();
    let before = history_scan(&pool, now).await;
    assert_eq!(
        before.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![a, b],
        "the fixture is what the test means"
    );
    assert_eq!(from_queue(&pool, now).await, before);
    assert_eq!(queued(&pool).await, vec![(a, 0), (b, 0), (c, 0), (d, 0)]);

    let charged = fairshare::charge_ended_runs(&pool, now, &BillingWeights::default(), 604_800)
        .await
        .unwrap();
    assert_eq!(charged, 2);
    let ledger: Vec<(i64, String, String)> =
        sqlx::query_as("SELECT job_id, account, user_name FROM usage_charges ORDER BY job_id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        ledger,
        vec![
            (a, "physics".into(), "bob".into()),
            (b, "physics".into(), "alice".into())
        ]
    );
    // Charged runs left the queue, and the run past the window was dropped from it; the
    // half-released one waits.
    assert_eq!(queued(&pool).await, vec![(c, 0)]);
    assert!(history_scan(&pool, now).await.is_empty());
    assert!(from_queue(&pool, now).await.is_empty());

    // Its last allocation released, the gang run is charged once, as the scan would.
    release(&pool, c, None, Duration::minutes(1)).await;
    let now = Utc::now();
    let before = history_scan(&pool, now).await;
    assert_eq!(before.iter().map(|r| r.0).collect::<Vec<_>>(), vec![c]);
    assert_eq!(from_queue(&pool, now).await, before);
    let charged = fairshare::charge_ended_runs(&pool, now, &BillingWeights::default(), 604_800)
        .await
        .unwrap();
    assert_eq!(charged, 1);
    assert!(queued(&pool).await.is_empty());
    assert_eq!(
        fairshare::charge_ended_runs(&pool, now, &BillingWeights::default(), 604_800)
            .await
            .unwrap(),
        0
    );
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_released_run_is_queued_whatever_path_releases_it(pool: PgPool) {
    let n1 = crate::register(&pool, "n1").await;
    let id = placed(&pool, "bob", None, None, &[n1], Duration::minutes(5)).await;
    assert!(queued(&pool).await.is_empty());
    // The api's path: a worker's exit report releases the run's allocations.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    allocation::allocation_release_job_in_tx(&mut tx, id, 0)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(queued(&pool).await, vec![(id, 0)]);
}

/// A run placed by CPU is charged for the CPUs its allocations hold over all its nodes,
/// not for what it asked (tasks × CPUs per task).
#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_run_placed_by_cpu_is_charged_its_allocated_cpus(pool: PgPool) {
    let n1 = crate::register(&pool, "n1").await;
    let n2 = crate::register(&pool, "n2").await;
    let insert = job::JobInsert {
        num_nodes: 2,
        num_tasks: 2,
        cpus_per_task: 3,
        ..crate::insert("bob", 0)
    };
    let mut tx = berth_db::begin(&pool).await.unwrap();
    let id = job::job_insert_in_tx(&mut tx, &insert).await.unwrap();
    assert!(job::job_start_in_tx(&mut tx, id, 1, None).await.unwrap());
    for (index, (node, cpus)) in [(n1, &[0, 1, 2, 3][..]), (n2, &[4][..])]
        .into_iter()
        .enumerate()
    {
        allocation::allocation_insert_in_tx(
            &mut tx,
            &allocation::AllocationInsert {
                job_id: id,
                run: 0,
                node_id: node,
                node_index: index as i32,
                gpu_indices: &[],
                cpu_ids: cpus,
                mem_mib: 1024,
                exclusive: false,
                term: 1,
            },
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    release(&pool, id, None, Duration::zero()).await;
    let runs = from_queue(&pool, Utc::now()).await;
    assert_eq!(runs.len(), 1);
    // 4 CPUs on n1 and 1 on n2, though it asked 2 tasks × 3 CPUs.
    assert_eq!((runs[0].0, runs[0].4), (id, 5));
}
