//! This process's cluster name (Slurm's `ClusterName`, the servers' `cluster_name`): what
//! `GET /v1/cluster` answers, what slurmrestd's answers carry (`meta.slurm.cluster`,
//! `cluster` fields) and what the CLI prints in Slurm's documents. One process serves (or,
//! for the CLI, talks to) one cluster, so it is set once: by [`crate::serve`] from
//! [`crate::ApiConfig::cluster_name`], or by the CLI from `GET /v1/cluster`.

use std::sync::OnceLock;

static NAME: OnceLock<String> = OnceLock::new();

/// Sets the cluster's name; the first call wins (a second one with another name is
/// ignored and logged).
pub fn set(name: &str) {
    if NAME.set(name.to_string()).is_err() && NAME.get().is_some_and(|n| n != name) {
        tracing::warn!(
            cluster = name,
            kept = NAME.get().map(String::as_str),
            "cluster name already set"
        );
    }
}

/// The cluster's name ([`berth_core::cluster::DEFAULT_CLUSTER_NAME`] until [`set`]).
pub fn get() -> &'static str {
    NAME.get()
        .map(String::as_str)
        .unwrap_or(berth_core::cluster::DEFAULT_CLUSTER_NAME)
}
