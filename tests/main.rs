//! Berth's end-to-end tests: a real PostgreSQL, the `berth` binary running the api, the
//! scheduler(s) and workers with simulated GPUs as separate processes, over HTTP on
//! loopback. One test binary (`cargo test -p berth --test e2e`), one module per area.

mod api;
mod array_cancel;
mod cli;
mod cluster;
mod fairshare;
mod jobs;
mod preemption;
mod scheduling;
mod scheduling_scenarios;
