//! Berth's core: the domain types every other crate shares, and the pure parsers of
//! Slurm's formats. No I/O lives here.
//!
//! * [`state`]: job and node states with Slurm's names.
//! * [`spec`]: a job's specification, as `#SBATCH` lines and `sbatch` options express it.
//! * [`sbatch`]: the `#SBATCH` / command-line option parser.
//! * [`duration`]: Slurm's `--time` formats.
//! * [`hostlist`]: Slurm's compressed host lists (`node-[1-3,7]`).
//! * [`pattern`]: `--output`/`--error` filename patterns (`%x-%j.out`).
//! * [`resources`]: what a spec asks of the cluster (nodes, GPUs per node).
//! * [`cores`]: CPU cores and hardware threads, and the CPUs a job holds on them.
//! * [`wire`]: request and response bodies of the REST api and the worker protocol.
//! * [`auth`]: the claims carried by Berth's JWTs.
//! * [`priority`]: multifactor priority and classic fairshare formulas.
//! * [`array`]: job array index sets (`--array`).
//! * [`begin`]: `--begin` times.
//! * [`cluster`]: the cluster's name and the `-M/--clusters` option.
//! * [`constraint`]: `--constraint` expressions (`a&b`, `a|b`, `[a|b]`, `a*2`).
//! * [`scheduling`]: wire types of hold/release/update.
//! * [`reason`]: Slurm's reasons for ended jobs, from their end state and exit status.
//! * [`qos`]: QOS definitions, TRES limits, fairshare and priority views.
//! * [`identity`]: users, accounts, memberships, API tokens and the audit log on the wire.
//! * [`signal`]: `--signal`, the warning before the time limit.
//! * [`stats`]: GPU usage per job and GPU faults.
//! * [`step`]: job steps (`srun` inside an allocation) and their worker messages.
//! * [`pool`]: cloud node pools: what an admin declares and what `GET /v1/pools` shows.
//! * [`text`]: control and bidi characters: refused in names, escaped on terminals.
//! * [`usage_report`]: usage reports (sreport) on the wire, hour splitting, retention periods.
//! * [`metrics`]: the cluster-wide counters and histograms `/metrics` shows.

pub mod accounting;
pub mod array;
pub mod auth;
pub mod begin;
pub mod cluster;
pub mod constraint;
pub mod cores;
pub mod duration;
pub mod event;
pub mod hostlist;
pub mod identity;
pub mod metrics;
pub mod pattern;
pub mod pool;
pub mod priority;
pub mod qos;
pub mod reason;
pub mod reservation;
pub mod resources;
pub mod sbatch;
pub mod sbatch_help;
pub mod scheduling;
pub mod signal;
pub mod spec;
pub mod state;
pub mod stats;
pub mod step;
pub mod text;
pub mod usage_report;
pub mod wire;
