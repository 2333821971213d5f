//! The `berth` command's library: the REST client, the client configuration, Slurm-style
//! output formats, `sbatch` argument handling, the server roles and `berth dev`. The
//! binary (`main.rs`) holds only the command-line tree; the end-to-end tests reuse the
//! client and the formats from here.
//!
//! * [`admin`]: `berth node show|drain|resume`, `berth partition list|show|set|delete`.
//! * [`acct`]: `berth acct` (sacct), job accounting.
//! * [`access`]: `berth user`, `berth account`, `berth token create|list|revoke`.
//! * [`client`]: a reqwest wrapper over the REST api, problem documents as errors.
//! * [`config`]: which cluster client commands talk to (flags, env, config file).
//! * [`join`]: a worker joining with a bootstrap token; `berth token bootstrap`.
//! * [`format`]: `squeue`, `sinfo` and `scontrol show job` output.
//! * [`submit`]: `berth submit`/`sbatch` argument splitting and `--wait`.
//! * [`commands`]: the client commands (`queue`, `nodes`, `show`, `logs`, `cancel` …).
//! * [`job_control`]: `hold`, `release`, `update job`.
//! * [`fairshare`]: `share` (sshare), `priority` (sprio), `qos list|set`.
//! * [`srun`]: `srun` inside an allocation (job steps).
//! * [`gpus`]: `berth gpus`, this machine's GPUs as a worker sees them.
//! * [`stat`]: `berth stat` (sstat), a job's GPU usage.
//! * [`scancel`]: `scancel`/`berth cancel`, by id and by Slurm's filters.
//! * [`sinfo`]: `sinfo`/`berth nodes`, Slurm's views and formats.
//! * [`sprio`], [`sshare`]: sprio and sshare with Slurm's options and layouts.
//! * [`scontrol`]: `scontrol show hostnames|job`, `scontrol requeue`.
//! * [`report`]: `berth report` (sreport): usage reports and cluster utilisation.
//! * [`server`]: `berth server`'s configuration file and roles.
//! * [`pg`]: the private PostgreSQL of `berth dev`.
//! * [`dev`]: `berth dev`, the one-process cluster.
//! * [`shutdown`]: SIGTERM/SIGINT as a shared shutdown future.
//! * [`sim`]: `berth sim`, a trace replay through the planner.

pub mod access;
pub mod acct;
pub mod admin;
pub mod client;
pub mod cloud_metadata;
pub mod clusters;
pub mod commands;
pub mod config;
pub mod dev;
pub mod events;
pub mod fairshare;
pub mod format;
pub mod getopt;
pub mod gpus;
pub mod job_control;
pub mod join;
pub mod pg;
pub mod pools;
pub mod pty;
pub mod queue_start;
pub mod report;
pub mod reservation;
pub mod salloc;
pub mod sbatch_env;
pub mod sbcast;
pub mod scancel;
pub mod scontrol;
pub mod secrets;
pub mod server;
pub mod shutdown;
pub mod sim;
pub mod sinfo;
pub mod slurm_fields;
pub mod sprio;
pub mod squeue;
pub mod srun;
pub mod sshare;
pub mod stat;
pub mod submit;
