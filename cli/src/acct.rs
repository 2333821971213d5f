//! `berth acct` (like `sacct`): job accounting from `GET /v1/accounting/jobs`, with
//! sacct's options and output: the default columns
//! `JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode` at Slurm's widths under a
//! `---` line, `-o/--format` with Slurm's field names (and `%N` widths), `-p`/`-P`
//! (`|`-separated), `-n`, `-X` (no steps), `-D` (every run of a requeued job), `--json`.
//!
//! Berth's extra fields (not in Slurm): `Restarts`, `RequeueReason`, `GPUSeconds`,
//! `GPUUtil`, `GPUMemPeak`, `Cost`. `ConsumedEnergy` is the GPUs' energy.

use crate::client::Client;
use crate::format::scontrol_time;
use berth_core::accounting::{
    derived_exit_code_string, elapsed_string, exit_code_string, mem_string, parse_job_ids,
    parse_sacct_time, parse_states, tres_string, AcctJob, AcctJobList, AcctStep,
};
use chrono::{DateTime, Utc};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};

/// sacct's options.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AcctArgs {
    /// Jobs that were in the window from this time (default: 00:00 today, UTC; none with
    /// -j or -s). Slurm's formats: YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY][-HH:MM[:SS]],
    /// HH:MM[:SS], now[-N[units]], today, midnight …
    #[arg(short = 'S', long = "starttime")]
    pub starttime: Option<String>,
    /// Jobs that were in the window until this time (default: now).
    #[arg(short = 'E', long = "endtime")]
    pub endtime: Option<String>,
    /// Only these users (comma-separated).
    #[arg(short = 'u', long = "user", visible_alias = "uid")]
    pub user: Option<String>,
    /// Every user's jobs you may see (the default in Berth: the api shows yours and those
    /// of the accounts you coordinate; admins see all).
    #[arg(short = 'a', long = "allusers")]
    pub allusers: bool,
    /// Only these accounts.
    #[arg(short = 'A', long = "account", visible_alias = "accounts")]
    pub account: Option<String>,
    /// Only these states (CD,F,CA,R,PD,TO,NF,OOM,PR,RQ … or long names).
    #[arg(short = 's', long = "state")]
    pub state: Option<String>,
    /// Only these jobs: 12, 5_3 (array task), comma-separated.
    #[arg(short = 'j', long = "jobs")]
    pub jobs: Option<String>,
    /// Jobs only, no steps.
    #[arg(short = 'X', long = "allocations")]
    pub allocations: bool,
    /// Every run of a requeued job (one line each); default: the latest.
    #[arg(short = 'D', long = "duplicates")]
    pub duplicates: bool,
    /// Only these partitions.
    #[arg(short = 'r', long = "partition")]
    pub partition: Option<String>,
    /// Only these QOS.
    #[arg(short = 'q', long = "qos")]
    pub qos: Option<String>,
    /// Only jobs that ran on these nodes (names or a hostlist).
    #[arg(short = 'N', long = "nodelist")]
    pub nodelist: Option<String>,
    /// Fields to print (comma-separated Slurm names, `Name%WIDTH` to set a width).
    #[arg(short = 'o', long = "format")]
    pub format: Option<String>,
    /// `|`-separated output without a trailing `|`.
    #[arg(short = 'P', long = "parsable2")]
    pub parsable2: bool,
    /// `|`-separated output with a trailing `|`.
    #[arg(short = 'p', long = "parsable")]
    pub parsable: bool,
    /// No header.
    #[arg(short = 'n', long = "noheader")]
    pub noheader: bool,
    /// Print Slurm's `sacct --json` document (data parser v0.0.44: `jobs` as slurmdbd's,
    /// with `meta`, `errors`, `warnings`), of the runs the filters select.
    #[arg(long, conflicts_with = "yaml")]
    pub json: bool,
    /// The same document as YAML (`sacct --yaml`).
    #[arg(long)]
    pub yaml: bool,
    /// List the fields -o/--format knows.
    #[arg(short = 'e', long = "helpformat")]
    pub helpformat: bool,
    /// `all` or this cluster's name (Berth is one cluster; another name is refused):
    /// the runs of this cluster, printed as without the option.
    #[arg(
        short = 'M',
        long = "clusters",
        visible_alias = "cluster",
        value_name = "CLUSTERS",
        allow_hyphen_values = true
    )]
    pub clusters: Option<String>,
    /// Every cluster's runs: this cluster's (Berth is one cluster).
    #[arg(short = 'L', long = "allclusters")]
    pub allclusters: bool,
}

/// sacct's default fields.
pub const DEFAULT_FORMAT: &str = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode";

/// A row: a job run, or one of its steps.
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    /// A job run.
    Job(&'a AcctJob),
    /// A step of a job run.
    Step(&'a AcctJob, &'a AcctStep),
}

/// A field sacct knows: its name, default width, and whether values are left-aligned.
struct Field {
    name: &'static str,
    width: usize,
    left: bool,
}

const fn f(name: &'static str, width: usize) -> Field {
    Field {
        name,
        width,
        left: false,
    }
}

/// The fields, in `--helpformat` order.
const FIELDS: &[Field] = &[
    Field {
        name: "JobID",
        width: 12,
        left: true,
    },
    Field {
        name: "JobIDRaw",
        width: 12,
        left: true,
    },
    f("JobName", 10),
    f("Partition", 10),
    f("Account", 10),
    f("User", 9),
    f("AllocCPUS", 10),
    f("NCPUS", 10),
    f("ReqCPUS", 8),
    f("AllocNodes", 10),
    f("NNodes", 8),
    f("ReqNodes", 8),
    f("State", 10),
    f("ExitCode", 8),
    f("DerivedExitCode", 15),
    f("Elapsed", 10),
    f("ElapsedRaw", 10),
    f("Submit", 19),
    f("Eligible", 19),
    f("Start", 19),
    f("End", 19),
    f("Timelimit", 10),
    f("TimelimitRaw", 12),
    f("AllocTRES", 10),
    f("ReqTRES", 10),
    f("ReqMem", 10),
    f("MaxRSS", 10),
    f("TotalCPU", 10),
    f("CPUTime", 10),
    f("CPUTimeRAW", 10),
    f("NodeList", 15),
    f("QOS", 10),
    f("Reason", 20),
    f("ConsumedEnergy", 14),
    f("ConsumedEnergyRaw", 17),
    f("Restarts", 8),
    f("RequeueReason", 20),
    f("GPUSeconds", 12),
    f("GPUUtil", 8),
    f("GPUMemPeak", 10),
    f("Cost", 10),
];

/// One column of the output: a field and its width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The field's Slurm name.
    pub name: &'static str,
    /// Width (plain output).
    pub width: usize,
    /// Values left-aligned.
    pub left: bool,
}

/// Parses `-o/--format`: comma-separated field names (any case), each with an optional
/// `%WIDTH`.
///
/// # Errors
/// A message naming `-o/--format` and the unknown field or bad width.
pub fn parse_format(spec: &str) -> Result<Vec<Column>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // `NAME%WIDTH`; `NAME%-WIDTH` left-justifies, as Slurm's sacct.
        let (name, width, left) = match item.split_once('%') {
            Some((n, w)) => {
                let left = w.starts_with('-');
                let w: usize = w
                    .trim_start_matches('-')
                    .parse()
                    .ok()
                    .filter(|w| (1..=1000).contains(w))
                    .ok_or_else(|| format!("-o/--format: bad width in {item:?}"))?;
                (n, Some(w), left)
            }
            None => (item, None, false),
        };
        let field = FIELDS
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                format!("-o/--format: unknown field {name:?} (see --helpformat for the fields)")
            })?;
        out.push(Column {
            name: field.name,
            width: width.unwrap_or(field.width),
            left: field.left || left,
        });
    }
    if out.is_empty() {
        return Err("-o/--format: no field given".to_string());
    }
    Ok(out)
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn time(t: Option<DateTime<Utc>>) -> String {
    scontrol_time(t)
}

fn time_limit(seconds: Option<u64>) -> String {
    match seconds {
        Some(s) => elapsed_string(s),
        None => "UNLIMITED".to_string(),
    }
}

/// sacct's CPU time with milliseconds: `MM:SS.mmm`, `HH:MM:SS`, `D-HH:MM:SS`.
fn total_cpu(seconds: f64) -> String {
    if seconds < 3600.0 {
        let m = (seconds / 60.0).floor();
        format!("{:02}:{:06.3}", m as u64, seconds - m * 60.0)
    } else {
        elapsed_string(seconds as u64)
    }
}

/// The value of field `name` for `row`.
pub fn value(name: &str, row: Row<'_>) -> String {
    let job = match row {
        Row::Job(j) | Row::Step(j, _) => j,
    };
    let step = match row {
        Row::Step(_, s) => Some(s),
        Row::Job(_) => None,
    };
    let tres = step.map(|s| &s.alloc_tres).unwrap_or(&job.alloc_tres);
    let elapsed = step.map(|s| s.elapsed).unwrap_or(job.elapsed);
    match name {
        "JobID" => match step {
            Some(s) => format!("{}.{}", job.job_id_display, s.step),
            None => job.job_id_display.clone(),
        },
        "JobIDRaw" => match step {
            Some(s) => format!("{}.{}", job.job_id, s.step),
            None => job.job_id.to_string(),
        },
        "JobName" => step.map(|s| s.name.clone()).unwrap_or(job.name.clone()),
        "Partition" => {
            if step.is_some() {
                String::new()
            } else {
                job.partition.clone()
            }
        }
        "Account" => job.account.clone(),
        "User" => {
            if step.is_some() {
                String::new()
            } else {
                job.user.clone()
            }
        }
        "AllocCPUS" | "NCPUS" => tres.cpu.to_string(),
        "ReqCPUS" => job.req_tres.cpu.to_string(),
        "AllocNodes" | "NNodes" => tres.nodes.to_string(),
        "ReqNodes" => job.req_tres.nodes.to_string(),
        "State" => step.map(|s| s.state.clone()).unwrap_or(job.state.clone()),
        "ExitCode" => match step {
            Some(s) => exit_code_string(s.exit_code, s.exit_signal),
            None => exit_code_string(job.exit_code, job.exit_signal),
        },
        "DerivedExitCode" => match step {
            Some(_) => String::new(),
            None => derived_exit_code_string(
                job.steps
                    .iter()
                    .filter(|s| s.step != "batch")
                    .map(|s| (s.exit_code, s.exit_signal)),
            ),
        },
        "Elapsed" => elapsed_string(elapsed),
        "ElapsedRaw" => elapsed.to_string(),
        "Submit" => time(match step {
            Some(s) => s.start_time,
            None => Some(job.submit_time),
        }),
        "Eligible" => time(match step {
            Some(s) => s.start_time,
            None => Some(job.eligible_time),
        }),
        "Start" => time(step.map(|s| s.start_time).unwrap_or(job.start_time)),
        "End" => time(step.map(|s| s.end_time).unwrap_or(job.end_time)),
        "Timelimit" => {
            if step.is_some() {
                String::new()
            } else {
                time_limit(job.time_limit)
            }
        }
        "TimelimitRaw" => {
            if step.is_some() {
                String::new()
            } else {
                job.time_limit
                    .map(|s| (s / 60).to_string())
                    .unwrap_or_else(|| "UNLIMITED".to_string())
            }
        }
        "AllocTRES" => tres_string(tres),
        "ReqTRES" => {
            if step.is_some() {
                String::new()
            } else {
                tres_string(&job.req_tres)
            }
        }
        "ReqMem" => job.req_tres.mem_mib.map(mem_string).unwrap_or_default(),
        // The batch node's cgroup figures: the job's line and its batch step's (srun
        // steps have none of their own yet).
        "MaxRSS" => job
            .max_rss_mib
            .filter(|_| step.is_none_or(|s| s.step == "batch"))
            .map(|m| format!("{}K", m * 1024))
            .unwrap_or_default(),
        "TotalCPU" => job
            .cpu_time_s
            .filter(|_| step.is_none_or(|s| s.step == "batch"))
            .map(total_cpu)
            .unwrap_or_else(|| total_cpu(0.0)),
        "CPUTime" => elapsed_string(elapsed * tres.cpu),
        "CPUTimeRAW" => (elapsed * tres.cpu).to_string(),
        "NodeList" => step
            .map(|s| s.nodelist.clone())
            .unwrap_or(job.nodelist.clone()),
        "QOS" => {
            if step.is_some() {
                String::new()
            } else {
                job.qos.clone()
            }
        }
        "Reason" => {
            if step.is_some() {
                String::new()
            } else {
                job.reason.clone().unwrap_or_else(|| "None".to_string())
            }
        }
        "ConsumedEnergy" | "ConsumedEnergyRaw" => match (step, job.energy_j) {
            (None, Some(e)) => format!("{}", e.round() as u64),
            _ => String::new(),
        },
        "Restarts" => job.restarts.to_string(),
        "RequeueReason" => opt(job.requeue_reason.as_deref()),
        "GPUSeconds" => {
            if step.is_some() {
                String::new()
            } else {
                format!("{}", job.gpu_seconds.round() as u64)
            }
        }
        "GPUUtil" => job
            .gpu_util_avg
            .filter(|_| step.is_none())
            .map(|u| format!("{u:.1}"))
            .unwrap_or_default(),
        "GPUMemPeak" => job
            .gpu_mem_peak_mib
            .filter(|_| step.is_none())
            .map(mem_string)
            .unwrap_or_default(),
        "Cost" => job
            .cost
            .filter(|_| step.is_none())
            .map(|c| format!("{c:.4}"))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// Fits `value` into `width` as sacct does: padded, or cut with a `+` at the end.
fn cell(value: &str, width: usize, left: bool) -> String {
    let chars: Vec<char> = value.chars().collect();
    if chars.len() > width {
        let mut s: String = chars[..width.saturating_sub(1)].iter().collect();
        s.push('+');
        s
    } else if left {
        format!("{value:<width$}")
    } else {
        format!("{value:>width$}")
    }
}

/// How the table is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Fixed-width columns, a header and a `---` line.
    Plain,
    /// `|` between fields and after the last (`-p`).
    Parsable,
    /// `|` between fields (`-P`).
    Parsable2,
}

impl Style {
    /// The style of `-p` (`parsable`) and `-P` (`parsable2`); `-p` wins.
    pub fn from_flags(parsable: bool, parsable2: bool) -> Style {
        match (parsable, parsable2) {
            (true, _) => Style::Parsable,
            (false, true) => Style::Parsable2,
            _ => Style::Plain,
        }
    }
}

/// `-e/--helpformat` of sshare and sstat: the field names, one line.
pub fn help_format(fields: &[(&str, usize, bool)]) -> String {
    let names: Vec<&str> = fields.iter().map(|f| f.0).collect();
    format!("{}\n", names.join(" "))
}

/// The rows of `jobs` in order: each run, then its steps unless `no_steps`.
pub fn rows(jobs: &[AcctJob], no_steps: bool) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    for job in jobs {
        out.push(Row::Job(job));
        if !no_steps {
            out.extend(job.steps.iter().map(|s| Row::Step(job, s)));
        }
    }
    out
}

/// The whole table as sacct prints it, each line ending in a newline.
pub fn render(columns: &[Column], rows: &[Row<'_>], style: Style, header: bool) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| columns.iter().map(|c| value(c.name, *row)).collect())
        .collect();
    let heads: Vec<(&str, usize, bool)> =
        columns.iter().map(|c| (c.name, c.width, c.left)).collect();
    print_fields(&heads, &cells, style, header)
}

/// A table as Slurm's accounting commands print it (sacct, sshare, sstat: their
/// `print_fields`): `columns` are (header, width, left-aligned values); plain style pads
/// each cell to its width (a longer value cut with a trailing `+`), headers
/// right-aligned, a `---` line under them and a space after every cell; `-p` and `-P`
/// join cells with `|` (`-p` also ends each line with one). Each line ends in a newline.
pub fn print_fields(
    columns: &[(&str, usize, bool)],
    rows: &[Vec<String>],
    style: Style,
    header: bool,
) -> String {
    let mut out = String::new();
    let line = |cells: Vec<String>| -> String {
        match style {
            Style::Plain => {
                let mut s: String = cells.iter().map(|c| format!("{c} ")).collect();
                s.push('\n');
                s
            }
            Style::Parsable => format!("{}|\n", cells.join("|")),
            Style::Parsable2 => format!("{}\n", cells.join("|")),
        }
    };
    if header {
        out.push_str(&line(
            columns
                .iter()
                .map(|(name, width, _)| match style {
                    Style::Plain => cell(name, *width, false),
                    _ => name.to_string(),
                })
                .collect(),
        ));
        if style == Style::Plain {
            out.push_str(&line(columns.iter().map(|c| "-".repeat(c.1)).collect()));
        }
    }
    for row in rows {
        out.push_str(&line(
            columns
                .iter()
                .zip(row)
                .map(|((_, width, left), v)| match style {
                    Style::Plain => cell(v, *width, *left),
                    _ => v.clone(),
                })
                .collect(),
        ));
    }
    out
}

fn enc(v: &str) -> String {
    utf8_percent_encode(v, NON_ALPHANUMERIC).to_string()
}

/// The api query for `args` at `now`, as `(name, value)` pairs.
///
/// # Errors
/// A message naming the bad option.
pub fn query(args: &AcctArgs, now: DateTime<Utc>) -> Result<Vec<(&'static str, String)>, String> {
    let mut q: Vec<(&'static str, String)> = Vec::new();
    let start = match &args.starttime {
        Some(v) => Some(parse_sacct_time(v, now).map_err(|e| format!("-S/--starttime: {e}"))?),
        None if args.jobs.is_none() && args.state.is_none() => Some(
            now.date_naive()
                .and_hms_opt(0, 0, 0)
                .map(|t| t.and_utc())
                .unwrap_or(now),
        ),
        None => None,
    };
    if let Some(s) = start {
        q.push(("start", s.to_rfc3339()));
    }
    if let Some(v) = &args.endtime {
        let end = parse_sacct_time(v, now).map_err(|e| format!("-E/--endtime: {e}"))?;
        if start.is_some_and(|s| end < s) {
            return Err(format!("-E/--endtime: {v:?} is before the start time"));
        }
        q.push(("end", end.to_rfc3339()));
    }
    if let Some(v) = &args.state {
        parse_states(v).map_err(|e| format!("-s/--state: {e}"))?;
        q.push(("state", v.clone()));
    }
    if let Some(v) = &args.jobs {
        parse_job_ids(v).map_err(|e| format!("-j/--jobs: {e}"))?;
        q.push(("job", v.clone()));
    }
    if let Some(v) = &args.nodelist {
        berth_core::hostlist::expand(v).map_err(|e| format!("-N/--nodelist: {e}"))?;
        q.push(("node", v.clone()));
    }
    for (name, v) in [
        ("user", &args.user),
        ("account", &args.account),
        ("partition", &args.partition),
        ("qos", &args.qos),
    ] {
        if let Some(v) = v {
            q.push((name, v.clone()));
        }
    }
    if args.duplicates {
        q.push(("duplicates", "true".to_string()));
    }
    if !args.allocations {
        q.push(("steps", "true".to_string()));
    }
    Ok(q)
}

/// Every run the query matches, following the pages.
///
/// # Errors
/// The api's refusal (a bad filter names its parameter) or no answer.
pub async fn fetch_all(
    client: &Client,
    query: &[(&'static str, String)],
) -> anyhow::Result<Vec<AcctJob>> {
    let base: String = query
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect::<Vec<_>>()
        .join("&");
    let mut cursor: Option<String> = None;
    let mut jobs = Vec::new();
    loop {
        let mut path = format!("/v1/accounting/jobs?{base}");
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={}", enc(c)));
        }
        let page: AcctJobList = client.get_json(&path).await?;
        jobs.extend(page.items);
        match page.next_cursor {
            Some(c) if cursor.as_deref() != Some(c.as_str()) => cursor = Some(c),
            _ => return Ok(jobs),
        }
    }
}

/// Runs `berth acct`/`sacct`.
///
/// # Errors
/// A bad option (named), the api's refusal, or no answer.
pub async fn run(client: &Client, args: &AcctArgs) -> anyhow::Result<i32> {
    if args.helpformat {
        let names: Vec<&str> = FIELDS.iter().map(|f| f.name).collect();
        for chunk in names.chunks(4) {
            println!(
                "{}",
                chunk
                    .iter()
                    .map(|n| format!("{n:<20}"))
                    .collect::<String>()
                    .trim_end()
            );
        }
        return Ok(0);
    }
    let columns = parse_format(args.format.as_deref().unwrap_or(DEFAULT_FORMAT))
        .map_err(anyhow::Error::msg)?;
    crate::clusters::check(client, "sacct", args.clusters.as_deref(), None).await?;
    let q = query(args, Utc::now()).map_err(anyhow::Error::msg)?;
    let jobs = fetch_all(client, &q).await?;
    if args.json || args.yaml {
        crate::clusters::name(client).await?;
        let document = berth_api::slurmrestd::sacct_document(&jobs, "");
        crate::format::print_document(&document, args.yaml)?;
        return Ok(0);
    }
    let style = if args.parsable2 {
        Style::Parsable2
    } else if args.parsable {
        Style::Parsable
    } else {
        Style::Plain
    };
    print!(
        "{}",
        render(
            &columns,
            &rows(&jobs, args.allocations),
            style,
            !args.noheader
        )
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::accounting::Tres;
    use chrono::TimeZone;

    #[test]
    fn a_negative_width_left_justifies_as_slurms_sacct() {
        let columns = parse_format("State%-12,ExitCode%10").unwrap();
        assert_eq!((columns[0].width, columns[0].left), (12, true));
        assert_eq!((columns[1].width, columns[1].left), (10, false));
    }

    fn job() -> AcctJob {
        let t0 = Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap();
        AcctJob {
            job_id: 42,
            job_id_display: "42".into(),
            run: 0,
            name: "a-rather-long-name".into(),
            user: "alice".into(),
            account: "physics".into(),
            partition: "gpu".into(),
            qos: "normal".into(),
            state: "COMPLETED".into(),
            reason: None,
            requeue_reason: None,
            exit_code: Some(0),
            exit_signal: None,
            submit_time: t0,
            eligible_time: t0,
            start_time: Some(t0),
            end_time: Some(t0 + chrono::Duration::seconds(6)),
            elapsed: 6,
            time_limit: Some(3600),
            req_tres: Tres {
                billing: 2,
                cpu: 2,
                mem_mib: Some(4096),
                gpus: 1,
                gpu_models: Default::default(),
                nodes: 1,
            },
            alloc_tres: Tres {
                billing: 2,
                cpu: 2,
                mem_mib: Some(4096),
                gpus: 1,
                gpu_models: [("h100".to_string(), 1)].into(),
                nodes: 1,
            },
            nodelist: "n1".into(),
            restarts: 0,
            gpu_seconds: 6.0,
            gpu_util_avg: None,
            gpu_mem_peak_mib: None,
            energy_j: None,
            cpu_time_s: None,
            max_rss_mib: None,
            cost: None,
            steps: vec![AcctStep {
                step: "batch".into(),
                name: "batch".into(),
                state: "COMPLETED".into(),
                exit_code: Some(0),
                exit_signal: None,
                start_time: Some(t0),
                end_time: Some(t0 + chrono::Duration::seconds(6)),
                elapsed: 6,
                ntasks: 1,
                nodelist: "n1".into(),
                alloc_tres: Tres::default(),
            }],
        }
    }

    #[test]
    fn default_table_as_sacct_prints_it() {
        let j = job();
        let cols = parse_format(DEFAULT_FORMAT).unwrap();
        let out = render(
            &cols,
            &rows(std::slice::from_ref(&j), false),
            Style::Plain,
            true,
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "       JobID    JobName  Partition    Account  AllocCPUS      State ExitCode "
        );
        assert_eq!(
            lines[1],
            "------------ ---------- ---------- ---------- ---------- ---------- -------- "
        );
        assert_eq!(
            lines[2],
            "42           a-rather-+        gpu    physics          2  COMPLETED      0:0 "
        );
        assert_eq!(
            lines[3],
            "42.batch          batch               physics          0  COMPLETED      0:0 "
        );
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn parsable_with_widths_and_tres() {
        let j = job();
        let cols = parse_format("JobID,State,ExitCode,Elapsed,AllocTRES,jobname%30").unwrap();
        assert_eq!(cols[5].width, 30);
        let out = render(
            &cols,
            &rows(std::slice::from_ref(&j), true),
            Style::Parsable2,
            false,
        );
        assert_eq!(
            out,
            "42|COMPLETED|0:0|00:00:06|billing=2,cpu=2,gres/gpu=1,gres/gpu:h100=1,mem=4G,node=1|a-rather-long-name\n"
        );
        let out = render(
            &cols[..2],
            &rows(std::slice::from_ref(&j), true),
            Style::Parsable,
            true,
        );
        assert_eq!(out, "JobID|State|\n42|COMPLETED|\n");
    }

    #[test]
    fn bad_options_name_themselves() {
        assert!(parse_format("JobID,Bogus")
            .unwrap_err()
            .starts_with("-o/--format: unknown field \"Bogus\""));
        assert!(parse_format("JobID%x").unwrap_err().contains("bad width"));
        let now = Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap();
        let args = AcctArgs {
            starttime: Some("soon".into()),
            ..AcctArgs::default()
        };
        assert!(query(&args, now)
            .unwrap_err()
            .starts_with("-S/--starttime:"));
        let args = AcctArgs {
            state: Some("CD,ZZ".into()),
            ..AcctArgs::default()
        };
        assert!(query(&args, now).unwrap_err().starts_with("-s/--state:"));
    }

    #[test]
    fn default_window_is_today_unless_jobs_or_states() {
        let now = Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap();
        let q = query(&AcctArgs::default(), now).unwrap();
        assert!(q.contains(&("start", "2026-12-01T00:00:00+00:00".to_string())));
        assert!(q.contains(&("steps", "true".to_string())));
        let args = AcctArgs {
            jobs: Some("42".into()),
            allocations: true,
            ..AcctArgs::default()
        };
        let q = query(&args, now).unwrap();
        assert_eq!(q, vec![("job", "42".to_string())]);
    }
}
