//! Who set a node's reason and when (sinfo -R's USER and TIMESTAMP): `slurm` for the
//! reasons Berth sets itself, the operator named in the transaction for a drain; a
//! cleared reason clears both.

use berth_db::node;
use sqlx::PgPool;

async fn stamp(pool: &PgPool, id: i64) -> (Option<String>, Option<String>, bool) {
    let row: (
        Option<String>,
        Option<String>,
        Option<chrono::DateTime<chrono::Utc>>,
    ) = sqlx::query_as("SELECT reason, reason_user, reason_time FROM nodes WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap();
    (row.0, row.1, row.2.is_some())
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_reason_records_who_set_it_and_when(pool: PgPool) {
    let mut tx = berth_db::begin(&pool).await.unwrap();
    let id = node::node_register_in_tx(&mut tx, "n1", "host", 8, 1024, &[], &[])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(stamp(&pool, id).await, (None, None, false));

    // Berth's own reason (a stuck allocation): Slurm's controller user.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    node::node_drain_in_tx(&mut tx, id, "Kill task failed")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        stamp(&pool, id).await,
        (Some("Kill task failed".into()), Some("slurm".into()), true)
    );

    // An operator's drain names the operator, in that transaction only.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    node::node_reason_user_set_in_tx(&mut tx, "olga")
        .await
        .unwrap();
    node::node_admin_drain_in_tx(&mut tx, "n1", "bad fan")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        stamp(&pool, id).await,
        (Some("bad fan".into()), Some("olga".into()), true)
    );
    let mut tx = berth_db::begin(&pool).await.unwrap();
    node::node_admin_drain_in_tx(&mut tx, "n1", "fan replaced, testing")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        stamp(&pool, id).await.1.as_deref(),
        Some("slurm"),
        "the operator's name did not outlive its transaction"
    );

    // Resumed: no reason, no one, no time.
    let mut tx = berth_db::begin(&pool).await.unwrap();
    node::node_resume_in_tx(&mut tx, "n1").await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(stamp(&pool, id).await, (None, None, false));
}
