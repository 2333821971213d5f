//! A private PostgreSQL server for tests that restart the database: `initdb` and
//! `pg_ctl` on a free port in a temporary directory, run as the `postgres` user when the
//! tests run as root (PostgreSQL refuses root). Never the machine's shared server.

use std::path::PathBuf;
use std::process::Command;

pub struct PrivatePg {
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    run_as: Option<String>,
    /// Extra `-c name=value` settings given to every start.
    settings: String,
}

fn bin_dir() -> PathBuf {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let d = PathBuf::from(dir);
        if d.join("pg_ctl").exists() && d.join("initdb").exists() {
            return d;
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|r| r.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    versions.sort();
    versions
        .pop()
        .expect("PostgreSQL server binaries (initdb, pg_ctl) are needed for this test")
}

impl PrivatePg {
    pub fn start() -> PrivatePg {
        Self::start_with("")
    }

    /// Starts a new server with `settings` (`-c name=value …`) on every start.
    pub fn start_with(settings: &str) -> PrivatePg {
        let pg = Self::empty(settings);
        let data = pg.dir.join("data");
        pg.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
            ],
        );
        pg.up();
        pg
    }

    /// A streaming standby of the primary that answers on loopback port `primary`
    /// (`pg_basebackup -R`: a copy of its data directory that follows it, connecting to
    /// that port), started with `settings`. initdb's `pg_hba.conf` lets loopback
    /// replication connections in.
    pub fn standby_of(primary: u16, settings: &str) -> PrivatePg {
        let pg = Self::empty(settings);
        let data = pg.dir.join("data");
        pg.run(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &primary.to_string(),
                "-U",
                "postgres",
                "-D",
                data.to_str().unwrap(),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            ],
        );
        pg.up();
        pg
    }

    /// Promotes a standby to primary (waits until it accepts writes).
    pub fn promote(&self) {
        let data = self.dir.join("data");
        self.run("pg_ctl", &["-D", data.to_str().unwrap(), "-w", "promote"]);
    }

    /// Stops the server the hard way (`immediate`: no checkpoint, sessions cut, as a crash).
    pub fn crash(&self) {
        let data = self.dir.join("data");
        self.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }

    fn empty(settings: &str) -> PrivatePg {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("berth-pg-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let run_as = nix::unistd::geteuid().is_root().then(|| {
            let user = if nix::unistd::User::from_name("postgres")
                .ok()
                .flatten()
                .is_some()
            {
                "postgres"
            } else {
                "nobody"
            };
            let uid = nix::unistd::User::from_name(user).unwrap().unwrap().uid;
            nix::unistd::chown(&dir, Some(uid), None).unwrap();
            user.to_string()
        });
        PrivatePg {
            port,
            dir,
            bin: bin_dir(),
            run_as,
            settings: settings.to_string(),
        }
    }

    /// The server program `name`: beside `initdb` and `pg_ctl`, else in the newest
    /// `/usr/lib/postgresql/*/bin` (Debian puts the client tools elsewhere), else on PATH.
    fn program(&self, name: &str) -> PathBuf {
        let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .map(|r| r.flatten().map(|e| e.path().join("bin")).collect())
            .unwrap_or_default();
        versions.sort();
        std::iter::once(self.bin.clone())
            .chain(versions.into_iter().rev())
            .chain(
                std::env::var("PATH")
                    .unwrap_or_default()
                    .split(':')
                    .map(PathBuf::from),
            )
            .map(|d| d.join(name))
            .find(|p| p.exists())
            .unwrap_or_else(|| self.bin.join(name))
    }

    fn run(&self, program: &str, args: &[&str]) {
        let exe = self.program(program);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let out = cmd.args(args).current_dir(&self.dir).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server (waits until it accepts connections).
    pub fn up(&self) {
        let data = self.dir.join("data");
        let log = self.dir.join("log");
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 {}",
            self.port,
            self.dir.display(),
            self.settings
        );
        self.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-w",
                "-o",
                &opts,
                "start",
            ],
        );
    }

    /// Stops the server (fast shutdown: sessions are ended, as in a restart).
    pub fn down(&self) {
        let data = self.dir.join("data");
        self.run(
            "pg_ctl",
            &["-D", data.to_str().unwrap(), "-m", "fast", "-w", "stop"],
        );
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let exe = self.bin.join("pg_ctl");
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let _ = cmd
            .args(["-D", data.to_str().unwrap(), "-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
