//! A pool on the EC2 provider against moto's EC2 server (started here on loopback, never
//! AWS): the launch request carries the type, zone, count, Berth's tags and a bootstrap
//! token per node in the user-data (never on the worker's command line); a worker that
//! joins with that token runs the job; the idle node's instance is terminated; an
//! instance tagged with the cluster that no node knows is terminated as an orphan; a node
//! whose instance vanishes is DOWN at once and its job requeued.
//!
//! The test plays the instances' part itself: moto runs no machines, so the worker an
//! instance's user-data would start is started here, with the token read from that
//! user-data.

use crate::cluster::{Options, TestCluster};
use berth_core::pool::Pool;
use berth_core::state::{JobState, NodeState};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// moto's server on a free loopback port, stopped on drop.
struct Moto {
    child: Child,
    url: String,
}

impl Moto {
    fn start() -> Moto {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server not found: pip install 'moto[server]'");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not answer");
            std::thread::sleep(Duration::from_millis(100));
        }
        Moto {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Runs `op` of the EC2 helper below with boto3 against this server, in the Python
    /// that runs `moto_server` (boto3 comes with moto; CI installs it in a virtualenv).
    fn ec2(&self, args: &[&str]) -> serde_json::Value {
        let python = std::env::var_os("PATH")
            .and_then(|path| {
                std::env::split_paths(&path)
                    .map(|d| d.join("moto_server"))
                    .find(|p| p.exists())
            })
            .and_then(|p| std::fs::canonicalize(p).ok())
            .map(|p| p.with_file_name("python3"))
            .filter(|p| p.exists())
            .unwrap_or_else(|| "python3".into());
        let out = Command::new(python)
            .arg("-c")
            .arg(EC2_HELPER)
            .arg(&self.url)
            .args(args)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The instances of pool `pool`, any state.
    fn instances(&self, pool: &str) -> Vec<serde_json::Value> {
        self.ec2(&["describe", pool])
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test's own EC2 client (boto3, installed with moto).
const EC2_HELPER: &str = r#"
import base64, json, sys, boto3
url, op, args = sys.argv[1], sys.argv[2], sys.argv[3:]
ec2 = boto3.client("ec2", endpoint_url=url, region_name="us-east-1")
if op == "describe":
    out = []
    for r in ec2.describe_instances(Filters=[{"Name": "tag:berth:pool", "Values": [args[0]]}])["Reservations"]:
        for i in r["Instances"]:
            ud = ec2.describe_instance_attribute(InstanceId=i["InstanceId"], Attribute="userData")
            data = ud.get("UserData", {}).get("Value")
            out.append({
                "id": i["InstanceId"], "type": i["InstanceType"], "state": i["State"]["Name"],
                "zone": i["Placement"]["AvailabilityZone"], "index": i.get("AmiLaunchIndex"),
                "tags": {t["Key"]: t["Value"] for t in i.get("Tags", [])},
                "user_data": base64.b64decode(data).decode() if data else "",
            })
    print(json.dumps(out))
elif op == "orphan":
    r = ec2.run_instances(ImageId="ami-12c6146b", InstanceType="p5.48xlarge", MinCount=1, MaxCount=1,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [
            {"Key": "berth:cluster", "Value": args[0]}, {"Key": "berth:pool", "Value": args[1]}]}])
    print(json.dumps(r["Instances"][0]["InstanceId"]))
elif op == "terminate":
    ec2.terminate_instances(InstanceIds=[args[0]])
    print(json.dumps("ok"))
"#;

fn live(i: &serde_json::Value) -> bool {
    matches!(i["state"].as_str(), Some("pending" | "running"))
}

async fn wait<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Starts the worker a launched instance's user-data would start, with the token from
/// that user-data (as component `<instance id>`). Returns the node's name.
fn join(c: &mut TestCluster, instance: &serde_json::Value) -> String {
    let node = instance["tags"]["berth:nodes"]
        .as_str()
        .unwrap()
        .to_string();
    let user_data = instance["user_data"].as_str().unwrap();
    let token = user_data
        .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
        .find(|w| w.starts_with("berth_boot_"))
        .expect("a bootstrap token in the user-data")
        .to_string();
    // Each instance has a disk of its own (a fresh state directory: no credential kept
    // from an earlier instance of the same node).
    let id = instance["id"].as_str().unwrap().to_string();
    let state = c.dir.join(&id);
    let url = c.url.clone();
    c.spawn_berth(
        &id,
        &[
            "worker",
            "--api",
            &url,
            "--name",
            &node,
            "--bootstrap-token",
            &token,
            "--simulate-gpus",
            "8xH100",
            "--state-dir",
            state.to_str().unwrap(),
            "--run-as",
            "worker",
            "--kill-wait",
            "2",
            "--poll-wait",
            "1",
        ],
    );
    node
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ec2_pool_on_moto_launches_joins_terminates_idle_reaps_orphans_and_requeues_vanished() {
    let moto = Moto::start();
    let cluster_tag = format!("e2e-{}", std::process::id());
    let config = format!(
        r#"
[cloud]
cluster = "{cluster_tag}"
api_url = "@API_URL@"
orphan_grace_seconds = 5
describe_interval_seconds = 2

[pools.gpu]
provider = "ec2"
image = "ami-12c6146b"
zones = ["us-east-1a"]
max_nodes = 2
idle_timeout = 6
boot_timeout = 300
expected_boot = 5
tags = {{ team = "ml" }}

[pools.gpu.ec2]
region = "us-east-1"
endpoint_url = "{}"

[[pools.gpu.instance_types]]
name = "p5.48xlarge"
gpus = "8xH100"
cpus = 192
memory = "2048G"
price_per_hour = 98.32
"#,
        moto.url
    );
    let env = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut c = TestCluster::start_with_api_config(
        Options {
            workers: 0,
            env,
            ..Default::default()
        },
        &config,
    )
    .await;

    // 1. A job launches one instance with the pool's type, zone and tags.
    let a = c
        .submit("#!/bin/bash\necho ran\n", &["--gpus-per-node=8"])
        .await;
    let first = wait(60, "an instance", || {
        moto.instances("gpu").into_iter().find(live)
    })
    .await;
    assert_eq!(first["type"], "p5.48xlarge");
    assert_eq!(first["zone"], "us-east-1a");
    assert_eq!(first["tags"]["berth:cluster"], cluster_tag.as_str());
    assert_eq!(first["tags"]["berth:pool"], "gpu");
    assert_eq!(first["tags"]["team"], "ml");
    assert!(first["tags"]["berth:launch"]
        .as_str()
        .is_some_and(|l| l.len() == 36));
    let user_data = first["user_data"].as_str().unwrap();
    assert!(user_data.contains("BERTH_BOOTSTRAP_TOKEN"), "{user_data}");
    for line in user_data.lines().filter(|l| l.contains(" worker ")) {
        assert!(
            !line.contains("berth_boot_"),
            "a token on the command line: {line}"
        );
    }
    assert_eq!(moto.instances("gpu").len(), 1, "one instance for one job");

    // 2. The instance's worker joins with its token; the job runs there.
    let node = join(&mut c, &first);
    let first_id = first["id"].as_str().unwrap().to_string();
    let job = c.wait_ended(a, 120).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(job.allocations[0].node, node);

    // 3. Idle past idle_timeout: its instance is terminated, the slot powered down.
    let id = first["id"].as_str().unwrap().to_string();
    wait(60, "the idle instance terminated", || {
        moto.instances("gpu")
            .into_iter()
            .any(|i| i["id"] == id.as_str() && !live(&i))
            .then_some(())
    })
    .await;
    c.kill(&first_id);
    let p: Pool = c.get("/v1/pools/gpu").await;
    assert!(p
        .events
        .iter()
        .any(|e| e.kind == "terminate" && e.instance_id.as_deref() == Some(&id)));

    // 4. An instance tagged with this cluster that no node knows is terminated.
    let orphan = moto.ec2(&["orphan", &cluster_tag, "gpu"]);
    let orphan = orphan.as_str().unwrap().to_string();
    wait(60, "the orphan terminated", || {
        moto.instances("gpu")
            .into_iter()
            .any(|i| i["id"] == orphan.as_str() && !live(&i))
            .then_some(())
    })
    .await;

    // 5. A running job whose instance vanishes: the node is DOWN at once (well before the
    //    node timeout) and the job requeued.
    let b = c
        .submit("#!/bin/bash\nsleep 300\n", &["--gpus-per-node=8"])
        .await;
    let second = wait(60, "a second instance", || {
        moto.instances("gpu")
            .into_iter()
            .find(|i| live(i) && i["id"] != id.as_str() && i["id"] != orphan.as_str())
    })
    .await;
    let node = join(&mut c, &second);
    let second_id = second["id"].as_str().unwrap().to_string();
    c.wait_for(b, 120, |j| j.state == JobState::Running).await;
    let gone = Instant::now();
    moto.ec2(&["terminate", second["id"].as_str().unwrap()]);
    let n = c.wait_node(&node, 30, |n| n.state == NodeState::Down).await;
    assert!(
        gone.elapsed() < Duration::from_secs(30),
        "DOWN before the node timeout"
    );
    assert!(
        n.reason.as_deref().is_some_and(|r| r.contains("gone")),
        "{n:#?}"
    );
    let job = c.wait_for(b, 30, |j| j.restart_count == 1).await;
    assert_ne!(job.state, JobState::NodeFail, "{job:#?}");
    c.kill(&second_id);
    let _ = c.cli(&c.token, &["cancel", &b.to_string()]);
}
