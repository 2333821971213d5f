//! The `#SBATCH` directive and `sbatch` command-line parser.
//!
//! Slurm's rules, as `sbatch` applies them:
//!
//! * `#SBATCH` directives (the word at column 0, followed by a blank or the end of the
//!   line) are read from the top of the script until the first line that is a command,
//!   i.e. neither blank nor a comment nor the shebang; later directives are ignored. Any
//!   other comment (`##SBATCH`, `# #SBATCH`, ` #SBATCH`, `#SBATCHX`) is just a comment.
//! * A directive line may hold several options. Words are split as a shell does, with
//!   `'single'` and `"double"` quotes and `\` escapes; a `#` that begins a word starts a
//!   trailing comment.
//! * `--opt=value` and `--opt value`; short options `-N 2`, `-N2`, and grouped flags
//!   (`-HO`). Long options may be abbreviated to any unambiguous prefix (`--err` is
//!   `--error`); an exact name wins over longer ones (`--ntasks`, not
//!   `--ntasks-per-node`). Options whose value is optional (`--exclusive`, `--nice`) take
//!   one only as `--opt=value`; flags never take the next word.
//! * Unlike `sbatch`, which refuses stray words on a directive line, Berth joins bare words
//!   that follow an option's value on the same directive line to that value, with one
//!   space: `#SBATCH --job-name={{ job_name }}` names the job `{{ job_name }}`. On the
//!   command line (separate argv words) a stray word is refused.
//! * Command-line options are applied after the script's directives, so they win.
//! * Every option of Slurm's sbatch (and pyxis's `--container-*`) is in the table
//!   ([`option_table`]): honoured, accepted without effect where that is what Slurm does on
//!   a cluster like Berth's (the table says why), or refused naming the option and why. An
//!   option that is not in the table is refused in getopt's words (`unrecognized option
//!   '--foo'`) and takes no value with it. The `sbatch` command's own options
//!   (`--test-only`, `-W/--wait`, `-Q`, `-v`, `-h`, `-V`) land in [`ClientOptions`].
//!
//! Every refusal is an [`SbatchError`] naming the script line (or the command line), the
//! option as written and why.

use crate::duration::parse_duration;
use crate::spec::{JobSpec, OpenMode};

/// A refused option: names the script line (1-based) or the command line, the option as
/// written, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {option}: {message}", match line { Some(l) => format!("line {l}"), None => "command line".to_string() })]
pub struct SbatchError {
    /// The 1-based line of the script, or `None` for a command-line option.
    pub line: Option<usize>,
    /// The option as written (`--nodes={{ nodes }}`); `script` for a problem with the
    /// script itself (no `#!` line).
    pub option: String,
    /// Why it is refused.
    pub message: String,
}

impl SbatchError {
    fn new(line: Option<usize>, option: impl Into<String>, message: impl Into<String>) -> Self {
        SbatchError {
            line,
            option: option.into(),
            message: message.into(),
        }
    }
}

/// A parsed batch submission.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchJob {
    /// The options.
    pub spec: JobSpec,
    /// The script to run (generated from `--wrap` when there was none).
    pub script: String,
    /// The `sbatch` command's own options (`--test-only`, `--wait` …).
    pub client: ClientOptions,
}

/// The `sbatch` command's own options, from the command line or `#SBATCH` lines: they
/// change what the command does, not the job (`--parsable`, being stored with the job
/// since Berth's first version, is in [`JobSpec::parsable`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientOptions {
    /// `--test-only`: validate the job and print when it would start; create nothing.
    pub test_only: bool,
    /// `-W/--wait`: return when the job ends, with its exit code.
    pub wait: bool,
    /// `-Q/--quiet`: print no informational messages.
    pub quiet: bool,
    /// `-v/--verbose`, counted.
    pub verbose: u32,
    /// `-h/--help/--usage`.
    pub help: bool,
    /// `-V/--version`.
    pub version: bool,
    /// `-M/--clusters`: `all` or the cluster's own name (Berth is one cluster; the
    /// submission checks it against the cluster's name and refuses another,
    /// [`crate::cluster::check_clusters`]); `sbatch` then says `on cluster NAME`.
    pub clusters: Option<String>,
}

/// The script `sbatch --wrap=COMMAND` submits, in Slurm's words:
/// `#!/bin/sh\n# This script was created by sbatch --wrap.\n\nCOMMAND\n`.
pub fn wrap_script(command: &str) -> String {
    format!("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{command}\n")
}

/// Parses a batch script's `#SBATCH` lines and command-line style options (command line
/// wins). `args` are argv words as a shell would pass them to `sbatch`, options only
/// (`["--gres=gpu:2", "-t", "10", "--wrap", "echo hi"]`).
///
/// With an empty (or all-blank) `script`, `--wrap` must be given and the job's script is
/// [`wrap_script`] of its command.
///
/// # Errors
///
/// [`SbatchError`], the first refusal found, script lines first:
/// * the script does not start with `#!` (option `script`, line 1), contains DOS line
///   breaks or a NUL byte (option `script`), or is empty while `--wrap` is absent
///   (option `script`, no line);
/// * an unknown or ambiguous option, a missing value or a bad value (line of the
///   directive, or `None` for `args`);
/// * `--wrap` in a directive, or `--wrap` given together with a script (option `--wrap`).
pub fn parse_batch(script: &str, args: &[String]) -> Result<BatchJob, SbatchError> {
    let mut spec = JobSpec::default();
    let mut client = ClientOptions::default();
    let has_script = !script.trim().is_empty();
    if has_script {
        check_script(script)?;
        apply_directives(&mut spec, &mut client, script)?;
    }
    apply_argv(&mut spec, &mut client, args)?;
    let script = match (&spec.wrap, has_script) {
        (Some(_), true) => {
            return Err(SbatchError::new(
                None,
                "--wrap",
                "--wrap cannot be used together with a batch script",
            ))
        }
        (Some(command), false) => wrap_script(command),
        (None, true) => script.to_string(),
        (None, false) => {
            return Err(SbatchError::new(
                None,
                "script",
                "no batch script was given and no --wrap command",
            ))
        }
    };
    Ok(BatchJob {
        spec,
        script,
        client,
    })
}

/// Parses command-line options alone (argv words, as for [`parse_batch`]), e.g. for
/// `sbatch --wrap=…` or to validate options sent beside a script.
///
/// # Errors
///
/// [`SbatchError`] with `line: None` for an unknown or ambiguous option, a missing or bad
/// value, or a stray word that is not an option.
pub fn parse_args(args: &[String]) -> Result<JobSpec, SbatchError> {
    let mut spec = JobSpec::default();
    apply_argv(&mut spec, &mut ClientOptions::default(), args)?;
    Ok(spec)
}

/// Parses only the `#SBATCH` directives of a script (no `#!` check, no command line).
///
/// # Errors
///
/// [`SbatchError`] naming the first refused directive line.
pub fn parse_directives(script: &str) -> Result<JobSpec, SbatchError> {
    let mut spec = JobSpec::default();
    apply_directives(&mut spec, &mut ClientOptions::default(), script)?;
    Ok(spec)
}

/// Copies every field that `over` sets (`Some`, or `true` for flags) onto `base`; fields
/// `over` leaves unset keep `base`'s value. Used when a REST client sends a structured spec
/// beside a script: the structured fields win, as the command line does.
///
/// A flag cannot be switched off this way (`false` means "not given"), nor a limit reset
/// to "unlimited" (`None` means "not given").
pub fn apply_spec_overrides(base: &mut JobSpec, over: &JobSpec) {
    // Destructured so that a field added to JobSpec fails to compile here until handled.
    let JobSpec {
        job_name,
        partition,
        nodes,
        nodes_max,
        ntasks,
        ntasks_per_node,
        cpus_per_task,
        cpus_per_gpu,
        mem_mib,
        mem_per_cpu_mib,
        mem_per_gpu_mib,
        gres,
        gpu_type,
        gpus,
        gpus_per_node,
        gpus_per_task,
        time_limit,
        time_min,
        output,
        error,
        chdir,
        exclusive,
        constraint,
        nodelist,
        exclude,
        account,
        qos,
        comment,
        wckey,
        export,
        open_mode,
        array,
        dependency,
        requeue,
        signal,
        hold,
        begin,
        nice,
        hint,
        reservation,
        mail_type,
        mail_user,
        wait_all_nodes,
        overcommit,
        wrap,
        parsable,
    } = over;
    macro_rules! some {
        ($($f:ident),* $(,)?) => {$(
            if let Some(v) = $f {
                base.$f = Some(v.clone());
            }
        )*};
    }
    macro_rules! flag {
        ($($f:ident),* $(,)?) => {$(
            if *$f {
                base.$f = true;
            }
        )*};
    }
    some!(
        job_name,
        partition,
        nodes,
        nodes_max,
        ntasks,
        ntasks_per_node,
        cpus_per_task,
        cpus_per_gpu,
        mem_mib,
        mem_per_cpu_mib,
        mem_per_gpu_mib,
        gres,
        gpu_type,
        gpus,
        gpus_per_node,
        gpus_per_task,
        time_limit,
        time_min,
        output,
        error,
        chdir,
        constraint,
        nodelist,
        exclude,
        account,
        qos,
        comment,
        wckey,
        export,
        open_mode,
        array,
        dependency,
        requeue,
        signal,
        begin,
        nice,
        hint,
        reservation,
        mail_type,
        mail_user,
        wait_all_nodes,
        wrap,
    );
    flag!(exclusive, hold, overcommit, parsable);
}

/// The long names of every option in the table (honoured, accepted without effect,
/// client-side or refused by name), without the leading `--`.
pub fn supported_options() -> impl Iterator<Item = &'static str> {
    OPTIONS.iter().map(|d| d.long)
}

/// How an option takes its value (`sbatch`'s getopt rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// A flag: never takes a value (`--hold`, `-H`).
    Flag,
    /// Takes a value, attached (`--time=10`, `-t10`) or as the next word (`-t 10`).
    Required,
    /// Takes a value only when attached with `=` (`--exclusive=user`, `--nice=5`).
    Optional,
}

/// What Berth does with an option of `sbatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Stored with the job and acted on (or, for the client's own options, acted on by
    /// the `sbatch` command).
    Honoured,
    /// Accepted, and has no effect: what Slurm itself would do on a cluster like Berth's;
    /// the text says why.
    NoEffect(&'static str),
    /// Accepted only with the values Berth behaves as (`-m block`); others are refused
    /// with the text.
    Partly(&'static str),
    /// Refused whatever its value; the text says why.
    Refused(&'static str),
}

/// One `sbatch` option as Berth knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionInfo {
    /// The long name, without `--` (`job-name`).
    pub long: &'static str,
    /// The short letter (`J`), if it has one.
    pub short: Option<char>,
    /// How it takes a value.
    pub arity: Arity,
    /// What Berth does with it.
    pub support: Support,
}

/// Every `sbatch` option Slurm documents (and pyxis's `--container-*` ones), with what
/// Berth does with each. See <https://slurm.schedmd.com/sbatch.html>.
pub fn option_table() -> impl Iterator<Item = OptionInfo> {
    OPTIONS.iter().map(|d| OptionInfo {
        long: d.long,
        short: d.short,
        arity: d.arg,
        support: match d.opt {
            Opt::Refused(why) => Support::Refused(why),
            Opt::NoEffect(why) => Support::NoEffect(why),
            Opt::Only(_, why) => Support::Partly(why),
            Opt::Hint => Support::Partly(HINT_NOT_PLACED),
            _ => Support::Honoured,
        },
    })
}

/// Finds a long option by its exact name or an unambiguous prefix, as `sbatch` does
/// (`--err` is `--error`).
///
/// # Errors
/// Slurm's words: `unrecognized option '--foo'`, or `option '--gpu' is ambiguous;
/// possibilities: …`.
pub fn long_option(name: &str) -> Result<OptionInfo, String> {
    let d = lookup_long(name)?;
    Ok(option_table()
        .find(|o| o.long == d.long)
        .expect("every definition is in the table"))
}

/// Finds a short option by its letter.
///
/// # Errors
/// getopt's words: `invalid option -- 'Z'`.
pub fn short_option(c: char) -> Result<OptionInfo, String> {
    let d = lookup_short(c)?;
    Ok(option_table()
        .find(|o| o.long == d.long)
        .expect("every definition is in the table"))
}

// ---------------------------------------------------------------------------------------
// The option table.

use Arity as Arg;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opt {
    JobName,
    Partition,
    Nodes,
    Ntasks,
    NtasksPerNode,
    CpusPerTask,
    CpusPerGpu,
    Mem,
    MemPerCpu,
    MemPerGpu,
    Gres,
    Gpus,
    GpusPerNode,
    GpusPerTask,
    TresPerTask,
    Time,
    TimeMin,
    Output,
    Error,
    Chdir,
    Exclusive,
    Constraint,
    Nodelist,
    Exclude,
    Account,
    Qos,
    Comment,
    Wckey,
    Export,
    OpenMode,
    Array,
    Dependency,
    Requeue,
    NoRequeue,
    Signal,
    Hold,
    Begin,
    Nice,
    Hint,
    Reservation,
    MailType,
    MailUser,
    WaitAllNodes,
    Overcommit,
    Wrap,
    Parsable,
    Clusters,
    TestOnly,
    Wait,
    Quiet,
    Verbose,
    Help,
    Version,
    /// Accepted with no effect; the text says why (checked by [`check_no_effect`]).
    NoEffect(&'static str),
    /// Accepted only with the value(s) the first text names (`|`-separated, any case);
    /// otherwise refused with the second.
    Only(&'static str, &'static str),
    /// Refused, with why.
    Refused(&'static str),
}

struct OptDef {
    long: &'static str,
    short: Option<char>,
    arg: Arg,
    opt: Opt,
}

const fn def(long: &'static str, short: Option<char>, arg: Arg, opt: Opt) -> OptDef {
    OptDef {
        long,
        short,
        arg,
        opt,
    }
}

const NO_CPU_LAYOUT: &str = "Berth does not place jobs by sockets or by counts of cores \
    or threads: ask for CPUs with -c/--cpus-per-task (or --cpus-per-gpu), memory with --mem, \
    and one thread per core with --hint=nomultithread";
/// What `--hint` does on Berth (issue 29).
const HINT_NOT_PLACED: &str = "nomultithread (and compute_bound, memory_bound: one thread \
    per core too, as in Slurm) gives the job whole cores and runs it on one thread of each \
    (its CPUs count every thread of its cores); the cores per socket of compute_bound and \
    memory_bound are not placed";
const NO_FEDERATION: &str = "Berth is a single cluster (no multi-cluster or federation \
    operation): leave the option out";
const NO_BURST_BUFFER: &str = "Berth has no burst buffer plugin";
const NO_OCI: &str =
    "OCI containers (Slurm's oci.conf) are not available on Berth: run the container \
     runtime from the batch script";
const NO_PYXIS: &str = "the pyxis plugin (enroot containers) is not available on Berth: run \
    the container runtime (enroot, apptainer, podman) from the batch script";
const NO_TOPOLOGY: &str = "Berth does not place jobs by network topology (no topology plugin)";
const NO_BINDING: &str = "Berth does not bind tasks to CPUs, memory or GPUs by this option \
    (no task binding plugin)";
const NO_OTHER_USER: &str =
    "only root may submit for another user or group in Slurm; Berth takes the user from \
     the token";
const NO_HOST_FILES: &str = "Berth's api cannot read files on the submitting machine: list \
    the nodes with -w/--nodelist instead";

const OPTIONS: &[OptDef] = &[
    def("job-name", Some('J'), Arg::Required, Opt::JobName),
    def("partition", Some('p'), Arg::Required, Opt::Partition),
    def("nodes", Some('N'), Arg::Required, Opt::Nodes),
    def("ntasks", Some('n'), Arg::Required, Opt::Ntasks),
    def("ntasks-per-node", None, Arg::Required, Opt::NtasksPerNode),
    def("cpus-per-task", Some('c'), Arg::Required, Opt::CpusPerTask),
    def("cpus-per-gpu", None, Arg::Required, Opt::CpusPerGpu),
    def("mem", None, Arg::Required, Opt::Mem),
    def("mem-per-cpu", None, Arg::Required, Opt::MemPerCpu),
    def("mem-per-gpu", None, Arg::Required, Opt::MemPerGpu),
    def("gres", None, Arg::Required, Opt::Gres),
    def("gpus", Some('G'), Arg::Required, Opt::Gpus),
    def("gpus-per-node", None, Arg::Required, Opt::GpusPerNode),
    def("gpus-per-task", None, Arg::Required, Opt::GpusPerTask),
    def("tres-per-task", None, Arg::Required, Opt::TresPerTask),
    def("time", Some('t'), Arg::Required, Opt::Time),
    def("time-min", None, Arg::Required, Opt::TimeMin),
    def("output", Some('o'), Arg::Required, Opt::Output),
    def("error", Some('e'), Arg::Required, Opt::Error),
    def("chdir", Some('D'), Arg::Required, Opt::Chdir),
    def("exclusive", None, Arg::Optional, Opt::Exclusive),
    def("constraint", Some('C'), Arg::Required, Opt::Constraint),
    def("nodelist", Some('w'), Arg::Required, Opt::Nodelist),
    def("exclude", Some('x'), Arg::Required, Opt::Exclude),
    def("account", Some('A'), Arg::Required, Opt::Account),
    def("qos", Some('q'), Arg::Required, Opt::Qos),
    def("comment", None, Arg::Required, Opt::Comment),
    def("wckey", None, Arg::Required, Opt::Wckey),
    def("export", None, Arg::Required, Opt::Export),
    def("open-mode", None, Arg::Required, Opt::OpenMode),
    def("array", Some('a'), Arg::Required, Opt::Array),
    def("dependency", Some('d'), Arg::Required, Opt::Dependency),
    def("requeue", None, Arg::Flag, Opt::Requeue),
    def("no-requeue", None, Arg::Flag, Opt::NoRequeue),
    def("signal", None, Arg::Required, Opt::Signal),
    def("hold", Some('H'), Arg::Flag, Opt::Hold),
    def("begin", Some('b'), Arg::Required, Opt::Begin),
    def("nice", None, Arg::Optional, Opt::Nice),
    def("hint", None, Arg::Required, Opt::Hint),
    def("reservation", None, Arg::Required, Opt::Reservation),
    def("mail-type", None, Arg::Required, Opt::MailType),
    def("mail-user", None, Arg::Required, Opt::MailUser),
    def("wait-all-nodes", None, Arg::Required, Opt::WaitAllNodes),
    def("overcommit", Some('O'), Arg::Flag, Opt::Overcommit),
    def("wrap", None, Arg::Required, Opt::Wrap),
    def("parsable", None, Arg::Flag, Opt::Parsable),
    // The sbatch command's own options.
    def("test-only", None, Arg::Flag, Opt::TestOnly),
    def("wait", Some('W'), Arg::Flag, Opt::Wait),
    def("quiet", Some('Q'), Arg::Flag, Opt::Quiet),
    def("verbose", Some('v'), Arg::Flag, Opt::Verbose),
    def("help", Some('h'), Arg::Flag, Opt::Help),
    def("usage", None, Arg::Flag, Opt::Help),
    def("version", Some('V'), Arg::Flag, Opt::Version),
    // Accepted with no effect: what Slurm does on a cluster like Berth's.
    def(
        "get-user-env",
        None,
        Arg::Optional,
        Opt::NoEffect(
            "the job's environment is already the submitter's, captured by sbatch at \
             submission (--export=ALL); Slurm loads a login environment only for root's \
             submissions with --uid",
        ),
    ),
    def(
        "ignore-pbs",
        None,
        Arg::Flag,
        Opt::NoEffect("Berth never reads #PBS directives"),
    ),
    def(
        "use-min-nodes",
        None,
        Arg::Flag,
        Opt::NoEffect("Berth always gives a job the smallest node count of its -N range"),
    ),
    def(
        "delay-boot",
        None,
        Arg::Required,
        Opt::NoEffect("Berth never reboots nodes to satisfy a job's features"),
    ),
    // Accepted with the value Berth behaves as, refused with any other.
    def(
        "distribution",
        Some('m'),
        Arg::Required,
        Opt::Only(
            "block",
            "Berth lays tasks out in blocks (Slurm's default, -m block) and supports no \
             other distribution",
        ),
    ),
    def(
        "input",
        Some('i'),
        Arg::Required,
        Opt::Only(
            "/dev/null",
            "the batch script's standard input is /dev/null on Berth (Slurm's default); \
             read the file from the script instead",
        ),
    ),
    def(
        "kill-on-invalid-dep",
        None,
        Arg::Required,
        Opt::Refused(
            "not settable per job on Berth: the scheduler's kill_invalid_depend setting \
             decides for every job whether one whose dependency can never be satisfied is \
             cancelled or stays pending (DependencyNeverSatisfied)",
        ),
    ),
    def(
        "propagate",
        None,
        Arg::Optional,
        Opt::Only(
            "NONE",
            "Berth does not copy the submitting shell's resource limits (ulimit) to the job; \
             only --propagate=NONE is accepted",
        ),
    ),
    // Refused, with why.
    def(
        "acctg-freq",
        None,
        Arg::Required,
        Opt::Refused("Berth samples jobs at an interval the cluster sets, not per job"),
    ),
    def(
        "batch",
        None,
        Arg::Required,
        Opt::Refused("Berth runs the batch script on the job's first node; it cannot be chosen by feature"),
    ),
    def("bb", None, Arg::Required, Opt::Refused(NO_BURST_BUFFER)),
    def("bbf", None, Arg::Required, Opt::Refused(NO_BURST_BUFFER)),
    def(
        "cluster-constraint",
        None,
        Arg::Required,
        Opt::Refused(NO_FEDERATION),
    ),
    def("clusters", Some('M'), Arg::Required, Opt::Clusters),
    def("cluster", None, Arg::Required, Opt::Clusters),
    def("container", None, Arg::Required, Opt::Refused(NO_OCI)),
    def("container-id", None, Arg::Required, Opt::Refused(NO_OCI)),
    def(
        "contiguous",
        None,
        Arg::Flag,
        Opt::Refused("Berth does not place jobs on contiguous nodes"),
    ),
    def(
        "core-spec",
        Some('S'),
        Arg::Required,
        Opt::Refused("Berth does not reserve cores for system use per job (the node's CoreSpecCount does)"),
    ),
    def("cores-per-socket", None, Arg::Required, Opt::Refused(NO_CPU_LAYOUT)),
    def(
        "cpu-freq",
        None,
        Arg::Required,
        Opt::Refused("Berth does not set CPU frequencies or governors"),
    ),
    def(
        "deadline",
        None,
        Arg::Required,
        Opt::Refused("Berth does not end jobs at a deadline (no DEADLINE handling)"),
    ),
    def(
        "export-file",
        None,
        Arg::Required,
        Opt::Refused("not supported by Berth's sbatch: pass the variables with --export=NAME=value"),
    ),
    def(
        "extra",
        None,
        Arg::Required,
        Opt::Refused("Berth has no node Extra fields to match"),
    ),
    def("extra-node-info", Some('B'), Arg::Required, Opt::Refused(NO_CPU_LAYOUT)),
    def("gid", None, Arg::Required, Opt::Refused(NO_OTHER_USER)),
    def("gpu-bind", None, Arg::Required, Opt::Refused(NO_BINDING)),
    def(
        "gpu-freq",
        None,
        Arg::Required,
        Opt::Refused("Berth does not set GPU clocks"),
    ),
    def("gpus-per-socket", None, Arg::Required, Opt::Refused(NO_CPU_LAYOUT)),
    def(
        "gres-flags",
        None,
        Arg::Required,
        Opt::Refused("Berth places GPUs close to each other on its own; GRES binding flags are not supported"),
    ),
    def(
        "licenses",
        Some('L'),
        Arg::Required,
        Opt::Refused("Berth has no licenses to allocate"),
    ),
    def(
        "mcs-label",
        None,
        Arg::Required,
        Opt::Refused("Berth has no MCS plugin"),
    ),
    def("mem-bind", None, Arg::Required, Opt::Refused(NO_BINDING)),
    def(
        "mincpus",
        None,
        Arg::Required,
        Opt::Refused("not supported: ask for CPUs with -c/--cpus-per-task and --ntasks-per-node"),
    ),
    def(
        "network",
        None,
        Arg::Required,
        Opt::Refused("Berth has no switch/network plugin"),
    ),
    def(
        "no-kill",
        Some('k'),
        Arg::Optional,
        Opt::Refused(
            "Berth ends a job whose node fails (NODE_FAIL; requeued when requeueable): it \
             does not keep the job running on the nodes left",
        ),
    ),
    def("nodefile", Some('F'), Arg::Required, Opt::Refused(NO_HOST_FILES)),
    def("ntasks-per-core", None, Arg::Required, Opt::Refused(NO_CPU_LAYOUT)),
    def(
        "ntasks-per-gpu",
        None,
        Arg::Required,
        Opt::Refused("not supported: ask for --ntasks and --gpus-per-task (or -G) instead"),
    ),
    def("ntasks-per-socket", None, Arg::Required, Opt::Refused(NO_CPU_LAYOUT)),
    def(
        "oom-kill-step",
        None,
        Arg::Optional,
        Opt::Refused("Berth ends the job (OUT_OF_MEMORY) when it runs out of memory; this cannot be set per job"),
    ),
    def(
        "oversubscribe",
        Some('s'),
        Arg::Flag,
        Opt::Refused("Berth never shares a CPU or GPU between jobs"),
    ),
    def(
        "prefer",
        None,
        Arg::Required,
        Opt::Refused("Berth has no soft feature preferences: use -C/--constraint"),
    ),
    def(
        "priority",
        None,
        Arg::Required,
        Opt::Refused("a job's priority is set by operators after submission (scontrol update), not at submission"),
    ),
    def(
        "profile",
        None,
        Arg::Required,
        Opt::Refused("Berth has no acct_gather profile plugin; GPU samples are kept for every job (sstat)"),
    ),
    def(
        "reboot",
        None,
        Arg::Flag,
        Opt::Refused("Berth does not reboot nodes for jobs"),
    ),
    def("segment", None, Arg::Required, Opt::Refused(NO_TOPOLOGY)),
    def("sockets-per-node", None, Arg::Required, Opt::Refused(NO_CPU_LAYOUT)),
    def(
        "spread-job",
        None,
        Arg::Flag,
        Opt::Refused("Berth places a job on as few nodes as it asks for (-N); it does not spread it"),
    ),
    def(
        "stepmgr",
        None,
        Arg::Flag,
        Opt::Refused("Berth has no per-job step manager: the api manages every step"),
    ),
    def("switches", None, Arg::Required, Opt::Refused(NO_TOPOLOGY)),
    def("thread-spec", None, Arg::Required, Opt::Refused(NO_CPU_LAYOUT)),
    def("threads-per-core", None, Arg::Required, Opt::Refused(NO_CPU_LAYOUT)),
    def(
        "tmp",
        None,
        Arg::Required,
        Opt::Refused("Berth does not schedule local disk space (TmpDisk)"),
    ),
    def("tres-bind", None, Arg::Required, Opt::Refused(NO_BINDING)),
    def("uid", None, Arg::Required, Opt::Refused(NO_OTHER_USER)),
    // pyxis (SPANK plugin) options, as clusters with NVIDIA's enroot have them.
    def("container-image", None, Arg::Required, Opt::Refused(NO_PYXIS)),
    def("container-mounts", None, Arg::Required, Opt::Refused(NO_PYXIS)),
    def("container-workdir", None, Arg::Required, Opt::Refused(NO_PYXIS)),
    def("container-name", None, Arg::Required, Opt::Refused(NO_PYXIS)),
    def("container-save", None, Arg::Required, Opt::Refused(NO_PYXIS)),
    def("container-env", None, Arg::Required, Opt::Refused(NO_PYXIS)),
    def("container-mount-home", None, Arg::Flag, Opt::Refused(NO_PYXIS)),
    def("no-container-mount-home", None, Arg::Flag, Opt::Refused(NO_PYXIS)),
    def("container-remap-root", None, Arg::Flag, Opt::Refused(NO_PYXIS)),
    def("no-container-remap-root", None, Arg::Flag, Opt::Refused(NO_PYXIS)),
    def("container-entrypoint", None, Arg::Flag, Opt::Refused(NO_PYXIS)),
    def("no-container-entrypoint", None, Arg::Flag, Opt::Refused(NO_PYXIS)),
    def("container-entrypoint-log", None, Arg::Flag, Opt::Refused(NO_PYXIS)),
    def("container-writable", None, Arg::Flag, Opt::Refused(NO_PYXIS)),
    def("container-readonly", None, Arg::Flag, Opt::Refused(NO_PYXIS)),
];

/// Finds a long option by its exact name or an unambiguous prefix.
fn lookup_long(name: &str) -> Result<&'static OptDef, String> {
    if let Some(d) = OPTIONS.iter().find(|d| d.long == name) {
        return Ok(d);
    }
    let candidates: Vec<&OptDef> = OPTIONS
        .iter()
        .filter(|d| !name.is_empty() && d.long.starts_with(name))
        .collect();
    match candidates.as_slice() {
        [one] => Ok(one),
        [] => Err(format!("unrecognized option '--{name}'")),
        many => Err(format!(
            "option '--{name}' is ambiguous; possibilities: {}",
            many.iter()
                .map(|d| format!("'--{}'", d.long))
                .collect::<Vec<_>>()
                .join(" ")
        )),
    }
}

fn lookup_short(c: char) -> Result<&'static OptDef, String> {
    OPTIONS
        .iter()
        .find(|d| d.short == Some(c))
        .ok_or_else(|| format!("invalid option -- '{c}'"))
}

// ---------------------------------------------------------------------------------------
// Scripts and words.

/// One word of a directive line or of argv: its text after quote removal and as written.
struct Word {
    text: String,
    raw: String,
}

fn check_script(script: &str) -> Result<(), SbatchError> {
    if !script.starts_with("#!") {
        return Err(SbatchError::new(
            Some(1),
            "script",
            "This does not look like a batch script: the first line must start with #! \
             followed by the path to an interpreter (e.g. #!/bin/bash)",
        ));
    }
    for (i, line) in script.split('\n').enumerate() {
        if line.ends_with('\r') {
            return Err(SbatchError::new(
                Some(i + 1),
                "script",
                "the script contains DOS line breaks (\\r\\n) instead of UNIX line breaks (\\n)",
            ));
        }
        if line.contains('\0') {
            return Err(SbatchError::new(
                Some(i + 1),
                "script",
                "the script contains a NUL character",
            ));
        }
    }
    Ok(())
}

/// The largest count Berth takes for nodes, tasks, CPUs per task and GPUs: what the
/// database stores (a 32-bit signed integer).
pub const MAX_COUNT: u32 = i32::MAX as u32;

/// Checks a whole spec as the api is about to store it: after the script's directives,
/// the command line and a structured spec (which skips the option parser) are merged.
/// Every text field must be printable ([`crate::text::forbidden_char`]; `--wrap` may hold
/// line breaks and tabs, being a script), counts must be within 1 (0 for GPUs) and
/// [`MAX_COUNT`], memory within [`crate::spec::MAX_MEMORY_MIB`], times within
/// [`crate::duration::MAX_SECONDS`], `--nice` within ±2147483645 (Slurm's range), and
/// `--array`, `--dependency`, `--signal`, `--hint`, `--mail-type` must read as the option
/// parser reads them.
///
/// # Errors
/// An [`SbatchError`] without a line, naming the option (`--mem`) and the value.
pub fn check_spec(spec: &JobSpec) -> Result<(), SbatchError> {
    let err = |option: &str, message: String| Err(SbatchError::new(None, option, message));
    let texts: [(&str, &Option<String>); 23] = [
        ("--job-name", &spec.job_name),
        ("--partition", &spec.partition),
        ("--gres", &spec.gres),
        ("--gpus", &spec.gpu_type),
        ("--output", &spec.output),
        ("--error", &spec.error),
        ("--chdir", &spec.chdir),
        ("--constraint", &spec.constraint),
        ("--nodelist", &spec.nodelist),
        ("--exclude", &spec.exclude),
        ("--account", &spec.account),
        ("--qos", &spec.qos),
        ("--comment", &spec.comment),
        ("--wckey", &spec.wckey),
        ("--export", &spec.export),
        ("--array", &spec.array),
        ("--dependency", &spec.dependency),
        ("--signal", &spec.signal),
        ("--begin", &spec.begin),
        ("--hint", &spec.hint),
        ("--reservation", &spec.reservation),
        ("--mail-type", &spec.mail_type),
        ("--mail-user", &spec.mail_user),
    ];
    for (option, value) in texts {
        if let Some(c) = value.as_deref().and_then(crate::text::forbidden_char) {
            return err(option, crate::text::forbidden_message(c));
        }
    }
    if let Some(c) = spec.wrap.as_deref().and_then(|w| {
        w.chars()
            .find(|&c| crate::text::is_unsafe(c) && c != '\n' && c != '\t')
    }) {
        return err("--wrap", crate::text::forbidden_message(c));
    }
    let counts: [(&str, Option<u32>, u32); 9] = [
        ("--nodes", spec.nodes, 1),
        ("--nodes (maximum)", spec.nodes_max, 1),
        ("--ntasks", spec.ntasks, 1),
        ("--ntasks-per-node", spec.ntasks_per_node, 1),
        ("--cpus-per-task", spec.cpus_per_task, 1),
        ("--cpus-per-gpu", spec.cpus_per_gpu, 1),
        ("--gpus", spec.gpus, 0),
        ("--gpus-per-node", spec.gpus_per_node, 0),
        ("--gpus-per-task", spec.gpus_per_task, 0),
    ];
    for (option, value, min) in counts {
        if let Some(n) = value.filter(|n| !(min..=MAX_COUNT).contains(n)) {
            return err(
                option,
                format!("{n} is out of range ({min} to {MAX_COUNT})"),
            );
        }
    }
    let max_mem = crate::spec::MAX_MEMORY_MIB;
    for (option, value) in [
        ("--mem", spec.mem_mib),
        ("--mem-per-cpu", spec.mem_per_cpu_mib),
        ("--mem-per-gpu", spec.mem_per_gpu_mib),
    ] {
        if let Some(m) = value.filter(|m| *m > max_mem) {
            return err(
                option,
                format!("{m} MiB is more than Berth accepts (at most {max_mem} MiB, 1 PiB)"),
            );
        }
    }
    for (option, value) in [("--time", spec.time_limit), ("--time-min", spec.time_min)] {
        if let Some(t) = value.filter(|t| *t > crate::duration::MAX_SECONDS) {
            return err(
                option,
                format!("{t} s is longer than 100 years; use UNLIMITED for no limit"),
            );
        }
    }
    if let Some(n) = spec.nice.filter(|n| n.unsigned_abs() > 2_147_483_645) {
        return err(
            "--nice",
            format!("{n} is out of range (-2147483645 to 2147483645)"),
        );
    }
    type Check = fn(&str) -> Result<(), String>;
    let checks: [(&str, &Option<String>, Check); 9] = [
        ("--partition", &spec.partition, check_partitions),
        ("--constraint", &spec.constraint, check_constraint),
        ("--nodelist", &spec.nodelist, check_node_list),
        ("--exclude", &spec.exclude, check_node_list),
        ("--array", &spec.array, check_array),
        ("--dependency", &spec.dependency, check_dependency),
        ("--signal", &spec.signal, check_signal),
        ("--hint", &spec.hint, check_hint),
        ("--mail-type", &spec.mail_type, check_mail_type),
    ];
    for (option, value, check) in checks {
        if let Some(v) = value {
            check(v).map_err(|m| SbatchError::new(None, option, m))?;
        }
    }
    if spec.cpus_per_task.is_some() && spec.cpus_per_gpu.is_some() {
        return err(
            "--cpus-per-gpu",
            "--cpus-per-gpu and --cpus-per-task are mutually exclusive".to_string(),
        );
    }
    if let (Some(min), Some(limit)) = (spec.time_min, spec.time_limit) {
        if limit != 0 && min > limit {
            return err(
                "--time-min",
                format!("{min} s is longer than the time limit (--time, {limit} s)"),
            );
        }
    }
    Ok(())
}

/// `-p`: partition names separated by commas (`gpu`, `gpu,cpu`).
fn check_partitions(v: &str) -> Result<(), String> {
    if v.split(',').any(|p| p.trim().is_empty()) {
        return Err(format!(
            "not a partition list: {v:?} (expected NAME or NAME,NAME,… without empty names)"
        ));
    }
    Ok(())
}

/// `-C/--constraint`: Slurm's feature expression ([`crate::constraint`]).
fn check_constraint(v: &str) -> Result<(), String> {
    crate::constraint::Constraint::parse(v)
        .map(|_| ())
        .map_err(|e| format!("not a feature expression ({e})"))
}

/// `-w/--nodelist`, `-x/--exclude`: a host list of at most
/// [`crate::spec::MAX_NODE_LIST`] names. Slurm also reads a file when the value holds a
/// `/`; Berth's api cannot read the submitter's files, so that is refused.
fn check_node_list(v: &str) -> Result<(), String> {
    if v.contains('/') {
        return Err(format!(
            "{v:?} looks like a file name: list the nodes instead (node-[1-3],gpu7)"
        ));
    }
    let names = crate::hostlist::expand(v).map_err(|e| e.to_string())?;
    if names.is_empty() {
        return Err("an empty node list".to_string());
    }
    if names.len() > crate::spec::MAX_NODE_LIST {
        return Err(format!(
            "{} node names; at most {} are taken",
            names.len(),
            crate::spec::MAX_NODE_LIST
        ));
    }
    Ok(())
}

/// Applies the `#SBATCH` lines at the top of `script`.
fn apply_directives(
    spec: &mut JobSpec,
    client: &mut ClientOptions,
    script: &str,
) -> Result<(), SbatchError> {
    for (i, line) in script.lines().enumerate() {
        let lineno = i + 1;
        if i == 0 && line.starts_with("#!") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("#SBATCH") {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                let words = split_directive(rest)
                    .map_err(|m| SbatchError::new(Some(lineno), line.trim(), m))?;
                apply_words(spec, client, &words, Some(lineno))?;
                continue;
            }
        }
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        break;
    }
    Ok(())
}

fn apply_argv(
    spec: &mut JobSpec,
    client: &mut ClientOptions,
    args: &[String],
) -> Result<(), SbatchError> {
    let words: Vec<Word> = args
        .iter()
        .map(|a| Word {
            text: a.clone(),
            raw: a.clone(),
        })
        .collect();
    apply_words(spec, client, &words, None)
}

/// Splits a directive line's text into words as a shell does: blanks separate words,
/// `'…'` and `"…"` group them, `\` escapes the next character (inside double quotes only
/// `"` and `\`), and a `#` that begins a word ends the line.
fn split_directive(text: &str) -> Result<Vec<Word>, String> {
    let mut words = Vec::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, first)) = chars.peek() else {
            break;
        };
        if first == '#' {
            break;
        }
        let mut word = String::new();
        let mut end = text.len();
        let (mut single, mut double) = (false, false);
        while let Some((i, c)) = chars.next() {
            match c {
                c if c.is_whitespace() && !single && !double => {
                    end = i;
                    break;
                }
                '\'' if !double => single = !single,
                '"' if !single => double = !double,
                '\\' if !single => match chars.peek() {
                    Some(&(_, next)) if !double || next == '"' || next == '\\' => {
                        word.push(next);
                        chars.next();
                    }
                    _ => word.push('\\'),
                },
                c => word.push(c),
            }
        }
        if single || double {
            return Err(format!(
                "unterminated {} quote",
                if single { "single" } else { "double" }
            ));
        }
        words.push(Word {
            text: word,
            raw: text[start..end].to_string(),
        });
    }
    Ok(words)
}

/// Applies options given as words. On a directive line (`line` is `Some`), bare words
/// after an option's value continue that value.
fn apply_words(
    spec: &mut JobSpec,
    client: &mut ClientOptions,
    words: &[Word],
    line: Option<usize>,
) -> Result<(), SbatchError> {
    let in_script = line.is_some();
    let written = |from: usize, to: usize| -> String {
        words[from..to]
            .iter()
            .map(|w| w.raw.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    // Joins the bare words that follow a value on a directive line.
    let join = |value: &mut String, i: &mut usize| {
        if in_script {
            while *i < words.len() && !words[*i].text.starts_with('-') {
                value.push(' ');
                value.push_str(&words[*i].text);
                *i += 1;
            }
        }
    };
    let mut i = 0;
    while i < words.len() {
        let start = i;
        let text = words[i].text.as_str();
        i += 1;
        if let Some(body) = text.strip_prefix("--").filter(|b| !b.is_empty()) {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let d = lookup_long(name).map_err(|m| SbatchError::new(line, written(start, i), m))?;
            let mut value = match (d.arg, inline) {
                (Arg::Flag, Some(_)) => {
                    return Err(SbatchError::new(
                        line,
                        written(start, i),
                        format!("--{} takes no value", d.long),
                    ))
                }
                (Arg::Flag, None) | (Arg::Optional, None) => None,
                (_, Some(v)) => Some(v.to_string()),
                (Arg::Required, None) => match words.get(i) {
                    Some(w) => {
                        i += 1;
                        Some(w.text.clone())
                    }
                    None => {
                        return Err(SbatchError::new(
                            line,
                            written(start, i),
                            format!("--{} needs a value", d.long),
                        ))
                    }
                },
            };
            if let Some(v) = value.as_mut() {
                join(v, &mut i);
            }
            apply_option(spec, client, d, value.as_deref(), in_script)
                .map_err(|m| SbatchError::new(line, written(start, i), m))?;
        } else if let Some(body) = text
            .strip_prefix('-')
            .filter(|b| !b.is_empty() && !b.starts_with('-'))
        {
            // One word may group flags and end with an option that takes a value: -HN2.
            for (pos, c) in body.char_indices() {
                let d =
                    lookup_short(c).map_err(|m| SbatchError::new(line, written(start, i), m))?;
                if d.arg != Arg::Required {
                    apply_option(spec, client, d, None, in_script)
                        .map_err(|m| SbatchError::new(line, written(start, i), m))?;
                    continue;
                }
                let attached = &body[pos + c.len_utf8()..];
                let mut value = if !attached.is_empty() {
                    attached.to_string()
                } else if let Some(w) = words.get(i) {
                    i += 1;
                    w.text.clone()
                } else {
                    return Err(SbatchError::new(
                        line,
                        written(start, i),
                        format!("-{c} needs a value"),
                    ));
                };
                join(&mut value, &mut i);
                apply_option(spec, client, d, Some(&value), in_script)
                    .map_err(|m| SbatchError::new(line, written(start, i), m))?;
                break;
            }
        } else {
            return Err(SbatchError::new(
                line,
                words[start].raw.clone(),
                "unexpected argument: options start with - or --",
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Values.

/// Sets the field(s) of one option, after checking its value.
fn apply_option(
    spec: &mut JobSpec,
    client: &mut ClientOptions,
    d: &OptDef,
    value: Option<&str>,
    in_script: bool,
) -> Result<(), String> {
    if d.arg == Arg::Required && value.is_none_or(|v| v.trim().is_empty()) {
        return Err(format!("--{} needs a value", d.long));
    }
    let v = value.unwrap_or_default();
    let text = || Some(v.to_string());
    match d.opt {
        Opt::JobName => spec.job_name = text(),
        Opt::Partition => {
            check_partitions(v)?;
            spec.partition = text();
        }
        Opt::Nodes => {
            let bad = || format!("not a number of nodes: {v:?} (expected N or MIN-MAX)");
            let (min, max) = match v.split_once('-') {
                Some((lo, hi)) => (
                    positive(lo).ok_or_else(bad)?,
                    Some(positive(hi).ok_or_else(bad)?),
                ),
                None => (positive(v).ok_or_else(bad)?, None),
            };
            if max.is_some_and(|m| m < min) {
                return Err(format!(
                    "node range {v:?} has its maximum below its minimum"
                ));
            }
            spec.nodes = Some(min);
            spec.nodes_max = max;
        }
        Opt::Ntasks => spec.ntasks = Some(count(v, "tasks")?),
        Opt::NtasksPerNode => spec.ntasks_per_node = Some(count(v, "tasks per node")?),
        Opt::CpusPerTask => spec.cpus_per_task = Some(count(v, "CPUs per task")?),
        Opt::CpusPerGpu => spec.cpus_per_gpu = Some(count(v, "CPUs per GPU")?),
        Opt::Mem => spec.mem_mib = Some(size_mib(v)?),
        Opt::MemPerCpu => spec.mem_per_cpu_mib = Some(size_mib(v)?),
        Opt::MemPerGpu => spec.mem_per_gpu_mib = Some(size_mib(v)?),
        Opt::Gres => {
            if let Some((gpu_type, n)) = gres_gpus(v)? {
                spec.gpus_per_node = Some(n);
                spec.gpu_type = gpu_type;
            }
            spec.gres = text();
        }
        Opt::Gpus | Opt::GpusPerNode | Opt::GpusPerTask => {
            let (gpu_type, n) = typed_gpu_count(v)?;
            match d.opt {
                Opt::Gpus => spec.gpus = Some(n),
                Opt::GpusPerNode => spec.gpus_per_node = Some(n),
                _ => spec.gpus_per_task = Some(n),
            }
            if gpu_type.is_some() {
                spec.gpu_type = gpu_type;
            }
        }
        // Slurm: "A time limit of zero requests that no time limit be imposed."
        Opt::Time => spec.time_limit = Some(time(v)?.unwrap_or(0)),
        Opt::TimeMin => spec.time_min = time(v)?,
        Opt::Output => spec.output = text(),
        Opt::Error => spec.error = text(),
        Opt::Chdir => spec.chdir = text(),
        Opt::Exclusive => {
            if let Some(mode) = value {
                if !["user", "mcs", "topo", "exclusive"].contains(&mode) {
                    return Err(format!(
                        "not an --exclusive mode: {mode:?} (expected user, mcs, topo or exclusive)"
                    ));
                }
            }
            spec.exclusive = true;
        }
        Opt::Constraint => {
            check_constraint(v)?;
            spec.constraint = text();
        }
        Opt::Nodelist => {
            check_node_list(v)?;
            spec.nodelist = text();
        }
        Opt::Exclude => {
            check_node_list(v)?;
            spec.exclude = text();
        }
        Opt::Account => spec.account = text(),
        Opt::Qos => spec.qos = text(),
        Opt::Comment => spec.comment = text(),
        Opt::Export => spec.export = text(),
        Opt::OpenMode => {
            spec.open_mode = Some(if v.eq_ignore_ascii_case("append") {
                OpenMode::Append
            } else if v.eq_ignore_ascii_case("truncate") {
                OpenMode::Truncate
            } else {
                return Err(format!(
                    "not an open mode: {v:?} (expected append or truncate)"
                ));
            });
        }
        Opt::Array => {
            check_array(v)?;
            spec.array = text();
        }
        Opt::Dependency => {
            check_dependency(v)?;
            spec.dependency = text();
        }
        Opt::Requeue => spec.requeue = Some(true),
        Opt::NoRequeue => spec.requeue = Some(false),
        Opt::Signal => {
            check_signal(v)?;
            spec.signal = text();
        }
        Opt::Hold => spec.hold = true,
        Opt::Begin => spec.begin = text(),
        Opt::Nice => {
            spec.nice = Some(match value {
                None => 100,
                Some(n) => n
                    .parse::<i32>()
                    .ok()
                    .filter(|n| n.unsigned_abs() <= 2_147_483_645)
                    .ok_or_else(|| format!("not a nice value: {n:?} (expected an integer)"))?,
            });
        }
        Opt::Hint => {
            check_hint(v)?;
            spec.hint = text();
        }
        Opt::Reservation => spec.reservation = text(),
        Opt::MailType => {
            check_mail_type(v)?;
            spec.mail_type = text();
        }
        Opt::MailUser => spec.mail_user = text(),
        Opt::WaitAllNodes => {
            spec.wait_all_nodes = Some(match v {
                "0" => false,
                "1" => true,
                _ => return Err(format!("not 0 or 1: {v:?}")),
            });
        }
        Opt::Overcommit => spec.overcommit = true,
        Opt::Wrap => {
            if in_script {
                return Err("--wrap is only accepted on the command line".into());
            }
            spec.wrap = text();
        }
        Opt::Parsable => spec.parsable = true,
        Opt::Clusters => client.clusters = Some(v.to_string()),
        Opt::Wckey => spec.wckey = text(),
        Opt::TresPerTask => tres_per_task(spec, v)?,
        Opt::TestOnly => client.test_only = true,
        Opt::Wait => client.wait = true,
        Opt::Quiet => client.quiet = true,
        Opt::Verbose => client.verbose += 1,
        Opt::Help => client.help = true,
        Opt::Version => client.version = true,
        Opt::NoEffect(_) => {}
        Opt::Only(allowed, why) => {
            if !allowed.split('|').any(|a| a.eq_ignore_ascii_case(v)) {
                return Err(why.to_string());
            }
        }
        // The error names the option as written; the text says why.
        Opt::Refused(why) => return Err(why.to_string()),
    }
    Ok(())
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// A decimal number ≥ 1.
fn positive(s: &str) -> Option<u32> {
    if !is_number(s) {
        return None;
    }
    s.parse::<u32>().ok().filter(|&n| n >= 1)
}

fn count(v: &str, what: &str) -> Result<u32, String> {
    positive(v)
        .ok_or_else(|| format!("not a number of {what}: {v:?} (expected a whole number ≥ 1)"))
}

fn time(v: &str) -> Result<Option<u64>, String> {
    parse_duration(v).map_err(|e| format!("not a time limit: {v:?} ({})", e.reason))
}

/// Slurm's memory size: a whole number with an optional `K`, `M`, `G` or `T` suffix
/// (optionally followed by `B`), MiB by default; kibibytes round up.
///
/// # Errors
/// A message quoting the value and the expected form.
pub fn size_mib(v: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "not a memory size: {v:?} (expected a number with an optional K, M, G or T \
             suffix; MiB by default)"
        )
    };
    let digits = v.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad());
    }
    let n: u64 = v[..digits].parse().map_err(|_| bad())?;
    let suffix = v[digits..].to_ascii_uppercase();
    let suffix = suffix
        .strip_suffix('B')
        .filter(|s| !s.is_empty())
        .unwrap_or(&suffix);
    let mib = match suffix {
        "" | "M" => Some(n),
        "K" => Some(n.div_ceil(1024)),
        "G" => n.checked_mul(1024),
        "T" => n.checked_mul(1024 * 1024),
        _ => None,
    };
    mib.ok_or_else(bad)
}

/// `[type:]N` of `--gpus*`.
fn typed_gpu_count(v: &str) -> Result<(Option<String>, u32), String> {
    let bad = || format!("not a GPU count: {v:?} (expected N or TYPE:N)");
    let (gpu_type, n) = match v.split_once(':') {
        Some((t, n)) if !t.is_empty() && !n.contains(':') => (Some(t.to_string()), n),
        Some(_) => return Err(bad()),
        None => (None, v),
    };
    if !is_number(n) {
        return Err(bad());
    }
    Ok((gpu_type, n.parse().map_err(|_| bad())?))
}

/// Checks a `--gres` list (`name[:type][:count]`, comma separated, or `none`) and returns
/// its GPU part: `(type, count per node)`.
fn gres_gpus(v: &str) -> Result<Option<(Option<String>, u32)>, String> {
    if v.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let mut gpu = None;
    for item in v.split(',') {
        let bad = || {
            format!(
                "not a generic resource: {item:?} (expected NAME[:TYPE][:COUNT], e.g. gpu:h100:4)"
            )
        };
        let item_body = item.strip_prefix("gres/").unwrap_or(item);
        let parts: Vec<&str> = item_body.split(':').collect();
        let name_ok = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        };
        let (name, gres_type, n) = match parts.as_slice() {
            [name] => (*name, None, 1),
            [name, x] if is_number(x) => (*name, None, x.parse().map_err(|_| bad())?),
            [name, t] => (*name, Some(*t), 1),
            [name, t, x] if is_number(x) => (*name, Some(*t), x.parse().map_err(|_| bad())?),
            _ => return Err(bad()),
        };
        if !name_ok(name) || gres_type.is_some_and(|t| !name_ok(t)) {
            return Err(bad());
        }
        if name == "gpu" {
            if gpu.is_some() {
                return Err(format!("more than one gpu entry in {v:?}"));
            }
            gpu = Some((gres_type.map(str::to_string), n));
        }
    }
    Ok(gpu)
}

/// `--array`: `N`, `N-M` or `N-M:STEP` items, comma separated, then an optional `%LIMIT`.
fn check_array(v: &str) -> Result<(), String> {
    let bad = || {
        format!(
            "not an array specification: {v:?} (expected items N, N-M or N-M:STEP separated \
             by commas, optionally followed by %LIMIT)"
        )
    };
    let (body, limit) = match v.split_once('%') {
        Some((b, l)) => (b, Some(l)),
        None => (v, None),
    };
    if limit.is_some_and(|l| positive(l).is_none()) {
        return Err(bad());
    }
    let index = |s: &str| is_number(s).then(|| s.parse::<u32>().ok()).flatten();
    for item in body.split(',') {
        let (range, step) = match item.split_once(':') {
            Some((r, s)) => (r, Some(s)),
            None => (item, None),
        };
        match range.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (index(lo).ok_or_else(bad)?, index(hi).ok_or_else(bad)?);
                if hi < lo {
                    return Err(format!("array range {item:?} runs backwards"));
                }
                if step.is_some_and(|s| positive(s).is_none()) {
                    return Err(bad());
                }
            }
            None if step.is_none() => {
                index(range).ok_or_else(bad)?;
            }
            None => return Err(bad()),
        }
    }
    Ok(())
}

/// The dependency types `--dependency` accepts.
pub const DEPENDENCY_TYPES: &[&str] = &[
    "after",
    "afterany",
    "afterok",
    "afternotok",
    "aftercorr",
    "afterburstbuffer",
];

/// `--dependency`: items separated by `,` (all must hold) or `?` (any), each `singleton` or
/// `TYPE:JOBID[:JOBID…]`; a job id is `N` or `N_TASK`, with `+MINUTES` after `after:`.
fn check_dependency(v: &str) -> Result<(), String> {
    if v.contains(',') && v.contains('?') {
        return Err(format!(
            "dependency {v:?} mixes ',' (all) and '?' (any); use one of them"
        ));
    }
    for item in v.split([',', '?']) {
        if item == "singleton" {
            continue;
        }
        let Some((kind, ids)) = item.split_once(':') else {
            return Err(format!(
                "not a dependency: {item:?} (expected singleton or TYPE:JOBID[:JOBID...])"
            ));
        };
        if !DEPENDENCY_TYPES.contains(&kind) {
            return Err(format!(
                "unknown dependency type {kind:?} (expected singleton or one of {})",
                DEPENDENCY_TYPES.join(", ")
            ));
        }
        for id in ids.split(':') {
            let (job, delay) = match id.split_once('+') {
                Some((j, d)) => (j, Some(d)),
                None => (id, None),
            };
            let id_ok = |j: &str| is_number(j) && j.parse::<i64>().is_ok();
            let job_ok = match job.split_once('_') {
                Some((j, t)) => id_ok(j) && is_number(t) && t.parse::<u32>().is_ok(),
                None => id_ok(job),
            };
            if !job_ok {
                return Err(format!(
                    "not a job id in dependency {item:?}: {job:?} (expected N or N_TASK)"
                ));
            }
            if let Some(d) = delay {
                if kind != "after" {
                    return Err(format!(
                        "a +MINUTES delay is only allowed with after: {item:?}"
                    ));
                }
                if !is_number(d) {
                    return Err(format!("not a delay in minutes: {d:?} in {item:?}"));
                }
            }
        }
    }
    Ok(())
}

pub(crate) const SIGNALS: &[&str] = &[
    "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2",
    "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
    "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS",
];

/// `--hint`: comma-separated `compute_bound`, `memory_bound`, `multithread`,
/// `nomultithread`.
fn check_hint(v: &str) -> Result<(), String> {
    const HINTS: &[&str] = &[
        "compute_bound",
        "memory_bound",
        "multithread",
        "nomultithread",
    ];
    match v.split(',').find(|h| !HINTS.contains(h)) {
        Some(bad) => Err(format!(
            "not a hint: {bad:?} (expected {})",
            HINTS.join(", ")
        )),
        None => Ok(()),
    }
}

/// `--tres-per-task=cpu=N,gres/gpu[:TYPE]=N`: CPUs and GPUs per task, as `-c` and
/// `--gpus-per-task` set them; other TRES are refused by name.
fn tres_per_task(spec: &mut JobSpec, v: &str) -> Result<(), String> {
    for item in v.split(',') {
        let Some((tres, n)) = item.split_once('=') else {
            return Err(format!(
                "not a TRES count: {item:?} (expected cpu=N or gres/gpu[:TYPE]=N)"
            ));
        };
        let lower = tres.to_ascii_lowercase();
        let gpu = lower
            .strip_prefix("gres/")
            .unwrap_or(&lower)
            .strip_prefix("gpu");
        match (lower.as_str(), gpu) {
            ("cpu", _) => spec.cpus_per_task = Some(count(n, "CPUs per task")?),
            (_, Some("")) => spec.gpus_per_task = Some(count(n, "GPUs per task")?),
            (_, Some(t)) if t.len() > 1 && t.starts_with(':') => {
                spec.gpus_per_task = Some(count(n, "GPUs per task")?);
                spec.gpu_type = Some(tres[tres.len() - t.len() + 1..].to_string());
            }
            _ => {
                return Err(format!(
                    "TRES {tres:?} per task is not supported (Berth takes cpu and gres/gpu)"
                ))
            }
        }
    }
    Ok(())
}

/// `--mail-type`: comma-separated Slurm mail types, any case. Berth sends no e-mail, so
/// only `NONE` is accepted; any other type is refused with where to look instead.
fn check_mail_type(v: &str) -> Result<(), String> {
    const TYPES: &[&str] = &[
        "NONE",
        "BEGIN",
        "END",
        "FAIL",
        "REQUEUE",
        "ALL",
        "INVALID_DEPEND",
        "STAGE_OUT",
        "TIME_LIMIT",
        "TIME_LIMIT_90",
        "TIME_LIMIT_80",
        "TIME_LIMIT_50",
        "ARRAY_TASKS",
    ];
    match v
        .split(',')
        .find(|t| !TYPES.iter().any(|k| k.eq_ignore_ascii_case(t)))
    {
        Some(bad) => Err(format!(
            "not a mail type: {bad:?} (expected {})",
            TYPES.join(", ")
        )),
        None if v.split(',').all(|t| t.eq_ignore_ascii_case("NONE")) => Ok(()),
        None => Err(
            "Berth sends no e-mail: follow the job's events with a webhook (POST \
             /v1/webhooks) or the event stream (GET /v1/events) instead; only \
             --mail-type=NONE is accepted"
                .to_string(),
        ),
    }
}

/// `--signal=[{R|B}:]SIG[@SECONDS]`: SIG a number 1–64 or a name (`USR1`, `SIGUSR1`),
/// SECONDS 0–65535.
fn check_signal(v: &str) -> Result<(), String> {
    let bad = |why: &str| {
        format!("not a signal specification: {v:?} ({why}; expected [{{R|B}}:]SIG[@SECONDS])")
    };
    let (flags, rest) = match v.split_once(':') {
        Some((f, r)) => (Some(f), r),
        None => (None, v),
    };
    if let Some(f) = flags {
        if f.is_empty() || f.len() > 2 || !f.chars().all(|c| matches!(c, 'R' | 'B' | 'r' | 'b')) {
            return Err(bad("the prefix must be R:, B: or RB:"));
        }
    }
    let (sig, secs) = match rest.split_once('@') {
        Some((s, t)) => (s, Some(t)),
        None => (rest, None),
    };
    let sig_ok = if is_number(sig) {
        match sig.parse::<i32>() {
            Ok(n) if n > crate::signal::MAX_SENT_SIGNAL && n <= crate::signal::MAX_SIGNAL => {
                return Err(bad(&format!(
                    "{n} is a real-time signal; Berth's workers send the standard signals, 1 to {}",
                    crate::signal::MAX_SENT_SIGNAL
                )));
            }
            Ok(n) => (1..=crate::signal::MAX_SENT_SIGNAL).contains(&n),
            Err(_) => false,
        }
    } else {
        let upper = sig.to_ascii_uppercase();
        let name = upper.strip_prefix("SIG").unwrap_or(&upper);
        SIGNALS.contains(&name)
    };
    if !sig_ok {
        return Err(bad("unknown signal"));
    }
    if let Some(t) = secs {
        if !is_number(t) || !t.parse::<u32>().is_ok_and(|n| n <= 65_535) {
            return Err(bad("the delay must be 0 to 65535 seconds"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    fn script(body: &str) -> String {
        format!("#!/bin/bash\n{body}")
    }

    fn spec_of(body: &str) -> JobSpec {
        parse_batch(&script(body), &[]).unwrap().spec
    }

    fn err_of(body: &str) -> SbatchError {
        parse_batch(&script(body), &[]).unwrap_err()
    }

    #[test]
    fn directive_words_split_like_a_shell() {
        let words: Vec<String> = split_directive(r#" -J "a b" --comment='x "y"' c\ d # rest"#)
            .unwrap()
            .into_iter()
            .map(|w| w.text)
            .collect();
        assert_eq!(words, ["-J", "a b", "--comment=x \"y\"", "c d"]);
        let words = split_directive(" -N 1\t# tab comment").unwrap();
        assert_eq!(words.len(), 2);
        assert_eq!(split_directive(" --x=a#b").unwrap()[0].text, "--x=a#b");
        assert!(split_directive(" --comment=\"open").is_err());
    }

    #[test]
    fn long_and_short_forms() {
        let s = spec_of(
            "#SBATCH -N2 -n 8 -c4 --ntasks-per-node 4\n#SBATCH --time 1:00:00 -J x -pgpu\n",
        );
        assert_eq!(s.nodes, Some(2));
        assert_eq!(s.ntasks, Some(8));
        assert_eq!(s.cpus_per_task, Some(4));
        assert_eq!(s.ntasks_per_node, Some(4));
        assert_eq!(s.time_limit, Some(3_600));
        assert_eq!(s.job_name.as_deref(), Some("x"));
        assert_eq!(s.partition.as_deref(), Some("gpu"));
    }

    #[test]
    fn node_ranges() {
        let s = spec_of("#SBATCH --nodes=2-4\n");
        assert_eq!((s.nodes, s.nodes_max), (Some(2), Some(4)));
        assert!(parse_args(&argv(&["-N", "4-2"])).is_err());
        assert!(parse_args(&argv(&["-N", "0"])).is_err());
    }

    #[test]
    fn prefixes_exact_names_and_ambiguity() {
        let s = spec_of("#SBATCH --err=e.log --out=o.log --ntasks=3 --part=gpu --exclus\n");
        assert_eq!(s.error.as_deref(), Some("e.log"));
        assert_eq!(s.output.as_deref(), Some("o.log"));
        assert_eq!(s.ntasks, Some(3));
        assert_eq!(s.ntasks_per_node, None);
        assert_eq!(s.partition.as_deref(), Some("gpu"));
        assert!(s.exclusive);
        let s = parse_args(&argv(&["--time=5", "--mem=1G"])).unwrap();
        assert_eq!(
            (s.time_limit, s.time_min, s.mem_mib),
            (Some(300), None, Some(1024))
        );

        let e = err_of("#SBATCH --nt=3\n");
        assert_eq!(e.line, Some(2));
        assert_eq!(e.option, "--nt=3");
        assert!(e.message.contains("ambiguous"), "{}", e.message);
        assert!(e.message.contains("--ntasks-per-node"), "{}", e.message);
        let e = parse_args(&argv(&["--gpu=1"])).unwrap_err();
        assert!(e.message.contains("--gpus-per-task"), "{}", e.message);
        // As in Slurm, --excl could be --exclude or --exclusive.
        let e = parse_args(&argv(&["--excl"])).unwrap_err();
        assert!(
            e.message.contains("'--exclusive' '--exclude'"),
            "{}",
            e.message
        );
    }

    #[test]
    fn unknown_and_missing() {
        let e = err_of("#SBATCH --frobnicate=1\n");
        assert_eq!((e.line, e.option.as_str()), (Some(2), "--frobnicate=1"));
        assert_eq!(e.message, "unrecognized option '--frobnicate'");
        let e = parse_args(&argv(&["-Z"])).unwrap_err();
        assert_eq!((e.line, e.option.as_str()), (None, "-Z"));
        assert_eq!(e.message, "invalid option -- 'Z'");
        let e = parse_args(&argv(&["--time"])).unwrap_err();
        assert!(e.message.contains("needs a value"), "{}", e.message);
        let e = parse_args(&argv(&["-t"])).unwrap_err();
        assert!(e.message.contains("needs a value"), "{}", e.message);
        let e = parse_args(&argv(&["--job-name="])).unwrap_err();
        assert!(e.message.contains("needs a value"), "{}", e.message);
        let e = parse_args(&argv(&["--hold=yes"])).unwrap_err();
        assert!(e.message.contains("takes no value"), "{}", e.message);
        let e = parse_args(&argv(&["stray"])).unwrap_err();
        assert_eq!(e.option, "stray");
    }

    #[test]
    fn flags_do_not_swallow_the_next_word() {
        let s = parse_args(&argv(&[
            "--exclusive",
            "--hold",
            "--requeue",
            "-O",
            "--parsable",
            "-N",
            "3",
            "--nice",
            "-J",
            "x",
        ]))
        .unwrap();
        assert!(s.exclusive && s.hold && s.overcommit && s.parsable);
        assert_eq!(s.requeue, Some(true));
        assert_eq!(s.nodes, Some(3));
        assert_eq!(s.nice, Some(100));
        assert_eq!(s.job_name.as_deref(), Some("x"));
        let s = spec_of("#SBATCH --exclusive -N 2\n#SBATCH --no-requeue\n#SBATCH -HO\n");
        assert!(s.exclusive && s.hold && s.overcommit);
        assert_eq!((s.nodes, s.requeue), (Some(2), Some(false)));
        // A bare word after a flag is refused rather than taken as its value.
        let e = err_of("#SBATCH --exclusive user\n");
        assert_eq!(e.option, "user");
        let s = parse_args(&argv(&["--exclusive=user", "--nice=-5", "-HN2"])).unwrap();
        assert!(s.exclusive && s.hold);
        assert_eq!((s.nice, s.nodes), (Some(-5), Some(2)));
        assert!(parse_args(&argv(&["--exclusive=always"])).is_err());
        assert!(parse_args(&argv(&["--nice=soon"])).is_err());
    }

    #[test]
    fn bare_words_continue_a_directive_value() {
        let s = spec_of("#SBATCH --job-name={{ job_name }} -N 1\n");
        assert_eq!(s.job_name.as_deref(), Some("{{ job_name }}"));
        assert_eq!(s.nodes, Some(1));
        let e = err_of("#SBATCH --nodes {{ nodes }}\n");
        assert_eq!(e.option, "--nodes {{ nodes }}");
        assert_eq!(
            e.message,
            "not a number of nodes: \"{{ nodes }}\" (expected N or MIN-MAX)"
        );
    }

    #[test]
    fn memory_sizes_in_mib() {
        let s = parse_args(&argv(&[
            "--mem=16G",
            "--mem-per-cpu=2048",
            "--mem-per-gpu=1T",
        ]))
        .unwrap();
        assert_eq!(s.mem_mib, Some(16_384));
        assert_eq!(s.mem_per_cpu_mib, Some(2_048));
        assert_eq!(s.mem_per_gpu_mib, Some(1_048_576));
        assert_eq!(parse_args(&argv(&["--mem=0"])).unwrap().mem_mib, Some(0));
        assert_eq!(
            parse_args(&argv(&["--mem=1500K"])).unwrap().mem_mib,
            Some(2)
        );
        assert_eq!(
            parse_args(&argv(&["--mem=8gb"])).unwrap().mem_mib,
            Some(8_192)
        );
        for bad in [
            "--mem=lots",
            "--mem=16X",
            "--mem=G",
            "--mem=-1",
            "--mem=1.5G",
        ] {
            let e = parse_args(&argv(&[bad])).unwrap_err();
            assert!(
                e.message.contains("not a memory size"),
                "{bad}: {}",
                e.message
            );
        }
    }

    #[test]
    fn gpus_and_gres() {
        let s = parse_args(&argv(&["--gres=gpu:h100:4"])).unwrap();
        assert_eq!(s.gres.as_deref(), Some("gpu:h100:4"));
        assert_eq!(
            (s.gpus_per_node, s.gpu_type.as_deref()),
            (Some(4), Some("h100"))
        );
        let s = parse_args(&argv(&["--gres=gpu:a100:1,other:2"])).unwrap();
        assert_eq!(s.gres.as_deref(), Some("gpu:a100:1,other:2"));
        assert_eq!(
            (s.gpus_per_node, s.gpu_type.as_deref()),
            (Some(1), Some("a100"))
        );
        let s = parse_args(&argv(&["--gres=nvme:1"])).unwrap();
        assert_eq!((s.gres.as_deref(), s.gpus_per_node), (Some("nvme:1"), None));
        let s = parse_args(&argv(&["--gres=gpu"])).unwrap();
        assert_eq!(s.gpus_per_node, Some(1));
        let s = parse_args(&argv(&["-G", "a100:8", "--gpus-per-task=1"])).unwrap();
        assert_eq!((s.gpus, s.gpus_per_task), (Some(8), Some(1)));
        assert_eq!(s.gpu_type.as_deref(), Some("a100"));
        let s = parse_args(&argv(&["--gpus-per-node=h100:2"])).unwrap();
        assert_eq!(
            (s.gpus_per_node, s.gpu_type.as_deref()),
            (Some(2), Some("h100"))
        );
        for bad in [
            "--gres=gpu:h100:x",
            "--gres=gpu:1,gpu:2",
            "--gres=:1",
            "--gres=gpu:a:b:1",
            "--gpus=two",
            "--gpus-per-node=h100:",
            "--gpus-per-task=a:b:1",
        ] {
            assert!(parse_args(&argv(&[bad])).is_err(), "{bad}");
        }
    }

    #[test]
    fn times() {
        let s = parse_args(&argv(&["-t", "2-00:00:00", "--time-min=30"])).unwrap();
        assert_eq!((s.time_limit, s.time_min), (Some(172_800), Some(1_800)));
        assert_eq!(
            parse_args(&argv(&["--time=UNLIMITED"])).unwrap().time_limit,
            Some(0)
        );
        assert_eq!(
            parse_args(&argv(&["--time=0"])).unwrap().time_limit,
            Some(0)
        );
        let e = parse_args(&argv(&["--time=<time_limit>"])).unwrap_err();
        assert_eq!(e.option, "--time=<time_limit>");
        assert!(e.message.starts_with("not a time limit"), "{}", e.message);
    }

    #[test]
    fn arrays() {
        for ok in ["0-9%3", "1,3,5", "0-15:4%4", "7", "1-3,10-20:2"] {
            let s = parse_args(&argv(&["--array", ok])).unwrap();
            assert_eq!(s.array.as_deref(), Some(ok));
        }
        for bad in [
            "", "a", "3-1", "1-5:0", "1:2", "1-3%", "1-3%x", "1,,2", "-1",
        ] {
            assert!(
                parse_args(&argv(&[&format!("--array={bad}")])).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn dependencies() {
        for ok in [
            "afterok:123",
            "afterany:123:124",
            "singleton",
            "afterok:12_3,singleton",
            "after:5+10?afternotok:6",
            "aftercorr:7",
            "afterburstbuffer:8",
        ] {
            let s = parse_args(&argv(&["-d", ok])).unwrap();
            assert_eq!(s.dependency.as_deref(), Some(ok));
        }
        let e = parse_args(&argv(&["--dependency=expand:3"])).unwrap_err();
        assert_eq!(e.option, "--dependency=expand:3");
        assert!(e.message.contains("\"expand\""), "{}", e.message);
        for bad in [
            "afterok",
            "afterok:",
            "afterok:x",
            "afterok:1+5",
            "a:1,b:2?c:3",
            "after:1+x",
        ] {
            assert!(
                parse_args(&argv(&[&format!("--dependency={bad}")])).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn signals() {
        for ok in ["B:USR1@20", "USR1", "SIGUSR2@60", "R:10@5", "RB:TERM", "15"] {
            let s = parse_args(&argv(&[&format!("--signal={ok}")])).unwrap();
            assert_eq!(s.signal.as_deref(), Some(ok));
        }
        for bad in [
            "X:USR1",
            "USR9",
            "0",
            "65",
            "USR1@",
            "USR1@70000",
            "B:",
            "@20",
        ] {
            assert!(
                parse_args(&argv(&[&format!("--signal={bad}")])).is_err(),
                "{bad}"
            );
        }
        // The real-time signals are refused by name, not accepted and then never sent.
        for rt in ["34", "B:40@60", "64"] {
            let e = parse_args(&argv(&[&format!("--signal={rt}")])).unwrap_err();
            assert!(e.to_string().contains("real-time signal"), "{rt}: {e}");
            assert!(e.to_string().contains("--signal"), "{rt}: {e}");
        }
    }

    #[test]
    fn other_validated_values() {
        let s = parse_args(&argv(&[
            "--open-mode=append",
            "--wait-all-nodes=1",
            "--hint=nomultithread",
            "--mail-type=none",
            "--mail-user=a@b",
            "--begin=now+1hour",
            "--reservation=r",
            "-A",
            "acct",
            "-q",
            "high",
            "-C",
            "a100&nvlink",
            "--export=ALL,X=1",
            "-D",
            "/tmp",
            "--comment",
            "hi there",
        ]))
        .unwrap();
        assert_eq!(s.open_mode, Some(OpenMode::Append));
        assert_eq!(s.wait_all_nodes, Some(true));
        assert_eq!(s.hint.as_deref(), Some("nomultithread"));
        assert_eq!(s.mail_type.as_deref(), Some("none"));
        assert_eq!(s.constraint.as_deref(), Some("a100&nvlink"));
        assert_eq!(s.chdir.as_deref(), Some("/tmp"));
        assert_eq!(s.comment.as_deref(), Some("hi there"));
        assert_eq!(s.account.as_deref(), Some("acct"));
        assert_eq!(s.qos.as_deref(), Some("high"));
        for bad in [
            "--open-mode=sometimes",
            "--wait-all-nodes=2",
            "--hint=fast",
            "--mail-type=NEVER",
            "--ntasks=0",
            "--cpus-per-task=-1",
            "--ntasks-per-node=x",
        ] {
            assert!(parse_args(&argv(&[bad])).is_err(), "{bad}");
        }
    }

    #[test]
    fn directives_stop_at_the_first_command() {
        let s = spec_of("\n# comment\n  # indented comment\n#SBATCH -N 2\necho hi\n#SBATCH -N 3\n");
        assert_eq!(s.nodes, Some(2));
        let s = spec_of("##SBATCH -N 5\n# #SBATCH -N 6\n #SBATCH -N 7\n#SBATCHX -N 8\n");
        assert_eq!(s, JobSpec::default());
    }

    #[test]
    fn command_line_wins() {
        let job = parse_batch(
            &script("#SBATCH -t 10 -J script --gres=gpu:1\n"),
            &argv(&["--time=20", "--gres=gpu:2"]),
        )
        .unwrap();
        assert_eq!(job.spec.time_limit, Some(1_200));
        assert_eq!(job.spec.gpus_per_node, Some(2));
        assert_eq!(job.spec.job_name.as_deref(), Some("script"));
        let e = parse_batch(&script("#SBATCH -t 10\n"), &argv(&["-t", "soon"])).unwrap_err();
        assert_eq!((e.line, e.option.as_str()), (None, "-t soon"));
    }

    #[test]
    fn wrap() {
        let job = parse_batch("", &argv(&["--wrap", "echo hi", "-J", "w"])).unwrap();
        assert_eq!(
            job.script,
            "#!/bin/sh\n# This script was created by sbatch --wrap.\n\necho hi\n"
        );
        assert_eq!(job.spec.wrap.as_deref(), Some("echo hi"));
        let e = parse_batch(&script("echo\n"), &argv(&["--wrap=echo hi"])).unwrap_err();
        assert_eq!(e.option, "--wrap");
        let e = err_of("#SBATCH --wrap=ls\n");
        assert_eq!((e.line, e.option.as_str()), (Some(2), "--wrap=ls"));
        let e = parse_batch("  \n", &[]).unwrap_err();
        assert_eq!(e.option, "script");
    }

    #[test]
    fn script_checks() {
        let e = parse_batch("echo hi\n", &[]).unwrap_err();
        assert_eq!((e.line, e.option.as_str()), (Some(1), "script"));
        assert!(e.message.contains("does not look like a batch script"));
        let e = parse_batch("#!/bin/bash\r\n#SBATCH -N 1\r\n", &[]).unwrap_err();
        assert_eq!((e.line, e.option.as_str()), (Some(1), "script"));
        let job = parse_batch("#!/bin/bash\necho hi\n", &[]).unwrap();
        assert_eq!(job.script, "#!/bin/bash\necho hi\n");
    }

    #[test]
    fn overrides_copy_only_what_is_set() {
        let mut base = parse_args(&argv(&["-N", "2", "-J", "base", "-t", "10"])).unwrap();
        let over = parse_args(&argv(&["-J", "over", "--exclusive", "--no-requeue"])).unwrap();
        apply_spec_overrides(&mut base, &over);
        assert_eq!(base.job_name.as_deref(), Some("over"));
        assert_eq!((base.nodes, base.time_limit), (Some(2), Some(600)));
        assert!(base.exclusive);
        assert_eq!(base.requeue, Some(false));
        assert!(!base.hold);
    }

    #[test]
    fn whole_specs_are_checked_whatever_path_they_came_by() {
        assert_eq!(check_spec(&JobSpec::default()), Ok(()));
        let ok = parse_args(&argv(&["--mem=16G", "--nice=5", "-J", "train-1 é"])).unwrap();
        assert_eq!(check_spec(&ok), Ok(()));
        let refused = |spec: JobSpec, option: &str, needle: &str| {
            let e = check_spec(&spec).unwrap_err();
            assert_eq!(e.option, option, "{e}");
            assert!(e.message.contains(needle), "{e}");
        };
        // `--mem=18446744073709551615` parses (u64) but no database stores it.
        let mem = parse_args(&argv(&["--mem=18446744073709551615"])).unwrap();
        refused(mem, "--mem", "at most");
        refused(
            JobSpec {
                nice: Some(i32::MIN),
                ..Default::default()
            },
            "--nice",
            "out of range",
        );
        refused(
            JobSpec {
                ntasks_per_node: Some(0),
                ..Default::default()
            },
            "--ntasks-per-node",
            "out of range",
        );
        refused(
            JobSpec {
                nodes: Some(u32::MAX),
                ..Default::default()
            },
            "--nodes",
            "out of range",
        );
        refused(
            JobSpec {
                time_limit: Some(u64::MAX),
                ..Default::default()
            },
            "--time",
            "100 years",
        );
        refused(
            JobSpec {
                job_name: Some("x\u{1b}[2J".into()),
                ..Default::default()
            },
            "--job-name",
            "U+001B",
        );
        refused(
            JobSpec {
                comment: Some("a\u{202E}b".into()),
                ..Default::default()
            },
            "--comment",
            "U+202E",
        );
        refused(
            JobSpec {
                dependency: Some("afterok:99999999999999999999".into()),
                ..Default::default()
            },
            "--dependency",
            "not a job id",
        );
        refused(
            JobSpec {
                array: Some("0-".into()),
                ..Default::default()
            },
            "--array",
            "not an array",
        );
        let wrap = JobSpec {
            wrap: Some("echo a\n\techo b".into()),
            ..Default::default()
        };
        assert_eq!(check_spec(&wrap), Ok(()));
        refused(
            JobSpec {
                wrap: Some("echo \u{7}".into()),
                ..Default::default()
            },
            "--wrap",
            "U+0007",
        );
        // The option parser keeps the same rules.
        assert!(parse_args(&argv(&["--dependency=afterok:99999999999999999999"])).is_err());
    }

    #[test]
    fn node_selection_options() {
        let body = script(
            "#SBATCH -w node-[1-2] -x gpu7\n#SBATCH -p gpu,cpu --time-min=10 -t 1:00:00\n#SBATCH --cpus-per-gpu=4\n",
        );
        let s = parse_batch(&body, &[]).unwrap().spec;
        assert_eq!(s.nodelist.as_deref(), Some("node-[1-2]"));
        assert_eq!(s.exclude.as_deref(), Some("gpu7"));
        assert_eq!(s.partition.as_deref(), Some("gpu,cpu"));
        assert_eq!(s.partitions(), ["gpu", "cpu"]);
        assert_eq!((s.time_min, s.time_limit), (Some(600), Some(3600)));
        assert_eq!(s.cpus_per_gpu, Some(4));
        let s = parse_args(&argv(&["--nodelist=a,b", "--exclude", "c[1-3]", "-pa,b,a"])).unwrap();
        assert_eq!(
            (s.nodelist.as_deref(), s.exclude.as_deref()),
            (Some("a,b"), Some("c[1-3]"))
        );
        assert_eq!(s.partitions(), ["a", "b"]);
        for bad in [
            &["-w", "node-[3-1]"][..],
            &["-w", "/etc/hosts"],
            &["-x", "a,,b"],
            &["-p", "a,"],
            &["--cpus-per-gpu=0"],
            &["-C", "a&"],
            &["-w", "n[0-99999]"],
        ] {
            let e = parse_args(&argv(bad)).unwrap_err();
            assert_eq!(e.line, None, "{bad:?}");
        }
        let e = parse_args(&argv(&["-C", "a|(b"])).unwrap_err();
        assert!(e.message.contains("position 5"), "{e}");
        // Slurm's mutually exclusive pairs, and a --time-min over the limit.
        let e = check_spec(&parse_args(&argv(&["-c2", "--cpus-per-gpu=2"])).unwrap()).unwrap_err();
        assert_eq!(e.option, "--cpus-per-gpu");
        let e = check_spec(&parse_args(&argv(&["-t10", "--time-min=20"])).unwrap()).unwrap_err();
        assert_eq!(e.option, "--time-min");
        // A structured spec is held to the same rules.
        let e = check_spec(&JobSpec {
            nodelist: Some("n[".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.option, "--nodelist");
    }

    #[test]
    fn the_table_names_each_option_once_and_says_why_for_the_others() {
        let table: Vec<OptionInfo> = option_table().collect();
        for (i, o) in table.iter().enumerate() {
            assert!(
                !table[..i]
                    .iter()
                    .any(|p| p.long == o.long || (o.short.is_some() && p.short == o.short)),
                "--{} twice",
                o.long
            );
            if let Support::Refused(why) | Support::NoEffect(why) | Support::Partly(why) = o.support
            {
                assert!(why.len() > 20, "--{}: {why}", o.long);
            }
        }
        // The short letters of sbatch(1).
        for (c, long) in [
            ('a', "array"),
            ('A', "account"),
            ('b', "begin"),
            ('B', "extra-node-info"),
            ('c', "cpus-per-task"),
            ('C', "constraint"),
            ('d', "dependency"),
            ('D', "chdir"),
            ('e', "error"),
            ('F', "nodefile"),
            ('G', "gpus"),
            ('h', "help"),
            ('H', "hold"),
            ('i', "input"),
            ('J', "job-name"),
            ('k', "no-kill"),
            ('L', "licenses"),
            ('m', "distribution"),
            ('M', "clusters"),
            ('n', "ntasks"),
            ('N', "nodes"),
            ('o', "output"),
            ('O', "overcommit"),
            ('p', "partition"),
            ('q', "qos"),
            ('Q', "quiet"),
            ('s', "oversubscribe"),
            ('S', "core-spec"),
            ('t', "time"),
            ('v', "verbose"),
            ('V', "version"),
            ('w', "nodelist"),
            ('W', "wait"),
            ('x', "exclude"),
        ] {
            assert_eq!(short_option(c).unwrap().long, long, "-{c}");
        }
        assert_eq!(
            long_option("container-image").unwrap().support,
            Support::Refused(NO_PYXIS)
        );
        assert_eq!(long_option("wck").unwrap().long, "wckey");
    }

    #[test]
    fn refused_options_are_named_with_why_and_take_only_their_own_value() {
        let e = parse_args(&argv(&["--container-image", "nvcr.io/x", "-N", "2"])).unwrap_err();
        assert_eq!(e.option, "--container-image nvcr.io/x");
        assert!(
            e.message
                .starts_with("the pyxis plugin (enroot containers) is not available on Berth"),
            "{}",
            e.message
        );
        // A refused flag takes nothing with it.
        let e = parse_args(&argv(&["--reboot", "-N", "2"])).unwrap_err();
        assert_eq!(e.option, "--reboot");
        let e = parse_args(&argv(&["-k", "-N", "2"])).unwrap_err();
        assert_eq!(e.option, "-k");
        assert!(e.message.contains("NODE_FAIL"), "{}", e.message);
        let e =
            err_of("#SBATCH -N 1\n#SBATCH --container-image=nvcr.io#nvidia/pytorch:24.05-py3\n");
        assert_eq!(
            (e.line, e.option.as_str()),
            (
                Some(3),
                "--container-image=nvcr.io#nvidia/pytorch:24.05-py3"
            )
        );
        for (bad, needle) in [
            (&["-m", "cyclic"][..], "blocks"),
            (&["--propagate"], "ulimit"),
            (&["--propagate=ALL"], "ulimit"),
            (&["--input=data.txt"], "/dev/null"),
            (&["--kill-on-invalid-dep=yes"], "kill_invalid_depend"),
            (&["--uid=0"], "token"),
        ] {
            let e = parse_args(&argv(bad)).unwrap_err();
            assert!(e.message.contains(needle), "{bad:?}: {}", e.message);
        }
    }

    #[test]
    fn options_without_effect_and_the_commands_own() {
        let job = parse_batch(
            &script("#SBATCH --test-only -W\n"),
            &argv(&[
                "-Q",
                "-vv",
                "--get-user-env",
                "--get-user-env=10L",
                "--ignore-pbs",
                "--use-min-nodes",
                "--delay-boot=5",
                "-m",
                "block",
                "--propagate=none",
                "-i",
                "/dev/null",
            ]),
        )
        .unwrap();
        assert_eq!(
            job.client,
            ClientOptions {
                test_only: true,
                wait: true,
                quiet: true,
                verbose: 2,
                help: false,
                version: false,
                clusters: None,
            }
        );
        assert_eq!(job.spec, JobSpec::default());
        let job = parse_batch("", &argv(&["-h", "-V", "--usage", "--wrap=true"])).unwrap();
        assert!(job.client.help && job.client.version);
    }

    #[test]
    fn tres_per_task_wckey_and_mail() {
        let s = parse_args(&argv(&[
            "--tres-per-task=cpu=4,gres/gpu:a100=2",
            "--wckey=proj",
        ]))
        .unwrap();
        assert_eq!((s.cpus_per_task, s.gpus_per_task), (Some(4), Some(2)));
        assert_eq!(s.gpu_type.as_deref(), Some("a100"));
        assert_eq!(s.wckey.as_deref(), Some("proj"));
        let s = parse_args(&argv(&["--tres-per-task=gres/gpu=1"])).unwrap();
        assert_eq!((s.gpus_per_task, s.gpu_type), (Some(1), None));
        for bad in [
            "--tres-per-task=mem=1G",
            "--tres-per-task=cpu",
            "--tres-per-task=cpu=0",
            "--tres-per-task=gres/gpu:=1",
            "--tres-per-task=gres/nvme=1",
        ] {
            assert!(parse_args(&argv(&[bad])).is_err(), "{bad}");
        }
        // Berth sends no mail: only NONE passes, and a structured spec is held to it.
        assert!(parse_args(&argv(&["--mail-type=none", "--mail-user=a@b"])).is_ok());
        let e = parse_args(&argv(&["--mail-type=END,FAIL"])).unwrap_err();
        assert!(e.message.contains("webhook"), "{}", e.message);
        let e = check_spec(&JobSpec {
            mail_type: Some("ALL".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.option, "--mail-type");
    }

    #[test]
    fn every_option_is_reachable_by_its_full_name() {
        for name in supported_options() {
            assert_eq!(lookup_long(name).unwrap().long, name);
        }
    }
}
