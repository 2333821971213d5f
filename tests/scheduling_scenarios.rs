//! SCENARIOS.md end to end with real workers: S2 (a large job is not starved), S3 (gangs
//! never deadlock), S4 (dependencies on arrays), and hold/release/update.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use berth_core::wire::{Job, JobList};
use std::time::{Duration, Instant};

async fn all_jobs(c: &TestCluster) -> Vec<Job> {
    let list: JobList = c.get("/v1/jobs?limit=1000").await;
    list.items
}

/// The task rows of array `id`, by task index, once `count` of them have ended.
async fn wait_array_ended(c: &TestCluster, id: i64, count: usize, secs: u64) -> Vec<Job> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let mut tasks: Vec<Job> = all_jobs(c)
            .await
            .into_iter()
            .filter(|j| j.array_job_id == Some(id) && j.array_task_id.is_some())
            .collect();
        tasks.sort_by_key(|j| j.array_task_id);
        if tasks.iter().filter(|j| j.state.is_terminal()).count() >= count {
            return tasks;
        }
        assert!(
            Instant::now() < deadline,
            "array {id}: {:?}\n{}",
            tasks
                .iter()
                .map(|t| (t.array_task_id, t.state, t.reason.clone()))
                .collect::<Vec<_>>(),
            c.log("scheduler-0")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// S2: the 4-node job gets a reservation (an expected start) while the whole-node jobs
/// run, and none of the later 1-node jobs takes a node before it starts, even though
/// nodes free up one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s2_a_large_job_is_not_starved_by_small_ones() {
    let c = TestCluster::start(Options {
        workers: 4,
        gpus: "8xH100",
        schedulers: 1,
        ..Default::default()
    })
    .await;
    let mut r = Vec::new();
    for i in 0..4 {
        r.push(
            c.submit(
                &format!("#!/bin/bash\nsleep {}\n", 4 + i),
                &["--gpus-per-node=8", "--time=0:40"],
            )
            .await,
        );
    }
    for id in &r {
        c.wait_for(*id, 60, |j| j.state == JobState::Running).await;
    }
    let big = c
        .submit(
            "#!/bin/bash\nsleep 1\n",
            &["--nodes=4", "--gpus-per-node=8", "--time=0:30"],
        )
        .await;
    let pending = c.wait_for(big, 30, |j| j.expected_start.is_some()).await;
    assert_eq!(pending.state, JobState::Pending);
    assert_eq!(pending.reason.as_deref(), Some("Resources"));
    let r_start = c.job(r[3]).await.start_time.unwrap();
    let expected = pending.expected_start.unwrap();
    assert!(
        (expected - (r_start + chrono::Duration::seconds(40)))
            .num_seconds()
            .abs()
            <= 2,
        "reservation at the last r-job's start + limit: {expected} vs {r_start}"
    );
    let mut small = Vec::new();
    for _ in 0..3 {
        small.push(
            c.submit("#!/bin/bash\ntrue\n", &["--gpus-per-node=8", "--time=5:00"])
                .await,
        );
    }
    let big = c.wait_ended(big, 90).await;
    assert_eq!(big.state, JobState::Completed);
    assert_eq!(big.allocations.len(), 4);
    let big_start = big.start_time.unwrap();
    for id in small {
        let s = c.wait_ended(id, 60).await;
        assert_eq!(s.state, JobState::Completed);
        assert!(
            s.start_time.unwrap() >= big_start,
            "small job {id} started at {:?}, before the big one at {big_start}",
            s.start_time
        );
    }
}

/// S3: two 4-node gangs on 4 nodes: one runs whole, then the other whole; never both
/// partly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_two_gangs_never_deadlock() {
    let c = TestCluster::start(Options {
        workers: 4,
        gpus: "8xH100",
        schedulers: 1,
        ..Default::default()
    })
    .await;
    let args = ["--nodes=4", "--gpus-per-node=8", "--time=0:30"];
    let a = c.submit("#!/bin/bash\nsleep 2\n", &args).await;
    let b = c.submit("#!/bin/bash\nsleep 2\n", &args).await;
    let a = c.wait_ended(a, 60).await;
    let b = c.wait_ended(b, 60).await;
    for j in [&a, &b] {
        assert_eq!(j.state, JobState::Completed);
        assert_eq!(j.allocations.len(), 4);
    }
    let (first, second) = if a.start_time <= b.start_time {
        (&a, &b)
    } else {
        (&b, &a)
    };
    assert!(
        second.start_time.unwrap() >= first.end_time.unwrap(),
        "the second gang started before the first ended"
    );
    let db = c.db().await;
    let per_job: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT job_id, count(DISTINCT created_at) FROM allocations GROUP BY job_id",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    assert!(
        per_job.iter().all(|(_, n)| *n == 1),
        "one decision per gang"
    );
}

async fn s4_cluster() -> TestCluster {
    TestCluster::start(Options {
        workers: 1,
        gpus: "8xH100",
        schedulers: 1,
        ..Default::default()
    })
    .await
}

const TASK: &str = "#!/bin/bash\nsleep 1\necho task=$SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID\n";

/// S4: afterok on an array waits for every task; aftercorr pairs task i with task i; an
/// unknown dependency type is refused naming the option.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s4_dependencies_on_arrays_follow_slurm() {
    let c = s4_cluster().await;
    let p = c
        .submit(TASK, &["--array=0-2", "--gres=gpu:1", "--time=1:00"])
        .await;
    let dep_c = format!("--dependency=afterok:{p}");
    let cj = c
        .submit("#!/bin/bash\ntrue\n", &[&dep_c, "--gres=gpu:1"])
        .await;
    let dep_d = format!("--dependency=aftercorr:{p}");
    let d = c
        .submit(TASK, &["--array=0-2", &dep_d, "--gres=gpu:1"])
        .await;
    let (status, problem) = c
        .try_submit("#!/bin/bash\ntrue\n", &["--dependency=expand:3"])
        .await
        .unwrap_err();
    assert_eq!(status, 400);
    assert!(
        problem
            .field
            .as_deref()
            .unwrap_or("")
            .starts_with("--dependency"),
        "{problem:?}"
    );

    let cj = c.wait_ended(cj, 90).await;
    assert_eq!(cj.state, JobState::Completed);
    let p_tasks = wait_array_ended(&c, p, 3, 60).await;
    assert_eq!(
        p_tasks.iter().map(|t| t.array_task_id).collect::<Vec<_>>(),
        vec![Some(0), Some(1), Some(2)]
    );
    let last_p_end = p_tasks.iter().map(|t| t.end_time.unwrap()).max().unwrap();
    assert!(
        cj.start_time.unwrap() >= last_p_end,
        "C waited for every P task"
    );
    let d_tasks = wait_array_ended(&c, d, 3, 60).await;
    for (pt, dt) in p_tasks.iter().zip(&d_tasks) {
        assert_eq!(pt.array_task_id, dt.array_task_id);
        assert_eq!(dt.state, JobState::Completed);
        assert!(dt.start_time.unwrap() >= pt.end_time.unwrap());
    }
    // The worker saw its array identity.
    let out = c.output(p_tasks[1].id).await;
    assert_eq!(out.trim(), format!("task=1 of {p}"));
}

/// S4 variant: P_1 exits 1, so C never runs (DependencyNeverSatisfied) and neither does
/// D_1, while D_0 and D_2 do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s4_a_failed_task_makes_dependencies_never_satisfied() {
    let c = s4_cluster().await;
    let p = c
        .submit(
            "#!/bin/bash\n[ \"$SLURM_ARRAY_TASK_ID\" = 1 ] && exit 1\nexit 0\n",
            &["--array=0-2", "--gres=gpu:1"],
        )
        .await;
    let dep_c = format!("--dependency=afterok:{p}");
    let cj = c.submit("#!/bin/bash\ntrue\n", &[&dep_c]).await;
    let dep_d = format!("--dependency=aftercorr:{p}");
    let d = c.submit(TASK, &["--array=0-2", &dep_d]).await;
    let cj = c
        .wait_for(cj, 60, |j| {
            j.reason.as_deref() == Some("DependencyNeverSatisfied")
        })
        .await;
    assert_eq!(cj.state, JobState::Pending);
    let d_tasks = wait_array_ended(&c, d, 2, 60).await;
    let ran: Vec<Option<u32>> = d_tasks
        .iter()
        .filter(|t| t.state == JobState::Completed)
        .map(|t| t.array_task_id)
        .collect();
    assert_eq!(ran, vec![Some(0), Some(2)]);
    let d_master = c
        .wait_for(d, 30, |j| {
            j.reason.as_deref() == Some("DependencyNeverSatisfied")
        })
        .await;
    assert_eq!(d_master.state, JobState::Pending);
    assert_eq!(d_master.array_tasks_pending.as_deref(), Some("1"));
    // Cancelling the array's id cancels what is left of it.
    let r = c
        .http
        .post(format!("{}/v1/jobs/{d}/cancel", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    assert_eq!(c.job(d).await.state, JobState::Cancelled);
}

/// Hold, release and update, as scontrol does them; a big array is one row until its
/// tasks start, and its throttle holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_release_update_and_array_throttle() {
    // MaxArraySize raised, as a site with huge sweeps would (the default is Slurm's 1001).
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "8xH100",
        schedulers: 1,
        scheduler_config: "max_array_size = 100000",
        ..Default::default()
    })
    .await;
    let held = c.submit("#!/bin/bash\ntrue\n", &["--hold"]).await;
    let job = c.job(held).await;
    assert_eq!(
        (job.state, job.reason.as_deref()),
        (JobState::Pending, Some("JobHeldUser"))
    );
    let patch: Job = c
        .http
        .patch(format!("{}/v1/jobs/{held}", c.url))
        .bearer_auth(&c.token)
        .json(&serde_json::json!({ "nice": 50, "time_limit": "5:00" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!((patch.nice, patch.time_limit), (50, Some(300)));
    let bad = c
        .http
        .patch(format!("{}/v1/jobs/{held}", c.url))
        .bearer_auth(&c.token)
        .json(&serde_json::json!({ "time_limit": "soon" }))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    let bad: berth_core::wire::Problem = bad.json().await.unwrap();
    assert_eq!(bad.field.as_deref(), Some("time_limit"));
    let release = c
        .http
        .post(format!("{}/v1/jobs/{held}/release", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert!(release.status().is_success());
    assert_eq!(c.wait_ended(held, 60).await.state, JobState::Completed);

    // 100,000 tasks in one request: one row until tasks start; at most 2 run at once.
    let big = c
        .submit(
            "#!/bin/bash\nsleep 2\n",
            &["--array=0-99999%2", "--gres=gpu:1", "--time=1:00"],
        )
        .await;
    let db = c.db().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen_running = 0;
    while Instant::now() < deadline && seen_running < 4 {
        let running: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM jobs WHERE array_job_id = $1 AND state = 'RUNNING'",
        )
        .bind(big)
        .fetch_one(&db)
        .await
        .unwrap();
        assert!(running <= 2, "throttle %2 exceeded: {running}");
        let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE array_job_id = $1")
            .bind(big)
            .fetch_one(&db)
            .await
            .unwrap();
        assert!(
            rows < 20,
            "tasks are split off lazily, not inserted at once"
        );
        seen_running = rows;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let master = c.job(big).await;
    assert_eq!(master.reason.as_deref(), Some("JobArrayTaskLimit"));
    assert!(master
        .array_tasks_pending
        .as_deref()
        .is_some_and(|p| p.ends_with("-99999")));
    let r = c
        .http
        .post(format!("{}/v1/jobs/{big}/cancel", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let left: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM jobs WHERE array_job_id = $1 AND state IN ('PENDING', 'RUNNING')",
    )
    .bind(big)
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(left, 0, "cancelling the array's id cancels every task");
}

/// With `kill_invalid_depend`, a job whose dependency can never be satisfied is cancelled
/// (reason DependencyNeverSatisfied), and so, in turn, are the jobs that needed it to
/// succeed; a job waiting for the failure runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_invalid_depend_cancels_what_can_never_run() {
    let c = TestCluster::start(Options {
        workers: 1,
        scheduler_config: "kill_invalid_depend = true\n",
        ..Default::default()
    })
    .await;
    let a = c.submit("#!/bin/bash\nsleep 1\nexit 1\n", &[]).await;
    let b = c
        .submit(
            "#!/bin/bash\ntrue\n",
            &[&format!("--dependency=afterok:{a}")],
        )
        .await;
    let chained = c
        .submit(
            "#!/bin/bash\ntrue\n",
            &[&format!("--dependency=afterok:{b}")],
        )
        .await;
    let on_failure = c
        .submit(
            "#!/bin/bash\necho cleanup\n",
            &[&format!("--dependency=afternotok:{a}")],
        )
        .await;
    assert_eq!(c.wait_ended(a, 60).await.state, JobState::Failed);
    for id in [b, chained] {
        let j = c.wait_ended(id, 60).await;
        assert_eq!(
            (j.state, j.reason.as_deref()),
            (JobState::Cancelled, Some("DependencyNeverSatisfied")),
            "{j:?}"
        );
        assert!(j.start_time.is_none(), "it never ran: {j:?}");
    }
    assert_eq!(
        c.wait_ended(on_failure, 60).await.state,
        JobState::Completed
    );
    assert_eq!(c.output(on_failure).await, "cleanup\n");
}

/// `scontrol top`: with the node busy, three pending 8-GPU jobs of one user wait in
/// submit order; topping the last makes it first among them (its priority above
/// theirs, theirs lowered by a share, another user's job untouched), and it is the one
/// that starts when the node frees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_moves_a_job_ahead_of_its_users_other_jobs() {
    let c = s4_cluster().await;
    let blocker = c
        .submit("#!/bin/bash\nsleep 600\n", &["--gres=gpu:8", "-t", "10"])
        .await;
    c.wait_for(blocker, 60, |j| j.state == JobState::Running)
        .await;
    let mut mine = Vec::new();
    for _ in 0..3 {
        mine.push(
            c.submit("#!/bin/bash\nsleep 1\n", &["--gres=gpu:8", "-t", "5"])
                .await,
        );
    }
    let bob = c.token_for("bob", berth_core::auth::Role::User);
    let (s, other) = c
        .call(
            reqwest::Method::POST,
            "/v1/jobs",
            Some(&bob),
            Some(
                serde_json::json!({"script": "#!/bin/bash\n#SBATCH --gres=gpu:8 -t 5\nsleep 1\n"}),
            ),
        )
        .await;
    assert_eq!(s, 201, "{other}");
    let other = other["id"].as_i64().unwrap();
    for id in mine.iter().chain([&other]) {
        c.wait_for(*id, 30, |j| j.priority.is_some()).await;
    }
    let last = mine[2];
    let (code, out, err) = c.cli(&c.token, &["scontrol", "top", &last.to_string()]);
    assert_eq!(code, 0, "{out}{err}");
    let topped = c.job(last).await;
    assert!(topped.nice < 0, "{topped:?}");
    for id in &mine[..2] {
        assert!(c.job(*id).await.nice > 0);
    }
    assert_eq!(
        c.job(other).await.nice,
        0,
        "another user's job is untouched"
    );
    // The next pass recomputes priorities: the topped job is first among alice's.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let first = c.job(last).await.priority;
        let rest = [c.job(mine[0]).await.priority, c.job(mine[1]).await.priority];
        if rest.iter().all(|p| *p < first) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "topped {first:?}, others {rest:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Topping a job already first changes nothing; a running job cannot be topped.
    let (code, out, err) = c.cli(&c.token, &["top", &last.to_string()]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(c.job(last).await.nice, topped.nice);
    let (code, _, err) = c.cli(&c.token, &["top", &blocker.to_string()]);
    assert_ne!(code, 0);
    assert!(err.contains("not PENDING"), "{err}");
    // A held job has no priority to compare: refused, nothing changed (hold, top,
    // release must not jump the queue).
    let held = c
        .submit(
            "#!/bin/bash
true
",
            &["--hold", "--gres=gpu:8", "-t", "5"],
        )
        .await;
    let (code, _, err) = c.cli(&c.token, &["top", &held.to_string()]);
    assert_ne!(code, 0);
    assert!(err.contains("held"), "{err}");
    assert_eq!(c.job(held).await.nice, 0);
    // Tops of two jobs at once never fail (they lock in one order).
    let (path0, path1) = (
        format!("/v1/jobs/{}/top", mine[0]),
        format!("/v1/jobs/{}/top", mine[1]),
    );
    for _ in 0..5 {
        let (a, b) = tokio::join!(
            c.call(reqwest::Method::POST, &path0, Some(&c.token), None),
            c.call(reqwest::Method::POST, &path1, Some(&c.token), None)
        );
        assert_eq!((a.0, b.0), (200, 200), "{a:?} {b:?}");
    }
    // An ordered list: the first given ends up first.
    let (code, out, err) = c.cli(
        &c.token,
        &[
            "scontrol",
            "top",
            &format!("{},{},{}", last, mine[0], mine[1]),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    // In that order, and still after the next passes recompute the priorities.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut settled = 0;
    while settled < 3 {
        let (pl, p0, p1) = (
            c.job(last).await.priority,
            c.job(mine[0]).await.priority,
            c.job(mine[1]).await.priority,
        );
        if pl > p0 && p0 > p1 {
            settled += 1;
        } else {
            settled = 0;
        }
        assert!(Instant::now() < deadline, "{pl:?} {p0:?} {p1:?}");
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    // When the node frees, the topped job runs before alice's others.
    let (s, _) = c
        .call(
            reqwest::Method::POST,
            &format!("/v1/jobs/{blocker}/cancel"),
            Some(&c.token),
            None,
        )
        .await;
    assert_eq!(s, 200);
    let ran = c.wait_ended(last, 90).await;
    for id in &mine[..2] {
        let j = c.job(*id).await;
        assert!(
            j.start_time.is_none() || j.start_time >= ran.start_time,
            "job {id} started before the topped one: {j:?}"
        );
    }
}
