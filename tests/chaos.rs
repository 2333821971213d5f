//! The chaos suite: a private PostgreSQL, two api replicas, two schedulers and three
//! workers with simulated GPUs run a stream of jobs (1 GPU, 2 GPUs, 2-node gangs, some
//! failing, some over their time limit, some `--no-requeue`) while components are
//! SIGKILLed and restarted at random (leader, standby, an api, workers) and PostgreSQL
//! restarts. At the end it checks, and prints:
//!
//! * every acknowledged submission exists and ended in the one terminal state its script
//!   leads to (or NODE_FAIL for `--no-requeue` jobs), with an exit code where it ran;
//! * no job ran twice at once (each batch script takes a per-job `flock`; a second
//!   instance that finds it held records the fact);
//!
//!   (A worker kept away longer than the node timeout stands for a node that crashed:
//!   its job processes are killed with it. A worker process that dies alone leaves them
//!   running under their shepherds, which stop them once the node's lease runs out; a
//!   database restart longer than the lease does the same. Such runs are requeued.)
//! * requeued jobs show their restarts (`restart_count` equals the requeues recorded);
//! * no GPU was ever in two live allocations (overlapping `[created_at, released_at)`
//!   intervals of the same node and GPU in the allocation history);
//! * no job process remains once everything ended;
//! * the longest time with a pending job and no live leader lease while the database was
//!   up.
//!
//! The short form runs in `cargo test` (about 30 s of faults). The long form:
//! `BERTH_CHAOS_SECONDS=600 cargo test -p berth --test e2e chaos -- --nocapture`
//! (`BERTH_CHAOS_SEED` repeats a run); its figures are in `bench/README.md`.

use crate::cluster::{Options, TestCluster};
use crate::private_pg::PrivatePg;
use berth_core::state::JobState;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// What a submitted job should end as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ok,
    Fails,
    OverLimit,
    NoRequeue,
}

/// The batch script: take the job's lock (a held lock means another instance of the job
/// still runs), then do the work.
fn script(kind: Kind, seconds: u32) -> String {
    let work = match kind {
        Kind::Ok | Kind::NoRequeue => format!("sleep {seconds}\nexit 0"),
        Kind::Fails => format!("sleep {seconds}\nexit 1"),
        Kind::OverLimit => "sleep 60\nexit 0".to_string(),
    };
    format!(
        "#!/bin/bash\nexec 9>>\"$SLURM_SUBMIT_DIR/lock-$SLURM_JOB_ID\"\nif ! flock -n 9; then echo \"$SLURM_JOB_ID $SLURM_RESTART_COUNT $SLURMD_NODENAME\" >> \"$SLURM_SUBMIT_DIR/doubles\"; fi\n{work}\n"
    )
}

struct Submitter {
    http: reqwest::Client,
    urls: Vec<String>,
    token: String,
    dir: String,
}

impl Submitter {
    /// Submits with an idempotency key, retrying across the api replicas until one
    /// acknowledges (or `give_up` passes). Returns the job id when acknowledged.
    async fn submit(&self, n: usize, script: &str, args: &[&str], give_up: Instant) -> Option<i64> {
        let body = serde_json::json!({
            "script": script,
            "args": args,
            "submit_dir": self.dir,
            "environment": { "PATH": std::env::var("PATH").unwrap_or_default() },
        });
        let key = format!("chaos-{n}");
        let mut i = n;
        while Instant::now() < give_up {
            let url = &self.urls[i % self.urls.len()];
            i += 1;
            let r = self
                .http
                .post(format!("{url}/v1/jobs"))
                .bearer_auth(&self.token)
                .header("Idempotency-Key", &key)
                .timeout(Duration::from_secs(10))
                .json(&body)
                .send()
                .await;
            match r {
                Ok(r) if r.status().is_success() => {
                    let v: serde_json::Value = r.json().await.ok()?;
                    return v["id"].as_i64();
                }
                Ok(r) if r.status().is_server_error() => {}
                Ok(r) => panic!(
                    "submission refused: {} {}",
                    r.status(),
                    r.text().await.unwrap_or_default()
                ),
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        None
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_survive_random_kills_and_database_restarts() {
    let chaos_for = Duration::from_secs(
        std::env::var("BERTH_CHAOS_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(30),
    );
    let seed: u64 = std::env::var("BERTH_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("chaos: seed {seed}, {chaos_for:?} of faults");
    let pg = Arc::new(PrivatePg::start());
    let cluster = TestCluster::start(Options {
        workers: 3,
        gpus: "4xH100",
        schedulers: 2,
        apis: 2,
        poll_wait: Some(2),
        scheduler_config: "node_timeout_seconds = 5\ncompleting_timeout_seconds = 30",
        server_url: Some(pg.url()),
        ..Default::default()
    })
    .await;
    let dir = cluster.dir.clone();
    let submitter = Arc::new(Submitter {
        http: reqwest::Client::new(),
        urls: cluster.api_urls.clone(),
        token: cluster.token.clone(),
        dir: dir.to_string_lossy().into_owned(),
    });
    let db_url = cluster.db_url.clone();
    let cluster = Arc::new(Mutex::new(cluster));
    let stop = Arc::new(AtomicBool::new(false));
    let db_down = Arc::new(AtomicBool::new(false));

    // The stream of jobs.
    let submissions = {
        let submitter = submitter.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
            let mut acked: Vec<(i64, Kind, bool)> = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let kind = match rng.random_range(0..10) {
                    0 => Kind::Fails,
                    1 => Kind::OverLimit,
                    2 => Kind::NoRequeue,
                    _ => Kind::Ok,
                };
                let gang = rng.random_range(0..6) == 0;
                let seconds = rng.random_range(1..6);
                let mut args: Vec<&str> = if gang {
                    vec!["-N", "2", "--gpus-per-node=2"]
                } else if rng.random_bool(0.3) {
                    vec!["--gres=gpu:2"]
                } else {
                    vec!["--gres=gpu:1"]
                };
                // minutes:seconds
                let limit = if kind == Kind::OverLimit {
                    "0:03"
                } else {
                    "0:30"
                };
                args.extend(["--time", limit]);
                if kind == Kind::NoRequeue {
                    args.push("--no-requeue");
                }
                let give_up = Instant::now() + Duration::from_secs(30);
                if let Some(id) = submitter
                    .submit(n, &script(kind, seconds), &args, give_up)
                    .await
                {
                    acked.push((id, kind, gang));
                }
                tokio::time::sleep(Duration::from_millis(rng.random_range(200..900))).await;
            }
            (n, acked)
        })
    };

    // The leader-gap monitor: samples the lease and the queue from the database.
    let monitor = {
        let stop = stop.clone();
        let db_down = db_down.clone();
        let db_url = db_url.clone();
        tokio::spawn(async move {
            let mut longest = Duration::ZERO;
            let mut gap_since: Option<Instant> = None;
            while !stop.load(Ordering::Relaxed) {
                let sample = async {
                    let mut conn: sqlx::PgConnection =
                        sqlx::Connection::connect(&db_url).await.ok()?;
                    let row: (Option<String>, bool) = sqlx::query_as(
                        "SELECT (SELECT holder FROM leader_lease WHERE expires_at > now()),
                                EXISTS (SELECT 1 FROM jobs WHERE state = 'PENDING')",
                    )
                    .fetch_one(&mut conn)
                    .await
                    .ok()?;
                    Some(row)
                };
                let sample = tokio::time::timeout(Duration::from_secs(2), sample)
                    .await
                    .ok()
                    .flatten();
                // A leader is placing when the lease is live and its holder (named
                // `<host>-<pid>`) is a live process: a killed leader's lease stays live
                // until it expires, and that time counts as a gap.
                let leading = |holder: &Option<String>| {
                    holder
                        .as_deref()
                        .and_then(|h| h.rsplit('-').next())
                        .is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
                };
                match sample {
                    Some((holder, true))
                        if !leading(&holder) && !db_down.load(Ordering::Relaxed) =>
                    {
                        let since = *gap_since.get_or_insert_with(Instant::now);
                        longest = longest.max(since.elapsed());
                    }
                    _ => gap_since = None,
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            longest
        })
    };

    // The faults.
    let mut rng = StdRng::seed_from_u64(seed);
    let mut kills: BTreeMap<&'static str, u32> = BTreeMap::new();
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The first faults are one of each kind, so that even the short form meets them all.
    let mut opening = vec![70u32, 40, 0, 55, 20].into_iter();
    while started.elapsed() < chaos_for {
        let fault = opening.next().unwrap_or_else(|| rng.random_range(0..100));
        let pause = Duration::from_millis(rng.random_range(500..3000));
        if fault < 12 {
            db_down.store(true, Ordering::Relaxed);
            let pg1 = pg.clone();
            tokio::task::spawn_blocking(move || pg1.down())
                .await
                .unwrap();
            tokio::time::sleep(pause).await;
            let pg2 = pg.clone();
            tokio::task::spawn_blocking(move || pg2.up()).await.unwrap();
            db_down.store(false, Ordering::Relaxed);
            *kills.entry("postgres restart").or_default() += 1;
        } else {
            let mut c = cluster.lock().await;
            let leader = c.leader_component().await.map(|(n, _)| n);
            let (what, name) = match fault {
                12..=36 => ("leader", leader.clone()),
                37..=51 => (
                    "standby",
                    ["scheduler-0", "scheduler-1"]
                        .into_iter()
                        .find(|s| Some(s.to_string()) != leader)
                        .map(str::to_string),
                ),
                52..=66 => (
                    "api",
                    Some(["api", "api-1"][rng.random_range(0..2)].to_string()),
                ),
                _ => ("worker", Some(format!("node-{}", rng.random_range(1..=3)))),
            };
            let Some(name) = name else { continue };
            c.kill(&name);
            // A worker sometimes stays away longer than the node timeout: that is its
            // node crashing, and its job processes die with it. (A worker process that
            // dies alone leaves them running; its shepherds stop them if it stays away
            // longer than the node's lease, and the restarted worker supervises them
            // otherwise.)
            let away = if what == "worker" && rng.random_bool(0.4) {
                let marker = format!("SLURM_SUBMIT_DIR={}", dir.display());
                let node = format!("SLURMD_NODENAME={name}");
                for (pid, _) in job_processes(&marker) {
                    if has_env(pid, &node) {
                        let _ = nix::sys::signal::kill(
                            nix::unistd::Pid::from_raw(pid),
                            nix::sys::signal::Signal::SIGKILL,
                        );
                    }
                }
                *kills.entry("node crash").or_default() += 1;
                Duration::from_secs(8)
            } else {
                *kills.entry(what).or_default() += 1;
                pause
            };
            drop(c);
            tokio::time::sleep(away).await;
            cluster.lock().await.restart(&name);
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(500..2000))).await;
    }
    stop.store(true, Ordering::Relaxed);
    let (submitted, acked) = submissions.await.unwrap();
    let longest_gap = monitor.await.unwrap();

    // Everything acknowledged ends.
    let c = cluster.lock().await;
    let db = sqlx::PgPool::connect(&db_url).await.unwrap();
    let ids: Vec<i64> = acked.iter().map(|(id, _, _)| *id).collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM jobs WHERE id = ANY($1) AND state NOT IN
             ('COMPLETED','FAILED','TIMEOUT','CANCELLED','NODE_FAIL','PREEMPTED','OUT_OF_MEMORY','BOOT_FAIL','DEADLINE')",
        )
        .bind(&ids)
        .fetch_one(&db)
        .await
        .unwrap();
        if open == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{open} jobs did not end; scheduler-0:\n{}",
            c.log("scheduler-0")
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // 1. Every acknowledged job exists, once, in the terminal state its script leads to.
    let mut by_state: BTreeMap<String, u32> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (id, kind, _) in &acked {
        let job = c.job(*id).await;
        *by_state.entry(job.state.as_str().to_string()).or_default() += 1;
        let expected_ok = match kind {
            Kind::Ok => job.state == JobState::Completed && job.exit_code == Some(0),
            Kind::Fails => job.state == JobState::Failed && job.exit_code == Some(1),
            Kind::OverLimit => job.state == JobState::Timeout,
            Kind::NoRequeue => {
                (job.state == JobState::Completed && job.exit_code == Some(0))
                    || (job.state == JobState::NodeFail && job.restart_count == 0)
            }
        };
        if !expected_ok {
            wrong.push(format!(
                "job {id} ({kind:?}): {:?} exit {:?} reason {:?}",
                job.state, job.exit_code, job.reason
            ));
        }
    }
    let distinct: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT id) FROM jobs WHERE id = ANY($1)")
            .bind(&ids)
            .fetch_one(&db)
            .await
            .unwrap();
    let exits: Vec<(i64, i32, i64)> = sqlx::query_as(
        "SELECT job_id, run, count(*) FROM job_events WHERE kind = 'exited' AND job_id = ANY($1)
         GROUP BY job_id, run, node HAVING count(*) > 1",
    )
    .bind(&ids)
    .fetch_all(&db)
    .await
    .unwrap();

    // 2. No job ran twice at once.
    let doubles = std::fs::read_to_string(dir.join("doubles")).unwrap_or_default();

    // 3. Requeued jobs show their restarts.
    let restarts: Vec<(i64, i32, i64)> = sqlx::query_as(
        "SELECT j.id, j.restart_count,
                (SELECT count(*) FROM job_events e WHERE e.job_id = j.id AND e.kind = 'node_fail'
                   AND (e.detail->>'requeued')::boolean)
         FROM jobs j WHERE j.id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(&db)
    .await
    .unwrap();
    let requeued_jobs = restarts.iter().filter(|(_, r, _)| *r > 0).count();
    let mismatched: Vec<_> = restarts
        .iter()
        .filter(|(_, count, events)| i64::from(*count) != *events)
        .collect();

    // 4. No GPU in two live allocations, from the allocation history.
    let overlaps: Vec<(i64, i64, i32)> = sqlx::query_as(
        "SELECT a.job_id, b.job_id, ga.gpu_index
         FROM allocation_gpus ga JOIN allocations a ON a.id = ga.allocation_id
         JOIN allocation_gpus gb ON gb.node_id = ga.node_id AND gb.gpu_index = ga.gpu_index
              AND gb.allocation_id > ga.allocation_id
         JOIN allocations b ON b.id = gb.allocation_id
         WHERE tstzrange(a.created_at, COALESCE(ga.released_at, 'infinity'))
               && tstzrange(b.created_at, COALESCE(gb.released_at, 'infinity'))",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    let allocations: i64 = sqlx::query_scalar("SELECT count(*) FROM allocations")
        .fetch_one(&db)
        .await
        .unwrap();

    // 5. No orphaned job process (give killed process groups a moment to be reaped).
    let marker = format!("SLURM_SUBMIT_DIR={}", dir.display());
    let mut orphans = job_processes(&marker);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !orphans.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        orphans = job_processes(&marker);
    }

    let total_kills: u32 = kills.values().sum();
    println!("chaos figures (seed {seed}):");
    println!("  faults: {total_kills} {kills:?}");
    println!(
        "  jobs: {submitted} submitted, {} acknowledged, {distinct} stored, end states {by_state:?}",
        acked.len()
    );
    println!(
        "  gangs: {}, requeued jobs: {requeued_jobs}, allocations: {allocations}",
        acked.iter().filter(|(_, _, g)| *g).count()
    );
    println!(
        "  losses: {}, wrong end states: {}, double runs: {}, GPU overlaps: {}, orphans: {}",
        acked.len() as i64 - distinct,
        wrong.len(),
        doubles.lines().count(),
        overlaps.len(),
        orphans.len()
    );
    println!("  longest time with a pending job and no live leader (database up): {longest_gap:?}");

    assert_eq!(distinct, acked.len() as i64, "acknowledged jobs lost");
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(exits.is_empty(), "exit applied twice: {exits:?}");
    assert!(doubles.is_empty(), "jobs ran twice at once:\n{doubles}");
    assert!(mismatched.is_empty(), "restart counts: {mismatched:?}");
    assert!(overlaps.is_empty(), "GPUs held twice: {overlaps:?}");
    assert!(orphans.is_empty(), "orphaned job processes: {orphans:?}");
    assert!(
        longest_gap < Duration::from_secs(30),
        "no leader for {longest_gap:?}"
    );
    assert!(!acked.is_empty());
    db.close().await;
    drop(c);
    drop(cluster);
}

/// Whether process `pid`'s environment holds `kv`.
fn has_env(pid: i32, kv: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|e| e.split(|b| *b == 0).any(|x| x == kv.as_bytes()))
}

/// Processes whose environment holds `marker` (job processes of this cluster).
fn job_processes(marker: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
            let cmd = std::fs::read(entry.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            found.push((pid, cmd));
        }
    }
    found
}
