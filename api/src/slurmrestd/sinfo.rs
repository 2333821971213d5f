//! `sinfo --json`/`--yaml`: Slurm's `sinfo` entries, as Slurm 23.02 and later print them
//! (`{"sinfo": [...], "meta", "errors", "warnings"}`, data parser v0.0.44's
//! `SINFO_DATA`). slurmrestd serves no sinfo, so its v0.0.44 document has no schema for
//! this answer; the fields and their nesting follow the parser's `SINFO_DATA` array
//! (`src/plugins/data_parser/v0.0.44/parsers.c`), `partition` is a
//! `v0.0.44_partition_info` and `node.state` holds the node state flags of `v0.0.44_node`.
//!
//! One entry per partition and group of its nodes whose reported attributes agree (state
//! flags, CPUs, memory, features, GRES and GRES in use, reason, weight, specialized
//! resources), as sinfo's `-e` groups them; the counts (`nodes`, `cpus`, allocated
//! memory) sum over the group and `nodes.nodes` lists it. `-N` (`node_oriented`) gives
//! one entry per node and partition. A partition without nodes has one entry with no
//! nodes and no state flags.
//!
//! `sockets`, `cores` (per socket) and `threads` (per core) are the layout the nodes'
//! workers reported (the CPUs, 1 and 1 without one: what Slurm shows for a node
//! configured with CPUs alone), and nodes whose layouts differ are grouped apart. Berth
//! knows no local disk or CPU load: `disk` and `cpus.load` are 0. `reason.user` and `reason.time` (Unix seconds) say who set
//! a node's reason and when (empty and 0 for a reason older than Berth's record of them,
//! or none); nodes whose reasons differ in either are grouped apart, as `sinfo -R` lists
//! them. Berth runs no slurmd (`port` 0).

use super::cluster::{node_gres, node_state, partition_info};
use super::types::NoVal;
use berth_core::state::NodeState;
use berth_core::wire::{Node, Partition};
use serde_json::{json, Value};

/// Whether `node` belongs to `partition` (a partition with no member list holds every
/// node).
fn in_partition(node: &Node, partition: &Partition) -> bool {
    partition.nodes.is_empty()
        || partition.nodes.iter().any(|n| n == &node.name)
        || node.partitions.iter().any(|p| p == &partition.name)
}

/// Whether the node takes work (not drained, down or powered down).
fn takes_work(node: &Node) -> bool {
    matches!(
        node.state,
        NodeState::Idle | NodeState::Mixed | NodeState::Allocated
    )
}

/// A node's CPUs as sinfo's `%C`: (allocated, idle, other, total). Other counts the
/// CPUs kept for the system and, on a node that takes no work, every CPU not allocated.
fn cpus_aiot(node: &Node) -> (u64, u64, u64, u64) {
    let total = node.cpus;
    let allocated = node.cpus_allocated.min(total);
    let other = if takes_work(node) {
        total.saturating_sub(node.cpus_effective.max(allocated))
    } else {
        total - allocated
    };
    (
        u64::from(allocated),
        u64::from(total - allocated - other),
        u64::from(other),
        u64::from(total),
    )
}

/// A node's share of sinfo's `%F`: (allocated, idle, other) as 0/1 each.
fn nodes_aio(node: &Node) -> (u64, u64, u64) {
    let busy = node.cpus_allocated > 0 || node.gpus_allocated > 0;
    match node.state {
        NodeState::Idle if !busy => (0, 1, 0),
        NodeState::Idle | NodeState::Mixed | NodeState::Allocated => (1, 0, 0),
        _ => (0, 0, 1),
    }
}

/// What groups a node with others: its attributes that sinfo reports per group.
fn group_key(node: &Node) -> Value {
    let (gres, gres_used) = node_gres(node);
    json!([
        node_state(node),
        node.cpus,
        [node.sockets, node.cores_per_socket, node.threads_per_core],
        node.memory_mib,
        node.features,
        gres,
        gres_used,
        node.reason,
        node.reason_user,
        node.reason_time.map(|t| t.timestamp()),
        node.weight,
        node.core_spec_count,
        node.mem_spec_limit_mib,
    ])
}

/// One `sinfo_data` entry for `group` (nodes of `partition` that agree; may be empty).
fn entry(partition: &Partition, all_nodes: &[String], group: &[&Node]) -> Value {
    let sum = |f: &dyn Fn(&Node) -> u64| group.iter().map(|n| f(n)).sum::<u64>();
    let min_max = |f: &dyn Fn(&Node) -> u64| {
        (
            group.iter().map(|n| f(n)).min().unwrap_or(0),
            group.iter().map(|n| f(n)).max().unwrap_or(0),
        )
    };
    let cpus = |i: usize| {
        sum(&|n| {
            let c = cpus_aiot(n);
            [c.0, c.1, c.2, c.3][i]
        })
    };
    let aio = |i: usize| {
        sum(&|n| {
            let c = nodes_aio(n);
            [c.0, c.1, c.2][i]
        })
    };
    let (cpu_min, cpu_max) = min_max(&|n| u64::from(n.cpus));
    let (sockets_min, sockets_max) = min_max(&|n| u64::from(n.sockets));
    let (cores_min, cores_max) = min_max(&|n| u64::from(n.cores_per_socket));
    let (threads_min, threads_max) = min_max(&|n| u64::from(n.threads_per_core));
    let (mem_min, mem_max) = min_max(&|n| n.memory_mib);
    let (weight_min, weight_max) = min_max(&|n| u64::from(n.weight));
    let free = |n: &Node| {
        n.memory_effective_mib
            .saturating_sub(n.memory_allocated_mib)
    };
    let (free_min, free_max) = min_max(&free);
    let free_no_val = |v: u64| {
        if group.is_empty() {
            NoVal::unset()
        } else {
            NoVal::num(i64::try_from(v).unwrap_or(i64::MAX))
        }
    };
    let names: Vec<&str> = group.iter().map(|n| n.name.as_str()).collect();
    let first = group.first();
    let (gres, gres_used) = first.map(|n| node_gres(n)).unwrap_or_default();
    let state: Vec<String> = first.map(|n| node_state(n)).unwrap_or_default();
    json!({
        "port": 0,
        "node": { "state": state },
        "nodes": {
            "allocated": aio(0),
            "idle": aio(1),
            "other": aio(2),
            "total": group.len(),
            "hostnames": names,
            "addresses": names,
            "nodes": names,
        },
        "cpus": {
            "allocated": cpus(0),
            "idle": cpus(1),
            "other": cpus(2),
            "total": cpus(3),
            "minimum": cpu_min,
            "maximum": cpu_max,
            "load": { "minimum": 0, "maximum": 0 },
            "per_node": { "max": NoVal::<i64>::infinite() },
        },
        "sockets": { "minimum": sockets_min, "maximum": sockets_max },
        "cores": { "minimum": cores_min, "maximum": cores_max },
        "threads": { "minimum": threads_min, "maximum": threads_max },
        "disk": { "minimum": 0, "maximum": 0 },
        "memory": {
            "minimum": mem_min,
            "maximum": mem_max,
            "free": { "minimum": free_no_val(free_min), "maximum": free_no_val(free_max) },
            "allocated": sum(&|n| n.memory_allocated_mib),
        },
        "weight": { "minimum": weight_min, "maximum": weight_max },
        "features": {
            "total": first.map(|n| n.features.join(",")).unwrap_or_default(),
            "active": first.map(|n| n.features.join(",")).unwrap_or_default(),
        },
        "gres": { "total": gres, "used": gres_used },
        "cluster": "",
        "comment": "",
        "extra": "",
        "reason": {
            "description": first.and_then(|n| n.reason.clone()).unwrap_or_default(),
            "time": first.and_then(|n| n.reason_time).map_or(0, |t| t.timestamp()),
            "user": first.and_then(|n| n.reason_user.clone()).unwrap_or_default(),
        },
        "reservation": "",
        "resource_spec": {
            "cpus": "",
            "memory": first.map_or(0, |n| n.mem_spec_limit_mib),
        },
        "partition": partition_info(partition, all_nodes),
    })
}

/// The `sinfo` entries of `partitions` over `nodes` (those sinfo's filters kept; a
/// partition none of whose nodes are in `nodes` has an entry only when no node filter
/// applied, `filtered` false). `all_nodes` names every node (a partition with no member
/// list holds them all).
pub(super) fn entries(
    partitions: &[Partition],
    nodes: &[Node],
    all_nodes: &[String],
    node_oriented: bool,
    filtered: bool,
) -> Vec<Value> {
    let mut out = Vec::new();
    for partition in partitions {
        let members: Vec<&Node> = nodes
            .iter()
            .filter(|n| in_partition(n, partition))
            .collect();
        if members.is_empty() {
            if !filtered && !node_oriented {
                out.push(entry(partition, all_nodes, &[]));
            }
            continue;
        }
        let mut groups: Vec<(Value, Vec<&Node>)> = Vec::new();
        for node in members {
            let key = if node_oriented {
                json!(node.name)
            } else {
                group_key(node)
            };
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, group)) => group.push(node),
                None => groups.push((key, vec![node])),
            }
        }
        out.extend(
            groups
                .iter()
                .map(|(_, group)| entry(partition, all_nodes, group)),
        );
    }
    out
}
