//! The `berth` command line: the top-level options, every subcommand and its arguments
//! (clap's derive), the values they parse.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
/// Berth: a REST-first, Slurm-compatible GPU cluster orchestrator.
#[derive(Debug, Parser)]
#[command(name = "berth", version, about)]
pub(crate) struct Cli {
    /// The api's URL (else BERTH_URL, else the client configuration file).
    #[arg(long, global = true, env = "BERTH_URL", hide_env_values = true)]
    pub(crate) url: Option<String>,
    /// The bearer token (else BERTH_TOKEN, else the client configuration file).
    #[arg(long, global = true, env = "BERTH_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// A PEM file of CA certificates to trust for the api's TLS certificate (else
    /// BERTH_CA_FILE); the system's roots are trusted too.
    #[arg(long, global = true, env = "BERTH_CA_FILE")]
    pub(crate) ca_file: Option<PathBuf>,
    /// How log lines are written to standard error: `text` (colours only on a terminal)
    /// or `json` (one JSON object a line, for journald and Kubernetes).
    #[arg(long, global = true, env = "BERTH_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, hide = true)]
    pub(crate) log_format: LogFormat,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The form of log lines (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines; ANSI colours only when standard error is a terminal (and
    /// `NO_COLOR` is not set).
    Text,
    /// One JSON object a line (timestamp, level, target, fields, spans).
    Json,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
        /// Declare the node's CPUs as cores of this many hardware threads (Slurm's
        /// ThreadsPerCore; the CPUs must be a multiple): CPU ids T·c … T·c+T-1 are core
        /// c, whose threads all run on one real CPU. Jobs get whole cores, and
        /// --hint=nomultithread one thread of each.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=16))]
        simulate_threads_per_core: Option<u32>,
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
        /// Each worker's hardware threads per core (as `berth worker
        /// --simulate-threads-per-core`; the CPUs must be a multiple): jobs get whole
        /// cores, and --hint=nomultithread one thread of each.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=16))]
        threads_per_core: Option<u32>,
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
        /// Requests a user or node may send at once beyond the rate (its token bucket).
        #[arg(long, default_value_t = berth_api::limits::Limits::default().burst)]
        rate_limit_burst: u32,
        /// Requests an address without credentials may send at once beyond the rate.
        #[arg(long, default_value_t = berth_api::limits::Limits::default().address_burst)]
        rate_limit_burst_per_address: u32,
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
pub(crate) struct SqueueRefused {
    /// Slurm's `squeue --json` document (data parser v0.0.44) of the selected jobs.
    #[arg(long, conflicts_with = "yaml")]
    pub(crate) json: bool,
    /// The same document as YAML.
    #[arg(long)]
    pub(crate) yaml: bool,
    /// Refused: licenses.
    #[arg(short = 'L', long = "licenses", value_name = "LICENSES")]
    pub(crate) licenses: Option<String>,
    /// `all` or this cluster's name (Berth is one cluster; another name is refused);
    /// `SLURM_CLUSTERS` when absent. The table follows a `CLUSTER: NAME` line.
    #[arg(
        short = 'M',
        long = "clusters",
        visible_alias = "cluster",
        value_name = "CLUSTERS",
        allow_hyphen_values = true
    )]
    pub(crate) clusters: Option<String>,
    /// Not yet: jobs of a reservation.
    #[arg(short = 'R', long = "reservation", value_name = "NAME")]
    pub(crate) reservation: Option<String>,
    /// Refused: one line per partition of multi-partition jobs.
    #[arg(short = 'P', long = "priority")]
    pub(crate) priority: bool,
    /// Refused: unique array ids.
    #[arg(long = "array-unique")]
    pub(crate) array_unique: bool,
    /// Refused: federation.
    #[arg(long)]
    pub(crate) federation: bool,
    /// Refused: federation siblings.
    #[arg(long)]
    pub(crate) sibling: bool,
}

impl SqueueRefused {
    /// The first option given that Berth refuses, as a message naming it.
    pub(crate) fn refused(&self) -> Option<String> {
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
pub(crate) enum UpdateCommand {
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
pub(crate) enum NodeCommand {
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
pub(crate) enum PoolCommand {
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
pub(crate) enum PartitionCommand {
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
pub(crate) enum ReservationCommand {
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
pub(crate) enum QosCommand {
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
pub(crate) enum ShowCommand {
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
pub(crate) enum TokenCommand {
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
pub(crate) enum RunAsArg {
    Auto,
    Submitter,
    Worker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RoleArg {
    Api,
    Scheduler,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RoleName {
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

/// A memory size option's value (Slurm's: MiB, or a K/M/G/T suffix), at least 1 MiB.
pub(crate) fn memory_size(value: &str) -> Result<u64, String> {
    match berth_core::sbatch::size_mib(value)? {
        0 => Err("a node needs some memory (at least 1M)".to_string()),
        mib => Ok(mib),
    }
}
