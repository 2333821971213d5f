//! The EC2 provider against moto's EC2 server (`moto_server`, from `pip install
//! 'moto[server]'`), started by each test on a free loopback port with static dummy
//! credentials and region us-east-1, nothing taken from the host's AWS settings.

use aws_config::BehaviorVersion;
use aws_sdk_ec2::config::Credentials;
use aws_sdk_ec2::types::{Filter, InstanceAttributeName, InstanceStateName};
use berth_cloud::ec2::Ec2Provider;
use berth_cloud::{InstanceState, LaunchError, LaunchRequest, NodeBoot, Provider};
use berth_core::pool::{Ec2Options, InstanceShape, Market};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `moto_server` child process, killed on drop.
struct Moto {
    child: Child,
    url: String,
}

impl Moto {
    fn start() -> Moto {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = match Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "moto_server is not on PATH; these tests need moto's EC2 server: \
                 pip install 'moto[server]'"
            ),
            Err(e) => panic!("starting moto_server: {e}"),
        };
        let mut moto = Moto {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = moto.child.try_wait().unwrap() {
                panic!("moto_server exited at start: {status}");
            }
            if answers(port) {
                return moto;
            }
            assert!(
                Instant::now() < deadline,
                "moto_server did not answer on port {port} within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A provider on this server: static credentials, region us-east-1.
    async fn provider(&self, opts: Ec2Options) -> Ec2Provider {
        let loader = aws_config::defaults(BehaviorVersion::latest()).credentials_provider(
            Credentials::new("testing", "testing", None, None, "berth-test"),
        );
        let opts = Ec2Options {
            region: Some("us-east-1".into()),
            endpoint_url: Some(self.url.clone()),
            ..opts
        };
        Ec2Provider::with_loader(loader, &opts, "/usr/local/bin/berth").await
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether an HTTP server answers on `port`.
fn answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /moto-api/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.")
}

fn request(token: &str, pool: &str, nodes: &[&str]) -> LaunchRequest {
    LaunchRequest {
        client_token: token.into(),
        cluster: "c1".into(),
        pool: pool.into(),
        instance_type: "g5.xlarge".into(),
        shape: InstanceShape {
            gpu_count: 1,
            gpu_model: "A10G".into(),
            gpu_memory_mib: 24 * 1024,
            cpus: 4,
            memory_mib: 16 * 1024,
        },
        zone: Some("us-east-1b".into()),
        subnet: None,
        market: Market::OnDemand,
        image: Some("ami-12c6146b".into()),
        nodes: nodes
            .iter()
            .map(|n| NodeBoot {
                name: n.to_string(),
                bootstrap_token: format!("boot-{n}-secret"),
            })
            .collect(),
        api_url: "https://berth.example:8443".into(),
        features: vec!["a10g".into()],
        tags: BTreeMap::from([("team".to_string(), "ml".to_string())]),
    }
}

/// The instance's tags, as DescribeInstances reports them.
async fn tags_of(p: &Ec2Provider, id: &str) -> BTreeMap<String, String> {
    let out = p
        .client()
        .describe_instances()
        .instance_ids(id)
        .send()
        .await
        .unwrap();
    let i = &out.reservations()[0].instances()[0];
    i.tags()
        .iter()
        .map(|t| (t.key().unwrap().to_string(), t.value().unwrap().to_string()))
        .collect()
}

#[tokio::test]
async fn launch_starts_the_gang_tagged_with_its_user_data() {
    let moto = Moto::start();
    let p = moto.provider(Ec2Options::default()).await;
    let req = request("launch-0001", "burst", &["burst-1", "burst-2"]);

    let instances = p.launch(&req).await.unwrap();

    assert_eq!(instances.len(), 2);
    assert_eq!(
        instances.iter().map(|i| i.launch_index).collect::<Vec<_>>(),
        [0, 1]
    );
    for i in &instances {
        assert!(i.id.starts_with("i-"), "{}", i.id);
        assert_eq!(i.instance_type, "g5.xlarge");
        assert_eq!(i.zone.as_deref(), Some("us-east-1b"));
        // RunInstances answers `pending` (EC2 and moto alike); moto's DescribeInstances
        // then says `running` at once.
        assert_eq!(i.state, InstanceState::Pending);
        assert_eq!(i.launch_id.as_deref(), Some("launch-0001"));
        assert_eq!(i.pool.as_deref(), Some("burst"));
        assert_eq!(i.market, Market::OnDemand);
        assert!(i.launched_at.is_some());

        let tags = tags_of(&p, &i.id).await;
        assert_eq!(tags["berth:cluster"], "c1");
        assert_eq!(tags["berth:pool"], "burst");
        assert_eq!(tags["berth:launch"], "launch-0001");
        assert_eq!(tags["berth:nodes"], "burst-1,burst-2");
        assert_eq!(tags["Name"], "burst");
        assert_eq!(tags["team"], "ml");
    }

    // What EC2 got: one reservation, the client token, the image.
    let out = p
        .client()
        .describe_instances()
        .instance_ids(&instances[0].id)
        .instance_ids(&instances[1].id)
        .send()
        .await
        .unwrap();
    assert_eq!(out.reservations().len(), 1, "one RunInstances call");
    for i in out.reservations()[0].instances() {
        assert_eq!(i.image_id(), Some("ami-12c6146b"));
        assert_eq!(i.client_token(), Some("launch-0001"));
        assert_eq!(i.instance_lifecycle(), None, "on-demand");
    }

    // The user-data: both nodes, both tokens, each token only in the environment.
    let attr = p
        .client()
        .describe_instance_attribute()
        .instance_id(&instances[1].id)
        .attribute(InstanceAttributeName::UserData)
        .send()
        .await
        .unwrap();
    let encoded = attr.user_data().and_then(|v| v.value()).unwrap();
    let script = String::from_utf8(aws_smithy_types::base64::decode(encoded).unwrap()).unwrap();
    assert!(script.starts_with("#!/bin/sh\n"), "{script}");
    assert!(script.contains("ami-launch-index"), "{script}");
    assert!(
        script.contains("X-aws-ec2-metadata-token-ttl-seconds"),
        "{script}"
    );
    for (node, token) in [
        ("burst-1", "boot-burst-1-secret"),
        ("burst-2", "boot-burst-2-secret"),
    ] {
        assert!(script.contains(&format!("'{node}'")), "{node} in {script}");
        assert!(
            script.contains(&format!("'{token}'")),
            "{token} in {script}"
        );
    }
    let exec = script.lines().find(|l| l.starts_with("exec ")).unwrap();
    assert!(exec.contains("'/usr/local/bin/berth' worker"), "{exec}");
    assert!(
        exec.contains("--api 'https://berth.example:8443'"),
        "{exec}"
    );
    assert!(exec.contains("--feature 'a10g'"), "{exec}");
    assert!(
        !exec.contains("secret"),
        "no token on the command line: {exec}"
    );
    assert!(script.contains("export BERTH_BOOTSTRAP_TOKEN"), "{script}");

    // The volumes carry the tags too.
    let vols = p
        .client()
        .describe_volumes()
        .filters(
            Filter::builder()
                .name("tag:berth:launch")
                .values("launch-0001")
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(vols.volumes().len(), 2, "one root volume per instance");
}

#[tokio::test]
async fn launch_into_a_subnet_with_the_pool_options() {
    let moto = Moto::start();
    let p = moto
        .provider(Ec2Options {
            key_name: Some("ops".into()),
            berth_path: Some("/opt/berth/bin/berth".into()),
            ..Ec2Options::default()
        })
        .await;
    let vpc = p
        .client()
        .create_vpc()
        .cidr_block("10.0.0.0/16")
        .send()
        .await
        .unwrap();
    let vpc_id = vpc.vpc().unwrap().vpc_id().unwrap();
    let subnet = p
        .client()
        .create_subnet()
        .vpc_id(vpc_id)
        .cidr_block("10.0.1.0/24")
        .availability_zone("us-east-1c")
        .send()
        .await
        .unwrap();
    let subnet_id = subnet.subnet().unwrap().subnet_id().unwrap().to_string();
    let sg = p
        .client()
        .create_security_group()
        .group_name("berth-workers")
        .description("berth workers")
        .vpc_id(vpc_id)
        .send()
        .await
        .unwrap();
    let sg_id = sg.group_id().unwrap().to_string();
    let p = moto
        .provider(Ec2Options {
            key_name: Some("ops".into()),
            berth_path: Some("/opt/berth/bin/berth".into()),
            security_group_ids: vec![sg_id.clone()],
            ..Ec2Options::default()
        })
        .await;

    let mut req = request("launch-subnet", "burst", &["burst-3"]);
    req.zone = None;
    req.subnet = Some(subnet_id.clone());
    let instances = p.launch(&req).await.unwrap();

    assert_eq!(instances.len(), 1);
    assert_eq!(instances[0].zone.as_deref(), Some("us-east-1c"));
    let out = p
        .client()
        .describe_instances()
        .instance_ids(&instances[0].id)
        .send()
        .await
        .unwrap();
    let i = &out.reservations()[0].instances()[0];
    assert_eq!(i.subnet_id(), Some(subnet_id.as_str()));
    assert_eq!(i.key_name(), Some("ops"));
    assert!(
        i.security_groups()
            .iter()
            .any(|g| g.group_id() == Some(sg_id.as_str())),
        "{:?}",
        i.security_groups()
    );
    assert_eq!(tags_of(&p, &instances[0].id).await["Name"], "burst-3");
    let attr = p
        .client()
        .describe_instance_attribute()
        .instance_id(&instances[0].id)
        .attribute(InstanceAttributeName::UserData)
        .send()
        .await
        .unwrap();
    let script = String::from_utf8(
        aws_smithy_types::base64::decode(attr.user_data().unwrap().value().unwrap()).unwrap(),
    )
    .unwrap();
    assert!(
        script.contains("exec '/opt/berth/bin/berth' worker"),
        "{script}"
    );
}

/// EC2 answers a repeated `ClientToken` with the first call's instances; moto 5.2 ignores
/// `ClientToken` and launches again (checked with boto3), so what passes here is the
/// provider's own look-up by the `berth:launch` tag before `RunInstances`. That the token
/// reaches EC2 is checked in `launch_starts_the_gang_tagged_with_its_user_data`.
#[tokio::test]
async fn the_same_client_token_launches_nothing_new() {
    let moto = Moto::start();
    let p = moto.provider(Ec2Options::default()).await;
    let req = request("launch-again", "burst", &["burst-1", "burst-2"]);

    let first = p.launch(&req).await.unwrap();
    let again = p.launch(&req).await.unwrap();

    let ids = |v: &[berth_cloud::Instance]| v.iter().map(|i| i.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&again), ids(&first));
    assert_eq!(p.describe("c1", "burst").await.unwrap().len(), 2);
}

#[tokio::test]
async fn spot_launch_is_a_spot_instance() {
    let moto = Moto::start();
    let p = moto.provider(Ec2Options::default()).await;
    let mut req = request("launch-spot", "cheap", &["cheap-1"]);
    req.market = Market::Spot;

    let instances = p.launch(&req).await.unwrap();

    assert_eq!(instances.len(), 1);
    assert_eq!(instances[0].market, Market::Spot);
    let out = p
        .client()
        .describe_instances()
        .instance_ids(&instances[0].id)
        .send()
        .await
        .unwrap();
    assert_eq!(
        out.reservations()[0].instances()[0]
            .instance_lifecycle()
            .map(|l| l.as_str()),
        Some("spot")
    );
    let live = p.describe("c1", "cheap").await.unwrap();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].market, Market::Spot);
}

#[tokio::test]
async fn describe_and_terminate_a_pool() {
    let moto = Moto::start();
    let p = moto.provider(Ec2Options::default()).await;
    let burst = p
        .launch(&request("launch-b", "burst", &["burst-1", "burst-2"]))
        .await
        .unwrap();
    let other = p
        .launch(&request("launch-o", "other", &["other-1"]))
        .await
        .unwrap();
    let mut elsewhere = request("launch-x", "burst", &["burst-1"]);
    elsewhere.cluster = "c2".into();
    let c2 = p.launch(&elsewhere).await.unwrap();

    let found = p.describe("c1", "burst").await.unwrap();
    let mut found_ids: Vec<_> = found.iter().map(|i| i.id.clone()).collect();
    let mut burst_ids: Vec<_> = burst.iter().map(|i| i.id.clone()).collect();
    found_ids.sort();
    burst_ids.sort();
    assert_eq!(
        found_ids, burst_ids,
        "not another pool's, not another cluster's"
    );
    assert!(found
        .iter()
        .all(|i| i.pool.as_deref() == Some("burst") && i.state == InstanceState::Running));
    let ids = |v: &[berth_cloud::Instance]| v.iter().map(|i| i.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&p.describe("c1", "other").await.unwrap()), ids(&other));
    assert_eq!(ids(&p.describe("c2", "burst").await.unwrap()), ids(&c2));
    assert!(p.describe("c1", "none").await.unwrap().is_empty());

    p.terminate(&burst_ids).await.unwrap();

    assert!(p.describe("c1", "burst").await.unwrap().is_empty());
    assert_eq!(
        ids(&p.describe("c1", "other").await.unwrap()),
        ids(&other),
        "untouched"
    );
    let out = p
        .client()
        .describe_instances()
        .set_instance_ids(Some(burst_ids.clone()))
        .send()
        .await
        .unwrap();
    for i in out.reservations().iter().flat_map(|r| r.instances()) {
        assert_eq!(
            i.state().and_then(|s| s.name()),
            Some(&InstanceStateName::Terminated)
        );
    }

    // Terminating again, or ids EC2 never knew, mixed with a live one, is fine.
    p.terminate(&burst_ids).await.unwrap();
    let mut mixed = vec!["i-0123456789abcdef0".to_string(), other[0].id.clone()];
    mixed.extend(burst_ids.clone());
    p.terminate(&mixed).await.unwrap();
    assert!(p.describe("c1", "other").await.unwrap().is_empty());
    p.terminate(&["i-00000000000000000".to_string()])
        .await
        .unwrap();
    p.terminate(&[]).await.unwrap();
}

#[tokio::test]
async fn launch_errors_carry_ec2s_code() {
    let moto = Moto::start();
    let p = moto.provider(Ec2Options::default()).await;

    // A zone of another region: EC2 (and moto) refuse it with InvalidParameterValue.
    let mut req = request("launch-bad-zone", "burst", &["burst-1"]);
    req.zone = Some("eu-west-1a".into());
    match p.launch(&req).await {
        Err(LaunchError::Other(msg)) => {
            assert!(msg.starts_with("InvalidParameterValue: "), "{msg}")
        }
        other => panic!("expected Other(InvalidParameterValue…), got {other:?}"),
    }
    assert!(p.describe("c1", "burst").await.unwrap().is_empty());

    let mut req = request("launch-no-image", "burst", &["burst-1"]);
    req.image = None;
    match p.launch(&req).await {
        Err(LaunchError::Other(msg)) => assert!(msg.contains("no image"), "{msg}"),
        other => panic!("expected Other(no image), got {other:?}"),
    }

    // Nothing listening: Other, naming the failure to connect.
    drop(moto);
    let closed = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let p = Ec2Provider::with_loader(
        aws_config::defaults(BehaviorVersion::latest()).credentials_provider(Credentials::new(
            "testing",
            "testing",
            None,
            None,
            "berth-test",
        )),
        &Ec2Options {
            region: Some("us-east-1".into()),
            endpoint_url: Some(format!("http://127.0.0.1:{port}")),
            ..Ec2Options::default()
        },
        "/usr/local/bin/berth",
    )
    .await;
    match p
        .launch(&request("launch-down", "burst", &["burst-1"]))
        .await
    {
        Err(LaunchError::Other(msg)) => {
            assert!(msg.contains("DescribeInstances"), "{msg}")
        }
        other => panic!("expected Other, got {other:?}"),
    }
    assert!(p.describe("c1", "burst").await.is_err());
    assert!(p.terminate(&["i-0123456789abcdef0".into()]).await.is_err());
}
