//! The api's user-facing side, attacked by an ordinary user: a job's own token used
//! beyond its job and its run, submissions that lower their priority, overflow a parser
//! or a column, name other tenants' jobs or carry terminal escapes, output large enough
//! to exhaust the api, and one user's burst against another's requests.

use super::{can_switch_users, unix_user};
use crate::cluster::{Options, TestCluster, SECRET, TEST_API_CONFIG};
use berth_core::auth::Role;
use berth_core::state::JobState;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Submits `script` as `user` (a JWT of theirs) from the cluster's directory, with
/// `env` in its environment; the job id.
async fn submit_as(c: &TestCluster, user: &str, script: &str, env: &[(&str, &str)]) -> i64 {
    c.submit_as(user, script, &[], env).await
}

/// The value of the last `key=` line of the job's stored output, waiting up to `secs`
/// for one to appear after `after` such lines.
async fn output_value(c: &TestCluster, id: i64, key: &str, after: usize, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let prefix = format!("{key}=");
    loop {
        let out = c.output(id).await;
        let values: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix(prefix.as_str()))
            .collect();
        if values.len() > after {
            return values[values.len() - 1].to_string();
        }
        assert!(
            Instant::now() < deadline,
            "no {key}= line in job {id}'s output:\n{out}\n{}",
            c.log("node-1")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The token a job is given (`BERTH_TOKEN`) reaches its own job only, never mints a
/// credential, and does nothing once its run is over: after a requeue (a new run) the
/// old run's token is refused, and after a cancel the job's token can no longer requeue
/// it. The job runs as a real Unix user and tries from inside with curl.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_token_acts_on_its_own_run_only() {
    if !can_switch_users("a_job_token_acts_on_its_own_run_only") {
        return;
    }
    unix_user("bxt-alice");
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            ..Default::default()
        },
        &["--run-as", "submitter"],
    )
    .await;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let alice = berth_api::mint_token(SECRET, "bxt-alice", Role::User, 3600);
    // Another job of the same user, held: the job's token must not reach it.
    let other = submit_as(&c, "bxt-alice", "#!/bin/bash\n#SBATCH --hold\ntrue\n", &[]).await;
    let other_s = other.to_string();
    let script = "#!/bin/bash\n#SBATCH -o /tmp/bxt-token-%j.out\n\
        code() { curl -s -o /dev/null -w '%{http_code}' -H \"Authorization: Bearer $BERTH_TOKEN\" \"$@\"; }\n\
        echo mint=$(code -X POST -H 'Content-Type: application/json' -d '{\"name\":\"escape\"}' $BERTH_API/v1/tokens)\n\
        echo boot=$(code -X POST -H 'Content-Type: application/json' -d '{\"ttl_minutes\":5}' $BERTH_API/v1/nodes/bootstrap-tokens)\n\
        echo other=$(code $BERTH_API/v1/jobs/$OTHER)\n\
        echo cancel_other=$(code -X POST $BERTH_API/v1/jobs/$OTHER/cancel)\n\
        echo own=$(code $BERTH_API/v1/jobs/$BERTH_JOB_ID)\n\
        echo token=$BERTH_TOKEN\n\
        sleep 600\n";
    let id = submit_as(&c, "bxt-alice", script, &[("OTHER", &other_s)]).await;
    let token0 = output_value(&c, id, "token", 0, 90).await;
    // What the job tried from inside.
    assert_eq!(output_value(&c, id, "mint", 0, 5).await, "403");
    assert_eq!(output_value(&c, id, "boot", 0, 5).await, "403");
    assert_eq!(output_value(&c, id, "other", 0, 5).await, "404");
    assert_eq!(output_value(&c, id, "cancel_other", 0, 5).await, "404");
    assert_eq!(output_value(&c, id, "own", 0, 5).await, "200");
    assert_eq!(c.job(other).await.state, JobState::Pending, "untouched");
    let (s, tokens) = c.call(Method::GET, "/v1/tokens", Some(&alice), None).await;
    assert_eq!(
        (s, tokens["items"].as_array().map(Vec::len)),
        (200, Some(0))
    );

    // While the run lives, the token lists and submits as its user, and nothing else.
    let t = Some(token0.as_str());
    assert_eq!(c.call(Method::GET, "/v1/jobs", t, None).await.0, 200);
    let (s, sub) = c
        .call(
            Method::POST,
            "/v1/jobs",
            t,
            Some(json!({"script": "#!/bin/bash\n#SBATCH --hold\ntrue\n"})),
        )
        .await;
    assert_eq!(s, 201, "{sub}");
    for (method, path, body) in [
        (Method::GET, "/v1/tokens".to_string(), None),
        (Method::POST, format!("/v1/jobs/{id}/hold"), None),
        (Method::POST, format!("/v1/jobs/{other}/release"), None),
        (
            Method::POST,
            "/v1/jobs/release".to_string(),
            Some(json!({"jobs": [other_s]})),
        ),
        (Method::GET, "/v1/accounts".to_string(), None),
    ] {
        let (s, p) = c.call(method.clone(), &path, t, body).await;
        assert_eq!(s, 403, "{method} {path}: {p}");
    }
    let (s, p) = c
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{other}"),
            t,
            Some(json!({"nice": 5})),
        )
        .await;
    assert_eq!(s, 404, "another job is unknown to the token: {p}");
    let (s, batch) = c
        .call(
            Method::POST,
            "/v1/jobs/cancel",
            t,
            Some(json!({"jobs": [other_s]})),
        )
        .await;
    assert_eq!((s, batch["items"][0]["status"].as_u64()), (200, Some(404)));
    assert_eq!(c.job(other).await.state, JobState::Pending, "untouched");

    // A requeue starts a new run: the first run's token is dead.
    let (s, _) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{id}/requeue"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(s, 200);
    let (s, p) = c
        .call(Method::GET, &format!("/v1/jobs/{id}"), t, None)
        .await;
    assert_eq!(s, 401, "the old run's token after a requeue: {p}");
    assert!(
        p["detail"].as_str().unwrap_or_default().contains("ended"),
        "{p}"
    );
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/jobs",
            t,
            Some(json!({"script": "#!/bin/bash\ntrue\n"})),
        )
        .await;
    assert_eq!(s, 401, "no submission with a dead run's token");

    // The next run gets its own token; once the job is cancelled, it cannot requeue it.
    c.wait_for(id, 90, |j| {
        j.state == JobState::Running && j.restart_count == 1
    })
    .await;
    let token1 = output_value(&c, id, "token", 1, 90).await;
    assert_ne!(token1, token0);
    let t1 = Some(token1.as_str());
    assert_eq!(
        c.call(Method::GET, &format!("/v1/jobs/{id}"), t1, None)
            .await
            .0,
        200
    );
    let (s, _) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{id}/cancel"),
            Some(&c.token),
            None,
        )
        .await;
    assert_eq!(s, 200);
    c.wait_ended(id, 60).await;
    let (s, p) = c
        .call(Method::POST, &format!("/v1/jobs/{id}/requeue"), t1, None)
        .await;
    assert_eq!(s, 401, "requeue with a cancelled job's token: {p}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let job = c.job(id).await;
    assert_eq!(job.state, JobState::Cancelled, "{job:?}");
    assert_eq!(job.restart_count, 1);
    let _ = std::fs::remove_file(format!("/tmp/bxt-token-{id}.out"));
}

/// Submissions that the single-option paths refused, or that reached a panic or a
/// database check: a negative nice through `--nice` or the structured spec, a `--begin`
/// that overflows, a memory size no column holds, control characters in names, and a
/// dependency on another tenant's job (answered exactly as an unknown job is).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submissions_are_checked_whole_before_the_database() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let admin = Some(c.token.as_str());
    for (acct, user) in [("bxt-a", "bxt-ann"), ("bxt-b", "bxt-bob")] {
        c.call(
            Method::POST,
            "/v1/accounts",
            admin,
            Some(json!({"name": acct})),
        )
        .await;
        c.call(
            Method::POST,
            "/v1/users",
            admin,
            Some(json!({"name": user})),
        )
        .await;
        c.call(
            Method::PUT,
            &format!("/v1/accounts/{acct}/users/{user}"),
            admin,
            Some(json!({})),
        )
        .await;
    }
    let ann = c.token_for("bxt-ann", Role::User);
    let bob = c.token_for("bxt-bob", Role::User);
    let submit = |token: &str, body: Value| {
        let token = token.to_string();
        let c = &c;
        async move {
            c.call(Method::POST, "/v1/jobs", Some(&token), Some(body))
                .await
        }
    };
    let held = "#!/bin/bash\n#SBATCH --hold\ntrue\n";

    // Negative nice: refused for users on every path, as PATCH refuses it.
    for body in [
        json!({"script": held, "args": ["--nice=-1000000"]}),
        json!({"script": "#!/bin/bash\n#SBATCH --hold --nice=-5\ntrue\n"}),
        json!({"script": held, "spec": {"nice": -2147483648i64}}),
        json!({"script": held, "spec": {"nice": -1}}),
    ] {
        let (s, p) = submit(&ann, body.clone()).await;
        assert!(s == 403 || s == 400, "{body}: {s} {p}");
        assert!(
            p["detail"].as_str().unwrap_or_default().contains("nice"),
            "{p}"
        );
    }
    let (s, p) = submit(
        &c.token,
        json!({"script": held, "spec": {"nice": -2147483648i64}}),
    )
    .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("--nice")), "{p}");
    let (s, job) = submit(&c.token, json!({"script": held, "args": ["--nice=-50"]})).await;
    assert_eq!(s, 201, "an admin may raise a priority: {job}");

    // Values no parser or column takes: 400 naming the option, never a 500 or a panic.
    for (args, field) in [
        (vec!["--begin=now+99999999999999"], "--begin"),
        (vec!["--begin=now+99999999999999weeks"], "--begin"),
        (vec!["--mem=18446744073709551615"], "--mem"),
        (vec!["--mem-per-gpu=18446744073709551615"], "--mem-per-gpu"),
        (
            vec!["--dependency=afterok:99999999999999999999"],
            "--dependency=afterok:99999999999999999999",
        ),
    ] {
        let (s, p) = submit(&ann, json!({"script": held, "args": args})).await;
        assert_eq!(s, 400, "{args:?}: {p}");
        assert!(
            p["field"].as_str().unwrap_or_default().starts_with(field),
            "{args:?}: {p}"
        );
    }
    for (spec, field) in [
        (json!({"mem_mib": u64::MAX}), "--mem"),
        (json!({"ntasks_per_node": 0}), "--ntasks-per-node"),
        (json!({"time_limit": u64::MAX}), "--time"),
        (json!({"dependency": "afterok:x"}), "--dependency"),
    ] {
        let (s, p) = submit(&ann, json!({"script": held, "spec": spec})).await;
        assert_eq!((s, p["field"].as_str()), (400, Some(field)), "{spec}: {p}");
    }
    // PATCH: a zero time limit is a bad field, not a check violation.
    let (_, pending) = submit(&ann, json!({"script": held})).await;
    let pending = pending["id"].as_i64().unwrap();
    let (s, p) = c
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{pending}"),
            Some(&ann),
            Some(json!({"time_limit": "0"})),
        )
        .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("time_limit")), "{p}");

    // Control characters and bidi overrides in names: refused, naming the field.
    for (body, field) in [
        (
            json!({"script": held, "args": ["-J", "x\u{1b}]0;owned\u{7}"]}),
            "--job-name",
        ),
        (
            json!({"script": "#!/bin/bash\n#SBATCH --hold --comment=a\u{9b}2Jb\ntrue\n"}),
            "--comment",
        ),
        (
            json!({"script": held, "spec": {"job_name": "evil\u{202E}gpj.sh"}}),
            "--job-name",
        ),
        (
            json!({"script": held, "script_name": "a\rb.sbatch"}),
            "script_name",
        ),
    ] {
        let (s, p) = submit(&ann, body.clone()).await;
        assert_eq!((s, p["field"].as_str()), (400, Some(field)), "{body}: {p}");
    }
    let (s, p) = c
        .call(
            Method::POST,
            "/v1/tokens",
            Some(&ann),
            Some(json!({"name": "ci\u{1b}[2J"})),
        )
        .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("name")), "{p}");

    // bob's job exists but ann cannot see it: her dependency on it is answered as a
    // dependency on a job that does not exist, word for word but the id.
    let (_, bobs) = submit(&bob, json!({"script": held})).await;
    let bobs = bobs["id"].as_i64().unwrap();
    let unknown = bobs + 1_000_000;
    let (s1, p1) = submit(
        &ann,
        json!({"script": held, "args": [format!("--dependency=afterok:{bobs}")]}),
    )
    .await;
    let (s2, p2) = submit(
        &ann,
        json!({"script": held, "args": [format!("--dependency=afterok:{unknown}")]}),
    )
    .await;
    assert_eq!((s1, s2), (400, 400), "{p1} {p2}");
    assert_eq!(p1["code"], p2["code"]);
    assert_eq!(p1["field"], p2["field"]);
    assert_eq!(
        p1["detail"]
            .as_str()
            .unwrap()
            .replace(&bobs.to_string(), "N"),
        p2["detail"]
            .as_str()
            .unwrap()
            .replace(&unknown.to_string(), "N"),
    );
    // bob himself (and an admin) may depend on it.
    let (s, p) = submit(
        &bob,
        json!({"script": held, "args": [format!("--dependency=afterok:{bobs}")]}),
    )
    .await;
    assert_eq!(s, 201, "{p}");

    let log = c.log("api");
    assert!(!log.contains("panicked"), "the api panicked:\n{log}");
}

/// Two users behind one address (here 127.0.0.1): one's burst is limited per user and
/// does not throttle the other, while requests without valid credentials still share
/// the address's limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_users_burst_does_not_throttle_another_behind_the_same_address() {
    let c = TestCluster::start_with_api_config(
        Options {
            workers: 1,
            ..Default::default()
        },
        "rate_limit_per_user = 2\nrate_limit_per_address = 2\nrate_limit_burst = 5\nrate_limit_burst_per_address = 5\n",
    )
    .await;
    let bob = c.token_for("bxt-bob", Role::User);
    let amy = c.token_for("bxt-amy", Role::User);
    let mut bob_statuses = Vec::new();
    for _ in 0..15 {
        bob_statuses.push(c.call(Method::GET, "/v1/jobs", Some(&bob), None).await.0);
    }
    assert!(
        bob_statuses.contains(&429),
        "bob is limited: {bob_statuses:?}"
    );
    // At once, from the same address, amy is not.
    for _ in 0..4 {
        let (s, p) = c.call(Method::GET, "/v1/jobs", Some(&amy), None).await;
        assert_eq!(s, 200, "amy throttled by bob's burst: {p}");
    }
    // bob's other token (an API token of his) shares his limit: it is the same user.
    let mut unauthenticated = Vec::new();
    for _ in 0..15 {
        unauthenticated.push(c.call(Method::GET, "/v1/jobs", None, None).await.0);
    }
    assert!(unauthenticated.contains(&429), "{unauthenticated:?}");
    assert!(unauthenticated.contains(&401), "{unauthenticated:?}");
    // Bad credentials count against the address too.
    let mut forged = Vec::new();
    for _ in 0..15 {
        forged.push(
            c.call(Method::GET, "/v1/jobs", Some("not-a-token"), None)
                .await
                .0,
        );
    }
    assert!(forged.contains(&429), "{forged:?}");
    // Made-up API tokens (each a database lookup) as well.
    let mut made_up = Vec::new();
    for i in 0..15 {
        let token = format!("berth_{i:0>43}");
        made_up.push(c.call(Method::GET, "/v1/jobs", Some(&token), None).await.0);
    }
    assert!(made_up.contains(&429), "{made_up:?}");
    assert!(
        made_up.iter().all(|s| *s == 401 || *s == 429),
        "{made_up:?}"
    );
    // And still amy gets through.
    assert_eq!(
        c.call(Method::GET, "/v1/jobs", Some(&amy), None).await.0,
        200
    );
}

/// VmHWM (peak resident memory) of process `pid`, KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A job that prints 100 MiB: it finishes, its file on the node is whole, the database
/// keeps at most the cap (64 MiB by default), readers get the kept part and a line
/// saying it was truncated, the job shows `output_truncated`, and six readers at once
/// (one following the job) leave the api's peak resident memory far below what holding
/// the output in memory per reader took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_is_capped_in_the_database_and_streamed_to_readers() {
    let c = TestCluster::start_with_api_config(
        Options {
            workers: 1,
            ..Default::default()
        },
        TEST_API_CONFIG,
    )
    .await;
    const TOTAL: u64 = 100 * 1024 * 1024;
    const CAP: i64 = 64 * 1024 * 1024;
    let id = c
        .submit(
            &format!(
                "#!/bin/bash\nsleep 2\nyes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvw | head -c {TOTAL}\nsleep 2\n"
            ),
            &[],
        )
        .await;
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let follow = {
        let http = c.http.clone();
        let url = format!("{}/v1/jobs/{id}/output?follow=true", c.url);
        let token = c.token.clone();
        tokio::spawn(async move {
            let r = http.get(url).bearer_auth(token).send().await.unwrap();
            let mut len = 0usize;
            let mut tail = Vec::new();
            let mut body = r.bytes_stream();
            use futures_util::StreamExt;
            while let Some(chunk) = body.next().await {
                let chunk = chunk.unwrap();
                len += chunk.len();
                tail.extend_from_slice(&chunk);
                let keep = tail.len().saturating_sub(400);
                tail.drain(..keep);
            }
            (len, String::from_utf8_lossy(&tail).into_owned())
        })
    };
    let job = c.wait_ended(id, 600).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert!(job.output_truncated, "{job:?}");
    let file = c.dir.join(format!("slurm-{id}.out"));
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        TOTAL,
        "the node's file is whole"
    );

    let db = c.db().await;
    let (stored,): (i64,) = sqlx::query_as(
        "SELECT COALESCE(sum(length(data)), 0)::bigint FROM job_output WHERE job_id = $1",
    )
    .bind(id)
    .fetch_one(&db)
    .await
    .unwrap();
    assert!(
        stored <= CAP && stored > CAP - 128 * 1024,
        "stored {stored} bytes"
    );

    let (followed, tail) = tokio::time::timeout(Duration::from_secs(300), follow)
        .await
        .expect("the following reader ends when the job does")
        .unwrap();
    assert!(followed as i64 > stored, "{followed}");
    assert!(tail.contains("truncated after"), "{tail}");

    // Five readers at once, each reading slowly enough to overlap.
    let api = c.pid("api").unwrap();
    let before = peak_rss_kib(api);
    let readers: Vec<_> = (0..5)
        .map(|_| {
            let http = c.http.clone();
            let url = format!("{}/v1/jobs/{id}/output", c.url);
            let token = c.token.clone();
            tokio::spawn(async move {
                let r = http.get(url).bearer_auth(token).send().await.unwrap();
                assert_eq!(r.status(), 200);
                let mut len = 0usize;
                let mut last = Vec::new();
                let mut body = r.bytes_stream();
                use futures_util::StreamExt;
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.unwrap();
                    len += chunk.len();
                    last = chunk.to_vec();
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                (len, String::from_utf8_lossy(&last).into_owned())
            })
        })
        .collect();
    for reader in readers {
        let (len, last) = reader.await.unwrap();
        assert!(len as i64 > stored && (len as i64) < stored + 1024, "{len}");
        assert!(
            last.contains("[berth: the stdout of run 0 was truncated after"),
            "{last}"
        );
    }
    let after = peak_rss_kib(api);
    eprintln!("api peak resident memory: {before} KiB before the readers, {after} KiB after");
    // Holding the output per reader took about 2 × 64 MiB each (rows, then the body):
    // 640 MiB for five. Streaming holds a page per reader.
    assert!(
        after.saturating_sub(before) < 160 * 1024,
        "the api's peak resident memory grew from {before} KiB to {after} KiB"
    );
    let _ = std::fs::remove_file(file);
}

/// Four parallel `berth submit` loops against a tight per-user limit all succeed (the CLI
/// waits as `Retry-After` says), and `berth hold`, `release` and `cancel` of many jobs
/// send one request each (the audit log has one entry per command).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_waits_out_rate_limits_and_acts_on_many_jobs_in_one_request() {
    let c = TestCluster::start_with_api_config(
        Options {
            workers: 1,
            ..Default::default()
        },
        "rate_limit_per_user = 3\nrate_limit_per_address = 1000\nrate_limit_burst = 3\n",
    )
    .await;
    let token = c.token_for("bxt-carl", Role::User);
    let loops: Vec<_> = (0..4)
        .map(|_| {
            let token = token.clone();
            let dir = c.dir.clone();
            let url = c.url.clone();
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for _ in 0..5 {
                    let out = std::process::Command::new(crate::cluster::berth_bin())
                        .args([
                            "submit",
                            "--parsable",
                            "--hold",
                            "--begin=now+1hour",
                            "--wrap",
                            "true",
                        ])
                        .current_dir(&dir)
                        .env("BERTH_URL", &url)
                        .env("BERTH_TOKEN", &token)
                        .env("HOME", &dir)
                        .env("XDG_CONFIG_HOME", dir.join("config"))
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    ids.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
                }
                ids
            })
        })
        .collect();
    let ids: Vec<String> = loops.into_iter().flat_map(|l| l.join().unwrap()).collect();
    assert_eq!(ids.len(), 20);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (s, list) = c
        .call(Method::GET, "/v1/jobs?user=bxt-carl", Some(&c.token), None)
        .await;
    assert_eq!((s, list["items"].as_array().map(Vec::len)), (200, Some(20)));

    let mut args: Vec<&str> = vec!["release"];
    args.extend(ids.iter().map(String::as_str));
    let (code, _, err) = c.cli(&token, &args);
    assert_eq!(code, 0, "{err}");
    args[0] = "hold";
    let (code, _, err) = c.cli(&token, &args);
    assert_eq!(code, 0, "{err}");
    // Cancel them all, one unknown id among them: reported, the others cancelled.
    args[0] = "cancel";
    args.push("99999999");
    let (code, _, err) = c.cli(&token, &args);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("99999999"), "{err}");
    // (One request: the admin is held to the same tight limit.)
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (s, list) = c
        .call(Method::GET, "/v1/jobs?user=bxt-carl", Some(&c.token), None)
        .await;
    assert_eq!(s, 200, "{list}");
    let states: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["CANCELLED"; 20], "{list}");
    let db = c.db().await;
    let paths: Vec<(String,)> = sqlx::query_as(
        "SELECT path FROM audit_log WHERE actor = 'bxt-carl' AND path <> '/v1/jobs' ORDER BY id",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    let paths: Vec<&str> = paths.iter().map(|(p,)| p.as_str()).collect();
    assert_eq!(
        paths,
        ["/v1/jobs/release", "/v1/jobs/hold", "/v1/jobs/cancel"],
        "one request per command"
    );
}

/// A job name with terminal escapes stored before the api refused them, a reason with a
/// line break: `berth queue`, `berth show job` (text and JSON) and error messages print
/// them escaped, never raw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_prints_escapes_from_the_api_escaped() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let id = c.submit("#!/bin/bash\n#SBATCH --hold\ntrue\n", &[]).await;
    let db = c.db().await;
    sqlx::query("UPDATE jobs SET name = $2, reason = $3 WHERE id = $1")
        .bind(id)
        .bind("\u{1b}]0;owned\u{7}\u{1b}[2J")
        .bind("held\nFAKE 1 line\u{9b}31m")
        .execute(&db)
        .await
        .unwrap();
    for args in [
        vec!["queue"],
        vec!["show", "job", &id.to_string()],
        vec!["show", "job", "--json", &id.to_string()],
    ] {
        let (code, out, err) = c.cli(&c.token, &args);
        assert_eq!(code, 0, "{args:?}: {err}");
        for bad in ['\u{1b}', '\u{7}', '\u{9b}'] {
            assert!(!out.contains(bad), "{args:?} printed {bad:?} raw: {out:?}");
        }
        assert!(!out.contains("\nFAKE"), "{args:?}: {out:?}");
    }
    let (_, out, _) = c.cli(&c.token, &["show", "job", &id.to_string()]);
    assert!(out.contains("\\e]0;owned"), "{out}");
    // A refusal quoting a value is printed escaped too.
    let (code, _, err) = c.cli(&c.token, &["submit", "-J", "x\u{1b}[31m", "--wrap", "true"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--job-name") && !err.contains('\u{1b}'),
        "{err:?}"
    );
}
