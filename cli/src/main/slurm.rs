//! The Slurm names: a link named `sbatch`, `squeue` … runs the matching command, and
//! speaks as Slurm's commands do when the command line is refused.

use std::ffi::OsString;
use std::path::PathBuf;

/// The subcommand a Slurm name runs (`squeue` → `queue`), `None` for another name.
pub(crate) fn subcommand_of(name: &str) -> Option<&'static str> {
    Some(match name {
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
        _ => return None,
    })
}

/// The command line tree as a Slurm name shows it: its subcommand's help and usage say
/// `Usage: squeue …`, not `berth queue …`, and Berth's own options (`--url`, `--token` …)
/// are listed apart under "Berth options".
pub(crate) fn command_for(mut command: clap::Command, name: &str) -> clap::Command {
    let Some(sub) = subcommand_of(name) else {
        return command;
    };
    // clap names a subcommand's usage after its parent (`berth queue`): the usage it
    // would print, with the Slurm name in its place.
    let mut built = command.clone();
    built.build();
    let usage = built
        .find_subcommand_mut(sub)
        .map(|c| c.render_usage().to_string())
        .unwrap_or_default();
    let usage = usage
        .trim_start_matches("Usage: ")
        .replacen(&format!("berth {sub}"), name, 1);
    // getopt_long's rule: any unambiguous prefix of a long option is that option
    // (`squeue --us=bob`, `sacct --job 139`).
    command = command.mut_subcommand(sub, |c| {
        // …and an option given twice is taken as its last (getopt's, where clap
        // refuses a repeated flag).
        c.override_usage(usage)
            .display_name(name)
            .infer_long_args(true)
            .args_override_self(true)
    });
    for global in ["url", "token", "ca_file"] {
        command = command.mut_arg(global, |a| a.help_heading("Berth options"));
    }
    command
}

/// `NAME --usage` (Slurm's brief usage message) for a Slurm name whose command clap
/// parses: `Usage: NAME` and each option, short ones with their value
/// (`[-u user_list]`), long ones alone (`[--start]`), the flags without a value last
/// (`[-ahl]`), wrapped at 80 columns.
pub(crate) fn brief_usage(command: &clap::Command, name: &str) -> Option<String> {
    let mut command = command.clone();
    command.build();
    let sub = command.find_subcommand(subcommand_of(name)?)?;
    let mut items = Vec::new();
    let mut flags = String::new();
    let mut positionals = Vec::new();
    for arg in sub.get_arguments() {
        if arg.is_hide_set() || arg.is_global_set() {
            continue;
        }
        let id = arg.get_id().as_str();
        if matches!(id, "help" | "version") {
            continue;
        }
        let takes_value = matches!(
            arg.get_action(),
            clap::ArgAction::Set | clap::ArgAction::Append
        ) && arg.get_num_args().is_none_or(|n| n.takes_values());
        let value = arg
            .get_value_names()
            .and_then(|v| v.first())
            .map(|v| v.to_string().to_lowercase())
            .unwrap_or_else(|| id.replace('_', "-"));
        if arg.is_positional() {
            positionals.push(format!("[{value}]"));
            continue;
        }
        match (arg.get_short(), arg.get_long(), takes_value) {
            (Some(c), _, false) => flags.push(c),
            (Some(c), _, true) => items.push(format!("[-{c} {value}]")),
            (None, Some(long), false) => items.push(format!("[--{long}]")),
            (None, Some(long), true) => items.push(format!("[--{long}={value}]")),
            (None, None, _) => {}
        }
    }
    items.push("[--usage]".to_string());
    if !flags.is_empty() {
        let mut sorted: Vec<char> = flags.chars().collect();
        sorted.sort_unstable();
        items.push(format!("[-{}]", sorted.into_iter().collect::<String>()));
    }
    items.extend(positionals);
    let head = format!("Usage: {name} ");
    let indent = " ".repeat(head.len());
    let (mut out, mut width) = (head.clone(), head.len());
    for item in items {
        if width > head.len() && width + 1 + item.len() > 80 {
            out.push('\n');
            out.push_str(&indent);
            width = indent.len();
        } else if width > head.len() {
            out.push(' ');
            width += 1;
        }
        out.push_str(&item);
        width += item.len();
    }
    out.push('\n');
    Some(out)
}

/// The long options of the Slurm name's command that `arg` (`--s`, `--s=x`) is a prefix
/// of, when it is one of several (an exact name is never ambiguous).
pub(crate) fn ambiguous(command: &clap::Command, name: &str, arg: &str) -> Vec<String> {
    let Some(prefix) = arg.strip_prefix("--") else {
        return Vec::new();
    };
    let prefix = prefix.split('=').next().unwrap_or(prefix);
    let Some(sub) = subcommand_of(name).and_then(|s| command.find_subcommand(s)) else {
        return Vec::new();
    };
    let mut longs: Vec<String> = sub
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .flat_map(|a| {
            a.get_long()
                .into_iter()
                .chain(a.get_all_aliases().unwrap_or_default())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|l| l.starts_with(prefix))
        .collect();
    longs.sort();
    longs.dedup();
    if longs.iter().any(|l| l == prefix) {
        return Vec::new();
    }
    longs
}

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
    let Some(command) = subcommand_of(&called) else {
        return args;
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
pub(crate) fn usage_error(error: clap::Error, slurm: Option<&str>, command: &clap::Command) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let Some(name) = slurm else { error.exit() };
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => error.exit(),
        ErrorKind::UnknownArgument => {
            let arg = match error.get(ContextKind::InvalidArg) {
                Some(ContextValue::String(arg)) => arg.clone(),
                _ => String::new(),
            };
            let possible = ambiguous(command, name, &arg);
            if possible.len() > 1 {
                // getopt_long's words for a prefix of several options.
                let list: Vec<String> = possible.iter().map(|l| format!("'--{l}'")).collect();
                eprintln!(
                    "{name}: option '{}' is ambiguous; possibilities: {}",
                    arg.split('=').next().unwrap_or(&arg),
                    list.join(" ")
                );
            } else {
                eprintln!("{name}: unrecognized option '{arg}'");
            }
            eprintln!("Try \"{name} --help\" for more information");
        }
        _ => {
            let _ = error.print();
        }
    }
    std::process::exit(1);
}
