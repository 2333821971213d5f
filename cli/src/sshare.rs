//! `sshare` (`berth share`): fairshare of the associations, from `GET /v1/fairshare`, in
//! sshare's layout: `Account User RawShares NormShares RawUsage EffectvUsage FairShare`
//! (`-l` adds `NormUsage`) under a `---` line, `-p`/`-P` `|`-separated, `-n` no header,
//! `-o` Slurm's field names (`Name%WIDTH`).
//!
//! `--json`/`--yaml` print Slurm's `sshare --json` document instead: slurmrestd's
//! `GET /slurm/v0.0.44/shares` answer for the same selection ([`shares_path`]), the
//! association tree with `ASSOCIATION` rows for the accounts and `USER` rows (`-U`: the
//! `USER` rows only).
//!
//! Rows: your own associations (and the accounts' rows) by default, every user's with
//! `-a`, those of `-u USERS` / `-A ACCOUNTS`; `-U` users' rows only. Berth keeps
//! normalized shares, not raw ones: `RawShares` is blank. `EffectvUsage` and `NormUsage`
//! are both Berth's decayed usage over the cluster's (the classic algorithm's effective
//! usage).

use crate::acct::{print_fields, Style};
use crate::client::Client;
use berth_core::priority::FairshareRow;

/// sshare's options (Slurm's names; `-h` is help, `-n` leaves the header out).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SshareArgs {
    /// Every user's associations (default: your own).
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Only these accounts (comma-separated).
    #[arg(short = 'A', long = "accounts")]
    pub accounts: Option<String>,
    /// Only these users (comma-separated).
    #[arg(short = 'u', long = "users")]
    pub users: Option<String>,
    /// Users' rows only, no account rows.
    #[arg(short = 'U', long = "Users")]
    pub users_only: bool,
    /// The long listing (adds NormUsage).
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// No header.
    #[arg(short = 'n', long = "noheader")]
    pub noheader: bool,
    /// `|` after every field.
    #[arg(short = 'p', long = "parsable")]
    pub parsable: bool,
    /// `|` between fields.
    #[arg(short = 'P', long = "parsable2")]
    pub parsable2: bool,
    /// Fields (comma-separated Slurm names, `Name%WIDTH`).
    #[arg(short = 'o', long = "format")]
    pub format: Option<String>,
    /// List the fields -o knows.
    #[arg(short = 'e', long = "helpformat")]
    pub helpformat: bool,
    /// Accepted; Berth prints nothing more.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Print Slurm's `sshare --json` document (data parser v0.0.44,
    /// `v0.0.44_openapi_shares_resp`, as slurmrestd's `GET /slurm/v0.0.44/shares`) of the
    /// rows the other options select.
    #[arg(long, conflicts_with = "yaml")]
    pub json: bool,
    /// Refused: fairshare per partition.
    #[arg(short = 'm', long = "partition")]
    pub partition: bool,
    /// Refused: other clusters.
    #[arg(short = 'M', long = "clusters", value_name = "CLUSTERS")]
    pub clusters: Option<String>,
    /// The same document as YAML (`sshare --yaml`).
    #[arg(long)]
    pub yaml: bool,
}

/// sshare's fields Berth fills: name, width, left-aligned.
const FIELDS: &[(&str, usize, bool)] = &[
    ("Account", 20, true),
    ("User", 10, false),
    ("RawShares", 10, false),
    ("NormShares", 11, false),
    ("RawUsage", 11, false),
    ("NormUsage", 11, false),
    ("EffectvUsage", 13, false),
    ("FairShare", 10, false),
];

const DEFAULT: &str = "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare";
const LONG: &str = "Account,User,RawShares,NormShares,RawUsage,NormUsage,EffectvUsage,FairShare";

impl SshareArgs {
    /// The first option given that Berth refuses, as a message naming it.
    pub fn refused(&self) -> Option<String> {
        let r = |o: &str, why: &str| Some(crate::scancel::refusal("sshare", o, why));
        if self.partition {
            return r(
                "-m/--partition",
                "fairshare is kept per association, not partition",
            );
        }
        if self.clusters.is_some() {
            return r("-M/--clusters", "one api serves one cluster");
        }
        None
    }
}

/// Reads `-o Name[%WIDTH],…` against `FIELDS`.
///
/// # Errors
/// An unknown field or a bad width, named.
pub fn parse_fields(
    option: &str,
    spec: &str,
    fields: &[(&'static str, usize, bool)],
) -> Result<Vec<(&'static str, usize, bool)>, String> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (name, width) = item.split_once('%').unwrap_or((item, ""));
            let f = fields
                .iter()
                .find(|f| f.0.eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    let names: Vec<&str> = fields.iter().map(|f| f.0).collect();
                    format!(
                        "{option}: {name:?} is not a field Berth shows ({})",
                        names.join(",")
                    )
                })?;
            let width = if width.is_empty() {
                f.1
            } else {
                width
                    .trim_start_matches('-')
                    .parse::<usize>()
                    .ok()
                    .filter(|w| (1..=1000).contains(w))
                    .ok_or_else(|| format!("{option}: bad width in {item:?}"))?
            };
            Ok((f.0, width, f.2))
        })
        .collect()
}

fn value(name: &str, row: &FairshareRow) -> String {
    match name {
        "Account" => row.account.clone(),
        "User" => row.user.clone(),
        "RawShares" => String::new(),
        "NormShares" => format!("{:.6}", row.norm_shares),
        "RawUsage" => format!("{:.0}", row.raw_usage),
        "NormUsage" | "EffectvUsage" => format!("{:.6}", row.norm_usage),
        "FairShare" => format!("{:.6}", row.fairshare),
        _ => String::new(),
    }
}

/// The rows `args` selects of `rows`, for the caller `me`.
pub fn select<'a>(args: &SshareArgs, rows: &'a [FairshareRow], me: &str) -> Vec<&'a FairshareRow> {
    let list = |l: &Option<String>| -> Option<Vec<String>> {
        l.as_ref()
            .map(|s| s.split(',').map(|x| x.trim().to_string()).collect())
    };
    let users = list(&args.users);
    let accounts = list(&args.accounts);
    rows.iter()
        .filter(|r| {
            let user_ok = match &users {
                Some(u) => r.user.is_empty() || u.contains(&r.user),
                None => args.all || r.user.is_empty() || r.user == me,
            };
            user_ok
                && accounts.as_ref().is_none_or(|a| a.contains(&r.account))
                && (!args.users_only || !r.user.is_empty())
        })
        .collect()
}

/// The slurmrestd `shares` query of sshare's selection, for the caller `me`: `-u`'s
/// users, else `me` unless `-a` (as Slurm's sshare asks for the caller's rows only);
/// `-A`'s accounts. Account rows pass the users filter (Slurm's association tree).
pub fn shares_path(args: &SshareArgs, me: &str) -> String {
    use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
    let mut query = Vec::new();
    let users = match (&args.users, args.all) {
        (Some(u), _) => Some(u.as_str()),
        (None, false) => Some(me),
        (None, true) => None,
    };
    if let Some(users) = users.filter(|u| !u.is_empty()) {
        query.push(format!(
            "users={}",
            utf8_percent_encode(users, NON_ALPHANUMERIC)
        ));
    }
    if let Some(accounts) = args.accounts.as_deref().filter(|a| !a.is_empty()) {
        query.push(format!(
            "accounts={}",
            utf8_percent_encode(accounts, NON_ALPHANUMERIC)
        ));
    }
    let path = format!("/slurm/{}/shares", berth_api::slurmrestd::VERSION);
    if query.is_empty() {
        path
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

/// `sshare ARGS`.
///
/// # Errors
/// An option Berth refuses, a bad `-o`, or the api's refusal.
pub async fn run(client: &Client, args: &SshareArgs) -> anyhow::Result<i32> {
    if let Some(message) = args.refused() {
        anyhow::bail!(message);
    }
    if args.helpformat {
        print!("{}", crate::acct::help_format(FIELDS));
        return Ok(0);
    }
    let spec = args
        .format
        .as_deref()
        .unwrap_or(if args.long { LONG } else { DEFAULT });
    let columns = parse_fields("-o/--format", spec, FIELDS).map_err(anyhow::Error::msg)?;
    let who: serde_json::Value = client.get_json("/v1/whoami").await?;
    let me = who["user"].as_str().unwrap_or_default();
    if args.json || args.yaml {
        let mut document: serde_json::Value = client.get_json(&shares_path(args, me)).await?;
        if args.users_only {
            if let Some(rows) = document["shares"]["shares"].as_array_mut() {
                rows.retain(|r| r["type"][0] == "USER");
            }
        }
        crate::format::print_document(&document, args.yaml)?;
        return Ok(0);
    }
    let list = client.fairshare_list().await?;
    let rows: Vec<Vec<String>> = select(args, &list.associations, me)
        .into_iter()
        .map(|r| columns.iter().map(|c| value(c.0, r)).collect())
        .collect();
    let style = Style::from_flags(args.parsable, args.parsable2);
    print!("{}", print_fields(&columns, &rows, style, !args.noheader));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(account: &str, user: &str) -> FairshareRow {
        FairshareRow {
            account: account.into(),
            user: user.into(),
            norm_shares: 0.5,
            raw_usage: 3600.0,
            norm_usage: 0.25,
            fairshare: 0.75,
        }
    }

    #[test]
    fn default_layout_is_sshares() {
        let rows = [row("ml", ""), row("ml", "bob"), row("ml", "eve")];
        let args = SshareArgs::default();
        let cols = parse_fields("-o", DEFAULT, FIELDS).unwrap();
        let cells: Vec<Vec<String>> = select(&args, &rows, "bob")
            .into_iter()
            .map(|r| cols.iter().map(|c| value(c.0, r)).collect())
            .collect();
        let text = print_fields(&cols, &cells, Style::Plain, true);
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            vec![
                "             Account       User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare ",
                "-------------------- ---------- ---------- ----------- ----------- ------------- ---------- ",
                "ml                                            0.500000        3600      0.250000   0.750000 ",
                "ml                          bob               0.500000        3600      0.250000   0.750000 ",
            ]
        );
        let all = SshareArgs {
            all: true,
            users_only: true,
            ..Default::default()
        };
        assert_eq!(select(&all, &rows, "bob").len(), 2);
        let eve = SshareArgs {
            users: Some("eve".into()),
            accounts: Some("ml".into()),
            ..Default::default()
        };
        let users: Vec<&str> = select(&eve, &rows, "bob")
            .iter()
            .map(|r| r.user.as_str())
            .collect();
        assert_eq!(users, ["", "eve"]);
        assert_eq!(
            shares_path(&SshareArgs::default(), "bob"),
            "/slurm/v0.0.44/shares?users=bob"
        );
        assert_eq!(
            shares_path(
                &SshareArgs {
                    all: true,
                    accounts: Some("ml,hep".into()),
                    ..Default::default()
                },
                "bob"
            ),
            "/slurm/v0.0.44/shares?accounts=ml%2Chep"
        );
        let err = parse_fields("-o/--format", "Account,LevelFS", FIELDS).unwrap_err();
        assert!(err.contains("\"LevelFS\""), "{err}");
    }
}
