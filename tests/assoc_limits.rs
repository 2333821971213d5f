//! Association limits end to end: `berth account set NAME GrpTRES=gres/gpu=2` on a parent
//! account caps the GPUs of all running jobs of its sub-accounts together; the job past
//! the limit waits with Slurm's reason `AssocGrpGRES` and starts when a job ends.

use crate::cluster::{Options, TestCluster};
use berth_core::identity::AccountList;
use berth_core::state::JobState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_grp_tres_holds_back_the_job_past_the_limit() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "4xH100",
        schedulers: 1,
        ..Default::default()
    })
    .await;
    let admin = c.token.clone();
    let run = |args: &[&str]| {
        let (code, out, err) = c.cli(&admin, args);
        assert_eq!(code, 0, "berth {args:?}: {err}");
        out
    };
    run(&["account", "add", "lab"]);
    run(&["account", "add", "lab-vision", "--parent", "lab"]);
    run(&["account", "add", "lab-nlp", "--parent", "lab"]);
    let out = run(&["account", "set", "lab", "GrpTRES=gres/gpu=2"]);
    assert!(out.contains("gres/gpu=2"), "{out}");
    let out = run(&["account", "list"]);
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("lab ") && l.contains("gres/gpu=2")),
        "{out}"
    );
    let accounts: AccountList = c.get("/v1/accounts").await;
    let lab = accounts.items.iter().find(|a| a.name == "lab").unwrap();
    assert_eq!(lab.grp_tres.gpu, Some(2));
    // A bad TRES is refused with a clear message, and changes nothing.
    let (code, _, err) = c.cli(&admin, &["account", "set", "lab", "GrpTRES=mem=4"]);
    assert_ne!(code, 0);
    assert!(err.contains("unknown TRES"), "{err}");

    // Three 1-GPU jobs in the subtree of `lab`, on a node with room for all of them.
    let a = c
        .submit(
            "#!/bin/bash\nsleep 5\n",
            &["--gpus-per-node=1", "--account=lab-vision", "--time=1"],
        )
        .await;
    let b = c
        .submit(
            "#!/bin/bash\nsleep 5\n",
            &["--gpus-per-node=1", "--account=lab-nlp", "--time=1"],
        )
        .await;
    for id in [a, b] {
        c.wait_for(id, 30, |j| j.state == JobState::Running).await;
    }
    let third = c
        .submit(
            "#!/bin/bash\ntrue\n",
            &["--gpus-per-node=1", "--account=lab-vision", "--time=1"],
        )
        .await;
    let waiting = c
        .wait_for(third, 30, |j| j.reason.as_deref() == Some("AssocGrpGRES"))
        .await;
    assert_eq!(waiting.state, JobState::Pending);
    let first = c.wait_ended(a, 30).await;
    let second = c.wait_ended(b, 30).await;
    let last = c.wait_ended(third, 30).await;
    assert_eq!(last.state, JobState::Completed);
    let freed = first.end_time.unwrap().min(second.end_time.unwrap());
    assert!(last.start_time.unwrap() >= freed, "{last:?}");
}
