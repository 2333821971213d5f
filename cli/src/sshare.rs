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
//! The text listing reads the same document: the association tree in Slurm's order, an
//! account's row (its name indented one space per level below `root`, `User` blank) before
//! its users' rows (the account's name one level deeper, then the user) and its
//! sub-accounts. Rows: your own associations and the accounts above them by default,
//! every user's with `-a`, those of `-u USERS` / `-A ACCOUNTS`; `-U` users' rows only.
//! `RawShares` is an account's shares in its parent (blank for `root` and for users: Berth
//! keeps a user's normalized share only); `FairShare` is blank on account rows, as Slurm
//! prints it. `EffectvUsage` and `NormUsage` are both Berth's decayed usage over the
//! cluster's (the classic algorithm's effective usage).

use crate::acct::{print_fields, Style};
use crate::client::Client;
use serde_json::Value;

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

/// One line of sshare's listing, read from a slurmrestd `shares` row.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareLine {
    /// The account, indented one space per level below `root`.
    pub account: String,
    /// The user; empty on an account's row.
    pub user: String,
    /// An account's shares in its parent; `None` for `root` and users.
    pub raw_shares: Option<i64>,
    /// Normalized shares, 0..=1.
    pub norm_shares: f64,
    /// Decayed usage (billing-seconds).
    pub raw_usage: i64,
    /// Normalized (and effective) usage, 0..=1.
    pub norm_usage: f64,
    /// The fairshare factor (users' rows only).
    pub fairshare: Option<f64>,
}

/// The lines of a slurmrestd `shares` document (`v0.0.44_openapi_shares_resp`), in its
/// order (the association tree's, an account before its users and sub-accounts), with
/// accounts indented by their depth below `root`; `users_only` keeps the users' rows.
pub fn share_lines(document: &Value, users_only: bool) -> Vec<ShareLine> {
    let rows = document["shares"]["shares"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let number = |v: &Value| v.as_f64().unwrap_or(0.0);
    let float = |v: &Value| {
        if v["set"].as_bool().unwrap_or(false) {
            v["number"].as_f64().unwrap_or(0.0)
        } else {
            0.0
        }
    };
    // An account's depth below root, from the rows' own parents.
    let mut depth: std::collections::HashMap<&str, usize> = Default::default();
    let mut lines = Vec::new();
    for row in rows {
        let name = row["name"].as_str().unwrap_or_default();
        let parent = row["parent"].as_str().unwrap_or_default();
        let is_user = row["type"][0] == "USER";
        let level = if parent.is_empty() {
            0
        } else {
            depth.get(parent).map_or(1, |d| d + 1)
        };
        if !is_user {
            depth.insert(name, level);
        }
        if users_only && !is_user {
            continue;
        }
        let account = if is_user { parent } else { name };
        lines.push(ShareLine {
            account: format!("{}{account}", " ".repeat(level)),
            user: if is_user {
                name.to_string()
            } else {
                String::new()
            },
            raw_shares: (!is_user && !parent.is_empty())
                .then(|| row["shares"]["number"].as_i64())
                .flatten(),
            norm_shares: float(&row["shares_normalized"]),
            raw_usage: row["usage"].as_i64().unwrap_or(0),
            norm_usage: float(&row["usage_normalized"]),
            fairshare: is_user.then(|| number(&row["fairshare"]["factor"]["number"])),
        });
    }
    lines
}

fn value(name: &str, line: &ShareLine) -> String {
    match name {
        "Account" => line.account.clone(),
        "User" => line.user.clone(),
        "RawShares" => line.raw_shares.map(|n| n.to_string()).unwrap_or_default(),
        "NormShares" => format!("{:.6}", line.norm_shares),
        "RawUsage" => line.raw_usage.to_string(),
        "NormUsage" | "EffectvUsage" => format!("{:.6}", line.norm_usage),
        "FairShare" => line
            .fairshare
            .map(|f| format!("{f:.6}"))
            .unwrap_or_default(),
        _ => String::new(),
    }
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
    let who: Value = client.get_json("/v1/whoami").await?;
    let me = who["user"].as_str().unwrap_or_default();
    let mut document: Value = client.get_json(&shares_path(args, me)).await?;
    if args.json || args.yaml {
        if args.users_only {
            if let Some(rows) = document["shares"]["shares"].as_array_mut() {
                rows.retain(|r| r["type"][0] == "USER");
            }
        }
        crate::format::print_document(&document, args.yaml)?;
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = share_lines(&document, args.users_only)
        .iter()
        .map(|line| columns.iter().map(|c| value(c.0, line)).collect())
        .collect();
    let style = Style::from_flags(args.parsable, args.parsable2);
    print!("{}", print_fields(&columns, &rows, style, !args.noheader));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slurmrestd shares row.
    fn row(kind: &str, name: &str, parent: &str, shares: Option<i64>) -> Value {
        let f = |x: f64| serde_json::json!({"set": true, "infinite": false, "number": x});
        serde_json::json!({
            "name": name, "parent": parent, "type": [kind],
            "shares": match shares {
                Some(n) => serde_json::json!({"set": true, "infinite": false, "number": n}),
                None => serde_json::json!({"set": false, "infinite": false, "number": 0}),
            },
            "shares_normalized": f(0.5), "usage": 3600, "usage_normalized": f(0.25),
            "effective_usage": f(0.25), "fairshare": {"factor": f(0.75), "level": f(0.75)},
        })
    }

    #[test]
    fn default_layout_is_sshares_tree() {
        let document = serde_json::json!({"shares": {"shares": [
            row("ASSOCIATION", "root", "", Some(1)),
            row("ASSOCIATION", "ml", "root", Some(40)),
            row("USER", "bob", "ml", None),
            row("ASSOCIATION", "vision", "ml", Some(2)),
            row("USER", "eve", "vision", None),
        ]}});
        let cols = parse_fields("-o", DEFAULT, FIELDS).unwrap();
        let cells = |users_only: bool| -> Vec<Vec<String>> {
            share_lines(&document, users_only)
                .iter()
                .map(|line| cols.iter().map(|c| value(c.0, line)).collect())
                .collect()
        };
        let text = print_fields(&cols, &cells(false), Style::Plain, true);
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            vec![
                "             Account       User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare ",
                "-------------------- ---------- ---------- ----------- ----------- ------------- ---------- ",
                "root                                          0.500000        3600      0.250000            ",
                " ml                                     40    0.500000        3600      0.250000            ",
                "  ml                        bob               0.500000        3600      0.250000   0.750000 ",
                "  vision                                 2    0.500000        3600      0.250000            ",
                "   vision                   eve               0.500000        3600      0.250000   0.750000 ",
            ]
        );
        let users: Vec<String> = cells(true).into_iter().map(|r| r[1].clone()).collect();
        assert_eq!(users, ["bob", "eve"]);
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
