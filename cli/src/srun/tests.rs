use super::*;

#[derive(clap::Parser)]
struct Srun {
    #[command(flatten)]
    args: SrunArgs,
}

fn parse(argv: &[&str]) -> SrunArgs {
    <Srun as clap::Parser>::try_parse_from(argv).unwrap().args
}

#[test]
fn options_glued_to_their_values_and_the_programs_own_flags() {
    let a = parse(&["srun", "-n1", "-l", "python", "-u", "train.py", "--lr", "3"]);
    assert_eq!(a.allocation.ntasks, Some(1));
    assert!(a.label);
    assert_eq!(a.command, ["python", "-u", "train.py", "--lr", "3"]);
    let a = parse(&["srun", "-N2", "--gpus-per-task=1", "--", "bash", "-c", "x"]);
    assert_eq!(
        (a.allocation.nodes, a.allocation.gpus_per_task),
        (Some(2), Some(1))
    );
    assert_eq!(a.command, ["bash", "-c", "x"]);
}

fn env() -> Vec<(String, String)> {
    [
        ("SLURM_JOB_ID", "4"),
        ("BERTH_TOKEN", "t"),
        ("HOME", "/home/a"),
        ("MASTER_ADDR", "node-1"),
    ]
    .iter()
    .map(|(n, v)| (n.to_string(), v.to_string()))
    .collect()
}

#[test]
fn export_passes_what_it_names() {
    let all = export_environment(None, env()).unwrap();
    assert_eq!(all.len(), 4);
    let none = export_environment(Some("NONE"), env()).unwrap();
    assert_eq!(
        none.keys().collect::<Vec<_>>(),
        ["BERTH_TOKEN", "SLURM_JOB_ID"]
    );
    let list = export_environment(Some("MASTER_ADDR,EXTRA=1"), env()).unwrap();
    assert_eq!(list["MASTER_ADDR"], "node-1");
    assert_eq!(list["EXTRA"], "1");
    assert!(!list.contains_key("HOME"));
    let all_plus = export_environment(Some("ALL,EXTRA=2"), env()).unwrap();
    assert_eq!(all_plus["HOME"], "/home/a");
    assert_eq!(all_plus["EXTRA"], "2");
    assert!(export_environment(Some("=x"), env()).is_err());
}

/// Runs `command` (a step's) as a task would, with the task's variables.
fn run_as_task(command: &[String], procid: u32) -> (String, String) {
    let out = std::process::Command::new(&command[0])
        .args(&command[1..])
        .env("SLURM_PROCID", procid.to_string())
        .env("SLURM_STEP_ID", "3")
        .env("SLURM_NODEID", "1")
        .env("SLURMD_NODENAME", "node-2")
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn job() -> PatternJob {
    PatternJob {
        job_id: "42".into(),
        user: "ann".into(),
        name: "it's".into(),
        array_job_id: None,
        array_task_id: None,
    }
}

#[test]
fn file_patterns_expand_in_each_tasks_shell() {
    let word = pattern_word(
        "/tmp/%x-%u-%j.%s-%3t-%n-%N-%J-%A-%%.log",
        &job(),
        "--output",
    )
    .unwrap();
    let out = std::process::Command::new("/bin/sh")
        .args(["-c", &format!("printf '%s' {word}")])
        .env("SLURM_PROCID", "7")
        .env("SLURM_STEP_ID", "3")
        .env("SLURM_NODEID", "1")
        .env("SLURMD_NODENAME", "node-2")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "/tmp/it's-ann-42.3-007-1-node-2-42.3-42-%.log"
    );
    assert!(pattern_word("x-%q", &job(), "--output")
        .unwrap_err()
        .to_string()
        .contains("--output=\"x-%q\": %q is not one of srun's"));
    assert!(pattern_word("x-%", &job(), "--error").is_err());
}

#[test]
fn output_none_and_one_tasks_output() {
    let args = |output: &str| SrunArgs {
        output: Some(output.into()),
        command: vec!["sh".into(), "-c".into(), "echo out-$SLURM_PROCID".into()],
        ..Default::default()
    };
    let request = step_request(&args("1"), None, Vec::new(), &job(), None).unwrap();
    assert_eq!(run_as_task(&request.command, 0).0, "");
    assert_eq!(run_as_task(&request.command, 1).0, "out-1\n");
    let request = step_request(&args("none"), None, Vec::new(), &job(), None).unwrap();
    assert_eq!(run_as_task(&request.command, 1).0, "");
    let plain = step_request(
        &SrunArgs {
            command: vec!["true".into()],
            ..Default::default()
        },
        None,
        Vec::new(),
        &job(),
        None,
    )
    .unwrap();
    assert_eq!(plain.command, ["true"], "no wrapper without redirections");
    let bad = SrunArgs {
        input: Some("2".into()),
        command: vec!["true".into()],
        ..Default::default()
    };
    assert!(step_request(&bad, None, Vec::new(), &job(), None).is_err());
}

#[test]
fn multi_prog_runs_each_tasks_line() {
    let config = "# comment\n\n0 echo leader %t\n1-2,5 echo worker %t %o\n* echo rest %t\n";
    let request = step_request(
        &SrunArgs {
            multi_prog: true,
            command: vec!["mp.conf".into()],
            ..Default::default()
        },
        None,
        Vec::new(),
        &job(),
        Some(config),
    )
    .unwrap();
    let run = |t| run_as_task(&request.command, t).0;
    assert_eq!(run(0), "leader 0\n");
    assert_eq!(run(2), "worker 2 1\n");
    assert_eq!(run(5), "worker 5 2\n");
    assert_eq!(run(9), "rest 9\n");
    let only = multi_prog_script("0 true\n").unwrap();
    let out = std::process::Command::new("/bin/sh")
        .args(["-c", &only, "srun"])
        .env("SLURM_PROCID", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no program for task 1"));
    for bad in ["0\n", "x-1 true\n", "3-1 true\n", "# only comments\n"] {
        assert!(multi_prog_script(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn refused_and_warned_options() {
    let with = |f: fn(&mut SrunArgs)| {
        let mut a = SrunArgs {
            command: vec!["true".into()],
            ..Default::default()
        };
        f(&mut a);
        a
    };
    let e = check_options(&with(|a| a.mpi = Some("pmix_v4".into())), None).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("--mpi=pmix_v4: Berth runs no PMI server"));
    assert!(
        check_options(&with(|_| {}), Some("pmi2")).is_err(),
        "SLURM_MPI_TYPE"
    );
    assert!(check_options(&with(|a| a.mpi = Some("openmpi".into())), None).is_err());
    assert_eq!(
        check_options(&with(|a| a.mpi = Some("list".into())), None).unwrap(),
        Some("MPI plugin types are...\n\tnone\n".to_string())
    );
    assert!(check_options(&with(|a| a.het_group = Some("0".into())), None).is_ok());
    assert!(check_options(&with(|a| a.pty = true), None).is_ok());
    assert!(check_options(
        &with(|a| {
            a.pty = true;
            a.output = Some("out.txt".into());
        }),
        None
    )
    .is_err());
    assert!(check_options(&with(|a| a.cpu_bind = Some("cores".into())), None).is_ok());
    assert!(check_options(&with(|a| a.distribution = Some("cyclic".into())), None).is_ok());
    assert!(check_options(&with(|a| a.distribution = Some("spiral".into())), None).is_err());
    let a = parse(&[
        "srun",
        "--wait=60",
        "-n",
        "2",
        "-u",
        "-m",
        "plane=2",
        "hostname",
    ]);
    assert_eq!((a.wait, a.unbuffered), (Some(60), true));
    assert_eq!(a.distribution.as_deref(), Some("plane=2"));
    assert_eq!(a.command, ["hostname"]);
}

#[test]
fn allocation_options_make_the_job() {
    let a = parse(&[
        "srun",
        "-N2",
        "--gpus-per-node=1",
        "-p",
        "gpu",
        "-t",
        "5",
        "python",
        "train.py",
    ]);
    let options = allocation_options(&a);
    for expected in [
        "--nodes=2",
        "--gpus-per-node=1",
        "--partition=gpu",
        "--time=5",
        "--job-name=python",
    ] {
        assert!(
            options.contains(&expected.to_string()),
            "{expected}: {options:?}"
        );
    }
    let job = berth_core::sbatch::parse_batch(&holder_script(Some(0)), &options).unwrap();
    assert_eq!(job.spec.nodes, Some(2));
}

/// srun and salloc read the allocation options alike (one declaration), each with
/// its own help, and they make the same job options.
#[test]
fn srun_and_salloc_share_the_allocation_options() {
    #[derive(clap::Parser)]
    struct Salloc {
        #[command(flatten)]
        args: crate::salloc::SallocArgs,
    }
    let words = [
        "-N2",
        "-n",
        "4",
        "--ntasks-per-node=2",
        "-c3",
        "--gpus-per-task=1",
        "-t",
        "5",
        "-J",
        "x",
        "-p",
        "gpu",
        "-A",
        "ml",
        "-q",
        "high",
        "--gres=gpu:1",
        "-G",
        "2",
        "--gpus-per-node=1",
        "--cpus-per-gpu=4",
        "--mem=1G",
        "--mem-per-cpu=512",
        "--mem-per-gpu=2G",
        "-C",
        "h100",
        "-w",
        "node-1",
        "-x",
        "node-2",
        "--reservation=r",
        "--exclusive",
    ];
    let line = |first: &'static str| {
        let mut line = vec![first];
        line.extend(words);
        line.push("true");
        line
    };
    let srun = parse(&line("srun"));
    let salloc = <Salloc as clap::Parser>::try_parse_from(line("salloc"))
        .unwrap()
        .args;
    assert_eq!(srun.allocation, salloc.allocation);
    assert_eq!(salloc.command, ["true"]);
    let options = allocation_options(&srun);
    for expected in [
        "--nodes=2",
        "--ntasks=4",
        "--ntasks-per-node=2",
        "--cpus-per-task=3",
        "--gpus-per-task=1",
        "--time=5",
        "--job-name=x",
        "--partition=gpu",
        "--account=ml",
        "--qos=high",
        "--gres=gpu:1",
        "--gpus=2",
        "--gpus-per-node=1",
        "--cpus-per-gpu=4",
        "--mem=1G",
        "--mem-per-cpu=512",
        "--mem-per-gpu=2G",
        "--constraint=h100",
        "--nodelist=node-1",
        "--exclude=node-2",
        "--reservation=r",
        "--exclusive",
    ] {
        assert!(
            options.contains(&expected.to_string()),
            "{expected}: {options:?}"
        );
    }
    // Each command's own help for the same option.
    let help = |cmd: clap::Command, id: &str| {
        cmd.get_arguments()
            .find(|a| a.get_id().as_str() == id)
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap()
    };
    let srun_cmd = <Srun as clap::CommandFactory>::command();
    let salloc_cmd = <Salloc as clap::CommandFactory>::command();
    assert_eq!(
        help(srun_cmd.clone(), "nodes"),
        "-N/--nodes: use the first N nodes of the allocation"
    );
    assert_eq!(help(salloc_cmd.clone(), "nodes"), "-N/--nodes");
    assert_eq!(
        help(srun_cmd.clone(), "account"),
        "-A/--account (outside an allocation)"
    );
    assert_eq!(
        help(salloc_cmd, "time"),
        "-t/--time: the allocation's time limit"
    );
    assert_eq!(
        help(srun_cmd, "ntasks_per_node"),
        "--ntasks-per-node (or Slurm's older --tasks-per-node)"
    );
    // A step is either --overlap or --exclusive.
    assert!(
        <Srun as clap::Parser>::try_parse_from(["srun", "--overlap", "--exclusive", "true"])
            .is_err()
    );
}

#[test]
fn labels_whole_lines_by_task() {
    let mut printer = Printer {
        label: true,
        stdout_task: None,
        stderr_task: None,
        width: 1,
        partial: HashMap::new(),
        printed: HashSet::new(),
    };
    let chunk = |seq, task_id, data: &str| StepOutputChunk {
        seq,
        task_id,
        stream: OutputStream::Stdout,
        data: data.into(),
    };
    printer.print(&chunk(1, 0, "a\nb"));
    assert_eq!(printer.partial[&(0, OutputStream::Stdout)], "b");
    printer.print(&chunk(2, 0, "c\n"));
    assert!(printer.partial.is_empty());
    // A chunk seen twice prints once.
    printer.print(&chunk(1, 0, "a\nb"));
    assert!(printer.partial.is_empty());
}

/// srun parsed as the Slurm name parses it: long options by any unambiguous prefix
/// (getopt_long's rule).
fn parse_slurm(argv: &[&str]) -> Result<SrunArgs, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let matches = Srun::command()
        .infer_long_args(true)
        .try_get_matches_from(argv)?;
    Ok(Srun::from_arg_matches(&matches)?.args)
}

/// Issue 29: the srun options Slurm scripts pass that were refused: Slurm's other
/// spellings (`--cpu_bind`, `--pack-group`, `--tasks-per-node`), `--comment`,
/// `--accel-bind`, `--mem-bind`, `--network`, and the `--container*` ones (refused by
/// name), also as prefixes.
#[test]
fn slurms_other_spellings_and_step_options() {
    let a = parse_slurm(&[
        "srun",
        "--comment",
        "x",
        "--cpu_bind=cores",
        "--accel-bind=g",
        "--network=sn_all",
        "--tasks-per-node=2",
        "--pack-group=0",
        "true",
    ])
    .unwrap();
    assert_eq!(a.extra.comment.as_deref(), Some("x"));
    assert_eq!(a.cpu_bind.as_deref(), Some("cores"));
    assert_eq!(a.allocation.ntasks_per_node, Some(2));
    assert_eq!(a.het_group.as_deref(), Some("0"));
    assert!(check_options(&a, None).is_ok());
    let request = step_request(&a, None, env(), &job(), None).unwrap();
    assert_eq!(request.gpu_bind.as_deref(), Some("closest"));
    assert_eq!(request.environment["SLURM_NETWORK"], "sn_all");
    assert!(allocation_options(&a).contains(&"--comment=x".to_string()));

    // Prefixes, as getopt_long reads them; an explicit --gpu-bind wins over --accel-bind.
    let a = parse_slurm(&[
        "srun",
        "--cpu_b=none",
        "--accel=vn",
        "--mem-b=local",
        "--gpu-bind=none",
        "true",
    ])
    .unwrap();
    assert_eq!(a.cpu_bind.as_deref(), Some("none"));
    assert_eq!(a.extra.accel_bind.as_deref(), Some("vn"));
    assert_eq!(a.extra.mem_bind.as_deref(), Some("local"));
    assert_eq!(effective_gpu_bind(&a).as_deref(), Some("none"));
    let a = parse_slurm(&["srun", "--accel-bind=n", "true"]).unwrap();
    assert_eq!(effective_gpu_bind(&a), None);
    // Slurm has no --mem_bind: refused as Slurm's getopt_long refuses it.
    assert!(parse_slurm(&["srun", "--mem_bind=local", "true"]).is_err());

    // --accel-bind without v, g or n: Slurm's words.
    let a = parse_slurm(&["srun", "--accel-bind=x", "true"]).unwrap();
    let e = check_options(&a, None).unwrap_err().to_string();
    assert!(e.starts_with("Invalid --accel-bind specification"), "{e}");

    // --het-group: 0 runs, another component is refused, nonsense is invalid.
    assert!(check_het_group("[0]").is_ok());
    assert!(check_het_group("0-0").is_ok());
    let e = check_het_group("0,1").unwrap_err().to_string();
    assert!(
        e.contains("het group value of 1, but the job allocation has maximum value of 0"),
        "{e}"
    );
    assert_eq!(
        check_het_group("a").unwrap_err().to_string(),
        "Invalid --het-group value: a"
    );

    // The --container* options: a clear refusal naming the option and its value.
    let a = parse_slurm(&["srun", "--container-image=nvcr.io#nvidia/pytorch", "true"]).unwrap();
    let e = check_options(&a, None).unwrap_err().to_string();
    assert!(
        e.starts_with("--container-image=nvcr.io#nvidia/pytorch: the pyxis plugin"),
        "{e}"
    );
    let a = parse_slurm(&["srun", "--container-mount-home", "true"]).unwrap();
    let e = check_options(&a, None).unwrap_err().to_string();
    assert!(
        e.starts_with("--container-mount-home: the pyxis plugin"),
        "{e}"
    );
    let a = parse_slurm(&["srun", "--container-id=abc", "true"]).unwrap();
    let e = check_options(&a, None).unwrap_err().to_string();
    assert!(e.starts_with("--container-id=abc: OCI containers"), "{e}");
    // `--container` is a name of its own, not a prefix of --container-id.
    let a = parse_slurm(&["srun", "--container=/b", "true"]).unwrap();
    assert_eq!(
        a.extra.containers.given,
        Some(("container".to_string(), Some("/b".to_string())))
    );
    assert!(parse_slurm(&["srun", "--true-bogus", "true"]).is_err());
}

/// sbatch's --open-mode reaches srun as SLURM_OPEN_MODE (`a`/`t`): Slurm reads the first
/// letter, either case.
#[test]
fn open_mode_by_its_first_letter() {
    let with = |mode: &str| SrunArgs {
        command: vec!["true".into()],
        output: Some("out.txt".into()),
        open_mode: Some(mode.into()),
        ..Default::default()
    };
    for (mode, op) in [
        ("a", ">>"),
        ("A", ">>"),
        ("append", ">>"),
        ("t", ">"),
        ("Truncate", ">"),
    ] {
        let redirect = redirections(&with(mode), &job()).unwrap();
        assert!(
            redirect.starts_with(&format!("exec {op}'out.txt'")),
            "{mode}: {redirect}"
        );
    }
    assert!(redirections(&with("x"), &job()).is_err());
}
