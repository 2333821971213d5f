//! Usage reports end to end (`GET /v1/usage`, `GET /v1/usage/cluster`, `berth report` /
//! `sreport`): the figures equal what known `sleep` jobs on simulated GPUs held (GPU
//! time = the job's elapsed time × its GPUs, from its start and end), grouped by account
//! and user; cluster utilisation's allocated GPU time is the same, and its states add
//! up to the reported time; a user sees only the accounts they belong to; a job purged
//! by retention keeps its usage in the report.

use crate::cluster::{berth_bin, Options, TestCluster, TEST_API_CONFIG};
use berth_core::auth::Role;
use berth_core::usage_report::{hour_ceil, hour_floor, ClusterUsage, UsageReport};
use berth_core::wire::Job;
use reqwest::Method;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn sleep(secs: u32) -> String {
    format!("#!/bin/bash\nsleep {secs}\n")
}

async fn start() -> TestCluster {
    TestCluster::start_with_api_config(
        Options {
            workers: 1,
            gpus: "4xH100",
            ..Default::default()
        },
        &format!("{TEST_API_CONFIG}\n[accounting]\nrollup_interval_seconds = 1\n"),
    )
    .await
}

/// physics: ann, bob; bio: cleo (each user's only, so default, account).
async fn accounts(c: &TestCluster) {
    let a = Some(c.token.as_str());
    for name in ["physics", "bio"] {
        let (s, b) = c
            .call(Method::POST, "/v1/accounts", a, Some(json!({"name": name})))
            .await;
        assert_eq!(s, 201, "{b}");
    }
    for (user, account) in [("ann", "physics"), ("bob", "physics"), ("cleo", "bio")] {
        let (s, b) = c
            .call(Method::POST, "/v1/users", a, Some(json!({"name": user})))
            .await;
        assert_eq!(s, 201, "{b}");
        let (s, b) = c
            .call(
                Method::PUT,
                &format!("/v1/accounts/{account}/users/{user}"),
                a,
                Some(json!({})),
            )
            .await;
        assert_eq!(s, 200, "{b}");
    }
}

/// GPU-seconds a finished job held: (end − start) × GPUs.
fn gpu_seconds(j: &Job) -> f64 {
    let (Some(s), Some(e)) = (j.start_time, j.end_time) else {
        panic!("job {} has no start or end: {j:?}", j.id)
    };
    (e - s).num_microseconds().unwrap() as f64 / 1e6 * f64::from(j.gpus_per_node)
}

fn window() -> (String, String) {
    let now = chrono::Utc::now();
    let start = hour_floor(now) - chrono::Duration::hours(1);
    let end = hour_ceil(now) + chrono::Duration::hours(1);
    (start.to_rfc3339(), end.to_rfc3339())
}

fn enc(s: &str) -> String {
    s.replace('+', "%2B").replace(':', "%3A")
}

/// `GET path` with `token`, decoded.
async fn get<T: serde::de::DeserializeOwned>(c: &TestCluster, token: &str, path: &str) -> T {
    let (s, body) = c.call(Method::GET, path, Some(token), None).await;
    assert_eq!(s, 200, "{path}: {body}");
    serde_json::from_value(body).unwrap()
}

/// The report's GPU-seconds per (account, user).
fn by_association(r: &UsageReport) -> BTreeMap<(String, String), f64> {
    r.rows
        .iter()
        .map(|row| {
            (
                (
                    row.account.clone().unwrap_or_default(),
                    row.user.clone().unwrap_or_default(),
                ),
                row.tres["gres/gpu"],
            )
        })
        .collect()
}

/// Polls `path` until `done` holds for the report (the leader rolls the current hour up
/// every second here), up to 30 s.
async fn wait_report<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    c: &TestCluster,
    token: &str,
    path: &str,
    done: impl Fn(&T) -> bool,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r: T = get(c, token, path).await;
        if done(&r) {
            return r;
        }
        if Instant::now() > deadline {
            panic!(
                "{path} never matched: {r:?}\nscheduler:\n{}",
                c.log("scheduler-0")
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn key(account: &str, user: &str) -> (String, String) {
    (account.to_string(), user.to_string())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-3
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_equals_what_sleep_jobs_held_by_account_and_user_and_users_see_their_accounts() {
    let c = start().await;
    accounts(&c).await;
    let mut ids = Vec::new();
    for (user, account, gpus, secs) in [
        ("ann", "physics", 2, 3),
        ("bob", "physics", 1, 4),
        ("cleo", "bio", 1, 2),
        ("ann", "physics", 1, 1),
    ] {
        let gpus = format!("--gpus-per-node={gpus}");
        let account = format!("--account={account}");
        ids.push(
            c.submit_as(user, &sleep(secs), &[gpus.as_str(), account.as_str()], &[])
                .await,
        );
    }
    let mut expected: BTreeMap<(String, String), f64> = BTreeMap::new();
    for id in &ids {
        let j = c.wait_ended(*id, 120).await;
        assert_eq!(j.state, berth_core::state::JobState::Completed, "{j:?}");
        *expected
            .entry((j.account.clone().unwrap_or_default(), j.user.clone()))
            .or_default() += gpu_seconds(&j);
    }
    assert!(expected[&key("physics", "ann")] >= 7.0, "{expected:?}");

    let (start, end) = window();
    let path = format!(
        "/v1/usage?start={}&end={}&group_by=account,user&tres=gres/gpu,cpu&unit=seconds",
        enc(&start),
        enc(&end)
    );
    let r: UsageReport = wait_report(&c, &c.token, &path, |r: &UsageReport| {
        let got = by_association(r);
        got.len() == expected.len()
            && expected
                .iter()
                .all(|(k, v)| got.get(k).is_some_and(|g| close(*g, *v)))
    })
    .await;
    assert_eq!(r.unit, "seconds");
    assert_eq!(r.tres, ["gres/gpu", "cpu"]);
    // Each run is one job; every job asked for one CPU (one task).
    let jobs: u64 = r.rows.iter().map(|row| row.jobs).sum();
    assert_eq!(jobs, 4);
    let cpu: f64 = r.rows.iter().map(|row| row.tres["cpu"]).sum();
    assert!(cpu > 0.0, "{r:?}");
    let total: f64 = expected.values().sum();
    assert!(close(r.total["gres/gpu"], total), "{r:?} vs {total}");
    // The same over whole days (read from the daily rollups) and over a window starting
    // mid-day and ending days later (hours, then days, then hours).
    let today = chrono::Utc::now().date_naive();
    let day = |d: i64| {
        (today + chrono::Duration::days(d))
            .format("%Y-%m-%d")
            .to_string()
    };
    for (from, to) in [
        (day(-2), day(2)),
        (format!("{}T01:00", day(-1)), format!("{}T05:00", day(1))),
    ] {
        let path = format!("/v1/usage?start={from}&end={to}&group_by=account,user&unit=seconds");
        let days: UsageReport = get(&c, &c.token, &path).await;
        let (got, want) = (by_association(&days), by_association(&r));
        assert!(
            got.len() == want.len() && want.iter().all(|(k, v)| close(got[k], *v)),
            "{path}: {got:?} vs {want:?}"
        );
    }

    // By account, in minutes.
    let path_acct = format!(
        "/v1/usage?start={}&end={}&group_by=account",
        enc(&start),
        enc(&end)
    );
    let r: UsageReport = get(&c, &c.token, &path_acct).await;
    let physics = expected[&key("physics", "ann")] + expected[&key("physics", "bob")];
    let row = r
        .rows
        .iter()
        .find(|row| row.account.as_deref() == Some("physics"))
        .unwrap();
    assert!(close(row.tres["gres/gpu"], physics / 60.0), "{r:?}");
    assert!(row.user.is_none());

    // Visibility: ann (physics) sees physics' users, not bio; cleo only bio.
    let ann = c.token_for("ann", Role::User);
    let r: UsageReport = get(&c, &ann, &path).await;
    let seen: Vec<_> = by_association(&r).into_keys().collect();
    assert_eq!(
        seen,
        [
            ("physics".to_string(), "ann".to_string()),
            ("physics".to_string(), "bob".to_string())
        ]
    );
    let cleo = c.token_for("cleo", Role::User);
    let r: UsageReport = get(&c, &cleo, &path).await;
    let seen: Vec<_> = by_association(&r).into_keys().collect();
    assert_eq!(seen, [("bio".to_string(), "cleo".to_string())]);
    assert!(close(r.total["gres/gpu"], expected[&key("bio", "cleo")]));

    // Bad parameters name themselves.
    for (query, field) in [
        ("group_by=node", "group_by"),
        ("tres=gres/fpga", "tres"),
        ("unit=days", "unit"),
        ("start=yesterdayish", "start"),
        ("start=2026-12-02T00:00:00Z&end=2026-12-01T00:00:00Z", "end"),
    ] {
        let (s, p) = c
            .call(
                Method::GET,
                &format!("/v1/usage?{query}"),
                Some(&c.token),
                None,
            )
            .await;
        assert_eq!((s, p["field"].as_str()), (400, Some(field)), "{query}: {p}");
    }
    let (s, p) = c
        .call(
            Method::GET,
            "/v1/usage/cluster?tres=cpu",
            Some(&c.token),
            None,
        )
        .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("tres")), "{p}");

    // Cluster utilisation: the allocated GPU time is the jobs'; the states add up to the
    // reported time, which is the 4 GPUs for every sampled minute.
    let cpath = format!(
        "/v1/usage/cluster?start={}&end={}&unit=seconds",
        enc(&start),
        enc(&end)
    );
    let u: ClusterUsage = wait_report(&c, &ann, &cpath, |u: &ClusterUsage| {
        close(u.total.allocated, total) && u.total.samples >= 1
    })
    .await;
    let t = &u.total;
    assert_eq!(u.rows.len(), 1, "{u:?}");
    assert!(
        u.rows[0]
            .gpu_model
            .as_deref()
            .is_some_and(|m| m.contains("H100")),
        "{u:?}"
    );
    assert!(close(t.reported, 4.0 * 60.0 * t.samples as f64), "{u:?}");
    assert_eq!(
        (t.down, t.planned_down, t.reserved),
        (0.0, 0.0, 0.0),
        "{u:?}"
    );
    assert!(
        close(
            t.idle + t.allocated + t.down + t.planned_down + t.reserved,
            t.reported
        ),
        "{u:?}"
    );

    // sreport's layout through the CLI and through the `sreport` name.
    let (code, out, err) = c.cli(
        &c.token,
        &[
            "report",
            "cluster",
            "Utilization",
            &format!("start={start}"),
            &format!("end={end}"),
            "-T",
            "gres/gpu",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "-".repeat(80), "{out}");
    assert!(lines[1].starts_with("Cluster Utilization "), "{out}");
    assert_eq!(lines[2], "Usage reported in TRES Minutes", "{out}");
    assert!(
        lines[4].contains("Allocated") && lines[4].contains("PLND Down"),
        "{out}"
    );
    let bin = c.dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(berth_bin(), bin.join("sreport")).unwrap();
    let sreport = std::process::Command::new(bin.join("sreport"))
        .args([
            "cluster",
            "AccountUtilizationByUser",
            &format!("start={start}"),
            &format!("end={end}"),
            "-t",
            "seconds",
            "-P",
            "-n",
        ])
        .current_dir(&c.dir)
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &ann)
        .env("HOME", &c.dir)
        .env("XDG_CONFIG_HOME", c.dir.join("config"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&sreport.stdout);
    assert!(
        sreport.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&sreport.stderr)
    );
    let ann_secs = expected[&key("physics", "ann")].round() as i64;
    assert!(
        out.lines()
            .any(|l| l == format!("berth|physics|ann|ann|gres/gpu|{ann_secs}")),
        "{out}"
    );
    assert!(!out.contains("cleo"), "{out}");
    let (code, out, err) = c.cli(
        &c.token,
        &[
            "report",
            "user",
            "TopUsage",
            "TopCount=1",
            &format!("start={start}"),
            &format!("end={end}"),
            "-t",
            "seconds",
            "-P",
            "-n",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("berth|ann|ann|physics|gres/gpu|{ann_secs}\n"));
    let (code, _, err) = c.cli(
        &c.token,
        &["report", "cluster", "Utilization", "-t", "fortnights"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("-t"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purged_job_keeps_its_usage_in_the_report() {
    let c = start().await;
    accounts(&c).await;
    let id = c
        .submit_as(
            "bob",
            &sleep(2),
            &["--gpus-per-node=2", "--account=physics"],
            &[],
        )
        .await;
    let job = c.wait_ended(id, 120).await;
    let held = gpu_seconds(&job);
    let (start, end) = window();
    let path = format!(
        "/v1/usage?start={}&end={}&unit=seconds",
        enc(&start),
        enc(&end)
    );
    let before: UsageReport = wait_report(&c, &c.token, &path, |r: &UsageReport| {
        r.total.get("gres/gpu").is_some_and(|v| close(*v, held))
    })
    .await;

    // Two hours pass for the accounting reconciler (time is its argument): the current
    // hour closes, and retention (1 hour) deletes the job.
    let (_, term) = c.wait_leader(30).await;
    let pool = berth_db::connect(&c.db_url, 2).await.unwrap();
    let later = hour_ceil(chrono::Utc::now())
        + chrono::Duration::hours(1)
        + berth_scheduler::rollup::CLOSE_GRACE
        + chrono::Duration::seconds(1);
    let settings = berth_scheduler::rollup::AccountingSettings {
        purge_jobs_after: Some(Duration::from_secs(3600)),
        ..Default::default()
    };
    let report = berth_scheduler::rollup::pass(
        &pool,
        term,
        later,
        &settings,
        &berth_core::priority::BillingWeights::default(),
    )
    .await
    .unwrap();
    assert!(!report.deposed);
    assert!(report.purged >= 1, "{report:?}");
    let (s, _) = c
        .call(Method::GET, &format!("/v1/jobs/{id}"), Some(&c.token), None)
        .await;
    assert_eq!(s, 404, "job {id} should be purged");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM allocations WHERE job_id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(left, 0);
    // The rollup outlives the raw rows, also after further passes of the real leader.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after: UsageReport = get(&c, &c.token, &path).await;
    assert_eq!(after.rows.len(), before.rows.len(), "{after:?}");
    assert_eq!(after.rows[0].account.as_deref(), Some("physics"));
    assert_eq!(after.rows[0].user.as_deref(), Some("bob"));
    assert_eq!(after.rows[0].jobs, 1);
    assert!(close(after.total["gres/gpu"], held), "{after:?} vs {held}");
    pool.close().await;
}
