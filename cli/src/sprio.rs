//! `sprio` (`berth priority`): the priority factors of pending jobs, from
//! `GET /v1/jobs/{id}/priority`, in sprio's layout: the default
//! `%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.6N` (JOBID PARTITION PRIORITY
//! SITE AGE FAIRSHARE JOBSIZE PARTITION QOS NICE), `-l` adds USER after PARTITION, `-n`
//! prints the factors normalized (0..1, before weighting); `-o` takes sprio's letters.
//!
//! Berth has no association or TRES factors (`%B %b %T %t` are refused by name); its
//! administrator adjustment (`scontrol update JobId=… Priority=`) shows as SITE.

use crate::client::Client;
use crate::format::{parse_percent_format, percent_table};
use berth_core::qos::JobPriority;
use berth_core::wire::JobListQuery;

/// sprio's options (Slurm's names; `-h` leaves the header out, `--help` is help).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SprioArgs {
    /// Job ids (Berth's own form: `berth priority 5 6`).
    #[arg(value_name = "JOB_ID")]
    pub ids: Vec<i64>,
    /// Only these jobs (comma-separated).
    #[arg(short = 'j', long = "jobs", value_delimiter = ',')]
    pub jobs: Vec<i64>,
    /// Only these users' jobs (comma-separated).
    #[arg(short = 'u', long = "user")]
    pub user: Option<String>,
    /// Only jobs of these partitions (comma-separated).
    #[arg(short = 'p', long = "partition")]
    pub partition: Option<String>,
    /// The long format (adds USER).
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// The factors normalized (0..1), before weighting.
    #[arg(short = 'n', long = "norm")]
    pub norm: bool,
    /// sprio's `%` format: `%i` job, `%r` partition, `%u` user, `%Y`/`%y` priority,
    /// `%S` site (Berth's adjustment), `%A`/`%a` age, `%F`/`%f` fairshare, `%J`/`%j` job
    /// size, `%P`/`%p` partition, `%Q`/`%q` QOS, `%N` nice (upper case weighted, lower
    /// case normalized).
    #[arg(short = 'o', long = "format")]
    pub format: Option<String>,
    /// Leave out the header line.
    #[arg(short = 'h', long = "noheader")]
    pub noheader: bool,
    /// Accepted; Berth prints nothing more.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Berth's JSON (the api's documents).
    #[arg(long)]
    pub json: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Refused: the configured weights (the scheduler's configuration).
    #[arg(short = 'w', long = "weights")]
    pub weights: bool,
    /// Refused: sort order.
    #[arg(
        short = 'S',
        long = "sort",
        value_name = "SORT",
        allow_hyphen_values = true
    )]
    pub sort: Option<String>,
    /// Refused: other clusters.
    #[arg(short = 'M', long = "clusters", value_name = "CLUSTERS")]
    pub clusters: Option<String>,
}

impl SprioArgs {
    /// The first option given that Berth refuses, as a message naming it.
    pub fn refused(&self) -> Option<String> {
        let r = |o: &str, why: &str| Some(crate::scancel::refusal("sprio", o, why));
        if self.weights {
            return r(
                "-w/--weights",
                "the weights are the scheduler's configuration ([scheduler.priority])",
            );
        }
        if self.sort.is_some() {
            return r("-S/--sort", "jobs come in id order");
        }
        if self.clusters.is_some() {
            return r("-M/--clusters", "one api serves one cluster");
        }
        None
    }

    /// The `%` format of this view.
    pub fn view_format(&self) -> String {
        if let Some(f) = &self.format {
            return f.clone();
        }
        let (y, s, a, f, j, p, q) = if self.norm {
            (
                "%.10y", "%.10S", "%.10a", "%.10f", "%.10j", "%.10p", "%.10q",
            )
        } else {
            (
                "%.10Y", "%.10S", "%.10A", "%.10F", "%.10J", "%.10P", "%.10Q",
            )
        };
        let user = if self.long { " %.8u" } else { "" };
        format!("%.15i %9r{user} {y} {s} {a} {f} {j} {p} {q} %.6N")
    }
}

/// sprio's letters Berth shows, with their headers.
const FIELDS: &[(char, &str)] = &[
    ('i', "JOBID"),
    ('r', "PARTITION"),
    ('u', "USER"),
    ('Y', "PRIORITY"),
    ('y', "PRIORITY"),
    ('S', "SITE"),
    ('A', "AGE"),
    ('a', "AGE"),
    ('F', "FAIRSHARE"),
    ('f', "FAIRSHARE"),
    ('J', "JOBSIZE"),
    ('j', "JOBSIZE"),
    ('P', "PARTITION"),
    ('p', "PARTITION"),
    ('Q', "QOS"),
    ('q', "QOS"),
    ('N', "NICE"),
];

fn value(kind: char, p: &JobPriority) -> String {
    let (w, n) = (&p.weighted, &p.factors);
    let norm = |v: f64| format!("{v:.7}");
    let weighted = |v: f64| format!("{v:.0}");
    match kind {
        'i' => p.job_id.to_string(),
        'r' => p.partition.clone(),
        'u' => p.user.clone(),
        'Y' => n.priority.to_string(),
        'y' => norm(n.priority as f64 / f64::from(u32::MAX)),
        'S' => n.adjust.to_string(),
        'A' => weighted(w.age),
        'a' => norm(n.age),
        'F' => weighted(w.fairshare),
        'f' => norm(n.fairshare),
        'J' => weighted(w.job_size),
        'j' => norm(n.job_size),
        'P' => weighted(w.partition),
        'p' => norm(n.partition),
        'Q' => weighted(w.qos),
        'q' => norm(n.qos),
        'N' => n.nice.to_string(),
        _ => String::new(),
    }
}

/// `rows` in sprio's `%` format `format`, with a header unless `header` is false.
///
/// # Errors
/// A letter Berth does not show, named.
pub fn render(format: &str, rows: &[JobPriority], header: bool) -> Result<String, String> {
    let known: Vec<char> = FIELDS.iter().map(|(k, _)| *k).collect();
    let parts = parse_percent_format(format, &known)?;
    Ok(percent_table(&parts, FIELDS, rows, value, header))
}

/// `sprio ARGS`: the named jobs (`-j`, or ids), else every pending job you may see
/// (of `-u` users, `-p` partitions).
///
/// # Errors
/// An option Berth refuses, a bad format, or no answer from the api.
pub async fn run(client: &Client, args: &SprioArgs) -> anyhow::Result<i32> {
    if let Some(message) = args.refused() {
        anyhow::bail!(message);
    }
    let format = args.view_format();
    // Checked before any request.
    render(&format, &[], false).map_err(anyhow::Error::msg)?;
    let mut ids: Vec<i64> = args.ids.iter().chain(&args.jobs).copied().collect();
    let named = !ids.is_empty();
    if !named {
        let query = JobListQuery {
            state: Some("PENDING".into()),
            user: args.user.clone(),
            partition: args.partition.clone(),
            limit: Some(1000),
            ..Default::default()
        };
        ids = client
            .job_list_all(&query)
            .await?
            .iter()
            .map(|j| j.id)
            .collect();
    }
    let users: Option<Vec<&str>> = args.user.as_deref().map(|u| u.split(',').collect());
    let partitions: Option<Vec<&str>> = args.partition.as_deref().map(|p| p.split(',').collect());
    let mut rows = Vec::new();
    let mut status = 0;
    for id in ids {
        match client.job_priority(id).await {
            Ok(p) => {
                if users.as_ref().is_none_or(|u| u.contains(&p.user.as_str()))
                    && partitions
                        .as_ref()
                        .is_none_or(|x| x.contains(&p.partition.as_str()))
                {
                    rows.push(p);
                }
            }
            // A job listed as pending may have started since: skip it, as sprio would
            // not show it.
            Err(e) if !named && e.status() == Some(404) => {}
            Err(e) if e.status() == Some(404) => {
                eprintln!("sprio: error: Unable to find job {id}: {e}");
                status = 1;
            }
            Err(e) => {
                eprintln!("sprio: error: job {id}: {e}");
                status = 1;
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!(
            "{}",
            render(&format, &rows, !args.noheader).map_err(anyhow::Error::msg)?
        );
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::priority::PriorityFactors;

    fn row() -> JobPriority {
        let f = |age, fs| PriorityFactors {
            age,
            fairshare: fs,
            job_size: 0.0,
            partition: 1.0,
            qos: 0.0,
            nice: 0,
            adjust: 0,
            priority: 1510,
        };
        JobPriority {
            job_id: 5,
            user: "bob".into(),
            account: Some("ml".into()),
            partition: "gpu".into(),
            qos: None,
            factors: f(0.01, 0.5),
            weighted: f(10.0, 500.0),
            computed_at: String::new(),
        }
    }

    #[test]
    fn default_long_and_normalized_layouts() {
        let args = SprioArgs::default();
        let text = render(&args.view_format(), &[row()], true).unwrap();
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            vec![
                "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS   NICE",
                "              5 gpu             1510          0         10        500          0          1          0      0",
            ]
        );
        let long = SprioArgs {
            long: true,
            norm: true,
            ..Default::default()
        };
        let text = render(&long.view_format(), &[row()], false).unwrap();
        assert!(
            text.starts_with(
                "              5 gpu            bob  0.0000004          0  0.0100000  0.5000000"
            ),
            "{text}"
        );
        let err = render("%i %T", &[], true).unwrap_err();
        assert!(err.contains("%T"), "{err}");
    }
}
