//! Replays the Tiresias 60-job trace through the planner on 3×4 and 15×4 GPUs under each
//! policy and prints a Markdown table (the numbers in bench/README.md):
//! `cargo run --release -p berth-scheduler --example sim_tiresias -- PATH/60_job.csv`.

use berth_scheduler::planner::{PlannerConfig, QueueOrder};
use berth_scheduler::sim::{simulate, uniform_cluster, SimConfig};
use berth_scheduler::trace::parse_tiresias;

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/traces/tiresias/60_job.csv".into());
    let text = std::fs::read_to_string(&path).expect("reading the trace");
    println!("| cluster | policy | avg JCT s | p95 JCT s | avg wait s | p95 wait s | makespan s | GPU util | pass mean µs | pass p99 µs | pass max µs |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for nodes in [3, 15] {
        let jobs = parse_tiresias(&text, 4).expect("a Tiresias trace");
        for (name, order, backfill) in [
            ("fifo", QueueOrder::Submit, false),
            ("fifo-backfill", QueueOrder::Submit, true),
            ("default", QueueOrder::Multifactor, true),
        ] {
            let config = SimConfig {
                planner: PlannerConfig {
                    order,
                    backfill,
                    ..Default::default()
                },
                ..Default::default()
            };
            let s = simulate(&uniform_cluster(nodes, 4), &jobs, &config).summary();
            println!(
                "| {nodes}×4 | {name} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1}% | {:.0} | {:.0} | {:.0} |",
                s.avg_jct,
                s.p95_jct,
                s.avg_wait,
                s.p95_wait,
                s.makespan,
                s.gpu_utilization * 100.0,
                s.pass_mean_us,
                s.pass_p99_us,
                s.pass_max_us
            );
        }
    }
}
