//! `berth`: the server roles (`berth server`), the node agent (`berth worker`), the
//! one-process development cluster (`berth dev`) and the client commands (`submit`,
//! `queue`, `nodes`, `show`, `logs`, `cancel`, `token`). Called as `sbatch`, `squeue`,
//! `scancel` or `sinfo` (a link with that name), it runs the matching command.

use anyhow::Context;
use berth::client::Client;
use berth::commands::{self, QueueOptions};
use berth::config::resolve_target;
use berth::dev::{default_data_dir, DevOptions};
use berth::server::{load_server_config, run_server, Role};
use berth::shutdown::Shutdown;
use berth::submit::split_submit_args;
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

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
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Submit a batch script, like sbatch: `berth submit [sbatch options…] [SCRIPT] [--wait]`.
    #[command(disable_help_flag = true)]
    Submit {
        /// sbatch options, then the script path (standard input when absent and no
        /// --wrap). Berth's own: -W/--wait (stream the job's output until it ends and exit
        /// with its exit code), --url, --token; --parsable prints the job id alone.
        #[arg(
            num_args = 0..,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "SBATCH_OPTIONS_AND_SCRIPT"
        )]
        args: Vec<String>,
    },
    /// List jobs, like squeue (pending and running ones unless --all).
    Queue {
        /// Only this user's jobs.
        #[arg(short = 'u', long)]
        user: Option<String>,
        /// Only these states (comma-separated: PENDING,RUNNING or PD,R …).
        #[arg(short = 't', long, visible_alias = "states")]
        state: Option<String>,
        /// Only this partition.
        #[arg(short = 'p', long)]
        partition: Option<String>,
        /// Jobs in every state.
        #[arg(short = 'a', long)]
        all: bool,
        /// Leave out the header line.
        #[arg(long)]
        noheader: bool,
        /// Pending jobs with their expected start times (squeue --start).
        #[arg(long)]
        start: bool,
    },
    /// Show partitions and nodes, like sinfo.
    Nodes {
        /// One line per node, with its GPUs.
        #[arg(short = 'N', long)]
        long: bool,
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
    /// Cancel jobs, like scancel.
    Cancel {
        /// Job ids, or array tasks as `12_3`.
        #[arg(required = true)]
        ids: Vec<berth::job_control::JobRef>,
    },
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
    /// Fairshare of every association (sshare).
    Share {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Priority factors of pending jobs (sprio).
    Priority {
        /// Job ids.
        #[arg(required = true)]
        ids: Vec<i64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// QOS: `berth qos list`, `berth qos set NAME Priority=10 MaxTRESPerUser=gres/gpu=8` (admin).
    Qos {
        #[command(subcommand)]
        what: QosCommand,
    },
    /// Change a pending job (scontrol update): `berth update job ID nice=10 timelimit=30`.
    Update {
        #[command(subcommand)]
        what: UpdateCommand,
    },
    /// Run the node agent (like slurmd) until SIGTERM/SIGINT.
    Worker {
        /// The api's URL.
        #[arg(long, env = "BERTH_API")]
        api: String,
        /// The node name (default: this host's name).
        #[arg(long)]
        name: Option<String>,
        /// Simulate GPUs instead of using NVML: `8`, `8xH100`, `4xA100`.
        #[arg(long)]
        simulate_gpus: Option<String>,
        /// Where job scripts and scratch directories live.
        #[arg(long, default_value = "/var/lib/berth/worker")]
        state_dir: PathBuf,
        /// Seconds between SIGTERM and SIGKILL when a job is stopped.
        #[arg(long, default_value_t = 30)]
        kill_wait: u64,
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
    /// Tokens.
    Token {
        #[command(subcommand)]
        what: TokenCommand,
    },
    /// Run a whole cluster on this machine: PostgreSQL, api, scheduler, workers.
    Dev {
        /// Where the cluster keeps its state (default: <data dir>/berth/dev).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// The api's listen address.
        #[arg(long, default_value = "127.0.0.1:8750")]
        listen: String,
        /// How many workers (node-1 … node-N).
        #[arg(long, default_value_t = 1)]
        workers: u32,
        /// Each worker's simulated GPUs (`8xH100`); default: NVML if present, else 8
        /// simulated H100s.
        #[arg(long)]
        gpus: Option<String>,
        /// Submit the single-GPU example, show its output, then keep running.
        #[arg(long)]
        demo: bool,
    },
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
    /// Mint a token signed with the server's secret (BERTH_JWT_SECRET or the
    /// configuration file's jwt_secret).
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
/// `berth submit …`, `squeue` is `queue`, `scancel` is `cancel`, `sinfo` is `nodes`.
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
        _ => return args,
    };
    args[0] = OsString::from("berth");
    args.insert(1, OsString::from(command));
    args
}

fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn client(url: Option<&str>, token: Option<&str>) -> anyhow::Result<Client> {
    let target = resolve_target(url, token)?;
    Ok(Client::new(&target.url, &target.token))
}

async fn run(cli: Cli) -> anyhow::Result<i32> {
    let url = cli.url.as_deref();
    let token = cli.token.as_deref();
    match cli.command {
        Command::Submit { args } => {
            let split = split_submit_args(&args)?;
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
            state,
            partition,
            all,
            noheader,
            start,
        } => {
            let options = QueueOptions {
                user,
                state,
                partition,
                all,
                noheader,
                start,
            };
            commands::queue(&client(url, token)?, &options).await
        }
        Command::Nodes { long } => commands::nodes(&client(url, token)?, long).await,
        Command::Show {
            what: ShowCommand::Job { id, json },
        } => commands::show_job(&client(url, token)?, id, json).await,
        Command::Logs { follow, stderr, id } => {
            commands::logs(&client(url, token)?, id, stderr, follow).await
        }
        Command::Cancel { ids } => berth::job_control::cancel(&client(url, token)?, &ids).await,
        Command::Share { json } => berth::fairshare::share(&client(url, token)?, json).await,
        Command::Priority { ids, json } => {
            berth::fairshare::priority(&client(url, token)?, &ids, json).await
        }
        Command::Qos {
            what: QosCommand::List { json },
        } => berth::fairshare::qos_list(&client(url, token)?, json).await,
        Command::Qos {
            what: QosCommand::Set { name, assignments },
        } => berth::fairshare::qos_set(&client(url, token)?, &name, &assignments).await,
        Command::Hold { ids } => berth::job_control::hold(&client(url, token)?, &ids).await,
        Command::Release { ids } => berth::job_control::release(&client(url, token)?, &ids).await,
        Command::Update {
            what: UpdateCommand::Job { id, assignments },
        } => berth::job_control::update_job(&client(url, token)?, id, &assignments).await,
        Command::Worker {
            api,
            name,
            simulate_gpus,
            state_dir,
            kill_wait,
        } => {
            let token = token
                .map(str::to_string)
                .context("no node token: set BERTH_TOKEN or pass --token")?;
            let name = name.unwrap_or_else(berth::server::host_name);
            let mut config = berth_worker::WorkerConfig::new(api, token, name, state_dir);
            config.simulate_gpus = simulate_gpus;
            config.kill_wait = Duration::from_secs(kill_wait);
            let shutdown = Shutdown::on_signals();
            berth_worker::run(config, shutdown.wait())
                .await
                .context("worker")?;
            Ok(0)
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
        Command::Dev {
            data_dir,
            listen,
            workers,
            gpus,
            demo,
        } => {
            let options = DevOptions {
                data_dir: data_dir.unwrap_or_else(default_data_dir),
                listen,
                workers: workers.max(1),
                gpus,
                demo,
            };
            berth::dev::run_dev(options).await?;
            Ok(0)
        }
    }
}

fn main() {
    let cli = Cli::parse_from(slurm_alias(std::env::args_os().collect()));
    let default_level = match cli.command {
        Command::Server { .. } | Command::Worker { .. } => "info",
        _ => "warn",
    };
    init_logging(default_level);
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
            eprintln!("error: {e:#}");
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
        assert!(matches!(cli.command, Command::Cancel { ids } if ids == vec![3.into(), 4.into()]));
    }
}
