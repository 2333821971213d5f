//! The command line's own checks: the tree is consistent, no subcommand argument
//! shadows a global one, the Slurm names dispatch to their commands.

use super::*;
use crate::args::*;
use clap::{CommandFactory, Parser};

#[test]
fn command_line_tree_is_consistent() {
    Cli::command().debug_assert();
}

/// A subcommand's own argument named like a global one (`--url`, `--token` …) would
/// silently take the global's value: `berth webhook add URL` once sent its requests to
/// the webhook's URL.
#[test]
fn no_subcommand_argument_shares_a_global_arguments_id() {
    fn walk(cmd: &clap::Command, globals: &[String], path: &str, bad: &mut Vec<String>) {
        for sub in cmd.get_subcommands() {
            let here = format!("{path} {}", sub.get_name());
            for arg in sub.get_arguments() {
                let id = arg.get_id().as_str().to_string();
                if !arg.is_global_set() && globals.contains(&id) {
                    bad.push(format!("{here}: {id}"));
                }
            }
            walk(sub, globals, &here, bad);
        }
    }
    let cmd = Cli::command();
    let globals: Vec<String> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.get_id().as_str().to_string())
        .collect();
    assert!(globals.contains(&"url".to_string()), "{globals:?}");
    let mut bad = Vec::new();
    walk(&cmd, &globals, "berth", &mut bad);
    assert!(bad.is_empty(), "{bad:?}");
    let cli = Cli::try_parse_from([
        "berth",
        "webhook",
        "add",
        "https://hooks.example/x",
        "--event",
        "berth.job.ended",
    ])
    .unwrap();
    assert_eq!(cli.url, None);
}

#[test]
fn berth_dev_takes_its_rate_limits_and_output_cap() {
    let cli = Cli::try_parse_from([
        "berth",
        "dev",
        "--rate-limit-per-user",
        "0",
        "--rate-limit-per-address",
        "7",
        "--rate-limit-burst",
        "9",
        "--output-cap-mib",
        "0",
    ])
    .unwrap();
    match cli.command {
        Command::Dev {
            rate_limit_per_user,
            rate_limit_per_address,
            rate_limit_burst,
            output_cap_mib,
            ..
        } => assert_eq!(
            (
                rate_limit_per_user,
                rate_limit_per_address,
                rate_limit_burst,
                output_cap_mib
            ),
            (0, 7, 9, 0)
        ),
        other => panic!("{other:?}"),
    }
    let defaults = Cli::try_parse_from(["berth", "dev"]).unwrap();
    let Command::Dev {
        rate_limit_per_user,
        ..
    } = defaults.command
    else {
        panic!("dev");
    };
    assert_eq!(rate_limit_per_user, 100);
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
    assert!(matches!(cli.command, Command::Cancel(a) if a.ids == ["3", "4"]));
}

/// Whether a Slurm option Berth parsed is one it refuses: the refusal naming it.
fn refusal(cli: &Cli) -> Option<String> {
    match &cli.command {
        Command::Cancel(a) => a.refused(),
        Command::Nodes(a) => a.refused(),
        Command::Priority(a) => a.refused(),
        Command::Share(a) => a.refused(),
        Command::Stat(a) => a.refused(),
        Command::Queue { refused, .. } => refused.refused(),
        _ => None,
    }
}

/// Slurm's documented options of each command (from its man page), each honoured or
/// refused by name: none is an "unknown option", a refusal names the option, and an
/// unknown option never takes the next word as its value.
#[test]
fn every_documented_slurm_option_is_honoured_or_refused_by_name() {
    // (command, option words, Some(name in the refusal) or None: honoured)
    let table: &[(&str, &[&str], Option<&str>)] = &[
        ("scancel", &["-A", "ml"], None),
        ("scancel", &["--account=ml"], None),
        ("scancel", &["-b", "5"], None),
        ("scancel", &["--batch", "5"], None),
        ("scancel", &["-b", "-s", "USR1", "5"], None),
        ("scancel", &["-M", "c2"], None),
        ("scancel", &["--ctld", "5"], None),
        ("scancel", &["-c", "5"], Some("-c/--cron")),
        ("scancel", &["-f", "5"], None),
        ("scancel", &["--full", "5"], None),
        ("scancel", &["-f", "--signal=TERM", "5.0"], None),
        ("scancel", &["--hurry", "5"], None),
        ("scancel", &["-i", "5"], None),
        ("scancel", &["--interactive", "5"], None),
        ("scancel", &["-n", "x"], None),
        ("scancel", &["--name=x"], None),
        ("scancel", &["--jobname=x"], None),
        ("scancel", &["--me"], None),
        ("scancel", &["-p", "gpu"], None),
        ("scancel", &["--partition=gpu"], None),
        ("scancel", &["-q", "high"], None),
        ("scancel", &["--qos=high"], None),
        ("scancel", &["-Q", "5"], None),
        ("scancel", &["--quiet", "5"], None),
        ("scancel", &["-R", "maint"], None),
        ("scancel", &["--reservation=maint"], None),
        ("scancel", &["--sibling=c2", "5"], Some("--sibling")),
        ("scancel", &["-s", "USR1", "5"], None),
        ("scancel", &["--signal=USR1", "5"], None),
        ("scancel", &["-s", "10", "5.0"], None),
        ("scancel", &["-t", "PD"], None),
        ("scancel", &["--state=PENDING"], None),
        ("scancel", &["-u", "bob"], None),
        ("scancel", &["--user=bob"], None),
        ("scancel", &["-v", "5"], None),
        ("scancel", &["-w", "node-1"], None),
        ("scancel", &["--nodelist=node-1"], None),
        ("scancel", &["--wckey=k"], Some("--wckey")),
        ("scancel", &["5_[1-3]", "6_2", "7"], None),
        ("sinfo", &["-a"], None),
        ("sinfo", &["-d"], None),
        ("sinfo", &["-e"], None),
        ("sinfo", &["--federation"], Some("--federation")),
        ("sinfo", &["-h"], None),
        ("sinfo", &["--noheader"], None),
        ("sinfo", &["--hide"], None),
        ("sinfo", &["-i", "5"], None),
        ("sinfo", &["--json"], None),
        ("sinfo", &["--yaml"], None),
        ("sinfo", &["-l"], None),
        ("sinfo", &["--local"], None),
        ("sinfo", &["-M", "c2"], None),
        ("sinfo", &["-n", "node-1"], None),
        ("sinfo", &["--nodes=node-[1-2]"], None),
        ("sinfo", &["--noconvert"], None),
        ("sinfo", &["-N"], None),
        ("sinfo", &["--Node"], None),
        ("sinfo", &["-o", "%P %N"], None),
        ("sinfo", &["--format=%P"], None),
        ("sinfo", &["-O", "Partition,NodeList:10"], None),
        ("sinfo", &["--Format=StateLong"], None),
        ("sinfo", &["-p", "gpu"], None),
        ("sinfo", &["-r"], None),
        ("sinfo", &["-R"], None),
        ("sinfo", &["--list-reasons"], None),
        ("sinfo", &["-s"], None),
        ("sinfo", &["--summarize"], None),
        ("sinfo", &["-S", "P"], Some("-S/--sort")),
        ("sinfo", &["-t", "idle,drain"], None),
        ("sinfo", &["--states=idle"], None),
        ("sinfo", &["-T"], Some("-T/--reservation")),
        ("sinfo", &["-v"], None),
        ("squeue", &["-A", "ml"], None),
        ("squeue", &["-a"], None),
        ("squeue", &["-r"], None),
        ("squeue", &["--array-unique"], Some("--array-unique")),
        ("squeue", &["-M", "c2"], None),
        ("squeue", &["--federation"], Some("--federation")),
        ("squeue", &["-o", "%i"], None),
        ("squeue", &["-O", "JobID,Name"], None),
        ("squeue", &["-h"], None),
        ("squeue", &["--hide"], None),
        ("squeue", &["-i", "5"], None),
        ("squeue", &["-j", "5,6_2"], None),
        ("squeue", &["--json"], None),
        ("squeue", &["-L", "lic"], Some("-L/--licenses")),
        ("squeue", &["--local"], None),
        ("squeue", &["-l"], None),
        ("squeue", &["--me"], None),
        ("squeue", &["-n", "x"], None),
        ("squeue", &["--noconvert"], None),
        ("squeue", &["-w", "node-1"], None),
        ("squeue", &["--nodelist=node-1"], None),
        ("squeue", &["-p", "gpu"], None),
        ("squeue", &["-P"], Some("-P/--priority")),
        ("squeue", &["-q", "high"], None),
        ("squeue", &["-R", "maint"], Some("-R/--reservation")),
        ("squeue", &["--sibling"], Some("--sibling")),
        ("squeue", &["-S", "-t"], None),
        ("squeue", &["--start"], None),
        ("squeue", &["-t", "PD"], None),
        ("squeue", &["-s"], None),
        ("squeue", &["-u", "bob"], None),
        ("squeue", &["-v"], None),
        ("squeue", &["--yaml"], None),
        ("sprio", &["-j", "5,6"], None),
        ("sprio", &["--jobs=5"], None),
        ("sprio", &["-u", "bob"], None),
        ("sprio", &["-l"], None),
        ("sprio", &["-n"], None),
        ("sprio", &["-o", "%i %Y"], None),
        ("sprio", &["-p", "gpu"], None),
        ("sprio", &["-h"], None),
        ("sprio", &["-w"], Some("-w/--weights")),
        ("sprio", &["-S", "y"], Some("-S/--sort")),
        ("sprio", &["-M", "c2"], Some("-M/--clusters")),
        ("sprio", &["-v"], None),
        ("sshare", &["-a"], None),
        ("sshare", &["-A", "ml"], None),
        ("sshare", &["--accounts=ml"], None),
        ("sshare", &["-e"], None),
        ("sshare", &["-l"], None),
        ("sshare", &["-m"], Some("-m/--partition")),
        ("sshare", &["-M", "c2"], Some("-M/--clusters")),
        ("sshare", &["-n"], None),
        ("sshare", &["-o", "Account,FairShare"], None),
        ("sshare", &["-p"], None),
        ("sshare", &["-P"], None),
        ("sshare", &["-u", "bob"], None),
        ("sshare", &["--users=bob"], None),
        ("sshare", &["-U"], None),
        ("sshare", &["-v"], None),
        ("sshare", &["--json"], None),
        ("sshare", &["--yaml"], None),
        ("sstat", &["-a", "-j", "17"], None),
        ("sstat", &["-e"], None),
        ("sstat", &["-i", "-j", "17"], Some("-i/--pidformat")),
        ("sstat", &["-j", "17"], None),
        ("sstat", &["--jobs=17,18"], None),
        ("sstat", &["-n", "-j", "17"], None),
        ("sstat", &["--noconvert", "-j", "17"], None),
        ("sstat", &["-o", "JobID", "-j", "17"], None),
        ("sstat", &["--format=JobID", "-j", "17"], None),
        ("sstat", &["--fields=JobID", "-j", "17"], None),
        ("sstat", &["-p", "-j", "17"], None),
        ("sstat", &["-P", "-j", "17"], None),
        ("sstat", &["-v", "-j", "17"], None),
        ("sacct", &["-S", "now-1hour", "-E", "now"], None),
        ("sacct", &["--json"], None),
        ("sacct", &["--yaml"], None),
        ("sacct", &["-u", "bob", "-a", "-A", "ml", "-s", "CD"], None),
        (
            "sacct",
            &["-j", "5", "-X", "-D", "-r", "gpu", "-q", "high"],
            None,
        ),
        (
            "sacct",
            &["-N", "node-1", "-o", "JobID", "-P", "-p", "-n", "-e"],
            None,
        ),
    ];
    for (command, words, refused) in table {
        let mut line = vec![command.to_string()];
        line.extend(words.iter().map(|w| w.to_string()));
        let argv = slurm_alias(line.iter().map(OsString::from).collect());
        let cli = match Cli::try_parse_from(&argv) {
            Ok(cli) => cli,
            Err(e) => panic!("{command} {words:?}: not parsed: {e}"),
        };
        match (refusal(&cli), refused) {
            (None, None) => {}
            (Some(message), Some(name)) => assert!(
                message.starts_with(&format!("{command}: {name} ")),
                "{command} {words:?}: {message}"
            ),
            (got, want) => panic!("{command} {words:?}: refusal {got:?}, wanted {want:?}"),
        }
    }
    // An unknown option is refused by its name and takes no value with it.
    for command in [
        "scancel", "sinfo", "squeue", "sprio", "sshare", "sstat", "sacct",
    ] {
        let argv = slurm_alias(
            [command, "--bogus-option", "5"]
                .iter()
                .map(OsString::from)
                .collect(),
        );
        let err = Cli::try_parse_from(&argv).unwrap_err();
        assert_eq!(
            err.kind(),
            clap::error::ErrorKind::UnknownArgument,
            "{command}"
        );
        assert!(
            err.to_string().contains("--bogus-option"),
            "{command}: {err}"
        );
    }
}

/// The documentation's option table is what the parsers' tables make of it
/// (`docs/src/generated/options.md`). `BERTH_UPDATE_DOCS=1` rewrites it.
#[test]
fn docs_options() {
    let mut command = Cli::command();
    command.build();
    let generated = crate::docs::options_markdown(&command);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate::docs::PATH);
    if std::env::var_os("BERTH_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is stale: run `BERTH_UPDATE_DOCS=1 cargo test -p berth --bin berth docs_options`",
        crate::docs::PATH
    );
    for needle in [
        "`--gres=list`",
        "refused: ",
        "## srun",
        "## squeue",
        "## scontrol",
    ] {
        assert!(generated.contains(needle), "{needle}");
    }
}

/// Issue 29: every Slurm-named command parsed by clap takes any unambiguous prefix of each
/// of its long options as that option (getopt_long's rule): for each long option, each
/// prefix from the shortest unambiguous one up parses to the same value as the full
/// name. An option no probe value satisfies is named at the end (none today).
#[test]
fn every_long_option_takes_its_unambiguous_prefixes() {
    use crate::slurm::{command_for, subcommand_of};
    let probes = [
        "1", "x", "all", "1:00", "1-2", "5.0", "node-1", "/tmp", "yes",
    ];
    let mut unprobed = Vec::new();
    for name in [
        "srun", "salloc", "squeue", "sacct", "scancel", "sinfo", "sprio", "sshare", "sstat",
        "sattach", "sbcast", "strigger",
    ] {
        let command = command_for(Cli::command(), name);
        let mut built = command.clone();
        built.build();
        let sub = built.find_subcommand(subcommand_of(name).unwrap()).unwrap();
        let parse = |argv: &[String]| {
            let mut argv: Vec<std::ffi::OsString> = argv.iter().map(Into::into).collect();
            argv.insert(0, name.into());
            command
                .clone()
                .try_get_matches_from(crate::slurm::slurm_alias(argv))
        };
        // The positional arguments that make a bare command line parse.
        let base = [
            vec![],
            vec!["1".to_string()],
            vec!["1.0".to_string()],
            vec!["x".to_string(), "y".to_string()],
        ]
        .into_iter()
        .find(|b| parse(b).is_ok())
        .unwrap_or_else(|| panic!("{name}: no bare command line parses"));
        let longs: Vec<&str> = sub
            .get_arguments()
            .flat_map(|a| {
                a.get_long()
                    .into_iter()
                    .chain(a.get_all_aliases().unwrap_or_default())
            })
            .collect();
        for arg in sub.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if matches!(long, "help" | "version") || arg.is_global_set() {
                continue;
            }
            let takes = matches!(
                arg.get_action(),
                clap::ArgAction::Set | clap::ArgAction::Append
            );
            let values: Vec<String> = match arg.get_possible_values() {
                v if !v.is_empty() => v.iter().map(|p| p.get_name().to_string()).collect(),
                _ => probes.iter().map(|p| p.to_string()).collect(),
            };
            let line = |flag: &str, value: Option<&str>| {
                let mut v = vec![match value {
                    Some(value) if takes => format!("{flag}={value}"),
                    _ => flag.to_string(),
                }];
                v.extend(base.iter().cloned());
                v
            };
            let candidates: Vec<Option<String>> = if takes {
                values.into_iter().map(Some).collect()
            } else {
                vec![None]
            };
            let Some((value, full)) = candidates.into_iter().find_map(|v| {
                parse(&line(&format!("--{long}"), v.as_deref()))
                    .ok()
                    .map(|m| (v, m))
            }) else {
                unprobed.push(format!("{name} --{long}"));
                continue;
            };
            let id = arg.get_id().as_str();
            let raw = |m: &clap::ArgMatches| {
                let m = m.subcommand().unwrap().1;
                m.get_raw_occurrences(id).map(|o| {
                    o.map(|v| v.map(|s| s.to_os_string()).collect::<Vec<_>>())
                        .collect::<Vec<_>>()
                })
            };
            let shortest = (1..=long.len())
                .find(|&k| longs.iter().filter(|l| l.starts_with(&long[..k])).count() == 1)
                // A name that is the start of another (`--state`, `--states`) has no
                // prefix of its own.
                .unwrap_or(long.len());
            for k in shortest..long.len() {
                let prefix = format!("--{}", &long[..k]);
                let got = parse(&line(&prefix, value.as_deref()))
                    .unwrap_or_else(|e| panic!("{name} {prefix} (for --{long}): {e}"));
                assert_eq!(raw(&got), raw(&full), "{name} {prefix} is not --{long}");
            }
        }
    }
    assert!(
        unprobed.is_empty(),
        "options no probe value satisfies: {unprobed:?}"
    );
}
