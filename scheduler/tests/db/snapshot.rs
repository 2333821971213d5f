//! The leader's snapshot cache: after each kind of change, an incremental refresh gives
//! the same snapshot as a full read, and it reads only the rows that changed (not the
//! pending jobs the scheduler just annotated, nor heartbeats), including rows written by a
//! transaction that was still open at the previous refresh.

use crate::{insert, register};
use berth_db::{allocation, job, lease, node, qos};
use berth_scheduler::cycle::{self, Outcome, SnapshotCache};
use berth_scheduler::planner::{PlannerConfig, Snapshot};
use berth_scheduler::snapshot::RefreshStats;
use berth_scheduler::LEASE_ROLE;
use chrono::{DateTime, Utc};
use sqlx::PgPool;

async fn submit(pool: &PgPool, user: &str, gpus: i32) -> i64 {
    let mut tx = berth_db::begin(pool).await.unwrap();
    let id = job::job_insert_in_tx(&mut tx, &insert(user, gpus))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    id
}

/// Refreshes `cache`, reads everything afresh, checks both snapshots are equal and
/// returns what the refresh read.
async fn check(
    pool: &PgPool,
    cache: &mut SnapshotCache,
    now: DateTime<Utc>,
) -> (RefreshStats, Snapshot) {
    let config = PlannerConfig::default();
    let incremental = cache.refresh(pool, now, &config).await.unwrap().snapshot;
    let full = SnapshotCache::new()
        .refresh(pool, now, &config)
        .await
        .unwrap()
        .snapshot;
    assert_eq!(
        incremental, full,
        "incremental snapshot differs from a full read"
    );
    (cache.last, incremental)
}

fn read(rows: usize, tables: usize) -> RefreshStats {
    RefreshStats {
        full: false,
        rows,
        tables,
    }
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn incremental_refresh_reads_only_changes_and_matches_a_full_read(pool: PgPool) {
    let n1 = register(&pool, "n1").await;
    register(&pool, "n2").await;
    let now = Utc::now();
    let mut cache = SnapshotCache::new();

    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert!(stats.full);
    assert_eq!(snap.nodes.len(), 2);

    // Nothing changed: nothing read.
    let (stats, _) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(0, 0));

    // A heartbeat with GPU samples is monitoring, not a change the scheduler reads.
    node::node_heartbeat(
        &pool,
        n1,
        &[0, 1],
        &[50, 60],
        &[100, 200],
        &[300.0, 310.0],
        &[40, 41],
    )
    .await
    .unwrap();
    let (stats, _) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(0, 0));

    // One submission: one row.
    let small = submit(&pool, "alice", 2).await;
    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(1, 0));
    assert_eq!(
        snap.pending.iter().map(|j| j.id).collect::<Vec<_>>(),
        [small]
    );

    // A cycle starts the small job and leaves a too-big one pending with its reason and
    // priority written back; the next refresh reads the started job and its allocation,
    // not the job it only annotated.
    let big = submit(&pool, "bob", 8).await;
    let term = lease::lease_acquire(&pool, LEASE_ROLE, "test", 30.0)
        .await
        .unwrap()
        .unwrap();
    let mut leader = SnapshotCache::new();
    let outcome = cycle::run_cycle(&pool, term, &PlannerConfig::default(), &mut leader)
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Committed { started: 1 });
    let annotated = job::job_get(&pool, big).await.unwrap().unwrap();
    assert!(annotated.reason.is_some());
    assert!(annotated.priority.is_some());
    let (stats, _) = check(&pool, &mut cache, now).await;
    assert_eq!(
        stats,
        read(3, 0),
        "the new big job, the started job, its allocation"
    );
    let (stats, snap) = check(&pool, &mut leader, now).await;
    assert_eq!(stats, read(2, 0), "the started job and its allocation");
    assert_eq!(snap.running.len(), 1);
    assert_eq!(snap.running_jobs[0].gpus, 2);
    let started = snap.running[0].clone();
    assert_eq!(started.job_id, small);

    // Raising a running job's time limit moves its allocation's end.
    job::job_update_running_time_limit(&pool, small, 7200)
        .await
        .unwrap();
    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(1, 0));
    assert_eq!(
        snap.running[0].end.unwrap() - started.end.unwrap(),
        7200 - 600
    );

    // Draining a node; changing a QOS (a small table, re-read whole).
    let mut tx = berth_db::begin(&pool).await.unwrap();
    node::node_admin_drain_in_tx(&mut tx, "n2", "maintenance")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let mut normal = qos::qos_get(&pool, "normal").await.unwrap().unwrap();
    normal.max_jobs_per_user = Some(3);
    qos::qos_upsert(&pool, &normal).await.unwrap();
    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(1, 1));
    assert!(
        !snap
            .nodes
            .iter()
            .find(|n| n.name == "n2")
            .unwrap()
            .available
    );
    assert_eq!(snap.qos_limits["normal"].max_jobs_per_user, Some(3));

    // Holding the pending job takes it out of the queue.
    job::job_hold(&pool, big, "JobHeldUser").await.unwrap();
    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(1, 0));
    assert!(snap.pending.is_empty());

    // The running job ends: it and its allocation leave the snapshot.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    job::job_finish_in_tx(&mut tx, small, 0, "COMPLETED", None, Some(0), None)
        .await
        .unwrap()
        .unwrap();
    allocation::allocation_release_job_in_tx(&mut tx, small, 0)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(2, 0));
    assert!(snap.running.is_empty() && snap.running_jobs.is_empty());
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_transaction_open_across_a_refresh_is_read_once_it_commits(pool: PgPool) {
    register(&pool, "n1").await;
    let now = Utc::now();
    let mut cache = SnapshotCache::new();
    check(&pool, &mut cache, now).await;

    // A submission whose transaction has its id before the refresh but commits after it.
    let mut open = berth_db::begin(&pool).await.unwrap();
    let late = job::job_insert_in_tx(&mut open, &insert("alice", 1))
        .await
        .unwrap();
    // Meanwhile another submission commits.
    let early = submit(&pool, "bob", 1).await;
    assert!(late < early);
    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(1, 0));
    assert_eq!(
        snap.pending.iter().map(|j| j.id).collect::<Vec<_>>(),
        [early]
    );
    open.commit().await.unwrap();
    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(1, 0));
    assert_eq!(
        snap.pending.iter().map(|j| j.id).collect::<Vec<_>>(),
        [late, early]
    );

    // A transaction that rolls back leaves nothing to read.
    let mut aborted = berth_db::begin(&pool).await.unwrap();
    job::job_insert_in_tx(&mut aborted, &insert("carol", 1))
        .await
        .unwrap();
    aborted.rollback().await.unwrap();
    let (stats, _) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(0, 0));

    // A row deleted by hand (no Berth code deletes jobs) makes the next refresh read all.
    sqlx::query("DELETE FROM jobs WHERE id = $1")
        .bind(early)
        .execute(&pool)
        .await
        .unwrap();
    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert!(stats.full);
    assert_eq!(
        snap.pending.iter().map(|j| j.id).collect::<Vec<_>>(),
        [late]
    );

    // So does a TRUNCATE, which row triggers do not see.
    let (stats, _) = check(&pool, &mut cache, now).await;
    assert!(!stats.full);
    sqlx::query("TRUNCATE usage").execute(&pool).await.unwrap();
    let (stats, _) = check(&pool, &mut cache, now).await;
    assert!(stats.full);
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn the_server_is_identified_and_everything_is_read_again_periodically(pool: PgPool) {
    use berth_scheduler::snapshot::FullRead;
    register(&pool, "n1").await;
    let mut conn = pool.acquire().await.unwrap();
    let server = berth_db::snapshot::read_server_identity(&mut conn)
        .await
        .unwrap();
    drop(conn);
    assert_ne!(server.system_identifier, 0);
    assert!(server.timeline >= 1, "{server:?}");

    let t0 = Utc::now();
    let mut cache = SnapshotCache::with_full_refresh(std::time::Duration::from_secs(30));
    check(&pool, &mut cache, t0).await;
    assert_eq!(cache.last_full, Some(FullRead::First));
    let id = submit(&pool, "alice", 1).await;
    let (stats, snap) = check(&pool, &mut cache, t0 + chrono::Duration::seconds(10)).await;
    assert_eq!((stats, cache.last_full), (read(1, 0), None));
    assert_eq!(snap.pending.iter().map(|j| j.id).collect::<Vec<_>>(), [id]);
    let (stats, _) = check(&pool, &mut cache, t0 + chrono::Duration::seconds(31)).await;
    assert!(stats.full);
    assert_eq!(cache.last_full, Some(FullRead::Periodic));
    let (stats, _) = check(&pool, &mut cache, t0 + chrono::Duration::seconds(40)).await;
    assert_eq!((stats, cache.last_full), (read(0, 0), None));
}

/// An operator's node settings (CPUs, reserves, weight, features) reach the planner's
/// snapshot through change tracking, as usable CPUs and memory; a re-registration keeps
/// them.
#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn node_settings_reach_the_snapshot(pool: PgPool) {
    register(&pool, "n1").await;
    let now = Utc::now();
    let mut cache = SnapshotCache::new();
    let (_, snap) = check(&pool, &mut cache, now).await;
    let n = &snap.nodes[0];
    assert_eq!((n.cpus, n.memory_mib, n.weight), (8, 1024, 1), "{n:?}");

    let mut tx = berth_db::begin(&pool).await.unwrap();
    let patch = node::NodeConfigPatch {
        cpus: Some(Some(16)),
        weight: Some(Some(10)),
        core_spec_count: Some(Some(2)),
        mem_spec_limit_mib: Some(Some(24)),
        features: Some(Some(vec!["h100".into()])),
        ..Default::default()
    };
    assert!(node::node_config_set_in_tx(&mut tx, "n1", &patch)
        .await
        .unwrap());
    tx.commit().await.unwrap();
    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(1, 0));
    let n = &snap.nodes[0];
    assert_eq!((n.cpus, n.memory_mib, n.weight), (14, 1000, 10), "{n:?}");
    assert_eq!(n.features, vec!["h100"]);

    // The worker registers again with what it sees: the settings stay.
    register(&pool, "n1").await;
    let (_, snap) = check(&pool, &mut cache, now).await;
    let n = &snap.nodes[0];
    assert_eq!((n.cpus, n.memory_mib, n.weight), (14, 1000, 10), "{n:?}");

    // Cleared, CPUs are the reported ones again.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    let patch = node::NodeConfigPatch {
        cpus: Some(None),
        ..Default::default()
    };
    node::node_config_set_in_tx(&mut tx, "n1", &patch)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let (stats, snap) = check(&pool, &mut cache, now).await;
    assert_eq!(stats, read(1, 0));
    assert_eq!(snap.nodes[0].cpus, 6);
}

/// A job's per-node CPUs and memory, node lists, partition list and --time-min reach the
/// planner; a job listing several partitions (`-p a,b`) is planned on their nodes
/// together, and starting on a node of the second one only puts it in that one.
#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn selection_reaches_the_planner_and_a_start_picks_the_listed_partition(pool: PgPool) {
    register(&pool, "n1").await;
    let n2 = register(&pool, "n2").await;
    register(&pool, "n3").await;
    let mut tx = berth_db::begin(&pool).await.unwrap();
    for (name, nodes) in [("a", vec!["n1".to_string()]), ("b", vec!["n2".to_string()])] {
        berth_db::partition::partition_put_in_tx(
            &mut tx,
            &berth_db::partition::PartitionRow {
                name: name.into(),
                is_default: false,
                default_time: None,
                max_time: None,
                nodes,
                priority_tier: 1,
                max_nodes: None,
                allowed_accounts: vec![],
                allowed_qos: vec![],
                def_cpu_per_gpu: None,
                def_mem_per_gpu: None,
                def_mem_per_cpu: None,
                max_mem_per_node: None,
            },
        )
        .await
        .unwrap();
    }
    let id = job::job_insert_in_tx(
        &mut tx,
        &berth_db::job::JobInsert {
            partition: "a".into(),
            partitions: vec!["a".into(), "b".into()],
            cpus_per_node: 3,
            mem_per_node_mib: Some(2048),
            nodelist: vec!["n2".into()],
            exclude: vec!["n1".into()],
            time_min: Some(120),
            ..insert("alice", 1)
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let mut cache = SnapshotCache::new();
    let (_, snap) = check(&pool, &mut cache, Utc::now()).await;
    let p = snap.pending.iter().find(|p| p.id == id).unwrap();
    assert_eq!(p.partition_nodes, ["n1", "n2"]);
    assert_eq!((p.cpus_per_node, p.mem_per_node_mib), (3, Some(2048)));
    assert_eq!(
        (p.nodelist.as_slice(), p.exclude.as_slice()),
        (&["n2".to_string()][..], &["n1".to_string()][..])
    );
    assert_eq!(p.time_min, Some(120));
    assert_eq!(p.cpus, 3, "total CPUs: 3 per node on its one node");

    let term = lease::lease_acquire(&pool, LEASE_ROLE, "test", 30.0)
        .await
        .unwrap()
        .unwrap();
    let plan = berth_scheduler::planner::Plan {
        starts: vec![berth_scheduler::planner::Start {
            job_id: id,
            array_task_id: None,
            placements: vec![berth_scheduler::planner::Placement {
                node_id: n2,
                gpus: vec![0],
                cpus: 3,
                // What the node (8 CPUs, 1 GiB) can give; the commit checks it.
                mem_mib: 512,
            }],
            exclusive: false,
            priority: 1,
            time_limit: None,
        }],
        ..Default::default()
    };
    let outcome = cycle::commit(&pool, term, &plan).await.unwrap();
    assert_eq!(outcome, Outcome::Committed { started: 1 });
    let row = job::job_get(&pool, id).await.unwrap().unwrap();
    assert_eq!(
        (row.state.as_str(), row.partition.as_str()),
        ("RUNNING", "b")
    );
}
