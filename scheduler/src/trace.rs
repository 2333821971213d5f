//! Workload traces for the simulator.
//!
//! * Tiresias (`job_id,num_gpu,submit_time,iterations,model_name,duration,interval`,
//!   SymbioticLab/Tiresias, NSDI'19): a job asking more GPUs than a node holds becomes a
//!   gang of whole nodes (`num_gpu / gpus_per_node` nodes); its time limit is its
//!   duration (the trace knows it; a real user would over-ask).
//! * Alibaba `openb` pod and node lists (cluster-trace-gpu-v2023, ATC'23): see
//!   [`parse_alibaba_pods`] for how fractional and multi-GPU pods map onto whole GPUs.
//! * Berth's own simple CSV: see [`parse_csv`].

use crate::sim::{SimJob, SimNode};

/// Parses a Tiresias CSV for a cluster of nodes with `gpus_per_node` GPUs.
///
/// # Errors
/// A message naming the line that is not a Tiresias row.
pub fn parse_tiresias(text: &str, gpus_per_node: u32) -> Result<Vec<SimJob>, String> {
    let mut jobs = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        let bad = || format!("line {}: not a Tiresias row: {line:?}", n + 1);
        if f.len() < 6 {
            return Err(bad());
        }
        let id: i64 = f[0].trim().parse().map_err(|_| bad())?;
        let gpus: u32 = f[1].trim().parse().map_err(|_| bad())?;
        let submit: i64 = f[2].trim().parse().map_err(|_| bad())?;
        let duration: i64 = f[5].trim().parse().map_err(|_| bad())?;
        let (nodes, per_node) = if gpus > gpus_per_node && gpus_per_node > 0 {
            (gpus.div_ceil(gpus_per_node), gpus_per_node)
        } else {
            (1, gpus)
        };
        jobs.push(SimJob {
            id,
            submit,
            nodes,
            gpus_per_node: per_node,
            cpus: nodes,
            duration,
            time_limit: Some(duration.max(1)),
            user: format!("user{}", id % 4),
            account: "root".into(),
            ..Default::default()
        });
    }
    Ok(jobs)
}

/// A CSV header: the index of each named column.
struct Columns {
    names: Vec<String>,
}

impl Columns {
    fn new(header: &str) -> Self {
        Columns {
            names: header.split(',').map(|c| c.trim().to_lowercase()).collect(),
        }
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|c| c == name)
    }

    fn need(&self, name: &str, what: &str) -> Result<usize, String> {
        self.find(name)
            .ok_or_else(|| format!("line 1: {what} has no column {name:?}"))
    }
}

fn field<'a>(f: &[&'a str], i: Option<usize>) -> Option<&'a str> {
    i.and_then(|i| f.get(i))
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
}

fn number<T: std::str::FromStr>(
    f: &[&str],
    i: Option<usize>,
    name: &str,
    line: usize,
) -> Result<Option<T>, String> {
    field(f, i)
        .map(|v| {
            v.parse()
                .map_err(|_| format!("line {line}: {name} {v:?} is not a number"))
        })
        .transpose()
}

fn required<T: std::str::FromStr>(
    f: &[&str],
    i: Option<usize>,
    name: &str,
    line: usize,
) -> Result<T, String> {
    number(f, i, name, line)?.ok_or_else(|| format!("line {line}: {name} is empty"))
}

/// Data lines of a CSV: (1-based line number, fields), skipping blank and `#` lines.
fn rows(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().skip(1).filter_map(|(n, line)| {
        let t = line.trim();
        (!t.is_empty() && !t.starts_with('#')).then(|| (n + 1, line.split(',').collect()))
    })
}

/// Parses Berth's simple trace CSV. A header line names the columns, in any order:
///
/// * `id` (integer, unique), `submit` (seconds), `nodes`, `gpus_per_node`, `duration`
///   (seconds it runs): required;
/// * `time_limit` (seconds; empty or absent: the duration), `user` (default `user`),
///   `account` (default `root`): optional.
///
/// Blank lines and lines starting with `#` are skipped. Example:
///
/// ```text
/// id,submit,nodes,gpus_per_node,duration,time_limit
/// 1,0,1,2,600,900
/// 2,30,2,4,3600,
/// ```
///
/// # Errors
/// A message naming the line and the column that is missing or not a number.
pub fn parse_csv(text: &str) -> Result<Vec<SimJob>, String> {
    let header = text.lines().next().ok_or("the trace is empty")?;
    let c = Columns::new(header);
    let what = "a Berth trace CSV";
    let (id, submit, nodes, gpn, dur) = (
        c.need("id", what)?,
        c.need("submit", what)?,
        c.need("nodes", what)?,
        c.need("gpus_per_node", what)?,
        c.need("duration", what)?,
    );
    let (limit, user, account) = (c.find("time_limit"), c.find("user"), c.find("account"));
    let mut jobs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (n, f) in rows(text) {
        let job_id: i64 = required(&f, Some(id), "id", n)?;
        if !seen.insert(job_id) {
            return Err(format!("line {n}: id {job_id} appears twice"));
        }
        let nodes: u32 = required(&f, Some(nodes), "nodes", n)?;
        if nodes == 0 {
            return Err(format!("line {n}: nodes must be at least 1"));
        }
        let duration: i64 = required(&f, Some(dur), "duration", n)?;
        jobs.push(SimJob {
            id: job_id,
            submit: required(&f, Some(submit), "submit", n)?,
            nodes,
            gpus_per_node: required(&f, Some(gpn), "gpus_per_node", n)?,
            cpus: nodes,
            duration,
            time_limit: Some(
                number(&f, limit, "time_limit", n)?
                    .unwrap_or(duration)
                    .max(1),
            ),
            user: field(&f, user).unwrap_or("user").to_string(),
            account: field(&f, account).unwrap_or("root").to_string(),
            ..Default::default()
        });
    }
    Ok(jobs)
}

/// What [`parse_alibaba_pods`] did with the pods it read.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct AlibabaPods {
    /// Pods read.
    pub pods: usize,
    /// Pods asking no GPU (`num_gpu` 0), left out: Berth schedules GPUs.
    pub skipped_no_gpu: usize,
    /// Pods asking a fraction of one GPU (`gpu_milli` < 1000), given one whole GPU.
    pub fractional: usize,
    /// Pods asking more than one GPU (one node, `num_gpu` GPUs).
    pub multi_gpu: usize,
    /// Whether the trace has times (the `default` list does; `multigpu50` does not, so
    /// every pod arrives at 0, in list order, and never ends).
    pub timed: bool,
}

/// Parses an Alibaba `openb_pod_list_*.csv` (alibaba/clusterdata cluster-trace-gpu-v2023,
/// "Beware of Fragmentation", ATC'23): `name,cpu_milli,memory_mib,num_gpu,gpu_milli`
/// then optionally `gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time`.
///
/// How a pod becomes a Berth job (Berth allocates whole GPUs):
/// * `num_gpu` 0: left out (counted in [`AlibabaPods::skipped_no_gpu`]).
/// * `num_gpu` 1 and `gpu_milli` < 1000 (a share of one GPU): one whole GPU. Berth does
///   not share a GPU between jobs, so a fractional pod holds the GPU it lands on.
/// * `num_gpu` n ≥ 1 with `gpu_milli` 1000: n GPUs on one node (a pod is one node).
/// * `gpu_spec` (`V100M16|V100M32`): a constraint on the node's GPU model.
/// * `cpu_milli` becomes whole CPUs (rounded up) and `memory_mib` the job's memory, both
///   placed on its node beside its GPUs (Berth places CPUs and memory like GPUs).
/// * Times: submitted at `creation_time`; runs `deletion_time − scheduled_time` (a pod
///   the trace never scheduled: `deletion_time − creation_time`); its time limit is
///   that run time. Without time columns every pod arrives at 0 in list order and never
///   ends ([`RUNS_FOREVER`](crate::sim::RUNS_FOREVER)), the paper's arrival-only replay.
/// * Job ids are 1-based row numbers; every pod is user `openb`, account `root`.
///
/// # Errors
/// A message naming the line and the column that is missing or not a number.
pub fn parse_alibaba_pods(text: &str) -> Result<(Vec<SimJob>, AlibabaPods), String> {
    let header = text.lines().next().ok_or("the trace is empty")?;
    let c = Columns::new(header);
    let what = "an Alibaba pod list";
    let (num_gpu, gpu_milli) = (c.need("num_gpu", what)?, c.need("gpu_milli", what)?);
    let (cpu_milli, memory) = (c.find("cpu_milli"), c.find("memory_mib"));
    let (spec, created, deleted, scheduled) = (
        c.find("gpu_spec"),
        c.find("creation_time"),
        c.find("deletion_time"),
        c.find("scheduled_time"),
    );
    let timed = created.is_some() && deleted.is_some();
    let mut stats = AlibabaPods {
        timed,
        ..Default::default()
    };
    let mut jobs = Vec::new();
    for (row, (n, f)) in rows(text).enumerate() {
        stats.pods += 1;
        let gpus: u32 = required(&f, Some(num_gpu), "num_gpu", n)?;
        let milli: u32 = required(&f, Some(gpu_milli), "gpu_milli", n)?;
        if gpus == 0 {
            stats.skipped_no_gpu += 1;
            continue;
        }
        if milli < 1000 {
            stats.fractional += 1;
        }
        if gpus > 1 {
            stats.multi_gpu += 1;
        }
        let (submit, duration, time_limit) = if timed {
            let submit: i64 = required(&f, created, "creation_time", n)?;
            let end: i64 = required(&f, deleted, "deletion_time", n)?;
            let from: i64 = number(&f, scheduled, "scheduled_time", n)?.unwrap_or(submit);
            let duration = (end - from).max(1);
            (submit, duration, Some(duration))
        } else {
            (0, crate::sim::RUNS_FOREVER, None)
        };
        let cpus =
            number::<u32>(&f, cpu_milli, "cpu_milli", n)?.map_or(1, |m| m.div_ceil(1000).max(1));
        jobs.push(SimJob {
            id: row as i64 + 1,
            submit,
            nodes: 1,
            gpus_per_node: gpus,
            cpus,
            cpus_per_node: cpus,
            mem_per_node_mib: number(&f, memory, "memory_mib", n)?,
            duration,
            time_limit,
            user: "openb".into(),
            account: "root".into(),
            constraint: field(&f, spec).map(str::to_string),
            ..Default::default()
        });
    }
    Ok((jobs, stats))
}

/// Parses Alibaba's `openb_node_list_gpu_node.csv` (`sn,cpu_milli,memory_mib,gpu,model`):
/// one node per row with `gpu` GPUs of `model`; rows with no GPU are left out.
///
/// # Errors
/// A message naming the line and the column that is missing or not a number.
pub fn parse_alibaba_nodes(text: &str) -> Result<Vec<SimNode>, String> {
    let header = text.lines().next().ok_or("the node list is empty")?;
    let c = Columns::new(header);
    let what = "an Alibaba node list";
    let (sn, gpu, model) = (
        c.need("sn", what)?,
        c.need("gpu", what)?,
        c.need("model", what)?,
    );
    let (cpu_milli, memory) = (c.find("cpu_milli"), c.find("memory_mib"));
    let mut nodes = Vec::new();
    for (n, f) in rows(text) {
        let gpus: u32 = required(&f, Some(gpu), "gpu", n)?;
        if gpus == 0 {
            continue;
        }
        nodes.push(SimNode {
            name: field(&f, Some(sn))
                .ok_or_else(|| format!("line {n}: sn is empty"))?
                .to_string(),
            gpus,
            model: field(&f, Some(model)).unwrap_or("GPU").to_string(),
            cpus: number::<u32>(&f, cpu_milli, "cpu_milli", n)?.map_or(0, |m| m / 1000),
            memory_mib: number(&f, memory, "memory_mib", n)?.unwrap_or(0),
        });
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::RUNS_FOREVER;

    #[test]
    fn tiresias_rows_become_gangs_of_whole_nodes() {
        let text = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n\
                    1,2,0,100,resnet,600,10\n\
                    2,8,10,100,vgg,1200,5\n";
        let jobs = parse_tiresias(text, 4).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0].nodes, jobs[0].gpus_per_node), (1, 2));
        assert_eq!((jobs[1].nodes, jobs[1].gpus_per_node), (2, 4));
        assert_eq!((jobs[1].submit, jobs[1].duration), (10, 1200));
        assert!(parse_tiresias("h\n1,x,0,1,m,5,1\n", 4)
            .unwrap_err()
            .contains("line 2"));
    }

    #[test]
    fn berth_csv_reads_columns_by_name_with_defaults() {
        let text = "submit,id,nodes,gpus_per_node,duration,time_limit,user\n\
                    # a comment\n\
                    0,1,1,2,600,900,alice\n\
                    \n\
                    30,2,2,4,3600,,\n";
        let jobs = parse_csv(text).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].id, 1);
        assert_eq!(jobs[0].time_limit, Some(900));
        assert_eq!(jobs[0].user, "alice");
        assert_eq!((jobs[1].nodes, jobs[1].gpus_per_node), (2, 4));
        assert_eq!(jobs[1].time_limit, Some(3600), "empty limit: the duration");
        assert_eq!(
            (jobs[1].user.as_str(), jobs[1].account.as_str()),
            ("user", "root")
        );

        let missing = parse_csv("id,submit,nodes,duration\n1,0,1,5\n").unwrap_err();
        assert!(missing.contains("gpus_per_node"), "{missing}");
        let bad = parse_csv("id,submit,nodes,gpus_per_node,duration\n1,0,1,two,5\n").unwrap_err();
        assert!(
            bad.contains("line 2") && bad.contains("gpus_per_node"),
            "{bad}"
        );
        let twice = parse_csv("id,submit,nodes,gpus_per_node,duration\n1,0,1,1,5\n1,3,1,1,5\n")
            .unwrap_err();
        assert!(twice.contains("line 3"), "{twice}");
    }

    #[test]
    fn alibaba_pods_map_fractions_to_whole_gpus_and_skip_cpu_only_pods() {
        let text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
                    openb-pod-0000,12000,16384,1,1000,,LS,Running,0,500,0\n\
                    openb-pod-0001,6000,12288,1,460,,LS,Running,100,900,150\n\
                    openb-pod-0002,4000,8192,0,0,,BE,Running,120,300,120\n\
                    openb-pod-0003,32000,65536,8,1000,V100M16|V100M32,LS,Pending,200,1000,\n";
        let (jobs, stats) = parse_alibaba_pods(text).unwrap();
        assert_eq!(
            stats,
            AlibabaPods {
                pods: 4,
                skipped_no_gpu: 1,
                fractional: 1,
                multi_gpu: 1,
                timed: true
            }
        );
        assert_eq!(jobs.iter().map(|j| j.id).collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!(
            (jobs[1].gpus_per_node, jobs[1].nodes),
            (1, 1),
            "460 milli: one GPU"
        );
        assert_eq!(
            (jobs[1].submit, jobs[1].duration),
            (100, 750),
            "runs from scheduled"
        );
        assert_eq!(jobs[2].gpus_per_node, 8);
        assert_eq!(jobs[2].duration, 800, "never scheduled: from creation");
        assert_eq!(jobs[2].constraint.as_deref(), Some("V100M16|V100M32"));
        // CPUs (rounded up to whole ones) and memory come along.
        assert_eq!(
            (jobs[1].cpus_per_node, jobs[1].mem_per_node_mib),
            (6, Some(12288))
        );
        assert_eq!(
            (jobs[2].cpus_per_node, jobs[2].mem_per_node_mib),
            (32, Some(65536))
        );

        let untimed = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n\
                       openb-pod-0000,12000,16384,2,1000\n";
        let (jobs, stats) = parse_alibaba_pods(untimed).unwrap();
        assert!(!stats.timed);
        assert_eq!((jobs[0].submit, jobs[0].duration), (0, RUNS_FOREVER));
        assert_eq!(jobs[0].time_limit, None);

        let bad = parse_alibaba_pods("name,num_gpu,gpu_milli\np,1,half\n").unwrap_err();
        assert!(bad.contains("line 2") && bad.contains("gpu_milli"), "{bad}");
        assert!(parse_alibaba_pods("name,gpu\n")
            .unwrap_err()
            .contains("num_gpu"));
    }

    #[test]
    fn alibaba_nodes_carry_their_gpu_model_cpus_and_memory() {
        let text = "sn,cpu_milli,memory_mib,gpu,model\n\
                    openb-node-0000,64000,262144,2,P100\n\
                    openb-node-0001,96000,786432,8,V100M32\n\
                    openb-node-0002,96000,786432,0,\n";
        let nodes = parse_alibaba_nodes(text).unwrap();
        assert_eq!(
            nodes,
            vec![
                SimNode {
                    name: "openb-node-0000".into(),
                    gpus: 2,
                    model: "P100".into(),
                    cpus: 64,
                    memory_mib: 262144,
                },
                SimNode {
                    name: "openb-node-0001".into(),
                    gpus: 8,
                    model: "V100M32".into(),
                    cpus: 96,
                    memory_mib: 786432,
                },
            ]
        );
        assert!(parse_alibaba_nodes("sn,gpu,model\nx,lots,A\n")
            .unwrap_err()
            .contains("line 2"));
    }
}
