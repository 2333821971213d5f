//! `berth submit` (and `sbatch`): splits an `sbatch` command line into its options, the
//! script path and Berth's own flags, sends the job, and with `--wait` follows it to
//! its end.
//!
//! Every `sbatch` option before the script path passes through verbatim as
//! [`JobCreate::args`]; the api parses them (command line wins over `#SBATCH` lines).
//! Berth's own flags are `-W/--wait`, `--url` and `--token`; `--parsable` both passes
//! through and changes what is printed.

use crate::client::Client;
use anyhow::{bail, Context};
use berth_core::state::JobState;
use berth_core::wire::{Job, JobCreate, JobWillRun, OutputStream};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A `berth submit` command line, split.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubmitArgs {
    /// The `sbatch` options, verbatim, in order (Berth's own `--url`/`--token` removed).
    pub sbatch_args: Vec<String>,
    /// The batch script's path, when one was given.
    pub script: Option<PathBuf>,
    /// Arguments after the script path, passed to the script (`$1 $2 …`), as `sbatch`
    /// passes them.
    pub script_args: Vec<String>,
    /// `-W/--wait`: wait for the job to end and exit with its exit code.
    pub wait: bool,
    /// `--parsable`: print only the job id.
    pub parsable: bool,
    /// `--test-only`: print when the job would start; submit nothing.
    pub test_only: bool,
    /// `--wrap` was given: the command is the script.
    pub wrap: bool,
    /// `-h/--help/--usage` was asked for.
    pub help: bool,
    /// `--usage` was asked for (a brief usage message, not the whole help).
    pub usage: bool,
    /// `-V/--version` was asked for.
    pub version: bool,
    /// Called as `sbatch` (a link of that name): Slurm's rules for what follows the
    /// script and for `--wait`.
    pub as_sbatch: bool,
    /// `--url`, when given among the options.
    pub url: Option<String>,
    /// `--token`, when given among the options.
    pub token: Option<String>,
}

/// Whether this process was started through a link named `sbatch`.
pub fn invoked_as_sbatch() -> bool {
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|f| f == "sbatch"))
        .unwrap_or(false)
}

/// Splits `berth submit`'s arguments as `sbatch` reads them: options (with their values,
/// attached or separate, by `sbatch`'s own option table,
/// [`berth_core::sbatch::option_table`]) until the first other argument, which is the
/// script path; `--` ends the options. Every argument after the script is the script's
/// (`sbatch job.sh a b` gives it `$1=a $2=b`); as `berth submit` (not `as_sbatch`),
/// Berth's own `--wait`, `-W`, `--url` and `--token` are still taken there.
///
/// # Errors
/// Slurm's words, naming the option: an option `sbatch` does not have (`unrecognized
/// option '--foo'`; it never takes the next argument as its value), an ambiguous
/// abbreviation, or an option that needs a value at the end of the command line.
pub fn split_submit_args(raw: &[String], as_sbatch: bool) -> anyhow::Result<SubmitArgs> {
    use berth_core::sbatch::{long_option, short_option, Arity};
    let mut out = SubmitArgs {
        as_sbatch,
        ..Default::default()
    };
    let mut i = 0;
    while i < raw.len() {
        let arg = &raw[i];
        i += 1;
        if arg == "--" {
            if i < raw.len() {
                out.script = Some(PathBuf::from(&raw[i]));
                take_script_args(&mut out, &raw[i + 1..])?;
            }
            return Ok(out);
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            if name == "url" || name == "token" {
                let value = match inline {
                    Some(v) => v,
                    None => {
                        let Some(v) = raw.get(i) else {
                            bail!("option '--{name}' requires an argument");
                        };
                        i += 1;
                        v.clone()
                    }
                };
                if name == "url" {
                    out.url = Some(value);
                } else {
                    out.token = Some(value);
                }
                continue;
            }
            let option = long_option(name).map_err(anyhow::Error::msg)?;
            match option.long {
                "help" => out.help = true,
                "usage" => {
                    out.help = true;
                    out.usage = true;
                }
                "version" => out.version = true,
                "wait" => out.wait = true,
                "parsable" => out.parsable = true,
                "test-only" => out.test_only = true,
                "wrap" => out.wrap = true,
                _ => {}
            }
            out.sbatch_args.push(arg.clone());
            if inline.is_none() && option.arity == Arity::Required {
                let Some(value) = raw.get(i) else {
                    bail!("option '--{}' requires an argument", option.long);
                };
                out.sbatch_args.push(value.clone());
                i += 1;
            }
            continue;
        }
        if arg.len() > 1 && arg.starts_with('-') {
            // A cluster of short options (`-vH`), the last of which may take a value,
            // attached (`-N2`) or as the next argument (`-N 2`).
            let mut takes_next = false;
            for (pos, c) in arg.char_indices().skip(1) {
                let option = short_option(c).map_err(anyhow::Error::msg)?;
                match c {
                    'h' => out.help = true,
                    'V' => out.version = true,
                    'W' => out.wait = true,
                    _ => {}
                }
                if option.arity == Arity::Required {
                    takes_next = pos + c.len_utf8() == arg.len();
                    if takes_next && i >= raw.len() {
                        bail!("option requires an argument -- '{c}'");
                    }
                    break;
                }
            }
            out.sbatch_args.push(arg.clone());
            if takes_next {
                out.sbatch_args.push(raw[i].clone());
                i += 1;
            }
            continue;
        }
        out.script = Some(PathBuf::from(arg));
        take_script_args(&mut out, &raw[i..])?;
        return Ok(out);
    }
    Ok(out)
}

/// After the script path: the script's arguments. As `berth submit`, Berth's own flags
/// (`--wait`, `-W`, `--url`, `--token`) are still taken there (`berth submit job.sh
/// --wait`); as `sbatch`, everything is the script's, as in Slurm.
fn take_script_args(out: &mut SubmitArgs, rest: &[String]) -> anyhow::Result<()> {
    if out.as_sbatch {
        out.script_args = rest.to_vec();
        return Ok(());
    }
    let mut i = 0;
    while i < rest.len() {
        let arg = &rest[i];
        i += 1;
        match arg.as_str() {
            "--wait" | "-W" => out.wait = true,
            "--url" | "--token" => {
                let Some(value) = rest.get(i) else {
                    bail!("option '{arg}' requires an argument");
                };
                i += 1;
                if arg == "--url" {
                    out.url = Some(value.clone());
                } else {
                    out.token = Some(value.clone());
                }
            }
            _ => {
                if let Some(v) = arg.strip_prefix("--url=") {
                    out.url = Some(v.to_string());
                } else if let Some(v) = arg.strip_prefix("--token=") {
                    out.token = Some(v.to_string());
                } else {
                    out.script_args.push(arg.clone());
                }
            }
        }
    }
    Ok(())
}

/// The submission environment: the whole current environment (`--export=ALL`, Slurm's
/// default) except `BERTH_TOKEN`, and the submitter's umask as `SLURM_UMASK` (four octal
/// digits, `0022`, as `sbatch` sends it: the job's files get it); variables that are not
/// UTF-8 are left out.
pub fn submit_environment() -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| k != "BERTH_TOKEN")
        .collect();
    if let Some(umask) = current_umask() {
        env.insert("SLURM_UMASK".to_string(), format!("{umask:04o}"));
    }
    env
}

/// This process's umask, from `/proc/self/status` (`Umask:` line; Linux 4.7 and later).
fn current_umask() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}

/// Builds the job to send: the script (read from `script`, else `stdin_script`), the
/// options, `submit_dir`, the current environment and the script's file name (the job's
/// name when nothing else names it, as in `sbatch`).
pub fn build_job(args: &SubmitArgs, script: Option<String>, submit_dir: &Path) -> JobCreate {
    JobCreate {
        script,
        args: args.sbatch_args.clone(),
        spec: None,
        submit_dir: Some(submit_dir.to_string_lossy().into_owned()),
        environment: submit_environment(),
        script_name: args
            .script
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|f| f.to_string_lossy().into_owned()),
        script_args: args.script_args.clone(),
    }
}

/// Reads the batch script: the file named, else standard input unless `--wrap` gives
/// the command.
pub fn read_script(args: &SubmitArgs) -> anyhow::Result<Option<String>> {
    if let Some(path) = &args.script {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("unable to open file {}", path.display()))?;
        return Ok(Some(text));
    }
    if args.wrap {
        return Ok(None);
    }
    use std::io::Read;
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("reading the batch script from standard input")?;
    Ok(Some(text))
}

/// Slurm's answer to `sbatch --test-only`: `sbatch: Job 12 to start at
/// 2026-12-02T03:04:05 using 8 processors on nodes node-[1-2] in partition gpu` (local
/// time, nodes as a host list). A job the plan gives no start yet reads `sbatch: Job 12
/// has no expected start yet (Priority) in partition gpu`.
pub fn will_run_line(answer: &JobWillRun) -> String {
    match answer.start_time {
        Some(start) => format!(
            "sbatch: Job {} to start at {} using {} processors on nodes {} in partition {}",
            answer.job_id,
            crate::format::scontrol_time(Some(start)),
            answer.cpus,
            berth_core::hostlist::compress(&answer.nodes),
            answer.partition
        ),
        None => format!(
            "sbatch: Job {} has no expected start yet ({}) in partition {}",
            answer.job_id,
            answer.reason.as_deref().unwrap_or("Resources"),
            answer.partition
        ),
    }
}

/// The exit status `berth submit --wait` ends with: the job's exit code, 0 for
/// COMPLETED, 1 for a job that ended otherwise without a non-zero code (CANCELLED,
/// TIMEOUT, killed by a signal …).
pub fn wait_exit_code(job: &Job) -> i32 {
    match (job.state, job.exit_code) {
        (JobState::Completed, code) => code.unwrap_or(0).clamp(0, 255),
        (_, Some(code)) if code != 0 => code.clamp(1, 255),
        _ => 1,
    }
}

/// Streams the job's stdout to this process's stdout until the job ends, then returns
/// the job in its final state. Falls back on polling when the stream is unavailable.
pub async fn follow_to_end(client: &Client, id: i64) -> anyhow::Result<Job> {
    let mut printer = crate::format::OutputPrinter::stdout();
    let followed = client
        .job_output_follow(id, OutputStream::Stdout, |bytes| {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&printer.chunk(bytes));
            let _ = out.flush();
        })
        .await;
    {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&printer.finish());
        let _ = out.flush();
    }
    if let Err(e) = followed {
        tracing::warn!("following the output of job {id}: {e}");
    }
    Ok(client.job_wait(id, Duration::from_millis(500)).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(args: &[&str]) -> SubmitArgs {
        let raw: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        split_submit_args(&raw, false).unwrap()
    }

    fn refused(args: &[&str]) -> String {
        let raw: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        split_submit_args(&raw, true).unwrap_err().to_string()
    }

    #[test]
    fn options_pass_through_until_the_script() {
        let s = split(&[
            "--gres=gpu:2",
            "-t",
            "10",
            "-N2",
            "--partition",
            "gpu",
            "--exclusive",
            "job.sh",
            "a",
            "--wait",
            "-b",
        ]);
        assert_eq!(
            s.sbatch_args,
            vec![
                "--gres=gpu:2",
                "-t",
                "10",
                "-N2",
                "--partition",
                "gpu",
                "--exclusive"
            ]
        );
        assert_eq!(s.script, Some(PathBuf::from("job.sh")));
        assert_eq!(s.script_args, vec!["a", "-b"]);
        assert!(s.wait && !s.parsable);
    }

    #[test]
    fn berth_flags_are_taken_out_and_parsable_kept() {
        let s = split(&[
            "--wait",
            "--url",
            "http://x:1",
            "--token=t",
            "--parsable",
            "-W",
            "job.sh",
        ]);
        assert!(s.wait && s.parsable);
        assert_eq!(s.sbatch_args, vec!["--wait", "--parsable", "-W"]);
        assert_eq!(s.url.as_deref(), Some("http://x:1"));
        assert_eq!(s.token.as_deref(), Some("t"));
    }

    #[test]
    fn short_option_clusters_and_wrap() {
        let s = split(&["-HWJ", "name", "--wrap", "echo hi"]);
        assert!(s.wait && s.wrap);
        assert_eq!(s.sbatch_args, vec!["-HWJ", "name", "--wrap", "echo hi"]);
        assert_eq!(s.script, None);
        assert_eq!(refused(&["-t"]), "option requires an argument -- 't'");
        assert_eq!(refused(&["--time"]), "option '--time' requires an argument");
        let s = split(&["--", "-odd-name.sh"]);
        assert_eq!(s.script, Some(PathBuf::from("-odd-name.sh")));
        assert!(split(&["--help"]).help);
    }

    #[test]
    fn unknown_options_are_named_and_take_nothing_with_them() {
        // Found failing: `--foo --wrap 'echo hi'` once read "echo hi" as the script.
        assert_eq!(
            refused(&["--foo", "--wrap", "echo hi"]),
            "unrecognized option '--foo'"
        );
        assert_eq!(refused(&["-Z", "job.sh"]), "invalid option -- 'Z'");
        assert_eq!(refused(&["-HZ", "job.sh"]), "invalid option -- 'Z'");
        assert!(refused(&["--gpu=1", "job.sh"]).contains("ambiguous"));
        // A refused option of Slurm's is split by its arity; the api names it.
        let s = split(&["--container-image", "nvcr.io/x", "job.sh"]);
        assert_eq!(s.sbatch_args, vec!["--container-image", "nvcr.io/x"]);
        assert_eq!(s.script, Some(PathBuf::from("job.sh")));
        let s = split(&["--reboot", "job.sh"]);
        assert_eq!(s.script, Some(PathBuf::from("job.sh")));
    }

    #[test]
    fn everything_after_the_script_is_its_arguments_as_sbatch() {
        let raw: Vec<String> = ["-N1", "job.sh", "a", "--wait", "--url", "x", "-b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let s = split_submit_args(&raw, true).unwrap();
        assert_eq!(s.script_args, vec!["a", "--wait", "--url", "x", "-b"]);
        assert!(!s.wait && s.url.is_none());
        let s = split(&["--test-only", "-V", "--usage", "job.sh"]);
        assert!(s.test_only && s.version && s.help);
    }

    fn job(state: JobState, code: Option<i32>) -> Job {
        serde_json::from_value(serde_json::json!({
            "id": 1, "name": "x", "user": "u", "account": null, "partition": "p",
            "qos": null, "state": state, "reason": null,
            "submit_time": "2026-01-01T00:00:00Z", "start_time": null, "end_time": null,
            "time_limit": null, "exit_code": code, "exit_signal": null, "num_nodes": 1,
            "num_tasks": 1, "gpus_per_node": 0, "allocations": [], "nodelist": null,
            "work_dir": null, "stdout_path": null, "stderr_path": null,
            "restart_count": 0, "spec": {}
        }))
        .unwrap()
    }

    #[test]
    fn wait_exit_codes_follow_the_job() {
        assert_eq!(wait_exit_code(&job(JobState::Completed, Some(0))), 0);
        assert_eq!(wait_exit_code(&job(JobState::Failed, Some(3))), 3);
        assert_eq!(wait_exit_code(&job(JobState::Cancelled, None)), 1);
        assert_eq!(wait_exit_code(&job(JobState::Timeout, Some(0))), 1);
    }

    #[test]
    fn environment_leaves_the_token_out() {
        let env = submit_environment();
        assert!(!env.contains_key("BERTH_TOKEN"));
    }
}
