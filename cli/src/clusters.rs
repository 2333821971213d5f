//! `-M/--clusters` of the Slurm-named commands (sbatch, squeue, sinfo, scancel, scontrol,
//! sacct): one Berth installation is one cluster, so the option (or `SLURM_CLUSTERS` in
//! the environment, where Slurm's command reads it) may name `all` or this cluster, whose
//! name the api tells (`GET /v1/cluster`); any other name is refused in Slurm's words
//! ([`berth_core::cluster::check_clusters`]).

use crate::client::Client;
use berth_core::wire::ClusterInfo;

/// The `-M` value in force: the option's, else `SLURM_CLUSTERS` (empty counts as unset)
/// when the command reads it (`env_var`), else none.
pub fn requested(option: Option<&str>, env_var: Option<&str>) -> Option<String> {
    if let Some(value) = option {
        return Some(value.to_string());
    }
    std::env::var(env_var?)
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// This cluster's name, from the api (`GET /v1/cluster`); also made the name that Slurm
/// documents printed by this process carry (`meta.slurm.cluster`).
///
/// # Errors
/// When the api cannot be asked.
pub async fn name(client: &Client) -> anyhow::Result<String> {
    let info: ClusterInfo = client.get_json("/v1/cluster").await?;
    berth_api::cluster_name::set(&info.name);
    Ok(info.name)
}

/// Checks `-M/--clusters` (or `SLURM_CLUSTERS`, when `env_var` names it and the option is
/// absent) for `command`: `Ok(None)` when neither is given, `Ok(Some(name))` (this
/// cluster's name) when they name `all` or this cluster.
///
/// # Errors
/// Another cluster's name: the error's text is Slurm's lines, each `COMMAND: error: …`
/// (`No cluster 'X' known by database.`, then `'X' can't be reached now, or it is an
/// invalid entry for --cluster.  Use 'sacctmgr list clusters' to see available
/// clusters.`); or the api cannot be asked.
pub async fn check(
    client: &Client,
    command: &str,
    option: Option<&str>,
    env_var: Option<&str>,
) -> anyhow::Result<Option<String>> {
    let Some(value) = requested(option, env_var) else {
        return Ok(None);
    };
    let ours = name(client).await?;
    match berth_core::cluster::check_clusters(&value, &ours, "--cluster") {
        Ok(()) => Ok(Some(ours)),
        Err(lines) => Err(anyhow::anyhow!(lines
            .iter()
            .map(|line| format!("{command}: error: {line}"))
            .collect::<Vec<_>>()
            .join("\n"))),
    }
}
