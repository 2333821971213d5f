//! `sbatch --help` and `sbatch --usage`: every option of the option table
//! ([`crate::sbatch::option_table`]) under the heading Slurm's `sbatch --help` puts it in
//! (Parallel run options, Constraint options, Consumable resources related options,
//! Affinity/Multi-core options, GPU scheduling options, Options provided by plugins,
//! Help options, Other options), with its value's name and a line saying what it does,
//! and what Berth does with it when that is not simply "honoured". The descriptions are
//! Berth's own words. The same data gives the documentation's option table.

use crate::sbatch::{option_table, Arity, OptionInfo, Support};

/// Where an option stands in `sbatch --help`, and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionHelp {
    /// The heading it is listed under (Slurm's).
    pub group: &'static str,
    /// The name of its value (`name` in `--account=name`); empty for a flag.
    pub value: &'static str,
    /// What it does, in a line.
    pub text: &'static str,
}

/// Slurm's headings, in the order `sbatch --help` prints them.
pub const GROUPS: &[&str] = &[
    PARALLEL, CONSTRAINT, CONSUMABLE, AFFINITY, GPU, PLUGINS, HELP, OTHER,
];

const PARALLEL: &str = "Parallel run options";
const CONSTRAINT: &str = "Constraint options";
const CONSUMABLE: &str = "Consumable resources related options";
const AFFINITY: &str = "Affinity/Multi-core options";
const GPU: &str = "GPU scheduling options";
const PLUGINS: &str = "Options provided by plugins";
const HELP: &str = "Help options";
const OTHER: &str = "Other options";

/// The help of `long` (an option of the table, without `--`); `None` for a name that is
/// no option (every option of the table has one: a test checks).
pub fn option_help(long: &str) -> Option<OptionHelp> {
    let (group, value, text) = match long {
        "array" => (PARALLEL, "indexes", "job array index values (N, N-M, N-M:S, lists; %LIMIT)"),
        "account" => (PARALLEL, "name", "charge the job to this account"),
        "bb" => (PARALLEL, "spec", "burst buffer specification"),
        "bbf" => (PARALLEL, "file_name", "burst buffer specification file"),
        "begin" => (PARALLEL, "time", "defer the job until this time (now+1hour, 16:00, …)"),
        "comment" => (PARALLEL, "text", "a comment kept with the job"),
        "cpu-freq" => (PARALLEL, "min[-max[:gov]]", "requested CPU frequency and governor"),
        "cpus-per-task" => (PARALLEL, "ncpus", "CPUs each task needs"),
        "dependency" => (PARALLEL, "type:jobid[:time]", "start only once the named jobs are in this condition (afterok, afterany, afternotok, aftercorr, singleton)"),
        "deadline" => (PARALLEL, "time", "remove the job if it cannot end before this time"),
        "delay-boot" => (PARALLEL, "mins", "delay rebooting nodes for the job's features"),
        "chdir" => (PARALLEL, "directory", "the batch script's working directory"),
        "error" => (PARALLEL, "err", "file for the batch script's standard error (patterns %j %x %A %a %N %u %%)"),
        "export" => (PARALLEL, "[ALL|NONE|]names", "environment variables given to the job (default ALL)"),
        "export-file" => (PARALLEL, "file|fd", "environment variables from a file"),
        "extra" => (PARALLEL, "expr", "arbitrary node matching string"),
        "get-user-env" => (PARALLEL, "[timeout]", "load the user's login environment"),
        "gid" => (PARALLEL, "group_id", "group to run the job as (root only)"),
        "gres" => (PARALLEL, "list", "generic resources per node (gpu[:type]:N, shard:N)"),
        "gres-flags" => (PARALLEL, "opts", "flags of generic resource placement"),
        "hold" => (PARALLEL, "", "submit the job held (scontrol release starts it)"),
        "ignore-pbs" => (PARALLEL, "", "ignore #PBS and #BSUB lines in the script"),
        "input" => (PARALLEL, "in", "file for the batch script's standard input"),
        "job-name" => (PARALLEL, "jobname", "the job's name"),
        "kill-on-invalid-dep" => (PARALLEL, "yes|no", "cancel the job if its dependency can never be met"),
        "no-kill" => (PARALLEL, "[off]", "keep running when an allocated node fails"),
        "licenses" => (PARALLEL, "names", "licenses the job needs"),
        "clusters" => (PARALLEL, "names", "clusters to send the job to (all, or this cluster's name)"),
        "cluster" => (PARALLEL, "names", "the same as -M/--clusters"),
        "container" => (PARALLEL, "path", "OCI container bundle to run the job in"),
        "container-id" => (PARALLEL, "id", "OCI container id"),
        "distribution" => (PARALLEL, "type", "how tasks are laid out over nodes (block)"),
        "mail-type" => (PARALLEL, "type", "mail on these state changes (BEGIN, END, FAIL, ALL)"),
        "mail-user" => (PARALLEL, "user", "whom to mail"),
        "mcs-label" => (PARALLEL, "mcs", "MCS label of the job"),
        "ntasks" => (PARALLEL, "ntasks", "number of tasks to run"),
        "nice" => (PARALLEL, "[value]", "lower the job's priority by this much (negative: admins and operators)"),
        "no-requeue" => (PARALLEL, "", "never requeue the job (a node failure ends it NODE_FAIL)"),
        "ntasks-per-node" => (PARALLEL, "n", "tasks to run on each node"),
        "nodes" => (PARALLEL, "N[-max]", "number of nodes to run on"),
        "output" => (PARALLEL, "out", "file for the batch script's standard output (patterns %j %x %A %a %N %u %%)"),
        "open-mode" => (PARALLEL, "append|truncate", "how the output files are opened"),
        "overcommit" => (PARALLEL, "", "allow more tasks than CPUs"),
        "oom-kill-step" => (PARALLEL, "[0|1]", "end a step when one of its tasks is OOM-killed"),
        "partition" => (PARALLEL, "partition", "partition(s) the job may run in"),
        "parsable" => (PARALLEL, "", "print only the job id on submission"),
        "priority" => (PARALLEL, "value", "set the job's priority"),
        "profile" => (PARALLEL, "value", "detailed profiling of the job"),
        "propagate" => (PARALLEL, "[rlimits]", "give the job the submitting shell's resource limits"),
        "qos" => (PARALLEL, "qos", "quality of service"),
        "quiet" => (PARALLEL, "", "print no informational messages"),
        "reboot" => (PARALLEL, "", "reboot the nodes before the job starts"),
        "requeue" => (PARALLEL, "", "allow the job to be requeued (the default)"),
        "oversubscribe" => (PARALLEL, "", "share nodes with other jobs beyond their resources"),
        "core-spec" => (PARALLEL, "cores", "cores kept for the system on each node"),
        "signal" => (PARALLEL, "[{R|B}:]num[@time]", "send this signal this many seconds before the time limit"),
        "spread-job" => (PARALLEL, "", "spread the job over as many nodes as possible"),
        "stepmgr" => (PARALLEL, "", "manage the job's steps on its first node"),
        "switches" => (PARALLEL, "max-switches[@max-time]", "the most leaf switches, and how long to wait for them"),
        "thread-spec" => (PARALLEL, "threads", "threads kept for the system on each node"),
        "time" => (PARALLEL, "time", "time limit (minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]], UNLIMITED)"),
        "time-min" => (PARALLEL, "time", "the least time limit the job accepts (it may be started with less than --time)"),
        "tres-bind" => (PARALLEL, "...", "task to TRES binding"),
        "tres-per-task" => (PARALLEL, "list", "TRES each task needs (cpu=N, gres/gpu=N)"),
        "uid" => (PARALLEL, "user_id", "user to run the job as (root only)"),
        "use-min-nodes" => (PARALLEL, "", "prefer the smaller node count of a range"),
        "verbose" => (PARALLEL, "", "more messages (repeat for more)"),
        "wait" => (PARALLEL, "", "wait for the job to end and exit with its exit code"),
        "wait-all-nodes" => (PARALLEL, "0|1", "start the script only once every node is ready"),
        "wckey" => (PARALLEL, "wckey", "workload characterisation key kept with the job"),
        "wrap" => (PARALLEL, "command", "run this command line as the batch script"),
        "test-only" => (PARALLEL, "", "say when and where the job would start; submit nothing"),
        "batch" => (PARALLEL, "list", "node features the batch script's node needs"),
        "acctg-freq" => (PARALLEL, "datatype=interval", "accounting and profiling sampling intervals"),
        "segment" => (PARALLEL, "size", "segment size of topology-aware placement"),
        "network" => (PARALLEL, "type", "network options of the job"),
        "cluster-constraint" => (CONSTRAINT, "[!]list", "features the cluster must have"),
        "contiguous" => (CONSTRAINT, "", "demand a contiguous range of nodes"),
        "constraint" => (CONSTRAINT, "list", "node features the job needs (a&b, a|b, [a|b], a*2)"),
        "nodefile" => (CONSTRAINT, "filename", "nodes to run on, from a file"),
        "mem" => (CONSTRAINT, "MB", "memory per node (K/M/G/T suffixes; 0: all of each node's usable memory)"),
        "mincpus" => (CONSTRAINT, "n", "the least CPUs a node must have"),
        "prefer" => (CONSTRAINT, "list", "node features preferred, not required"),
        "reservation" => (CONSTRAINT, "name", "run in this advance reservation"),
        "tmp" => (CONSTRAINT, "MB", "the least temporary disk a node must have"),
        "nodelist" => (CONSTRAINT, "hosts", "run on these nodes (node-[1-4])"),
        "exclude" => (CONSTRAINT, "hosts", "never run on these nodes"),
        "exclusive" => (CONSUMABLE, "[=user|mcs]", "take whole nodes"),
        "mem-per-cpu" => (CONSUMABLE, "MB", "memory per allocated CPU"),
        "sockets-per-node" => (AFFINITY, "S", "sockets per node to allocate"),
        "cores-per-socket" => (AFFINITY, "C", "cores per socket to allocate"),
        "threads-per-core" => (AFFINITY, "T", "threads per core to allocate"),
        "extra-node-info" => (AFFINITY, "S[:C[:T]]", "sockets, cores and threads at once"),
        "ntasks-per-core" => (AFFINITY, "n", "tasks to run on each core"),
        "ntasks-per-socket" => (AFFINITY, "n", "tasks to run on each socket"),
        "hint" => (AFFINITY, "hint", "placement hint (compute_bound, memory_bound, nomultithread, multithread)"),
        "mem-bind" => (AFFINITY, "type", "bind memory to locality domains"),
        "cpus-per-gpu" => (GPU, "n", "CPUs per allocated GPU"),
        "gpus" => (GPU, "[type:]n", "GPUs the job needs in all"),
        "gpu-bind" => (GPU, "type", "task to GPU binding"),
        "gpu-freq" => (GPU, "spec", "GPU frequency and voltage"),
        "gpus-per-node" => (GPU, "[type:]n", "GPUs per allocated node"),
        "gpus-per-socket" => (GPU, "[type:]n", "GPUs per allocated socket"),
        "gpus-per-task" => (GPU, "[type:]n", "GPUs each task needs"),
        "mem-per-gpu" => (GPU, "MB", "memory per allocated GPU"),
        "ntasks-per-gpu" => (GPU, "n", "tasks to run on each GPU"),
        "container-image" => (PLUGINS, "[USER@][REGISTRY#]IMAGE[:TAG]|PATH", "pyxis: the container image to run the job in"),
        "container-mounts" => (PLUGINS, "SRC:DST[:FLAGS][,...]", "pyxis: bind mounts into the container"),
        "container-workdir" => (PLUGINS, "PATH", "pyxis: working directory inside the container"),
        "container-name" => (PLUGINS, "NAME", "pyxis: name of a container the job's steps reuse"),
        "container-save" => (PLUGINS, "PATH", "pyxis: save the container's state to a file"),
        "container-env" => (PLUGINS, "NAME[,NAME...]", "pyxis: variables the container's environment keeps"),
        "container-mount-home" => (PLUGINS, "", "pyxis: mount the user's home directory"),
        "no-container-mount-home" => (PLUGINS, "", "pyxis: do not mount the user's home directory"),
        "container-remap-root" => (PLUGINS, "", "pyxis: be root inside the container"),
        "no-container-remap-root" => (PLUGINS, "", "pyxis: stay the user inside the container"),
        "container-entrypoint" => (PLUGINS, "", "pyxis: run the image's entrypoint"),
        "no-container-entrypoint" => (PLUGINS, "", "pyxis: do not run the image's entrypoint"),
        "container-entrypoint-log" => (PLUGINS, "", "pyxis: print the entrypoint's output"),
        "container-writable" => (PLUGINS, "", "pyxis: the container's filesystem is writable"),
        "container-readonly" => (PLUGINS, "", "pyxis: the container's filesystem is read-only"),
        "help" => (HELP, "", "show this help message"),
        "usage" => (HELP, "", "display a brief usage message"),
        "version" => (OTHER, "", "print the version and exit"),
        _ => return None,
    };
    Some(OptionHelp { group, value, text })
}

/// What Berth does with an option, in a few words for `--help` (`None`: honoured).
pub fn support_note(support: Support) -> Option<&'static str> {
    match support {
        Support::Honoured => None,
        Support::NoEffect(_) => Some("accepted, no effect on Berth"),
        Support::Partly(_) => Some("only Berth's behaviour accepted"),
        Support::Refused(_) => Some("refused on Berth"),
    }
}

/// The `-x, --long=value` column of an option.
fn flags(o: &OptionInfo, value: &str) -> String {
    let short = match o.short {
        Some(c) => format!("-{c}, "),
        None => "    ".to_string(),
    };
    let value = match (o.arity, value) {
        (_, "") | (Arity::Flag, _) => String::new(),
        (Arity::Optional, v) if v.starts_with('[') => v.to_string(),
        (Arity::Optional, v) => format!("[={v}]"),
        (Arity::Required, v) => format!("={v}"),
    };
    format!("{short}--{}{value}", o.long)
}

/// `sbatch --help` as `program` prints it (`sbatch`, or `berth submit` with Berth's own
/// `--url`/`--token` listed too): the usage line, then every option under its heading, in
/// the table's order within a heading, with a note where Berth does not simply honour it.
pub fn render_help(program: &str) -> String {
    let mut out = format!(
        "Usage: {program} [OPTIONS...] script [args...]\n       {program} [OPTIONS...] --wrap=\"command\"\n"
    );
    let mut table: Vec<OptionInfo> = option_table().collect();
    // Alphabetical within a heading, as Slurm lists them.
    table.sort_by_key(|o| o.long);
    for group in GROUPS {
        let mut lines = Vec::new();
        for o in &table {
            let Some(help) = option_help(o.long).filter(|h| h.group == *group) else {
                continue;
            };
            let left = flags(o, help.value);
            let text = match support_note(o.support) {
                Some(note) => format!("{} ({note})", help.text),
                None => help.text.to_string(),
            };
            let text = wrap(&text, 80 - 30);
            let mut rows = text.iter();
            let first = rows.next().map(String::as_str).unwrap_or_default();
            let mut line = if left.len() < 28 {
                format!("  {left:<28}{first}")
            } else {
                format!("  {left}\n  {:<28}{first}", "")
            };
            for row in rows {
                line.push_str(&format!("\n  {:<28}{row}", ""));
            }
            lines.push(line);
        }
        if !lines.is_empty() {
            out.push_str(&format!("\n{group}:\n"));
            for line in lines {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    if program != "sbatch" {
        out.push_str(
            "\nBerth's options:\n      --url=URL               the api (else BERTH_URL, else the client configuration)\n      --token=TOKEN           the bearer token (else BERTH_TOKEN)\n",
        );
    }
    out.push_str(
        "\nWhat Berth does with each option, and why where it differs from Slurm: the \
         documentation's option table (docs/src/slurm/options.md).\n",
    );
    out
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let last = lines.last_mut().expect("one line at least");
        if !last.is_empty() && last.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// `sbatch --usage`: the options Berth honours, short ones first, wrapped at 80 columns
/// under `Usage: {program}`, then `executable [args...]`.
pub fn render_usage(program: &str) -> String {
    let mut items = Vec::new();
    let mut table: Vec<OptionInfo> = option_table()
        .filter(|o| o.support == Support::Honoured)
        .filter(|o| !matches!(o.long, "help" | "usage" | "version"))
        .collect();
    table.sort_by_key(|o| (o.short.is_none(), o.short, o.long));
    for o in &table {
        let value = option_help(o.long).map(|h| h.value).unwrap_or_default();
        items.push(match (o.short, o.arity) {
            (Some(c), Arity::Required) => format!("[-{c} {}]", value.trim_start_matches('=')),
            (Some(c), _) => format!("[-{c}]"),
            (None, Arity::Required) => format!("[--{}={}]", o.long, value),
            (None, _) => format!("[--{}]", o.long),
        });
    }
    items.push("executable [args...]".to_string());
    let head = format!("Usage: {program} ");
    let indent = " ".repeat(head.len());
    let mut out = head.clone();
    let mut width = head.len();
    for item in items {
        if width + item.len() + 1 > 80 && width > head.len() {
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_has_help_under_a_known_heading() {
        for o in option_table() {
            let help = option_help(o.long).unwrap_or_else(|| panic!("--{} has no help", o.long));
            assert!(GROUPS.contains(&help.group), "--{}", o.long);
            assert!(!help.text.is_empty(), "--{}", o.long);
        }
        assert!(option_help("no-such-option").is_none());
    }

    #[test]
    fn help_lists_options_under_slurms_headings() {
        let help = render_help("sbatch");
        assert!(help.starts_with("Usage: sbatch "), "{help}");
        for needle in [
            "Parallel run options:",
            "Constraint options:",
            "GPU scheduling options:",
            "Help options:",
            "  -a, --array=indexes",
            "      --gres=list",
            "  -t, --time=time",
            "      --mem=MB",
            "      --usage",
            "  -G, --gpus=[type:]n",
            "--container-image",
        ] {
            assert!(help.contains(needle), "{needle:?} missing from:\n{help}");
        }
        // Where Berth differs, the line says so.
        let at = help.find("--uid=").unwrap();
        let refused = help[at..at + 200]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(refused.contains("(refused on Berth)"), "{refused}");
        assert!(
            help.lines().all(|l| l.len() <= 80 || !l.starts_with("   ")),
            "{help}"
        );
        assert!(!render_help("sbatch").contains("--url"));
        assert!(render_help("berth submit").contains("--url"));
    }

    #[test]
    fn usage_is_brief_and_wrapped() {
        let usage = render_usage("sbatch");
        assert!(usage.starts_with("Usage: sbatch [-A name]"), "{usage}");
        assert!(
            usage.contains("[-a indexes]") && usage.contains("[--gres=list]"),
            "{usage}"
        );
        assert!(usage.lines().all(|l| l.len() <= 80), "{usage}");
        assert!(
            usage.trim_end().ends_with("executable [args...]"),
            "{usage}"
        );
        assert!(
            !usage.contains("--uid"),
            "refused options are not offered: {usage}"
        );
    }
}

#[cfg(test)]
mod prefixes {
    use crate::sbatch::{long_option, option_table};

    /// Issue 29: sbatch takes every unambiguous prefix of each long option as that option
    /// (getopt_long's rule), and refuses an ambiguous one with getopt's words.
    #[test]
    fn every_long_option_takes_its_unambiguous_prefixes() {
        let longs: Vec<&str> = option_table().map(|o| o.long).collect();
        for long in &longs {
            let shortest = (1..=long.len())
                .find(|&k| longs.iter().filter(|l| l.starts_with(&long[..k])).count() == 1)
                .unwrap_or(long.len());
            for k in shortest..=long.len() {
                assert_eq!(
                    long_option(&long[..k]).map(|o| o.long),
                    Ok(*long),
                    "--{} is not --{long}",
                    &long[..k]
                );
            }
        }
        let ambiguous = long_option("gpus-per").unwrap_err();
        assert!(
            ambiguous
                .starts_with("option '--gpus-per' is ambiguous; possibilities: '--gpus-per-node'"),
            "{ambiguous}"
        );
    }
}
