//! The Slurm names: a link named `sbatch`, `squeue` … runs the matching command, and
//! speaks as Slurm's commands do when the command line is refused.

use std::ffi::OsString;
use std::path::PathBuf;

/// Rewrites the command line when called by a Slurm name: `sbatch …` is
/// `berth submit …`, `squeue` is `queue`, `scancel` is `cancel`, `sinfo` is `nodes`,
/// `sstat` is `stat`, `sprio` is `priority`, `sshare` is `share`, `sacct` is `acct`,
/// `sreport` is `report`; `srun`, `scontrol` and `strigger` keep their names.
pub(crate) fn slurm_alias(mut args: Vec<OsString>) -> Vec<OsString> {
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

/// The Slurm name this binary was called by (`sbatch`, `squeue` …), if any.
pub(crate) fn slurm_name(args: &[OsString]) -> Option<String> {
    let called = args
        .first()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))?;
    (slurm_alias(vec![OsString::from(&called)]).len() > 1).then_some(called)
}

/// Ends the process on a command line clap refused. Called by a Slurm name, it speaks as
/// Slurm's commands do (`squeue: unrecognized option '--foo'`, exit status 1); help and
/// version requests print and exit 0.
pub(crate) fn usage_error(error: clap::Error, slurm: Option<&str>) -> ! {
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
