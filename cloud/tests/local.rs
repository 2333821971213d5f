//! The local provider's process lifecycle with real processes: a stand-in for `berth`
//! (a shell script that records its arguments and environment, then sleeps) takes the
//! place of `berth worker`, which needs an api to join (the end-to-end tests in `tests/`
//! run real workers and the real metadata service).

use berth_cloud::local::{instance_dir, instance_record, interruption_notice, LocalProvider};
use berth_cloud::{InstanceState, LaunchError, LaunchRequest, NodeBoot, Provider};
use berth_core::pool::{InstanceShape, LocalOptions, Market};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A test's directory, removed when the test passes.
struct TestDir(PathBuf);

impl Drop for TestDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

fn test_dir(name: &str) -> TestDir {
    let dir = std::env::temp_dir().join(format!(
        "berth-cloud-local-{name}-{}-{:x}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    TestDir(dir)
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        & 0xffff_ffff
}

/// A stand-in `berth`: starts a child (as a worker starts jobs), records its arguments
/// and environment in its working directory (the instance's), then sleeps.
fn stand_in(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("berth-stand-in");
    if path.exists() {
        // Written once: rewriting a script while it starts fails (ETXTBSY).
        return path;
    }
    std::fs::write(
        &path,
        "#!/bin/sh\nsleep 301 &\necho $! > child.pid\nprintf '%s\\n' \"$@\" > args.txt\nenv > env.txt\nexec sleep 300\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn provider(dir: &Path, options: LocalOptions) -> LocalProvider {
    LocalProvider::new(
        dir.join("state"),
        stand_in(dir),
        options,
        vec!["--kill-wait".into(), "2".into()],
    )
    .without_metadata_service()
}

fn request(token: &str, instance_type: &str, zone: Option<&str>, nodes: &[&str]) -> LaunchRequest {
    LaunchRequest {
        client_token: token.to_string(),
        cluster: "c1".into(),
        pool: "burst".into(),
        instance_type: instance_type.into(),
        shape: InstanceShape {
            gpu_count: 8,
            gpu_model: "H100".into(),
            gpu_memory_mib: 81_920,
            cpus: 32,
            memory_mib: 262_144,
        },
        zone: zone.map(str::to_string),
        subnet: None,
        market: Market::Spot,
        image: None,
        nodes: nodes
            .iter()
            .map(|n| NodeBoot {
                name: n.to_string(),
                bootstrap_token: format!("secret-boot-token-{n}"),
            })
            .collect(),
        api_url: "http://127.0.0.1:1".into(),
        features: vec!["h100".into()],
        tags: Default::default(),
    }
}

/// Waits until `path` exists and holds something (the stand-in wrote it).
fn wait_file(path: &Path) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.is_empty() {
                return text;
            }
        }
        assert!(Instant::now() < until, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

async fn wait_state(p: &LocalProvider, id: &str, want: InstanceState) {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let all = p.describe("c1", "burst").await.unwrap();
        let state = all.iter().find(|i| i.id == id).map(|i| i.state);
        if state == Some(want) {
            return;
        }
        assert!(Instant::now() < until, "{id} is {state:?}, never {want:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn pid_alive(pid: i32) -> bool {
    berth_cloud::local::process_start_time(pid).is_some()
}

#[tokio::test]
async fn a_repeated_launch_answers_the_same_instances_and_starts_nothing_new() {
    let dir = test_dir("repeat");
    let p = provider(&dir, LocalOptions::default());
    let req = request("launch-1", "sim-8xh100", None, &["burst-1", "burst-2"]);
    let first = p.launch(&req).await.unwrap();
    assert_eq!(first.len(), 2);
    assert!(first.iter().all(|i| i.id.starts_with("local-")));
    assert_eq!(
        first.iter().map(|i| i.launch_index).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(first[0].launch_id.as_deref(), Some("launch-1"));
    assert_eq!(first[0].pool.as_deref(), Some("burst"));
    assert_eq!(first[0].market, Market::Spot);
    assert!(p.state_dir().join("launches/launch-1.json").exists());
    let pids: Vec<i32> = first
        .iter()
        .map(|i| instance_record(p.state_dir(), &i.id).unwrap().pid.unwrap())
        .collect();

    // The worker's command line: its node, its shape, no secret.
    let dir0 = instance_dir(p.state_dir(), &first[0].id);
    let args = wait_file(&dir0.join("args.txt"));
    let args: Vec<&str> = args.lines().collect();
    let after = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
    assert_eq!(args[0], "worker");
    assert_eq!(after("--name"), "burst-1");
    assert_eq!(after("--simulate-gpus"), "8xH100");
    assert_eq!(after("--simulate-cpus"), "32");
    assert_eq!(after("--simulate-memory"), "262144");
    assert_eq!(after("--feature"), "h100");
    assert_eq!(after("--kill-wait"), "2");
    assert!(after("--state-dir").ends_with("/worker"));
    assert!(!args.iter().any(|a| a.contains("secret-boot-token")));
    let env = wait_file(&dir0.join("env.txt"));
    assert!(env
        .lines()
        .any(|l| l == "BERTH_BOOTSTRAP_TOKEN=secret-boot-token-burst-1"));
    assert!(!env.lines().any(|l| l.starts_with("DATABASE_URL=")));
    assert!(!env.lines().any(|l| l.starts_with("BERTH_JWT_SECRET=")));

    // The same token again: the same instances, the same processes, nothing new.
    let again = p.launch(&req).await.unwrap();
    assert_eq!(
        again.iter().map(|i| &i.id).collect::<Vec<_>>(),
        first.iter().map(|i| &i.id).collect::<Vec<_>>()
    );
    let pids_again: Vec<i32> = again
        .iter()
        .map(|i| instance_record(p.state_dir(), &i.id).unwrap().pid.unwrap())
        .collect();
    assert_eq!(pids, pids_again);
    let instances = std::fs::read_dir(p.state_dir().join("instances"))
        .unwrap()
        .count();
    assert_eq!(instances, 2);
    // A new provider on the same state directory (a new scheduler) agrees.
    let p2 = provider(&dir, LocalOptions::default());
    let third = p2.launch(&req).await.unwrap();
    assert_eq!(third[1].id, first[1].id);
    assert_eq!(p2.describe("c1", "burst").await.unwrap().len(), 2);
    assert!(p2.describe("c1", "other").await.unwrap().is_empty());

    let ids: Vec<String> = first.iter().map(|i| i.id.clone()).collect();
    p.terminate(&ids).await.unwrap();
}

#[tokio::test]
async fn capacity_errors_from_the_options_and_inject_toml_fail_the_whole_launch() {
    let dir = test_dir("capacity");
    let p = provider(
        &dir,
        LocalOptions {
            boot_delay: 0,
            capacity_errors: vec!["sim-a".into()],
        },
    );
    let err = p
        .launch(&request("l-a", "sim-a", None, &["burst-1", "burst-2"]))
        .await
        .unwrap_err();
    match err {
        LaunchError::Capacity { code, message } => {
            assert_eq!(code, "InsufficientInstanceCapacity");
            assert!(message.contains("sim-a"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Nothing recorded, nothing started.
    assert!(!p.state_dir().join("launches/l-a.json").exists());
    assert_eq!(
        std::fs::read_dir(p.state_dir().join("instances"))
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );

    // inject.toml, read at each launch: one type in one zone.
    std::fs::write(
        p.state_dir().join("inject.toml"),
        "capacity_errors = [\"sim-b/zone-2\"]\n",
    )
    .unwrap();
    let err = p
        .launch(&request("l-b2", "sim-b", Some("zone-2"), &["burst-1"]))
        .await
        .unwrap_err();
    assert!(matches!(err, LaunchError::Capacity { .. }), "{err:?}");
    let ok = p
        .launch(&request("l-b1", "sim-b", Some("zone-1"), &["burst-1"]))
        .await
        .unwrap();
    assert_eq!(ok[0].zone.as_deref(), Some("zone-1"));
    // Changed while running: the capacity is back.
    std::fs::write(p.state_dir().join("inject.toml"), "capacity_errors = []\n").unwrap();
    let ok2 = p
        .launch(&request("l-b2", "sim-b", Some("zone-2"), &["burst-2"]))
        .await
        .unwrap();
    assert_eq!(ok2.len(), 1);
    p.terminate(&[ok[0].id.clone(), ok2[0].id.clone()])
        .await
        .unwrap();
}

#[tokio::test]
async fn an_instance_whose_process_died_is_terminated_and_boot_delay_is_pending() {
    let dir = test_dir("died");
    let p = provider(
        &dir,
        LocalOptions {
            boot_delay: 2,
            capacity_errors: Vec::new(),
        },
    );
    let launched = p
        .launch(&request("l-1", "sim", None, &["burst-1", "burst-2"]))
        .await
        .unwrap();
    // Inside its boot delay: pending; then running.
    assert_eq!(launched[0].state, InstanceState::Pending);
    wait_state(&p, &launched[0].id, InstanceState::Running).await;
    wait_state(&p, &launched[1].id, InstanceState::Running).await;
    wait_file(&instance_dir(p.state_dir(), &launched[0].id).join("args.txt"));
    // Its process dies by itself: the instance is gone, as a vanished VM.
    let pid = instance_record(p.state_dir(), &launched[0].id)
        .unwrap()
        .pid
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_state(&p, &launched[0].id, InstanceState::Terminated).await;
    let all = p.describe("c1", "burst").await.unwrap();
    let other = all.iter().find(|i| i.id == launched[1].id).unwrap();
    assert_eq!(other.state, InstanceState::Running);
    // Terminating it still stops what it left behind (its child, in its session).
    let child: i32 = wait_file(&instance_dir(p.state_dir(), &launched[0].id).join("child.pid"))
        .trim()
        .parse()
        .unwrap();
    assert!(pid_alive(child));
    let ids: Vec<String> = launched.iter().map(|i| i.id.clone()).collect();
    p.terminate(&ids).await.unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while pid_alive(child) {
        assert!(
            Instant::now() < until,
            "the dead instance's child {child} survived"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn terminate_stops_the_instance_and_forgets_nothing() {
    let dir = test_dir("terminate");
    let p = provider(&dir, LocalOptions::default());
    let launched = p
        .launch(&request("l-1", "sim", None, &["burst-1"]))
        .await
        .unwrap();
    let id = launched[0].id.clone();
    wait_file(&instance_dir(p.state_dir(), &id).join("args.txt"));
    let pid = instance_record(p.state_dir(), &id).unwrap().pid.unwrap();
    let child: i32 = wait_file(&instance_dir(p.state_dir(), &id).join("child.pid"))
        .trim()
        .parse()
        .unwrap();
    assert!(pid_alive(pid) && pid_alive(child));
    p.terminate(&[id.clone(), "local-unknown".into()])
        .await
        .unwrap();
    wait_state(&p, &id, InstanceState::Terminated).await;
    assert!(!pid_alive(pid));
    // Everything of the instance is gone (its session), not only the worker.
    let until = Instant::now() + Duration::from_secs(10);
    while pid_alive(child) {
        assert!(
            Instant::now() < until,
            "the instance's child {child} survived"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let record = instance_record(p.state_dir(), &id).unwrap();
    assert!(record.terminated);
    assert!(record.terminated_at.is_some());
    // Again: fine, and a repeated launch does not bring it back.
    p.terminate(std::slice::from_ref(&id)).await.unwrap();
    let again = p
        .launch(&request("l-1", "sim", None, &["burst-1"]))
        .await
        .unwrap();
    assert_eq!(again[0].id, id);
    assert_eq!(again[0].state, InstanceState::Terminated);
}

#[tokio::test]
async fn interruption_notices_come_from_the_instance_file_or_inject_toml() {
    let dir = test_dir("notice");
    let p = provider(&dir, LocalOptions::default());
    let launched = p
        .launch(&request("l-1", "sim", None, &["burst-1", "burst-2"]))
        .await
        .unwrap();
    let (a, b) = (&launched[0].id, &launched[1].id);
    assert_eq!(interruption_notice(p.state_dir(), a), None);
    std::fs::write(
        instance_dir(p.state_dir(), a).join("spot-instance-action"),
        "2026-12-01T12:00:00Z\n",
    )
    .unwrap();
    let notice = interruption_notice(p.state_dir(), a).unwrap();
    assert_eq!(notice.action, "terminate");
    assert_eq!(notice.time.to_rfc3339(), "2026-12-01T12:00:00+00:00");
    // By node name in inject.toml: two minutes after it was written.
    assert_eq!(interruption_notice(p.state_dir(), b), None);
    std::fs::write(
        p.state_dir().join("inject.toml"),
        "interrupt = [\"burst-2\"]\n",
    )
    .unwrap();
    let notice = interruption_notice(p.state_dir(), b).unwrap();
    let left = notice.time - chrono::Utc::now();
    assert!(left > chrono::Duration::seconds(100) && left <= chrono::Duration::seconds(121));
    // Ids that are not names are never read.
    assert_eq!(interruption_notice(p.state_dir(), "../x"), None);
    p.terminate(&[a.clone(), b.clone()]).await.unwrap();
}
