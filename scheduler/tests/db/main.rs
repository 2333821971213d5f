//! The scheduler against a real PostgreSQL (one test binary): the reconcilers and the
//! leader's incremental snapshot.

mod charging;
mod commit;
mod reconcile;
mod reservations;
mod snapshot;

use berth_db::node;
use sqlx::PgPool;

/// Registers node `name` with 4 H100s and 8 CPUs; returns its id.
async fn register(pool: &PgPool, name: &str) -> i64 {
    let mut tx = berth_db::begin(pool).await.unwrap();
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

/// A new pending 1-node job of `user` asking `gpus` GPUs, 10 minutes.
fn insert(user: &str, gpus: i32) -> berth_db::job::JobInsert {
    berth_db::job::JobInsert {
        name: "train".into(),
        user_name: user.into(),
        account: None,
        partition: "gpu".into(),
        qos: None,
        num_nodes: 1,
        num_tasks: 1,
        cpus_per_task: 1,
        gpus_per_node: gpus,
        gpu_type: None,
        exclusive: false,
        whole_node: false,
        mem_mib: None,
        time_limit: Some(600),
        hold: false,
        script: "#!/bin/sh\ntrue\n".into(),
        submit_dir: None,
        work_dir: None,
        stdout_pattern: "slurm-%j.out".into(),
        stderr_pattern: None,
        environment: serde_json::json!({}),
        spec: serde_json::json!({ "constraint": null }),
        reason: None,
        nice: 0,
        begin_time: None,
        dependency: None,
        array_pending: None,
        array_max_running: None,
        array_task_count: None,
        gres: "gpu".into(),
        cpus_per_node: 1,
        mem_per_node_mib: None,
        nodelist: Vec::new(),
        exclude: Vec::new(),
        partitions: Vec::new(),
        time_min: None,
        script_args: Vec::new(),
    }
}
