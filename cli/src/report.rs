//! `berth report` and `sreport`: usage reports over `GET /v1/usage` and
//! `GET /v1/usage/cluster`, with sreport's syntax and layout:
//!
//! * `sreport cluster Utilization` — GPU time allocated, down, planned down (`PLND
//!   Down`), idle, planned (reserved) and reported;
//! * `sreport cluster AccountUtilizationByUser` — per account, then per user in it;
//! * `sreport user TopUsage [TopCount=N]` — the users with the most usage.
//!
//! Options, anywhere: `start=TIME end=TIME` (default yesterday 00:00 UTC, as sreport, to
//! now, where sreport stops at today 00:00), `Accounts=A,B`, `Users=U,V`, `-T/--tres gres/gpu[,cpu,mem,node,
//! billing]` (default `gres/gpu`: Berth's reports are about GPUs; the cluster report
//! knows only `gres/gpu`), `-t hours|minutes|seconds|percent` (default minutes; percent
//! for the cluster report), `-P/--parsable2`, `-p/--parsable`, `-n/--noheader`, and
//! Berth's own `--json` (the api's answer). Times are printed in UTC.

use crate::client::Client;
use anyhow::{bail, Context};
use berth_core::usage_report::{ClusterUsage, ClusterUsageRow, Tres, UsageReport};
use chrono::{DateTime, Duration, Utc};
use std::collections::BTreeMap;

/// Which report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    /// `cluster Utilization`.
    ClusterUtilization,
    /// `cluster AccountUtilizationByUser`.
    AccountUtilizationByUser,
    /// `user TopUsage`.
    UserTopUsage,
}

/// The unit of `-t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportUnit {
    /// `seconds`.
    Seconds,
    /// `minutes` (the default).
    Minutes,
    /// `hours`.
    Hours,
    /// `percent` (of reported time; cluster Utilization).
    Percent,
}

impl ReportUnit {
    fn api(self) -> &'static str {
        match self {
            ReportUnit::Seconds => "seconds",
            ReportUnit::Hours => "hours",
            ReportUnit::Minutes | ReportUnit::Percent => "minutes",
        }
    }

    fn banner(self) -> &'static str {
        match self {
            ReportUnit::Seconds => "Usage reported in TRES Seconds",
            ReportUnit::Minutes => "Usage reported in TRES Minutes",
            ReportUnit::Hours => "Usage reported in TRES Hours",
            ReportUnit::Percent => "Usage reported in Percentage of Total",
        }
    }
}

/// How rows are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Right-aligned columns under a dashed banner (sreport's default).
    Columns,
    /// `-P`: fields joined by `|`.
    Parsable2,
    /// `-p`: fields each followed by `|`.
    Parsable,
}

/// A parsed `sreport` command line.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportArgs {
    /// The report.
    pub kind: ReportKind,
    /// `-T`.
    pub tres: Vec<Tres>,
    /// `-t`.
    pub unit: ReportUnit,
    /// `-P`/`-p`.
    pub layout: Layout,
    /// `-n`.
    pub noheader: bool,
    /// `--json`.
    pub json: bool,
    /// `start=`.
    pub start: Option<String>,
    /// `end=`.
    pub end: Option<String>,
    /// `Accounts=`.
    pub accounts: Option<String>,
    /// `Users=`.
    pub users: Option<String>,
    /// `TopCount=` (default 10).
    pub top_count: usize,
}

fn unit(v: &str) -> anyhow::Result<ReportUnit> {
    let l = v.to_ascii_lowercase();
    Ok(match l.as_str() {
        "s" | "sec" | "secs" | "second" | "seconds" => ReportUnit::Seconds,
        "m" | "min" | "mins" | "minute" | "minutes" => ReportUnit::Minutes,
        "h" | "hour" | "hours" => ReportUnit::Hours,
        "p" | "per" | "percent" => ReportUnit::Percent,
        _ => bail!("-t/--time-format: {v:?} is not hours, minutes, seconds or percent"),
    })
}

/// Reads sreport's command line (the words after `sreport`).
///
/// # Errors
/// An unknown report or option, or a bad value, naming the option.
pub fn parse_args(args: &[String]) -> anyhow::Result<ReportArgs> {
    let mut words = Vec::new();
    let mut tres = None;
    let mut unit_v = ReportUnit::Minutes;
    let mut layout = Layout::Columns;
    let mut noheader = false;
    let mut json = false;
    let mut i = 0;
    let value = |i: &mut usize, name: &str| -> anyhow::Result<String> {
        *i += 1;
        args.get(*i)
            .cloned()
            .with_context(|| format!("{name} needs a value"))
    };
    while i < args.len() {
        // getopt_long's prefixes (`--noh`, `--pars=`…).
        let completed = crate::getopt::complete_long(
            &args[i],
            &[
                "tres",
                "time-format",
                "parsable2",
                "parsable",
                "noheader",
                "json",
            ],
        )
        .transpose()
        .map_err(|e| anyhow::anyhow!("sreport: {e}"))?;
        let a = completed.as_ref().unwrap_or(&args[i]);
        match a.as_str() {
            "-T" | "--tres" => tres = Some(value(&mut i, "-T/--tres")?),
            "-t" | "--time-format" => unit_v = unit(&value(&mut i, "-t")?)?,
            "-P" | "--parsable2" => layout = Layout::Parsable2,
            "-p" | "--parsable" => layout = Layout::Parsable,
            "-n" | "--noheader" => noheader = true,
            "--json" => json = true,
            _ if a.starts_with("--tres=") => tres = Some(a["--tres=".len()..].to_string()),
            _ if a.starts_with("--time-format=") => unit_v = unit(&a["--time-format=".len()..])?,
            _ if a.starts_with("-T") && a.len() > 2 => tres = Some(a[2..].to_string()),
            _ if a.starts_with("-t") && a.len() > 2 => unit_v = unit(&a[2..])?,
            _ if a.starts_with('-') => bail!("sreport: unknown option {a}"),
            _ => words.push(a.clone()),
        }
        i += 1;
    }
    let mut rest = Vec::new();
    let mut names = Vec::new();
    for w in words {
        if w.contains('=') {
            rest.push(w);
        } else {
            names.push(w.to_ascii_lowercase());
        }
    }
    let kind = match names.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["cluster", r] if "utilization".starts_with(r) && r.len() >= 4 => {
            ReportKind::ClusterUtilization
        }
        ["cluster", "accountutilizationbyuser"] => ReportKind::AccountUtilizationByUser,
        ["user", "topusage"] => ReportKind::UserTopUsage,
        _ => bail!(
            "sreport: name a report: cluster Utilization, cluster AccountUtilizationByUser or user TopUsage"
        ),
    };
    let mut out = ReportArgs {
        kind,
        tres: Vec::new(),
        unit: unit_v,
        layout,
        noheader,
        json,
        start: None,
        end: None,
        accounts: None,
        users: None,
        top_count: 10,
    };
    for w in rest {
        let (k, v) = w.split_once('=').unwrap_or((&w, ""));
        match k.to_ascii_lowercase().as_str() {
            "start" => out.start = Some(v.to_string()),
            "end" => out.end = Some(v.to_string()),
            "accounts" | "account" => out.accounts = Some(v.to_string()),
            "users" | "user" => out.users = Some(v.to_string()),
            "topcount" => {
                out.top_count = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .with_context(|| format!("TopCount={v}: not a positive number"))?
            }
            _ => bail!("sreport: unknown option {k}="),
        }
    }
    out.tres = Tres::parse_list(tres.as_deref().unwrap_or("gres/gpu"))
        .map_err(|e| anyhow::anyhow!("-T/--tres: {e}"))?;
    if out.kind == ReportKind::ClusterUtilization && out.tres != [Tres::Gpu] {
        bail!("-T/--tres: cluster Utilization is measured for gres/gpu only");
    }
    if out.unit == ReportUnit::Percent && out.kind != ReportKind::ClusterUtilization {
        bail!("-t percent: only cluster Utilization reports percentages");
    }
    Ok(out)
}

fn encode(v: &str) -> String {
    percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn query(pairs: &[(&str, Option<&str>)]) -> String {
    pairs
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", encode(v))))
        .collect::<Vec<_>>()
        .join("&")
}

/// `sreport --help` (also `-h`, `help`): the reports and options Berth's sreport runs.
pub const HELP: &str = "\
Usage: sreport [OPTIONS] REPORT [OPTIONS...]

Options:
  -n, --noheader          no header lines
  -p, --parsable          fields separated by '|', with a trailing one
  -P, --parsable2         fields separated by '|', no trailing one
  -t, --time-format=UNIT  Minutes, Hours, Seconds, Percent (or their first letter)
  -T, --tres=LIST         cpu, mem, gres/gpu, billing, node (comma-separated; ALL)
      --json              the report as JSON
  -h, --help              show this help message
      --usage             display a brief usage message

Reports:
  cluster Utilization [start=TIME] [end=TIME]
  cluster AccountUtilizationByUser [start=TIME] [end=TIME] [accounts=LIST] [users=LIST]
  user TopUsage [start=TIME] [end=TIME] [accounts=LIST] [users=LIST] [TopCount=N]
";

/// Runs `sreport …`: fetches the report and prints it. Returns the exit status.
///
/// # Errors
/// Bad arguments (naming the option), or the api's refusal.
pub async fn run(
    args: &[String],
    client: impl FnOnce() -> anyhow::Result<Client>,
) -> anyhow::Result<i32> {
    if matches!(
        args.first().map(String::as_str),
        Some("-h" | "--help" | "help")
    ) {
        print!("{HELP}");
        return Ok(0);
    }
    let a = parse_args(args)?;
    let client = client()?;
    // The reports' Cluster column.
    crate::clusters::name(&client).await?;
    let tres = a
        .tres
        .iter()
        .map(|t| t.name())
        .collect::<Vec<_>>()
        .join(",");
    let out = match a.kind {
        ReportKind::ClusterUtilization => {
            let q = query(&[
                ("start", a.start.as_deref()),
                ("end", a.end.as_deref()),
                ("unit", Some(a.unit.api())),
            ]);
            let r: ClusterUsage = client.get_json(&format!("/v1/usage/cluster?{q}")).await?;
            if a.json {
                serde_json::to_string_pretty(&r)? + "\n"
            } else {
                format_cluster(&r, &a)
            }
        }
        ReportKind::AccountUtilizationByUser | ReportKind::UserTopUsage => {
            let q = query(&[
                ("start", a.start.as_deref()),
                ("end", a.end.as_deref()),
                ("unit", Some(a.unit.api())),
                ("tres", Some(&tres)),
                ("group_by", Some("account,user")),
                ("accounts", a.accounts.as_deref()),
                ("users", a.users.as_deref()),
            ]);
            let r: UsageReport = client.get_json(&format!("/v1/usage?{q}")).await?;
            if a.json {
                serde_json::to_string_pretty(&r)? + "\n"
            } else if a.kind == ReportKind::UserTopUsage {
                format_top_users(&r, &a)
            } else {
                format_account_users(&r, &a)
            }
        }
    };
    print!("{out}");
    Ok(0)
}

fn period(start: DateTime<Utc>, end: DateTime<Utc>) -> String {
    format!(
        "{} - {}",
        start.format("%Y-%m-%dT%H:%M:%S"),
        (end - Duration::seconds(1)).format("%Y-%m-%dT%H:%M:%S")
    )
}

/// Prints a table: the dashed banner (`title`, the unit line) and the column header
/// unless `-n` or parsable, then the rows, right-aligned to `widths` (sreport's
/// layout: each field followed by a space; headers cut to their width), or joined by
/// `|` when parsable.
fn table(a: &ReportArgs, title: &str, columns: &[(&str, usize)], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let line = |fields: &[String]| -> String {
        match a.layout {
            Layout::Columns => {
                let mut s = String::new();
                for (f, (_, w)) in fields.iter().zip(columns) {
                    let f: String = f.chars().take(*w).collect();
                    s.push_str(&format!("{f:>w$} ", w = *w));
                }
                s.trim_end().to_string() + "\n"
            }
            Layout::Parsable2 => fields.join("|") + "\n",
            Layout::Parsable => fields.iter().map(|f| format!("{f}|")).collect::<String>() + "\n",
        }
    };
    if !a.noheader {
        if a.layout == Layout::Columns {
            let dashes = "-".repeat(80);
            out.push_str(&format!(
                "{dashes}\n{title}\n{}\n{dashes}\n",
                a.unit.banner()
            ));
        }
        out.push_str(&line(
            &columns
                .iter()
                .map(|(h, _)| h.to_string())
                .collect::<Vec<_>>(),
        ));
        if a.layout == Layout::Columns {
            out.push_str(&line(
                &columns
                    .iter()
                    .map(|(_, w)| "-".repeat(*w))
                    .collect::<Vec<_>>(),
            ));
        }
    }
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

fn number(v: f64) -> String {
    format!("{}", v.round() as i64)
}

/// `cluster Utilization`'s table.
pub fn format_cluster(r: &ClusterUsage, a: &ReportArgs) -> String {
    let t: &ClusterUsageRow = &r.total;
    let value = |v: f64| -> String {
        if a.unit == ReportUnit::Percent {
            if t.reported > 0.0 {
                format!("{:.2}%", v * 100.0 / t.reported)
            } else {
                "0.00%".to_string()
            }
        } else {
            number(v)
        }
    };
    let columns = [
        ("Cluster", 9),
        ("TRES Name", 14),
        ("Allocated", 12),
        ("Down", 10),
        ("PLND Down", 10),
        ("Idle", 12),
        ("Planned", 10),
        ("Reported", 12),
    ];
    let row = vec![
        berth_api::cluster_name::get().to_string(),
        r.tres.clone(),
        value(t.allocated),
        value(t.down),
        value(t.planned_down),
        value(t.idle),
        value(t.reserved),
        value(t.reported),
    ];
    table(
        a,
        &format!("Cluster Utilization {}", period(r.start, r.end)),
        &columns,
        &[row],
    )
}

fn secs(r: &UsageReport) -> i64 {
    (r.end - r.start).num_seconds()
}

/// `cluster AccountUtilizationByUser`'s table: the cluster's total as `root`, then each
/// account, followed by its users; one line per TRES.
pub fn format_account_users(r: &UsageReport, a: &ReportArgs) -> String {
    let columns = [
        ("Cluster", 9),
        ("Account", 15),
        ("Login", 9),
        ("Proper Name", 15),
        ("TRES Name", 14),
        ("Used", 10),
    ];
    // account → (account total per TRES, user → per TRES)
    type PerTres = BTreeMap<String, f64>;
    let mut accounts: BTreeMap<String, (PerTres, BTreeMap<String, PerTres>)> = BTreeMap::new();
    for row in &r.rows {
        let acct = row.account.clone().unwrap_or_default();
        let user = row.user.clone().unwrap_or_default();
        let entry = accounts.entry(acct).or_default();
        for (t, v) in &row.tres {
            *entry.0.entry(t.clone()).or_default() += v;
            *entry
                .1
                .entry(user.clone())
                .or_default()
                .entry(t.clone())
                .or_default() += v;
        }
    }
    let mut rows = Vec::new();
    let mut push = |acct: &str, user: &str, per: &PerTres| {
        for t in &r.tres {
            rows.push(vec![
                berth_api::cluster_name::get().to_string(),
                acct.to_string(),
                user.to_string(),
                user.to_string(),
                t.clone(),
                number(per.get(t).copied().unwrap_or(0.0)),
            ]);
        }
    };
    if !accounts.contains_key("root") {
        push("root", "", &r.total);
    }
    for (acct, (total, users)) in &accounts {
        push(acct, "", total);
        for (user, per) in users {
            push(acct, user, per);
        }
    }
    table(
        a,
        &format!(
            "Cluster/Account/User Utilization {} ({} secs)",
            period(r.start, r.end),
            secs(r)
        ),
        &columns,
        &rows,
    )
}

/// `user TopUsage`'s table: the `TopCount` users with the most usage of the first TRES,
/// most first, with the accounts they used; one line per TRES.
pub fn format_top_users(r: &UsageReport, a: &ReportArgs) -> String {
    let columns = [
        ("Cluster", 9),
        ("Login", 9),
        ("Proper Name", 15),
        ("Account", 15),
        ("TRES Name", 14),
        ("Used", 10),
    ];
    let mut users: BTreeMap<String, (Vec<String>, BTreeMap<String, f64>)> = BTreeMap::new();
    for row in &r.rows {
        let entry = users
            .entry(row.user.clone().unwrap_or_default())
            .or_default();
        if let Some(acct) = &row.account {
            if !entry.0.contains(acct) {
                entry.0.push(acct.clone());
            }
        }
        for (t, v) in &row.tres {
            *entry.1.entry(t.clone()).or_default() += v;
        }
    }
    let first = r.tres.first().cloned().unwrap_or_default();
    let mut ranked: Vec<_> = users.into_iter().collect();
    ranked.sort_by(|x, y| {
        let vx = x.1 .1.get(&first).copied().unwrap_or(0.0);
        let vy = y.1 .1.get(&first).copied().unwrap_or(0.0);
        vy.total_cmp(&vx).then_with(|| x.0.cmp(&y.0))
    });
    let mut rows = Vec::new();
    for (user, (accts, per)) in ranked.into_iter().take(a.top_count) {
        for t in &r.tres {
            rows.push(vec![
                berth_api::cluster_name::get().to_string(),
                user.clone(),
                user.clone(),
                accts.join(","),
                t.clone(),
                number(per.get(t).copied().unwrap_or(0.0)),
            ]);
        }
    }
    table(
        a,
        &format!(
            "Top {} Users {} ({} secs)",
            a.top_count,
            period(r.start, r.end),
            secs(r)
        ),
        &columns,
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::usage_report::UsageReportRow;
    use chrono::TimeZone;

    fn args(s: &str) -> ReportArgs {
        parse_args(&s.split_whitespace().map(str::to_string).collect::<Vec<_>>()).unwrap()
    }

    fn cluster() -> ClusterUsage {
        ClusterUsage {
            start: Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap(),
            end: Utc.with_ymd_and_hms(2026, 12, 1, 16, 0, 0).unwrap(),
            unit: "minutes".into(),
            tres: "gres/gpu".into(),
            rows: Vec::new(),
            total: ClusterUsageRow {
                gpu_model: None,
                allocated: 120.0,
                down: 60.0,
                planned_down: 0.0,
                reserved: 20.0,
                idle: 760.0,
                reported: 960.0,
                samples: 960,
            },
        }
    }

    #[test]
    fn sreport_options_read_like_slurm() {
        let a =
            args("cluster Utilization start=2026-12-01T00:00 end=now -T gres/gpu -t hours -P -n");
        assert_eq!(a.kind, ReportKind::ClusterUtilization);
        assert_eq!(a.start.as_deref(), Some("2026-12-01T00:00"));
        assert_eq!(a.end.as_deref(), Some("now"));
        assert_eq!(
            (a.unit, a.layout, a.noheader),
            (ReportUnit::Hours, Layout::Parsable2, true)
        );
        let b = args("user topusage TopCount=3 --tres=gres/gpu,cpu -thours");
        assert_eq!(b.kind, ReportKind::UserTopUsage);
        assert_eq!(b.top_count, 3);
        assert_eq!(b.tres, vec![Tres::Gpu, Tres::Cpu]);
        assert_eq!(b.unit, ReportUnit::Hours);
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        // percent is only for the cluster report here; the error names the option.
        assert!(parse_args(&words("user topusage -t percent"))
            .unwrap_err()
            .to_string()
            .contains("-t"));
        assert!(parse_args(&words("cluster Utilization -T cpu"))
            .unwrap_err()
            .to_string()
            .contains("-T"));
        assert!(parse_args(&words("cluster Utilization -t days"))
            .unwrap_err()
            .to_string()
            .contains("-t"));
        assert!(parse_args(&words("job SizesByAccount")).is_err());
        assert!(parse_args(&words("cluster util Format=x"))
            .unwrap_err()
            .to_string()
            .contains("Format"));
    }

    #[test]
    fn cluster_utilization_prints_slurms_banner_and_columns() {
        let out = format_cluster(&cluster(), &args("cluster Utilization"));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "-".repeat(80));
        assert_eq!(
            lines[1],
            "Cluster Utilization 2026-12-01T00:00:00 - 2026-12-01T15:59:59"
        );
        assert_eq!(lines[2], "Usage reported in TRES Minutes");
        assert_eq!(lines[3], "-".repeat(80));
        let header: Vec<&str> = lines[4].split_whitespace().collect();
        assert_eq!(
            header,
            [
                "Cluster",
                "TRES",
                "Name",
                "Allocated",
                "Down",
                "PLND",
                "Down",
                "Idle",
                "Planned",
                "Reported"
            ]
        );
        assert!(lines[5].starts_with("--------- --------------"));
        let values: Vec<&str> = lines[6].split_whitespace().collect();
        assert_eq!(
            values,
            ["berth", "gres/gpu", "120", "60", "0", "760", "20", "960"]
        );
        let p = format_cluster(&cluster(), &args("cluster Utilization -P -t percent"));
        assert_eq!(
            p,
            "Cluster|TRES Name|Allocated|Down|PLND Down|Idle|Planned|Reported\n\
             berth|gres/gpu|12.50%|6.25%|0.00%|79.17%|2.08%|100.00%\n"
        );
        let n = format_cluster(&cluster(), &args("cluster Utilization -p -n"));
        assert_eq!(n, "berth|gres/gpu|120|60|0|760|20|960|\n");
    }

    #[test]
    fn account_and_user_reports_list_accounts_then_their_users() {
        let row = |acct: &str, user: &str, gpu: f64| UsageReportRow {
            account: Some(acct.into()),
            user: Some(user.into()),
            partition: None,
            qos: None,
            gpu_model: None,
            tres: [("gres/gpu".to_string(), gpu)].into_iter().collect(),
            jobs: 1,
        };
        let r = UsageReport {
            start: Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap(),
            end: Utc.with_ymd_and_hms(2026, 12, 2, 0, 0, 0).unwrap(),
            unit: "minutes".into(),
            tres: vec!["gres/gpu".into()],
            group_by: vec!["account".into(), "user".into()],
            rows: vec![
                row("physics", "ann", 30.0),
                row("physics", "bob", 90.0),
                row("bio", "ann", 10.0),
            ],
            total: [("gres/gpu".to_string(), 130.0)].into_iter().collect(),
        };
        let out = format_account_users(&r, &args("cluster AccountUtilizationByUser -P"));
        assert_eq!(
            out,
            "Cluster|Account|Login|Proper Name|TRES Name|Used\n\
             berth|root|||gres/gpu|130\n\
             berth|bio|||gres/gpu|10\n\
             berth|bio|ann|ann|gres/gpu|10\n\
             berth|physics|||gres/gpu|120\n\
             berth|physics|ann|ann|gres/gpu|30\n\
             berth|physics|bob|bob|gres/gpu|90\n"
        );
        let banner = format_account_users(&r, &args("cluster AccountUtilizationByUser"));
        assert!(banner.contains(
            "Cluster/Account/User Utilization 2026-12-01T00:00:00 - 2026-12-01T23:59:59 (86400 secs)"
        ));
        let top = format_top_users(&r, &args("user TopUsage TopCount=1 -P -n"));
        assert_eq!(top, "berth|bob|bob|physics|gres/gpu|90\n");
        let top2 = format_top_users(&r, &args("user TopUsage -P -n"));
        assert_eq!(
            top2,
            "berth|bob|bob|physics|gres/gpu|90\nberth|ann|ann|physics,bio|gres/gpu|40\n"
        );
    }
}
