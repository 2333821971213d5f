//! Amazon EC2 provider, on aws-sdk-ec2.
//!
//! A launch is one `RunInstances` call with `MinCount = MaxCount = nodes`, so EC2 starts
//! the whole gang or nothing, and `ClientToken` = the launch id, so a retried call
//! answers the first call's instances. Every instance (and its volumes) carries Berth's
//! tags; its user-data is a POSIX shell script that reads the instance's launch index
//! from the instance metadata service (IMDSv2) and starts `berth worker` as the node of
//! that index, with that node's one-time bootstrap token in `BERTH_BOOTSTRAP_TOKEN`.
//!
//! Credentials and region come from the SDK's standard chain (environment, profile,
//! instance role…); a pool's `region` and `endpoint_url` override the chain's, and
//! `AWS_ENDPOINT_URL_EC2` works through it too. TLS is rustls with ring.

use crate::{
    Instance, InstanceState, LaunchError, LaunchRequest, Provider, ProviderError, TAG_CLUSTER,
    TAG_LAUNCH, TAG_NODES, TAG_POOL,
};
use aws_config::{timeout::TimeoutConfig, BehaviorVersion, ConfigLoader, Region};
use aws_sdk_ec2::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_ec2::types::{
    Filter, IamInstanceProfileSpecification, InstanceInterruptionBehavior, InstanceLifecycleType,
    InstanceMarketOptionsRequest, InstanceStateName, InstanceType, MarketType, Placement,
    ResourceType, SpotInstanceType, SpotMarketOptions, Tag, TagSpecification,
};
use aws_sdk_ec2::Client;
use berth_core::pool::{Ec2Options, Market};
use futures_util::future::BoxFuture;
use std::fmt::Write as _;
use std::time::Duration;

/// The state directory the workers of EC2 instances use.
pub const WORKER_STATE_DIR: &str = "/var/lib/berth/worker";

/// The most instance ids one `TerminateInstances` call takes.
const TERMINATE_BATCH: usize = 1000;

/// EC2's limit on user-data, bytes before base64 encoding.
const USER_DATA_MAX_BYTES: usize = 16 * 1024;

/// The states [`Ec2Provider::describe`] lists (every state but `terminated`).
const LIVE_STATES: [&str; 5] = ["pending", "running", "shutting-down", "stopping", "stopped"];

/// Launches, lists and terminates a pool's instances on EC2.
#[derive(Debug, Clone)]
pub struct Ec2Provider {
    client: Client,
    opts: Ec2Options,
    berth_path: String,
}

impl Ec2Provider {
    /// A provider for a pool with these EC2 options: credentials and region from the
    /// SDK's standard chain (`BehaviorVersion::latest()`), `opts.region` and
    /// `opts.endpoint_url` overriding them. `berth_path_default` is the path of `berth`
    /// on the image when `opts.berth_path` is unset.
    ///
    /// Nothing is called here; missing credentials or region show as errors of the first
    /// call.
    pub async fn new(opts: &Ec2Options, berth_path_default: &str) -> Self {
        Self::with_loader(
            aws_config::defaults(BehaviorVersion::latest()),
            opts,
            berth_path_default,
        )
        .await
    }

    /// As [`Ec2Provider::new`], from a given SDK config loader (for example one with
    /// static credentials, as the tests use); `opts.region` and `opts.endpoint_url`
    /// still override what the loader holds. The loader's HTTP client is replaced by
    /// Berth's (rustls on ring) and its timeouts by: 5 s to connect, 60 s per attempt.
    pub async fn with_loader(
        loader: ConfigLoader,
        opts: &Ec2Options,
        berth_path_default: &str,
    ) -> Self {
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let mut loader = loader.http_client(http).timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(5))
                .operation_attempt_timeout(Duration::from_secs(60))
                .build(),
        );
        if let Some(region) = &opts.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let Some(url) = &opts.endpoint_url {
            loader = loader.endpoint_url(url.clone());
        }
        let config = loader.load().await;
        Ec2Provider {
            client: Client::new(&config),
            opts: opts.clone(),
            berth_path: opts
                .berth_path
                .clone()
                .unwrap_or_else(|| berth_path_default.to_string()),
        }
    }

    /// The SDK client (for callers needing an EC2 call the trait lacks).
    pub fn client(&self) -> &Client {
        &self.client
    }

    async fn launch_inner(&self, req: &LaunchRequest) -> Result<Vec<Instance>, LaunchError> {
        let count = i32::try_from(req.nodes.len())
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                LaunchError::Other(format!(
                    "a launch needs 1 to {} nodes, not {}",
                    i32::MAX,
                    req.nodes.len()
                ))
            })?;
        let image = req.image.as_deref().ok_or_else(|| {
            LaunchError::Other(format!(
                "pool {}: no image (the AMI id RunInstances needs)",
                req.pool
            ))
        })?;
        // The launch may have happened already (a retry after a lost answer or a restart):
        // EC2's ClientToken makes RunInstances answer the first launch's instances, and
        // this look-up by the `berth:launch` tag does the same where the endpoint ignores
        // ClientToken (moto).
        let existing = self
            .list(vec![
                filter(&format!("tag:{TAG_CLUSTER}"), [req.cluster.as_str()]),
                filter(&format!("tag:{TAG_LAUNCH}"), [req.client_token.as_str()]),
            ])
            .await
            .map_err(|e| LaunchError::Other(e.0))?;
        if !existing.is_empty() {
            return Ok(existing);
        }
        let script = user_data(req, &self.berth_path);
        if script.len() > USER_DATA_MAX_BYTES {
            return Err(LaunchError::Other(format!(
                "the user-data for {} nodes is {} bytes, over EC2's {} bytes: launch fewer \
                 nodes at once",
                req.nodes.len(),
                script.len(),
                USER_DATA_MAX_BYTES
            )));
        }
        let tags = launch_tags(req);
        let mut call = self
            .client
            .run_instances()
            .min_count(count)
            .max_count(count)
            .client_token(&req.client_token)
            .image_id(image)
            .instance_type(InstanceType::from(req.instance_type.as_str()))
            .user_data(aws_smithy_types::base64::encode(script.as_bytes()))
            .tag_specifications(tag_spec(ResourceType::Instance, &tags))
            .tag_specifications(tag_spec(ResourceType::Volume, &tags));
        if let Some(zone) = &req.zone {
            call = call.placement(Placement::builder().availability_zone(zone).build());
        }
        if let Some(subnet) = &req.subnet {
            call = call.subnet_id(subnet);
        }
        if !self.opts.security_group_ids.is_empty() {
            call = call.set_security_group_ids(Some(self.opts.security_group_ids.clone()));
        }
        if let Some(profile) = &self.opts.iam_instance_profile {
            call = call.iam_instance_profile(
                IamInstanceProfileSpecification::builder()
                    .name(profile)
                    .build(),
            );
        }
        if let Some(key) = &self.opts.key_name {
            call = call.key_name(key);
        }
        if req.market == Market::Spot {
            call = call.instance_market_options(
                InstanceMarketOptionsRequest::builder()
                    .market_type(MarketType::Spot)
                    .spot_options(
                        SpotMarketOptions::builder()
                            .spot_instance_type(SpotInstanceType::OneTime)
                            .instance_interruption_behavior(InstanceInterruptionBehavior::Terminate)
                            .build(),
                    )
                    .build(),
            );
        }
        let out = call.send().await.map_err(|err| match err.code() {
            Some(code) => launch_error(code, err.message().unwrap_or_default()),
            None => LaunchError::Other(DisplayErrorContext(&err).to_string()),
        })?;
        let mut instances: Vec<Instance> = out.instances().iter().map(to_instance).collect();
        instances.sort_by_key(|i| i.launch_index);
        Ok(instances)
    }

    /// Every instance matching `filters`, all pages.
    async fn list(&self, filters: Vec<Filter>) -> Result<Vec<Instance>, ProviderError> {
        let mut pages = self
            .client
            .describe_instances()
            .set_filters(Some(filters))
            .into_paginator()
            .page_size(1000)
            .items()
            .send();
        let mut instances = Vec::new();
        while let Some(reservation) = pages.next().await {
            let reservation = reservation.map_err(|e| {
                ProviderError(format!("DescribeInstances: {}", DisplayErrorContext(&e)))
            })?;
            instances.extend(reservation.instances().iter().map(to_instance));
        }
        instances.sort_by(|a, b| {
            (&a.launch_id, a.launch_index, &a.id).cmp(&(&b.launch_id, b.launch_index, &b.id))
        });
        Ok(instances)
    }

    async fn terminate_batch(&self, ids: &[String]) -> Result<(), ProviderError> {
        let mut ids = ids.to_vec();
        // Each round drops the ids EC2 names as unknown and tries again; when the error
        // names none of them, the ids are terminated one by one.
        while !ids.is_empty() {
            let err = match self
                .client
                .terminate_instances()
                .set_instance_ids(Some(ids.clone()))
                .send()
                .await
            {
                Ok(_) => return Ok(()),
                Err(err) => err,
            };
            if err.code() != Some("InvalidInstanceID.NotFound") {
                return Err(ProviderError(format!(
                    "TerminateInstances: {}",
                    DisplayErrorContext(&err)
                )));
            }
            let unknown: std::collections::HashSet<&str> = err
                .message()
                .unwrap_or_default()
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .collect();
            let before = ids.len();
            ids.retain(|id| !unknown.contains(id.as_str()));
            if ids.len() == before {
                for id in &ids {
                    match self
                        .client
                        .terminate_instances()
                        .instance_ids(id)
                        .send()
                        .await
                    {
                        Ok(_) => {}
                        Err(err) if err.code() == Some("InvalidInstanceID.NotFound") => {}
                        Err(err) => {
                            return Err(ProviderError(format!(
                                "TerminateInstances {id}: {}",
                                DisplayErrorContext(&err)
                            )))
                        }
                    }
                }
                return Ok(());
            }
        }
        Ok(())
    }
}

impl Provider for Ec2Provider {
    fn kind(&self) -> &'static str {
        "ec2"
    }

    /// One `RunInstances` for all of `req.nodes` (`MinCount = MaxCount`), with
    /// `ClientToken = req.client_token`; an earlier launch with that token (found by its
    /// `berth:launch` tag) is answered instead of launching again.
    ///
    /// # Errors
    /// [`LaunchError`] as [`launch_error`] classifies EC2's code; `Other` when the
    /// request has no image or no nodes, the user-data would pass EC2's 16 KiB, or the
    /// endpoint cannot be reached.
    fn launch<'a>(
        &'a self,
        req: &'a LaunchRequest,
    ) -> BoxFuture<'a, Result<Vec<Instance>, LaunchError>> {
        Box::pin(self.launch_inner(req))
    }

    /// `TerminateInstances` in batches of at most 1000 ids; ids EC2 does not know
    /// (`InvalidInstanceID.NotFound`) or already terminated are skipped.
    ///
    /// # Errors
    /// Any other EC2 error, or the endpoint unreachable.
    fn terminate<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move {
            for batch in ids.chunks(TERMINATE_BATCH) {
                self.terminate_batch(batch).await?;
            }
            Ok(())
        })
    }

    /// `DescribeInstances` (all pages) of the instances tagged `berth:cluster = cluster`
    /// and `berth:pool = pool` that are not terminated (pending, running, shutting-down,
    /// stopping, stopped), ordered by launch and launch index.
    ///
    /// # Errors
    /// Any EC2 error, or the endpoint unreachable.
    fn describe<'a>(
        &'a self,
        cluster: &'a str,
        pool: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Instance>, ProviderError>> {
        Box::pin(self.list(vec![
            filter(&format!("tag:{TAG_CLUSTER}"), [cluster]),
            filter(&format!("tag:{TAG_POOL}"), [pool]),
            filter("instance-state-name", LIVE_STATES),
        ]))
    }
}

/// Classifies an EC2 error code of `RunInstances`:
///
/// * [`LaunchError::Capacity`] (try another type or zone): `InsufficientInstanceCapacity`,
///   `InsufficientCapacity`, `InsufficientHostCapacity`, `Unsupported`,
///   `InsufficientCapacityOnOutpost`, `SpotMaxPriceTooLow`,
///   `MaxSpotInstanceCountExceeded`;
/// * [`LaunchError::Limit`] (the account's limit; the pool backs off):
///   `InstanceLimitExceeded`, `VcpuLimitExceeded`, `RequestLimitExceeded`;
/// * [`LaunchError::Other`] (`"<code>: <message>"`) for any other code.
pub fn launch_error(code: &str, message: &str) -> LaunchError {
    match code {
        "InsufficientInstanceCapacity"
        | "InsufficientCapacity"
        | "InsufficientHostCapacity"
        | "Unsupported"
        | "InsufficientCapacityOnOutpost"
        | "SpotMaxPriceTooLow"
        | "MaxSpotInstanceCountExceeded" => LaunchError::Capacity {
            code: code.to_string(),
            message: message.to_string(),
        },
        "InstanceLimitExceeded" | "VcpuLimitExceeded" | "RequestLimitExceeded" => {
            LaunchError::Limit {
                code: code.to_string(),
                message: message.to_string(),
            }
        }
        _ => LaunchError::Other(format!("{code}: {message}")),
    }
}

/// The tags of a launch's instances and volumes, in this order: the pool's own
/// (`req.tags`), then Berth's, which win over the pool's of the same key: `berth:cluster`,
/// `berth:pool`, `berth:launch` (the client token), `berth:nodes` (node names
/// comma-joined in launch-index order) and `Name` (the node name for one node, else the
/// pool).
pub fn launch_tags(req: &LaunchRequest) -> Vec<(String, String)> {
    let mut tags = req.tags.clone();
    let name = match req.nodes.as_slice() {
        [one] => one.name.clone(),
        _ => req.pool.clone(),
    };
    let nodes = req
        .nodes
        .iter()
        .map(|n| n.name.as_str())
        .collect::<Vec<_>>()
        .join(",");
    for (key, value) in [
        (TAG_CLUSTER, req.cluster.clone()),
        (TAG_POOL, req.pool.clone()),
        (TAG_LAUNCH, req.client_token.clone()),
        (TAG_NODES, nodes),
        ("Name", name),
    ] {
        tags.insert(key.to_string(), value);
    }
    tags.into_iter().collect()
}

/// The user-data of a launch: a POSIX shell script that asks IMDSv2 for the instance's
/// launch index (`PUT /latest/api/token`, then `GET
/// /latest/meta-data/ami-launch-index`, with `curl`, retrying for about a minute) and
/// execs `<berth_path> worker --api <api_url> --name <node> --state-dir
/// /var/lib/berth/worker --metadata-url http://169.254.169.254 [--feature a,b]` (the
/// worker watches the metadata for spot interruption notices) for the node of that index, that node's
/// bootstrap token in the environment (`BERTH_BOOTSTRAP_TOKEN`), never in its arguments.
/// Every interpolated value is single-quoted. An index with no node exits 1.
///
/// The script holds every node's token of the launch: each instance can read the whole
/// user-data from IMDS, so the instances of one launch trust each other (each token is
/// one-time and bound to its node).
pub fn user_data(req: &LaunchRequest, berth_path: &str) -> String {
    let mut s = String::from(
        "#!/bin/sh\n\
         # Berth worker bootstrap, written by berth's ec2 provider.\n\
         set -eu\n\
         umask 077\n\
         imds=http://169.254.169.254/latest\n\
         tries=0\n\
         until imds_token=$(curl -sf -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' \"$imds/api/token\") \\\n\
         \x20 && index=$(curl -sf -H \"X-aws-ec2-metadata-token: $imds_token\" \"$imds/meta-data/ami-launch-index\"); do\n\
         \x20 tries=$((tries + 1))\n\
         \x20 if [ \"$tries\" -ge 30 ]; then echo 'berth: no launch index from the instance metadata service' >&2; exit 1; fi\n\
         \x20 sleep 2\n\
         done\n\
         case \"$index\" in\n",
    );
    for (i, node) in req.nodes.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {i}) node={}; BERTH_BOOTSTRAP_TOKEN={} ;;",
            sh_quote(&node.name),
            sh_quote(&node.bootstrap_token)
        );
    }
    s.push_str(
        "  *) echo \"berth: no node for launch index $index\" >&2; exit 1 ;;\n\
         esac\n\
         export BERTH_BOOTSTRAP_TOKEN\n",
    );
    let _ = write!(
        s,
        "mkdir -p {dir}\nexec {berth} worker --api {api} --name \"$node\" --state-dir {dir} \
         --metadata-url 'http://169.254.169.254'",
        dir = sh_quote(WORKER_STATE_DIR),
        berth = sh_quote(berth_path),
        api = sh_quote(&req.api_url),
    );
    if !req.features.is_empty() {
        let _ = write!(s, " --feature {}", sh_quote(&req.features.join(",")));
    }
    s.push('\n');
    s
}

/// `value` single-quoted for a POSIX shell (`'` becomes `'\''`).
fn sh_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

fn filter<'v>(name: &str, values: impl IntoIterator<Item = &'v str>) -> Filter {
    Filter::builder()
        .name(name)
        .set_values(Some(values.into_iter().map(str::to_string).collect()))
        .build()
}

fn tag_spec(resource: ResourceType, tags: &[(String, String)]) -> TagSpecification {
    TagSpecification::builder()
        .resource_type(resource)
        .set_tags(Some(
            tags.iter()
                .map(|(k, v)| Tag::builder().key(k).value(v).build())
                .collect(),
        ))
        .build()
}

fn to_instance(i: &aws_sdk_ec2::types::Instance) -> Instance {
    let tag = |key: &str| {
        i.tags()
            .iter()
            .find(|t| t.key() == Some(key))
            .and_then(|t| t.value())
            .map(str::to_string)
    };
    let state = match i.state().and_then(|s| s.name()) {
        Some(InstanceStateName::Running) => InstanceState::Running,
        Some(InstanceStateName::ShuttingDown) => InstanceState::ShuttingDown,
        Some(InstanceStateName::Terminated) => InstanceState::Terminated,
        Some(InstanceStateName::Stopping | InstanceStateName::Stopped) => InstanceState::Stopped,
        _ => InstanceState::Pending,
    };
    Instance {
        id: i.instance_id().unwrap_or_default().to_string(),
        instance_type: i
            .instance_type()
            .map(|t| t.as_str().to_string())
            .unwrap_or_default(),
        zone: i
            .placement()
            .and_then(|p| p.availability_zone())
            .map(str::to_string),
        state,
        launch_index: i
            .ami_launch_index()
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0),
        launch_id: tag(TAG_LAUNCH),
        pool: tag(TAG_POOL),
        launched_at: i
            .launch_time()
            .and_then(|t| chrono::DateTime::from_timestamp(t.secs(), t.subsec_nanos())),
        market: match i.instance_lifecycle() {
            Some(InstanceLifecycleType::Spot) => Market::Spot,
            _ => Market::OnDemand,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NodeBoot;
    use berth_core::pool::InstanceShape;

    #[test]
    fn launch_errors_are_classified_by_code() {
        for code in [
            "InsufficientInstanceCapacity",
            "InsufficientCapacity",
            "InsufficientHostCapacity",
            "Unsupported",
            "InsufficientCapacityOnOutpost",
            "SpotMaxPriceTooLow",
            "MaxSpotInstanceCountExceeded",
        ] {
            assert_eq!(
                launch_error(code, "none left"),
                LaunchError::Capacity {
                    code: code.into(),
                    message: "none left".into()
                },
                "{code}"
            );
        }
        for code in [
            "InstanceLimitExceeded",
            "VcpuLimitExceeded",
            "RequestLimitExceeded",
        ] {
            assert_eq!(
                launch_error(code, "too many"),
                LaunchError::Limit {
                    code: code.into(),
                    message: "too many".into()
                },
                "{code}"
            );
        }
        assert_eq!(
            launch_error(
                "InvalidAMIID.NotFound",
                "The image id '[ami-1]' does not exist"
            ),
            LaunchError::Other(
                "InvalidAMIID.NotFound: The image id '[ami-1]' does not exist".into()
            )
        );
        assert_eq!(
            launch_error("AuthFailure", "bad key").to_string(),
            "AuthFailure: bad key"
        );
    }

    fn request(nodes: &[(&str, &str)], features: &[&str]) -> LaunchRequest {
        LaunchRequest {
            client_token: "launch-1".into(),
            cluster: "c1".into(),
            pool: "burst".into(),
            instance_type: "g5.xlarge".into(),
            shape: InstanceShape {
                gpu_count: 1,
                gpu_model: "A10G".into(),
                gpu_memory_mib: 24 * 1024,
                cpus: 4,
                memory_mib: 16 * 1024,
            },
            zone: None,
            subnet: None,
            market: Market::OnDemand,
            image: Some("ami-1".into()),
            nodes: nodes
                .iter()
                .map(|(name, token)| NodeBoot {
                    name: name.to_string(),
                    bootstrap_token: token.to_string(),
                })
                .collect(),
            api_url: "https://api.example:8443".into(),
            features: features.iter().map(|f| f.to_string()).collect(),
            tags: [("team".to_string(), "ml".to_string())].into(),
        }
    }

    #[test]
    fn tags_name_the_launch_and_its_nodes() {
        let mut req = request(&[("burst-1", "t1"), ("burst-2", "t2")], &[]);
        req.tags.insert("berth:pool".into(), "spoofed".into());
        let tags: std::collections::BTreeMap<_, _> = launch_tags(&req).into_iter().collect();
        assert_eq!(tags["berth:cluster"], "c1");
        assert_eq!(
            tags["berth:pool"], "burst",
            "Berth's tags win over the pool's"
        );
        assert_eq!(tags["berth:launch"], "launch-1");
        assert_eq!(tags["berth:nodes"], "burst-1,burst-2");
        assert_eq!(tags["Name"], "burst");
        assert_eq!(tags["team"], "ml");
        let one = request(&[("burst-7", "t7")], &[]);
        let tags: std::collections::BTreeMap<_, _> = launch_tags(&one).into_iter().collect();
        assert_eq!(tags["Name"], "burst-7");
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(sh_quote("a'b"), r"'a'\''b'");
        assert_eq!(sh_quote(""), "''");
    }

    /// Runs the user-data under `sh` with a fake `curl` answering launch index `index`
    /// and a fake `berth` printing its arguments and its bootstrap token.
    fn run_user_data(req: &LaunchRequest, index: &str) -> std::process::Output {
        use std::os::unix::fs::PermissionsExt;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "berth-ec2-userdata-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        let write_exe = |path: std::path::PathBuf, body: String| {
            std::fs::write(&path, body).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        // The fake IMDS: a token for the PUT, the index for a GET that sends the token.
        write_exe(
            dir.join("bin/curl"),
            format!(
                "#!/bin/sh\ncase \"$*\" in\n\
                 *'-X PUT'*api/token*) printf imds-token ;;\n\
                 *'X-aws-ec2-metadata-token: imds-token'*ami-launch-index) printf '{index}' ;;\n\
                 *) exit 22 ;;\nesac\n"
            ),
        );
        let berth = dir.join("my berth's");
        write_exe(
            berth.clone(),
            "#!/bin/sh\nfor a in \"$@\"; do printf 'arg:%s\\n' \"$a\"; done\n\
             printf 'token:%s\\n' \"$BERTH_BOOTSTRAP_TOKEN\"\n"
                .to_string(),
        );
        // The state directory is the real one; a test run cannot create it, so the
        // script's `mkdir -p` is pointed at the temporary directory.
        let script = user_data(req, berth.to_str().unwrap()).replace(
            &format!("mkdir -p '{WORKER_STATE_DIR}'"),
            &format!("mkdir -p '{}/state'", dir.display()),
        );
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .env_clear()
            .env("PATH", format!("{}/bin:/usr/bin:/bin", dir.display()))
            .output()
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        out
    }

    #[test]
    fn user_data_starts_the_node_of_the_launch_index() {
        let req = request(
            &[("burst-1", "tok-one"), ("burst-2", "tok-two")],
            &["h100", "ib"],
        );
        let script = user_data(&req, "/usr/local/bin/berth");
        assert!(script.starts_with("#!/bin/sh\n"));
        let exec = script.lines().find(|l| l.starts_with("exec ")).unwrap();
        assert!(
            !exec.contains("tok-"),
            "no token on the command line: {exec}"
        );

        let out = run_user_data(&req, "1");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let args: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("arg:"))
            .collect();
        assert_eq!(
            args,
            [
                "worker",
                "--api",
                "https://api.example:8443",
                "--name",
                "burst-2",
                "--state-dir",
                WORKER_STATE_DIR,
                "--metadata-url",
                "http://169.254.169.254",
                "--feature",
                "h100,ib"
            ]
        );
        assert!(stdout.contains("token:tok-two\n"), "{stdout}");

        let out = run_user_data(&req, "0");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("arg:burst-1\n") && stdout.contains("token:tok-one\n"));
    }

    #[test]
    fn user_data_refuses_an_index_without_a_node() {
        let req = request(&[("burst-1", "tok-one")], &[]);
        let out = run_user_data(&req, "5");
        assert!(!out.status.success());
        assert!(out.stdout.is_empty(), "berth never ran");
        assert!(String::from_utf8_lossy(&out.stderr).contains("no node for launch index 5"));
    }

    #[test]
    fn user_data_quotes_hostile_values() {
        let req = request(&[("a'b; touch /tmp/x", "t'$(id)`id`")], &[]);
        let mut req = req;
        req.api_url = "https://x/'\"$HOME".into();
        let out = run_user_data(&req, "0");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert!(stdout.contains("arg:a'b; touch /tmp/x\n"), "{stdout}");
        assert!(stdout.contains("arg:https://x/'\"$HOME\n"), "{stdout}");
        assert!(stdout.contains("token:t'$(id)`id`\n"), "{stdout}");
        assert!(
            !stdout.contains("arg:--feature"),
            "no features, no --feature"
        );
    }
}
