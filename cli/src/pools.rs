//! Cloud node pools from the command line: `berth pools [NAME] [--json]`, `berth pool set
//! NAME --file pool.toml` and `berth pool delete NAME` (admins), `berth node power-up
//! NAME…` and `berth node power-down NAME… [--force]` (admins and operators; Slurm's
//! `scontrol update NodeName=… State=POWER_UP|POWER_DOWN|POWER_DOWN_FORCE`, which
//! `scontrol` maps here).

use crate::client::{Client, ClientError};
use anyhow::{bail, Context};
use berth_core::pool::{NodePower, Pool, PoolList, PoolSpec, PowerAction};
use berth_core::wire::Node;
use reqwest::Method;
use std::fmt::Write as _;
use std::path::Path;

impl Client {
    /// `GET /v1/pools`.
    pub async fn pool_list(&self) -> Result<PoolList, ClientError> {
        self.call(Method::GET, "/v1/pools", None).await
    }

    /// `GET /v1/pools/{name}`.
    pub async fn pool_get(&self, name: &str) -> Result<Pool, ClientError> {
        self.call(Method::GET, &format!("/v1/pools/{name}"), None)
            .await
    }

    /// `PUT /v1/pools/{name}`.
    pub async fn pool_put(&self, name: &str, spec: &PoolSpec) -> Result<Pool, ClientError> {
        let body = serde_json::to_value(spec).unwrap_or_default();
        self.call(Method::PUT, &format!("/v1/pools/{name}"), Some(&body))
            .await
    }

    /// `DELETE /v1/pools/{name}`.
    pub async fn pool_delete(&self, name: &str) -> Result<(), ClientError> {
        self.call_empty(Method::DELETE, &format!("/v1/pools/{name}"), None)
            .await
    }

    /// `POST /v1/nodes/{name}/power`.
    pub async fn node_power(&self, name: &str, action: PowerAction) -> Result<Node, ClientError> {
        let body = serde_json::to_value(NodePower { action }).unwrap_or_default();
        self.call(
            Method::POST,
            &format!("/v1/nodes/{name}/power"),
            Some(&body),
        )
        .await
    }
}

/// Columns left-aligned, the last one unpadded.
fn table(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |v| v.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, value) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(value);
            } else {
                let _ = write!(line, "{value:<w$} ", w = widths[i]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A pool's node states as `idle~:3,alloc:1` (sinfo's short names).
fn states_text(pool: &Pool) -> String {
    if pool.nodes_by_state.is_empty() {
        return "-".into();
    }
    pool.nodes_by_state
        .iter()
        .map(|(state, n)| {
            let short = state
                .parse::<berth_core::state::NodeState>()
                .map_or_else(|_| state.to_ascii_lowercase(), |s| s.short().to_string());
            format!("{short}:{n}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A duration in seconds as `5s`, `3m`, `2h10m`, `1d4h`.
pub fn age_text(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// `berth pools`' table: POOL PROVIDER NODES (active/max) STATES IN-FLIGHT SPEND/H
/// LAST-ERROR.
pub fn pools_table(pools: &[Pool]) -> String {
    let mut rows = vec![[
        "POOL",
        "PROVIDER",
        "NODES",
        "STATES",
        "IN-FLIGHT",
        "SPEND/H",
        "LAST-ERROR",
    ]
    .map(String::from)
    .to_vec()];
    for p in pools {
        let provider = serde_json::to_value(p.spec.provider)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        rows.push(vec![
            p.name.clone(),
            provider,
            format!("{}/{}", p.nodes_active, p.spec.max_nodes),
            states_text(p),
            p.launches_in_flight.to_string(),
            format!("{:.2}", p.hourly_spend),
            p.last_error
                .as_deref()
                .map_or_else(|| "-".into(), |e| berth_core::text::escape(e).into_owned()),
        ]);
    }
    table(&rows)
}

/// `berth pools NAME`: the summary line, cooldowns, its nodes (NAME STATE INSTANCE TYPE
/// MARKET AGE) and its latest events.
pub fn pool_detail(p: &Pool) -> String {
    let mut out = pools_table(std::slice::from_ref(p));
    if let Some(b) = p.backoff_until {
        let _ = writeln!(out, "\nBacked off until {}", b.format("%Y-%m-%dT%H:%M:%S"));
    }
    if !p.cooldowns.is_empty() {
        out.push_str("\nCooldowns:\n");
        let mut rows = vec![["TYPE", "ZONE", "UNTIL", "ERROR"]
            .map(String::from)
            .to_vec()];
        for c in &p.cooldowns {
            rows.push(vec![
                c.instance_type.clone(),
                if c.zone.is_empty() {
                    "-".into()
                } else {
                    c.zone.clone()
                },
                c.until.format("%Y-%m-%dT%H:%M:%S").to_string(),
                berth_core::text::escape(&c.error).into_owned(),
            ]);
        }
        out.push_str(&table(&rows));
    }
    out.push_str("\nNodes:\n");
    let mut rows = vec![["NAME", "STATE", "INSTANCE", "TYPE", "MARKET", "AGE"]
        .map(String::from)
        .to_vec()];
    for n in &p.nodes {
        rows.push(vec![
            n.name.clone(),
            n.state.as_str().to_string(),
            n.instance_id.clone().unwrap_or_else(|| "-".into()),
            n.instance_type.clone().unwrap_or_else(|| "-".into()),
            n.market
                .map_or_else(|| "-".into(), |m| m.as_str().to_string()),
            n.age_seconds.map_or_else(|| "-".into(), age_text),
        ]);
    }
    out.push_str(&table(&rows));
    if !p.events.is_empty() {
        out.push_str("\nEvents (newest first):\n");
        let mut rows = vec![["AT", "KIND", "NODE", "REASON"].map(String::from).to_vec()];
        for e in &p.events {
            rows.push(vec![
                e.at.format("%Y-%m-%dT%H:%M:%S").to_string(),
                e.kind.clone(),
                e.node.clone().unwrap_or_else(|| "-".into()),
                berth_core::text::escape(&e.reason).into_owned(),
            ]);
        }
        out.push_str(&table(&rows));
    }
    out
}

/// `berth pools [NAME] [--json]`.
///
/// # Errors
/// The api's refusal (404 for an unknown pool).
pub async fn pools(client: &Client, name: Option<&str>, json: bool) -> anyhow::Result<i32> {
    match name {
        Some(name) => {
            let pool = client
                .pool_get(name)
                .await
                .with_context(|| format!("pool {name}"))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&pool)?);
            } else {
                print!("{}", pool_detail(&pool));
            }
        }
        None => {
            let list = client.pool_list().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                print!("{}", pools_table(&list.items));
            }
        }
    }
    Ok(0)
}

/// Reads a pool's definition from `path`: TOML (`.toml`, the contents of a
/// `[pools.NAME]` table) or JSON (`.json`, or anything starting with `{`).
///
/// # Errors
/// A message naming `--file` and the file, and the key that is wrong.
pub fn read_spec(path: &Path) -> anyhow::Result<PoolSpec> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--file {}: cannot read it", path.display()))?;
    let json = path.extension().is_some_and(|e| e == "json") || text.trim_start().starts_with('{');
    if json {
        serde_json::from_str(&text)
            .with_context(|| format!("--file {}: not a pool definition (JSON)", path.display()))
    } else {
        toml::from_str(&text)
            .with_context(|| format!("--file {}: not a pool definition (TOML)", path.display()))
    }
}

/// `berth pool set NAME --file pool.toml`: declares (creates or replaces) the pool and
/// prints it.
///
/// # Errors
/// A bad file (naming `--file`) or the api's refusal (naming the field).
pub async fn pool_set(client: &Client, name: &str, file: &Path) -> anyhow::Result<i32> {
    let spec = read_spec(file)?;
    if let Err((field, message)) = spec.validate() {
        bail!("--file {}: {field}: {message}", file.display());
    }
    let pool = client
        .pool_put(name, &spec)
        .await
        .with_context(|| format!("pool set {name}"))?;
    print!("{}", pools_table(std::slice::from_ref(&pool)));
    Ok(0)
}

/// `berth pool delete NAME`.
///
/// # Errors
/// The api's refusal (409 while its nodes have instances).
pub async fn pool_delete(client: &Client, name: &str) -> anyhow::Result<i32> {
    client
        .pool_delete(name)
        .await
        .with_context(|| format!("pool delete {name}"))?;
    println!("pool {name} deleted");
    Ok(0)
}

/// `berth node power-up|power-down NAME…`: records the request for each node (a host
/// list like `burst-[1-4]` is expanded) and prints the nodes.
///
/// # Errors
/// A bad host list, or the api's refusal (409 for a node of no pool).
pub async fn node_power(
    client: &Client,
    names: &[String],
    action: PowerAction,
) -> anyhow::Result<i32> {
    let mut expanded = Vec::new();
    for n in names {
        expanded.extend(
            berth_core::hostlist::expand(n).with_context(|| format!("bad host list {n:?}"))?,
        );
    }
    let mut nodes = Vec::new();
    for name in &expanded {
        nodes.push(
            client
                .node_power(name, action)
                .await
                .with_context(|| format!("power {} {name}", action.as_str()))?,
        );
    }
    print!("{}", crate::format::node_table(&nodes));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_file_reads_as_toml_or_json_and_names_the_option() {
        let dir = std::env::temp_dir().join(format!("berth-pools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let toml_path = dir.join("pool.toml");
        std::fs::write(
            &toml_path,
            "provider = \"local\"\nmax_nodes = 2\n[[instance_types]]\nname = \"sim\"\ngpus = \"2xH100\"\ncpus = 8\nmemory = \"64G\"\n",
        )
        .unwrap();
        let spec = read_spec(&toml_path).unwrap();
        assert_eq!(spec.max_nodes, 2);
        let json_path = dir.join("pool.json");
        std::fs::write(&json_path, serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(read_spec(&json_path).unwrap(), spec);
        std::fs::write(&toml_path, "provider = \"local\"\nmax_nodez = 2\n").unwrap();
        let err = format!("{:#}", read_spec(&toml_path).unwrap_err());
        assert!(err.contains("--file") && err.contains("max_nodez"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(age_text(5), "5s");
        assert_eq!(age_text(185), "3m");
        assert_eq!(age_text(7800), "2h10m");
        assert_eq!(age_text(100_000), "1d03h");
    }
}
