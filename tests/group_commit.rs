//! Concurrent submissions share transactions (group commit), and one submission the
//! database refuses inside a shared transaction fails alone: the others of its batch are
//! stored and answered as if each had been sent by itself.

use crate::cluster::{Options, TestCluster};
use std::collections::HashSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_submissions_share_transactions_and_a_refused_one_fails_alone() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100",
        log_filter: Some("info,berth_api::group_commit=debug"),
        ..Default::default()
    })
    .await;
    let submit = |name: String, key: Option<&'static str>| {
        let (http, url, token) = (c.http.clone(), c.url.clone(), c.token.clone());
        async move {
            let mut r = http
                .post(format!("{url}/v1/jobs"))
                .bearer_auth(&token)
                .json(&serde_json::json!({
                    "script": "#!/bin/bash\n#SBATCH --hold\ntrue\n",
                    "args": ["--job-name", name],
                }));
            if let Some(key) = key {
                r = r.header("Idempotency-Key", key);
            }
            let r = r.send().await.unwrap();
            let status = r.status().as_u16();
            (name, status, r.json::<serde_json::Value>().await.unwrap())
        }
    };
    // Each round: the default partition's row locked as an admin's edit locks it, so the
    // committers wait on their first submissions (each holds its partition against
    // deletion) while the others queue behind them; then 32 submissions at once.
    let db = c.db().await;
    let round = |keys: [Option<&'static str>; 2], tag: &'static str| {
        let db = db.clone();
        let submit = &submit;
        async move {
            let mut edit = berth_db::begin(&db).await.unwrap();
            sqlx::query("SELECT 1 FROM partitions FOR UPDATE")
                .execute(&mut *edit)
                .await
                .unwrap();
            let mut all = tokio::task::JoinSet::new();
            for i in 0..30 {
                all.spawn(submit(format!("gc-{tag}-{i}"), None));
            }
            // The last two (the ones with keys, if any) after the committers took their
            // first submissions: they queue with the rest.
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            for (i, key) in keys.into_iter().enumerate() {
                all.spawn(submit(format!("gc-{tag}-{}", 30 + i), key));
            }
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            edit.rollback().await.unwrap();
            let (mut created, mut refused) = (Vec::new(), Vec::new());
            while let Some(done) = all.join_next().await {
                let (name, status, body) = done.unwrap();
                match status {
                    201 => created.push((name, body["id"].as_i64().unwrap())),
                    409 => refused.push((name, body)),
                    other => panic!("{name}: {other} {body}"),
                }
            }
            (created, refused)
        }
    };
    let batch_sizes = |log: &str, what: &str| -> Vec<usize> {
        log.lines()
            .filter(|l| l.contains(what))
            .filter_map(|l| {
                l.split("submissions=")
                    .nth(1)?
                    .split(' ')
                    .next()?
                    .parse()
                    .ok()
            })
            .collect()
    };

    // Plain submissions share transactions.
    let (created, refused) = round([None, None], "a").await;
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(created.len(), 32);
    let committed = batch_sizes(&c.log("api"), "submissions committed");
    assert!(
        committed.iter().any(|n| *n > 1),
        "every submission had a transaction of its own: {committed:?}"
    );
    assert_eq!(committed.iter().sum::<usize>(), 32, "{committed:?}");

    // Two of them carry one Idempotency-Key with different bodies: whichever is stored
    // second breaks its transaction's unique key. It alone is refused.
    let (mut all_created, refused) = round([Some("same-key"), Some("same-key")], "b").await;
    assert_eq!(all_created.len(), 31, "refused: {refused:?}");
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].1["code"], "idempotency_conflict", "{refused:?}");
    let failed = batch_sizes(&c.log("api"), "storing each alone");
    assert!(!failed.is_empty(), "no shared transaction failed");
    all_created.extend(created);
    // Every created job is stored under its own id, with its own name.
    let ids: HashSet<i64> = all_created.iter().map(|(_, id)| *id).collect();
    assert_eq!(ids.len(), 63);
    for (name, id) in &all_created {
        let job = c.job(*id).await;
        assert_eq!(&job.name, name);
    }
}
