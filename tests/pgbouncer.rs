//! Berth through PgBouncer in transaction mode (`[database] pooler = "transaction"`): a
//! real `pgbouncer` (Debian's package: `apt-get install pgbouncer`) on loopback in front
//! of the test PostgreSQL, with fewer server connections than the api's pool, carries the
//! api's and the scheduler's work; their `LISTEN` sessions and migrations go straight to
//! the server (`DATABASE_DIRECT_URL`). Jobs are submitted in a burst, run to their end,
//! the scheduler is woken by `NOTIFY` (not only by its timer), the event stream delivers,
//! and a running job is cancelled.

use crate::cluster::{Options, TestCluster, TEST_API_CONFIG};
use crate::events::SseClient;
use berth_core::state::JobState;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where `pgbouncer` is: on `PATH`, else Debian's `/usr/sbin/pgbouncer`.
fn pgbouncer_bin() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("pgbouncer"))
            .find(|p| p.is_file())
    });
    on_path
        .or_else(|| Some(PathBuf::from("/usr/sbin/pgbouncer")).filter(|p| p.is_file()))
        .expect(
            "pgbouncer not found (on PATH or /usr/sbin): install it (Debian: apt-get install pgbouncer)",
        )
}

/// A `pgbouncer` in transaction mode on a free loopback port, stopped on drop.
pub struct PgBouncer {
    pub port: u16,
    child: Child,
    log: PathBuf,
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PgBouncer {
    /// Starts one in front of `server` (`postgres://user@host:port/...`): every database
    /// of that server, `pool_size` server connections per database and user, prepared
    /// statements dropped whenever a server connection is released.
    pub fn start(dir: &Path, server: &str, pool_size: u32) -> PgBouncer {
        let server = reqwest::Url::parse(server).unwrap();
        let host = server.host_str().unwrap_or("127.0.0.1").to_string();
        let server_port = server.port().unwrap_or(5432);
        let user = if server.username().is_empty() {
            "postgres"
        } else {
            server.username()
        };
        let password = server.password().unwrap_or_default();
        std::fs::create_dir_all(dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let auth = dir.join("userlist.txt");
        std::fs::write(&auth, format!("\"{user}\" \"{password}\"\n")).unwrap();
        let password_part = if password.is_empty() {
            String::new()
        } else {
            format!(" password={password}")
        };
        let ini = dir.join("pgbouncer.ini");
        std::fs::write(
            &ini,
            format!(
                "[databases]\n* = host={host} port={server_port}{password_part}\n\
                 [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
                 auth_type = trust\nauth_file = {}\npool_mode = transaction\n\
                 default_pool_size = {pool_size}\nmax_client_conn = 500\n\
                 server_reset_query = DEALLOCATE ALL\nserver_reset_query_always = 1\n",
                auth.display()
            ),
        )
        .unwrap();
        let log = dir.join("pgbouncer.log");
        let out = std::fs::File::create(&log).unwrap();
        let mut command = Command::new(pgbouncer_bin());
        // PgBouncer refuses to run as root; as root it is told whom to become.
        if nix::unistd::geteuid().is_root() {
            command.args(["-u", "nobody"]);
        }
        let child = command
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("starting pgbouncer");
        let bouncer = PgBouncer { port, child, log };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "pgbouncer did not listen on {port}: {}",
                bouncer.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        bouncer
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berth_runs_through_pgbouncer_in_transaction_mode() {
    let base = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    let dir = std::env::temp_dir().join(format!("berth-pgbouncer-{}", std::process::id()));
    // Three server connections for the api's 16 and the scheduler's 4: borrowings of
    // different clients share server sessions all the time.
    let bouncer = PgBouncer::start(&dir, &base, 3);
    let c = TestCluster::start_custom(
        Options {
            workers: 2,
            gpus: "2xH100",
            log_filter: Some("info,berth_scheduler::leadership=debug"),
            pooler_port: Some(bouncer.port),
            ..Default::default()
        },
        &format!("{TEST_API_CONFIG}\n[database]\npooler = \"transaction\"\n"),
        None,
        &[],
    )
    .await;
    let (leader, _) = c.wait_leader(30).await;

    // A burst of submissions, 8 at a time, through the api's pool.
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(8));
    let mut submits = tokio::task::JoinSet::new();
    for i in 0..40 {
        let permit = gate.clone().acquire_owned().await.unwrap();
        let (http, url, token) = (c.http.clone(), c.url.clone(), c.token.clone());
        submits.spawn(async move {
            let r = http
                .post(format!("{url}/v1/jobs"))
                .bearer_auth(&token)
                .json(&serde_json::json!({
                    "script": format!("#!/bin/bash\necho job {i}\n"),
                    "args": ["--gres=gpu:1"],
                }))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body = r.text().await.unwrap_or_default();
            drop(permit);
            assert_eq!(status, 201, "submission {i}: {body}");
            let id = serde_json::from_str::<serde_json::Value>(&body).unwrap()["id"]
                .as_i64()
                .unwrap();
            (id, i)
        });
    }
    let mut ids = Vec::new();
    while let Some(id) = submits.join_next().await {
        ids.push(id.unwrap());
    }
    ids.sort_unstable();
    for &(id, i) in &ids {
        let job = c.wait_ended(id, 120).await;
        assert_eq!(job.state, JobState::Completed, "job {id}: {job:?}");
        assert_eq!(c.output(id).await.trim(), format!("job {i}"));
    }
    let first = ids[0].0;

    // The scheduler hears NOTIFY berth_jobs on its direct session: cycles woken by
    // notifications, not only the timer's.
    let log = c.log(&leader);
    let woken = log
        .lines()
        .filter(|l| l.contains("cycle ran") && l.contains("notify"))
        .count();
    assert!(woken > 0, "no cycle woken by NOTIFY in {leader}'s log");

    // The event feed (its reader woken by NOTIFY berth_events) has the jobs' events.
    let (status, events) = c
        .call(
            reqwest::Method::GET,
            &format!("/v1/events?type=berth.job.*&subject=jobs/{first}"),
            Some(&c.token),
            None,
        )
        .await;
    assert_eq!(status, 200, "{events}");
    let types: Vec<&str> = events["items"]
        .as_array()
        .map(|items| items.iter().filter_map(|e| e["type"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        types.contains(&"berth.job.ended"),
        "job {first}'s events: {events}"
    );

    // A running job is cancelled; an event stream opened before hears of it (its reader
    // woken by NOTIFY berth_events).
    let mut stream = SseClient::open(&c, &c.url, &c.token, "?type=berth.job.*", None).await;
    let id = c
        .submit("#!/bin/bash\n#SBATCH --gres=gpu:1\nsleep 300\n", &[])
        .await;
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let (status, body) = c
        .call(
            reqwest::Method::POST,
            &format!("/v1/jobs/{id}/cancel"),
            Some(&c.token),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(c.wait_ended(id, 60).await.state, JobState::Cancelled);
    let subject = format!("jobs/{id}");
    stream
        .until(30, |e| {
            e.event == "berth.job.ended" && e.data["subject"] == subject.as_str()
        })
        .await;

    // Nothing went wrong on the way: no prepared statement lost or clashing, no
    // statement refused by the pooler.
    for name in c.components() {
        let log = c.log(&name);
        for bad in [
            "prepared statement",
            "unsupported startup parameter",
            "inside a transaction",
        ] {
            assert!(!log.contains(bad), "{name}'s log says {bad:?}:\n{log}");
        }
    }
    let bouncer_log = bouncer.log();
    assert!(
        !bouncer_log.contains("pooler error"),
        "pgbouncer refused something: {bouncer_log}"
    );
    drop(c);
    drop(bouncer);
    let _ = std::fs::remove_dir_all(&dir);
}
