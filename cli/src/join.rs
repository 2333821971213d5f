//! A worker joining with a bootstrap token: `berth worker --bootstrap-token …` trades it
//! for its node credential once (`POST /v1/nodes/join`) and keeps the credential in its
//! state directory (mode 0600), so that a restart needs no new bootstrap token;
//! `berth token bootstrap`, which makes such tokens; and `berth token rekey`, an admin's
//! explicit re-keying of a node (a node name that joined never joins again).

use crate::client::Client;
use anyhow::Context;
use berth_core::identity::{NodeBootstrapCreated, NodeJoined};
use reqwest::Method;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Where a worker keeps its node credential.
pub fn credential_path(state_dir: &Path) -> PathBuf {
    state_dir.join("node-credential")
}

/// The node credential kept in `state_dir` by an earlier join, when there is one: what a
/// restarted worker without a token starts with.
pub fn kept_credential(state_dir: &Path) -> Option<String> {
    let kept = std::fs::read_to_string(credential_path(state_dir)).ok()?;
    let kept = kept.trim().to_string();
    (!kept.is_empty()).then_some(kept)
}

/// The node credential of `name`: the one kept in `state_dir` when there is one, else a
/// new one from joining with `bootstrap` (then kept).
///
/// # Errors
/// When joining is refused (an unknown, expired or used bootstrap token) or the file
/// cannot be read or written.
pub async fn node_credential(
    api: &str,
    bootstrap: &str,
    name: &str,
    state_dir: &Path,
    ca: &[reqwest::Certificate],
) -> anyhow::Result<String> {
    let path = credential_path(state_dir);
    if let Some(kept) = kept_credential(state_dir) {
        return Ok(kept);
    }
    let client = Client::with_ca(api, bootstrap, ca)?;
    let joined: NodeJoined = client
        .call(Method::POST, "/v1/nodes/join", Some(&json!({"name": name})))
        .await
        .context("joining the cluster with the bootstrap token")?;
    write_secret(&path, &joined.credential)?;
    Ok(joined.credential)
}

fn write_secret(path: &Path, secret: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(secret.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// `berth token bootstrap`: prints a new bootstrap token alone on stdout.
pub async fn bootstrap_token(
    client: &Client,
    ttl_minutes: u32,
    reusable: bool,
) -> anyhow::Result<i32> {
    let created: NodeBootstrapCreated = client
        .call(
            Method::POST,
            "/v1/nodes/bootstrap-tokens",
            Some(&json!({"ttl_minutes": ttl_minutes, "one_time": !reusable})),
        )
        .await?;
    println!("{}", created.token);
    eprintln!(
        "bootstrap token {} ({}) expires {}; it is shown only this once.",
        created.id,
        if created.one_time {
            "one join"
        } else {
            "any number of joins"
        },
        created.expires_at.format("%Y-%m-%dT%H:%M:%SZ")
    );
    Ok(0)
}

/// `berth token rekey NODE`: revokes the node's credentials and prints its new one alone
/// on stdout (admins).
pub async fn node_rekey(client: &Client, node: &str) -> anyhow::Result<i32> {
    let rekeyed: NodeJoined = client
        .call(Method::POST, &format!("/v1/nodes/{node}/credential"), None)
        .await?;
    println!("{}", rekeyed.credential);
    eprintln!(
        "node {} re-keyed: its earlier credentials are revoked; this one is shown only once.",
        rekeyed.node
    );
    Ok(0)
}
