//! Runs the parsed command: each subcommand calls the library's command functions
//! ([`berth::commands`] and the modules beside it) with a client of the configured api.

use crate::args::*;
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
use std::path::PathBuf;
use std::time::Duration;

/// squeue's `-l` format.
const LONG_FORMAT: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";

pub(crate) fn client(url: Option<&str>, token: Option<&str>) -> anyhow::Result<Client> {
    let target = resolve_target(url, token)?;
    let ca = match std::env::var_os("BERTH_CA_FILE").filter(|v| !v.is_empty()) {
        Some(path) => Client::read_ca_file(std::path::Path::new(&path))?,
        None => Vec::new(),
    };
    Ok(Client::with_ca(&target.url, &target.token, &ca)?)
}

pub(crate) async fn run(cli: Cli) -> anyhow::Result<i32> {
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
                // sbatch's options, under Slurm's headings (berth_core::sbatch_help).
                let program = if split.as_sbatch {
                    "sbatch"
                } else {
                    "berth submit"
                };
                if split.usage {
                    print!("{}", berth_core::sbatch_help::render_usage(program));
                } else {
                    print!("{}", berth_core::sbatch_help::render_help(program));
                }
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
            let client = client(url, token)?;
            let cluster = berth::clusters::check(
                &client,
                "squeue",
                refused.clusters.as_deref(),
                Some("SLURM_CLUSTERS"),
            )
            .await?;
            let options = QueueOptions {
                cluster,
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
            commands::queue(&client, &options).await
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
            simulate_threads_per_core,
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
            config.simulate_threads_per_core = simulate_threads_per_core;
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
            threads_per_core,
            memory,
            demo,
            rate_limit_per_user,
            rate_limit_per_address,
            rate_limit_burst,
            rate_limit_burst_per_address,
            output_cap_mib,
            config,
        } => {
            let limits = berth_api::limits::Limits {
                per_principal_per_second: rate_limit_per_user,
                per_address_per_second: rate_limit_per_address,
                burst: rate_limit_burst.max(1),
                address_burst: rate_limit_burst_per_address.max(1),
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
                threads_per_core,
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
