//! Cloud providers for node pools, behind one trait ([`Provider`]), driven by the
//! scheduler leader's scaling reconciler (`berth_scheduler::cloud`).
//!
//! * `ec2`: Amazon EC2 on aws-sdk-ec2 (`RunInstances` with `MinCount = MaxCount`, so a
//!   gang is launched whole or not at all; `ClientToken` makes a retried launch
//!   idempotent).
//! * `local`: `berth worker` processes with simulated GPUs on this machine, with a boot
//!   delay, injectable capacity errors and spot interruption notices: an honest provider
//!   for `berth dev` and the tests.
//!
//! Every instance carries Berth's tags: `berth:cluster`, `berth:pool`, `berth:launch`
//! (the launch id, also the idempotency token) and `Name`. The reconciler finds its
//! instances by the first two ([`Provider::describe`]), and an instance's node by its
//! launch and its launch index ([`Instance::launch_index`]).

pub mod local;

pub use local::LocalProvider;

use berth_core::pool::{InstanceShape, Market};

/// Amazon EC2 (aws-sdk-ec2): [`ec2::Ec2Provider`].
pub mod ec2;
use futures_util::future::BoxFuture;
use std::collections::BTreeMap;

/// Tag: the Berth cluster an instance belongs to.
pub const TAG_CLUSTER: &str = "berth:cluster";
/// Tag: the pool.
pub const TAG_POOL: &str = "berth:pool";
/// Tag: the launch id (the idempotency token).
pub const TAG_LAUNCH: &str = "berth:launch";
/// Tag: the node names of the launch, comma-separated in launch-index order.
pub const TAG_NODES: &str = "berth:nodes";

/// One node of a launch: the name it joins as and its one-time bootstrap token.
#[derive(Clone, PartialEq, Eq)]
pub struct NodeBoot {
    /// The node name (`burst-3`).
    pub name: String,
    /// A one-time bootstrap token bound to `name`, expiring with the pool's
    /// `boot_timeout`. Never logged.
    pub bootstrap_token: String,
}

impl std::fmt::Debug for NodeBoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeBoot")
            .field("name", &self.name)
            .field("bootstrap_token", &"<redacted>")
            .finish()
    }
}

/// A launch: `nodes.len()` instances of one type in one place, all or none.
#[derive(Debug, Clone)]
pub struct LaunchRequest {
    /// The launch id: the provider's idempotency token (EC2 `ClientToken`). A request
    /// repeated with the same id launches nothing new and answers the first launch's
    /// instances.
    pub client_token: String,
    /// The Berth cluster (tag `berth:cluster`).
    pub cluster: String,
    /// The pool (tag `berth:pool`).
    pub pool: String,
    /// The instance type.
    pub instance_type: String,
    /// Its sizes (the local provider simulates them).
    pub shape: InstanceShape,
    /// The zone, or `None` for the provider's choice.
    pub zone: Option<String>,
    /// The subnet, or `None`.
    pub subnet: Option<String>,
    /// On-demand or spot.
    pub market: Market,
    /// The machine image (EC2 AMI).
    pub image: Option<String>,
    /// The nodes, in launch-index order: instance i boots as `nodes[i]`.
    pub nodes: Vec<NodeBoot>,
    /// The api URL the workers join.
    pub api_url: String,
    /// Features the nodes declare.
    pub features: Vec<String>,
    /// The pool's own tags (Berth's are added by the provider).
    pub tags: BTreeMap<String, String>,
}

/// An instance's lifecycle state, as EC2 names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstanceState {
    /// Booting.
    Pending,
    /// Running.
    Running,
    /// Being terminated.
    ShuttingDown,
    /// Gone.
    Terminated,
    /// Stopping or stopped (Berth never stops instances; treated as gone).
    Stopped,
}

impl InstanceState {
    /// Whether the instance is gone or going (its node cannot come back).
    pub fn is_gone(self) -> bool {
        matches!(
            self,
            InstanceState::ShuttingDown | InstanceState::Terminated | InstanceState::Stopped
        )
    }
}

/// An instance as the provider reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// The provider's id (`i-0abc…`, `local-…`).
    pub id: String,
    /// Its type.
    pub instance_type: String,
    /// Its zone.
    pub zone: Option<String>,
    /// Its state.
    pub state: InstanceState,
    /// Its index within its launch (EC2's `AmiLaunchIndex`): it boots as the launch's
    /// node of that index.
    pub launch_index: u32,
    /// Its `berth:launch` tag.
    pub launch_id: Option<String>,
    /// Its `berth:pool` tag.
    pub pool: Option<String>,
    /// When it was launched.
    pub launched_at: Option<chrono::DateTime<chrono::Utc>>,
    /// On-demand or spot.
    pub market: Market,
}

/// Why a launch failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum LaunchError {
    /// No capacity for this type in this place now (EC2
    /// `InsufficientInstanceCapacity`, `InsufficientCapacity`, spot `MaxSpotInstanceCountExceeded`,
    /// `SpotMaxPriceTooLow`, `Unsupported` in the zone): set the (type, zone) aside and try
    /// the next.
    #[error("{code}: {message}")]
    Capacity {
        /// The provider's error code.
        code: String,
        /// Its message.
        message: String,
    },
    /// The account's limit (EC2 `InstanceLimitExceeded`, `VcpuLimitExceeded`): no other
    /// type or zone helps soon; the pool backs off.
    #[error("{code}: {message}")]
    Limit {
        /// The provider's error code.
        code: String,
        /// Its message.
        message: String,
    },
    /// Anything else (credentials, a bad image, the endpoint unreachable).
    #[error("{0}")]
    Other(String),
}

/// A provider call that failed (describe, terminate).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ProviderError(pub String);

/// What a cloud must do for Berth's node pools.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// `ec2`, `local`.
    fn kind(&self) -> &'static str;

    /// Launches `req.nodes.len()` instances at once, all or none (EC2: `MinCount =
    /// MaxCount`). Idempotent in `req.client_token`. Returns the instances.
    fn launch<'a>(
        &'a self,
        req: &'a LaunchRequest,
    ) -> BoxFuture<'a, Result<Vec<Instance>, LaunchError>>;

    /// Terminates instances (ids already gone are not an error).
    fn terminate<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), ProviderError>>;

    /// Every instance tagged with `cluster` and `pool`, in any state but long
    /// terminated.
    fn describe<'a>(
        &'a self,
        cluster: &'a str,
        pool: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Instance>, ProviderError>>;
}
