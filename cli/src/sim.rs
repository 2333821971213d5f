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
//!
//! With `--pool-max N` the replay adds an elastic node pool ([`berth_scheduler::sim_pools`])
//! to the fixed nodes of `--cluster` (none when not given) and compares Berth's scaling
//! with Slurm's power saving (`--scaling both`): GPU-hours paid and used, idle cost,
//! launches, wait and makespan. Jobs are then placed by GPUs only.

use anyhow::{bail, Context};
use berth_scheduler::planner::{NodeFit, PlannerConfig, QueueOrder};
use berth_scheduler::sim::{simulate, uniform_cluster, SimConfig, SimJob, SimNode, SimSummary};
use berth_scheduler::sim_pools::{simulate_pool, PoolConfig, PoolSummary, ScalePolicy};
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
    /// Replay with an elastic node pool of up to this many nodes besides the fixed
    /// nodes (`--cluster`, none when not given) and compare scaling policies: GPU-hours
    /// paid vs used, idle cost, launches, wait.
    #[arg(long, value_name = "NODES")]
    pub pool_max: Option<u32>,
    /// GPUs per pool node (default: the fixed nodes' largest, else 8).
    #[arg(long, value_name = "GPUS", requires = "pool_max")]
    pub pool_gpus: Option<u32>,
    /// Seconds from a pool node's launch until it is in service (paid).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 120,
        requires = "pool_max"
    )]
    pub boot: i64,
    /// Seconds a pool node stays idle before it is powered down (Slurm's `SuspendTime`).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 300,
        requires = "pool_max"
    )]
    pub idle_timeout: i64,
    /// The scaling policy of the pool: `berth` (launch only for planned starts a new
    /// node makes sooner), `slurm` (power saving: resume nodes at once for a job that
    /// cannot start on nodes that are up), or `both` (a comparison).
    #[arg(long, value_enum, default_value = "both", requires = "pool_max")]
    pub scaling: Scaling,
    /// Price of one pool node for one hour, for the cost columns.
    #[arg(
        long,
        value_name = "PRICE",
        default_value_t = 1.0,
        requires = "pool_max"
    )]
    pub price_per_node_hour: f64,
    /// Berth's launch budget: pool nodes launched per minute at most.
    #[arg(
        long,
        value_name = "NODES",
        default_value_t = 20,
        requires = "pool_max"
    )]
    pub launch_rate: u32,
}

/// The pool scaling policies `berth sim --pool-max` replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scaling {
    /// Berth's.
    Berth,
    /// Slurm's power saving.
    Slurm,
    /// Both, side by side.
    Both,
}

impl Scaling {
    fn policies(self) -> Vec<ScalePolicy> {
        match self {
            Scaling::Berth => vec![ScalePolicy::Berth],
            Scaling::Slurm => vec![ScalePolicy::Slurm],
            Scaling::Both => vec![ScalePolicy::Berth, ScalePolicy::Slurm],
        }
    }
}

/// One policy's figures in [`PoolResult`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct PoolRun {
    /// The policy.
    pub scaling: ScalePolicy,
    /// Its figures (times in seconds, GPU-hours, money in the price's unit).
    pub summary: PoolSummary,
}

/// What `berth sim --pool-max N --json` prints.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PoolResult {
    /// The trace file.
    pub trace: String,
    /// Its format.
    pub format: TraceFormat,
    /// The queue policy.
    pub policy: Policy,
    /// Jobs read from the trace.
    pub trace_jobs: usize,
    /// Fixed nodes.
    pub fixed_nodes: usize,
    /// Their GPUs.
    pub fixed_gpus: u32,
    /// The most pool nodes.
    pub pool_max: u32,
    /// GPUs per pool node.
    pub pool_gpus: u32,
    /// Boot, seconds.
    pub boot: i64,
    /// Idle timeout, seconds.
    pub idle_timeout: i64,
    /// Price of a pool node-hour.
    pub price_per_node_hour: f64,
    /// One entry per policy.
    pub runs: Vec<PoolRun>,
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
    let (cluster, jobs, alibaba) = load(args)?;
    let report = simulate(&cluster, &jobs, &planner_config(args));
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

fn planner_config(args: &SimArgs) -> SimConfig {
    SimConfig {
        planner: PlannerConfig {
            fit: match args.fit {
                Fit::Best => NodeFit::Best,
                Fit::Fragmentation => NodeFit::Fragmentation,
            },
            ..args.policy.planner()
        },
        ..Default::default()
    }
}

/// The pool of `--pool-max` and its options, checked.
///
/// # Errors
/// A message naming the option that is out of range.
pub fn pool_config(args: &SimArgs, fixed: &[SimNode]) -> anyhow::Result<PoolConfig> {
    let Some(max_nodes) = args.pool_max else {
        bail!("--pool-max: not given");
    };
    if max_nodes == 0 {
        bail!("--pool-max 0: the pool needs at least one node");
    }
    let gpus = args
        .pool_gpus
        .unwrap_or_else(|| fixed.iter().map(|n| n.gpus).max().unwrap_or(8));
    if gpus == 0 {
        bail!("--pool-gpus 0: a pool node needs at least one GPU");
    }
    if args.boot < 0 {
        bail!("--boot {}: must be 0 or more seconds", args.boot);
    }
    if args.idle_timeout < 0 {
        bail!(
            "--idle-timeout {}: must be 0 or more seconds",
            args.idle_timeout
        );
    }
    if !args.price_per_node_hour.is_finite() || args.price_per_node_hour < 0.0 {
        bail!(
            "--price-per-node-hour {}: must be a price of 0 or more",
            args.price_per_node_hour
        );
    }
    if args.launch_rate == 0 {
        bail!("--launch-rate 0: must be at least 1 node per minute");
    }
    Ok(PoolConfig {
        max_nodes,
        gpus_per_node: gpus,
        model: String::new(),
        cpus: 0,
        memory_mib: 0,
        boot: args.boot,
        idle_timeout: args.idle_timeout,
        launch_rate_per_minute: args.launch_rate,
        price_per_node_hour: args.price_per_node_hour,
    })
}

/// Runs the replay with an elastic pool under each `--scaling` policy.
///
/// # Errors
/// As [`simulate_trace`], and a bad pool option.
pub fn simulate_pool_trace(args: &SimArgs) -> anyhow::Result<PoolResult> {
    let (fixed, mut jobs, _) = load(args)?;
    let pool = pool_config(args, &fixed)?;
    // The pool's nodes carry GPUs only, with the default model: jobs are placed by GPUs
    // (their CPUs, memory and model constraints are not modeled with a pool).
    for j in &mut jobs {
        j.mem_per_node_mib = None;
        j.constraint = None;
    }
    let mut fixed = fixed;
    for n in &mut fixed {
        n.cpus = 0;
        n.memory_mib = 0;
        n.model = String::new();
    }
    let config = planner_config(args);
    let runs = args
        .scaling
        .policies()
        .into_iter()
        .map(|p| PoolRun {
            scaling: p,
            summary: simulate_pool(&fixed, &pool, &jobs, &config, p).summary(),
        })
        .collect();
    Ok(PoolResult {
        trace: args.trace.display().to_string(),
        format: args.format,
        policy: args.policy,
        trace_jobs: jobs.len(),
        fixed_nodes: fixed.len(),
        fixed_gpus: fixed.iter().map(|n| n.gpus).sum(),
        pool_max: pool.max_nodes,
        pool_gpus: pool.gpus_per_node,
        boot: pool.boot,
        idle_timeout: pool.idle_timeout,
        price_per_node_hour: pool.price_per_node_hour,
        runs,
    })
}

/// The pool comparison as a table, one column per policy.
pub fn render_pool(r: &PoolResult) -> String {
    let mut out = format!(
        "trace         {} ({:?}, {} jobs)\nfixed         {} nodes, {} GPUs\npool          up to {} nodes × {} GPUs, boot {} s, idle timeout {} s, {} per node-hour\n\n",
        r.trace,
        r.format,
        r.trace_jobs,
        r.fixed_nodes,
        r.fixed_gpus,
        r.pool_max,
        r.pool_gpus,
        r.boot,
        r.idle_timeout,
        r.price_per_node_hour
    );
    out.push_str(&format!("{:<26}", ""));
    for run in &r.runs {
        out.push_str(&format!(
            "{:>12}",
            match run.scaling {
                ScalePolicy::Berth => "berth",
                ScalePolicy::Slurm => "slurm",
            }
        ));
    }
    out.push('\n');
    let rows: [(&str, Cell); 15] = [
        ("jobs completed", |s| s.jobs.to_string()),
        ("jobs never started", |s| s.never_started.to_string()),
        ("launches (nodes)", |s| {
            format!("{} ({})", s.launches, s.launched_nodes)
        }),
        ("peak pool nodes", |s| s.peak_pool_nodes.to_string()),
        ("pool GPU-h paid", |s| {
            format!("{:.1}", s.pool_gpu_hours_paid)
        }),
        ("pool GPU-h used", |s| {
            format!("{:.1}", s.pool_gpu_hours_used)
        }),
        ("pool GPU-h idle", |s| {
            format!("{:.1}", s.pool_idle_gpu_hours)
        }),
        ("pool cost", |s| format!("{:.2}", s.pool_cost)),
        ("pool idle cost", |s| format!("{:.2}", s.pool_idle_cost)),
        ("fixed GPU-h paid", |s| {
            format!("{:.1}", s.fixed_gpu_hours_paid)
        }),
        ("GPU-h used (all)", |s| format!("{:.1}", s.gpu_hours_used)),
        ("wait avg (s)", |s| format!("{:.0}", s.avg_wait)),
        ("wait p95 (s)", |s| format!("{:.0}", s.p95_wait)),
        ("JCT avg (s)", |s| format!("{:.0}", s.avg_jct)),
        ("makespan (s)", |s| format!("{:.0}", s.makespan)),
    ];
    for (name, f) in rows {
        out.push_str(&format!("{name:<26}"));
        for run in &r.runs {
            out.push_str(&format!("{:>12}", f(&run.summary)));
        }
        out.push('\n');
    }
    out
}

/// How a row of the pool table shows one policy's figure.
type Cell = fn(&PoolSummary) -> String;

type Loaded = (Vec<SimNode>, Vec<SimJob>, Option<AlibabaPods>);

/// Reads the cluster and the trace.
fn load(args: &SimArgs) -> anyhow::Result<Loaded> {
    let pooled = args.pool_max.is_some();
    let cluster: Vec<SimNode> = match (&args.cluster, args.format) {
        (None, _) if pooled => Vec::new(),
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
    if cluster.is_empty() && !pooled {
        bail!("--cluster: the cluster has no GPU nodes");
    }
    let text = read(&args.trace)?;
    let per_node = cluster
        .iter()
        .map(|n| n.gpus)
        .chain(pooled.then(|| {
            args.pool_gpus
                .unwrap_or(if cluster.is_empty() { 8 } else { 0 })
        }))
        .max()
        .unwrap_or(1);
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
    Ok((cluster, jobs, alibaba))
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
    if args.pool_max.is_some() {
        let result = simulate_pool_trace(args)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&result)?);
        } else {
            print!("{}", render_pool(&result));
        }
        return Ok(0);
    }
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

    fn args(trace: &Path, extra: &[&str]) -> Result<SimArgs, clap::Error> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            sim: SimArgs,
        }
        let mut argv = vec!["sim", "--format", "csv", "--trace", trace.to_str().unwrap()];
        argv.extend_from_slice(extra);
        <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.sim)
    }

    /// One 8-GPU fixed node busy 0–100 s; a job at 90 s: Berth waits 10 s for the node,
    /// Slurm resumes a pool node at once (the job waits the 60 s boot) and pays for it.
    #[test]
    fn pool_comparison_table() {
        let dir = std::env::temp_dir().join(format!("berth-sim-pool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.csv");
        std::fs::write(
            &trace,
            "id,submit,nodes,gpus_per_node,duration\n1,0,1,8,100\n2,90,1,8,100\n",
        )
        .unwrap();
        let a = args(
            &trace,
            &[
                "--cluster",
                "1x8",
                "--pool-max",
                "2",
                "--boot",
                "60",
                "--idle-timeout",
                "300",
                "--price-per-node-hour",
                "36",
            ],
        )
        .unwrap();
        let r = simulate_pool_trace(&a).unwrap();
        assert_eq!(r.runs.len(), 2);
        let (b, s) = (&r.runs[0].summary, &r.runs[1].summary);
        assert_eq!((b.launches, s.launches), (0, 1));
        assert_eq!((b.avg_wait, s.avg_wait), (5.0, 30.0));
        // Slurm: 460 s (boot, run, idle timeout) of a 36-per-hour node.
        assert!((s.pool_cost - 4.6).abs() < 1e-9, "{s:?}");
        let text = render_pool(&r);
        assert!(
            text.lines()
                .any(|l| l.starts_with("launches (nodes)") && l.ends_with("0 (0)       1 (1)")),
            "{text}"
        );
        assert!(
            text.contains("pool          up to 2 nodes × 8 GPUs, boot 60 s"),
            "{text}"
        );

        // Options out of range are named.
        for (extra, option) in [
            (vec!["--pool-max", "0"], "--pool-max"),
            (vec!["--pool-max", "2", "--boot=-5"], "--boot"),
            (
                vec!["--pool-max", "2", "--idle-timeout=-1"],
                "--idle-timeout",
            ),
            (vec!["--pool-max", "2", "--pool-gpus", "0"], "--pool-gpus"),
            (
                vec!["--pool-max", "2", "--price-per-node-hour=-1"],
                "--price-per-node-hour",
            ),
            (
                vec!["--pool-max", "2", "--launch-rate", "0"],
                "--launch-rate",
            ),
        ] {
            let a = args(&trace, &extra).unwrap();
            let e = simulate_pool_trace(&a).unwrap_err().to_string();
            assert!(e.contains(option), "{extra:?}: {e}");
        }
        // Pool options need --pool-max.
        let e = args(&trace, &["--boot", "60"]).err().unwrap().to_string();
        assert!(e.contains("--pool-max"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn cluster_shapes() {
        assert_eq!(parse_cluster_shape("15x4").unwrap(), (15, 4));
        assert_eq!(parse_cluster_shape("3×4").unwrap(), (3, 4));
        assert!(parse_cluster_shape("0x4").is_err());
        assert!(parse_cluster_shape("15").is_err());
    }
}
