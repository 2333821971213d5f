//! The srun options Slurm scripts pass that Berth honours only in part (issue 29): what
//! each one does here, and the `--container*` options it refuses by name.
//!
//! * `--comment`: outside an allocation, the comment of the job srun makes (as Slurm's
//!   srun, which puts it on the job it allocates); inside one, recorded nowhere (Slurm's
//!   steps have no comment either).
//! * `--accel-bind=[v][g][n]` (Slurm's older spelling of `--tres-bind`): `g` is
//!   `--gpu-bind=closest`; `n` (NICs) and `v` (verbose) have no effect.
//! * `--mem-bind`: accepted, no effect (no task binding plugin), with a warning as
//!   `--cpu-bind`.
//! * `--network`: the tasks get it as `SLURM_NETWORK`, as Slurm's srun sets it; no switch
//!   or network plugin acts on it.
//! * `--container`, `--container-id`, pyxis's `--container-*` (names from sbatch's option
//!   table, [`berth_core::sbatch::option_table`]): refused, naming the option, until
//!   Berth runs containers.

#[allow(unused_imports)]
use super::*;

/// The srun options of this module, flattened into [`SrunArgs`].
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StepExtraArgs {
    /// --comment: outside an allocation, the comment of the job srun makes (sacct's
    /// Comment); inside one, accepted with no effect (as Slurm's srun: a step has no
    /// comment).
    #[arg(long)]
    pub comment: Option<String>,
    /// --accel-bind=[v][g][n]: `g` binds each task to the GPUs closest to it, as
    /// --gpu-bind=closest (an explicit --gpu-bind wins); `n` (NICs) and `v` (verbose) are
    /// accepted with no effect.
    #[arg(long)]
    pub accel_bind: Option<String>,
    /// --mem-bind: accepted; memory is not bound to NUMA domains here (no task binding
    /// plugin): anything but `none` and `verbose` prints a warning.
    #[arg(long)]
    pub mem_bind: Option<String>,
    /// --network: the tasks get it as SLURM_NETWORK (as Slurm's srun sets it); Berth has
    /// no switch/network plugin to act on it.
    #[arg(long)]
    pub network: Option<String>,
    /// The `--container*` options: refused.
    #[command(flatten)]
    pub containers: ContainerArgs,
}

/// The first `--container*` option given (its long name and value), which srun refuses
/// ([`container_refusal`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerArgs {
    /// The option given first, by long name (`container-image`), with its value (`None`
    /// for a flag).
    pub given: Option<(String, Option<String>)>,
}

/// srun's `--container*` options: sbatch's refused `--container*` and
/// `--no-container*` options (Slurm's OCI `--container`, `--container-id`, and pyxis's),
/// with whether each takes a value.
fn container_options() -> impl Iterator<Item = (&'static str, bool)> {
    berth_core::sbatch::option_table()
        .filter(|o| {
            (o.long.starts_with("container") || o.long.starts_with("no-container"))
                && matches!(o.support, berth_core::sbatch::Support::Refused(_))
        })
        .map(|o| (o.long, o.arity != berth_core::sbatch::Arity::Flag))
}

/// The value a `--container*` option takes, as Slurm's and pyxis's help name it.
fn container_value(name: &str) -> &'static str {
    match name {
        "container" | "container-save" => "PATH",
        "container-id" => "ID",
        "container-image" => "IMAGE",
        "container-mounts" => "MOUNTS",
        "container-workdir" => "DIR",
        "container-name" => "NAME",
        "container-env" => "NAMES",
        _ => "VALUE",
    }
}

/// Why srun refuses `--NAME` (one of [`container_options`]).
fn container_reason(name: &str) -> &'static str {
    if matches!(name, "container" | "container-id") {
        "OCI containers (Slurm's oci.conf) are not available on Berth yet: run the \
         container runtime as the step's command (srun apptainer exec IMAGE COMMAND)"
    } else {
        "the pyxis plugin (enroot containers) is not available on Berth yet: run the \
         container runtime as the step's command (srun enroot start IMAGE COMMAND, srun \
         apptainer exec IMAGE COMMAND)"
    }
}

impl clap::FromArgMatches for ContainerArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut args = ContainerArgs::default();
        args.update_from_arg_matches(matches)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        for (name, takes_value) in container_options() {
            if self.given.is_some() {
                break;
            }
            if takes_value {
                if let Some(value) = matches.get_one::<String>(name) {
                    self.given = Some((name.to_string(), Some(value.clone())));
                }
            } else if matches.get_flag(name) {
                self.given = Some((name.to_string(), None));
            }
        }
        Ok(())
    }
}

impl clap::Args for ContainerArgs {
    fn augment_args(mut command: clap::Command) -> clap::Command {
        for (name, takes_value) in container_options() {
            let value = if takes_value {
                format!("={}", container_value(name))
            } else {
                String::new()
            };
            let arg = clap::Arg::new(name)
                .long(name)
                .help(format!(
                    "--{name}{value}: refused: {}",
                    container_reason(name)
                ))
                .help_heading("Container options");
            command = command.arg(if takes_value {
                arg.action(clap::ArgAction::Set)
                    .value_name(container_value(name))
            } else {
                arg.action(clap::ArgAction::SetTrue)
            });
        }
        command
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

/// The refusal of a `--container*` option given to srun, naming it.
pub fn container_refusal(args: &ContainerArgs) -> Option<String> {
    let (name, value) = args.given.as_ref()?;
    let given = match value {
        Some(value) => format!("--{name}={value}"),
        None => format!("--{name}"),
    };
    Some(format!("{given}: {}", container_reason(name)))
}

/// What `--accel-bind` asks for, as Slurm reads it: any of `v` (verbose), `g` (closest
/// GPUs), `n` (closest NICs) anywhere in the value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccelBind {
    /// `v`.
    pub verbose: bool,
    /// `g`.
    pub closest_gpu: bool,
    /// `n`.
    pub closest_nic: bool,
}

/// Parses `--accel-bind` as Slurm's srun does (the letters `v`, `g`, `n` anywhere).
///
/// # Errors
/// A value with none of them: Slurm's "Invalid --accel-bind specification".
pub fn parse_accel_bind(value: &str) -> anyhow::Result<AccelBind> {
    let bind = AccelBind {
        verbose: value.contains('v'),
        closest_gpu: value.contains('g'),
        closest_nic: value.contains('n'),
    };
    if bind == AccelBind::default() {
        bail!("Invalid --accel-bind specification ({value:?}: v, g and/or n)");
    }
    Ok(bind)
}

/// The `--gpu-bind` a step gets: `--gpu-bind` as given, else `closest` for
/// `--accel-bind` with `g`.
pub fn effective_gpu_bind(args: &SrunArgs) -> Option<String> {
    args.gpu_bind.clone().or_else(|| {
        args.extra
            .accel_bind
            .as_deref()
            .and_then(|v| parse_accel_bind(v).ok())
            .filter(|b| b.closest_gpu)
            .map(|_| "closest".to_string())
    })
}

/// Whether a `--cpu-bind` or `--mem-bind` value asks for no binding (`none`, `no`,
/// `verbose`, `quiet` and their letters), so that nothing need be said about it.
pub fn binds_nothing(value: &str) -> bool {
    value.split(',').all(|w| {
        matches!(
            w.to_ascii_lowercase().as_str(),
            "none" | "no" | "verbose" | "v" | "quiet" | "q"
        )
    })
}

/// Checks this module's options: refuses a `--container*` option and a bad
/// `--accel-bind`, warns (unless `-Q`) about a `--mem-bind` that would bind.
///
/// # Errors
/// The refusal, naming the option.
pub fn check_extra_options(args: &SrunArgs) -> anyhow::Result<()> {
    if let Some(refusal) = container_refusal(&args.extra.containers) {
        bail!("{refusal}");
    }
    if let Some(value) = &args.extra.accel_bind {
        parse_accel_bind(value)?;
    }
    if let Some(bind) = &args.extra.mem_bind {
        if !binds_nothing(bind) && !args.quiet {
            eprintln!(
                "srun: warning: --mem-bind={bind}: memory is not bound to NUMA domains here \
                 (task/none); each task may use all of the job's memory on its node"
            );
        }
    }
    Ok(())
}
