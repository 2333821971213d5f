//! Fairshare, priority and QOS end to end: usage charged when a job ends (GPU-heavy
//! billing × QOS usage factor) and shown by `GET /v1/fairshare`; the priority factors of
//! a pending job (`GET /v1/jobs/{id}/priority`); QOS created through the api and checked
//! at submission; a QOS limit enforced by the running scheduler.

use crate::cluster::{Options, TestCluster};
use berth_core::qos::{FairshareList, JobPriority, Qos, QosSpec, TresLimits};
use std::time::{Duration, Instant};

async fn put_qos(c: &TestCluster, name: &str, spec: &QosSpec) -> u16 {
    c.http
        .put(format!("{}/v1/qos/{name}", c.url))
        .bearer_auth(&c.token)
        .json(spec)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_charged_at_job_end_and_feeds_fairshare_and_priority() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "4xH100",
        schedulers: 1,
        ..Default::default()
    })
    .await;
    let high = QosSpec {
        priority: 100,
        usage_factor: 2.0,
        ..Default::default()
    };
    assert_eq!(put_qos(&c, "high", &high).await, 201);
    assert_eq!(put_qos(&c, "high", &high).await, 200);
    let shown: Qos = c.get("/v1/qos/high").await;
    assert_eq!(shown.spec.usage_factor, 2.0);

    let (status, problem) = c
        .try_submit("#!/bin/bash\ntrue\n", &["--qos=nope"])
        .await
        .unwrap_err();
    assert_eq!(status, 400);
    assert_eq!(problem.field.as_deref(), Some("--qos"));

    let id = c
        .submit(
            "#!/bin/bash\nsleep 1\n",
            &["--gpus-per-node=2", "--qos=high", "--time=1"],
        )
        .await;
    c.wait_ended(id, 30).await;

    // The run is charged once: elapsed × (2 GPUs × 32 + 1 CPU × 1) × usage factor 2.
    let db = c.db().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let (elapsed, billing, factor, amount) = loop {
        let row: Option<(i64, f64, f64, f64)> = sqlx::query_as(
            "SELECT elapsed, billing, usage_factor, amount FROM usage_charges WHERE job_id = $1",
        )
        .bind(id)
        .fetch_optional(&db)
        .await
        .unwrap();
        if let Some(row) = row {
            break row;
        }
        assert!(
            Instant::now() < deadline,
            "never charged\n{}",
            c.log("scheduler-0")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(billing, 65.0);
    assert_eq!(factor, 2.0);
    assert!(elapsed >= 1, "elapsed {elapsed}");
    assert_eq!(amount, elapsed as f64 * 65.0 * 2.0);

    let share: FairshareList = c.get("/v1/fairshare").await;
    let mine = share
        .associations
        .iter()
        .find(|r| r.raw_usage > 0.0)
        .expect("an association with usage");
    assert!((mine.raw_usage - amount).abs() / amount < 1e-3, "{mine:?}");
    assert_eq!(mine.norm_usage, 1.0);
    assert!(mine.fairshare < 1.0, "{mine:?}");

    // A pending job's factors: the highest QOS priority gives a QOS factor of 1, and the
    // fairshare factor is the association's.
    let pending = c
        .submit(
            "#!/bin/bash\ntrue\n",
            &["--qos=high", "--begin=now+1hour", "--gpus-per-node=4"],
        )
        .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let prio = loop {
        let r = c
            .http
            .get(format!("{}/v1/jobs/{pending}/priority", c.url))
            .bearer_auth(&c.token)
            .send()
            .await
            .unwrap();
        if r.status().is_success() {
            break r.json::<JobPriority>().await.unwrap();
        }
        assert_eq!(r.status().as_u16(), 409);
        assert!(
            Instant::now() < deadline,
            "no priority\n{}",
            c.log("scheduler-0")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(prio.factors.qos, 1.0);
    assert_eq!(prio.weighted.qos, 10000.0);
    assert_eq!(prio.factors.job_size, 1.0);
    assert!(
        (prio.factors.fairshare - mine.fairshare).abs() < 1e-3,
        "{prio:?} {mine:?}"
    );
    assert_eq!(c.job(pending).await.reason.as_deref(), Some("BeginTime"));
}

/// MaxTRESPerUser=gres/gpu=2 set through the api: of two 2-GPU jobs of one user, the
/// second waits with QOSMaxGRESPerUser until the first ends, on a node with room for both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qos_gpu_limit_per_user_is_enforced_by_the_scheduler() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "4xH100",
        schedulers: 1,
        ..Default::default()
    })
    .await;
    let limited = QosSpec {
        max_tres_per_user: TresLimits {
            gpu: Some(2),
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(put_qos(&c, "limited", &limited).await, 201);
    let a = c
        .submit(
            "#!/bin/bash\nsleep 3\n",
            &["--gpus-per-node=2", "--qos=limited", "--time=1"],
        )
        .await;
    c.wait_for(a, 30, |j| j.state == berth_core::state::JobState::Running)
        .await;
    let b = c
        .submit(
            "#!/bin/bash\ntrue\n",
            &["--gpus-per-node=2", "--qos=limited", "--time=1"],
        )
        .await;
    let waiting = c
        .wait_for(b, 30, |j| j.reason.as_deref() == Some("QOSMaxGRESPerUser"))
        .await;
    assert_eq!(waiting.state, berth_core::state::JobState::Pending);
    let first = c.wait_ended(a, 30).await;
    let second = c.wait_ended(b, 30).await;
    assert!(second.start_time.unwrap() >= first.end_time.unwrap());
}
