//! `berth server`: the server roles' typed configuration (a TOML file with
//! `deny_unknown_fields`; `DATABASE_URL` and `BERTH_JWT_SECRET` from the environment win
//! over the file, and secrets are never flags) and the roles themselves: `api`,
//! `scheduler`, or `all` of them in one process.
//!
//! ```toml
//! database_url = "postgres://berth@db.example/berth"   # or DATABASE_URL
//! jwt_secret = "…"                                     # or BERTH_JWT_SECRET
//! listen = "0.0.0.0:8750"
//!
//! [api]
//! max_connections = 16
//! rate_limit_per_user = 100      # requests per second per user or node (0: none)
//! rate_limit_per_address = 200   # ... per client address, without credentials (0: none)
//! rate_limit_burst = 1000       # requests a user or node may send at once (token bucket)
//! rate_limit_burst_per_address = 200
//! output_cap_mib = 64            # job output kept per run and stream (0: no cap)
//! max_body_bytes = 8388608
//! max_header_bytes = 16384
//! request_timeout_seconds = 90
//! jwt_public_key = "/etc/berth/jwt.pub"   # EdDSA/RS256 tokens (BERTH_JWT_PRIVATE_KEY mints)
//! tls_cert = "/etc/berth/tls/api.crt"   # with tls_key: serve HTTPS (rustls)
//! tls_key = "/etc/berth/tls/api.key"
//!
//! [[api.oidc]]                   # external issuers, any number
//! issuer = "https://login.example.com/realms/ml"
//! jwks_uri = "https://login.example.com/realms/ml/protocol/openid-connect/certs"
//! audience = "berth"
//! username_claim = "preferred_username"   # default "sub"
//! role_claim = "berth_role"               # optional
//!
//! [metrics]                    # GET /metrics (Prometheus)
//! public = false                # true: no token needed (default: an admin's or operator's)
//! refresh_seconds = 5           # how often each api replica rebuilds its snapshot
//!
//! [database]                   # every role's sessions with PostgreSQL (0: no limit)
//! statement_timeout_seconds = 30
//! lock_timeout_seconds = 10
//! idle_in_transaction_timeout_seconds = 5
//! pooler = "none"              # "transaction": PgBouncer in transaction mode in front
//! direct_url = "postgres://berth@db-direct/berth"   # LISTEN, migrations; or DATABASE_DIRECT_URL
//!
//! [scheduler]
//! lease_ttl_seconds = 3
//! renew_interval_seconds = 1
//! cycle_interval_seconds = 2
//! cycle_min_interval_ms = 500   # the most a burst of NOTIFYs spaces cycles (idle: at once)
//! full_refresh_seconds = 60     # the leader re-reads everything at least this often
//! node_timeout_seconds = 30
//! return_to_service = 1
//! completing_timeout_seconds = 120
//! inactive_limit_seconds = 120  # salloc/srun allocations whose client went silent end (0: never)
//! max_array_size = 1001         # Slurm's MaxArraySize: array task indices below it
//! max_job_count = 100000        # Slurm's MaxJobCount: the most jobs in the live queue (0: none)
//! min_job_age_seconds = 300     # Slurm's MinJobAge: ended jobs leave squeue after this (0: never)
//! instance_id = "sched-a"      # default: <hostname>-<pid>
//! priority_type = "multifactor" # or "fifo" (submit order)
//! backfill = true
//! backfill_depth = 100
//! priority_max_age_seconds = 604800
//! fairshare_half_life_seconds = 604800
//! kill_invalid_depend = false  # true: cancel jobs whose dependency can never be met
//!
//! [scheduler.priority_weights]  # Slurm's PriorityWeight*
//! age = 1000
//! fairshare = 10000
//! job_size = 1000
//! partition = 1000
//! qos = 10000
//!
//! [scheduler.billing_weights]   # TRESBillingWeights, per CPU / GPU second
//! cpu = 1
//! gpu = 32
//!
//! [qos.high]                    # a QOS, as PUT /v1/qos/high takes it
//! priority = 100
//! preempt = ["normal"]
//! preempt_mode = "REQUEUE"
//! max_tres_per_user = { gpu = 16 }
//!
//! [partitions.debug]            # a partition, as PUT /v1/partitions/debug takes it
//! nodes = ["gpu01", "gpu02"]
//! max_time = 3600
//! allowed_qos = ["normal", "high"]
//!
//! [cloud]                       # the scheduler's cloud module (node pools)
//! cluster = "berth"             # the berth:cluster tag of this cluster's instances
//! api_url = "https://berth.example:8750"   # what instances join (default from listen)
//! local_state_dir = "/var/lib/berth/local-cloud"
//! orphan_grace_seconds = 120
//!
//! [accounting]                  # usage rollups (sreport) and retention
//! purge_jobs_after = "12months" # slurmdbd's PurgeJobAfter (N hours|days|months); default: never
//! rollup_interval_seconds = 15  # how fresh the current hour is in reports (1..=60)
//!
//! [nodes.gpu01]                 # slurm.conf's node line, as PATCH /v1/nodes/gpu01 takes it
//! features = ["h100", "ib"]
//! weight = 10
//! core_spec_count = 2           # CPUs kept for the system
//! mem_spec_limit_mib = 8192     # memory kept for the system, MiB
//!
//! [pools.burst]                 # a cloud node pool, as PUT /v1/pools/burst takes it:
//! provider = "ec2"              # "ec2" or "local"; nodes burst-1 … burst-4
//! image = "ami-0123456789abcdef0"
//! subnets = ["subnet-0a1b2c3d"]
//! min_nodes = 0
//! max_nodes = 4
//! market = "spot"               # or "on_demand" (the default)
//! idle_timeout = 600            # seconds idle before termination (SuspendTime)
//! boot_timeout = 600            # seconds to join before termination (ResumeTimeout)
//! partitions = ["debug"]        # its nodes join these partitions' node lists
//! features = ["h100", "cloud"]
//! tags = { team = "ml" }
//!
//! [[pools.burst.instance_types]] # in order of preference; nodes take the first's shape
//! name = "p5.48xlarge"
//! gpus = "8xH100"
//! gpu_memory = "80G"
//! cpus = 192
//! memory = "2048G"
//! price_per_hour = 98.32
//!
//! [pools.burst.ec2]
//! region = "us-east-1"
//! security_group_ids = ["sg-0123456789abcdef0"]
//! ```

use crate::shutdown::Shutdown;
use anyhow::{anyhow, bail, Context};
use berth_api::ApiConfig;
use berth_core::priority::{BillingWeights, PriorityWeights};
use berth_core::qos::QosSpec;
use berth_core::wire::PartitionSpec;
use berth_scheduler::planner::{PlannerConfig, QueueOrder};
use berth_scheduler::SchedulerConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default address the api listens on.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8750";

/// The server configuration file, as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfigFile {
    /// PostgreSQL URL; `DATABASE_URL` wins.
    pub database_url: Option<String>,
    /// The HS256 secret tokens are signed with; `BERTH_JWT_SECRET` wins. Keep it out of
    /// files that are checked in.
    pub jwt_secret: Option<String>,
    /// The api's listen address (`0.0.0.0:8750`); `--listen` wins.
    pub listen: Option<String>,
    /// The cluster's name (Slurm's `ClusterName`): what `GET /v1/cluster`, slurmrestd's
    /// answers and the Slurm commands' `-M/--clusters` know it by; 1 to 40 lower-case
    /// letters, digits, `-` and `_` (default `berth`).
    pub cluster_name: Option<String>,
    /// Every role's database sessions.
    #[serde(default)]
    pub database: DatabaseSection,
    /// The api role's settings.
    #[serde(default)]
    pub api: ApiSection,
    /// The scheduler role's settings.
    #[serde(default)]
    pub scheduler: SchedulerSection,
    /// QOS defined here (`[qos.NAME]`, the body of `PUT /v1/qos/{name}`), applied by the
    /// api at start-up.
    #[serde(default)]
    pub qos: BTreeMap<String, QosSpec>,
    /// Partitions defined here (`[partitions.NAME]`, the body of `PUT
    /// /v1/partitions/{name}`), applied by the api at start-up.
    #[serde(default)]
    pub partitions: BTreeMap<String, PartitionSpec>,
    /// Node settings (`[nodes.NAME]`, the body of `PATCH /v1/nodes/{name}`: slurm.conf's
    /// node line), applied by the api at start-up.
    #[serde(default)]
    pub nodes: BTreeMap<String, berth_core::wire::NodeUpdate>,
    /// Cloud node pools (`[pools.NAME]`, the body of `PUT /v1/pools/{name}`), declared
    /// by the api at start-up; a bad one stops it, naming `pools.NAME.field`.
    #[serde(default)]
    pub pools: BTreeMap<String, berth_core::pool::PoolSpec>,
    /// The scheduler's cloud module (`[cloud]`): how node pools' instances reach the api.
    #[serde(default)]
    pub cloud: CloudSection,
    /// Usage rollups and retention (`[accounting]`).
    #[serde(default)]
    pub accounting: AccountingSection,
    /// Webhook delivery (`[webhooks]`).
    #[serde(default)]
    pub webhooks: WebhooksSection,
    /// `GET /metrics` (`[metrics]`).
    #[serde(default)]
    pub metrics: MetricsSection,
}

/// `[accounting]`: the scheduler leader's accounting reconciler (hourly usage rollups
/// for sreport, retention of ended jobs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountingSection {
    /// Ended jobs older than this are deleted once their usage is rolled up (slurmdbd's
    /// `PurgeJobAfter`: `12months`, `365days`, `720hours`); absent: never.
    pub purge_jobs_after: Option<String>,
    /// Seconds between the reconciler's passes, 1 to 60 (default 15).
    pub rollup_interval_seconds: Option<u64>,
}

impl AccountingSection {
    /// The accounting settings.
    ///
    /// # Errors
    /// A retention period that is not `N hours|days|months`, or an interval outside
    /// 1..=60; the message names the key and `from`.
    pub fn settings(
        &self,
        from: &str,
    ) -> anyhow::Result<berth_scheduler::rollup::AccountingSettings> {
        let mut s = berth_scheduler::rollup::AccountingSettings::default();
        if let Some(v) = &self.purge_jobs_after {
            let secs = berth_core::usage_report::parse_purge_after(v)
                .map_err(|e| anyhow!("accounting.purge_jobs_after: {e} {from}"))?;
            s.purge_jobs_after = Some(Duration::from_secs(secs));
        }
        if let Some(v) = self.rollup_interval_seconds {
            if !(1..=60).contains(&v) {
                bail!("accounting.rollup_interval_seconds must be 1 to 60 {from}");
            }
            s.rollup_interval = Duration::from_secs(v);
        }
        Ok(s)
    }
}

/// `[webhooks]`: how the api delivers webhooks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhooksSection {
    /// Deliver users' webhooks to loopback, private and link-local addresses too
    /// (default false; `berth dev` sets it). Admins' webhooks may always.
    pub allow_private_networks: Option<bool>,
    /// The first retry's delay, seconds (default 5); each later one doubles it.
    pub retry_base_seconds: Option<u64>,
    /// The longest delay between two attempts, seconds (default 7200).
    pub retry_max_seconds: Option<u64>,
    /// How long a delivery is retried, hours (default 26).
    pub retry_for_hours: Option<u64>,
    /// How long one attempt may take, seconds (default 10).
    pub timeout_seconds: Option<u64>,
    /// Disable a webhook after this many failed attempts in a row (default 0: never for a
    /// count alone; a short outage during a burst fails many attempts).
    pub disable_after_failures: Option<u32>,
    /// Disable a webhook failing continuously (no success in between) for this long,
    /// hours (default 72).
    pub disable_after_hours: Option<u64>,
}

impl WebhooksSection {
    /// The api's webhook settings.
    ///
    /// # Errors
    /// A zero delay, duration or timeout.
    pub fn settings(&self, from: &str) -> anyhow::Result<berth_api::webhooks::WebhookSettings> {
        let mut s = berth_api::webhooks::WebhookSettings::default();
        for (key, value) in [
            ("webhooks.retry_base_seconds", self.retry_base_seconds),
            ("webhooks.retry_max_seconds", self.retry_max_seconds),
            ("webhooks.retry_for_hours", self.retry_for_hours),
            ("webhooks.timeout_seconds", self.timeout_seconds),
            ("webhooks.disable_after_hours", self.disable_after_hours),
        ] {
            if value == Some(0) {
                bail!("{key} must be at least 1 {from}");
            }
        }
        if let Some(v) = self.allow_private_networks {
            s.allow_private_networks = v;
        }
        if let Some(v) = self.retry_base_seconds {
            s.retry_base = Duration::from_secs(v);
        }
        if let Some(v) = self.retry_max_seconds {
            s.retry_max = Duration::from_secs(v);
        }
        if let Some(v) = self.retry_for_hours {
            s.retry_for = Duration::from_secs(v.saturating_mul(3600));
        }
        if let Some(v) = self.timeout_seconds {
            s.timeout = Duration::from_secs(v);
        }
        if let Some(v) = self.disable_after_failures {
            s.disable_after_failures = v;
        }
        if let Some(v) = self.disable_after_hours {
            s.disable_after = Duration::from_secs(v.saturating_mul(3600));
        }
        Ok(s)
    }
}

/// `[metrics]`: the api's Prometheus endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    /// Anyone may scrape `/metrics` without a token (default false: it needs a token of an
    /// admin or operator, such as an operator's API token kept for the scraper).
    pub public: Option<bool>,
    /// How often each api replica rebuilds the snapshot a scrape encodes, seconds
    /// (default 5).
    pub refresh_seconds: Option<u64>,
}

impl MetricsSection {
    /// The api's metrics settings.
    ///
    /// # Errors
    /// A zero `refresh_seconds`.
    pub fn settings(&self, from: &str) -> anyhow::Result<berth_api::metrics::MetricsConfig> {
        let d = berth_api::metrics::MetricsConfig::default();
        let refresh = match self.refresh_seconds {
            Some(0) => bail!("metrics.refresh_seconds must be at least 1 {from}"),
            Some(s) => Duration::from_secs(s),
            None => d.refresh,
        };
        Ok(berth_api::metrics::MetricsConfig {
            public: self.public.unwrap_or(d.public),
            refresh,
        })
    }
}

/// `[cloud]`: the scheduler leader's cloud module, for node pools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloudSection {
    /// The `berth:cluster` tag put on this cluster's instances (default `berth`); give
    /// each cluster sharing a cloud account its own.
    pub cluster: Option<String>,
    /// The api URL instances' workers join (default: `http(s)://<listen>`, with
    /// `127.0.0.1` for an unspecified address).
    pub api_url: Option<String>,
    /// Where the local provider keeps its instances (default
    /// `/var/lib/berth/local-cloud`).
    pub local_state_dir: Option<PathBuf>,
    /// How old an instance tagged with the cluster that no node knows must be before it
    /// is terminated, seconds (default 120).
    pub orphan_grace_seconds: Option<u64>,
    /// How often instances are compared with the provider's, seconds (default 10).
    pub describe_interval_seconds: Option<u64>,
    /// Extra arguments for the local provider's `berth worker` processes
    /// (`["--run-as", "worker"]`).
    pub local_worker_args: Option<Vec<String>>,
}

impl CloudSection {
    /// The cloud settings, with `listen` (and whether the api serves HTTPS) for the
    /// default api URL.
    ///
    /// # Errors
    /// A zero interval, or a cluster tag that is not letters, digits or `_.-`.
    pub fn settings(
        &self,
        listen: &str,
        https: bool,
        from: &str,
    ) -> anyhow::Result<berth_scheduler::cloud::CloudSettings> {
        let mut s = berth_scheduler::cloud::CloudSettings::default();
        if let Some(c) = &self.cluster {
            if c.is_empty()
                || c.len() > 64
                || !c
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            {
                bail!("cloud.cluster must be 1 to 64 letters, digits or `_.-` {from}");
            }
            s.cluster = c.clone();
        }
        s.api_url = match &self.api_url {
            Some(u) => u.trim_end_matches('/').to_string(),
            None => {
                let host = listen
                    .replace("0.0.0.0:", "127.0.0.1:")
                    .replace("[::]:", "127.0.0.1:");
                format!("{}://{host}", if https { "https" } else { "http" })
            }
        };
        if let Some(d) = &self.local_state_dir {
            s.local_state_dir = d.clone();
        }
        if let Some(a) = &self.local_worker_args {
            s.local_worker_args = a.clone();
        }
        if let Some(g) = self.orphan_grace_seconds {
            s.orphan_grace = Duration::from_secs(g);
        }
        if let Some(d) = self.describe_interval_seconds {
            if d == 0 {
                bail!("cloud.describe_interval_seconds must be at least 1 {from}");
            }
            s.describe_interval = Duration::from_secs(d);
        }
        Ok(s)
    }
}

/// `[api]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiSection {
    /// The most PostgreSQL connections the api holds (default 16).
    pub max_connections: Option<u32>,
    /// Requests per second per principal, for authenticated requests: a user (whichever
    /// token they use) or a node (default 100; 0: no limit). `rate_limit_per_token` is
    /// the older name.
    #[serde(alias = "rate_limit_per_token")]
    pub rate_limit_per_user: Option<u32>,
    /// Requests per second per client address, for requests without valid credentials
    /// (default 200; 0: no limit).
    pub rate_limit_per_address: Option<u32>,
    /// Requests a user or node may send at once beyond its rate: its token bucket's size
    /// (default 1,000: a CI pipeline's burst of submissions).
    pub rate_limit_burst: Option<u32>,
    /// The same for a client address without valid credentials (default 200).
    pub rate_limit_burst_per_address: Option<u32>,
    /// The largest request body, bytes (default 8 MiB).
    pub max_body_bytes: Option<usize>,
    /// The most bytes of request headers (default 16 KiB).
    pub max_header_bytes: Option<usize>,
    /// Seconds a request may take to be answered (default 90; above the worker's 60 s
    /// long poll).
    pub request_timeout_seconds: Option<u64>,
    /// The most job output the database keeps per run and stream, MiB (default 64; 0:
    /// no cap). Past it the output is dropped and marked truncated; the files on the
    /// node are whole.
    pub output_cap_mib: Option<u64>,
    /// The most open event streams (`GET /v1/events`, Server-Sent Events) one user holds
    /// on this api process (default 16; 0: no limit).
    pub max_event_streams_per_user: Option<usize>,
    /// The most open event streams this api process holds (default 4096; 0: no limit).
    pub max_event_streams: Option<usize>,
    /// An Ed25519 or RSA public key (PEM) verifying Berth's EdDSA/RS256 tokens (their
    /// private half signs them: `BERTH_JWT_PRIVATE_KEY` for `berth token mint`). With a
    /// `jwt_secret` too, HS256 tokens stay accepted.
    pub jwt_public_key: Option<PathBuf>,
    /// The TLS certificate chain (PEM); with `tls_key`, the api serves HTTPS.
    pub tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM).
    pub tls_key: Option<PathBuf>,
    /// External OpenID Connect issuers whose tokens are accepted (`[[api.oidc]]`).
    #[serde(default)]
    pub oidc: Vec<berth_api::oidc::OidcIssuer>,
}

/// `[database]`: the timeouts of every role's sessions with PostgreSQL, seconds (0: no
/// limit), and how they reach it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseSection {
    /// The longest one statement may run (`statement_timeout`; default 30).
    pub statement_timeout_seconds: u64,
    /// The longest one statement may wait for a lock (`lock_timeout`; default 10).
    pub lock_timeout_seconds: u64,
    /// How long a session may sit idle inside a transaction before PostgreSQL ends it
    /// (`idle_in_transaction_session_timeout`; default 5).
    pub idle_in_transaction_timeout_seconds: u64,
    /// What stands between the roles and PostgreSQL: `"none"` (default; PostgreSQL, or a
    /// proxy that keeps a client on one session) or `"transaction"` (a pooler in
    /// transaction mode, PgBouncer's `pool_mode = transaction`).
    pub pooler: String,
    /// The URL of sessions of their own (`LISTEN`, migrations), past the pooler;
    /// `DATABASE_DIRECT_URL` wins. Required with `pooler = "transaction"`; default the
    /// database URL.
    pub direct_url: Option<String>,
}

impl Default for DatabaseSection {
    fn default() -> Self {
        let d = berth_db::Timeouts::default();
        DatabaseSection {
            statement_timeout_seconds: d.statement.as_secs(),
            lock_timeout_seconds: d.lock.as_secs(),
            idle_in_transaction_timeout_seconds: d.idle_in_transaction.as_secs(),
            pooler: "none".to_string(),
            direct_url: None,
        }
    }
}

impl DatabaseSection {
    /// The timeouts these settings describe.
    pub fn timeouts(&self) -> berth_db::Timeouts {
        berth_db::Timeouts {
            statement: Duration::from_secs(self.statement_timeout_seconds),
            lock: Duration::from_secs(self.lock_timeout_seconds),
            idle_in_transaction: Duration::from_secs(self.idle_in_transaction_timeout_seconds),
        }
    }

    /// How the roles reach PostgreSQL; `direct_url` is `DATABASE_DIRECT_URL` or the
    /// file's.
    ///
    /// # Errors
    /// An unknown `pooler` (naming the values), or `pooler = "transaction"` without a
    /// direct URL; `from` names the file.
    pub fn pooling(
        &self,
        direct_url: Option<String>,
        from: &str,
    ) -> anyhow::Result<berth_db::Pooling> {
        let pooler = berth_db::Pooler::parse(&self.pooler).ok_or_else(|| {
            anyhow!(
                "database.pooler must be one of {} (not {:?}) {from}",
                berth_db::Pooler::VALUES
                    .map(|v| format!("{v:?}"))
                    .join(", "),
                self.pooler
            )
        })?;
        let direct_url = direct_url.or_else(|| self.direct_url.clone());
        if pooler == berth_db::Pooler::Transaction && direct_url.is_none() {
            bail!("database.pooler = \"transaction\" needs database.direct_url (or DATABASE_DIRECT_URL): LISTEN and migrations need a session of their own {from}");
        }
        Ok(berth_db::Pooling { pooler, direct_url })
    }
}

/// `[scheduler]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerSection {
    /// How long the leader lease lasts without renewal, seconds (default 3).
    pub lease_ttl_seconds: u64,
    /// How often the leader renews and a standby tries to take over, seconds (default 1).
    pub renew_interval_seconds: u64,
    /// The scheduling cycle's timer, seconds (default 2; cycles also run on NOTIFY).
    pub cycle_interval_seconds: u64,
    /// The least time between two cycles woken by NOTIFY, milliseconds (default 500): a
    /// burst of submissions or cancellations costs one cycle per this much time, not one
    /// per notification.
    pub cycle_min_interval_ms: u64,
    /// The leader reads everything again at least this often, seconds (default 60), as
    /// well as whenever the database server changed (a failover).
    pub full_refresh_seconds: u64,
    /// Silence after which a node is DOWN, seconds (Slurm's `SlurmdTimeout`; default 30).
    pub node_timeout_seconds: u64,
    /// Slurm's `ReturnToService`: 0 never, 1 a node DOWN for not responding (default), 2
    /// any DOWN node, once it syncs again.
    pub return_to_service: u8,
    /// How long an ended job's allocation may stay live before the node is drained and
    /// the allocation released, seconds (default 120).
    pub completing_timeout_seconds: u64,
    /// Slurm's `InactiveLimit`, seconds (default 120; 0: none): a job made by salloc, or
    /// by srun outside an allocation, ends when its client has sent no keep-alive for
    /// this long (SIGKILLed, its machine lost). The api, which records the keep-alives,
    /// reads it from here; sbatch's jobs are never affected.
    pub inactive_limit_seconds: u64,
    /// Slurm's `MaxArraySize` (default 1001): an array's task indices must be below it.
    /// Checked by the api at submission.
    pub max_array_size: u32,
    /// Slurm's `MaxJobCount` (default 100,000; 0: none): the most jobs the live queue
    /// holds (a pending array counts as one until its tasks start); the api refuses
    /// submissions beyond it (503, retried by sbatch).
    pub max_job_count: u64,
    /// Slurm's `MinJobAge`, seconds (default 300; 0: ended jobs stay): how long an ended
    /// job stays in the live queue (`squeue -t all`, `GET /v1/queue`); accounting keeps
    /// it for ever.
    pub min_job_age_seconds: u64,
    /// This scheduler's identity in the lease (default `<hostname>-<pid>`).
    pub instance_id: Option<String>,
    /// `PriorityType`: `multifactor` (default) or `fifo` (submit order).
    pub priority_type: PriorityType,
    /// Backfill with reservations (default true); false is strict FIFO-blocking.
    pub backfill: bool,
    /// How many blocked jobs get a reservation (default 100).
    pub backfill_depth: usize,
    /// `PriorityMaxAge`, seconds (default 7 days): the age factor is 1 from this age on.
    pub priority_max_age_seconds: i64,
    /// `PriorityDecayHalfLife`, seconds (default 7 days; 0 = no decay).
    pub fairshare_half_life_seconds: i64,
    /// Slurm's `kill_invalid_depend`: cancel pending jobs whose dependency can never be
    /// satisfied (default false: they stay pending with reason `DependencyNeverSatisfied`).
    pub kill_invalid_depend: bool,
    /// `PriorityWeight*`.
    pub priority_weights: PriorityWeights,
    /// `TRESBillingWeights`.
    pub billing_weights: BillingWeights,
}

/// How the queue is ordered (Slurm's `PriorityType`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PriorityType {
    /// Multifactor priority.
    #[default]
    Multifactor,
    /// Submit order.
    Fifo,
}

impl Default for SchedulerSection {
    fn default() -> Self {
        let planner = PlannerConfig::default();
        SchedulerSection {
            lease_ttl_seconds: 3,
            renew_interval_seconds: 1,
            cycle_interval_seconds: 2,
            cycle_min_interval_ms: 500,
            full_refresh_seconds: 60,
            node_timeout_seconds: 30,
            return_to_service: 1,
            completing_timeout_seconds: 120,
            inactive_limit_seconds: 120,
            max_array_size: berth_api::limits::DEFAULT_MAX_ARRAY_SIZE,
            max_job_count: berth_api::limits::DEFAULT_MAX_JOB_COUNT,
            min_job_age_seconds: berth_api::limits::DEFAULT_MIN_JOB_AGE.as_secs(),
            instance_id: None,
            priority_type: PriorityType::Multifactor,
            backfill: planner.backfill,
            backfill_depth: planner.backfill_depth,
            priority_max_age_seconds: planner.max_age,
            fairshare_half_life_seconds: planner.half_life,
            kill_invalid_depend: planner.kill_invalid_depend,
            priority_weights: planner.weights,
            billing_weights: planner.billing,
        }
    }
}

/// The scheduler's planner for the api's will-run tests (`sbatch --test-only`), with the
/// settings the scheduler plans with.
pub fn will_run_planner(planner: PlannerConfig) -> berth_api::WillRunPlanner {
    berth_api::WillRunPlanner(std::sync::Arc::new(move |pool, job| {
        let planner = planner.clone();
        Box::pin(async move {
            berth_scheduler::will_run::will_run(&pool, &planner, job, chrono::Utc::now()).await
        })
    }))
}

impl SchedulerSection {
    /// The planner configuration these settings describe.
    pub fn planner(&self) -> PlannerConfig {
        PlannerConfig {
            weights: self.priority_weights,
            max_age: self.priority_max_age_seconds,
            order: match self.priority_type {
                PriorityType::Multifactor => QueueOrder::Multifactor,
                PriorityType::Fifo => QueueOrder::Submit,
            },
            backfill: self.backfill,
            backfill_depth: self.backfill_depth,
            half_life: self.fairshare_half_life_seconds,
            billing: self.billing_weights,
            kill_invalid_depend: self.kill_invalid_depend,
            fit: Default::default(),
        }
    }
}

/// The resolved server configuration.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// PostgreSQL URL.
    pub database_url: String,
    /// The token secret; needed by the api role and `berth token mint`.
    pub jwt_secret: Option<String>,
    /// The api's listen address.
    pub listen: String,
    /// The cluster's name (`cluster_name`).
    pub cluster_name: String,
    /// The api's connection pool size.
    pub max_connections: u32,
    /// Every role's database session timeouts.
    pub db_timeouts: berth_db::Timeouts,
    /// How every role reaches PostgreSQL (`[database] pooler`, `direct_url`).
    pub db_pooling: berth_db::Pooling,
    /// The api's rate, size and time limits.
    pub limits: berth_api::limits::Limits,
    /// External OpenID Connect issuers.
    pub oidc: Vec<berth_api::oidc::OidcIssuer>,
    /// The api's TLS certificate and key, when it serves HTTPS.
    pub tls: Option<berth_api::tls::TlsFiles>,
    /// The public key verifying Berth's asymmetric tokens.
    pub jwt_public_key: Option<PathBuf>,
    /// The scheduler role's settings.
    pub scheduler: SchedulerConfig,
    /// QOS and partitions to apply when the api starts.
    pub definitions: berth_api::definitions::Definitions,
    /// The api's webhook settings.
    pub webhooks: berth_api::webhooks::WebhookSettings,
    /// `GET /metrics`' settings.
    pub metrics: berth_api::metrics::MetricsConfig,
}

/// Parses a server configuration file's text; errors name `path` and the key.
pub fn parse_server_config(text: &str, path: &Path) -> anyhow::Result<ServerConfigFile> {
    toml::from_str(text).map_err(|e| anyhow!("{}: {}", path.display(), e.to_string().trim_end()))
}

/// Reads and parses a server configuration file.
pub fn read_server_config(path: &Path) -> anyhow::Result<ServerConfigFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_server_config(&text, path)
}

/// This host's name, for default identities (`/proc/sys/kernel/hostname`, else
/// `$HOSTNAME`, else `localhost`).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .or_else(|| {
            std::env::var("HOSTNAME")
                .ok()
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_string())
}

impl ServerConfig {
    /// Resolves a file's settings with the environment (`env` looks a variable up:
    /// `DATABASE_URL`, `BERTH_JWT_SECRET`) and the `--listen` flag.
    ///
    /// # Errors
    /// When no database URL is set anywhere, or an interval is zero.
    pub fn resolve(
        file: ServerConfigFile,
        source: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
        listen: Option<&str>,
    ) -> anyhow::Result<ServerConfig> {
        let env = |k: &str| env(k).filter(|v| !v.is_empty());
        let from = match source {
            Some(p) => format!("in {}", p.display()),
            None => "in a configuration file (--config)".to_string(),
        };
        let database_url = env("DATABASE_URL").or(file.database_url).ok_or_else(|| {
            anyhow!("database_url is not set: set DATABASE_URL or database_url {from}")
        })?;
        let jwt_secret = env("BERTH_JWT_SECRET").or(file.jwt_secret);
        let cluster_name = file
            .cluster_name
            .unwrap_or_else(|| berth_core::cluster::DEFAULT_CLUSTER_NAME.to_string());
        berth_core::cluster::validate_cluster_name(&cluster_name)
            .map_err(|why| anyhow!("cluster_name {cluster_name:?} {from}: {why}"))?;
        let s = file.scheduler;
        for (key, value) in [
            ("scheduler.lease_ttl_seconds", s.lease_ttl_seconds),
            ("scheduler.renew_interval_seconds", s.renew_interval_seconds),
            ("scheduler.cycle_interval_seconds", s.cycle_interval_seconds),
            ("scheduler.node_timeout_seconds", s.node_timeout_seconds),
            ("scheduler.full_refresh_seconds", s.full_refresh_seconds),
            (
                "scheduler.completing_timeout_seconds",
                s.completing_timeout_seconds,
            ),
        ] {
            if value == 0 {
                bail!("{key} must be at least 1 {from}");
            }
        }
        for (key, value) in [
            (
                "scheduler.priority_max_age_seconds",
                s.priority_max_age_seconds,
            ),
            (
                "scheduler.fairshare_half_life_seconds",
                s.fairshare_half_life_seconds,
            ),
        ] {
            if value < 0 {
                bail!("{key} must not be negative {from}");
            }
        }
        let w = &s.priority_weights;
        let b = &s.billing_weights;
        for (key, value) in [
            ("scheduler.priority_weights.age", w.age),
            ("scheduler.priority_weights.fairshare", w.fairshare),
            ("scheduler.priority_weights.job_size", w.job_size),
            ("scheduler.priority_weights.partition", w.partition),
            ("scheduler.priority_weights.qos", w.qos),
            ("scheduler.billing_weights.cpu", b.cpu),
            ("scheduler.billing_weights.gpu", b.gpu),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                bail!("{key} must be a number ≥ 0 {from}");
            }
        }
        if s.renew_interval_seconds >= s.lease_ttl_seconds {
            bail!("scheduler.renew_interval_seconds must be less than scheduler.lease_ttl_seconds {from}");
        }
        let planner = s.planner();
        let db_timeouts = file.database.timeouts();
        let db_pooling = file.database.pooling(env("DATABASE_DIRECT_URL"), &from)?;
        let return_to_service =
            berth_scheduler::reconcile::ReturnToService::from_slurm(s.return_to_service)
                .ok_or_else(|| anyhow!("scheduler.return_to_service must be 0, 1 or 2 {from}"))?;
        let listen = listen
            .map(str::to_string)
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.to_string());
        let cloud = file
            .cloud
            .settings(&listen, file.api.tls_cert.is_some(), &from)?;
        let accounting = file.accounting.settings(&from)?;
        let webhooks = file.webhooks.settings(&from)?;
        let metrics = file.metrics.settings(&from)?;
        Ok(ServerConfig {
            database_url: database_url.clone(),
            jwt_secret,
            listen,
            cluster_name,
            max_connections: file.api.max_connections.unwrap_or(16).max(1),
            db_timeouts,
            db_pooling: db_pooling.clone(),
            limits: berth_api::limits::Limits {
                inactive_limit: Duration::from_secs(s.inactive_limit_seconds),
                max_array_size: s.max_array_size,
                max_job_count: s.max_job_count,
                min_job_age: Duration::from_secs(s.min_job_age_seconds),
                ..api_limits(&file.api, &from)?
            },
            oidc: file.api.oidc.clone(),
            jwt_public_key: file.api.jwt_public_key.clone(),
            tls: match (&file.api.tls_cert, &file.api.tls_key) {
                (Some(cert), Some(key)) => Some(berth_api::tls::TlsFiles {
                    cert: cert.clone(),
                    key: key.clone(),
                }),
                (None, None) => None,
                _ => bail!("api.tls_cert and api.tls_key go together {from}"),
            },
            scheduler: SchedulerConfig {
                database_url,
                instance_id: s
                    .instance_id
                    .unwrap_or_else(|| format!("{}-{}", host_name(), std::process::id())),
                lease_ttl: Duration::from_secs(s.lease_ttl_seconds),
                renew_interval: Duration::from_secs(s.renew_interval_seconds),
                cycle_interval: Duration::from_secs(s.cycle_interval_seconds),
                cycle_min_interval: Duration::from_millis(s.cycle_min_interval_ms),
                full_refresh_interval: Duration::from_secs(s.full_refresh_seconds),
                db_timeouts,
                db_pooling,
                planner,
                node_timeout: Duration::from_secs(s.node_timeout_seconds),
                return_to_service,
                completing_timeout: Duration::from_secs(s.completing_timeout_seconds),
                cloud,
                accounting,
            },
            definitions: berth_api::definitions::Definitions {
                qos: file.qos,
                partitions: file.partitions,
                nodes: file.nodes,
                pools: file.pools,
            },
            webhooks,
            metrics,
        })
    }

    /// The token secret, or an error saying where to set it.
    pub fn require_jwt_secret(&self) -> anyhow::Result<&str> {
        match self.jwt_secret.as_deref() {
            Some(s) => Ok(s),
            None => bail!("jwt_secret is not set: set BERTH_JWT_SECRET or jwt_secret in the configuration file"),
        }
    }
}

/// The api's limits from `[api]`, defaults where a key is absent.
fn api_limits(api: &ApiSection, from: &str) -> anyhow::Result<berth_api::limits::Limits> {
    let d = berth_api::limits::Limits::default();
    let timeout = api
        .request_timeout_seconds
        .unwrap_or(d.request_timeout.as_secs());
    if timeout == 0 {
        bail!("api.request_timeout_seconds must be at least 1 {from}");
    }
    Ok(berth_api::limits::Limits {
        per_principal_per_second: api
            .rate_limit_per_user
            .unwrap_or(d.per_principal_per_second),
        per_address_per_second: api
            .rate_limit_per_address
            .unwrap_or(d.per_address_per_second),
        burst: api.rate_limit_burst.unwrap_or(d.burst).max(1),
        address_burst: api
            .rate_limit_burst_per_address
            .unwrap_or(d.address_burst)
            .max(1),
        max_body_bytes: api.max_body_bytes.unwrap_or(d.max_body_bytes),
        max_header_bytes: api.max_header_bytes.unwrap_or(d.max_header_bytes),
        request_timeout: Duration::from_secs(timeout),
        max_event_streams_per_principal: api
            .max_event_streams_per_user
            .unwrap_or(d.max_event_streams_per_principal),
        max_event_streams: api.max_event_streams.unwrap_or(d.max_event_streams),
        // `[scheduler] inactive_limit_seconds` and the queue's limits, set by the caller.
        inactive_limit: d.inactive_limit,
        max_array_size: d.max_array_size,
        max_job_count: d.max_job_count,
        min_job_age: d.min_job_age,
        output_cap_bytes: match api.output_cap_mib {
            None => d.output_cap_bytes,
            Some(0) => None,
            Some(mib) => Some(
                mib.checked_mul(1024 * 1024)
                    .ok_or_else(|| anyhow::anyhow!("api.output_cap_mib is too large {from}"))?,
            ),
        },
    })
}

/// Loads the configuration: the file when given (else settings from the environment
/// alone), then the environment overrides.
pub fn load_server_config(
    path: Option<&PathBuf>,
    listen: Option<&str>,
) -> anyhow::Result<ServerConfig> {
    let file = match path {
        Some(p) => read_server_config(p)?,
        None => ServerConfigFile::default(),
    };
    ServerConfig::resolve(
        file,
        path.map(|p| p.as_path()),
        |k| std::env::var(k).ok(),
        listen,
    )
}

/// Which parts of the server run in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The REST api.
    Api,
    /// The scheduler.
    Scheduler,
    /// Both.
    All,
}

/// Runs the server `role` until `shutdown` fires. With `All`, a part that fails stops the
/// other.
pub async fn run_server(
    config: ServerConfig,
    role: Role,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let api = if matches!(role, Role::Api | Role::All) {
        let public_key = match &config.jwt_public_key {
            Some(path) => {
                Some(std::fs::read(path).with_context(|| format!("reading {}", path.display()))?)
            }
            None => None,
        };
        let secret = match (&config.jwt_secret, &public_key) {
            (Some(secret), _) => Some(secret.clone()),
            (None, Some(_)) => None,
            (None, None) => {
                config.require_jwt_secret()?;
                None
            }
        };
        let listener = tokio::net::TcpListener::bind(&config.listen)
            .await
            .with_context(|| format!("listening on {}", config.listen))?;
        let api_config = ApiConfig {
            database_url: config.database_url.clone(),
            jwt_secret: secret,
            jwt_public_key_pem: public_key,
            cluster_name: config.cluster_name.clone(),
            max_connections: config.max_connections,
            db_timeouts: config.db_timeouts,
            db_pooling: config.db_pooling.clone(),
            limits: config.limits.clone(),
            oidc: config.oidc.clone(),
            tls: config.tls.clone(),
            definitions: config.definitions.clone(),
            node_timeout: config.scheduler.node_timeout,
            webhooks: config.webhooks.clone(),
            metrics: config.metrics.clone(),
            will_run: Some(will_run_planner(config.scheduler.planner.clone())),
        };
        let stop = shutdown.clone();
        Some(tokio::spawn(async move {
            let result = berth_api::serve(api_config, listener, stop.wait())
                .await
                .context("api");
            stop.trigger();
            result
        }))
    } else {
        None
    };
    let scheduler = if matches!(role, Role::Scheduler | Role::All) {
        tracing::info!(instance = %config.scheduler.instance_id, "scheduler starting");
        let stop = shutdown.clone();
        let scheduler_config = config.scheduler.clone();
        Some(tokio::spawn(async move {
            let result = berth_scheduler::run(scheduler_config, stop.wait())
                .await
                .context("scheduler");
            stop.trigger();
            result
        }))
    } else {
        None
    };
    let mut result = Ok(());
    for task in [api, scheduler].into_iter().flatten() {
        let outcome = task.await.map_err(anyhow::Error::from).and_then(|r| r);
        if let Err(e) = outcome {
            if result.is_ok() {
                result = Err(e);
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn database_timeouts_and_scheduler_wakeups_resolve() {
        let text = r#"
database_url = "postgres://berth@db/berth"
[database]
statement_timeout_seconds = 0
lock_timeout_seconds = 3
[scheduler]
cycle_min_interval_ms = 250
full_refresh_seconds = 120
"#;
        let file = parse_server_config(text, Path::new("b.toml")).unwrap();
        let c = ServerConfig::resolve(file, Some(Path::new("b.toml")), no_env, None).unwrap();
        let expected = berth_db::Timeouts {
            statement: Duration::ZERO,
            lock: Duration::from_secs(3),
            idle_in_transaction: Duration::from_secs(5),
        };
        assert_eq!(
            (c.db_timeouts, c.scheduler.db_timeouts),
            (expected, expected)
        );
        assert_eq!(c.scheduler.cycle_min_interval, Duration::from_millis(250));
        assert_eq!(c.scheduler.full_refresh_interval, Duration::from_secs(120));
        let defaults = ServerConfig::resolve(
            parse_server_config("", Path::new("b.toml")).unwrap(),
            None,
            |_| Some("postgres://x/y".into()),
            None,
        )
        .unwrap();
        assert_eq!(defaults.db_timeouts, berth_db::Timeouts::default());
        assert_eq!(
            defaults.scheduler.cycle_min_interval,
            Duration::from_millis(500)
        );
        let zero = parse_server_config(
            "[scheduler]\nfull_refresh_seconds = 0\n",
            Path::new("b.toml"),
        )
        .unwrap();
        let err = ServerConfig::resolve(
            zero,
            Some(Path::new("b.toml")),
            |_| Some("postgres://x/y".into()),
            None,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("scheduler.full_refresh_seconds"),
            "{err}"
        );
        assert!(
            parse_server_config("[database]\nstatement_timeout = 1\n", Path::new("b.toml"))
                .unwrap_err()
                .to_string()
                .contains("statement_timeout")
        );
    }

    #[test]
    fn the_pooler_resolves_and_bad_values_are_refused() {
        let resolve = |text: &str, direct: Option<&str>| {
            let file = parse_server_config(text, Path::new("b.toml")).unwrap();
            let direct = direct.map(str::to_string);
            ServerConfig::resolve(
                file,
                Some(Path::new("b.toml")),
                move |k| match k {
                    "DATABASE_URL" => Some("postgres://x/y".into()),
                    "DATABASE_DIRECT_URL" => direct.clone(),
                    _ => None,
                },
                None,
            )
        };
        let c = resolve("", None).unwrap();
        assert_eq!(c.db_pooling, berth_db::Pooling::default());
        let c = resolve(
            "[database]\npooler = \"transaction\"\ndirect_url = \"postgres://d/y\"\n",
            None,
        )
        .unwrap();
        assert_eq!(c.db_pooling.pooler, berth_db::Pooler::Transaction);
        assert_eq!(c.db_pooling.direct_url.as_deref(), Some("postgres://d/y"));
        assert_eq!(c.scheduler.db_pooling, c.db_pooling);
        // The environment wins.
        let c = resolve(
            "[database]\npooler = \"transaction\"\ndirect_url = \"postgres://d/y\"\n",
            Some("postgres://e/y"),
        )
        .unwrap();
        assert_eq!(c.db_pooling.direct_url.as_deref(), Some("postgres://e/y"));
        let err = resolve("[database]\npooler = \"transaction\"\n", None).unwrap_err();
        assert!(err.to_string().contains("database.direct_url"), "{err}");
        let err = resolve("[database]\npooler = \"session\"\n", None).unwrap_err();
        assert!(
            err.to_string()
                .contains("database.pooler must be one of \"none\", \"transaction\" (not \"session\") in b.toml"),
            "{err}"
        );
    }

    #[test]
    fn accounting_retention_resolves_and_bad_values_name_the_key() {
        let env = |_: &str| Some("postgres://x/y".to_string());
        let file = parse_server_config(
            "[accounting]\npurge_jobs_after = \"12months\"\nrollup_interval_seconds = 5\n",
            Path::new("b.toml"),
        )
        .unwrap();
        let c = ServerConfig::resolve(file, None, env, None).unwrap();
        assert_eq!(
            c.scheduler.accounting.purge_jobs_after,
            Some(Duration::from_secs(12 * 30 * 86_400))
        );
        assert_eq!(
            c.scheduler.accounting.rollup_interval,
            Duration::from_secs(5)
        );
        let defaults = ServerConfig::resolve(
            parse_server_config("", Path::new("b.toml")).unwrap(),
            None,
            env,
            None,
        )
        .unwrap();
        assert_eq!(defaults.scheduler.accounting.purge_jobs_after, None);
        for (text, key) in [
            (
                "purge_jobs_after = \"12weeks\"",
                "accounting.purge_jobs_after",
            ),
            (
                "rollup_interval_seconds = 0",
                "accounting.rollup_interval_seconds",
            ),
        ] {
            let file = parse_server_config(&format!("[accounting]\n{text}\n"), Path::new("b.toml"))
                .unwrap();
            let err = ServerConfig::resolve(file, Some(Path::new("b.toml")), env, None)
                .unwrap_err()
                .to_string();
            assert!(err.contains(key) && err.contains("b.toml"), "{err}");
        }
    }

    #[test]
    fn full_file_parses_and_resolves() {
        let text = r#"
database_url = "postgres://berth@db/berth"
jwt_secret = "s"
listen = "0.0.0.0:9000"
[api]
max_connections = 4
[scheduler]
lease_ttl_seconds = 20
renew_interval_seconds = 5
cycle_interval_seconds = 1
node_timeout_seconds = 45
return_to_service = 2
completing_timeout_seconds = 90
inactive_limit_seconds = 300
instance_id = "sched-a"
"#;
        let file = parse_server_config(text, Path::new("b.toml")).unwrap();
        let c = ServerConfig::resolve(file, Some(Path::new("b.toml")), no_env, None).unwrap();
        assert_eq!(c.database_url, "postgres://berth@db/berth");
        assert_eq!(c.scheduler.database_url, "postgres://berth@db/berth");
        assert_eq!(c.jwt_secret.as_deref(), Some("s"));
        assert_eq!(c.listen, "0.0.0.0:9000");
        assert_eq!(c.max_connections, 4);
        assert_eq!(c.scheduler.instance_id, "sched-a");
        assert_eq!(c.scheduler.lease_ttl, Duration::from_secs(20));
        assert_eq!(c.scheduler.renew_interval, Duration::from_secs(5));
        assert_eq!(c.scheduler.cycle_interval, Duration::from_secs(1));
        assert_eq!(c.scheduler.node_timeout, Duration::from_secs(45));
        assert_eq!(
            c.scheduler.return_to_service,
            berth_scheduler::reconcile::ReturnToService::Any
        );
        assert_eq!(c.scheduler.completing_timeout, Duration::from_secs(90));
        assert_eq!(c.limits.inactive_limit, Duration::from_secs(300));
        let bad = parse_server_config("[scheduler]\nreturn_to_service = 3\n", Path::new("b.toml"))
            .unwrap();
        let err = ServerConfig::resolve(
            bad,
            Some(Path::new("b.toml")),
            |_| Some("postgres://x/y".into()),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("return_to_service") && err.contains("b.toml"),
            "{err}"
        );
    }

    #[test]
    fn qos_and_partition_tables_parse_as_the_rest_bodies() {
        let text = r#"
database_url = "postgres://db"
[qos.high]
priority = 100
preempt = ["normal"]
preempt_mode = "REQUEUE"
max_tres_per_user = { gpu = 16 }
[partitions.debug]
nodes = ["gpu01"]
max_time = 3600
"#;
        let file = parse_server_config(text, Path::new("b.toml")).unwrap();
        let c = ServerConfig::resolve(file, None, no_env, None).unwrap();
        let high = &c.definitions.qos["high"];
        assert_eq!(high.priority, 100);
        assert_eq!(high.preempt_mode, berth_core::qos::PreemptMode::Requeue);
        assert_eq!(high.max_tres_per_user.gpu, Some(16));
        assert_eq!(high.usage_factor, 1.0, "absent fields take their defaults");
        let debug = &c.definitions.partitions["debug"];
        assert_eq!(debug.max_time, Some(3600));
        assert_eq!(debug.priority_tier, 1);
        let err = parse_server_config(
            "[qos.high]
prio = 1
",
            Path::new("b.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("b.toml") && err.contains("prio"), "{err}");
    }

    #[test]
    fn pool_tables_parse_as_the_rest_body() {
        let text = r#"
database_url = "postgres://db"
[pools.burst]
provider = "local"
max_nodes = 4
idle_timeout = 20
[[pools.burst.instance_types]]
name = "sim-8xh100"
gpus = "8xH100"
cpus = 32
memory = "256G"
"#;
        let file = parse_server_config(text, Path::new("p.toml")).unwrap();
        let c = ServerConfig::resolve(file, None, no_env, None).unwrap();
        let burst = &c.definitions.pools["burst"];
        assert_eq!(burst.max_nodes, 4);
        assert_eq!(burst.idle_timeout, 20);
        assert_eq!(burst.boot_timeout, 600, "absent fields take their defaults");
        assert_eq!(burst.instance_types[0].shape().unwrap().gpu_count, 8);
        let err = parse_server_config(
            "[pools.burst]\nprovider = \"local\"\nmax_nodes = 1\ninstance_types = []\nmax_node = 2\n",
            Path::new("p.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("p.toml") && err.contains("max_node"), "{err}");
    }

    #[test]
    fn api_protection_oidc_and_tls_keys_resolve() {
        let text = r#"
database_url = "postgres://db"
[api]
rate_limit_per_token = 7
rate_limit_per_address = 0
rate_limit_burst = 9
output_cap_mib = 2
max_body_bytes = 1024
max_header_bytes = 2048
request_timeout_seconds = 30
jwt_public_key = "/etc/berth/jwt.pub"
tls_cert = "/etc/berth/api.crt"
tls_key = "/etc/berth/api.key"
[[api.oidc]]
issuer = "https://idp"
jwks_uri = "https://idp/keys"
audience = "berth"
role_claim = "berth_role"
"#;
        let file = parse_server_config(text, Path::new("a.toml")).unwrap();
        let c = ServerConfig::resolve(file, None, no_env, None).unwrap();
        assert_eq!(c.limits.per_principal_per_second, 7);
        assert_eq!(c.limits.output_cap_bytes, Some(2 * 1024 * 1024));
        assert_eq!(c.limits.per_address_per_second, 0);
        assert_eq!(c.limits.burst, 9);
        assert_eq!(c.limits.max_body_bytes, 1024);
        assert_eq!(c.limits.max_header_bytes, 2048);
        assert_eq!(c.limits.request_timeout, Duration::from_secs(30));
        assert_eq!(c.oidc[0].username_claim, "sub");
        assert_eq!(c.oidc[0].role_claim.as_deref(), Some("berth_role"));
        assert_eq!(
            c.tls.as_ref().map(|t| t.key.clone()),
            Some(PathBuf::from("/etc/berth/api.key"))
        );
        assert_eq!(c.jwt_public_key, Some(PathBuf::from("/etc/berth/jwt.pub")));
        let half = parse_server_config(
            "database_url = \"postgres://db\"\n[api]\ntls_cert = \"c\"\n",
            Path::new("h.toml"),
        )
        .unwrap();
        let err = ServerConfig::resolve(half, Some(Path::new("h.toml")), no_env, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("tls_key") && err.contains("h.toml"), "{err}");
    }

    #[test]
    fn metrics_section_resolves() {
        let text =
            "database_url = \"postgres://db\"\n[metrics]\npublic = true\nrefresh_seconds = 2\n";
        let file = parse_server_config(text, Path::new("m.toml")).unwrap();
        let c = ServerConfig::resolve(file, None, no_env, None).unwrap();
        assert!(c.metrics.public);
        assert_eq!(c.metrics.refresh, Duration::from_secs(2));
        let defaults = ServerConfig::resolve(
            parse_server_config("database_url = \"postgres://db\"\n", Path::new("m.toml")).unwrap(),
            None,
            no_env,
            None,
        )
        .unwrap();
        assert!(
            !defaults.metrics.public,
            "a scrape needs a token by default"
        );
        assert_eq!(defaults.metrics.refresh, Duration::from_secs(5));
        let zero = parse_server_config(
            "database_url = \"postgres://db\"\n[metrics]\nrefresh_seconds = 0\n",
            Path::new("m.toml"),
        )
        .unwrap();
        let err = ServerConfig::resolve(zero, Some(Path::new("m.toml")), no_env, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("metrics.refresh_seconds") && err.contains("m.toml"),
            "{err}"
        );
        let err = parse_server_config("[metrics]\npublik = true\n", Path::new("m.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("publik"), "{err}");
    }

    #[test]
    fn defaults_and_environment_overrides() {
        let file =
            parse_server_config("database_url = \"postgres://file\"\n", Path::new("x")).unwrap();
        let env = |k: &str| match k {
            "DATABASE_URL" => Some("postgres://env".to_string()),
            "BERTH_JWT_SECRET" => Some("envsecret".to_string()),
            _ => None,
        };
        let c = ServerConfig::resolve(file, None, env, Some("127.0.0.1:1")).unwrap();
        assert_eq!(c.database_url, "postgres://env");
        assert_eq!(c.jwt_secret.as_deref(), Some("envsecret"));
        assert_eq!(c.listen, "127.0.0.1:1");
        assert_eq!(c.scheduler.lease_ttl, Duration::from_secs(3));
        assert_eq!(c.scheduler.renew_interval, Duration::from_secs(1));
        assert_eq!(c.scheduler.node_timeout, Duration::from_secs(30));
        assert_eq!(c.scheduler.cycle_interval, Duration::from_secs(2));
        assert_eq!(c.limits.inactive_limit, Duration::from_secs(120));
        assert!(c
            .scheduler
            .instance_id
            .ends_with(&format!("-{}", std::process::id())));
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let err = parse_server_config("[scheduler]\nlease_ttl = 3\n", Path::new("/etc/berth.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/etc/berth.toml") && err.contains("lease_ttl"),
            "{err}"
        );
        let err = parse_server_config("listen = 3\n", Path::new("b.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("b.toml") && err.contains("listen"), "{err}");
        let missing = ServerConfig::resolve(
            ServerConfigFile::default(),
            Some(Path::new("b.toml")),
            no_env,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            missing.contains("database_url") && missing.contains("b.toml"),
            "{missing}"
        );
        assert!(
            ServerConfig::resolve(ServerConfigFile::default(), None, no_env, None)
                .unwrap_err()
                .to_string()
                .contains("DATABASE_URL")
        );
    }

    fn toml_files(dir: &Path, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                toml_files(&path, found);
            } else if path.extension().is_some_and(|e| e == "toml") {
                found.push(path);
            }
        }
    }

    #[test]
    fn every_shipped_config_file_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        toml_files(&root.join("deploy"), &mut files);
        toml_files(&root.join("examples"), &mut files);
        assert!(
            files.iter().any(|f| f.ends_with("deploy/berth.toml")),
            "deploy/berth.toml is missing: {files:?}"
        );
        for path in files {
            let file = read_server_config(&path).unwrap();
            ServerConfig::resolve(
                file,
                Some(&path),
                |k| match k {
                    "DATABASE_URL" => Some("postgres://x".to_string()),
                    _ => None,
                },
                None,
            )
            .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
        }
    }

    #[test]
    fn scheduling_policy_settings_reach_the_planner() {
        let text = "database_url = \"postgres://x/y\"\n[scheduler]\nbackfill_depth = 7\nfairshare_half_life_seconds = 86400\npriority_type = \"fifo\"\n[scheduler.priority_weights]\nfairshare = 5\n[scheduler.billing_weights]\ngpu = 64\n";
        let file = parse_server_config(text, Path::new("b.toml")).unwrap();
        let config =
            ServerConfig::resolve(file, Some(Path::new("b.toml")), |_| None, None).unwrap();
        let p = &config.scheduler.planner;
        assert_eq!(p.backfill_depth, 7);
        assert_eq!(p.half_life, 86400);
        assert_eq!(p.order, QueueOrder::Submit);
        assert_eq!(p.weights.fairshare, 5.0);
        assert_eq!(p.weights.age, 1000.0);
        assert_eq!(p.billing.gpu, 64.0);
        assert_eq!(p.billing.cpu, 1.0);

        let bad = "database_url = \"postgres://x/y\"\n[scheduler.billing_weights]\ngpu = -1\n";
        let file = parse_server_config(bad, Path::new("b.toml")).unwrap();
        let err = ServerConfig::resolve(file, Some(Path::new("b.toml")), |_| None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("scheduler.billing_weights.gpu"), "{err}");
    }
}
