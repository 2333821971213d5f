//! PostgreSQL failover under a stream of jobs: a primary and a streaming standby
//! (`pg_basebackup -R`) built from the machine's PostgreSQL, Berth's roles connected
//! through a TCP proxy in the test (what a virtual IP or a proxy does in production). While
//! jobs are submitted and run, the primary is stopped hard (`immediate`, as a crash), the
//! standby promoted and the proxy switched to it; submissions go on. Then:
//!
//! * with synchronous replication (`synchronous_standby_names`), every acknowledged job
//!   completes: nothing acknowledged is lost;
//! * in both modes (the other: asynchronous, `synchronous_commit = off`), every job
//!   acknowledged after the switch completes, nothing is left pending (the scheduler sees
//!   the jobs submitted on the promoted server although it hands out transaction ids the
//!   old primary had used), and no job ran twice: each job's script appends a line with a
//!   token of its submission and its run to a file; no run of a submission starts twice, a
//!   submission never has two runs live at once, and a completed job never starts again.
//!
//! Every role (api, scheduler, workers) reconnects by itself.

use crate::cluster::{Options, TestCluster};
use crate::private_pg::PrivatePg;
use berth_core::state::JobState;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

/// A TCP proxy to one server at a time; switching cuts the connections it carries.
struct Proxy {
    port: u16,
    target: Arc<AtomicU16>,
    generation: tokio::sync::watch::Sender<u64>,
}

impl Proxy {
    async fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let target = Arc::new(AtomicU16::new(target));
        let (generation, _) = tokio::sync::watch::channel(0u64);
        let proxy = Proxy {
            port,
            target: target.clone(),
            generation: generation.clone(),
        };
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let to = target.load(Ordering::SeqCst);
                let mut cut = generation.subscribe();
                tokio::spawn(async move {
                    // A server that is down: the client's connection is closed at once.
                    let Ok(mut server) = TcpStream::connect(("127.0.0.1", to)).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        proxy
    }

    fn switch(&self, target: u16) {
        self.target.store(target, Ordering::SeqCst);
        self.generation.send_modify(|g| *g += 1);
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

/// One submission of the stream: its token, when it was answered, and the job id when it
/// was acknowledged (201).
#[derive(Debug, Clone)]
struct Submission {
    token: String,
    after_switch: bool,
    id: Option<i64>,
}

/// A line of the runs file: (token, job id, run, "start" | "end").
fn parse_runs(text: &str) -> Vec<(String, i64, u32, String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((
                f.next()?.to_string(),
                f.next()?.parse().ok()?,
                f.next()?.parse().ok()?,
                f.next()?.to_string(),
            ))
        })
        .collect()
}

/// Runs of one token that started twice, overlapped, or started after the completed run:
/// the violations of "no job ran twice", in words.
fn ran_twice(
    lines: &[(String, i64, u32, String)],
    completed: &HashMap<String, u32>,
) -> Vec<String> {
    let mut bad = Vec::new();
    let mut started: BTreeMap<(String, u32), usize> = BTreeMap::new();
    let mut live: HashMap<String, Vec<u32>> = HashMap::new();
    let mut done: HashMap<String, bool> = HashMap::new();
    for (i, (token, id, run, what)) in lines.iter().enumerate() {
        match what.as_str() {
            "start" => {
                let n = started.entry((token.clone(), *run)).or_default();
                *n += 1;
                if *n > 1 {
                    bad.push(format!(
                        "line {i}: job {id} ({token}) run {run} started again"
                    ));
                }
                let runs = live.entry(token.clone()).or_default();
                if !runs.is_empty() {
                    bad.push(format!(
                        "line {i}: job {id} ({token}) run {run} started while run(s) {runs:?} ran"
                    ));
                }
                runs.push(*run);
                if done.get(token).copied().unwrap_or(false) {
                    bad.push(format!(
                        "line {i}: job {id} ({token}) run {run} started after the job completed"
                    ));
                }
            }
            _ => {
                if let Some(runs) = live.get_mut(token) {
                    runs.retain(|r| r != run);
                }
                if completed.get(token) == Some(run) {
                    done.insert(token.clone(), true);
                }
            }
        }
    }
    bad
}

/// `cut`: the standby's replication link is cut this long before the primary crashes,
/// so the promoted server lacks everything of those seconds (an asynchronous standby that
/// fell behind): it hands out the job ids and transaction ids of the lost primary again.
async fn failover_under_a_job_stream(synchronous: bool, cut: Option<Duration>) {
    // Commits wait for the standby (synchronous), or not even for the primary's own disk
    // (asynchronous). Settings go on the command line of the server they are for: the
    // standby's copy of the configuration must not wait for a standby of its own.
    let (primary_settings, standby_settings) = if synchronous {
        ("-c synchronous_standby_names=*", "")
    } else {
        ("-c synchronous_commit=off", "-c synchronous_commit=off")
    };
    let primary = PrivatePg::start_with(primary_settings);
    // The standby replicates through a proxy the test can cut.
    let replication = Proxy::start(primary.port).await;
    let standby = PrivatePg::standby_of(replication.port, standby_settings);
    let proxy = Proxy::start(primary.port).await;
    let c = TestCluster::start(Options {
        workers: 2,
        gpus: if cut.is_some() { "8xH100" } else { "4xH100" },
        poll_wait: Some(1),
        server_url: Some(proxy.url()),
        ..Default::default()
    })
    .await;
    c.wait_leader(30).await;
    let runs_file = c.dir.join("runs.log");
    std::fs::write(&runs_file, "").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runs_file, std::fs::Permissions::from_mode(0o666)).unwrap();
    }

    // The stream: a 2-second job every 300 ms (with a cut, a half-second job every 100 ms
    // on more GPUs, so that the lost primary runs many jobs under ids the promoted one
    // hands out again), each with a token of its own.
    let every = Duration::from_millis(if cut.is_some() { 100 } else { 300 });
    let length = if cut.is_some() { "0.5" } else { "2" };
    let stop = Arc::new(AtomicBool::new(false));
    let switched = Arc::new(AtomicBool::new(false));
    let submissions: Arc<Mutex<Vec<Submission>>> = Arc::default();
    let stream = tokio::spawn({
        let (stop, switched, submissions) = (stop.clone(), switched.clone(), submissions.clone());
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        let (url, token, dir) = (c.url.clone(), c.token.clone(), c.dir.clone());
        let runs = runs_file.display().to_string();
        async move {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let nonce = format!("s{n}");
                let script = format!(
                    "#!/bin/bash\necho \"{nonce} $SLURM_JOB_ID $SLURM_RESTART_COUNT start\" >> {runs}\nsleep {length}\necho \"{nonce} $SLURM_JOB_ID $SLURM_RESTART_COUNT end\" >> {runs}\n"
                );
                let answer = http
                    .post(format!("{url}/v1/jobs"))
                    .bearer_auth(&token)
                    .json(&serde_json::json!({
                        "script": script,
                        "args": ["--gres=gpu:1", "--time=1"],
                        "submit_dir": dir,
                    }))
                    .send()
                    .await;
                let id = match answer {
                    Ok(r) if r.status() == 201 => r
                        .json::<serde_json::Value>()
                        .await
                        .ok()
                        .and_then(|v| v["id"].as_i64()),
                    _ => None,
                };
                submissions.lock().unwrap().push(Submission {
                    token: nonce,
                    after_switch: switched.load(Ordering::SeqCst),
                    id,
                });
                tokio::time::sleep(every).await;
            }
        }
    });

    tokio::time::sleep(Duration::from_secs(8)).await;
    if let Some(cut) = cut {
        replication.switch(1);
        println!("failover: replication cut; the primary runs on alone for {cut:?}");
        tokio::time::sleep(cut).await;
    }
    primary.crash();
    tokio::time::sleep(Duration::from_secs(1)).await;
    standby.promote();
    proxy.switch(standby.port);
    switched.store(true, Ordering::SeqCst);
    println!("failover: primary crashed, standby promoted, proxy switched");
    tokio::time::sleep(Duration::from_secs(10)).await;
    stop.store(true, Ordering::SeqCst);
    stream.await.unwrap();
    let submissions = submissions.lock().unwrap().clone();

    // First, what the promoted server was asked: every submission acknowledged after the
    // switch completes, and no job waits (the scheduler sees the jobs written on the new
    // server).
    let after: Vec<i64> = submissions
        .iter()
        .filter(|s| s.after_switch)
        .filter_map(|s| s.id)
        .collect();
    let db = c.db().await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let waiting: Vec<(i64, String, Option<String>)> = sqlx::query_as(
            "SELECT id, state, reason FROM jobs
             WHERE state = 'PENDING' OR (id = ANY($1) AND state <> 'COMPLETED') ORDER BY id",
        )
        .bind(&after)
        .fetch_all(&db)
        .await
        .unwrap();
        if waiting.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "jobs still waiting 2 minutes after the stream stopped (id, state, reason): {waiting:?}\nscheduler:\n{}",
            tail(&c.log("scheduler-0"), 60)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Then every job the promoted server has ends.
    let deadline = Instant::now() + Duration::from_secs(60);
    let jobs: Vec<(i64, String, Option<String>, String)> = loop {
        let jobs: Vec<(i64, String, Option<String>, String)> =
            sqlx::query_as("SELECT id, state, reason, script FROM jobs ORDER BY id")
                .fetch_all(&db)
                .await
                .unwrap();
        let open: Vec<_> = jobs
            .iter()
            .filter(|(_, state, _, _)| {
                !["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"]
                    .contains(&state.as_str())
            })
            .map(|(id, s, r, _)| (*id, s.clone(), r.clone()))
            .collect();
        if open.is_empty() {
            break jobs;
        }
        assert!(
            Instant::now() < deadline,
            "jobs not ended (id, state, reason): {open:?}\nscheduler:\n{}",
            tail(&c.log("scheduler-0"), 30)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    db.close().await;
    let by_id: HashMap<i64, (&str, &str)> = jobs
        .iter()
        .map(|(id, state, _, script)| (*id, (state.as_str(), script.as_str())))
        .collect();
    let acknowledged: Vec<&Submission> = submissions.iter().filter(|s| s.id.is_some()).collect();
    let mut lost = Vec::new();
    let mut not_completed = Vec::new();
    let mut completed: HashMap<String, u32> = HashMap::new();
    for s in &acknowledged {
        let id = s.id.unwrap();
        // The job with this id is this submission's when its script carries the token
        // (after an asynchronous failover an id may be handed out again).
        match by_id.get(&id) {
            Some((state, script)) if script.contains(&format!("{} $SLURM_JOB_ID", s.token)) => {
                if *state == "COMPLETED" {
                    let job = c.job(id).await;
                    completed.insert(s.token.clone(), job.restart_count);
                } else {
                    not_completed.push((id, s.token.clone(), state.to_string()));
                }
            }
            _ => lost.push((id, s.token.clone(), s.after_switch)),
        }
    }
    let before = acknowledged.iter().filter(|s| !s.after_switch).count();
    println!(
        "{} mode: {} submissions, {} acknowledged ({before} before the switch), {} completed, lost {lost:?}, not completed {not_completed:?}",
        if synchronous { "synchronous" } else { "asynchronous" },
        submissions.len(),
        acknowledged.len(),
        completed.len(),
    );
    assert!(before >= 10, "too few jobs before the failover: {before}");
    assert!(
        acknowledged.len() > before + 5,
        "too few jobs acknowledged after the failover:\napi:\n{}",
        tail(&c.log("api"), 40)
    );
    // Submissions acknowledged by the promoted server are never lost, in either mode.
    let lost_after: Vec<_> = lost.iter().filter(|l| l.2).collect();
    assert!(
        lost_after.is_empty(),
        "lost after the switch: {lost_after:?}"
    );
    if synchronous {
        assert!(lost.is_empty(), "acknowledged jobs lost: {lost:?}");
    }
    assert!(
        not_completed.is_empty(),
        "acknowledged jobs that did not complete (id, token, state): {not_completed:?}"
    );
    assert_eq!(
        c.job(acknowledged.last().unwrap().id.unwrap()).await.state,
        JobState::Completed
    );

    // No job ended without running: every job the promoted server has ran to its end
    // (its own token's start and end lines, under its id and final run).
    let lines = parse_runs(&std::fs::read_to_string(&runs_file).unwrap());
    let restart_counts: HashMap<i64, u32> = {
        let db = c.db().await;
        let rows: Vec<(i64, i32)> = sqlx::query_as("SELECT id, restart_count FROM jobs")
            .fetch_all(&db)
            .await
            .unwrap();
        db.close().await;
        rows.into_iter().map(|(id, n)| (id, n as u32)).collect()
    };
    let confused = ended_without_running(&jobs, &restart_counts, &lines);
    let reused = acknowledged
        .iter()
        .filter(|s| s.after_switch)
        .filter(|s| acknowledged.iter().any(|b| !b.after_switch && b.id == s.id))
        .count();
    println!("ids handed out again after the switch: {reused}");
    assert!(
        confused.is_empty(),
        "jobs that ended without running (another job's ending):\n{}\nruns file:\n{}",
        confused.join("\n"),
        std::fs::read_to_string(&runs_file).unwrap()
    );

    // No job ran twice.
    let twice = ran_twice(&lines, &completed);
    assert!(
        twice.is_empty(),
        "jobs ran twice:\n{}\nruns file:\n{}",
        twice.join("\n"),
        std::fs::read_to_string(&runs_file).unwrap()
    );
}

/// The jobs (id, state, reason, script) that ended other than COMPLETED, or COMPLETED
/// without their own script's start and end lines under their id and final run: a job
/// given another job's ending. In words.
fn ended_without_running(
    jobs: &[(i64, String, Option<String>, String)],
    restart_counts: &HashMap<i64, u32>,
    lines: &[(String, i64, u32, String)],
) -> Vec<String> {
    let mut bad = Vec::new();
    for (id, state, reason, script) in jobs {
        let Some(token) = script
            .split('"')
            .nth(1)
            .and_then(|echo| echo.split_whitespace().next())
        else {
            continue;
        };
        let run = restart_counts.get(id).copied().unwrap_or(0);
        let has = |what: &str| {
            lines
                .iter()
                .any(|(t, i, r, w)| t == token && i == id && *r == run && w == what)
        };
        if state != "COMPLETED" {
            bad.push(format!("job {id} ({token}) ended {state} ({reason:?})"));
        } else if !has("start") || !has("end") {
            bad.push(format!(
                "job {id} ({token}) COMPLETED in run {run} without running it (start {}, end {})",
                has("start"),
                has("end")
            ));
        }
    }
    bad
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synchronous_replication_failover_loses_nothing_and_runs_nothing_twice() {
    failover_under_a_job_stream(true, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asynchronous_replication_failover_leaves_nothing_stuck_and_runs_nothing_twice() {
    failover_under_a_job_stream(false, None).await;
}

/// Issue 27: the standby 10 s behind (its replication cut 10 s before the crash): the
/// promoted server hands out job ids the lost primary gave to jobs that ran, and workers
/// remember those runs. No job ends without running (none takes another's end), none
/// runs twice, none is left stuck.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asynchronous_standby_ten_seconds_behind_confuses_no_job() {
    failover_under_a_job_stream(false, Some(Duration::from_secs(10))).await;
}

#[test]
fn a_second_start_an_overlap_or_a_start_after_completion_is_running_twice() {
    let lines = |text: &str| parse_runs(text);
    let done: HashMap<String, u32> = [("s1".to_string(), 0)].into();
    assert!(ran_twice(&lines("s1 1 0 start\ns1 1 0 end\n"), &done).is_empty());
    // A requeue: a new run after the first ended, completed by the second.
    let requeued: HashMap<String, u32> = [("s1".to_string(), 1)].into();
    assert!(ran_twice(
        &lines("s1 1 0 start\ns1 1 0 end\ns1 1 1 start\ns1 1 1 end\n"),
        &requeued
    )
    .is_empty());
    assert_eq!(
        ran_twice(
            &lines("s1 1 0 start\ns1 1 0 end\ns1 1 0 start\ns1 1 0 end\n"),
            &done
        )
        .len(),
        2,
        "the same run again, after completion"
    );
    assert_eq!(
        ran_twice(&lines("s1 1 0 start\ns1 1 1 start\n"), &HashMap::new()).len(),
        1,
        "two runs at once"
    );
    // Another submission with the same id is not the same job.
    assert!(ran_twice(&lines("s1 1 0 start\ns1 1 0 end\ns2 1 0 start\n"), &done).is_empty());
}

/// The failure of issue 10 item 23 made certain: the standby stops receiving WAL (its
/// replication connection is cut) while the old primary hands out transaction ids the
/// scheduler's snapshot then covers; after the crash and the promotion, the new primary
/// hands those ids out again, to the submissions that follow. The leader keeps its lease
/// (30 s here, so the copy on the standby is still live) and with it its snapshot; it
/// must notice the new server and read everything again, before its periodic full read
/// (60 s) would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_submitted_on_a_promoted_standby_that_reuses_transaction_ids_are_scheduled() {
    let primary = PrivatePg::start_with("-c synchronous_commit=off");
    // The standby replicates through a proxy the test can cut.
    let replication = Proxy::start(primary.port).await;
    let standby = PrivatePg::standby_of(replication.port, "-c synchronous_commit=off");
    let proxy = Proxy::start(primary.port).await;
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100",
        poll_wait: Some(1),
        server_url: Some(proxy.url()),
        scheduler_config: "lease_ttl_seconds = 30\nrenew_interval_seconds = 1",
        ..Default::default()
    })
    .await;
    let (_, term) = c.wait_leader(30).await;
    let first = c
        .submit("#!/bin/bash\necho before\n", &["--gres=gpu:1"])
        .await;
    assert_eq!(c.wait_ended(first, 60).await.state, JobState::Completed);
    // Let the standby catch up (the job's end, the lease), then cut it off.
    let direct = sqlx::PgPool::connect(&primary.url()).await.unwrap();
    let caught_up = Instant::now() + Duration::from_secs(30);
    loop {
        let lag: Option<i64> = sqlx::query_scalar(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint FROM pg_stat_replication",
        )
        .fetch_optional(&direct)
        .await
        .unwrap();
        if lag == Some(0) {
            break;
        }
        assert!(
            Instant::now() < caught_up,
            "the standby does not catch up ({lag:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    replication.switch(1);
    // Ids the standby will never hear of: 500 transactions that only take one.
    for _ in 0..500 {
        sqlx::query("SELECT pg_current_xact_id()")
            .execute(&direct)
            .await
            .unwrap();
    }
    direct.close().await;
    // The leader's cycles (every second) take snapshots that cover them.
    tokio::time::sleep(Duration::from_secs(3)).await;
    primary.crash();
    standby.promote();
    proxy.switch(standby.port);

    // Submissions on the promoted server: the api retries until it reaches it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut ids = Vec::new();
    while ids.len() < 3 {
        match c
            .try_submit("#!/bin/bash\necho after\n", &["--gres=gpu:1"])
            .await
        {
            Ok(id) => ids.push(id),
            Err((status, _)) => {
                assert!(Instant::now() < deadline, "submissions refused: {status}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    // Same leader, same term: its snapshot was not thrown away by an election.
    assert_eq!(c.wait_leader(10).await.1, term);
    for id in ids {
        let job = c.wait_for(id, 40, |j| j.state.is_terminal()).await;
        assert_eq!(job.state, JobState::Completed, "{job:?}");
    }
    // The leader noticed the new server and read everything again; or a lease renewal
    // that failed during the switch made it step down and take the lease again (same
    // holder, same term), which starts from an empty snapshot: everything read again too.
    let log = c.log("scheduler-0");
    assert!(
        log.contains("the database server changed") || log.matches("became leader").count() >= 2,
        "{}",
        tail(&log, 30)
    );
}
