//! QOS preemption end to end with real workers: a low-QOS job holding every GPU is
//! preempted by a high-QOS job; with `PreemptMode=CANCEL` it ends PREEMPTED, with
//! `REQUEUE` it goes back to PENDING and runs again later with restart count 1.

use crate::cluster::{Options, TestCluster};
use berth_core::qos::{PreemptMode, QosSpec};
use berth_core::state::JobState;

async fn put_qos(c: &TestCluster, name: &str, spec: &QosSpec) {
    let status = c
        .http
        .put(format!("{}/v1/qos/{name}", c.url))
        .bearer_auth(&c.token)
        .json(spec)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(status, 201, "QOS {name}");
}

/// Defines QOS `low` (`spec`) and `high` (priority 100) that may preempt it.
async fn put_low_and_high(c: &TestCluster, low: &str, spec: &QosSpec) {
    put_qos(c, low, spec).await;
    put_qos(
        c,
        "high",
        &QosSpec {
            priority: 100,
            preempt: vec![low.into()],
            ..Default::default()
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_high_qos_job_preempts_a_low_one_holding_every_gpu() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "4xH100",
        schedulers: 1,
        ..Default::default()
    })
    .await;
    put_qos(
        &c,
        "lowcancel",
        &QosSpec {
            preempt_mode: PreemptMode::Cancel,
            ..Default::default()
        },
    )
    .await;
    put_qos(
        &c,
        "lowrequeue",
        &QosSpec {
            preempt_mode: PreemptMode::Requeue,
            grace_time: 1,
            ..Default::default()
        },
    )
    .await;
    put_qos(
        &c,
        "high",
        &QosSpec {
            priority: 100,
            preempt: vec!["lowcancel".into(), "lowrequeue".into()],
            ..Default::default()
        },
    )
    .await;
    let hog = "#!/bin/bash\nsleep 300\n";
    let quick = "#!/bin/bash\nsleep 1\n";

    // CANCEL: the victim ends PREEMPTED and the preemptor runs on its GPUs.
    let a = c
        .submit(hog, &["--gpus-per-node=4", "--qos=lowcancel", "--time=10"])
        .await;
    c.wait_for(a, 30, |j| j.state == JobState::Running).await;
    let h1 = c
        .submit(quick, &["--gpus-per-node=4", "--qos=high", "--time=1"])
        .await;
    let a_end = c.wait_ended(a, 60).await;
    assert_eq!(a_end.state, JobState::Preempted);
    assert_eq!(a_end.restart_count, 0);
    let h1_end = c.wait_ended(h1, 60).await;
    assert_eq!(h1_end.state, JobState::Completed);
    assert!(h1_end.start_time.unwrap() >= a_end.end_time.unwrap());

    // REQUEUE: the victim goes back to PENDING and runs again once the preemptor is done.
    let b = c
        .submit(hog, &["--gpus-per-node=4", "--qos=lowrequeue", "--time=10"])
        .await;
    c.wait_for(b, 30, |j| j.state == JobState::Running).await;
    let h2 = c
        .submit(quick, &["--gpus-per-node=4", "--qos=high", "--time=1"])
        .await;
    let h2_end = c.wait_ended(h2, 60).await;
    assert_eq!(h2_end.state, JobState::Completed);
    let again = c
        .wait_for(b, 60, |j| {
            j.state == JobState::Running && j.restart_count == 1
        })
        .await;
    assert!(again.start_time.unwrap() >= h2_end.end_time.unwrap());

    // Each victim's preemption is recorded once, with its preemptor and mode.
    let db = c.db().await;
    let events: Vec<(i64, i32, serde_json::Value)> = sqlx::query_as(
        "SELECT job_id, run, detail FROM job_events WHERE kind = 'preempted' ORDER BY id",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!((events[0].0, events[0].1), (a, 0));
    assert_eq!(events[0].2["preemptor"], h1);
    assert_eq!(events[0].2["mode"], "CANCEL");
    assert_eq!((events[1].0, events[1].1), (b, 0));
    assert_eq!(events[1].2["preemptor"], h2);
    assert_eq!(events[1].2["mode"], "REQUEUE");
    // The preempted run's GPUs were given back when its processes were gone.
    let live_old: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM allocations WHERE job_id = $1 AND run = 0 AND released_at IS NULL",
    )
    .bind(b)
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(live_old, 0);
    let cancelled = c
        .http
        .post(format!("{}/v1/jobs/{b}/cancel", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert!(cancelled.status().is_success());
}

/// A preempted job gets its QOS `grace_time` between SIGTERM and SIGKILL, not the
/// worker's kill wait (2 s in tests): its TERM handler, which needs 6 s, finishes, and it
/// reads `preempted` as the reason for the signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preempted_job_gets_its_grace_time_to_clean_up() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "4xH100",
        schedulers: 1,
        ..Default::default()
    })
    .await;
    put_low_and_high(
        &c,
        "lowgrace",
        &QosSpec {
            preempt_mode: PreemptMode::Cancel,
            grace_time: 20,
            ..Default::default()
        },
    )
    .await;
    let marker = c.dir.join("grace-marker");
    let victim = format!(
        "#!/bin/bash\n\
         on_term() {{ echo \"term reason=$(cat $BERTH_SIGNAL_REASON_FILE)\" >> {m}; sleep 6; echo cleanup done >> {m}; exit 0; }}\n\
         trap on_term TERM\n\
         echo started >> {m}\n\
         sleep 300 & wait\n\
         sleep 300 & wait\n",
        m = marker.display()
    );
    let a = c
        .submit(
            &victim,
            &["--gpus-per-node=4", "--qos=lowgrace", "--time=10"],
        )
        .await;
    c.wait_for(a, 30, |j| j.state == JobState::Running).await;
    // The batch shell has set its trap once it wrote the marker.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(&marker).is_ok_and(|m| m.contains("started")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the victim never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let h = c
        .submit(
            "#!/bin/bash\nsleep 1\n",
            &["--gpus-per-node=4", "--qos=high", "--time=1"],
        )
        .await;
    let a_end = c.wait_ended(a, 60).await;
    assert_eq!(a_end.state, JobState::Preempted);
    let h_end = c.wait_ended(h, 90).await;
    assert_eq!(h_end.state, JobState::Completed);

    let marks = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(
        marks.lines().collect::<Vec<_>>(),
        ["started", "term reason=preempted", "cleanup done"],
        "{}",
        c.log("node-1")
    );
    // The batch shell exited by itself (status 0), not by SIGKILL.
    let db = c.db().await;
    let exited: serde_json::Value =
        sqlx::query_scalar("SELECT detail FROM job_events WHERE job_id = $1 AND kind = 'exited'")
            .bind(a)
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(exited["signal"], serde_json::Value::Null, "{exited}");
    assert_eq!(exited["exit_code"], 0, "{exited}");
}

/// A high-QOS array preempts the low-QOS jobs in its way, one task's worth at a time, and
/// every task runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_high_qos_array_preempts_for_its_tasks() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "4xH100",
        ..Default::default()
    })
    .await;
    put_low_and_high(
        &c,
        "low",
        &QosSpec {
            preempt_mode: PreemptMode::Cancel,
            ..Default::default()
        },
    )
    .await;
    let mut hogs = Vec::new();
    for _ in 0..2 {
        let id = c
            .submit(
                "#!/bin/bash\nsleep 300\n",
                &["--gpus-per-node=2", "--qos=low"],
            )
            .await;
        c.wait_for(id, 30, |j| j.state == JobState::Running).await;
        hogs.push(id);
    }
    let array = c
        .submit(
            "#!/bin/bash\nsleep 1\n",
            &["--array=0-1", "--gpus-per-node=2", "--qos=high", "--time=1"],
        )
        .await;
    for hog in hogs {
        assert_eq!(c.wait_ended(hog, 60).await.state, JobState::Preempted);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let list: berth_core::wire::JobList = c.get("/v1/jobs?limit=1000").await;
        let done: Vec<_> = list
            .items
            .iter()
            .filter(|j| j.array_job_id == Some(array) && j.array_task_id.is_some())
            .filter(|j| j.state == JobState::Completed)
            .collect();
        if done.len() == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "array tasks did not all complete: {:?}",
            list.items
                .iter()
                .map(|j| (j.id, j.array_task_id, j.state, j.reason.clone()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}
