//! Workload traces for the simulator.
//!
//! * Tiresias (`job_id,num_gpu,submit_time,iterations,model_name,duration,interval`,
//!   SymbioticLab/Tiresias, NSDI'19): a job asking more GPUs than a node holds becomes a
//!   gang of whole nodes (`num_gpu / gpus_per_node` nodes); its time limit is its
//!   duration (the trace knows it; a real user would over-ask).

use crate::sim::SimJob;

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
