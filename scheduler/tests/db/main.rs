//! The scheduler against a real PostgreSQL (one test binary): the reconcilers and the
//! leader's incremental snapshot.

mod reconcile;
mod snapshot;

use berth_db::node;
use sqlx::PgPool;

/// Registers node `name` with 4 H100s and 8 CPUs; returns its id.
async fn register(pool: &PgPool, name: &str) -> i64 {
    let mut tx = pool.begin().await.unwrap();
    let gpus: Vec<node::GpuInsert> = (0..4)
        .map(|i| node::GpuInsert {
            index: i,
            uuid: format!("GPU-{name}-{i}"),
            model: "NVIDIA H100 80GB HBM3".into(),
            memory_mib: 81559,
            domain: None,
            kind: "gpu".into(),
            parent: None,
        })
        .collect();
    let id = node::node_register_in_tx(&mut tx, name, "host", 8, 1024, &[], &gpus)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    id
}
