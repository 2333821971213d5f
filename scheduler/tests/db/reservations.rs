//! Advance reservations in the database and in the leader's snapshot: a change is seen by
//! the next incremental refresh (one small table re-read), each reservation becomes its
//! windows (recurring ones: the current and next), ended one-offs leave the snapshot and
//! are purged, and a reservation that running jobs use cannot be deleted.

use crate::{insert, register};
use berth_db::reservation::{self, ReservationDelete, ReservationRow, ReservedNodeRow};
use berth_db::{job, lease};
use berth_scheduler::cycle::{self, Outcome, SnapshotCache};
use berth_scheduler::planner::{AdvanceReservation, PlannerConfig, ReservedNode};
use berth_scheduler::LEASE_ROLE;
use chrono::{DateTime, Duration, Utc};
use sqlx::PgPool;

fn row(
    name: &str,
    start: DateTime<Utc>,
    minutes: i64,
    flags: &[&str],
    nodes: Vec<ReservedNodeRow>,
) -> ReservationRow {
    ReservationRow {
        name: name.into(),
        start_time: start,
        end_time: start + Duration::minutes(minutes),
        users: vec!["bob".into()],
        accounts: vec![],
        flags: flags.iter().map(|f| f.to_string()).collect(),
        partition: None,
        created_by: "olga".into(),
        nodes,
    }
}

fn whole(node_id: i64) -> ReservedNodeRow {
    ReservedNodeRow {
        node_id,
        node: String::new(),
        gpus: None,
    }
}

async fn store(pool: &PgPool, r: &ReservationRow) {
    let mut tx = berth_db::begin(pool).await.unwrap();
    reservation::reservation_lock_in_tx(&mut tx).await.unwrap();
    reservation::reservation_insert_in_tx(&mut tx, r)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn reservations_reach_the_snapshot_as_windows(pool: PgPool) {
    let n1 = register(&pool, "n1").await;
    let n2 = register(&pool, "n2").await;
    let now = DateTime::from_timestamp(Utc::now().timestamp(), 0).unwrap();
    let config = PlannerConfig::default();
    let mut cache = SnapshotCache::new();
    let snap = cache.refresh(&pool, now, &config).await.unwrap().snapshot;
    assert!(snap.advance_reservations.is_empty());

    // A maintenance window on n1 now, two GPUs of n2 every day from in an hour, and a
    // one-off that already ended.
    store(
        &pool,
        &row("maint", now, 10, &["MAINT", "IGNORE_JOBS"], vec![whole(n1)]),
    )
    .await;
    let daily_start = now + Duration::hours(1);
    store(
        &pool,
        &row(
            "daily",
            daily_start,
            30,
            &["DAILY", "FLEX"],
            vec![ReservedNodeRow {
                node_id: n2,
                node: String::new(),
                gpus: Some(vec![2, 3]),
            }],
        ),
    )
    .await;
    store(
        &pool,
        &row("old", now - Duration::hours(2), 60, &[], vec![whole(n2)]),
    )
    .await;
    let mut bob = insert("bob", 1);
    bob.spec = serde_json::json!({ "reservation": "maint" });
    let mut tx = berth_db::begin(&pool).await.unwrap();
    let id = job::job_insert_in_tx(&mut tx, &bob).await.unwrap();
    tx.commit().await.unwrap();

    let snap = cache.refresh(&pool, now, &config).await.unwrap().snapshot;
    assert!(!cache.last.full, "an incremental refresh");
    assert_eq!(cache.last.tables, 1, "the reservations, re-read whole");
    let t = |d: DateTime<Utc>| d.timestamp();
    let day = 86_400;
    assert_eq!(
        snap.advance_reservations,
        vec![
            AdvanceReservation {
                name: "maint".into(),
                start: t(now),
                end: t(now) + 600,
                nodes: vec![ReservedNode {
                    node_id: n1,
                    gpus: None
                }],
                flex: false,
                maint: true,
            },
            AdvanceReservation {
                name: "daily".into(),
                start: t(daily_start),
                end: t(daily_start) + 1800,
                nodes: vec![ReservedNode {
                    node_id: n2,
                    gpus: Some(vec![2, 3])
                }],
                flex: true,
                maint: false,
            },
            AdvanceReservation {
                name: "daily".into(),
                start: t(daily_start) + day,
                end: t(daily_start) + day + 1800,
                nodes: vec![ReservedNode {
                    node_id: n2,
                    gpus: Some(vec![2, 3])
                }],
                flex: true,
                maint: false,
            },
        ],
        "no window of the ended one-off"
    );
    let pending = snap.pending.iter().find(|j| j.id == id).unwrap();
    assert_eq!(pending.reservation.as_deref(), Some("maint"));

    // A day and a half later the daily one shows its next two occurrences; maint ended.
    let later = now + Duration::hours(36);
    let snap = cache.refresh(&pool, later, &config).await.unwrap().snapshot;
    let windows: Vec<(String, i64)> = snap
        .advance_reservations
        .iter()
        .map(|r| (r.name.clone(), r.start))
        .collect();
    assert_eq!(
        windows,
        vec![
            ("daily".to_string(), t(daily_start) + 2 * day),
            ("daily".to_string(), t(daily_start) + 3 * day),
        ]
    );

    // Purging removes the ended one-offs only (maint has not ended at `now`).
    let mut tx = berth_db::begin(&pool).await.unwrap();
    let purged = reservation::reservation_purge_ended_in_tx(&mut tx, now)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(purged, 1);
    let names: Vec<String> = reservation::reservation_list(&pool)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["maint", "daily"]);
    let daily = reservation::reservation_get(&pool, "daily")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(daily.nodes[0].node, "n2");
    assert_eq!(daily.nodes[0].gpus, Some(vec![2, 3]));
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_reservation_running_jobs_use_is_not_deleted(pool: PgPool) {
    let n1 = register(&pool, "n1").await;
    let now = Utc::now();
    store(
        &pool,
        &row(
            "maint",
            now - Duration::minutes(1),
            60,
            &[],
            vec![whole(n1)],
        ),
    )
    .await;
    store(
        &pool,
        &row("spare", now + Duration::hours(1), 60, &[], vec![whole(n1)]),
    )
    .await;
    let mut bob = insert("bob", 1);
    bob.spec = serde_json::json!({ "reservation": "maint" });
    let mut tx = berth_db::begin(&pool).await.unwrap();
    let id = job::job_insert_in_tx(&mut tx, &bob).await.unwrap();
    tx.commit().await.unwrap();
    let term = lease::lease_acquire(&pool, LEASE_ROLE, "test", 30.0)
        .await
        .unwrap()
        .unwrap();
    let outcome = cycle::run_cycle(
        &pool,
        term,
        &PlannerConfig::default(),
        &mut SnapshotCache::new(),
    )
    .await
    .unwrap();
    assert_eq!(outcome, Outcome::Committed { started: 1 });
    assert_eq!(
        job::job_get(&pool, id).await.unwrap().unwrap().state,
        "RUNNING"
    );

    // Its live allocation is what a new reservation's busy check sees.
    let live = reservation::reservation_live_allocations(&pool)
        .await
        .unwrap();
    assert_eq!(live.len(), 1);
    assert_eq!((live[0].job_id, live[0].node_id), (id, n1));
    assert!(live[0].end.is_some_and(|e| e > now), "start + 600 s");

    let mut tx = berth_db::begin(&pool).await.unwrap();
    assert_eq!(
        reservation::reservation_delete_in_tx(&mut tx, "maint")
            .await
            .unwrap(),
        ReservationDelete::RunningJobs(1)
    );
    assert_eq!(
        reservation::reservation_delete_in_tx(&mut tx, "spare")
            .await
            .unwrap(),
        ReservationDelete::Deleted
    );
    assert_eq!(
        reservation::reservation_delete_in_tx(&mut tx, "nosuch")
            .await
            .unwrap(),
        ReservationDelete::Missing
    );
    tx.commit().await.unwrap();
    assert!(reservation::reservation_get(&pool, "maint")
        .await
        .unwrap()
        .is_some());
    assert!(reservation::reservation_get(&pool, "spare")
        .await
        .unwrap()
        .is_none());
}
