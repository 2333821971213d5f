//! Spot interruption notices end to end: workers watch a real instance metadata service
//! (`berth cloud-metadata`, the local cloud provider's, over HTTP on loopback) with
//! `--metadata-url`; a notice drains the node with the reclaim reason, its job gets its
//! `--signal` warning (or SIGTERM) with `reclaimed` in its signal reason file, is requeued
//! (PENDING, restart count 1, a `reclaimed` event) and runs again on the other node.

use crate::cluster::{berth_bin, Options, TestCluster, SECRET};
use berth_core::auth::Role;
use berth_core::state::{JobState, NodeState};
use berth_core::wire::Node;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `cloud_events` row: kind, node, instance, job, reason.
type CloudEventRow = (String, Option<String>, Option<String>, Option<i64>, String);

/// `berth cloud-metadata` on a state directory, stopped on drop.
struct MetadataService {
    child: Child,
    state_dir: PathBuf,
    port: u16,
}

impl MetadataService {
    fn start(state_dir: &Path) -> MetadataService {
        std::fs::create_dir_all(state_dir.join("instances")).unwrap();
        let child = Command::new(berth_bin())
            .args(["cloud-metadata", "--state-dir"])
            .arg(state_dir)
            .args(["--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(state_dir.join("metadata.log")).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let port_file = state_dir.join("metadata.port");
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|p| p.trim().parse().ok())
            {
                break port;
            }
            assert!(
                Instant::now() < deadline,
                "the metadata service never listened"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        MetadataService {
            child,
            state_dir: state_dir.to_path_buf(),
            port,
        }
    }

    /// Gives instance `id` an interruption notice for `seconds` from now.
    fn interrupt(&self, id: &str, seconds: i64) -> chrono::DateTime<chrono::Utc> {
        let dir = self.state_dir.join("instances").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let time = chrono::Utc::now() + chrono::Duration::seconds(seconds);
        let time = time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        std::fs::write(dir.join("spot-instance-action"), &time).unwrap();
        chrono::DateTime::parse_from_rfc3339(&time).unwrap().into()
    }
}

impl Drop for MetadataService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.state_dir);
        }
    }
}

async fn start(name: &str) -> (TestCluster, MetadataService) {
    let state = std::env::temp_dir().join(format!(
        "berth-spot-{name}-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_micros()
    ));
    let metadata = MetadataService::start(&state);
    let url = format!("http://127.0.0.1:{}/{{name}}", metadata.port);
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 2,
            gpus: "2xH100",
            ..Default::default()
        },
        &["--metadata-url", &url, "--metadata-poll-ms", "300"],
    )
    .await;
    (c, metadata)
}

async fn node(c: &TestCluster, name: &str) -> Node {
    c.get(&format!("/v1/nodes/{name}")).await
}

async fn wait_output(c: &TestCluster, id: i64, text: &str, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let out = c.output(id).await;
        if out.contains(text) {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "job {id}'s output never showed {text:?}:\n{out}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A notice on the job's node: the node drains with the reclaim reason, the job traps its
/// `--signal=B:USR1@60` warning (reading `reclaimed` in its reason file), is requeued and
/// completes on the other node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spot_notice_drains_the_node_warns_and_requeues_the_job_elsewhere() {
    let (c, metadata) = start("signal").await;
    let script = "#!/bin/bash\n#SBATCH --gres=gpu:1 -t 10 --signal=B:USR1@60\n\
        echo \"run $SLURM_RESTART_COUNT on $SLURMD_NODENAME\"\n\
        if [ \"$SLURM_RESTART_COUNT\" = 0 ]; then\n\
          trap 'echo \"caught USR1 reason=$(cat $BERTH_SIGNAL_REASON_FILE)\"; exit 0' USR1\n\
          echo ready\n\
          sleep 300 & wait\n\
        fi\n\
        echo finished\n";
    // The metadata service speaks IMDSv2: a session token first, then reads with it.
    let base = format!("http://127.0.0.1:{}/node-1/latest", metadata.port);
    let r = c
        .http
        .put(format!("{base}/api/token"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400, "a token needs its TTL");
    let r = c
        .http
        .get(format!("{base}/meta-data/instance-id"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401, "reads need a token");
    let token = c
        .http
        .put(format!("{base}/api/token"))
        .header("X-aws-ec2-metadata-token-ttl-seconds", "60")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let get = |item: &'static str| {
        c.http
            .get(format!("{base}/meta-data/{item}"))
            .header("X-aws-ec2-metadata-token", &token)
            .send()
    };
    assert_eq!(
        get("instance-id").await.unwrap().text().await.unwrap(),
        "node-1"
    );
    assert_eq!(
        get("spot/instance-action").await.unwrap().status().as_u16(),
        404
    );

    let id = c.submit(script, &[]).await;
    let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let first = job.nodelist.clone().unwrap();
    let other = if first == "node-1" {
        "node-2"
    } else {
        "node-1"
    };
    wait_output(&c, id, "ready", 30).await;

    let time = metadata.interrupt(&first, 60);
    let reason = format!(
        "reclaimed: spot interruption notice (terminate at {})",
        time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    // Requeued: back to PENDING in its second run (then placed again).
    let job = c.wait_for(id, 30, |j| j.restart_count == 1).await;
    assert_ne!(job.state, JobState::Failed);
    let drained = node(&c, &first).await;
    assert!(
        matches!(drained.state, NodeState::Draining | NodeState::Drained),
        "{drained:?}"
    );
    assert_eq!(drained.reason.as_deref(), Some(reason.as_str()));

    let job = c.wait_ended(id, 90).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert_eq!(job.restart_count, 1, "{out}");
    assert_eq!(job.nodelist.as_deref(), Some(other), "{out}");
    assert!(out.contains(&format!("run 0 on {first}")), "{out}");
    assert!(out.contains("caught USR1 reason=reclaimed"), "{out}");
    assert!(out.contains(&format!("run 1 on {other}")), "{out}");
    assert!(out.trim_end().ends_with("finished"), "{out}");
    // The old node takes nothing new and ends DRAINED.
    let deadline = Instant::now() + Duration::from_secs(30);
    while node(&c, &first).await.state != NodeState::Drained {
        assert!(Instant::now() < deadline, "{:?}", node(&c, &first).await);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let db = c.db().await;
    let events: Vec<(String, i32, Option<String>)> = sqlx::query_as(
        "SELECT kind, run, node FROM job_events WHERE job_id = $1 AND kind = 'reclaimed'",
    )
    .bind(id)
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(
        events,
        vec![("reclaimed".to_string(), 0, Some(first.clone()))]
    );
}

/// Without `--signal`, the job gets SIGTERM with `reclaimed` in its reason file (the notice
/// from `inject.toml`'s `interrupt` list); only the node's own token may report a notice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spot_notice_without_a_warning_sends_sigterm_and_only_the_node_may_report_it() {
    let (c, metadata) = start("term").await;
    // An admin's (or another node's) sync carrying a notice is refused and drains nothing.
    let body = serde_json::json!({
        "interruption": {"action": "terminate", "time": "2030-01-01T00:00:00Z"}
    });
    for (token, want) in [
        (c.token.clone(), 403),
        (
            berth_api::mint_token(SECRET, "node:node-2", Role::Node, 600),
            403,
        ),
        (c.token_for("bob", Role::User), 403),
    ] {
        let r = c
            .http
            .post(format!("{}/v1/nodes/node-1/sync", c.url))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), want);
    }
    assert!(node(&c, "node-1").await.reason.is_none());

    let script = "#!/bin/bash\n#SBATCH --gres=gpu:1 -t 10\n\
        echo \"run $SLURM_RESTART_COUNT on $SLURMD_NODENAME\"\n\
        if [ \"$SLURM_RESTART_COUNT\" = 0 ]; then\n\
          trap 'echo \"got TERM reason=$(cat $BERTH_SIGNAL_REASON_FILE)\"; exit 0' TERM\n\
          echo ready\n\
          sleep 300 & wait\n\
        fi\n\
        echo finished\n";
    let id = c.submit(script, &[]).await;
    let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let first = job.nodelist.clone().unwrap();
    wait_output(&c, id, "ready", 30).await;
    std::fs::write(
        metadata.state_dir.join("inject.toml"),
        format!("interrupt = [\"{first}\"]\n"),
    )
    .unwrap();
    let job = c.wait_ended(id, 90).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert_eq!(job.restart_count, 1, "{out}");
    assert_ne!(job.nodelist.as_deref(), Some(first.as_str()), "{out}");
    assert!(out.contains("got TERM reason=reclaimed"), "{out}");
    let drained = node(&c, &first).await;
    assert!(
        drained
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("reclaimed: spot interruption notice (terminate at ")),
        "{drained:?}"
    );
}

/// The local cloud provider end to end: an instance it launches (a real `berth worker`
/// in its own session, joining with its bootstrap token from the environment, watching
/// the provider's own metadata service) runs a job; a notice in its instance directory
/// drains it and requeues the job; terminate stops its processes and describe says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_provider_instance_joins_runs_and_is_reclaimed() {
    use berth_cloud::local::{instance_dir, instance_record, LocalProvider};
    use berth_cloud::{InstanceState, LaunchRequest, NodeBoot, Provider};
    use berth_core::pool::{InstanceShape, LocalOptions, Market};

    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let r = c
        .http
        .post(format!("{}/v1/nodes/bootstrap-tokens", c.url))
        .bearer_auth(&c.token)
        .json(&serde_json::json!({ "one_time": true, "ttl_minutes": 10 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let created: berth_core::identity::NodeBootstrapCreated = r.json().await.unwrap();
    let state = c.dir.join("cloud");
    let provider = LocalProvider::new(
        state.clone(),
        PathBuf::from(berth_bin()),
        LocalOptions {
            boot_delay: 1,
            capacity_errors: Vec::new(),
        },
        [
            "--kill-wait",
            "2",
            "--run-as",
            "worker",
            "--metadata-poll-ms",
            "300",
        ]
        .map(String::from)
        .to_vec(),
    );
    let req = LaunchRequest {
        client_token: "00000000-0000-4000-8000-000000000001".into(),
        cluster: "e2e".into(),
        pool: "burst".into(),
        instance_type: "sim-2xh100".into(),
        shape: InstanceShape {
            gpu_count: 2,
            gpu_model: "H100".into(),
            gpu_memory_mib: 81_920,
            cpus: 8,
            memory_mib: 32_768,
        },
        zone: None,
        subnet: None,
        market: Market::Spot,
        image: None,
        nodes: vec![NodeBoot {
            name: "burst-1".into(),
            bootstrap_token: created.token.clone(),
        }],
        api_url: c.url.clone(),
        features: vec!["spot".into()],
        tags: Default::default(),
    };
    let launched = provider.launch(&req).await.unwrap();
    assert_eq!(launched.len(), 1);
    let id = launched[0].id.clone();
    // Joined, with the shape it was launched with.
    let deadline = Instant::now() + Duration::from_secs(60);
    let joined = loop {
        let r = c
            .http
            .get(format!("{}/v1/nodes/burst-1", c.url))
            .bearer_auth(&c.token)
            .send()
            .await
            .unwrap();
        if r.status().is_success() {
            break r.json::<Node>().await.unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "burst-1 never joined:\n{}",
            std::fs::read_to_string(instance_dir(&state, &id).join("worker.log"))
                .unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!((joined.cpus, joined.gpus.len()), (8, 2));
    assert_eq!(joined.features, vec!["spot".to_string()]);
    // The token is in no process's arguments.
    let pid = instance_record(&state, &id).unwrap().pid.unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains(&created.token));
    let all = provider.describe("e2e", "burst").await.unwrap();
    assert_eq!(all[0].state, InstanceState::Running);
    // Make it a pool's node, as the scaling reconciler records it.
    let db = c.db().await;
    sqlx::query("INSERT INTO pools (name, spec) VALUES ('burst', '{}')")
        .execute(&db)
        .await
        .unwrap();
    sqlx::query("UPDATE nodes SET pool = 'burst', instance_id = $1 WHERE name = 'burst-1'")
        .bind(&id)
        .execute(&db)
        .await
        .unwrap();

    let script = "#!/bin/bash\n#SBATCH --gres=gpu:1 -t 10\n\
        trap 'echo \"got TERM reason=$(cat $BERTH_SIGNAL_REASON_FILE)\"; exit 0' TERM\n\
        echo ready\nsleep 300 & wait\n";
    let job = c.submit(script, &[]).await;
    c.wait_for(job, 60, |j| j.state == JobState::Running).await;
    wait_output(&c, job, "ready", 30).await;
    std::fs::write(instance_dir(&state, &id).join("spot-instance-action"), "").unwrap();
    let requeued = c.wait_for(job, 30, |j| j.restart_count == 1).await;
    assert_eq!(requeued.state, JobState::Pending);
    wait_output(&c, job, "got TERM reason=reclaimed", 30).await;
    let drained = node(&c, "burst-1").await;
    assert!(
        drained
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("reclaimed: spot interruption notice (terminate at ")),
        "{drained:?}"
    );
    // The pool's events: the node's reclaim and its job's.
    let events: Vec<CloudEventRow> = sqlx::query_as(
        "SELECT kind, node_name, instance_id, job_id, reason FROM cloud_events
             WHERE pool = 'burst' ORDER BY id",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(|e| e.0 == "reclaim"
        && e.1.as_deref() == Some("burst-1")
        && e.2.as_deref() == Some(id.as_str())));
    assert_eq!(events[0].3, None);
    assert_eq!(events[0].4, drained.reason.clone().unwrap());
    assert_eq!(events[1].3, Some(job));
    assert!(events[1].4.contains("requeued"), "{events:?}");

    provider.terminate(std::slice::from_ref(&id)).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let all = provider.describe("e2e", "burst").await.unwrap();
        if all[0].state == InstanceState::Terminated {
            break;
        }
        assert!(Instant::now() < deadline, "{all:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(berth_cloud::local::process_start_time(pid).is_none());
    // The metadata service outlives the provider (as instances do); stop it.
    let port: u16 = std::fs::read_to_string(state.join("metadata.port"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    kill_metadata_service(&state);
}

/// Stops the metadata service of the state directory `state` (found by its command line).
fn kill_metadata_service(state: &Path) {
    let state = state.to_string_lossy();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("cloud-metadata") && cmdline.contains(state.as_ref()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
}
