//! `berth stat` / `sstat`: a job's GPU usage, per GPU and in total, from
//! `GET /v1/jobs/{id}/stats`. `sstat -j 17[,18]` takes Slurm's options: `-o/--format`
//! with the fields below (`Name%WIDTH`), `-p`/`-P`, `-n`, `-a`, `-e`.
//!
//! Partial by design: Berth samples GPUs per job, not CPU, memory or disk per step, so
//! the default view is Berth's per-GPU table rather than Slurm's ~30 CPU/memory/disk
//! columns, and a step id (`17.0`, `17.batch`) is refused by name. `-o` fields: `JobID`,
//! `ConsumedEnergy` (joules), `TRESUsageInAve` (`gres/gpuutil=PCT`), `TRESUsageInMax`
//! (`gres/gpumem=MIB`M), and Berth's `GPUUtil`, `GPUMemPeak`, `NGPUs`.

use crate::acct::{print_fields, Style};
use crate::client::Client;
use berth_core::stats::JobStats;

/// sstat's options (Slurm's names; `berth stat ID` also takes the id alone).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SstatArgs {
    /// The job id (Berth's form: `berth stat 17`).
    #[arg(value_name = "JOB_ID")]
    pub id: Option<String>,
    /// Jobs (comma-separated): `17`, `17,18`.
    #[arg(short = 'j', long = "jobs")]
    pub jobs: Option<String>,
    /// Every step: Berth's samples are the job's, which cover all its steps.
    #[arg(short = 'a', long = "allsteps")]
    pub allsteps: bool,
    /// Fields (comma-separated, `Name%WIDTH`): JobID, ConsumedEnergy, TRESUsageInAve,
    /// TRESUsageInMax, GPUUtil, GPUMemPeak, NGPUs.
    #[arg(short = 'o', long = "format", visible_alias = "fields")]
    pub format: Option<String>,
    /// `|` after every field.
    #[arg(short = 'p', long = "parsable")]
    pub parsable: bool,
    /// `|` between fields.
    #[arg(short = 'P', long = "parsable2")]
    pub parsable2: bool,
    /// No header.
    #[arg(short = 'n', long = "noheader")]
    pub noheader: bool,
    /// List the fields -o knows.
    #[arg(short = 'e', long = "helpformat")]
    pub helpformat: bool,
    /// Print sizes as they are (MiB): what Berth does.
    #[arg(long)]
    pub noconvert: bool,
    /// Accepted; Berth prints nothing more.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Print the api's JSON instead.
    #[arg(long)]
    pub json: bool,
    /// Refused: per-process ids.
    #[arg(short = 'i', long = "pidformat")]
    pub pidformat: bool,
}

impl SstatArgs {
    /// The first option given that Berth refuses, as a message naming it.
    pub fn refused(&self) -> Option<String> {
        self.pidformat.then(|| {
            crate::scancel::refusal(
                "sstat",
                "-i/--pidformat",
                "Berth samples GPUs per job, not processes",
            )
        })
    }
}

/// The fields `-o` takes: name, width, left-aligned.
const FIELDS: &[(&str, usize, bool)] = &[
    ("JobID", 12, true),
    ("ConsumedEnergy", 14, false),
    ("TRESUsageInAve", 20, false),
    ("TRESUsageInMax", 20, false),
    ("GPUUtil", 8, false),
    ("GPUMemPeak", 10, false),
    ("NGPUs", 6, false),
];

fn field_value(name: &str, stats: &JobStats) -> String {
    let util = stats
        .avg_utilization_pct
        .map(|v| format!("{v:.0}"))
        .unwrap_or_default();
    match name {
        "JobID" => stats.job_id.to_string(),
        "ConsumedEnergy" => format!("{:.0}", stats.energy_joules),
        "TRESUsageInAve" if util.is_empty() => String::new(),
        "TRESUsageInAve" => format!("gres/gpuutil={util}"),
        "TRESUsageInMax" => format!("gres/gpumem={}M", stats.peak_memory_mib),
        "GPUUtil" => util,
        "GPUMemPeak" => stats.peak_memory_mib.to_string(),
        "NGPUs" => stats.gpus.len().to_string(),
        _ => String::new(),
    }
}

/// The job ids `args` names.
///
/// # Errors
/// None named, a step id, or not an id, named.
pub fn job_ids(args: &SstatArgs) -> Result<Vec<i64>, String> {
    let words: Vec<&str> = args
        .id
        .iter()
        .chain(args.jobs.iter())
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        return Err("sstat: error: no job id given (sstat -j JOBID)".into());
    }
    words
        .into_iter()
        .map(|w| {
            if let Some((job, _)) = w.split_once('.') {
                return Err(format!(
                    "sstat: error: {w}: Berth samples GPUs per job, not per step; use -j {job}"
                ));
            }
            w.parse()
                .map_err(|_| format!("sstat: error: {w:?} is not a job id"))
        })
        .collect()
}

/// `sstat ARGS` / `berth stat ID`.
///
/// # Errors
/// A refused option, a bad id or field, or the api's refusal (an unknown job).
pub async fn sstat(client: &Client, args: &SstatArgs) -> anyhow::Result<i32> {
    if let Some(message) = args.refused() {
        anyhow::bail!(message);
    }
    if args.helpformat {
        print!("{}", crate::acct::help_format(FIELDS));
        return Ok(0);
    }
    let columns = args
        .format
        .as_deref()
        .map(|f| crate::sshare::parse_fields("-o/--format", f, FIELDS))
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let ids = job_ids(args).map_err(anyhow::Error::msg)?;
    let mut all = Vec::new();
    for id in ids {
        let stats: JobStats = client
            .get_json(&format!("/v1/jobs/{id}/stats"))
            .await
            .map_err(|e| anyhow::anyhow!("sstat: error: job {id}: {e}"))?;
        all.push(stats);
    }
    if args.json {
        for s in &all {
            println!("{}", serde_json::to_string_pretty(s)?);
        }
        return Ok(0);
    }
    match columns {
        None => all.iter().for_each(|s| print!("{}", render(s))),
        Some(columns) => {
            let rows: Vec<Vec<String>> = all
                .iter()
                .map(|s| columns.iter().map(|c| field_value(c.0, s)).collect())
                .collect();
            let style = Style::from_flags(args.parsable, args.parsable2);
            print!("{}", print_fields(&columns, &rows, style, !args.noheader));
        }
    }
    Ok(0)
}

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
        let cols = crate::sshare::parse_fields(
            "-o",
            "JobID,TRESUsageInAve,TRESUsageInMax,ConsumedEnergy",
            FIELDS,
        )
        .unwrap();
        let row: Vec<String> = cols.iter().map(|c| field_value(c.0, &stats)).collect();
        assert_eq!(
            print_fields(&cols, &[row], Style::Parsable2, true),
            "JobID|TRESUsageInAve|TRESUsageInMax|ConsumedEnergy\n\
             9|gres/gpuutil=85|gres/gpumem=60000M|4200\n"
        );
        let ids = |line: &[&str]| {
            job_ids(&SstatArgs {
                jobs: line.first().map(|s| s.to_string()),
                ..Default::default()
            })
        };
        assert_eq!(ids(&["17,18"]), Ok(vec![17, 18]));
        assert!(ids(&["17.0"]).unwrap_err().contains("17.0"));
        assert!(ids(&[]).unwrap_err().contains("no job id"));
        let text = render(&stats);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("9 ") && lines[1].contains("node-1"));
        assert!(lines[1].contains("85.0") && lines[1].contains("600.5"));
        assert!(lines[2].contains("total") && lines[2].contains("4200"));
    }
}
