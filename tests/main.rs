//! Berth's end-to-end tests: a real PostgreSQL, the `berth` binary running the api, the
//! scheduler(s) and workers with simulated GPUs as separate processes, over HTTP on
//! loopback. One test binary (`cargo test -p berth --test e2e`), one module per area.

mod access;
mod api;
mod array_cancel;
mod assoc_limits;
mod attacks;
mod authz;
mod cancelled_requests;
mod chaos;
mod cli;
mod cluster;
mod cpu_placement;
mod dev;
mod failover;
mod fairshare;
mod gpus;
mod isolation;
mod jobs;
mod keys;
mod node_failure;
mod node_join;
mod node_reports;
mod nodes;
mod oidc;
mod operations;
mod outage;
mod pg_failover;
mod pools_api;
mod preemption;
mod private_pg;
mod proxy;
mod requeue;
mod reservations;
mod restart;
mod sbatch_scripts;
mod scheduler_wakeups;
mod scheduling;
mod scheduling_scenarios;
mod selection;
mod sim;
mod steps;
mod time_limit;
mod tls;
