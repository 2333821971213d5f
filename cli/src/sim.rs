//! `berth sim`: replays a workload trace through the production planner
//! ([`berth_scheduler::planner::plan`]) with the discrete-event simulator
//! ([`berth_scheduler::sim`]) and prints job completion time, wait, makespan, GPU
//! utilisation, planner time per pass and, when a job had to wait for GPUs, the share of
//! GPUs allocated at that moment (Alibaba's fragmentation metric).
//!
//! Trace formats ([`berth_scheduler::trace`]): `tiresias` (SymbioticLab/Tiresias CSV),
//! `alibaba` (an `openb_pod_list_*.csv`; the nodes come from `--cluster FILE`, else from
//! `openb_node_list_gpu_node.csv` beside the trace), `csv` (Berth's simple format:
//! `id,submit,nodes,gpus_per_node,duration[,time_limit,user,account]`).

use anyhow::{bail, Context};
use berth_scheduler::planner::{NodeFit, PlannerConfig, QueueOrder};
use berth_scheduler::sim::{simulate, uniform_cluster, SimConfig, SimNode, SimSummary};
use berth_scheduler::trace::{self, AlibabaPods};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

/// A trace's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// `job_id,num_gpu,submit_time,iterations,model_name,duration,interval`.
    Tiresias,
    /// Alibaba cluster-trace-gpu-v2023 `openb_pod_list_*.csv`.
    Alibaba,
    /// `id,submit,nodes,gpus_per_node,duration[,time_limit,user,account]` with a header.
    Csv,
}

/// The scheduling policy replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Submit order, no backfill: the first job that cannot start blocks the queue.
    Fifo,
    /// Submit order with reservations and backfill (`sched/backfill`).
    FifoBackfill,
    /// Berth's default: multifactor priority with backfill.
    Default,
}

impl Policy {
    /// The planner configuration of the policy.
    pub fn planner(self) -> PlannerConfig {
        let (order, backfill) = match self {
            Policy::Fifo => (QueueOrder::Submit, false),
            Policy::FifoBackfill => (QueueOrder::Submit, true),
            Policy::Default => (QueueOrder::Multifactor, true),
        };
        PlannerConfig {
            order,
            backfill,
            ..Default::default()
        }
    }
}

/// How a start chooses among the nodes that can hold it (`--fit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fit {
    /// Fewest usable GPUs first.
    Best,
    /// Fewest GPUs stranded, then fewest usable GPUs.
    Fragmentation,
}

/// `berth sim` options.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// The trace file.
    #[arg(long)]
    pub trace: PathBuf,
    /// The trace's format.
    #[arg(long, value_enum)]
    pub format: TraceFormat,
    /// The cluster: `NODESxGPUS` (`15x4`: 15 nodes of 4 GPUs), or an Alibaba node list
    /// CSV. Default: `15x4`; for `--format alibaba`, `openb_node_list_gpu_node.csv` in the
    /// trace's directory.
    #[arg(long)]
    pub cluster: Option<String>,
    /// The scheduling policy.
    #[arg(long, value_enum, default_value = "default")]
    pub policy: Policy,
    /// How a start chooses among the nodes that can hold it: `best` (fewest usable GPUs,
    /// Berth's default) or `fragmentation` (fewest GPUs stranded without CPUs or memory
    /// to feed them, then best fit).
    #[arg(long, value_enum, default_value = "best")]
    pub fit: Fit,
    /// Place GPUs only: the trace's CPUs and memory are ignored (as Berth did before it
    /// placed them).
    #[arg(long)]
    pub gpus_only: bool,
    /// Print the figures as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// What `berth sim --json` prints.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SimResult {
    /// The trace file.
    pub trace: String,
    /// Its format.
    pub format: TraceFormat,
    /// The policy.
    pub policy: Policy,
    /// The node choice.
    pub fit: Fit,
    /// CPUs and memory ignored.
    pub gpus_only: bool,
    /// Nodes in the cluster.
    pub nodes: usize,
    /// GPUs in the cluster.
    pub gpus: u32,
    /// Jobs read from the trace.
    pub trace_jobs: usize,
    /// For Alibaba traces: how pods became jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alibaba: Option<AlibabaPods>,
    /// The figures (times in seconds, planner passes in microseconds, shares 0–1).
    pub summary: SimSummary,
}

/// Parses `NODESxGPUS`.
///
/// # Errors
/// When it is not two positive numbers joined by `x`.
pub fn parse_cluster_shape(spec: &str) -> anyhow::Result<(u32, u32)> {
    let parsed = spec
        .split_once(['x', 'X', '×'])
        .and_then(|(n, g)| Some((n.trim().parse().ok()?, g.trim().parse().ok()?)));
    match parsed {
        Some((n, g)) if n > 0 && g > 0 => Ok((n, g)),
        _ => bail!("--cluster {spec:?}: expected NODESxGPUS (e.g. 15x4) or a node list file"),
    }
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Runs the replay and returns its figures.
///
/// # Errors
/// An unreadable or malformed trace or node list, or a bad `--cluster`.
pub fn simulate_trace(args: &SimArgs) -> anyhow::Result<SimResult> {
    let cluster: Vec<SimNode> = match (&args.cluster, args.format) {
        (Some(spec), _) if parse_cluster_shape(spec).is_ok() => {
            let (n, g) = parse_cluster_shape(spec)?;
            uniform_cluster(n, g)
        }
        (Some(spec), _) if Path::new(spec).is_file() => {
            trace::parse_alibaba_nodes(&read(Path::new(spec))?)
                .map_err(|e| anyhow::anyhow!("{spec}: {e}"))?
        }
        (Some(spec), _) => parse_cluster_shape(spec).map(|_| Vec::new())?,
        (None, TraceFormat::Alibaba) => {
            let path = args
                .trace
                .parent()
                .unwrap_or(Path::new("."))
                .join("openb_node_list_gpu_node.csv");
            trace::parse_alibaba_nodes(&read(&path)?)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        (None, _) => uniform_cluster(15, 4),
    };
    if cluster.is_empty() {
        bail!("--cluster: the cluster has no GPU nodes");
    }
    let text = read(&args.trace)?;
    let per_node = cluster.iter().map(|n| n.gpus).max().unwrap_or(1);
    let bad = |e: String| anyhow::anyhow!("{}: {e}", args.trace.display());
    let (jobs, alibaba) = match args.format {
        TraceFormat::Tiresias => (trace::parse_tiresias(&text, per_node).map_err(bad)?, None),
        TraceFormat::Csv => (trace::parse_csv(&text).map_err(bad)?, None),
        TraceFormat::Alibaba => {
            let (jobs, stats) = trace::parse_alibaba_pods(&text).map_err(bad)?;
            (jobs, Some(stats))
        }
    };
    let (mut cluster, mut jobs) = (cluster, jobs);
    if args.gpus_only {
        for n in &mut cluster {
            n.cpus = 0;
            n.memory_mib = 0;
        }
        for j in &mut jobs {
            j.mem_per_node_mib = None;
        }
    }
    let config = SimConfig {
        planner: PlannerConfig {
            fit: match args.fit {
                Fit::Best => NodeFit::Best,
                Fit::Fragmentation => NodeFit::Fragmentation,
            },
            ..args.policy.planner()
        },
        ..Default::default()
    };
    let report = simulate(&cluster, &jobs, &config);
    Ok(SimResult {
        trace: args.trace.display().to_string(),
        format: args.format,
        policy: args.policy,
        fit: args.fit,
        gpus_only: args.gpus_only,
        nodes: cluster.len(),
        gpus: report.cluster_gpus,
        trace_jobs: jobs.len(),
        alibaba,
        summary: report.summary(),
    })
}

/// The figures as text, one per line.
pub fn render(r: &SimResult) -> String {
    let s = &r.summary;
    let mut out = format!(
        "trace         {} ({:?}, {} jobs)\n",
        r.trace, r.format, r.trace_jobs
    );
    if let Some(a) = &r.alibaba {
        out.push_str(&format!(
            "pods          {} read, {} without GPU left out, {} fractional given one whole GPU, {} multi-GPU{}\n",
            a.pods,
            a.skipped_no_gpu,
            a.fractional,
            a.multi_gpu,
            if a.timed { "" } else { "; no times: all arrive at 0 and never end" }
        ));
    }
    out.push_str(&format!(
        "cluster       {} nodes, {} GPUs\npolicy        {:?}, {:?} fit{}\n",
        r.nodes,
        r.gpus,
        r.policy,
        r.fit,
        if r.gpus_only { ", GPUs only" } else { "" }
    ));
    out.push_str(&format!(
        "jobs          {} completed, {} started, {} never started\n",
        s.jobs, s.started, s.never_started
    ));
    if s.jobs == 0 {
        out.push_str("JCT, wait, makespan, GPU util: n/a (no job ended)\n");
    } else {
        out.push_str(&format!(
            "JCT           avg {:.0} s, p95 {:.0} s\nwait          avg {:.0} s, p95 {:.0} s\nmakespan      {:.0} s\nGPU util      {:.1}%\n",
            s.avg_jct, s.p95_jct, s.avg_wait, s.p95_wait, s.makespan, s.gpu_utilization * 100.0
        ));
    }
    out.push_str(&format!(
        "planner       {} passes: mean {:.0} µs, p99 {:.0} µs, max {:.0} µs\n",
        s.passes, s.pass_mean_us, s.pass_p99_us, s.pass_max_us
    ));
    match (s.first_blocked_at, s.alloc_share_at_first_block) {
        (Some(t), Some(share)) => out.push_str(&format!(
            "first block   at {t:.0} s: {:.1}% of GPUs allocated\n",
            share * 100.0
        )),
        _ => out.push_str("first block   none: no job ever waited for GPUs\n"),
    }
    out
}

/// `berth sim`: runs the replay and prints its figures (`--json`: a [`SimResult`]).
///
/// # Errors
/// See [`simulate_trace`].
pub fn run(args: &SimArgs) -> anyhow::Result<i32> {
    let result = simulate_trace(args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print!("{}", render(&result));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_shapes() {
        assert_eq!(parse_cluster_shape("15x4").unwrap(), (15, 4));
        assert_eq!(parse_cluster_shape("3×4").unwrap(), (3, 4));
        assert!(parse_cluster_shape("0x4").is_err());
        assert!(parse_cluster_shape("15").is_err());
    }
}
