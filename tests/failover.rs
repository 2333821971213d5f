//! Scheduler failover: a standby takes over from a leader that dies (SIGKILL) or leaves
//! (SIGTERM) and places the next job; a deposed leader that wakes up cannot write.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

fn two_schedulers() -> Options {
    Options {
        workers: 1,
        schedulers: 2,
        ..Default::default()
    }
}

/// Submits a job the moment the leader is gone and measures how long it waits to be
/// placed, by whichever scheduler holds the lease then.
async fn placed_after(c: &TestCluster, gone: Instant) -> (i64, Duration) {
    let id = c
        .submit("#!/bin/bash\necho placed\n", &["--gres=gpu:1"])
        .await;
    let job = c.wait_for(id, 30, |j| j.state != JobState::Pending).await;
    let placed = gone.elapsed();
    assert!(
        matches!(job.state, JobState::Running | JobState::Completed),
        "{job:?}"
    );
    (id, placed)
}

async fn allocation_term(c: &TestCluster, id: i64) -> i64 {
    let db = c.db().await;
    let term = sqlx::query_scalar("SELECT term FROM allocations WHERE job_id = $1")
        .bind(id)
        .fetch_one(&db)
        .await
        .unwrap();
    db.close().await;
    term
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_places_the_next_job_soon_after_the_leader_is_killed() {
    let mut c = TestCluster::start(two_schedulers()).await;
    let (leader, term) = c.wait_leader(30).await;
    let warmup = c.submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1"]).await;
    assert_eq!(c.wait_ended(warmup, 60).await.state, JobState::Completed);

    c.kill(&leader);
    let killed = Instant::now();
    let (id, took) = placed_after(&c, killed).await;
    println!("failover: job {id} placed {took:?} after SIGKILL of {leader}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
    let (new_leader, new_term) = c.wait_leader(5).await;
    assert_ne!(new_leader, leader);
    assert!(new_term > term, "{new_term} > {term}");
    assert_eq!(allocation_term(&c, id).await, new_term);
    assert_eq!(c.wait_ended(id, 60).await.state, JobState::Completed);

    // The killed scheduler comes back as a standby and the leader keeps its term.
    c.restart(&leader);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(c.wait_leader(5).await, (new_leader, new_term));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_releases_the_lease_so_the_standby_takes_over_at_once() {
    let mut c = TestCluster::start(two_schedulers()).await;
    let (leader, term) = c.wait_leader(30).await;
    assert!(c.terminate(&leader, 10), "{leader} did not exit on SIGTERM");
    let left = Instant::now();
    assert!(
        c.log(&leader).contains("released the lease"),
        "{}",
        c.log(&leader)
    );
    let (id, took) = placed_after(&c, left).await;
    println!("graceful handover: job {id} placed {took:?} after {leader} exited");
    assert!(took < Duration::from_secs(15), "took {took:?}");
    let (new_leader, new_term) = c.wait_leader(5).await;
    assert_ne!(new_leader, leader);
    assert_eq!(new_term, term + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_leader_that_wakes_up_writes_nothing_and_steps_down() {
    let c = TestCluster::start(two_schedulers()).await;
    let (leader, term) = c.wait_leader(30).await;
    // Freeze the leader (a long GC pause, a VM stall) until the standby has taken over.
    c.signal(&leader, Signal::SIGSTOP);
    let deadline = Instant::now() + Duration::from_secs(30);
    let (standby, new_term) = loop {
        match c.leader_component().await {
            Some((n, t)) if n != leader => break (n, t),
            _ => assert!(Instant::now() < deadline, "no takeover"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(new_term > term);
    // Wake the old leader while jobs arrive: it must not place any of them.
    c.signal(&leader, Signal::SIGCONT);
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(c.submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1"]).await);
    }
    for id in &ids {
        assert_eq!(c.wait_ended(*id, 60).await.state, JobState::Completed);
        assert_eq!(allocation_term(&c, *id).await, new_term, "job {id}");
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while !c.log(&leader).contains("stepping down") {
        assert!(Instant::now() < deadline, "{}", c.log(&leader));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(c.wait_leader(5).await, (standby, new_term));
}
