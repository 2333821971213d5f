//! A node's highest applied report sequence number when several syncs of the node race
//! (a long poll the worker abandoned finishing beside the next sync) and when a failover
//! lost the last commits.

use berth_db::{node, node_report};
use sqlx::PgPool;

async fn node_id(pool: &PgPool) -> i64 {
    let mut tx = berth_db::begin(pool).await.unwrap();
    let id = node::node_register_in_tx(&mut tx, "n1", "host", 8, 1024, &[], &[])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    id
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn concurrent_syncs_leave_the_highest_sequence_taken(pool: PgPool) {
    let id = node_id(&pool).await;
    node_report::node_report_seq_set(&pool, id, 10, 0)
        .await
        .unwrap();
    assert_eq!(node_report::node_report_seq(&pool, id).await.unwrap(), 10);

    // Two syncs both read 10; the one that took reports up to 12 writes first, then the one
    // that took up to 15 (the worker is told 15): the database remembers 15.
    node_report::node_report_seq_set(&pool, id, 12, 10)
        .await
        .unwrap();
    node_report::node_report_seq_set(&pool, id, 15, 10)
        .await
        .unwrap();
    assert_eq!(node_report::node_report_seq(&pool, id).await.unwrap(), 15);

    // In the other order the later, lower write does not lower it.
    node_report::node_report_seq_set(&pool, id, 14, 12)
        .await
        .unwrap();
    assert_eq!(node_report::node_report_seq(&pool, id).await.unwrap(), 15);

    // A worker whose journal started again lowers it from the number it read.
    node_report::node_report_seq_set(&pool, id, 2, 15)
        .await
        .unwrap();
    assert_eq!(node_report::node_report_seq(&pool, id).await.unwrap(), 2);
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_sequence_a_failover_lowered_meanwhile_stays_for_the_next_sync_to_see(pool: PgPool) {
    let id = node_id(&pool).await;
    node_report::node_report_seq_set(&pool, id, 7, 0)
        .await
        .unwrap();
    // The sync read 20 on the old primary; the promoted standby remembers 7.
    node_report::node_report_seq_set(&pool, id, 25, 20)
        .await
        .unwrap();
    assert_eq!(node_report::node_report_seq(&pool, id).await.unwrap(), 7);
}
