//! Operator commands for nodes and partitions: `berth node show|drain|resume` and `berth
//! partition list|show|set|delete`, and the scontrol forms behind them (`scontrol update
//! NodeName=… State=DRAIN|RESUME Reason=…`, `scontrol create|update|delete
//! PartitionName=…`, `scontrol show node|partition`). Partition settings use Slurm's
//! slurm.conf names (`Nodes`, `Default`, `DefaultTime`, `MaxTime`, `PriorityTier`,
//! `MaxNodes`, `AllowAccounts`, `AllowQos`).

use crate::client::{Client, ClientError};
use crate::format;
use anyhow::{anyhow, bail, Context};
use berth_core::hostlist;
use berth_core::wire::{Node, NodeDrain, NodeUpdate, Partition, PartitionSpec};
use reqwest::Method;

impl Client {
    /// `GET /v1/nodes/{name}`.
    pub async fn node_get(&self, name: &str) -> Result<Node, ClientError> {
        self.call(Method::GET, &format!("/v1/nodes/{name}"), None)
            .await
    }

    /// `POST /v1/nodes/{name}/drain`.
    pub async fn node_drain(&self, name: &str, reason: &str) -> Result<Node, ClientError> {
        let body = serde_json::to_value(NodeDrain {
            reason: reason.to_string(),
        })
        .unwrap_or_default();
        self.call(
            Method::POST,
            &format!("/v1/nodes/{name}/drain"),
            Some(&body),
        )
        .await
    }

    /// `PATCH /v1/nodes/{name}`.
    pub async fn node_update(&self, name: &str, update: &NodeUpdate) -> Result<Node, ClientError> {
        let body = serde_json::to_value(update).unwrap_or_default();
        self.call(Method::PATCH, &format!("/v1/nodes/{name}"), Some(&body))
            .await
    }

    /// `POST /v1/nodes/{name}/resume`.
    pub async fn node_resume(&self, name: &str) -> Result<Node, ClientError> {
        self.call(Method::POST, &format!("/v1/nodes/{name}/resume"), None)
            .await
    }

    /// `GET /v1/partitions/{name}`.
    pub async fn partition_get(&self, name: &str) -> Result<Partition, ClientError> {
        self.call(Method::GET, &format!("/v1/partitions/{name}"), None)
            .await
    }

    /// `PUT /v1/partitions/{name}`.
    pub async fn partition_put(
        &self,
        name: &str,
        spec: &PartitionSpec,
    ) -> Result<Partition, ClientError> {
        let body = serde_json::to_value(spec).unwrap_or_default();
        self.call(Method::PUT, &format!("/v1/partitions/{name}"), Some(&body))
            .await
    }

    /// `DELETE /v1/partitions/{name}`.
    pub async fn partition_delete(&self, name: &str) -> Result<(), ClientError> {
        self.call_empty(Method::DELETE, &format!("/v1/partitions/{name}"), None)
            .await
    }
}

/// A partition's definition as the api takes it, from what the api shows.
pub fn partition_spec(p: &Partition) -> PartitionSpec {
    PartitionSpec {
        is_default: p.is_default,
        default_time: p.default_time,
        max_time: p.max_time,
        nodes: p.nodes.clone(),
        priority_tier: p.priority_tier,
        max_nodes: p.max_nodes,
        allowed_accounts: p.allowed_accounts.clone(),
        allowed_qos: p.allowed_qos.clone(),
        def_cpu_per_gpu: p.def_cpu_per_gpu,
        def_mem_per_gpu: p.def_mem_per_gpu,
        def_mem_per_cpu: p.def_mem_per_cpu,
        max_mem_per_node: p.max_mem_per_node,
    }
}

fn list(value: &str) -> Vec<String> {
    if value.eq_ignore_ascii_case("all") {
        return Vec::new();
    }
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn unlimited(value: &str) -> bool {
    value.is_empty() || value == "-1" || value.eq_ignore_ascii_case("unlimited")
}

/// Applies slurm.conf-style `Key=Value` partition settings to `spec` (keys
/// case-insensitive): `Nodes=node-[1-4],gpu7` (a host list; `ALL` for every node),
/// `Default=YES|NO`, `DefaultTime=` and `MaxTime=` (Slurm's time formats, `UNLIMITED`),
/// `PriorityTier=N`, `MaxNodes=N|UNLIMITED`, `AllowAccounts=a,b|ALL`, `AllowQos=q|ALL`,
/// `DefCpuPerGPU=N`, and `DefMemPerGPU=`, `DefMemPerCPU=`, `MaxMemPerNode=` in MiB
/// (`UNLIMITED` or `0` for none, as slurm.conf's `0`).
/// `PartitionName=` is skipped (scontrol passes it along).
///
/// # Errors
/// A message naming the unknown key or the bad value.
pub fn apply_partition_assignments(
    spec: &mut PartitionSpec,
    assignments: &[String],
) -> anyhow::Result<()> {
    for a in assignments {
        let Some((key, value)) = a.split_once('=') else {
            bail!("expected Key=Value, got {a:?}");
        };
        let bad = |what: &str| anyhow!("{key}={value}: {what}");
        if value.trim().is_empty() && !key.eq_ignore_ascii_case("partitionname") {
            bail!("{key}= needs a value (UNLIMITED or ALL where that is meant)");
        }
        let time = |v: &str| -> anyhow::Result<Option<u64>> {
            if unlimited(v) {
                return Ok(None);
            }
            berth_core::duration::parse_duration(v).map_err(|e| bad(&e.to_string()))
        };
        match key.to_ascii_lowercase().as_str() {
            "partitionname" => {}
            "nodes" => {
                spec.nodes = if value.eq_ignore_ascii_case("all") {
                    Vec::new()
                } else {
                    hostlist::expand(value).map_err(|e| bad(&e.to_string()))?
                }
            }
            "default" => {
                spec.is_default = match value.to_ascii_lowercase().as_str() {
                    "yes" | "true" | "1" => true,
                    "no" | "false" | "0" => false,
                    _ => return Err(bad("YES or NO")),
                }
            }
            "defaulttime" => spec.default_time = time(value)?,
            "maxtime" => spec.max_time = time(value)?,
            "prioritytier" => spec.priority_tier = value.parse().map_err(|_| bad("not a count"))?,
            "maxnodes" => {
                spec.max_nodes = if unlimited(value) {
                    None
                } else {
                    Some(value.parse().map_err(|_| bad("not a count"))?)
                }
            }
            "allowaccounts" => spec.allowed_accounts = list(value),
            "allowqos" => spec.allowed_qos = list(value),
            "defcpupergpu" => {
                spec.def_cpu_per_gpu = if unlimited(value) || value == "0" {
                    None
                } else {
                    Some(value.parse().map_err(|_| bad("not a count"))?)
                }
            }
            "defmempergpu" | "defmempercpu" | "maxmempernode" => {
                let mib = if unlimited(value) || value == "0" {
                    None
                } else {
                    Some(value.parse().map_err(|_| bad("not a size in MiB"))?)
                };
                match key.to_ascii_lowercase().as_str() {
                    "defmempergpu" => spec.def_mem_per_gpu = mib,
                    "defmempercpu" => spec.def_mem_per_cpu = mib,
                    _ => spec.max_mem_per_node = mib,
                }
            }
            other => bail!(
                "unknown partition setting {other:?} (Nodes, Default, DefaultTime, MaxTime, \
                 PriorityTier, MaxNodes, AllowAccounts, AllowQos, DefCpuPerGPU, DefMemPerGPU, \
                 DefMemPerCPU, MaxMemPerNode)"
            ),
        }
    }
    Ok(())
}

/// `scontrol show partition`'s `Key=Value` lines, the keys Berth has in the order and on
/// the lines of Slurm's (`slurm_sprint_partition_info`): `PartitionName`; `AllowGroups`
/// (always `ALL`: Berth has no groups), `AllowAccounts`, `AllowQos`; `Default`;
/// `DefaultTime` (`NONE` when unset); `MaxNodes`, `MaxTime`; `Nodes`; `PriorityTier`;
/// `TotalNodes` (and Berth's `TotalGPUs`); `JobDefaults` (`DefCpuPerGPU`, `DefMemPerGPU`,
/// or `(null)`); `DefMemPerCPU` (or `DefMemPerNode=UNLIMITED`), `MaxMemPerNode`.
pub fn format_partition(p: &Partition) -> String {
    let time = |t: Option<u64>, none: &str| match t {
        Some(s) => format::scontrol_duration(s),
        None => none.to_string(),
    };
    let unlimited = |v: Option<String>| v.unwrap_or_else(|| "UNLIMITED".to_string());
    let all = |v: &[String]| {
        if v.is_empty() {
            "ALL".to_string()
        } else {
            v.join(",")
        }
    };
    let mut job_defaults = Vec::new();
    if let Some(n) = p.def_cpu_per_gpu {
        job_defaults.push(format!("DefCpuPerGPU={n}"));
    }
    if let Some(m) = p.def_mem_per_gpu {
        job_defaults.push(format!("DefMemPerGPU={m}"));
    }
    let job_defaults = if job_defaults.is_empty() {
        "(null)".to_string()
    } else {
        job_defaults.join(",")
    };
    let def_mem = match p.def_mem_per_cpu {
        Some(m) => format!("DefMemPerCPU={m}"),
        None => "DefMemPerNode=UNLIMITED".to_string(),
    };
    let lines = [
        format!("PartitionName={}", p.name),
        format!(
            "AllowGroups=ALL AllowAccounts={} AllowQos={}",
            all(&p.allowed_accounts),
            all(&p.allowed_qos)
        ),
        format!("Default={}", if p.is_default { "YES" } else { "NO" }),
        format!("DefaultTime={}", time(p.default_time, "NONE")),
        format!(
            "MaxNodes={} MaxTime={}",
            unlimited(p.max_nodes.map(|n| n.to_string())),
            time(p.max_time, "UNLIMITED")
        ),
        format!(
            "Nodes={}",
            if p.nodes.is_empty() {
                "ALL".to_string()
            } else {
                hostlist::compress(&p.nodes)
            }
        ),
        format!("PriorityTier={}", p.priority_tier),
        format!("TotalNodes={} TotalGPUs={}", p.total_nodes, p.total_gpus),
        format!("JobDefaults={job_defaults}"),
        format!(
            "{def_mem} MaxMemPerNode={}",
            unlimited(p.max_mem_per_node.map(|m| m.to_string()))
        ),
    ];
    let mut out = lines.join("\n   ");
    out.push('\n');
    out
}

/// `berth node show NAME`.
pub async fn node_show(client: &Client, name: &str, json: bool) -> anyhow::Result<i32> {
    let node = client.node_get(name).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&node)?);
    } else {
        print!("{}", format::node_table(&[node]));
    }
    Ok(0)
}

/// Fails, changing nothing, when any of `names` is not a node (as scontrol refuses an
/// invalid node name before touching the others).
async fn check_nodes(client: &Client, names: &[String]) -> anyhow::Result<()> {
    let known = client.node_list().await?;
    let missing: Vec<&str> = names
        .iter()
        .filter(|n| !known.items.iter().any(|k| &k.name == *n))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        bail!(
            "invalid node name(s): {} (nothing changed)",
            missing.join(", ")
        );
    }
    Ok(())
}

/// `berth node drain NAME… --reason R`: each node drained, its new state printed.
pub async fn node_drain(client: &Client, names: &[String], reason: &str) -> anyhow::Result<i32> {
    check_nodes(client, names).await?;
    let mut nodes = Vec::new();
    for name in names {
        nodes.push(
            client
                .node_drain(name, reason)
                .await
                .with_context(|| format!("drain {name}"))?,
        );
    }
    print!("{}", format::node_table(&nodes));
    Ok(0)
}

/// `berth node resume NAME…`.
pub async fn node_resume(client: &Client, names: &[String]) -> anyhow::Result<i32> {
    check_nodes(client, names).await?;
    let mut nodes = Vec::new();
    for name in names {
        nodes.push(
            client
                .node_resume(name)
                .await
                .with_context(|| format!("resume {name}"))?,
        );
    }
    print!("{}", format::node_table(&nodes));
    Ok(0)
}

/// `berth partition list`.
pub async fn partition_list(client: &Client, json: bool) -> anyhow::Result<i32> {
    let list = client.partition_list().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list.items)?);
    } else {
        for p in &list.items {
            print!("{}", format_partition(p));
        }
    }
    Ok(0)
}

/// `berth partition show NAME`.
pub async fn partition_show(client: &Client, name: &str, json: bool) -> anyhow::Result<i32> {
    let p = client.partition_get(name).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&p)?);
    } else {
        print!("{}", format_partition(&p));
    }
    Ok(0)
}

/// `berth partition set NAME Key=Value…`: creates the partition, or changes the given
/// settings of an existing one (the others are kept).
pub async fn partition_set(
    client: &Client,
    name: &str,
    assignments: &[String],
) -> anyhow::Result<i32> {
    if name.trim().is_empty() {
        bail!("a partition needs a name");
    }
    let mut spec = match client.partition_get(name).await {
        Ok(p) => partition_spec(&p),
        Err(ClientError::Problem { status: 404, .. }) => PartitionSpec {
            priority_tier: 1,
            ..PartitionSpec::default()
        },
        Err(e) => return Err(e.into()),
    };
    apply_partition_assignments(&mut spec, assignments)?;
    let p = client.partition_put(name, &spec).await?;
    print!("{}", format_partition(&p));
    Ok(0)
}

/// `berth partition delete NAME`.
pub async fn partition_delete(client: &Client, name: &str) -> anyhow::Result<i32> {
    client.partition_delete(name).await?;
    Ok(0)
}

/// The value of `key` (case-insensitive) among `Key=Value` words.
fn value_of<'a>(words: &'a [String], key: &str) -> Option<&'a str> {
    words.iter().find_map(|w| {
        w.split_once('=')
            .filter(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

/// The node settings `berth node set` and `scontrol update NodeName=…` take, as
/// slurm.conf's node line names them (keys case-insensitive).
pub const NODE_SETTINGS: [&str; 7] = [
    "cpus",
    "realmemory",
    "features",
    "availablefeatures",
    "weight",
    "corespeccount",
    "memspeclimit",
];

/// Reads node settings, `Key=Value` words: `CPUs=96`, `RealMemory=1T` (MiB without a
/// suffix, as in slurm.conf; K/M/G/T allowed), `Features=h100,ib` (`Features=` clears
/// them), `Weight=10`, `CoreSpecCount=2`, `MemSpecLimit=8G`. A value `default` returns
/// the setting to what the worker reports.
///
/// # Errors
/// A word that is not `Key=Value`, an unknown key, or a bad value; the message names the
/// key.
pub fn parse_node_settings(words: &[String]) -> anyhow::Result<NodeUpdate> {
    fn number<T: std::str::FromStr>(key: &str, v: &str) -> anyhow::Result<Option<T>> {
        if v.eq_ignore_ascii_case("default") {
            return Ok(None);
        }
        v.parse()
            .map(Some)
            .map_err(|_| anyhow!("{key}={v}: not a whole number"))
    }
    fn size(key: &str, v: &str) -> anyhow::Result<Option<u64>> {
        if v.eq_ignore_ascii_case("default") {
            return Ok(None);
        }
        berth_core::sbatch::size_mib(v)
            .map(Some)
            .map_err(|e| anyhow!("{key}={v}: {e}"))
    }
    let mut update = NodeUpdate::default();
    for word in words {
        let (key, value) = word
            .split_once('=')
            .with_context(|| format!("{word}: expected Key=Value (CPUs=96, Features=h100,ib …)"))?;
        match key.to_ascii_lowercase().as_str() {
            "cpus" => update.cpus = Some(number(key, value)?),
            "realmemory" => update.memory_mib = Some(size(key, value)?),
            "features" | "availablefeatures" => {
                update.features = Some(if value.eq_ignore_ascii_case("default") {
                    None
                } else {
                    Some(
                        value
                            .split(',')
                            .map(str::trim)
                            .filter(|f| !f.is_empty())
                            .map(str::to_string)
                            .collect(),
                    )
                });
            }
            "weight" => update.weight = Some(number(key, value)?),
            "corespeccount" => update.core_spec_count = Some(number(key, value)?),
            "memspeclimit" => update.mem_spec_limit_mib = Some(size(key, value)?),
            _ => bail!(
                "{key}: not a node setting (CPUs, RealMemory, Features, Weight, CoreSpecCount, \
                 MemSpecLimit)"
            ),
        }
    }
    if update == NodeUpdate::default() {
        bail!("nothing to set (CPUs=, RealMemory=, Features=, Weight=, CoreSpecCount=, MemSpecLimit=)");
    }
    Ok(update)
}

/// `berth node set LIST Key=Value…`: configures each node as slurm.conf's node line does.
///
/// # Errors
/// A bad setting, an unknown node, or the api's refusal.
pub async fn node_set(client: &Client, list: &str, words: &[String]) -> anyhow::Result<i32> {
    let names = hostlist::expand(list).with_context(|| format!("bad host list {list:?}"))?;
    let update = parse_node_settings(words)?;
    check_nodes(client, &names).await?;
    let mut nodes = Vec::new();
    for name in &names {
        nodes.push(
            client
                .node_update(name, &update)
                .await
                .with_context(|| format!("set {name}"))?,
        );
    }
    print!("{}", format::node_table(&nodes));
    Ok(0)
}

/// `scontrol update NodeName=LIST State=DRAIN|RESUME|UNDRAIN|IDLE [Reason=…]`,
/// `State=POWER_UP|POWER_DOWN|POWER_DOWN_ASAP|POWER_DOWN_FORCE` (pool nodes), and
/// `scontrol update NodeName=LIST Features=… Weight=… …` (the settings of
/// [`parse_node_settings`]).
///
/// # Errors
/// A missing or unsupported state, a drain without a reason, a bad host list, or the
/// api's refusal.
pub async fn scontrol_update_node(client: &Client, words: &[String]) -> anyhow::Result<i32> {
    let list = value_of(words, "nodename").context("scontrol update: NodeName= is needed")?;
    let names = hostlist::expand(list).with_context(|| format!("bad host list {list:?}"))?;
    let key = |w: &String| {
        w.split_once('=')
            .map(|(k, _)| k.to_ascii_lowercase())
            .unwrap_or_default()
    };
    if let Some(other) = words.iter().find(|w| {
        let k = key(w);
        !["nodename", "state", "reason"].contains(&k.as_str())
            && !NODE_SETTINGS.contains(&k.as_str())
    }) {
        bail!(
            "scontrol update {other}: Berth changes a node's State, Reason, CPUs, RealMemory, \
             Features, Weight, CoreSpecCount and MemSpecLimit"
        );
    }
    let settings: Vec<String> = words
        .iter()
        .filter(|w| NODE_SETTINGS.contains(&key(w).as_str()))
        .cloned()
        .collect();
    if !settings.is_empty() {
        let code = node_set(client, list, &settings)
            .await
            .context("scontrol update")?;
        if value_of(words, "state").is_none() {
            return Ok(code);
        }
    }
    let state = value_of(words, "state").context("scontrol update: State= is needed")?;
    match state.to_ascii_lowercase().as_str() {
        "drain" => {
            let reason = value_of(words, "reason")
                .filter(|r| !r.trim().is_empty())
                .context("scontrol update: you must specify a Reason= when draining a node")?;
            node_drain(client, &names, reason).await
        }
        "resume" | "undrain" | "idle" => node_resume(client, &names).await,
        "power_up" => {
            crate::pools::node_power(client, &names, berth_core::pool::PowerAction::Up).await
        }
        "power_down" | "power_down_asap" => {
            crate::pools::node_power(client, &names, berth_core::pool::PowerAction::Down).await
        }
        "power_down_force" => {
            crate::pools::node_power(client, &names, berth_core::pool::PowerAction::DownForce).await
        }
        other => bail!(
            "scontrol update State={other}: Berth supports DRAIN, RESUME, POWER_UP, POWER_DOWN \
             and POWER_DOWN_FORCE"
        ),
    }
}

/// What `scontrol` does to a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionVerb {
    /// `create`: a new partition (refused when it exists).
    Create,
    /// `update`: an existing partition (refused when there is none).
    Update,
    /// `delete`.
    Delete,
}

/// `scontrol create|update partition PartitionName=X Key=Value…` and `scontrol delete
/// PartitionName=X`. As in Slurm, `update` of a missing partition and `create` of an
/// existing one are refused (a typo does not make a new partition).
///
/// # Errors
/// A missing name, a bad setting, or the api's refusal.
pub async fn scontrol_partition(
    client: &Client,
    verb: PartitionVerb,
    words: &[String],
) -> anyhow::Result<i32> {
    let name = value_of(words, "partitionname")
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .context("PartitionName= needs a partition name")?;
    if verb == PartitionVerb::Delete {
        return partition_delete(client, &name).await;
    }
    let exists = match client.partition_get(&name).await {
        Ok(_) => true,
        Err(ClientError::Problem { status: 404, .. }) => false,
        Err(e) => return Err(e.into()),
    };
    match (verb, exists) {
        (PartitionVerb::Update, false) => {
            bail!("Invalid partition name specified: {name} (scontrol create partition makes one)")
        }
        (PartitionVerb::Create, true) => {
            bail!("partition {name} already exists (scontrol update changes it)")
        }
        _ => {}
    }
    let assignments: Vec<String> = words
        .iter()
        .filter(|w| !w.eq_ignore_ascii_case("partition"))
        .cloned()
        .collect();
    partition_set(client, &name, &assignments).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_assignments_read_slurm_conf_names() {
        let mut spec = PartitionSpec::default();
        apply_partition_assignments(
            &mut spec,
            &[
                "PartitionName=debug".into(),
                "Nodes=node-[1-3]".into(),
                "Default=YES".into(),
                "DefaultTime=30".into(),
                "MaxTime=1-00:00:00".into(),
                "PriorityTier=5".into(),
                "MaxNodes=2".into(),
                "AllowAccounts=physics,chem".into(),
                "AllowQos=ALL".into(),
            ],
        )
        .unwrap();
        assert_eq!(spec.nodes, vec!["node-1", "node-2", "node-3"]);
        assert!(spec.is_default);
        assert_eq!(spec.default_time, Some(30 * 60));
        assert_eq!(spec.max_time, Some(86400));
        assert_eq!(spec.priority_tier, 5);
        assert_eq!(spec.max_nodes, Some(2));
        assert_eq!(spec.allowed_accounts, vec!["physics", "chem"]);
        assert!(spec.allowed_qos.is_empty());
        apply_partition_assignments(&mut spec, &["MaxTime=UNLIMITED".into(), "Nodes=ALL".into()])
            .unwrap();
        assert_eq!(spec.max_time, None);
        assert!(spec.nodes.is_empty());
        let err = apply_partition_assignments(&mut spec, &["Shared=YES".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("shared"), "{err}");
        assert!(apply_partition_assignments(&mut spec, &["Default=maybe".into()]).is_err());
        apply_partition_assignments(
            &mut spec,
            &[
                "DefCpuPerGPU=8".into(),
                "DefMemPerGPU=16384".into(),
                "DefMemPerCPU=2048".into(),
                "MaxMemPerNode=UNLIMITED".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            (
                spec.def_cpu_per_gpu,
                spec.def_mem_per_gpu,
                spec.def_mem_per_cpu,
                spec.max_mem_per_node
            ),
            (Some(8), Some(16384), Some(2048), None)
        );
        assert!(apply_partition_assignments(&mut spec, &["DefMemPerCPU=2G".into()]).is_err());
        assert!(apply_partition_assignments(&mut spec, &["MaxNodes=x".into()]).is_err());
    }

    #[test]
    fn scontrol_show_partition_lines() {
        let p = Partition {
            name: "debug".into(),
            is_default: false,
            default_time: Some(1800),
            max_time: None,
            nodes: vec!["node-1".into(), "node-2".into()],
            total_nodes: 2,
            total_gpus: 16,
            priority_tier: 2,
            max_nodes: None,
            allowed_accounts: vec![],
            allowed_qos: vec!["normal".into()],
            def_cpu_per_gpu: Some(4),
            def_mem_per_gpu: None,
            def_mem_per_cpu: None,
            max_mem_per_node: Some(65536),
        };
        // Slurm's keys, in its order and on its lines.
        assert_eq!(
            format_partition(&p),
            "PartitionName=debug\n   \
             AllowGroups=ALL AllowAccounts=ALL AllowQos=normal\n   \
             Default=NO\n   \
             DefaultTime=00:30:00\n   \
             MaxNodes=UNLIMITED MaxTime=UNLIMITED\n   \
             Nodes=node-[1-2]\n   \
             PriorityTier=2\n   \
             TotalNodes=2 TotalGPUs=16\n   \
             JobDefaults=DefCpuPerGPU=4\n   \
             DefMemPerNode=UNLIMITED MaxMemPerNode=65536\n"
        );
        let p = Partition {
            is_default: true,
            default_time: None,
            max_nodes: Some(4),
            def_cpu_per_gpu: None,
            def_mem_per_cpu: Some(2048),
            ..p
        };
        let text = format_partition(&p);
        for line in [
            "   Default=YES\n",
            "   DefaultTime=NONE\n",
            "   MaxNodes=4 MaxTime=UNLIMITED\n",
            "   JobDefaults=(null)\n",
            "   DefMemPerCPU=2048 MaxMemPerNode=65536\n",
        ] {
            assert!(text.contains(line), "{line:?}: {text}");
        }
    }
}
