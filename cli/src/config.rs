//! The client configuration: which cluster the client commands talk to, and with which
//! token. From `--url`/`--token`, else `BERTH_URL`/`BERTH_TOKEN` (clap reads both), else
//! the file `<config dir>/berth/config.toml` (`url = "…"`, `token = "…"`) that
//! `berth dev` writes. `BERTH_CLIENT_CONFIG` names another file.

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The client configuration file's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// The api's base URL (`http://127.0.0.1:8750`).
    pub url: Option<String>,
    /// The bearer token.
    pub token: Option<String>,
}

/// The cluster a client command uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The api's base URL.
    pub url: String,
    /// The bearer token.
    pub token: String,
}

/// The client configuration file: `$BERTH_CLIENT_CONFIG`, else
/// `<config dir>/berth/config.toml` (`~/.config/berth/config.toml` on Linux).
pub fn client_config_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BERTH_CLIENT_CONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    dirs::config_dir().map(|dir| dir.join("berth").join("config.toml"))
}

/// Parses a client configuration file's text; `path` names it in errors.
pub fn parse_client_config(text: &str, path: &Path) -> anyhow::Result<ClientConfig> {
    toml::from_str(text).with_context(|| format!("reading {}", path.display()))
}

/// Reads the client configuration file; a missing file reads as empty.
pub fn read_client_config(path: &Path) -> anyhow::Result<ClientConfig> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_client_config(&text, path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ClientConfig::default()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Writes the client configuration file (mode 0600), creating its directory.
pub fn write_client_config(path: &Path, config: &ClientConfig) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let text = toml::to_string(config).context("serializing the client configuration")?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Picks the cluster from the flags (or their environment variables), falling back on
/// the configuration file for whichever is missing.
///
/// # Errors
/// When neither gives a URL or a token, or the file cannot be read.
pub fn resolve_target(url: Option<&str>, token: Option<&str>) -> anyhow::Result<Target> {
    let url = url.filter(|s| !s.is_empty()).map(str::to_string);
    let token = token.filter(|s| !s.is_empty()).map(str::to_string);
    let (url, token) = match (url, token) {
        (Some(url), Some(token)) => (Some(url), Some(token)),
        (url, token) => {
            let file = match client_config_path() {
                Some(path) => read_client_config(&path)?,
                None => ClientConfig::default(),
            };
            (url.or(file.url), token.or(file.token))
        }
    };
    match (url, token) {
        (Some(url), Some(token)) => Ok(Target { url, token }),
        (None, _) => {
            bail!("no cluster configured: run `berth dev` or set BERTH_URL and BERTH_TOKEN")
        }
        (Some(_), None) => bail!("no token configured: set BERTH_TOKEN or pass --token"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_config_parses_and_refuses_unknown_keys() {
        let path = Path::new("config.toml");
        let c = parse_client_config("url = \"http://h:1\"\ntoken = \"t\"\n", path).unwrap();
        assert_eq!(c.url.as_deref(), Some("http://h:1"));
        assert_eq!(c.token.as_deref(), Some("t"));
        let err = parse_client_config("uri = \"x\"", path).unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("config.toml") && msg.contains("uri"), "{msg}");
    }

    #[test]
    fn client_config_round_trips_through_a_file() {
        let dir = std::env::temp_dir().join(format!("berth-cli-test-{}", std::process::id()));
        let path = dir.join("sub").join("config.toml");
        let config = ClientConfig {
            url: Some("http://127.0.0.1:8750".into()),
            token: Some("abc".into()),
        };
        write_client_config(&path, &config).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(read_client_config(&path).unwrap(), config);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
