//! A private PostgreSQL for `berth dev`: found on the machine (`initdb`/`pg_ctl` on
//! `PATH`, else the highest `/usr/lib/postgresql/<version>/bin`), initialised once into
//! `<data-dir>/pg` (superuser `berth`), started on a Unix socket only and stopped with
//! `pg_ctl stop -m fast`.
//!
//! The server trusts whoever reaches its socket, so no one else may: it listens on no
//! TCP address (`listen_addresses = ''`), and its socket lives in a directory of mode 0700
//! owned by the server's account. A local user who could connect would be the database's
//! superuser, and through it an admin of the cluster. The port (`<data-dir>/pg.port`) only
//! names the socket file.
//!
//! PostgreSQL refuses to run as root, so as root the server runs as the `postgres` system
//! user (else `nobody`), owning the cluster and socket directories. Directories made in
//! places every user may write (`/tmp`, `/var/tmp`) are refused when they already exist
//! as a link or as someone else's, so that root never hands over or writes through a path
//! another user planted.

use anyhow::{bail, Context};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The PostgreSQL server programs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgBinaries {
    /// The directory holding `initdb`, `pg_ctl` and `postgres`.
    pub bin_dir: PathBuf,
}

impl PgBinaries {
    /// Finds the programs: the first `PATH` directory with `initdb` and `pg_ctl`, else the
    /// highest version under `/usr/lib/postgresql/*/bin`.
    ///
    /// # Errors
    /// When none is installed.
    pub fn find() -> anyhow::Result<PgBinaries> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let on_path = std::env::split_paths(&path).collect::<Vec<_>>();
        if let Some(dir) = find_bin_dir(&on_path, Path::new("/usr/lib/postgresql")) {
            return Ok(PgBinaries { bin_dir: dir });
        }
        bail!("PostgreSQL server binaries not found: install postgresql or set DATABASE_URL")
    }

    fn program(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }
}

fn has_server_programs(dir: &Path) -> bool {
    ["initdb", "pg_ctl", "postgres"]
        .iter()
        .all(|p| dir.join(p).is_file())
}

/// The directory with the server programs among `path_dirs`, else the highest-versioned
/// `<versions_root>/<version>/bin`.
pub fn find_bin_dir(path_dirs: &[PathBuf], versions_root: &Path) -> Option<PathBuf> {
    if let Some(dir) = path_dirs.iter().find(|d| has_server_programs(d)) {
        return Some(dir.clone());
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(versions_root)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version: Vec<u32> = name
                .split('.')
                .map(|p| p.parse().ok())
                .collect::<Option<_>>()?;
            let bin = entry.path().join("bin");
            has_server_programs(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, dir)| dir)
}

/// The account the server runs as: `None` is the current user; as root, `postgres` or
/// `nobody`.
#[derive(Debug, Clone)]
struct RunAs {
    uid: nix::unistd::Uid,
    gid: nix::unistd::Gid,
    name: String,
}

fn run_as() -> anyhow::Result<Option<RunAs>> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    for name in ["postgres", "nobody"] {
        if let Some(user) = nix::unistd::User::from_name(name)? {
            return Ok(Some(RunAs {
                uid: user.uid,
                gid: user.gid,
                name: name.to_string(),
            }));
        }
    }
    bail!(
        "running as root, and neither a `postgres` nor a `nobody` user exists to run PostgreSQL as"
    )
}

/// Whether `user` may reach `path` (search permission on every ancestor).
fn traversable_by(path: &Path, user: &RunAs) -> bool {
    use std::os::unix::fs::MetadataExt;
    let mut dir = Some(path);
    while let Some(d) = dir {
        if let Ok(meta) = std::fs::metadata(d) {
            let mode = meta.mode();
            let ok = if meta.uid() == user.uid.as_raw() {
                mode & 0o100 != 0
            } else if meta.gid() == user.gid.as_raw() {
                mode & 0o010 != 0
            } else {
                mode & 0o001 != 0
            };
            if !ok {
                return false;
            }
        }
        dir = d.parent();
    }
    true
}

/// Makes `path` a directory of `mode` owned by `owner` (or by this process's user),
/// creating it (its parent must exist) or taking one that is already ours or `owner`'s.
///
/// # Errors
/// When `path` exists as a link, as something other than a directory, or as a directory
/// of another user (planted by someone who may write its parent), or cannot be made.
fn private_dir(path: &Path, owner: Option<&RunAs>, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .mode(mode)
            .create(path)
            .with_context(|| format!("creating {}", path.display()))?,
        Err(e) => return Err(e).with_context(|| format!("examining {}", path.display())),
        Ok(meta) => {
            let ours = meta.uid() == nix::unistd::geteuid().as_raw()
                || owner.is_some_and(|o| o.uid.as_raw() == meta.uid());
            if !meta.is_dir() || !ours {
                bail!(
                    "{} exists and is not a directory of this user or of the database's: \
                     remove it (someone may have planted it there)",
                    path.display()
                );
            }
        }
    }
    // Another user cannot swap a directory of ours for a link: its parent is ours, or
    // sticky (/tmp). Nothing below follows a link anyway.
    if let Some(owner) = owner {
        std::os::unix::fs::lchown(path, Some(owner.uid.as_raw()), Some(owner.gid.as_raw()))
            .with_context(|| format!("giving {} to user {}", path.display(), owner.name))?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))?;
    Ok(())
}

/// A private PostgreSQL server, started by [`PgServer::start`].
#[derive(Debug)]
pub struct PgServer {
    binaries: PgBinaries,
    cluster_dir: PathBuf,
    run_as: Option<RunAs>,
    /// The directory of its Unix socket (mode 0700, the server's account's).
    pub socket_dir: PathBuf,
    /// The port, which names the socket file (`.s.PGSQL.<port>`); no TCP.
    pub port: u16,
}

impl PgServer {
    /// Initialises (once) and starts the server for `data_dir` (one left running there
    /// is stopped and started again, with this version's settings), and makes sure
    /// database `berth` exists.
    ///
    /// # Errors
    /// When PostgreSQL is not installed, `initdb` or `pg_ctl` fail (the message points at
    /// `<data-dir>/pg.log`), or the database cannot be created.
    pub async fn start(data_dir: &Path) -> anyhow::Result<PgServer> {
        let binaries = PgBinaries::find()?;
        let run_as = run_as()?;
        let mut base = data_dir.to_path_buf();
        if let Some(user) = &run_as {
            if !traversable_by(data_dir, user) {
                // The data directory sits under a directory the server's account cannot
                // enter (root's home): keep the cluster in /var/tmp instead.
                base = PathBuf::from(format!(
                    "/var/tmp/berth-dev-pg-{:016x}",
                    fnv1a(data_dir.to_string_lossy().as_bytes())
                ));
                private_dir(&base, None, 0o711)?;
            }
        }
        let cluster_dir = base.join("pg");
        let mut socket_dir = base.join("pg-run");
        if socket_dir.as_os_str().len() > 80 {
            // Unix socket paths are limited to about 100 bytes.
            socket_dir = PathBuf::from(format!(
                "/tmp/berth-pg-{:016x}",
                fnv1a(base.to_string_lossy().as_bytes())
            ));
        }
        let log_path = base.join("pg.log");
        let port_path = data_dir.join("pg.port");
        private_dir(&socket_dir, run_as.as_ref(), 0o700)?;
        private_dir(&cluster_dir, run_as.as_ref(), 0o700)?;
        if let Some(user) = &run_as {
            if std::fs::symlink_metadata(&log_path).is_err() {
                std::fs::write(&log_path, b"")?;
            }
            std::os::unix::fs::lchown(&log_path, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
                .with_context(|| format!("giving {} to user {}", log_path.display(), user.name))?;
        }
        let server = PgServer {
            binaries,
            cluster_dir: cluster_dir.clone(),
            run_as,
            socket_dir: socket_dir.clone(),
            port: 0,
        };
        if !cluster_dir.join("PG_VERSION").exists() {
            let mut initdb = server.command("initdb");
            initdb.arg("-D").arg(&cluster_dir).args([
                "-A",
                "trust",
                "-U",
                "berth",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ]);
            let output = initdb.output().context("running initdb")?;
            if !output.status.success() {
                bail!(
                    "initdb failed: {}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                );
            }
        }
        let remembered: Option<u16> = std::fs::read_to_string(&port_path)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let mut server = server;
        let running = server
            .command("pg_ctl")
            .arg("status")
            .arg("-D")
            .arg(&cluster_dir)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if running {
            // Possibly started by an older `berth dev` that listened on TCP.
            server.stop_quietly();
        }
        let port = match remembered {
            Some(p) if port_is_free(p) => p,
            _ => free_port()?,
        };
        let options = format!(
            "-p {port} -k {} -c listen_addresses= -c unix_socket_permissions=0700",
            socket_dir.display()
        );
        let output = server
            .command("pg_ctl")
            .arg("-D")
            .arg(&cluster_dir)
            .arg("-o")
            .arg(options)
            .arg("-l")
            .arg(&log_path)
            .args(["-w", "-t", "60", "start"])
            .output()
            .context("running pg_ctl start")?;
        if !output.status.success() {
            bail!(
                "PostgreSQL did not start (see {}): {}{}",
                log_path.display(),
                String::from_utf8_lossy(&output.stdout).trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        std::fs::write(&port_path, format!("{port}\n"))?;
        server.port = port;
        server.create_database().await?;
        Ok(server)
    }

    /// The cluster's data directory (`<data-dir>/pg`, or under `/var/tmp` when root's
    /// server account cannot reach the data directory).
    pub fn cluster_dir(&self) -> &Path {
        &self.cluster_dir
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.binaries.program(program));
        command.current_dir(self.cluster_dir.parent().unwrap_or(Path::new("/")));
        if let Some(user) = &self.run_as {
            command.uid(user.uid.as_raw()).gid(user.gid.as_raw());
            command.env("HOME", "/");
        }
        command
    }

    async fn create_database(&self) -> anyhow::Result<()> {
        use sqlx::Connection;
        let url = self.url_of("postgres");
        let mut conn = sqlx::PgConnection::connect(&url)
            .await
            .with_context(|| format!("connecting to {url}"))?;
        let exists: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = 'berth'")
                .fetch_optional(&mut conn)
                .await?;
        if exists.is_none() {
            sqlx::query("CREATE DATABASE berth")
                .execute(&mut conn)
                .await
                .context("creating database berth")?;
        }
        conn.close().await?;
        Ok(())
    }

    /// The URL of database `berth`, through the server's socket
    /// (`postgres://berth@localhost/berth?host=SOCKET_DIR&port=PORT`).
    pub fn database_url(&self) -> String {
        self.url_of("berth")
    }

    fn url_of(&self, database: &str) -> String {
        let dir = self.socket_dir.to_string_lossy();
        let dir = percent_encoding::utf8_percent_encode(&dir, percent_encoding::NON_ALPHANUMERIC);
        format!(
            "postgres://berth@localhost/{database}?host={dir}&port={}",
            self.port
        )
    }

    fn stop_quietly(&self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.cluster_dir)
            .args(["-m", "fast", "-w", "stop"])
            .output();
    }

    /// Stops the server (`pg_ctl stop -m fast`).
    pub fn stop(&self) -> anyhow::Result<()> {
        let output = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.cluster_dir)
            .args(["-m", "fast", "-w", "stop"])
            .output()
            .context("running pg_ctl stop")?;
        if !output.status.success() {
            bail!(
                "pg_ctl stop failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(())
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn port_is_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_highest_installed_version() {
        let root = std::env::temp_dir().join(format!("berth-pg-find-{}", std::process::id()));
        for version in ["9.6", "15", "16", "notaversion"] {
            let bin = root.join(version).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            for p in ["initdb", "pg_ctl", "postgres"] {
                std::fs::write(bin.join(p), b"").unwrap();
            }
        }
        // 16 lacks postgres: skipped.
        std::fs::remove_file(root.join("16/bin/postgres")).unwrap();
        assert_eq!(find_bin_dir(&[], &root), Some(root.join("15/bin")));
        assert_eq!(
            find_bin_dir(&[root.join("9.6/bin")], &root),
            Some(root.join("9.6/bin"))
        );
        assert_eq!(find_bin_dir(&[], &root.join("none")), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
