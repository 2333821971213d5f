//! `berth`: the server roles (`berth server`), the node agent (`berth worker`), the
//! one-process development cluster (`berth dev`) and the client commands (`submit`,
//! `queue`, `nodes`, `show`, `logs`, `cancel`, `token`, `srun`, `scontrol`). Called as
//! `sbatch`, `squeue`, `scancel`, `sinfo`, `srun` or `scontrol` (a link with that name),
//! it runs the matching command.

mod args;
mod dispatch;
#[cfg(test)]
mod docs;
mod slurm;
#[cfg(test)]
mod tests;

use args::{Cli, Command, LogFormat};
use clap::{CommandFactory, FromArgMatches};
use dispatch::run;
use slurm::{slurm_alias, slurm_name, usage_error};
use std::ffi::OsString;
use std::time::Duration;

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
    // Secrets from NAME_FILE or systemd's credentials, before anything reads them.
    if let Err(e) = berth::secrets::load_from_files() {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
    let slurm = slurm_name(&argv);
    let mut command = Cli::command();
    if let Some(name) = slurm.as_deref() {
        command = slurm::command_for(command, name);
        // Slurm's `--usage` (sbatch's is its own: berth_core::sbatch_help).
        if name != "sbatch" && argv.iter().skip(1).any(|a| a == "--usage") {
            if let Some(usage) = slurm::brief_usage(&command, name) {
                print!("{usage}");
                std::process::exit(0);
            }
        }
    }
    let cli = match command
        .clone()
        .try_get_matches_from(slurm_alias(argv))
        .and_then(|matches| Cli::from_arg_matches(&matches))
    {
        Ok(cli) => cli,
        Err(e) => usage_error(e, slurm.as_deref(), &command),
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
