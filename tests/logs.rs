//! Issue 28: the roles' logs as a file or the journal gets them: no ANSI escape codes when
//! standard error is not a terminal, and `--log-format json` (BERTH_LOG_FORMAT) writes one
//! JSON object a line.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_files_hold_no_escape_codes_and_json_logs_parse() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "1xH100",
        poll_wait: Some(1),
        ..Default::default()
    })
    .await;
    let id = c.submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1"]).await;
    assert_eq!(c.wait_ended(id, 60).await.state, JobState::Completed);
    for name in ["api", "scheduler-0", "node-1"] {
        let log = c.log(name);
        assert!(log.contains("INFO"), "{name}: {log}");
        assert!(
            !log.contains('\u{1b}'),
            "{name}'s log holds escape codes:\n{log}"
        );
    }
    drop(c);

    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "1xH100",
        poll_wait: Some(1),
        env: vec![("BERTH_LOG_FORMAT".into(), "json".into())],
        ..Default::default()
    })
    .await;
    let id = c.submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1"]).await;
    assert_eq!(c.wait_ended(id, 60).await.state, JobState::Completed);
    for name in ["api", "scheduler-0", "node-1"] {
        let log = c.log(name);
        let lines: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {e}: {l}")))
            .collect();
        assert!(!lines.is_empty(), "{name}");
        for line in &lines {
            assert!(
                line["timestamp"].is_string() && line["level"].is_string(),
                "{line}"
            );
        }
        if name == "node-1" {
            assert!(
                lines
                    .iter()
                    .any(|l| l["fields"]["message"] == "launching" && l["fields"]["job.id"] == id),
                "{log}"
            );
        }
    }
}
