//! `scontrol`, the subset training scripts use: `show hostnames [LIST]` (one host per
//! line, from `$SLURM_JOB_NODELIST` when no list is given; `show hostname` is the same),
//! `show job [ID]` (`$SLURM_JOB_ID` by default) and `requeue ID[,ID…]`; and the operator
//! forms `show node|partition [NAME]`, `update NodeName=LIST State=DRAIN|RESUME
//! Reason=…`, `create|update|delete PartitionName=NAME Key=Value…` (see [`crate::admin`]).

use crate::client::Client;
use crate::commands;
use anyhow::{bail, Context};
use berth_core::hostlist;

/// The host names of a compressed host list, one per line.
///
/// # Errors
/// A malformed list.
pub fn hostnames(list: &str) -> anyhow::Result<String> {
    let hosts = hostlist::expand(list).with_context(|| format!("bad host list {list:?}"))?;
    Ok(hosts.iter().map(|h| format!("{h}\n")).collect())
}

fn job_id_arg(arg: Option<&String>) -> anyhow::Result<i64> {
    match arg {
        Some(id) => id
            .trim()
            .parse()
            .with_context(|| format!("not a job id: {id:?}")),
        None => std::env::var("SLURM_JOB_ID")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .context("no job id given and SLURM_JOB_ID is not set"),
    }
}

/// Runs `scontrol ARGS`; `client` is made only for the commands that need the api.
///
/// # Errors
/// An unknown or unsupported command, a bad argument, or the api's refusal.
pub async fn run(
    args: &[String],
    client: impl FnOnce() -> anyhow::Result<Client>,
) -> anyhow::Result<i32> {
    let words: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
    match words
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["show", "hostnames" | "hostname" | "hostlist", rest @ ..] => {
            let list = match rest.first() {
                Some(_) => args[2].clone(),
                None => std::env::var("SLURM_JOB_NODELIST")
                    .ok()
                    .filter(|l| !l.is_empty())
                    .context("no host list given and SLURM_JOB_NODELIST is not set")?,
            };
            if words[1] == "hostlist" {
                let hosts: Vec<String> = list.split(',').map(str::to_string).collect();
                println!("{}", hostlist::compress(&hosts));
            } else {
                print!("{}", hostnames(&list)?);
            }
            Ok(0)
        }
        ["show", "job" | "jobid", ..] => {
            let id = job_id_arg(args.get(2))?;
            commands::show_job(&client()?, id, false).await
        }
        ["requeue", ..] => {
            let Some(list) = args.get(1) else {
                bail!("scontrol requeue: which job? (scontrol requeue JOBID)");
            };
            let client = client()?;
            for id in list.split(',').filter(|s| !s.is_empty()) {
                let id: i64 = id
                    .trim()
                    .parse()
                    .with_context(|| format!("not a job id: {id:?}"))?;
                let _: serde_json::Value = client
                    .post_json(&format!("/v1/jobs/{id}/requeue"), &serde_json::json!({}))
                    .await
                    .map_err(|e| anyhow::anyhow!("scontrol requeue {id}: {e}"))?;
            }
            Ok(0)
        }
        ["show", "node" | "nodes", ..] => match args.get(2) {
            Some(name) => crate::admin::node_show(&client()?, name, false).await,
            None => crate::commands::nodes(&client()?, true).await,
        },
        ["show", "partition" | "partitions", ..] => match args.get(2) {
            Some(name) => crate::admin::partition_show(&client()?, name, false).await,
            None => crate::admin::partition_list(&client()?, false).await,
        },
        ["update", rest @ ..] if rest.iter().any(|w| w.starts_with("nodename=")) => {
            crate::admin::scontrol_update_node(&client()?, &args[1..]).await
        }
        ["update" | "create", rest @ ..]
            if rest.iter().any(|w| w.starts_with("partitionname=")) =>
        {
            crate::admin::scontrol_partition(&client()?, false, &args[1..]).await
        }
        ["delete", rest @ ..] if rest.iter().any(|w| w.starts_with("partitionname=")) => {
            crate::admin::scontrol_partition(&client()?, true, &args[1..]).await
        }
        [] => bail!("scontrol: a command is needed (show hostnames, show job, requeue)"),
        _ => bail!(
            "scontrol {}: not supported by Berth (supported: show hostnames|hostname|hostlist, \
             show job|node|partition, requeue, update NodeName=, create|update|delete \
             PartitionName=)",
            args.join(" ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_one_per_line() {
        assert_eq!(
            hostnames("node-[1-2],gpu7").unwrap(),
            "node-1\nnode-2\ngpu7\n"
        );
        assert!(hostnames("node-[2-").is_err());
    }
}
