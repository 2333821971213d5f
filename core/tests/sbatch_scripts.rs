//! The example batch scripts of `examples/`, parsed as `sbatch` would, against the values
//! their comments expect.

use berth_core::sbatch::{parse_args, parse_batch, BatchJob};
use berth_core::spec::{JobSpec, OpenMode};

fn parse(script: &str) -> BatchJob {
    parse_batch(script, &[]).expect("the example parses")
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|s| s.to_string()).collect()
}

#[test]
fn single_gpu() {
    let job = parse(include_str!("../../examples/single_gpu.sbatch"));
    let s = &job.spec;
    assert_eq!(s.job_name.as_deref(), Some("finetune-small"));
    assert_eq!(s.partition.as_deref(), Some("gpu"));
    assert_eq!(s.gres.as_deref(), Some("gpu:1"));
    assert_eq!(s.gpus_per_node, Some(1));
    assert_eq!(s.cpus_per_task, Some(4));
    assert_eq!(s.mem_mib, Some(16_384));
    assert_eq!(s.time_limit, Some(600));
    assert_eq!(s.output.as_deref(), Some("%x-%j.out"));
    assert_eq!(job.script, include_str!("../../examples/single_gpu.sbatch"));
    let r = s.resource_request();
    assert_eq!((r.nodes, r.gpus_per_node, r.cpus_per_task), (1, 1, 4));
}

#[test]
fn multi_node_torchrun() {
    let s = parse(include_str!("../../examples/multi_node_torchrun.sbatch")).spec;
    assert_eq!(s.job_name.as_deref(), Some("pretrain-2n"));
    assert_eq!(s.nodes, Some(2));
    assert_eq!(s.ntasks_per_node, Some(1));
    assert_eq!(s.gpus_per_node, Some(4));
    assert_eq!(s.cpus_per_task, Some(8));
    assert_eq!(s.time_limit, Some(900));
    assert_eq!(s.output.as_deref(), Some("logs/%x-%j.out"));
    assert_eq!(s.error.as_deref(), Some("logs/%x-%j.err"));
    let r = s.resource_request();
    assert_eq!((r.nodes, r.ntasks, r.gpus_per_node), (2, 2, 4));
}

#[test]
fn tasks_per_gpu() {
    let s = parse(include_str!("../../examples/tasks_per_gpu.sbatch")).spec;
    assert_eq!(s.job_name.as_deref(), Some("ddp-per-gpu"));
    assert_eq!(s.nodes, Some(1));
    assert_eq!(s.ntasks, Some(8));
    assert_eq!(s.gpus_per_task, Some(1));
    assert_eq!(s.time_limit, Some(600));
    assert_eq!(s.output.as_deref(), Some("%x.%j.out"));
    assert_eq!(s.resource_request().gpus_per_node, 8);
}

#[test]
fn array_sweep() {
    let s = parse(include_str!("../../examples/array_sweep.sbatch")).spec;
    assert_eq!(s.job_name.as_deref(), Some("lr-sweep"));
    assert_eq!(s.array.as_deref(), Some("0-9%3"));
    assert_eq!(s.gres.as_deref(), Some("gpu:1"));
    assert_eq!(s.gpus_per_node, Some(1));
    assert_eq!(s.time_limit, Some(300));
    assert_eq!(s.output.as_deref(), Some("sweep_%A_%a.out"));
}

#[test]
fn checkpoint_requeue() {
    let s = parse(include_str!("../../examples/checkpoint_requeue.sbatch")).spec;
    assert_eq!(s.job_name.as_deref(), Some("ckpt-resume"));
    assert_eq!(s.signal.as_deref(), Some("B:USR1@20"));
    assert_eq!(s.requeue, Some(true));
    assert_eq!(s.open_mode, Some(OpenMode::Append));
    assert_eq!(s.time_limit, Some(60));
    assert_eq!(s.gpus_per_node, Some(1));
    assert_eq!(s.output.as_deref(), Some("ckpt-%j.out"));
}

#[test]
fn exclusive_whole_node() {
    let s = parse(include_str!("../../examples/exclusive_whole_node.sbatch")).spec;
    assert_eq!(s.job_name.as_deref(), Some("whole-node"));
    assert_eq!(s.partition.as_deref(), Some("gpu"));
    assert_eq!(s.nodes, Some(1));
    assert!(s.exclusive);
    assert_eq!(
        (s.gres.as_deref(), s.gpus, s.gpus_per_node, s.gpus_per_task),
        (None, None, None, None)
    );
    assert_eq!(s.time_limit, Some(300));
    assert!(s.resource_request().whole_node);
}

#[test]
fn directive_quirks() {
    let s = parse(include_str!("../../examples/directive_quirks.sbatch")).spec;
    let expected = JobSpec {
        job_name: Some("quirky run".into()),
        nodes: Some(1),
        ntasks_per_node: Some(1),
        gres: Some("gpu:2".into()),
        gpus_per_node: Some(2),
        time_limit: Some(86_400),
        partition: Some("gpu".into()),
        output: Some("out-%j.log".into()),
        error: Some("err-%j.log".into()),
        comment: Some("two words".into()),
        ..Default::default()
    };
    // Everything else, including nodes from `##SBATCH --nodes=64` and the `--nodes=8` after
    // the first command, is absent.
    assert_eq!(s, expected);
}

#[test]
fn unrendered_template_fails_on_line_3() {
    let e = parse_batch(
        include_str!("../../examples/unrendered_template.sbatch"),
        &[],
    )
    .expect_err("placeholders are refused");
    assert_eq!(e.line, Some(3));
    assert!(e.option.contains("--nodes"), "{}", e.option);
    assert_eq!(e.option, "--nodes={{ nodes }}");
    assert!(e.message.contains("not a number of nodes"), "{}", e.message);
    assert!(e.message.contains("{{ nodes }}"), "{}", e.message);
    assert_eq!(
        e.to_string(),
        "line 3: --nodes={{ nodes }}: not a number of nodes: \"{{ nodes }}\" (expected N or MIN-MAX)"
    );
}

/// The submissions of `dependency_chain.sh`, with the job ids the shell would substitute.
#[test]
fn dependency_chain_wrap_lines() {
    let pre = parse_args(&argv(&[
        "--parsable",
        "--job-name=preprocess",
        "--wrap=echo tokenising; sleep 2",
    ]))
    .unwrap();
    assert!(pre.parsable);
    assert_eq!(pre.wrap.as_deref(), Some("echo tokenising; sleep 2"));

    let train = parse_args(&argv(&[
        "--parsable",
        "--job-name=train",
        "--gres=gpu:1",
        "--dependency=afterok:123",
        "--wrap=echo training; sleep 3",
    ]))
    .unwrap();
    assert_eq!(train.dependency.as_deref(), Some("afterok:123"));
    assert_eq!(train.gpus_per_node, Some(1));

    let eval = parse_args(&argv(&[
        "--parsable",
        "--job-name=evaluate",
        "--dependency=afterany:123",
        "--wrap=echo evaluating",
    ]))
    .unwrap();
    assert_eq!(eval.dependency.as_deref(), Some("afterany:123"));

    for cmd in ["sleep 3; echo first", "echo second"] {
        let wrap = format!("--wrap={cmd}");
        let job = parse_batch(
            "",
            &argv(&[
                "--parsable",
                "--job-name=nightly",
                "--dependency=singleton",
                &wrap,
            ]),
        )
        .unwrap();
        assert_eq!(job.spec.dependency.as_deref(), Some("singleton"));
        assert_eq!(job.spec.job_name.as_deref(), Some("nightly"));
        assert_eq!(
            job.script,
            format!("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{cmd}\n")
        );
    }

    let e = parse_args(&argv(&["--dependency=expand:3", "--wrap=true"])).unwrap_err();
    assert_eq!(e.line, None);
    assert!(e.option.contains("--dependency"), "{}", e.option);
    assert!(e.message.contains("expand"), "{}", e.message);
}

#[test]
fn command_line_overrides_an_example() {
    let job = parse_batch(
        include_str!("../../examples/single_gpu.sbatch"),
        &argv(&["--gres=gpu:h100:2", "-t", "30", "-J", "cli"]),
    )
    .unwrap();
    let s = job.spec;
    assert_eq!(s.job_name.as_deref(), Some("cli"));
    assert_eq!(
        (s.gpus_per_node, s.gpu_type.as_deref()),
        (Some(2), Some("h100"))
    );
    assert_eq!(s.time_limit, Some(1_800));
    assert_eq!(s.cpus_per_task, Some(4));
}

#[test]
fn the_driver_script_is_not_parsed_for_directives() {
    // dependency_chain.sh has no #SBATCH lines; it is a valid script with an empty spec.
    let job = parse(include_str!("../../examples/dependency_chain.sh"));
    assert_eq!(job.spec, JobSpec::default());
}
