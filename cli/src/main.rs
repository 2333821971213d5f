//! `berth`: the server roles (`berth server`), the node agent (`berth worker`), the
//! one-process development cluster (`berth dev`) and the client commands (`submit`,
//! `queue`, `nodes`, `show`, `logs`, `cancel`, `token`, `srun`, `scontrol`). Called as
//! `sbatch`, `squeue`, `scancel`, `sinfo`, `srun` or `scontrol` (a link with that name),
//! it runs the matching command.

use anyhow::Context;
use berth::admin;
use berth::client::Client;
use berth::commands::{self, QueueOptions};
use berth::config::resolve_target;
use berth::dev::{default_data_dir, DevOptions};
use berth::server::{load_server_config, run_server, Role};
use berth::shutdown::Shutdown;
use berth::submit::split_submit_args;
use berth_core::pool::PowerAction;
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// squeue's `-l` format.
const LONG_FORMAT: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";

/// Berth: a REST-first, Slurm-compatible GPU cluster orchestrator.
#[derive(Debug, Parser)]
#[command(name = "berth", version, about)]
struct Cli {
    /// The api's URL (else BERTH_URL, else the client configuration file).
    #[arg(long, global = true, env = "BERTH_URL", hide_env_values = true)]
    url: Option<String>,
    /// The bearer token (else BERTH_TOKEN, else the client configuration file).
    #[arg(long, global = true, env = "BERTH_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A PEM file of CA certificates to trust for the api's TLS certificate (else
    /// BERTH_CA_FILE); the system's roots are trusted too.
    #[arg(long, global = true, env = "BERTH_CA_FILE")]
    ca_file: Option<PathBuf>,
    /// How log lines are written to standard error: `text` (colours only on a terminal)
    /// or `json` (one JSON object a line, for journald and Kubernetes).
    #[arg(long, global = true, env = "BERTH_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, hide = true)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// The form of log lines (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines; ANSI colours only when standard error is a terminal (and
    /// `NO_COLOR` is not set).
    Text,
    /// One JSON object a line (timestamp, level, target, fields, spans).
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Submit a batch script, like sbatch: `berth submit [sbatch options…] [SCRIPT] [--wait]`.
    #[command(disable_help_flag = true)]
    Submit {
        /// sbatch options, then the script path (standard input when absent and no
        /// --wrap), then the script's arguments. -W/--wait: wait for the job to end and exit
        /// with its exit code (as `berth submit`, also stream its output; as `sbatch`,
        /// print nothing more, as Slurm does). --test-only: print when the job would
        /// start and submit nothing. Berth's own: --url, --token; --parsable prints the
        /// job id alone.
        #[arg(
            num_args = 0..,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "SBATCH_OPTIONS_AND_SCRIPT"
        )]
        args: Vec<String>,
    },
    /// List jobs, like squeue (pending and running ones unless --all, -t all or -j).
    #[command(disable_help_flag = true)]
    Queue {
        /// Only this user's jobs.
        #[arg(short = 'u', long)]
        user: Option<String>,
        /// Only your own jobs (the token's user).
        #[arg(long)]
        me: bool,
        /// Only these jobs: `5` (a job, or every task of array 5), `5_3` (one array
        /// task), comma-separated; every state unless -t.
        #[arg(short = 'j', long = "jobs")]
        jobs: Option<String>,
        /// Only these states (comma-separated: PENDING,RUNNING or PD,R …; `all`).
        #[arg(short = 't', long, visible_alias = "states")]
        state: Option<String>,
        /// Only this partition.
        #[arg(short = 'p', long)]
        partition: Option<String>,
        /// Only these accounts (comma-separated).
        #[arg(short = 'A', long)]
        account: Option<String>,
        /// Only these QOS (comma-separated).
        #[arg(short = 'q', long)]
        qos: Option<String>,
        /// Only jobs with this name.
        #[arg(short = 'n', long)]
        name: Option<String>,
        /// Jobs in every state.
        #[arg(short = 'a', long)]
        all: bool,
        /// Leave out the header line.
        #[arg(short = 'h', long)]
        noheader: bool,
        /// An array's pending tasks one line each (`5_4`, `5_5` …) instead of `5_[4-9]`.
        #[arg(short = 'r', long = "array")]
        array: bool,
        /// squeue's long format (`%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R`).
        #[arg(short = 'l', long)]
        long: bool,
        /// squeue's output format: `%i` job id (`5_3` for array tasks), `%A` raw id, `%F`
        /// array id, `%K` task, `%j` name, `%u` user, `%a` account, `%P` partition, `%q`
        /// QOS, `%T`/`%t` state, `%M` time used, `%l` limit, `%L` left, `%D` nodes, `%C`
        /// CPUs, `%b` GPUs per node, `%N` nodes, `%R` nodes or (reason), `%r` reason, `%S`
        /// start, `%V` submit, `%e` end, `%Q` priority, `%y` nice, `%Z` work dir; `%.18i`
        /// right-aligns in 18 columns.
        #[arg(short = 'o', long)]
        format: Option<String>,
        /// Pending jobs with their expected start times (squeue --start).
        #[arg(long)]
        start: bool,
        /// Only jobs placed on any of these nodes (a host list: `node-[1-4]`).
        #[arg(short = 'w', long = "nodelist")]
        nodelist: Option<String>,
        /// squeue's field names, comma-separated, each `name[:[.][size][suffix]]` (20
        /// columns, left-aligned, unless a size and `.` for right alignment say
        /// otherwise): JobID, JobArrayID, ArrayJobID, ArrayTaskID, Name, UserName,
        /// Account, Partition, QOS, State, StateCompact, TimeUsed, TimeLimit, TimeLeft,
        /// NumNodes, NumCPUs, NumTasks, NodeList, ReasonList, Reason, StartTime,
        /// SubmitTime, EndTime, Priority, PriorityLong, Nice, WorkDir, tres-per-node,
        /// exit_code, RestartCnt.
        #[arg(short = 'O', long = "Format", value_name = "FIELDS")]
        long_format: Option<String>,
        /// Sort by these `-o` letters, comma-separated, `-` for descending (`-t,u`);
        /// squeue's `P,t,-p` by default (`S` with --start).
        #[arg(
            short = 'S',
            long = "sort",
            value_name = "SORT",
            allow_hyphen_values = true
        )]
        sort: Option<String>,
        /// The running jobs' steps (`STEPID NAME PARTITION USER TIME NODELIST`), or only
        /// those listed (`5.0,6`).
        #[arg(
            short = 's',
            long = "steps",
            num_args = 0..=1,
            value_name = "STEPS"
        )]
        steps: Option<Option<String>>,
        /// Print again every SECONDS seconds (after a date line) until interrupted.
        #[arg(short = 'i', long = "iterate", value_name = "SECONDS")]
        iterate: Option<String>,
        /// Adds the date line before the table, as squeue -v does.
        #[arg(short = 'v', long)]
        verbose: bool,
        /// Accepted: sizes are printed as they are; no hidden partitions; one cluster.
        #[arg(long)]
        noconvert: bool,
        /// Accepted (Berth hides no partition).
        #[arg(long)]
        hide: bool,
        /// Accepted (one api serves one cluster).
        #[arg(long)]
        local: bool,
        #[command(flatten)]
        refused: SqueueRefused,
        /// Print help.
        #[arg(long, action = clap::ArgAction::Help)]
        help: Option<bool>,
    },
    /// Show partitions and nodes, like sinfo (`-s`, `-R`, `-l`, `-N`, `-o`, `-O`, `-p`,
    /// `-n`, `-t`, `-h` …; `--gpus`: Berth's node table with GPUs).
    #[command(disable_help_flag = true)]
    Nodes(berth::sinfo::SinfoArgs),
    /// One node, and what operators do to nodes: `berth node drain NAME --reason R`,
    /// `berth node resume NAME` (scontrol update NodeName=… State=DRAIN|RESUME).
    Node {
        #[command(subcommand)]
        what: NodeCommand,
    },
    /// Cloud node pools: nodes per state, launches in flight, hourly spend, last error;
    /// with a NAME, its nodes (instance, type, market, age) and latest events.
    Pools {
        /// One pool.
        name: Option<String>,
        /// Print the api's JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// The cluster's events (CloudEvents): `berth events [--follow] [--type berth.job.*]`.
    Events(berth::events::EventsArgs),
    /// Webhooks: `berth webhook add URL --event berth.job.ended`, `list`, `show`,
    /// `enable`, `disable`, `delete`, `test`, `deliveries`, `redeliver`.
    Webhook {
        #[command(subcommand)]
        what: berth::events::WebhookCommand,
    },
    /// Slurm's strigger: `--set --node=NAME --down --program=https://…` (triggers are
    /// delivered as webhooks), `--get`, `--clear --id=N`.
    Strigger(berth::events::StriggerArgs),
    /// Declare or delete a cloud node pool (admins): `berth pool set NAME --file
    /// pool.toml`, `berth pool delete NAME`.
    Pool {
        #[command(subcommand)]
        what: PoolCommand,
    },
    /// Partitions: `berth partition list|show|delete`, `berth partition set NAME
    /// Nodes=node-[1-4] MaxTime=1-0 Default=YES …` (slurm.conf's names; admins and operators).
    Partition {
        #[command(subcommand)]
        what: PartitionCommand,
    },
    /// Advance reservations: `berth reservation list|show|delete`, `berth reservation
    /// create ReservationName=maint StartTime=now Duration=10 Nodes=node-1 Users=root
    /// Flags=MAINT` (scontrol's keys; admins and operators create, update and delete).
    Reservation {
        #[command(subcommand)]
        what: ReservationCommand,
    },
    /// Show an object in detail, like scontrol show.
    Show {
        #[command(subcommand)]
        what: ShowCommand,
    },
    /// Print a job's output.
    Logs {
        /// Keep printing new output until the job ends.
        #[arg(short = 'f', long)]
        follow: bool,
        /// Standard error (when the job writes it to its own file).
        #[arg(long)]
        stderr: bool,
        /// The job id.
        id: i64,
    },
    /// Cancel jobs, like scancel: by id (`12`, `12_3`, `12_[1-3]`) and/or filters (`-u`,
    /// `-t`, `-n`, `-p`, `-A`, `-q`, `-w`, `--me`), `-i` to confirm each; or signal them
    /// (`-s USR1`, with `-b` or `-f`).
    Cancel(berth::scancel::ScancelArgs),
    /// Hold pending jobs (scontrol hold): they stay pending until released.
    Hold {
        /// Job ids (an array's id holds every pending task).
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Release held jobs (scontrol release).
    Release {
        /// Job ids.
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Move pending jobs to the top of your queue (scontrol top): ahead of your other
    /// pending jobs in the same partition, account and QOS, by nice values, without
    /// gaining on other users.
    Top {
        /// Job ids, in the order wanted (the first ends up first).
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Fairshare of the associations, like sshare (`-a`, `-u`, `-A`, `-U`, `-l`, `-n`,
    /// `-p`, `-P`, `-o`; `--json`).
    Share(berth::sshare::SshareArgs),
    /// Priority factors of pending jobs, like sprio (`-j`, `-u`, `-p`, `-l`, `-n`, `-o`,
    /// `-h`; `--json`).
    #[command(disable_help_flag = true)]
    Priority(berth::sprio::SprioArgs),
    /// QOS: `berth qos list`, `berth qos set NAME Priority=10 MaxTRESPerUser=gres/gpu=8` (admin).
    Qos {
        #[command(subcommand)]
        what: QosCommand,
    },
    /// Change a pending job, or the time limit of a running one (scontrol update):
    /// `berth update job ID nice=10 timelimit=30`.
    Update {
        #[command(subcommand)]
        what: UpdateCommand,
    },
    /// Show this machine's GPUs as a worker sees them: inventory, MIG modes, samples.
    Gpus {
        /// Simulated GPUs instead of NVML (`8xH100`, `2xA100:mig=3g.40gb*2`,
        /// `8xH100:shards=2`; as `berth worker --simulate-gpus`).
        #[arg(long)]
        simulate_gpus: Option<String>,
        /// Fail when NVML does not load (instead of simulating).
        #[arg(long)]
        require_nvml: bool,
        /// Seconds of samples.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Seconds between samples.
        #[arg(long, default_value_t = 1)]
        interval: u64,
    },
    /// Show a job's GPU usage, like sstat (`berth stat ID`, `sstat -j ID -o …`).
    Stat(berth::stat::SstatArgs),
    /// Job accounting, like sacct: one line per job run (and its steps).
    Acct(berth::acct::AcctArgs),
    /// Run a job step inside an allocation, like srun.
    Srun(Box<berth::srun::SrunArgs>),
    /// Get an allocation and run a command (default: your shell) on this machine while it
    /// lasts, like salloc; `srun` in it runs steps on the allocation's nodes.
    Salloc(Box<berth::salloc::SallocArgs>),
    /// Print a running job step's output, like sattach: `berth sattach 5.0`.
    Sattach(berth::salloc::SattachArgs),
    /// Copy a file to every node of the job's allocation, like sbcast: `berth sbcast
    /// model.bin /tmp/model.bin` inside a job.
    Sbcast(berth::sbcast::SbcastArgs),
    /// Replay a workload trace through the planner (discrete-event simulation).
    Sim(berth::sim::SimArgs),
    /// Slurm's scontrol subset: show hostnames|hostname, show job|node|partition|reservation
    /// (`--json`/`--yaml`: slurmrestd's documents), requeue, update JobId=.
    #[command(disable_help_flag = true)]
    Scontrol {
        /// The scontrol command and its arguments.
        #[arg(num_args = 0.., trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Usage reports, like sreport: `cluster Utilization`, `cluster
    /// AccountUtilizationByUser`, `user TopUsage`, with `start=`/`end=`, `-T`, `-t`, `-P`,
    /// `-n`, `--json`.
    #[command(disable_help_flag = true)]
    Report {
        /// The report and its options.
        #[arg(num_args = 0.., trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run a batch shell or step task and record how it ends (used by the worker; like
    /// slurmstepd). Everything of the job is in the spec file the worker wrote.
    #[command(hide = true)]
    Shepherd {
        /// The spec file (JSON, root's, mode 0600) in the run's directory.
        #[arg(long)]
        spec: PathBuf,
        /// Become the job (its user, umask, directory, output files) and execute its
        /// program (what the shepherd runs).
        #[arg(long)]
        exec: bool,
    },
    /// Run the node agent (like slurmd) until SIGTERM/SIGINT. Its node token comes from
    /// --token (BERTH_TOKEN), else the credential it keeps in its state directory after
    /// joining with --bootstrap-token.
    Worker {
        /// The api's URL.
        #[arg(long, env = "BERTH_API")]
        api: String,
        /// The node name (default: this host's name).
        #[arg(long)]
        name: Option<String>,
        /// Simulate GPUs instead of using NVML: `N[xMODEL][:mig=PROFILE*K|:shards=S][/D]`.
        /// `8`, `8xH100`, `4xA100`; `2xA100:mig=3g.40gb*2` splits each GPU into 2 MIG
        /// instances (4 devices); `8xH100:shards=2` offers each GPU as 2 shards
        /// (`--gres=shard:N`); `/D`, last, puts the GPUs in D topology domains
        /// (`8xH100/2`: GPUs 0-3 and 4-7; `8xH100:shards=2/2`).
        #[arg(long)]
        simulate_gpus: Option<String>,
        /// Offer each whole GPU (NVML or simulated) as this many shards, Slurm's `shard`
        /// GRES (gres.conf `Name=shard`): jobs ask `--gres=shard:N` and share the GPU.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=128))]
        gpu_shards: Option<u32>,
        /// Declare this many CPUs instead of the machine's (a simulated node); CPU id i
        /// of a job runs on real CPU i mod the real count.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65536))]
        simulate_cpus: Option<u32>,
        /// Declare this much memory instead of the machine's: MiB, or with a K/M/G/T
        /// suffix (`32G`, `1T`).
        #[arg(long, value_parser = memory_size)]
        simulate_memory: Option<u64>,
        /// The node's features for `--constraint` (comma-separated: `h100,ib`); an
        /// operator's `berth node set NAME Features=…` wins.
        #[arg(long, value_delimiter = ',')]
        feature: Vec<String>,
        /// The node's Weight (lower is placed first; default 1); an operator's setting
        /// wins.
        #[arg(long)]
        weight: Option<u32>,
        /// Where job scripts and scratch directories live.
        #[arg(long, default_value = "/var/lib/berth/worker")]
        state_dir: PathBuf,
        /// Seconds between SIGTERM and SIGKILL when a job is stopped.
        #[arg(long, default_value_t = 30)]
        kill_wait: u64,
        /// Join with this bootstrap token (`berth token bootstrap`) instead of a node
        /// token; the node credential it yields is kept in the state directory.
        #[arg(long, env = "BERTH_BOOTSTRAP_TOKEN", hide_env_values = true)]
        bootstrap_token: Option<String>,
        /// The longest the api may hold a sync when nothing changes, seconds (1-60); keep
        /// it well under the scheduler's node timeout.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=60))]
        poll_wait: u32,
        /// Where jobs' checkpoint directories live (BERTH_CHECKPOINT_DIR is
        /// <root>/<job id>, kept across requeues; default <state dir>/checkpoints). Use
        /// storage every node shares.
        #[arg(long, env = "BERTH_CHECKPOINT_ROOT")]
        checkpoint_root: Option<PathBuf>,
        /// Seconds a GPU held by a running job may stay at 0% utilisation before the
        /// node is drained as stuck.
        #[arg(long, default_value_t = 600)]
        gpu_stuck_seconds: u64,
        /// Whose account jobs run under: `auto` (the submitting user's when the worker
        /// runs as root, else the worker's), `submitter` or `worker`.
        #[arg(long, value_enum, default_value_t = RunAsArg::Auto)]
        run_as: RunAsArg,
        /// Run jobs of a submitting user who is root on this node as root (otherwise such
        /// jobs fail to launch).
        #[arg(long)]
        allow_root_jobs: bool,
        /// Do not limit jobs' memory and CPUs with cgroups.
        #[arg(long)]
        no_cgroups: bool,
        /// Watch this instance metadata service for spot interruption notices (EC2:
        /// `http://169.254.169.254`); on a notice the node drains and its jobs are
        /// requeued. Default: not watched.
        #[arg(long, env = "BERTH_METADATA_URL")]
        metadata_url: Option<String>,
        /// Milliseconds between polls of the instance metadata (100 to 600000).
        #[arg(long, default_value_t = 5000, hide = true,
              value_parser = clap::value_parser!(u64).range(100..=600_000))]
        metadata_poll_ms: u64,
    },
    /// The local cloud provider's instance metadata service (started by the provider).
    #[command(hide = true)]
    CloudMetadata {
        /// The provider's state directory.
        #[arg(long)]
        state_dir: PathBuf,
        /// Where to listen.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
    },
    /// Run server roles: the api, the scheduler, or both.
    Server {
        /// Which role(s) to run.
        #[arg(long, value_enum, default_value_t = RoleArg::All)]
        role: RoleArg,
        /// The api's listen address (overrides the file's `listen`; default 127.0.0.1:8750).
        #[arg(long)]
        listen: Option<String>,
        /// The configuration file (TOML; see deploy/berth.toml).
        #[arg(long, env = "BERTH_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Tokens: mint JWTs with the server's secret, or create, list and revoke API tokens.
    Token {
        #[command(subcommand)]
        what: TokenCommand,
    },
    /// Users and their roles and accounts (admins and operators).
    User {
        #[command(subcommand)]
        what: berth::access::UserCommand,
    },
    /// The account tree and its members (admins and operators).
    Account {
        #[command(subcommand)]
        what: berth::access::AccountCommand,
    },
    /// Run a whole cluster on this machine: PostgreSQL, api, scheduler, workers.
    Dev {
        /// Where the cluster keeps its state (default: <data dir>/berth/dev).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// The api's listen address.
        #[arg(long, default_value = "127.0.0.1:8750")]
        listen: String,
        /// How many workers (node-1 … node-N); 0 with a pool in --config: the pool's
        /// nodes are the cluster.
        #[arg(long, default_value_t = 1)]
        workers: u32,
        /// Each worker's simulated GPUs (`8xH100`, `2xA100:mig=3g.40gb*2`,
        /// `8xH100:shards=2`; as `berth worker --simulate-gpus`); default: NVML if present,
        /// else 8 simulated H100s (a `berth worker` without NVML offers none).
        #[arg(long)]
        gpus: Option<String>,
        /// Each worker's declared CPUs (default: 12 per GPU, at least 16); simulated CPUs
        /// share the machine's cores (CPU id i runs on real CPU i mod their count).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65536))]
        cpus: Option<u32>,
        /// Each worker's declared memory: MiB, or with a K/M/G/T suffix (`32G`);
        /// default 128 GiB per GPU, at least 64 GiB.
        #[arg(long, value_parser = memory_size)]
        memory: Option<u64>,
        /// Submit the single-GPU example, show its output, then keep running.
        #[arg(long)]
        demo: bool,
        /// Requests per second the api allows each user or node (0: no limit).
        #[arg(long, default_value_t = berth_api::limits::Limits::default().per_principal_per_second)]
        rate_limit_per_user: u32,
        /// Requests per second the api allows each address without credentials (0: no
        /// limit).
        #[arg(long, default_value_t = berth_api::limits::Limits::default().per_address_per_second)]
        rate_limit_per_address: u32,
        /// Requests a burst may bring beyond the rate.
        #[arg(long, default_value_t = berth_api::limits::Limits::default().burst)]
        rate_limit_burst: u32,
        /// Job output the database keeps per run and stream, MiB (0: no cap).
        #[arg(long, default_value_t = 64)]
        output_cap_mib: u64,
        /// A server configuration file (as `berth server --config`) whose definitions
        /// (`[qos.*]`, `[partitions.*]`, `[nodes.*]`, `[pools.*]`) and `[cloud]` settings
        /// the dev cluster takes; local pools run their instances under the data dir.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

/// squeue's documented options Berth does not honour yet: parsed (so that none is an
/// "unknown option" and none takes the next word by mistake), then refused by name.
#[derive(Debug, Clone, Default, clap::Args)]
struct SqueueRefused {
    /// Slurm's `squeue --json` document (data parser v0.0.44) of the selected jobs.
    #[arg(long, conflicts_with = "yaml")]
    json: bool,
    /// The same document as YAML.
    #[arg(long)]
    yaml: bool,
    /// Refused: licenses.
    #[arg(short = 'L', long = "licenses", value_name = "LICENSES")]
    licenses: Option<String>,
    /// Refused: other clusters.
    #[arg(short = 'M', long = "clusters", value_name = "CLUSTERS")]
    clusters: Option<String>,
    /// Not yet: jobs of a reservation.
    #[arg(short = 'R', long = "reservation", value_name = "NAME")]
    reservation: Option<String>,
    /// Refused: one line per partition of multi-partition jobs.
    #[arg(short = 'P', long = "priority")]
    priority: bool,
    /// Refused: unique array ids.
    #[arg(long = "array-unique")]
    array_unique: bool,
    /// Refused: federation.
    #[arg(long)]
    federation: bool,
    /// Refused: federation siblings.
    #[arg(long)]
    sibling: bool,
}

impl SqueueRefused {
    /// The first option given that Berth refuses, as a message naming it.
    fn refused(&self) -> Option<String> {
        let not_yet = [(self.reservation.is_some(), "-R/--reservation")];
        if let Some((_, o)) = not_yet.iter().find(|(given, _)| *given) {
            return Some(berth::scancel::refusal("squeue", o, "not yet"));
        }
        let never = [
            (
                self.licenses.is_some(),
                "-L/--licenses",
                "there are no licenses",
            ),
            (
                self.clusters.is_some(),
                "-M/--clusters",
                "one api serves one cluster",
            ),
            (self.priority, "-P/--priority", "jobs are listed once"),
            (
                self.array_unique,
                "--array-unique",
                "array ids print as 5_[1-3]",
            ),
            (self.federation, "--federation", "there is no federation"),
            (self.sibling, "--sibling", "there is no federation"),
        ];
        never
            .iter()
            .find(|(given, _, _)| *given)
            .map(|(_, o, why)| berth::scancel::refusal("squeue", o, why))
    }
}

#[derive(Debug, Subcommand)]
enum UpdateCommand {
    /// A pending job: key=value pairs (nice, priority, timelimit, begintime).
    Job {
        /// The job id.
        id: i64,
        /// Assignments.
        #[arg(required = true)]
        assignments: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum NodeCommand {
    /// One node: state, reason, GPUs.
    Show {
        /// The node name.
        name: String,
        /// Print the api's JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Drain nodes: no new jobs; running ones finish (admins and operators).
    Drain {
        /// Node names.
        #[arg(required = true)]
        names: Vec<String>,
        /// Why (shown by `berth nodes -N` and sinfo -R); required, as in Slurm.
        #[arg(long, short = 'r')]
        reason: String,
    },
    /// Return drained or down nodes to service (admins and operators).
    Resume {
        /// Node names.
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Launch pool nodes' instances now (admins and operators; scontrol's
    /// `State=POWER_UP`).
    PowerUp {
        /// Node names (host lists like `burst-[1-4]`).
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Terminate pool nodes' instances once their jobs end; with --force, requeue their
    /// jobs and terminate now (admins and operators; `State=POWER_DOWN` /
    /// `POWER_DOWN_FORCE`).
    PowerDown {
        /// Node names (host lists like `burst-[1-4]`).
        #[arg(required = true)]
        names: Vec<String>,
        /// Requeue the jobs running there and terminate at once.
        #[arg(long)]
        force: bool,
    },
    /// Configure nodes as slurm.conf's node lines do (admins and operators):
    /// `berth node set node-[1-4] Features=h100,ib Weight=10 CPUs=96 RealMemory=1T
    /// CoreSpecCount=2 MemSpecLimit=8G`. Kept across the workers' re-registration;
    /// `Key=default` returns a setting to what the worker reports.
    Set {
        /// The nodes (a host list: `node-[1-4]`).
        nodes: String,
        /// `Key=Value` settings: CPUs, RealMemory (MiB, or K/M/G/T), Features, Weight,
        /// CoreSpecCount, MemSpecLimit (MiB, or K/M/G/T).
        #[arg(required = true)]
        settings: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum PoolCommand {
    /// Create or replace a pool from a file: TOML (the contents of a `[pools.NAME]`
    /// table of the server configuration) or JSON (the body of `PUT /v1/pools/NAME`).
    Set {
        /// The pool name (a lowercase letter, then lowercase letters, digits or `-`).
        name: String,
        /// The definition (`.toml` or `.json`).
        #[arg(long, short = 'f')]
        file: std::path::PathBuf,
    },
    /// Delete a pool (refused while any of its nodes has an instance).
    Delete {
        /// The pool name.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
enum PartitionCommand {
    /// Every partition, as scontrol show partition prints them.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One partition.
    Show {
        /// The partition name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Create a partition or change settings of it: Nodes, Default, DefaultTime, MaxTime,
    /// PriorityTier, MaxNodes, AllowAccounts, AllowQos.
    Set {
        /// The partition name.
        name: String,
        /// Key=Value settings.
        #[arg(required = true)]
        assignments: Vec<String>,
    },
    /// Delete a partition (refused for the default one and while jobs are in it).
    Delete {
        /// The partition name.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
enum ReservationCommand {
    /// The reservations you may use (all for admins and operators), as scontrol show
    /// reservation prints them.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One reservation.
    Show {
        /// The reservation name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Create a reservation: ReservationName, StartTime, EndTime or Duration, Nodes or
    /// NodeCnt or TRES=gres/gpu:N, PartitionName, Users and/or Accounts, Flags (MAINT,
    /// IGNORE_JOBS, DAILY, WEEKLY, FLEX).
    Create {
        /// Key=Value settings.
        #[arg(required = true)]
        assignments: Vec<String>,
    },
    /// Change settings of a reservation (the others are kept).
    Update {
        /// The reservation name.
        name: String,
        /// Key=Value settings.
        #[arg(required = true)]
        assignments: Vec<String>,
    },
    /// Delete a reservation (refused while jobs that use it run).
    Delete {
        /// The reservation name.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
enum QosCommand {
    /// Every QOS.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Create a QOS or change settings of it (sacctmgr's names: Priority, UsageFactor,
    /// MaxTRESPerUser, MaxTRESPerAccount, GrpTRES, MaxJobsPerUser, MaxSubmitJobsPerUser,
    /// MaxWall, Preempt, PreemptMode, GraceTime, PreemptExemptTime).
    Set {
        /// The QOS name.
        name: String,
        /// key=value assignments.
        #[arg(required = true)]
        assignments: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum ShowCommand {
    /// A job, as `scontrol show job` prints it.
    Job {
        /// The job id.
        id: i64,
        /// Print the api's JSON instead.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Mint a token signed with the private key named by BERTH_JWT_PRIVATE_KEY (Ed25519
    /// or RSA PEM), else the server's secret (BERTH_JWT_SECRET or the configuration
    /// file's jwt_secret).
    Mint {
        /// The user name (`sub`); for a node, `node:<name>` or `node:*`.
        #[arg(long)]
        user: String,
        /// The role.
        #[arg(long, value_enum)]
        role: RoleName,
        /// Days the token is valid.
        #[arg(long, default_value_t = 30)]
        ttl_days: u32,
        /// The configuration file (TOML; see deploy/berth.toml).
        #[arg(long, env = "BERTH_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Create an API token for CI (printed once, on stdout).
    Create(berth::access::TokenCreateArgs),
    /// Create a bootstrap token a new worker joins with (printed once; admins).
    Bootstrap {
        /// Minutes until it expires.
        #[arg(long, default_value_t = 60)]
        ttl_minutes: u32,
        /// Any number of workers may join with it until it expires (else one).
        #[arg(long)]
        reusable: bool,
    },
    /// Re-key a node: revoke its credentials and print a new one (admins). Write it to the
    /// worker's `{state_dir}/node-credential` (mode 0600) or pass it with `--token`.
    Rekey {
        /// The node's name.
        node: String,
    },
    /// List your API tokens (every user's, for admins).
    List,
    /// Revoke API tokens.
    Revoke {
        /// Token ids.
        #[arg(required = true)]
        ids: Vec<i64>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RunAsArg {
    Auto,
    Submitter,
    Worker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RoleArg {
    Api,
    Scheduler,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RoleName {
    Admin,
    Operator,
    User,
    Node,
}

impl From<RoleName> for berth_core::auth::Role {
    fn from(r: RoleName) -> Self {
        match r {
            RoleName::Admin => berth_core::auth::Role::Admin,
            RoleName::Operator => berth_core::auth::Role::Operator,
            RoleName::User => berth_core::auth::Role::User,
            RoleName::Node => berth_core::auth::Role::Node,
        }
    }
}

/// Rewrites the command line when called by a Slurm name: `sbatch …` is
/// `berth submit …`, `squeue` is `queue`, `scancel` is `cancel`, `sinfo` is `nodes`,
/// `sstat` is `stat`, `sprio` is `priority`, `sshare` is `share`, `sacct` is `acct`,
/// `sreport` is `report`; `srun`, `scontrol` and `strigger` keep their names.
fn slurm_alias(mut args: Vec<OsString>) -> Vec<OsString> {
    let called = args
        .first()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let command = match called.as_str() {
        "sbatch" => "submit",
        "squeue" => "queue",
        "scancel" => "cancel",
        "sinfo" => "nodes",
        "srun" => "srun",
        "salloc" => "salloc",
        "sattach" => "sattach",
        "sbcast" => "sbcast",
        "sstat" => "stat",
        "sprio" => "priority",
        "sshare" => "share",
        "sacct" => "acct",
        "scontrol" => "scontrol",
        "sreport" => "report",
        "strigger" => "strigger",
        _ => return args,
    };
    args[0] = OsString::from("berth");
    args.insert(1, OsString::from(command));
    args
}

/// A memory size option's value (Slurm's: MiB, or a K/M/G/T suffix), at least 1 MiB.
fn memory_size(value: &str) -> Result<u64, String> {
    match berth_core::sbatch::size_mib(value)? {
        0 => Err("a node needs some memory (at least 1M)".to_string()),
        mib => Ok(mib),
    }
}

/// Logs to standard error at `default` level (`RUST_LOG` overrides), as `format` says:
/// text with colours only on a terminal (a log file or the journal gets no escape
/// codes), or JSON lines.
fn init_logging(default: &str, format: LogFormat) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
            .try_init(),
    };
}

fn client(url: Option<&str>, token: Option<&str>) -> anyhow::Result<Client> {
    let target = resolve_target(url, token)?;
    let ca = match std::env::var_os("BERTH_CA_FILE").filter(|v| !v.is_empty()) {
        Some(path) => Client::read_ca_file(std::path::Path::new(&path))?,
        None => Vec::new(),
    };
    Ok(Client::with_ca(&target.url, &target.token, &ca)?)
}

async fn run(cli: Cli) -> anyhow::Result<i32> {
    let url = cli.url.as_deref();
    let token = cli.token.as_deref();

    match cli.command {
        Command::Submit { args } => {
            let split = match split_submit_args(&args, berth::submit::invoked_as_sbatch()) {
                Ok(split) => split,
                Err(e) => {
                    // Slurm's words: `sbatch: error: unrecognized option '--foo'`.
                    eprintln!("sbatch: error: {e}\nTry \"sbatch --help\" for more information");
                    return Ok(1);
                }
            };
            if split.version {
                println!("berth {}", env!("CARGO_PKG_VERSION"));
                return Ok(0);
            }
            if split.help {
                let mut command = Cli::command();
                command.build();
                let sub = command
                    .find_subcommand_mut("submit")
                    .expect("submit is a subcommand");
                sub.print_long_help()?;
                return Ok(0);
            }
            let client = client(
                split.url.as_deref().or(url),
                split.token.as_deref().or(token),
            )?;
            commands::submit(&client, &split).await
        }
        Command::Queue {
            user,
            me,
            jobs,
            state,
            partition,
            account,
            qos,
            name,
            all,
            noheader,
            array,
            long,
            format,
            start,
            nodelist,
            long_format,
            sort,
            steps,
            iterate,
            verbose,
            refused,
            ..
        } => {
            if let Some(message) = refused.refused() {
                anyhow::bail!(message);
            }
            let iterate = iterate
                .map(|v| match v.trim().parse::<u64>() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(anyhow::anyhow!(
                        "squeue: -i/--iterate {v:?}: not a whole number of seconds above 0"
                    )),
                })
                .transpose()?;
            let options = QueueOptions {
                document: (refused.json || refused.yaml).then_some(refused.yaml),
                long_format,
                sort,
                steps,
                iterate,
                dated: long || verbose,
                nodelist,
                user,
                me,
                jobs,
                state,
                partition,
                account,
                qos,
                name,
                all,
                noheader,
                array,
                format: format.or_else(|| long.then(|| LONG_FORMAT.to_string())),
                start,
            };
            commands::queue(&client(url, token)?, &options).await
        }
        Command::Nodes(args) => berth::sinfo::run(&client(url, token)?, &args).await,
        Command::Show {
            what: ShowCommand::Job { id, json },
        } => commands::show_job(&client(url, token)?, id, json).await,
        Command::Node { what } => {
            let client = client(url, token)?;
            match what {
                NodeCommand::Show { name, json } => admin::node_show(&client, &name, json).await,
                NodeCommand::Drain { names, reason } => {
                    admin::node_drain(&client, &names, &reason).await
                }
                NodeCommand::Resume { names } => admin::node_resume(&client, &names).await,
                NodeCommand::PowerUp { names } => {
                    berth::pools::node_power(&client, &names, PowerAction::Up).await
                }
                NodeCommand::PowerDown { names, force } => {
                    let action = if force {
                        PowerAction::DownForce
                    } else {
                        PowerAction::Down
                    };
                    berth::pools::node_power(&client, &names, action).await
                }
                NodeCommand::Set { nodes, settings } => {
                    admin::node_set(&client, &nodes, &settings).await
                }
            }
        }
        Command::Pools { name, json } => {
            berth::pools::pools(&client(url, token)?, name.as_deref(), json).await
        }
        Command::Events(args) => berth::events::events(&client(url, token)?, &args).await,
        Command::Webhook { what } => berth::events::webhook(&client(url, token)?, what).await,
        Command::Strigger(args) => berth::events::strigger(&client(url, token)?, &args).await,
        Command::Pool { what } => {
            let client = client(url, token)?;
            match what {
                PoolCommand::Set { name, file } => {
                    berth::pools::pool_set(&client, &name, &file).await
                }
                PoolCommand::Delete { name } => berth::pools::pool_delete(&client, &name).await,
            }
        }
        Command::Partition { what } => {
            let client = client(url, token)?;
            match what {
                PartitionCommand::List { json } => admin::partition_list(&client, json).await,
                PartitionCommand::Show { name, json } => {
                    admin::partition_show(&client, &name, json).await
                }
                PartitionCommand::Set { name, assignments } => {
                    admin::partition_set(&client, &name, &assignments).await
                }
                PartitionCommand::Delete { name } => admin::partition_delete(&client, &name).await,
            }
        }
        Command::Reservation { what } => {
            use berth::reservation as r;
            let client = client(url, token)?;
            match what {
                ReservationCommand::List { json } => r::reservation_list(&client, json).await,
                ReservationCommand::Show { name, json } => {
                    r::reservation_show(&client, &name, json).await
                }
                ReservationCommand::Create { assignments } => {
                    r::reservation_create(&client, &assignments).await
                }
                ReservationCommand::Update { name, assignments } => {
                    r::reservation_update(&client, Some(&name), &assignments).await
                }
                ReservationCommand::Delete { name } => r::reservation_delete(&client, &name).await,
            }
        }
        Command::Logs { follow, stderr, id } => {
            commands::logs(&client(url, token)?, id, stderr, follow).await
        }
        Command::Cancel(args) => berth::scancel::run(&client(url, token)?, &args).await,
        Command::Share(args) => berth::sshare::run(&client(url, token)?, &args).await,
        Command::Priority(args) => berth::sprio::run(&client(url, token)?, &args).await,
        Command::Qos {
            what: QosCommand::List { json },
        } => berth::fairshare::qos_list(&client(url, token)?, json).await,
        Command::Qos {
            what: QosCommand::Set { name, assignments },
        } => berth::fairshare::qos_set(&client(url, token)?, &name, &assignments).await,
        Command::Hold { ids } => berth::job_control::hold(&client(url, token)?, &ids).await,
        Command::Release { ids } => berth::job_control::release(&client(url, token)?, &ids).await,
        Command::Top { ids } => berth::job_control::top(&client(url, token)?, &ids).await,
        Command::Update {
            what: UpdateCommand::Job { id, assignments },
        } => berth::job_control::update_job(&client(url, token)?, id, &assignments).await,
        Command::Shepherd { .. } => unreachable!("handled before the runtime starts"),
        Command::Gpus {
            simulate_gpus,
            require_nvml,
            seconds,
            interval,
        } => berth::gpus::probe(simulate_gpus.as_deref(), require_nvml, seconds, interval).await,
        Command::Stat(args) => berth::stat::sstat(&client(url, token)?, &args).await,
        Command::Acct(args) => berth::acct::run(&client(url, token)?, &args).await,
        Command::Srun(args) => berth::srun::run(&client(url, token)?, &args).await,
        Command::Salloc(args) => berth::salloc::run(&client(url, token)?, &args).await,
        Command::Sattach(args) => berth::salloc::sattach(&client(url, token)?, &args).await,
        Command::Sbcast(args) => berth::sbcast::run(&client(url, token)?, &args).await,
        Command::Sim(args) => berth::sim::run(&args),
        Command::Scontrol { args } => berth::scontrol::run(&args, || client(url, token)).await,
        Command::Report { args } => berth::report::run(&args, || client(url, token)).await,
        Command::Worker {
            api,
            name,
            simulate_gpus,
            gpu_shards,
            simulate_cpus,
            simulate_memory,
            feature,
            weight,
            state_dir,
            kill_wait,
            bootstrap_token,
            poll_wait,
            checkpoint_root,
            gpu_stuck_seconds,
            run_as,
            allow_root_jobs,
            no_cgroups,
            metadata_url,
            metadata_poll_ms,
        } => {
            let name = name.unwrap_or_else(berth::server::host_name);
            let token = match (token, bootstrap_token) {
                (_, Some(bootstrap)) => {
                    let ca = match &cli.ca_file {
                        Some(path) => Client::read_ca_file(path)?,
                        None => Vec::new(),
                    };
                    berth::join::node_credential(&api, &bootstrap, &name, &state_dir, &ca).await?
                }
                (Some(token), None) => token.to_string(),
                (None, None) => berth::join::kept_credential(&state_dir).with_context(|| {
                    format!(
                        "no node token: pass --token (BERTH_TOKEN) or --bootstrap-token \
                         (BERTH_BOOTSTRAP_TOKEN); no credential is kept in {}",
                        berth::join::credential_path(&state_dir).display()
                    )
                })?,
            };
            let mut config = berth_worker::WorkerConfig::new(api, token, name, state_dir);
            config.simulate_gpus = simulate_gpus;
            config.gpu_shards = gpu_shards;
            config.simulate_cpus = simulate_cpus;
            config.simulate_memory_mib = simulate_memory;
            config.features = feature;
            config.weight = weight;
            config.kill_wait = Duration::from_secs(kill_wait);
            if let Some(path) = &cli.ca_file {
                config.ca_pem = Some(
                    std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
                );
            }
            config.poll_wait_seconds = poll_wait;
            config.checkpoint_root = checkpoint_root;
            config.gpu_stuck_after = Duration::from_secs(gpu_stuck_seconds);
            config.cgroups = !no_cgroups;
            config.allow_root_jobs = allow_root_jobs;
            if let Some(url) = &metadata_url {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    anyhow::bail!("--metadata-url {url:?}: an http:// or https:// URL");
                }
            }
            config.metadata_url = metadata_url;
            config.metadata_poll_interval = Duration::from_millis(metadata_poll_ms);
            match run_as {
                RunAsArg::Auto => {}
                RunAsArg::Submitter => config.run_as_user = true,
                RunAsArg::Worker => config.run_as_user = false,
            }
            let shutdown = Shutdown::on_signals();
            berth_worker::run(config, shutdown.wait())
                .await
                .context("worker")?;
            Ok(0)
        }
        Command::CloudMetadata { state_dir, listen } => {
            berth::cloud_metadata::serve(state_dir, listen).await
        }
        Command::Server {
            role,
            listen,
            config,
        } => {
            let config = load_server_config(config.as_ref(), listen.as_deref())?;
            let role = match role {
                RoleArg::Api => Role::Api,
                RoleArg::Scheduler => Role::Scheduler,
                RoleArg::All => Role::All,
            };
            run_server(config, role, Shutdown::on_signals()).await?;
            Ok(0)
        }
        Command::Token {
            what:
                TokenCommand::Mint {
                    user,
                    role,
                    ttl_days,
                    config,
                },
        } => {
            if let Some(path) = std::env::var_os("BERTH_JWT_PRIVATE_KEY").filter(|p| !p.is_empty())
            {
                let path = PathBuf::from(path);
                let pem =
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
                let token = berth_api::mint_token_with_key(
                    &pem,
                    &user,
                    role.into(),
                    i64::from(ttl_days) * 86_400,
                )
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                println!("{token}");
                return Ok(0);
            }
            let secret = match std::env::var("BERTH_JWT_SECRET")
                .ok()
                .filter(|s| !s.is_empty())
            {
                Some(secret) => secret,
                None => {
                    let path = config.as_ref().context(
                        "no token secret: set BERTH_JWT_SECRET or pass --config with jwt_secret",
                    )?;
                    berth::server::read_server_config(path)?
                        .jwt_secret
                        .with_context(|| format!("jwt_secret is not set in {}", path.display()))?
                }
            };
            let token =
                berth_api::mint_token(&secret, &user, role.into(), i64::from(ttl_days) * 86_400);
            println!("{token}");
            Ok(0)
        }
        Command::Token {
            what: TokenCommand::Create(args),
        } => berth::access::token_create(&client(url, token)?, &args).await,
        Command::Token {
            what:
                TokenCommand::Bootstrap {
                    ttl_minutes,
                    reusable,
                },
        } => berth::join::bootstrap_token(&client(url, token)?, ttl_minutes, reusable).await,
        Command::Token {
            what: TokenCommand::Rekey { node },
        } => berth::join::node_rekey(&client(url, token)?, &node).await,
        Command::Token {
            what: TokenCommand::List,
        } => berth::access::token_list(&client(url, token)?).await,
        Command::Token {
            what: TokenCommand::Revoke { ids },
        } => berth::access::token_revoke(&client(url, token)?, &ids).await,
        Command::User { what } => berth::access::user(&client(url, token)?, what).await,
        Command::Account { what } => berth::access::account(&client(url, token)?, what).await,
        Command::Dev {
            data_dir,
            listen,
            workers,
            gpus,
            cpus,
            memory,
            demo,
            rate_limit_per_user,
            rate_limit_per_address,
            rate_limit_burst,
            output_cap_mib,
            config,
        } => {
            let limits = berth_api::limits::Limits {
                per_principal_per_second: rate_limit_per_user,
                per_address_per_second: rate_limit_per_address,
                burst: rate_limit_burst.max(1),
                output_cap_bytes: (output_cap_mib > 0)
                    .then(|| output_cap_mib.saturating_mul(1024 * 1024)),
                ..Default::default()
            };
            let options = DevOptions {
                data_dir: data_dir.unwrap_or_else(default_data_dir),
                listen,
                workers,
                gpus,
                cpus,
                memory_mib: memory,
                demo,
                limits,
                config: match &config {
                    Some(path) => Some(berth::server::read_server_config(path)?),
                    None => None,
                },
            };
            berth::dev::run_dev(options).await?;
            Ok(0)
        }
    }
}

/// The Slurm name this binary was called by (`sbatch`, `squeue` …), if any.
fn slurm_name(args: &[OsString]) -> Option<String> {
    let called = args
        .first()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))?;
    (slurm_alias(vec![OsString::from(&called)]).len() > 1).then_some(called)
}

/// Ends the process on a command line clap refused. Called by a Slurm name, it speaks as
/// Slurm's commands do (`squeue: unrecognized option '--foo'`, exit status 1); help and
/// version requests print and exit 0.
fn usage_error(error: clap::Error, slurm: Option<&str>) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let Some(name) = slurm else { error.exit() };
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => error.exit(),
        ErrorKind::UnknownArgument => {
            let arg = match error.get(ContextKind::InvalidArg) {
                Some(ContextValue::String(arg)) => arg.clone(),
                _ => String::new(),
            };
            eprintln!("{name}: unrecognized option '{arg}'");
            eprintln!("Try \"{name} --help\" for more information");
        }
        _ => {
            let _ = error.print();
        }
    }
    std::process::exit(1);
}

/// Raises this process's soft limit on open files to its hard limit: the api holds a
/// socket per client (long polls of every worker, open event streams), far more than the
/// usual soft limit of 1,024.
fn raise_open_files_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => {
            if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
                tracing::warn!(error = %e, soft, hard, "could not raise the open files limit");
            } else {
                tracing::debug!(from = soft, to = hard, "open files limit raised");
            }
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not read the open files limit"),
    }
}

fn main() {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let slurm = slurm_name(&argv);
    let cli = match Cli::try_parse_from(slurm_alias(argv)) {
        Ok(cli) => cli,
        Err(e) => usage_error(e, slurm.as_deref()),
    };
    // The shepherd needs no runtime and must not log: it only runs and waits.
    if let Command::Shepherd { spec, exec } = &cli.command {
        let code = if *exec {
            berth_worker::shepherd::exec_main(spec)
        } else {
            berth_worker::shepherd::shepherd_main(spec)
        };
        std::process::exit(code);
    }
    let default_level = match cli.command {
        Command::Server { .. } | Command::Worker { .. } | Command::CloudMetadata { .. } => "info",
        _ => "warn",
    };
    init_logging(default_level, cli.log_format);
    if matches!(cli.command, Command::Server { .. } | Command::Dev { .. }) {
        raise_open_files_limit();
    }
    if let Some(path) = &cli.ca_file {
        // Where every client command finds it; set before any thread starts.
        std::env::set_var("BERTH_CA_FILE", path);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            let message = berth_core::text::escape_keep_lines(&format!("{e:#}")).into_owned();
            // A message that already speaks as the Slurm command (`sattach: error: …`)
            // is printed as it is.
            let named = slurm
                .as_deref()
                .is_some_and(|name| message.starts_with(&format!("{name}: ")));
            if named {
                eprintln!("{message}");
            } else {
                eprintln!("error: {message}");
            }
            1
        }
    };
    // Leave lingering streams and tasks behind rather than wait for them.
    runtime.shutdown_timeout(Duration::from_secs(1));
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_tree_is_consistent() {
        Cli::command().debug_assert();
    }

    /// A subcommand's own argument named like a global one (`--url`, `--token` …) would
    /// silently take the global's value: `berth webhook add URL` once sent its requests to
    /// the webhook's URL.
    #[test]
    fn no_subcommand_argument_shares_a_global_arguments_id() {
        fn walk(cmd: &clap::Command, globals: &[String], path: &str, bad: &mut Vec<String>) {
            for sub in cmd.get_subcommands() {
                let here = format!("{path} {}", sub.get_name());
                for arg in sub.get_arguments() {
                    let id = arg.get_id().as_str().to_string();
                    if !arg.is_global_set() && globals.contains(&id) {
                        bad.push(format!("{here}: {id}"));
                    }
                }
                walk(sub, globals, &here, bad);
            }
        }
        let cmd = Cli::command();
        let globals: Vec<String> = cmd
            .get_arguments()
            .filter(|a| a.is_global_set())
            .map(|a| a.get_id().as_str().to_string())
            .collect();
        assert!(globals.contains(&"url".to_string()), "{globals:?}");
        let mut bad = Vec::new();
        walk(&cmd, &globals, "berth", &mut bad);
        assert!(bad.is_empty(), "{bad:?}");
        let cli = Cli::try_parse_from([
            "berth",
            "webhook",
            "add",
            "https://hooks.example/x",
            "--event",
            "berth.job.ended",
        ])
        .unwrap();
        assert_eq!(cli.url, None);
    }

    #[test]
    fn berth_dev_takes_its_rate_limits_and_output_cap() {
        let cli = Cli::try_parse_from([
            "berth",
            "dev",
            "--rate-limit-per-user",
            "0",
            "--rate-limit-per-address",
            "7",
            "--rate-limit-burst",
            "9",
            "--output-cap-mib",
            "0",
        ])
        .unwrap();
        match cli.command {
            Command::Dev {
                rate_limit_per_user,
                rate_limit_per_address,
                rate_limit_burst,
                output_cap_mib,
                ..
            } => assert_eq!(
                (
                    rate_limit_per_user,
                    rate_limit_per_address,
                    rate_limit_burst,
                    output_cap_mib
                ),
                (0, 7, 9, 0)
            ),
            other => panic!("{other:?}"),
        }
        let defaults = Cli::try_parse_from(["berth", "dev"]).unwrap();
        let Command::Dev {
            rate_limit_per_user,
            ..
        } = defaults.command
        else {
            panic!("dev");
        };
        assert_eq!(rate_limit_per_user, 100);
    }

    #[test]
    fn slurm_names_dispatch_to_commands() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            slurm_alias(args(&["/usr/bin/sbatch", "-N2", "job.sh"])),
            args(&["berth", "submit", "-N2", "job.sh"])
        );
        assert_eq!(
            slurm_alias(args(&["squeue", "-u", "bob"])),
            args(&["berth", "queue", "-u", "bob"])
        );
        assert_eq!(
            slurm_alias(args(&["berth", "nodes"])),
            args(&["berth", "nodes"])
        );
        let cli = Cli::try_parse_from(slurm_alias(args(&[
            "sbatch",
            "--gres=gpu:1",
            "-t",
            "5",
            "x.sh",
            "--wait",
        ])))
        .unwrap();
        match cli.command {
            Command::Submit { args: a } => {
                assert_eq!(a, vec!["--gres=gpu:1", "-t", "5", "x.sh", "--wait"])
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from(args(&["scancel", "3", "4"]).into_iter().collect::<Vec<_>>());
        assert!(cli.is_err(), "scancel is only an alias through argv[0]");
        let cli = Cli::try_parse_from(slurm_alias(args(&["scancel", "3", "4"]))).unwrap();
        assert!(matches!(cli.command, Command::Cancel(a) if a.ids == ["3", "4"]));
    }

    /// Whether a Slurm option Berth parsed is one it refuses: the refusal naming it.
    fn refusal(cli: &Cli) -> Option<String> {
        match &cli.command {
            Command::Cancel(a) => a.refused(),
            Command::Nodes(a) => a.refused(),
            Command::Priority(a) => a.refused(),
            Command::Share(a) => a.refused(),
            Command::Stat(a) => a.refused(),
            Command::Queue { refused, .. } => refused.refused(),
            _ => None,
        }
    }

    /// Slurm's documented options of each command (from its man page), each honoured or
    /// refused by name: none is an "unknown option", a refusal names the option, and an
    /// unknown option never takes the next word as its value.
    #[test]
    fn every_documented_slurm_option_is_honoured_or_refused_by_name() {
        // (command, option words, Some(name in the refusal) or None: honoured)
        let table: &[(&str, &[&str], Option<&str>)] = &[
            ("scancel", &["-A", "ml"], None),
            ("scancel", &["--account=ml"], None),
            ("scancel", &["-b", "5"], None),
            ("scancel", &["--batch", "5"], None),
            ("scancel", &["-b", "-s", "USR1", "5"], None),
            ("scancel", &["-M", "c2"], Some("-M/--clusters")),
            ("scancel", &["--ctld", "5"], None),
            ("scancel", &["-c", "5"], Some("-c/--cron")),
            ("scancel", &["-f", "5"], None),
            ("scancel", &["--full", "5"], None),
            ("scancel", &["-f", "--signal=TERM", "5.0"], None),
            ("scancel", &["--hurry", "5"], None),
            ("scancel", &["-i", "5"], None),
            ("scancel", &["--interactive", "5"], None),
            ("scancel", &["-n", "x"], None),
            ("scancel", &["--name=x"], None),
            ("scancel", &["--jobname=x"], None),
            ("scancel", &["--me"], None),
            ("scancel", &["-p", "gpu"], None),
            ("scancel", &["--partition=gpu"], None),
            ("scancel", &["-q", "high"], None),
            ("scancel", &["--qos=high"], None),
            ("scancel", &["-Q", "5"], None),
            ("scancel", &["--quiet", "5"], None),
            ("scancel", &["-R", "maint"], None),
            ("scancel", &["--reservation=maint"], None),
            ("scancel", &["--sibling=c2", "5"], Some("--sibling")),
            ("scancel", &["-s", "USR1", "5"], None),
            ("scancel", &["--signal=USR1", "5"], None),
            ("scancel", &["-s", "10", "5.0"], None),
            ("scancel", &["-t", "PD"], None),
            ("scancel", &["--state=PENDING"], None),
            ("scancel", &["-u", "bob"], None),
            ("scancel", &["--user=bob"], None),
            ("scancel", &["-v", "5"], None),
            ("scancel", &["-w", "node-1"], None),
            ("scancel", &["--nodelist=node-1"], None),
            ("scancel", &["--wckey=k"], Some("--wckey")),
            ("scancel", &["5_[1-3]", "6_2", "7"], None),
            ("sinfo", &["-a"], None),
            ("sinfo", &["-d"], None),
            ("sinfo", &["-e"], None),
            ("sinfo", &["--federation"], Some("--federation")),
            ("sinfo", &["-h"], None),
            ("sinfo", &["--noheader"], None),
            ("sinfo", &["--hide"], None),
            ("sinfo", &["-i", "5"], None),
            ("sinfo", &["--json"], None),
            ("sinfo", &["--yaml"], None),
            ("sinfo", &["-l"], None),
            ("sinfo", &["--local"], None),
            ("sinfo", &["-M", "c2"], Some("-M/--clusters")),
            ("sinfo", &["-n", "node-1"], None),
            ("sinfo", &["--nodes=node-[1-2]"], None),
            ("sinfo", &["--noconvert"], None),
            ("sinfo", &["-N"], None),
            ("sinfo", &["--Node"], None),
            ("sinfo", &["-o", "%P %N"], None),
            ("sinfo", &["--format=%P"], None),
            ("sinfo", &["-O", "Partition,NodeList:10"], None),
            ("sinfo", &["--Format=StateLong"], None),
            ("sinfo", &["-p", "gpu"], None),
            ("sinfo", &["-r"], None),
            ("sinfo", &["-R"], None),
            ("sinfo", &["--list-reasons"], None),
            ("sinfo", &["-s"], None),
            ("sinfo", &["--summarize"], None),
            ("sinfo", &["-S", "P"], Some("-S/--sort")),
            ("sinfo", &["-t", "idle,drain"], None),
            ("sinfo", &["--states=idle"], None),
            ("sinfo", &["-T"], Some("-T/--reservation")),
            ("sinfo", &["-v"], None),
            ("squeue", &["-A", "ml"], None),
            ("squeue", &["-a"], None),
            ("squeue", &["-r"], None),
            ("squeue", &["--array-unique"], Some("--array-unique")),
            ("squeue", &["-M", "c2"], Some("-M/--clusters")),
            ("squeue", &["--federation"], Some("--federation")),
            ("squeue", &["-o", "%i"], None),
            ("squeue", &["-O", "JobID,Name"], None),
            ("squeue", &["-h"], None),
            ("squeue", &["--hide"], None),
            ("squeue", &["-i", "5"], None),
            ("squeue", &["-j", "5,6_2"], None),
            ("squeue", &["--json"], None),
            ("squeue", &["-L", "lic"], Some("-L/--licenses")),
            ("squeue", &["--local"], None),
            ("squeue", &["-l"], None),
            ("squeue", &["--me"], None),
            ("squeue", &["-n", "x"], None),
            ("squeue", &["--noconvert"], None),
            ("squeue", &["-w", "node-1"], None),
            ("squeue", &["--nodelist=node-1"], None),
            ("squeue", &["-p", "gpu"], None),
            ("squeue", &["-P"], Some("-P/--priority")),
            ("squeue", &["-q", "high"], None),
            ("squeue", &["-R", "maint"], Some("-R/--reservation")),
            ("squeue", &["--sibling"], Some("--sibling")),
            ("squeue", &["-S", "-t"], None),
            ("squeue", &["--start"], None),
            ("squeue", &["-t", "PD"], None),
            ("squeue", &["-s"], None),
            ("squeue", &["-u", "bob"], None),
            ("squeue", &["-v"], None),
            ("squeue", &["--yaml"], None),
            ("sprio", &["-j", "5,6"], None),
            ("sprio", &["--jobs=5"], None),
            ("sprio", &["-u", "bob"], None),
            ("sprio", &["-l"], None),
            ("sprio", &["-n"], None),
            ("sprio", &["-o", "%i %Y"], None),
            ("sprio", &["-p", "gpu"], None),
            ("sprio", &["-h"], None),
            ("sprio", &["-w"], Some("-w/--weights")),
            ("sprio", &["-S", "y"], Some("-S/--sort")),
            ("sprio", &["-M", "c2"], Some("-M/--clusters")),
            ("sprio", &["-v"], None),
            ("sshare", &["-a"], None),
            ("sshare", &["-A", "ml"], None),
            ("sshare", &["--accounts=ml"], None),
            ("sshare", &["-e"], None),
            ("sshare", &["-l"], None),
            ("sshare", &["-m"], Some("-m/--partition")),
            ("sshare", &["-M", "c2"], Some("-M/--clusters")),
            ("sshare", &["-n"], None),
            ("sshare", &["-o", "Account,FairShare"], None),
            ("sshare", &["-p"], None),
            ("sshare", &["-P"], None),
            ("sshare", &["-u", "bob"], None),
            ("sshare", &["--users=bob"], None),
            ("sshare", &["-U"], None),
            ("sshare", &["-v"], None),
            ("sshare", &["--json"], None),
            ("sshare", &["--yaml"], None),
            ("sstat", &["-a", "-j", "17"], None),
            ("sstat", &["-e"], None),
            ("sstat", &["-i", "-j", "17"], Some("-i/--pidformat")),
            ("sstat", &["-j", "17"], None),
            ("sstat", &["--jobs=17,18"], None),
            ("sstat", &["-n", "-j", "17"], None),
            ("sstat", &["--noconvert", "-j", "17"], None),
            ("sstat", &["-o", "JobID", "-j", "17"], None),
            ("sstat", &["--format=JobID", "-j", "17"], None),
            ("sstat", &["--fields=JobID", "-j", "17"], None),
            ("sstat", &["-p", "-j", "17"], None),
            ("sstat", &["-P", "-j", "17"], None),
            ("sstat", &["-v", "-j", "17"], None),
            ("sacct", &["-S", "now-1hour", "-E", "now"], None),
            ("sacct", &["--json"], None),
            ("sacct", &["--yaml"], None),
            ("sacct", &["-u", "bob", "-a", "-A", "ml", "-s", "CD"], None),
            (
                "sacct",
                &["-j", "5", "-X", "-D", "-r", "gpu", "-q", "high"],
                None,
            ),
            (
                "sacct",
                &["-N", "node-1", "-o", "JobID", "-P", "-p", "-n", "-e"],
                None,
            ),
        ];
        for (command, words, refused) in table {
            let mut line = vec![command.to_string()];
            line.extend(words.iter().map(|w| w.to_string()));
            let argv = slurm_alias(line.iter().map(OsString::from).collect());
            let cli = match Cli::try_parse_from(&argv) {
                Ok(cli) => cli,
                Err(e) => panic!("{command} {words:?}: not parsed: {e}"),
            };
            match (refusal(&cli), refused) {
                (None, None) => {}
                (Some(message), Some(name)) => assert!(
                    message.starts_with(&format!("{command}: {name} ")),
                    "{command} {words:?}: {message}"
                ),
                (got, want) => panic!("{command} {words:?}: refusal {got:?}, wanted {want:?}"),
            }
        }
        // An unknown option is refused by its name and takes no value with it.
        for command in [
            "scancel", "sinfo", "squeue", "sprio", "sshare", "sstat", "sacct",
        ] {
            let argv = slurm_alias(
                [command, "--bogus-option", "5"]
                    .iter()
                    .map(OsString::from)
                    .collect(),
            );
            let err = Cli::try_parse_from(&argv).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::UnknownArgument,
                "{command}"
            );
            assert!(
                err.to_string().contains("--bogus-option"),
                "{command}: {err}"
            );
        }
    }
}
