//! `berth stat` (like `sstat`): a job's GPU usage, per GPU and in total, from
//! `GET /v1/jobs/{id}/stats`.

use crate::client::Client;
use berth_core::stats::JobStats;

/// Renders the stats as a table: one line per GPU (latest and average utilisation, latest
/// and peak memory, power, energy), then the job's totals.
pub fn render(stats: &JobStats) -> String {
    let mut out = format!(
        "{:<12} {:<12} {:>3} {:>6} {:>8} {:>10} {:>12} {:>8} {:>12}\n",
        "JobID", "Node", "GPU", "Util%", "AveUtil%", "MemMiB", "MaxMemMiB", "PowerW", "EnergyJ"
    );
    let job = format!("{}", stats.job_id);
    for gpu in &stats.gpus {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
        out.push_str(&format!(
            "{:<12} {:<12} {:>3} {:>6} {:>8.1} {:>10} {:>12} {:>8} {:>12.0}\n",
            job,
            gpu.node,
            gpu.index,
            opt(gpu.utilization_pct.map(|v| v.to_string())),
            gpu.avg_utilization_pct,
            opt(gpu.memory_used_mib.map(|v| v.to_string())),
            gpu.peak_memory_mib,
            opt(gpu.power_w.map(|v| format!("{v:.1}"))),
            gpu.energy_joules,
        ));
    }
    out.push_str(&format!(
        "{:<12} {:<12} {:>3} {:>6} {:>8} {:>10} {:>12} {:>8} {:>12.0}\n",
        job,
        "total",
        stats.gpus.len(),
        "-",
        stats
            .avg_utilization_pct
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "-".to_string()),
        "-",
        stats.peak_memory_mib,
        "-",
        stats.energy_joules,
    ));
    out
}

/// Prints job `id`'s GPU usage (`--json`: the api's document).
///
/// # Errors
/// The api's refusal (an unknown job) or no answer.
pub async fn stat(client: &Client, id: i64, json: bool) -> anyhow::Result<i32> {
    let stats: JobStats = client
        .get_json(&format!("/v1/jobs/{id}/stats"))
        .await
        .map_err(|e| anyhow::anyhow!("job {id}: {e}"))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
    } else {
        print!("{}", render(&stats));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::stats::GpuStats;

    #[test]
    fn one_line_per_gpu_and_a_total() {
        let stats = JobStats {
            job_id: 9,
            run: 0,
            avg_utilization_pct: Some(85.0),
            peak_memory_mib: 60000,
            energy_joules: 4200.0,
            gpus: vec![GpuStats {
                node: "node-1".into(),
                index: 3,
                samples: 4,
                avg_utilization_pct: 85.0,
                peak_memory_mib: 60000,
                energy_joules: 4200.0,
                utilization_pct: Some(90),
                memory_used_mib: Some(59000),
                power_w: Some(600.5),
                temperature_c: Some(70),
                last_sampled_at: chrono::Utc::now(),
            }],
        };
        let text = render(&stats);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("9 ") && lines[1].contains("node-1"));
        assert!(lines[1].contains("85.0") && lines[1].contains("600.5"));
        assert!(lines[2].contains("total") && lines[2].contains("4200"));
    }
}
