//! `scontrol`, the subset training scripts use: `show hostnames [LIST]` (one host per
//! line, from `$SLURM_JOB_NODELIST` when no list is given; `show hostname` is the same),
//! `show job [ID]` (`$SLURM_JOB_ID` by default), `requeue ID[,ID…]` and
//! `update JobId=ID key=value…` (`TimeLimit=` also of a running job, from inside it); and
//! the operator forms `show node|partition [NAME]`, `update NodeName=LIST
//! State=DRAIN|RESUME Reason=…`, `create|update|delete PartitionName=NAME Key=Value…` (see
//! [`crate::admin`]), and `create reservation …`, `update|delete ReservationName=NAME …`,
//! `show reservation [NAME]` (see [`crate::reservation`]). `--json`/`--yaml` (anywhere
//! on the line) make `show job|node|partition|reservation` print slurmrestd's v0.0.44
//! documents instead ([`document_format`]).

use crate::client::Client;
use crate::commands;
use anyhow::{anyhow, bail, Context};
use berth_core::hostlist;
use berth_core::scheduling::JobUpdate;

/// What `scontrol update` changes, named by one of its `key=value` words.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateTarget {
    /// `JobId=ID` (or `Job=ID`) with the other words read by
    /// [`crate::job_control::parse_update`]: `TimeLimit=`, `Nice=`, `Priority=`,
    /// `StartTime=`/`BeginTime=`.
    Job {
        /// The job id.
        id: i64,
        /// The changes.
        update: JobUpdate,
    },
    /// `NodeName=LIST` (or `Node=`) with the other words, as given.
    Node {
        /// The node list.
        names: String,
        /// The other `key=value` words.
        assignments: Vec<String>,
    },
}

/// Reads `scontrol update`'s words (after `update`): one `JobId=`/`Job=` or
/// `NodeName=`/`Node=` word, anywhere, and the changes; keys are case-insensitive.
///
/// # Errors
/// No target, two targets, a bad job id (array tasks `12_3` are not supported), no
/// change, or a change [`crate::job_control::parse_update`] refuses.
pub fn parse_update_target(words: &[String]) -> anyhow::Result<UpdateTarget> {
    let mut target: Option<(bool, &str)> = None;
    let mut rest = Vec::new();
    for word in words {
        let (key, value) = word.split_once('=').unwrap_or((word.as_str(), ""));
        let is_job = match key.to_ascii_lowercase().as_str() {
            "jobid" | "job" => true,
            "nodename" | "node" => false,
            _ => {
                rest.push(word.clone());
                continue;
            }
        };
        if target.is_some() {
            bail!("scontrol update: name one job (JobId=) or node list (NodeName=), once");
        }
        if value.trim().is_empty() {
            bail!("scontrol update: {key}= needs a value");
        }
        target = Some((is_job, value.trim()));
    }
    let Some((is_job, value)) = target else {
        bail!("scontrol update: what to update? (scontrol update JobId=ID TimeLimit=…)");
    };
    if rest.is_empty() {
        bail!("scontrol update {value}: nothing to change");
    }
    if !is_job {
        return Ok(UpdateTarget::Node {
            names: value.to_string(),
            assignments: rest,
        });
    }
    let id = value
        .parse()
        .with_context(|| format!("scontrol update: not a job id: {value:?}"))?;
    let update = crate::job_control::parse_update(&rest)?;
    Ok(UpdateTarget::Job { id, update })
}

/// `scontrol show node`'s `Key=Value` layout for one node (Slurm's keys and order; the
/// first line flush left, the others indented by three spaces): CPUs allocated,
/// effective and total, features, GRES (`gpu:N`), memory (MiB), state (with `+DRAIN`
/// as Slurm writes a draining node), partitions, `CfgTRES`/`AllocTRES`, and the reason.
/// `Sockets`, `CoresPerSocket` and `ThreadsPerCore` are the layout the node's worker
/// reported; without one, `Sockets=CPUs CoresPerSocket=1 ThreadsPerCore=1`, what Slurm
/// shows for a node configured with CPUs alone.
pub fn show_node(node: &berth_core::wire::Node) -> String {
    use berth_core::state::NodeState;
    let features = if node.features.is_empty() {
        "(null)".to_string()
    } else {
        node.features.join(",")
    };
    let gres = if node.gpus.is_empty() {
        "(null)".to_string()
    } else {
        format!(
            "gpu:{}",
            node.gpus.iter().filter(|g| g.parent.is_none()).count()
        )
    };
    let busy = node.gpus_allocated > 0 || node.cpus_allocated > 0;
    let state = match node.state {
        NodeState::Draining => "MIXED+DRAIN".to_string(),
        NodeState::Drained => "IDLE+DRAIN".to_string(),
        NodeState::PoweredDown => "IDLE+CLOUD+POWERED_DOWN".to_string(),
        NodeState::PoweringUp if busy => "ALLOCATED+CLOUD+POWERING_UP".to_string(),
        NodeState::PoweringUp => "IDLE+CLOUD+POWERING_UP".to_string(),
        NodeState::PoweringDown => "IDLE+CLOUD+POWERING_DOWN".to_string(),
        NodeState::Down => "DOWN".to_string(),
        _ => crate::format::node_state_short(node)
            .replace("alloc", "ALLOCATED")
            .replace("mix", "MIXED")
            .to_ascii_uppercase(),
    };
    let mem = |mib: u64| crate::format::memory_units(mib);
    let mut cfg = format!(
        "cpu={},mem={},billing={}",
        node.cpus,
        mem(node.memory_mib),
        node.cpus
    );
    if !node.gpus.is_empty() {
        cfg.push_str(&format!(",gres/gpu={}", node.gpus.len()));
    }
    let mut alloc = Vec::new();
    if node.cpus_allocated > 0 {
        alloc.push(format!("cpu={}", node.cpus_allocated));
    }
    if node.memory_allocated_mib > 0 {
        alloc.push(format!("mem={}", mem(node.memory_allocated_mib)));
    }
    if node.gpus_allocated > 0 {
        alloc.push(format!("gres/gpu={}", node.gpus_allocated));
    }
    let (sockets, cores_per_socket, threads_per_core) = if node.threads_per_core == 0 {
        (node.cpus, 1, 1)
    } else {
        (node.sockets, node.cores_per_socket, node.threads_per_core)
    };
    let mut lines = vec![
        format!("NodeName={} CoresPerSocket={cores_per_socket}", node.name),
        format!(
            "CPUAlloc={} CPUEfctv={} CPUTot={} CPULoad=N/A",
            node.cpus_allocated, node.cpus_effective, node.cpus
        ),
        format!("AvailableFeatures={features}"),
        format!("ActiveFeatures={features}"),
        format!("Gres={gres}"),
        format!("NodeAddr={0} NodeHostName={0}", node.name),
        format!(
            "RealMemory={} AllocMem={} FreeMem=N/A Sockets={sockets} Boards=1",
            node.memory_mib, node.memory_allocated_mib
        ),
    ];
    if node.core_spec_count > 0 || node.mem_spec_limit_mib > 0 {
        lines.push(format!(
            "CoreSpecCount={} MemSpecLimit={}",
            node.core_spec_count, node.mem_spec_limit_mib
        ));
    }
    lines.push(format!(
        "State={state} ThreadsPerCore={threads_per_core} TmpDisk=0 Weight={} Owner=N/A MCS_label=N/A",
        node.weight
    ));
    lines.push(format!(
        "Partitions={}",
        if node.partitions.is_empty() {
            "(null)".to_string()
        } else {
            node.partitions.join(",")
        }
    ));
    lines.push(format!("CfgTRES={cfg}"));
    lines.push(format!("AllocTRES={}", alloc.join(",")));
    if let Some(reason) = &node.reason {
        // Slurm's `Reason=… [user@time]`, when Berth knows who set it and when.
        match (&node.reason_user, node.reason_time) {
            (Some(user), Some(at)) => lines.push(format!(
                "Reason={reason} [{user}@{}]",
                crate::format::scontrol_time(Some(at))
            )),
            _ => lines.push(format!("Reason={reason}")),
        }
    }
    crate::format::key_value_lines(&lines)
}

/// The host names of a compressed host list, one per line.
///
/// # Errors
/// A malformed list.
pub fn hostnames(list: &str) -> anyhow::Result<String> {
    let hosts = hostlist::expand(list).with_context(|| format!("bad host list {list:?}"))?;
    Ok(hosts.iter().map(|h| format!("{h}\n")).collect())
}

/// The job that holds array task `raw` (`5_3`): the task's own job once it has one, else
/// the array's master while it holds the task pending (Slurm shows the master's record
/// then); `None` when there is no such task the caller may see. Resolved by the api, as
/// slurmrestd's `GET job/{job_id}` resolves it.
///
/// # Errors
/// `raw` is not `JOB_TASK`, or the api failed.
async fn array_task_job(client: &Client, raw: &str) -> anyhow::Result<Option<i64>> {
    let task: crate::job_control::JobRef = raw.parse().map_err(anyhow::Error::msg)?;
    let path = format!("/slurm/{}/job/{task}", berth_api::slurmrestd::VERSION);
    match client.get_json::<serde_json::Value>(&path).await {
        Ok(document) => Ok(document["jobs"][0]["job_id"].as_i64()),
        Err(e) if matches!(e.status(), Some(400 | 404)) => Ok(None),
        Err(e) => Err(e.into()),
    }
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

/// Takes scontrol's `--json`/`--yaml` out of `args` (anywhere, as getopt permutes them;
/// `--json=v0.0.44` names the data parser): `Some(true)` for YAML, `Some(false)` for JSON,
/// `None` for neither, with the other words.
///
/// # Errors
/// Both given, or another data parser version named.
pub fn document_format(args: &[String]) -> anyhow::Result<(Option<bool>, Vec<String>)> {
    let mut format = None;
    let mut rest = Vec::new();
    for arg in args {
        // getopt_long's prefixes (`--js`); the command's words are not options.
        let completed = match crate::getopt::complete_long(arg, &["json", "yaml", "help", "usage"])
        {
            Some(Ok(full)) => full,
            Some(Err(e)) if rest.is_empty() => bail!("scontrol: {e}"),
            _ => arg.clone(),
        };
        let arg = &completed;
        let (name, version) = arg.split_once('=').unwrap_or((arg.as_str(), ""));
        let yaml = match name {
            "--json" => false,
            "--yaml" => true,
            _ => {
                rest.push(arg.clone());
                continue;
            }
        };
        if !version.is_empty() && version != berth_api::slurmrestd::VERSION {
            bail!(
                "scontrol: {name}={version}: Berth prints data parser {} only",
                berth_api::slurmrestd::VERSION
            );
        }
        if format.is_some_and(|f| f != yaml) {
            bail!("scontrol: --json and --yaml: give one");
        }
        format = Some(yaml);
    }
    Ok((format, rest))
}

/// `scontrol --json|--yaml show job|node|partition|reservation [NAME]`: the documents
/// slurmrestd's `job/{job_id}`, `nodes`, `partitions` and `reservations` answer (data
/// parser v0.0.44), of what `scontrol show` would print. A job is read through the api's
/// `GET /slurm/v0.0.44/job/{job_id}` (so `12` of an array gives every task, `12_3` one,
/// as in Slurm); the others through `/v1` and [`berth_api::slurmrestd`]'s conversions.
async fn show_document(
    args: &[String],
    yaml: bool,
    client: impl FnOnce() -> anyhow::Result<Client>,
) -> anyhow::Result<i32> {
    let words: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
    let what = match words.as_slice() {
        [show, what, ..] if show == "show" => what.as_str(),
        _ => bail!(
            "scontrol: --json/--yaml print `show job|node|partition|reservation` only in Berth"
        ),
    };
    let name = args.get(2);
    let client = client()?;
    let who: serde_json::Value = client.get_json("/v1/whoami").await?;
    let user = who["user"].as_str().unwrap_or("").to_string();
    crate::clusters::name(&client).await?;
    let document = match what {
        "job" | "jobid" => {
            let raw = match name {
                Some(id) => id.trim().to_string(),
                None => job_id_arg(None)?.to_string(),
            };
            let valid = raw
                .split_once('_')
                .map_or(raw.parse::<i64>().is_ok(), |(j, t)| {
                    j.parse::<i64>().is_ok() && t.parse::<u32>().is_ok()
                });
            if !valid {
                bail!("not a job id: {raw:?}");
            }
            let path = format!("/slurm/{}/job/{raw}", berth_api::slurmrestd::VERSION);
            match client.get_json::<serde_json::Value>(&path).await {
                Ok(document) => document,
                Err(e) if matches!(e.status(), Some(400 | 404)) => {
                    eprintln!("slurm_load_jobs error: Invalid job id specified");
                    return Ok(1);
                }
                Err(e) => return Err(e.into()),
            }
        }
        "node" | "nodes" => {
            let mut nodes = client.node_list().await?.items;
            if let Some(name) = name {
                let wanted = hostlist::expand(name)
                    .with_context(|| format!("scontrol show node: bad node list {name:?}"))?;
                nodes.retain(|n| wanted.contains(&n.name));
                if nodes.is_empty() {
                    bail!("Node {name} not found");
                }
            }
            berth_api::slurmrestd::nodes_document(&nodes, &user)
        }
        "partition" | "partitions" => {
            let partitions = match name {
                Some(name) => vec![client.partition_get(name).await?],
                None => client.partition_list().await?.items,
            };
            let all: Vec<String> = client
                .node_list()
                .await?
                .items
                .into_iter()
                .map(|n| n.name)
                .collect();
            berth_api::slurmrestd::partitions_document(&partitions, &all, &user)
        }
        "reservation" | "reservations" | "res" => {
            let reservations = match name {
                Some(name) => vec![client.reservation_get(name).await?],
                None => client.reservation_list().await?.items,
            };
            berth_api::slurmrestd::reservations_document(&reservations, &user)
        }
        other => bail!(
            "scontrol show {other} --json: Berth prints documents of job, node, partition \
             and reservation only"
        ),
    };
    crate::format::print_document(&document, yaml)?;
    Ok(0)
}

/// `scontrol --help` (also `-h`, `help`): the commands Berth's scontrol runs.
pub const HELP: &str = "\
Usage: scontrol [OPTIONS] COMMAND [ARGS...]

Options:
  --json, --yaml          show job|node|partition as slurmrestd's documents
  -M, --clusters=NAME     all, or this cluster's name (Berth is one cluster)
  -h, --help              show this help message
      --usage             display a brief usage message

Commands:
  show hostnames|hostname|hostlist [LIST]  expand or compress a host list
                                           (SLURM_JOB_NODELIST when none is given)
  show job [ID]                            a job, as Slurm prints it (array ids: 5_3)
  show node [NAME]                         a node
  show partition [NAME]                    a partition
  show reservation [NAME]                  an advance reservation
  hold|release|top JOBID...                hold, release, or move jobs first
  requeue JOBID...                         requeue jobs
  update JobId=ID FIELD=VALUE...           change a job (TimeLimit, Nice, Name, ...)
  update NodeName=LIST State=DRAIN|RESUME [Reason=TEXT]
                                           drain or resume nodes
  update NodeName=LIST CPUs=|RealMemory=|Features=|Weight=...
                                           a node's slurm.conf settings
  create|update|delete PartitionName=NAME ...
                                           partitions
  create|update|delete ReservationName=NAME ...
                                           advance reservations
";

/// Runs `scontrol ARGS`; `client` is made only for the commands that need the api.
///
/// # Errors
/// An unknown or unsupported command, a bad argument, or the api's refusal.
pub async fn run(
    args: &[String],
    client: impl FnOnce() -> anyhow::Result<Client>,
) -> anyhow::Result<i32> {
    let (clusters, args) = cluster_option(args)?;
    match crate::clusters::requested(clusters.as_deref(), Some("SLURM_CLUSTERS")) {
        Some(value) => {
            let client = client()?;
            crate::clusters::check(&client, "scontrol", Some(&value), None).await?;
            run_command(&args, move || Ok(client)).await
        }
        None => run_command(&args, client).await,
    }
}

/// Takes scontrol's `-M/--clusters` out of its arguments (`-M X`, `-MX`, `--clusters X`,
/// `--clusters=X`, and getopt_long's prefixes of `--clusters`), wherever it stands
/// before the command's words end.
///
/// # Errors
/// `-M` without a value.
pub fn cluster_option(args: &[String]) -> anyhow::Result<(Option<String>, Vec<String>)> {
    let mut clusters = None;
    let mut rest = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let long = arg
            .strip_prefix("--")
            .filter(|a| a.len() >= 2 && "clusters".starts_with(a.split('=').next().unwrap_or("")));
        let value =
            if let Some(long) = long {
                match long.split_once('=') {
                    Some((_, v)) => Some(v.to_string()),
                    None => args.next().cloned().map(Some).ok_or_else(|| {
                        anyhow!("scontrol: option '--clusters' requires an argument")
                    })?,
                }
            } else if arg == "-M" {
                Some(
                    args.next()
                        .cloned()
                        .ok_or_else(|| anyhow!("scontrol: option requires an argument -- 'M'"))?,
                )
            } else {
                arg.strip_prefix("-M").map(str::to_string)
            };
        match value {
            Some(v) => clusters = Some(v),
            None => rest.push(arg.clone()),
        }
    }
    Ok((clusters, rest))
}

/// Runs the command of `scontrol ARGS` once `-M` is dealt with.
async fn run_command(
    args: &[String],
    client: impl FnOnce() -> anyhow::Result<Client>,
) -> anyhow::Result<i32> {
    let (document, args) = document_format(args)?;
    if matches!(
        args.first().map(String::as_str),
        Some("-h" | "--help" | "help")
    ) {
        print!("{HELP}");
        return Ok(0);
    }
    let args = args.as_slice();
    if let Some(yaml) = document {
        return show_document(args, yaml, client).await;
    }
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
            let client = client()?;
            let id = match args.get(2).map(|a| a.trim()) {
                Some(raw) if raw.contains('_') => match array_task_job(&client, raw).await? {
                    Some(id) => id,
                    None => {
                        eprintln!("slurm_load_jobs error: Invalid job id specified");
                        return Ok(1);
                    }
                },
                _ => job_id_arg(args.get(2))?,
            };
            commands::show_job(&client, id, false).await
        }
        [verb @ ("hold" | "release" | "top"), ..] => {
            if args.len() < 2 {
                bail!("scontrol {verb}: which job? (scontrol {verb} JOBID[,JOBID…] …)");
            }
            // Every argument is a job list, as Slurm's scontrol takes them.
            let ids = args[1..]
                .iter()
                .flat_map(|list| list.split(','))
                .filter(|s| !s.is_empty())
                .map(|id| {
                    id.trim()
                        .parse::<i64>()
                        .with_context(|| format!("not a job id: {id:?}"))
                })
                .collect::<anyhow::Result<Vec<i64>>>()?;
            let client = client()?;
            match *verb {
                "hold" => crate::job_control::hold(&client, &ids).await,
                "release" => crate::job_control::release(&client, &ids).await,
                _ => crate::job_control::top(&client, &ids).await,
            }
        }
        ["requeue", ..] => {
            if args.len() < 2 {
                bail!("scontrol requeue: which job? (scontrol requeue JOBID[,JOBID…] …)");
            }
            let client = client()?;
            for id in args[1..]
                .iter()
                .flat_map(|list| list.split(','))
                .filter(|s| !s.is_empty())
            {
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
        ["show", "node" | "nodes", ..] => {
            let client = client()?;
            let nodes = match args.get(2) {
                Some(name) => {
                    let wanted = hostlist::expand(name)
                        .with_context(|| format!("scontrol show node: bad node list {name:?}"))?;
                    let all = client.node_list().await?.items;
                    let found: Vec<_> = all
                        .into_iter()
                        .filter(|n| wanted.contains(&n.name))
                        .collect();
                    if found.is_empty() {
                        bail!("Node {name} not found");
                    }
                    found
                }
                None => client.node_list().await?.items,
            };
            let text: Vec<String> = nodes.iter().map(show_node).collect();
            print!("{}", text.join("\n"));
            Ok(0)
        }
        ["show", "partition" | "partitions", ..] => match args.get(2) {
            Some(name) => crate::admin::partition_show(&client()?, name, false).await,
            None => crate::admin::partition_list(&client()?, false).await,
        },
        ["show", "reservation" | "reservations" | "res", ..] => match args.get(2) {
            Some(name) => crate::reservation::reservation_show(&client()?, name, false).await,
            None => crate::reservation::reservation_list(&client()?, false).await,
        },
        [verb @ ("update" | "create" | "delete"), rest @ ..]
            if rest.first().is_some_and(|w| *w == "reservation")
                || rest.iter().any(|w| {
                    w.starts_with("reservationname=") || w.starts_with("reservation=")
                }) =>
        {
            crate::reservation::scontrol(&client()?, verb, &args[1..]).await
        }
        [verb @ ("update" | "create" | "delete"), rest @ ..]
            if rest.iter().any(|w| w.starts_with("partitionname=")) =>
        {
            use crate::admin::PartitionVerb;
            let verb = match *verb {
                "create" => PartitionVerb::Create,
                "update" => PartitionVerb::Update,
                _ => PartitionVerb::Delete,
            };
            crate::admin::scontrol_partition(&client()?, verb, &args[1..]).await
        }
        ["update", ..] => match parse_update_target(&args[1..])? {
            UpdateTarget::Job { id, update } => {
                client()?
                    .job_update(id, &update)
                    .await
                    .map_err(|e| anyhow::anyhow!("scontrol update JobId={id}: {e}"))?;
                Ok(0)
            }
            UpdateTarget::Node { names, assignments } => {
                let mut words = vec![format!("NodeName={names}")];
                words.extend(assignments);
                crate::admin::scontrol_update_node(&client()?, &words).await
            }
        },
        [] => bail!(
            "scontrol: a command is needed (show hostnames, show job, hold, release, top, \
             requeue, update)"
        ),
        _ => bail!(
            "scontrol {}: not supported by Berth (supported: show hostnames|hostname|hostlist, \
             show job|node|partition|reservation, hold, release, top, requeue, update \
             JobId=|NodeName=, create|update|delete PartitionName=|ReservationName=)",
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

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn update_names_a_job_anywhere_in_any_case() {
        let target = parse_update_target(&words("JobId=42 TimeLimit=0:05")).unwrap();
        assert_eq!(
            target,
            UpdateTarget::Job {
                id: 42,
                update: JobUpdate {
                    time_limit: Some("0:05".into()),
                    ..Default::default()
                }
            }
        );
        let target = parse_update_target(&words("nice=5 job=7 timelimit=1:00:00")).unwrap();
        let UpdateTarget::Job { id, update } = target else {
            panic!("a job update");
        };
        assert_eq!(id, 7);
        assert_eq!(update.nice, Some(5));
        assert_eq!(update.time_limit.as_deref(), Some("1:00:00"));
        let target = parse_update_target(&words("JOBID=3 StartTime=now+1hour")).unwrap();
        assert!(
            matches!(target, UpdateTarget::Job { id: 3, update } if update.begin.as_deref() == Some("now+1hour"))
        );
    }

    #[test]
    fn json_and_yaml_are_taken_anywhere() {
        let (f, rest) = document_format(&words("show job 5 --json")).unwrap();
        assert_eq!((f, rest), (Some(false), words("show job 5")));
        let (f, rest) = document_format(&words("--yaml=v0.0.44 show node")).unwrap();
        assert_eq!((f, rest), (Some(true), words("show node")));
        assert_eq!(document_format(&words("show job")).unwrap().0, None);
        let e = document_format(&words("--json=v0.0.40 show job 5")).unwrap_err();
        assert!(e.to_string().contains("v0.0.40"), "{e}");
        assert!(document_format(&words("--json --yaml show job")).is_err());
    }

    #[test]
    fn update_names_nodes_for_later() {
        assert_eq!(
            parse_update_target(&words("NodeName=gpu[1-2] State=DRAIN")).unwrap(),
            UpdateTarget::Node {
                names: "gpu[1-2]".into(),
                assignments: vec!["State=DRAIN".into()],
            }
        );
    }

    #[test]
    fn update_refuses_what_it_cannot_do() {
        // No target, two targets, an empty or bad id, nothing to change, unknown keys.
        assert!(parse_update_target(&words("TimeLimit=5")).is_err());
        assert!(parse_update_target(&words("JobId=1 JobId=2 TimeLimit=5")).is_err());
        assert!(parse_update_target(&words("JobId=1 NodeName=a TimeLimit=5")).is_err());
        assert!(parse_update_target(&words("JobId= TimeLimit=5")).is_err());
        assert!(parse_update_target(&words("JobId=12_3 TimeLimit=5")).is_err());
        assert!(parse_update_target(&words("JobId=12")).is_err());
        assert!(parse_update_target(&words("JobId=12 Partition=gpu")).is_err());
        assert!(parse_update_target(&words("JobId=12 TimeLimit")).is_err());
    }
}
