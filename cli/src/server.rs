//! `berth server`: the server roles' typed configuration (a TOML file with
//! `deny_unknown_fields`; `DATABASE_URL` and `BERTH_JWT_SECRET` from the environment win
//! over the file, and secrets are never flags) and the roles themselves: `api`,
//! `scheduler`, or `all` of them in one process.
//!
//! ```toml
//! database_url = "postgres://berth@db.example/berth"   # or DATABASE_URL
//! jwt_secret = "…"                                     # or BERTH_JWT_SECRET
//! listen = "0.0.0.0:8750"
//!
//! [api]
//! max_connections = 16
//!
//! [scheduler]
//! lease_ttl_seconds = 3
//! renew_interval_seconds = 1
//! cycle_interval_seconds = 2
//! node_timeout_seconds = 30
//! return_to_service = 1
//! completing_timeout_seconds = 120
//! instance_id = "sched-a"      # default: <hostname>-<pid>
//! ```

use crate::shutdown::Shutdown;
use anyhow::{anyhow, bail, Context};
use berth_api::ApiConfig;
use berth_scheduler::SchedulerConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default address the api listens on.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8750";

/// The server configuration file, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfigFile {
    /// PostgreSQL URL; `DATABASE_URL` wins.
    pub database_url: Option<String>,
    /// The HS256 secret tokens are signed with; `BERTH_JWT_SECRET` wins. Keep it out of
    /// files that are checked in.
    pub jwt_secret: Option<String>,
    /// The api's listen address (`0.0.0.0:8750`); `--listen` wins.
    pub listen: Option<String>,
    /// The api role's settings.
    #[serde(default)]
    pub api: ApiSection,
    /// The scheduler role's settings.
    #[serde(default)]
    pub scheduler: SchedulerSection,
}

/// `[api]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiSection {
    /// The most PostgreSQL connections the api holds (default 16).
    pub max_connections: Option<u32>,
}

/// `[scheduler]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerSection {
    /// How long the leader lease lasts without renewal, seconds (default 3).
    pub lease_ttl_seconds: u64,
    /// How often the leader renews and a standby tries to take over, seconds (default 1).
    pub renew_interval_seconds: u64,
    /// The scheduling cycle's timer, seconds (default 2; cycles also run on NOTIFY).
    pub cycle_interval_seconds: u64,
    /// Silence after which a node is DOWN, seconds (Slurm's `SlurmdTimeout`; default 30).
    pub node_timeout_seconds: u64,
    /// Slurm's `ReturnToService`: 0 never, 1 a node DOWN for not responding (default), 2
    /// any DOWN node, once it syncs again.
    pub return_to_service: u8,
    /// How long an ended job's allocation may stay live before the node is drained and
    /// the allocation released, seconds (default 120).
    pub completing_timeout_seconds: u64,
    /// This scheduler's identity in the lease (default `<hostname>-<pid>`).
    pub instance_id: Option<String>,
}

impl Default for SchedulerSection {
    fn default() -> Self {
        SchedulerSection {
            lease_ttl_seconds: 3,
            renew_interval_seconds: 1,
            cycle_interval_seconds: 2,
            node_timeout_seconds: 30,
            return_to_service: 1,
            completing_timeout_seconds: 120,
            instance_id: None,
        }
    }
}

/// The resolved server configuration.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// PostgreSQL URL.
    pub database_url: String,
    /// The token secret; needed by the api role and `berth token mint`.
    pub jwt_secret: Option<String>,
    /// The api's listen address.
    pub listen: String,
    /// The api's connection pool size.
    pub max_connections: u32,
    /// The scheduler role's settings.
    pub scheduler: SchedulerConfig,
}

/// Parses a server configuration file's text; errors name `path` and the key.
pub fn parse_server_config(text: &str, path: &Path) -> anyhow::Result<ServerConfigFile> {
    toml::from_str(text).map_err(|e| anyhow!("{}: {}", path.display(), e.to_string().trim_end()))
}

/// Reads and parses a server configuration file.
pub fn read_server_config(path: &Path) -> anyhow::Result<ServerConfigFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_server_config(&text, path)
}

/// This host's name, for default identities (`/proc/sys/kernel/hostname`, else
/// `$HOSTNAME`, else `localhost`).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .or_else(|| {
            std::env::var("HOSTNAME")
                .ok()
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_string())
}

impl ServerConfig {
    /// Resolves a file's settings with the environment (`env` looks a variable up:
    /// `DATABASE_URL`, `BERTH_JWT_SECRET`) and the `--listen` flag.
    ///
    /// # Errors
    /// When no database URL is set anywhere, or an interval is zero.
    pub fn resolve(
        file: ServerConfigFile,
        source: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
        listen: Option<&str>,
    ) -> anyhow::Result<ServerConfig> {
        let env = |k: &str| env(k).filter(|v| !v.is_empty());
        let from = match source {
            Some(p) => format!("in {}", p.display()),
            None => "in a configuration file (--config)".to_string(),
        };
        let database_url = env("DATABASE_URL").or(file.database_url).ok_or_else(|| {
            anyhow!("database_url is not set: set DATABASE_URL or database_url {from}")
        })?;
        let jwt_secret = env("BERTH_JWT_SECRET").or(file.jwt_secret);
        let s = file.scheduler;
        for (key, value) in [
            ("scheduler.lease_ttl_seconds", s.lease_ttl_seconds),
            ("scheduler.renew_interval_seconds", s.renew_interval_seconds),
            ("scheduler.cycle_interval_seconds", s.cycle_interval_seconds),
            ("scheduler.node_timeout_seconds", s.node_timeout_seconds),
            (
                "scheduler.completing_timeout_seconds",
                s.completing_timeout_seconds,
            ),
        ] {
            if value == 0 {
                bail!("{key} must be at least 1 {from}");
            }
        }
        if s.renew_interval_seconds >= s.lease_ttl_seconds {
            bail!("scheduler.renew_interval_seconds must be less than scheduler.lease_ttl_seconds {from}");
        }
        let return_to_service =
            berth_scheduler::reconcile::ReturnToService::from_slurm(s.return_to_service)
                .ok_or_else(|| anyhow!("scheduler.return_to_service must be 0, 1 or 2 {from}"))?;
        Ok(ServerConfig {
            database_url: database_url.clone(),
            jwt_secret,
            listen: listen
                .map(str::to_string)
                .or(file.listen)
                .unwrap_or_else(|| DEFAULT_LISTEN.to_string()),
            max_connections: file.api.max_connections.unwrap_or(16).max(1),
            scheduler: SchedulerConfig {
                database_url,
                instance_id: s
                    .instance_id
                    .unwrap_or_else(|| format!("{}-{}", host_name(), std::process::id())),
                lease_ttl: Duration::from_secs(s.lease_ttl_seconds),
                renew_interval: Duration::from_secs(s.renew_interval_seconds),
                cycle_interval: Duration::from_secs(s.cycle_interval_seconds),
                node_timeout: Duration::from_secs(s.node_timeout_seconds),
                return_to_service,
                completing_timeout: Duration::from_secs(s.completing_timeout_seconds),
            },
        })
    }

    /// The token secret, or an error saying where to set it.
    pub fn require_jwt_secret(&self) -> anyhow::Result<&str> {
        match self.jwt_secret.as_deref() {
            Some(s) => Ok(s),
            None => bail!("jwt_secret is not set: set BERTH_JWT_SECRET or jwt_secret in the configuration file"),
        }
    }
}

/// Loads the configuration: the file when given (else settings from the environment
/// alone), then the environment overrides.
pub fn load_server_config(
    path: Option<&PathBuf>,
    listen: Option<&str>,
) -> anyhow::Result<ServerConfig> {
    let file = match path {
        Some(p) => read_server_config(p)?,
        None => ServerConfigFile::default(),
    };
    ServerConfig::resolve(
        file,
        path.map(|p| p.as_path()),
        |k| std::env::var(k).ok(),
        listen,
    )
}

/// Which parts of the server run in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The REST api.
    Api,
    /// The scheduler.
    Scheduler,
    /// Both.
    All,
}

/// Runs the server `role` until `shutdown` fires. With `All`, a part that fails stops the
/// other.
pub async fn run_server(
    config: ServerConfig,
    role: Role,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let api = if matches!(role, Role::Api | Role::All) {
        let secret = config.require_jwt_secret()?.to_string();
        let listener = tokio::net::TcpListener::bind(&config.listen)
            .await
            .with_context(|| format!("listening on {}", config.listen))?;
        let api_config = ApiConfig {
            database_url: config.database_url.clone(),
            jwt_secret: secret,
            max_connections: config.max_connections,
        };
        let stop = shutdown.clone();
        Some(tokio::spawn(async move {
            let result = berth_api::serve(api_config, listener, stop.wait())
                .await
                .context("api");
            stop.trigger();
            result
        }))
    } else {
        None
    };
    let scheduler = if matches!(role, Role::Scheduler | Role::All) {
        tracing::info!(instance = %config.scheduler.instance_id, "scheduler starting");
        let stop = shutdown.clone();
        let scheduler_config = config.scheduler.clone();
        Some(tokio::spawn(async move {
            let result = berth_scheduler::run(scheduler_config, stop.wait())
                .await
                .context("scheduler");
            stop.trigger();
            result
        }))
    } else {
        None
    };
    let mut result = Ok(());
    for task in [api, scheduler].into_iter().flatten() {
        let outcome = task.await.map_err(anyhow::Error::from).and_then(|r| r);
        if let Err(e) = outcome {
            if result.is_ok() {
                result = Err(e);
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn full_file_parses_and_resolves() {
        let text = r#"
database_url = "postgres://berth@db/berth"
jwt_secret = "s"
listen = "0.0.0.0:9000"
[api]
max_connections = 4
[scheduler]
lease_ttl_seconds = 20
renew_interval_seconds = 5
cycle_interval_seconds = 1
node_timeout_seconds = 45
return_to_service = 2
completing_timeout_seconds = 90
instance_id = "sched-a"
"#;
        let file = parse_server_config(text, Path::new("b.toml")).unwrap();
        let c = ServerConfig::resolve(file, Some(Path::new("b.toml")), no_env, None).unwrap();
        assert_eq!(c.database_url, "postgres://berth@db/berth");
        assert_eq!(c.scheduler.database_url, "postgres://berth@db/berth");
        assert_eq!(c.jwt_secret.as_deref(), Some("s"));
        assert_eq!(c.listen, "0.0.0.0:9000");
        assert_eq!(c.max_connections, 4);
        assert_eq!(c.scheduler.instance_id, "sched-a");
        assert_eq!(c.scheduler.lease_ttl, Duration::from_secs(20));
        assert_eq!(c.scheduler.renew_interval, Duration::from_secs(5));
        assert_eq!(c.scheduler.cycle_interval, Duration::from_secs(1));
        assert_eq!(c.scheduler.node_timeout, Duration::from_secs(45));
        assert_eq!(
            c.scheduler.return_to_service,
            berth_scheduler::reconcile::ReturnToService::Any
        );
        assert_eq!(c.scheduler.completing_timeout, Duration::from_secs(90));
        let bad = parse_server_config("[scheduler]\nreturn_to_service = 3\n", Path::new("b.toml"))
            .unwrap();
        let err = ServerConfig::resolve(
            bad,
            Some(Path::new("b.toml")),
            |_| Some("postgres://x/y".into()),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("return_to_service") && err.contains("b.toml"),
            "{err}"
        );
    }

    #[test]
    fn defaults_and_environment_overrides() {
        let file =
            parse_server_config("database_url = \"postgres://file\"\n", Path::new("x")).unwrap();
        let env = |k: &str| match k {
            "DATABASE_URL" => Some("postgres://env".to_string()),
            "BERTH_JWT_SECRET" => Some("envsecret".to_string()),
            _ => None,
        };
        let c = ServerConfig::resolve(file, None, env, Some("127.0.0.1:1")).unwrap();
        assert_eq!(c.database_url, "postgres://env");
        assert_eq!(c.jwt_secret.as_deref(), Some("envsecret"));
        assert_eq!(c.listen, "127.0.0.1:1");
        assert_eq!(c.scheduler.lease_ttl, Duration::from_secs(3));
        assert_eq!(c.scheduler.renew_interval, Duration::from_secs(1));
        assert_eq!(c.scheduler.node_timeout, Duration::from_secs(30));
        assert_eq!(c.scheduler.cycle_interval, Duration::from_secs(2));
        assert!(c
            .scheduler
            .instance_id
            .ends_with(&format!("-{}", std::process::id())));
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let err = parse_server_config("[scheduler]\nlease_ttl = 3\n", Path::new("/etc/berth.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/etc/berth.toml") && err.contains("lease_ttl"),
            "{err}"
        );
        let err = parse_server_config("listen = 3\n", Path::new("b.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("b.toml") && err.contains("listen"), "{err}");
        let missing = ServerConfig::resolve(
            ServerConfigFile::default(),
            Some(Path::new("b.toml")),
            no_env,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            missing.contains("database_url") && missing.contains("b.toml"),
            "{missing}"
        );
        assert!(
            ServerConfig::resolve(ServerConfigFile::default(), None, no_env, None)
                .unwrap_err()
                .to_string()
                .contains("DATABASE_URL")
        );
    }

    fn toml_files(dir: &Path, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                toml_files(&path, found);
            } else if path.extension().is_some_and(|e| e == "toml") {
                found.push(path);
            }
        }
    }

    #[test]
    fn every_shipped_config_file_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        toml_files(&root.join("deploy"), &mut files);
        toml_files(&root.join("examples"), &mut files);
        assert!(
            files.iter().any(|f| f.ends_with("deploy/berth.toml")),
            "deploy/berth.toml is missing: {files:?}"
        );
        for path in files {
            let file = read_server_config(&path).unwrap();
            ServerConfig::resolve(
                file,
                Some(&path),
                |k| match k {
                    "DATABASE_URL" => Some("postgres://x".to_string()),
                    _ => None,
                },
                None,
            )
            .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
        }
    }
}
