//! Inside a job: `srun` job steps across nodes, `scontrol show hostnames`, GPU binding
//! per task, `--kill-on-bad-exit`, and the job-scoped token the commands use.

use crate::cluster::{example, Options, TestCluster};
use berth_core::state::JobState;
use berth_core::step::{StepList, StepState};
use std::collections::{BTreeMap, BTreeSet};

fn read(name: &str) -> String {
    std::fs::read_to_string(example(name)).unwrap()
}

/// The `key=value` words of one output line.
fn fields(line: &str) -> BTreeMap<&str, &str> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_node_torchrun_runs_one_rank_per_node_with_the_master_of_the_nodelist() {
    let c = TestCluster::start(Options::default()).await;
    let id = c.submit(&read("multi_node_torchrun.sbatch"), &[]).await;
    let job = c.wait_ended(id, 90).await;
    let out = c.output(id).await;
    let err = std::fs::read_to_string(c.dir.join(format!("logs/pretrain-2n-{id}.err")))
        .unwrap_or_default();
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}\n{err}");
    assert_eq!(job.exit_code, Some(0));

    let header = fields(out.lines().next().unwrap());
    assert_eq!(header["nodes"], "2");
    assert_eq!(header["nnodes"], "2");
    assert_eq!(header["nodelist"], "node-[1-2]");
    assert_eq!(header["master"], "node-1", "first of the node list");

    let ranks: Vec<BTreeMap<&str, &str>> = out
        .lines()
        .filter(|l| l.starts_with("rank="))
        .map(fields)
        .collect();
    assert_eq!(ranks.len(), 2, "{out}");
    let mut nodes = BTreeSet::new();
    for rank in &ranks {
        assert_eq!(rank["master"], "node-1");
        assert_eq!(rank["world"], "2");
        assert_eq!(rank["local"], "0");
        assert_eq!(rank["rank"], rank["node_rank"]);
        assert_eq!(rank["gpus"].split(',').count(), 4, "4 devices per node");
        nodes.insert(rank["node"]);
    }
    assert_eq!(nodes.len(), 2, "two distinct nodes: {out}");
    let by_rank: BTreeMap<&str, &str> = ranks.iter().map(|r| (r["rank"], r["node"])).collect();
    assert_eq!(by_rank["0"], "node-1");
    assert_eq!(by_rank["1"], "node-2");
    // Each rank's GPUs are that node's allocation.
    for rank in &ranks {
        let alloc = job
            .allocations
            .iter()
            .find(|a| a.node == rank["node"])
            .unwrap();
        let expected: Vec<String> = alloc.gpus.iter().map(u32::to_string).collect();
        assert_eq!(rank["gpus"], expected.join(","));
    }
    for rank in ["0", "1"] {
        assert_eq!(
            out.lines()
                .filter(|l| *l == format!("rank {rank} done"))
                .count(),
            1,
            "{out}"
        );
    }

    // The step is recorded with both tasks.
    let steps: StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
    assert_eq!(steps.items.len(), 1);
    let step = &steps.items[0];
    assert_eq!(step.state, StepState::Completed);
    assert_eq!(step.exit_code, Some(0));
    assert_eq!(step.nodelist, "node-[1-2]");
    assert!(step.kill_on_bad_exit);
    assert_eq!(step.tasks.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_per_gpu_gives_each_of_eight_tasks_its_own_device() {
    let c = TestCluster::start(Options::default()).await;
    let id = c.submit(&read("tasks_per_gpu.sbatch"), &[]).await;
    let job = c.wait_ended(id, 90).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    let lines: Vec<BTreeMap<&str, &str>> = out
        .lines()
        .filter(|l| l.starts_with("procid="))
        .map(fields)
        .collect();
    assert_eq!(lines.len(), 8, "{out}");
    let procids: BTreeSet<u32> = lines.iter().map(|l| l["procid"].parse().unwrap()).collect();
    assert_eq!(procids, (0..8).collect());
    let localids: BTreeSet<u32> = lines
        .iter()
        .map(|l| l["localid"].parse().unwrap())
        .collect();
    assert_eq!(localids, (0..8).collect());
    let allocated: Vec<String> = job.allocations[0].gpus.iter().map(u32::to_string).collect();
    assert_eq!(allocated.len(), 8);
    let mut devices = BTreeSet::new();
    for line in &lines {
        assert_eq!(line["cvd"].split(',').count(), 1, "one device per task");
        assert!(allocated.contains(&line["cvd"].to_string()));
        devices.insert(line["cvd"]);
        assert_eq!(line["job_gpus"], allocated.join(","));
    }
    assert_eq!(devices.len(), 8, "each task its own device");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_on_bad_exit_stops_the_other_tasks_and_srun_fails_with_the_task_code() {
    let c = TestCluster::start(Options::default()).await;
    // Rank 1 fails at once; rank 0 would sleep for minutes.
    let script = "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=1 -t 5\n\
        srun -l --kill-on-bad-exit bash -c 'if [ $SLURM_PROCID = 1 ]; then echo failing; exit 3; fi; echo waiting; sleep 300'\n\
        echo srun_exit=$?\n";
    let id = c.submit(script, &[]).await;
    let job = c.wait_ended(id, 90).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert!(out.contains("srun_exit=3"), "{out}");
    assert!(out.contains("1: failing"), "labelled: {out}");
    let steps: StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
    let step = &steps.items[0];
    assert_eq!(step.state, StepState::Failed);
    assert_eq!(step.exit_code, Some(3));
    // Rank 0 was stopped (SIGTERM), or never started when rank 1 failed first.
    let rank0 = &step.tasks[0];
    assert!(rank0.ended_at.is_some());
    assert!(
        rank0.exit_signal == Some(15)
            || rank0.message.as_deref() == Some("not started: the step was stopped"),
        "{rank0:?}"
    );
    assert!(!out.contains("0: done"), "{out}");
    assert!(step.kill_reason.as_deref().unwrap().contains("task 1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_honour_ntasks_nodelist_and_refuse_what_the_allocation_lacks() {
    let c = TestCluster::start(Options::default()).await;
    // Two tasks per node: the job holds two CPUs on each, which steps of up to two tasks
    // per node fit in (a step asking more CPUs than the job holds is refused, as srun's).
    let script = "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=2 --gpus-per-node=2 -t 5\n\
        srun -n 3 bash -c 'echo t=$SLURM_PROCID n=$SLURMD_NODENAME s=$SLURM_STEP_ID g=$CUDA_VISIBLE_DEVICES sg=$SLURM_STEP_GPUS'\n\
        srun -w node-2 bash -c 'echo only=$SLURMD_NODENAME s=$SLURM_STEP_ID'\n\
        srun -n 2 --gpus-per-task=3 true; echo refused=$?\n\
        srun -w node-9 true; echo unknown=$?\n\
        srun -n 4 --gpu-bind=single:2 bash -c 'echo b=$SLURM_PROCID g=$CUDA_VISIBLE_DEVICES'\n\
        srun -n 2 --gpus-per-task=1 --gpu-bind=none bash -c 'echo nb=$SLURM_PROCID g=$CUDA_VISIBLE_DEVICES'\n\
        srun sh -c 'exit 5'; echo last=$?\n";
    let id = c.submit(script, &[]).await;
    let job = c.wait_ended(id, 90).await;
    let out = c.output(id).await;
    let err = c
        .http
        .get(format!("{}/v1/jobs/{id}/output?stream=stderr", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    let tasks: Vec<BTreeMap<&str, &str>> = out
        .lines()
        .filter(|l| l.starts_with("t="))
        .map(fields)
        .collect();
    assert_eq!(tasks.len(), 3, "{out}");
    let on: BTreeMap<&str, &str> = tasks.iter().map(|t| (t["t"], t["n"])).collect();
    // Block distribution: two tasks on the first node, one on the second.
    assert_eq!(on["0"], "node-1");
    assert_eq!(on["1"], "node-1");
    assert_eq!(on["2"], "node-2");
    for t in &tasks {
        assert_eq!(t["s"], "0");
        assert_eq!(t["g"].split(',').count(), 2, "all of the node's GPUs");
        assert_eq!(t["g"], t["sg"]);
    }
    assert!(out.contains("only=node-2 s=1"), "{out}");
    // --gpu-bind=single:2: two tasks per GPU; none: every task sees its node's GPUs.
    let bound: BTreeMap<&str, &str> = out
        .lines()
        .filter(|l| l.starts_with("b="))
        .map(|l| (fields(l)["b"], fields(l)["g"]))
        .collect();
    assert_eq!(bound.len(), 4, "{out}");
    assert_eq!(bound["0"], bound["1"]);
    assert_eq!(bound["2"], bound["3"]);
    assert_eq!(bound["0"].split(',').count(), 1);
    let unbound: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("nb="))
        .map(|l| fields(l)["g"])
        .collect();
    assert_eq!(unbound.len(), 2, "{out}");
    assert!(unbound.iter().all(|g| g.split(',').count() == 2), "{out}");
    assert!(out.contains("refused=1"), "{out}");
    assert!(out.contains("unknown=1"), "{out}");
    assert!(out.contains("last=5"), "{out}");
    assert!(
        out.contains("--gpus-per-task") || err.contains("--gpus-per-task"),
        "{out}{err}"
    );
    assert!(
        out.contains("node-9") || err.contains("node-9"),
        "{out}{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_token_reaches_only_its_own_job() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let other = c
        .submit("#!/bin/bash\nsleep 120\n", &["--gres=gpu:1", "-t", "5"])
        .await;
    c.wait_for(other, 60, |j| j.state == JobState::Running)
        .await;
    let script = format!(
        "#!/bin/bash\n#SBATCH -t 5\n\
         scontrol show job $SLURM_JOB_ID | head -n 1\n\
         scontrol show job {other} >/dev/null 2>&1; echo other_show=$?\n\
         scancel {other} >/dev/null 2>&1; echo other_cancel=$?\n\
         sinfo >/dev/null 2>&1; echo sinfo=$?\n\
         echo hosts=$(scontrol show hostnames $SLURM_JOB_NODELIST)\n\
         sbatch --parsable --wrap 'echo follow-up' -t 1\n"
    );
    let id = c.submit(&script, &[]).await;
    let job = c.wait_ended(id, 60).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}\n{out}");
    assert!(out.starts_with(&format!("JobId={id} ")), "{out}");
    assert!(out.contains("other_show=1"), "{out}");
    assert!(out.contains("other_cancel=1"), "{out}");
    assert!(out.contains("sinfo=1"), "{out}");
    assert!(out.contains("hosts=node-1"), "{out}");
    assert_eq!(c.job(other).await.state, JobState::Running);
    // The follow-up was submitted as the job's user.
    let follow_up: i64 = out.lines().last().unwrap().trim().parse().unwrap();
    let follow_up = c.wait_ended(follow_up, 60).await;
    assert_eq!(follow_up.user, job.user);
    assert_eq!(c.output(follow_up.id).await, "follow-up\n");
}

/// Scenario S7: one task of a multi-node job fails; the others are stopped promptly and
/// the job ends FAILED with the failing task's exit code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_node_job_fails_as_a_whole_when_one_task_fails() {
    let c = TestCluster::start(Options::default()).await;
    let script = "#!/bin/bash\n#SBATCH -N 2 --gpus-per-node=8 --requeue -t 10\n\
        srun --kill-on-bad-exit bash -c 'if [ $SLURM_NODEID = 1 ]; then sleep 1; exit 1; fi; sleep 10000'\n";
    let id = c.submit(script, &[]).await;
    // Rank 0 would sleep for hours: the job ending at all means it was stopped.
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Failed, "{job:?}");
    assert_eq!(job.exit_code, Some(1));
    let steps: StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
    assert_eq!(steps.items[0].exit_code, Some(1));
    let rank0 = &steps.items[0].tasks[0];
    assert!(
        rank0.exit_signal == Some(15)
            || rank0.message.as_deref() == Some("not started: the step was stopped"),
        "{rank0:?}"
    );
}

/// Three `srun --gpus-per-task=1` in the background of a two-GPU job: steps do not share
/// GPUs unless `--overlap`, so the third waits (srun says so and retries) and no two steps
/// running at once see the same GPU; an `--overlap` step runs at once on a taken GPU.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_get_their_own_gpus_unless_overlap() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let script = "#!/bin/bash\n\
        for s in a b c; do\n\
          srun -n1 --gpus-per-task=1 bash -c \"echo step=$s gpu=\\$CUDA_VISIBLE_DEVICES start=\\$(date +%s.%N); sleep 4; echo step=$s end=\\$(date +%s.%N)\" &\n\
        done\n\
        sleep 1\n\
        srun -n1 --gpus-per-task=1 --overlap bash -c 'echo overlap gpu=$CUDA_VISIBLE_DEVICES'\n\
        wait\n";
    let id = c.submit(script, &["--gres=gpu:2"]).await;
    let job = c.wait_ended(id, 120).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{out}");
    assert!(
        out.contains("step creation temporarily disabled, retrying"),
        "the third srun waited: {out}"
    );
    assert!(out.contains("overlap gpu="), "{out}");
    let allocated: BTreeSet<String> = job.allocations[0]
        .gpus
        .iter()
        .map(|g| g.to_string())
        .collect();
    // Each step's GPU and running interval.
    let mut steps: BTreeMap<String, (String, f64, f64)> = BTreeMap::new();
    for line in out.lines().filter(|l| l.starts_with("step=")) {
        let f = fields(line);
        let entry = steps
            .entry(f["step"].to_string())
            .or_insert((String::new(), 0.0, 0.0));
        if let Some(gpu) = f.get("gpu") {
            entry.0 = gpu.to_string();
            entry.1 = f["start"].parse().unwrap();
        }
        if let Some(end) = f.get("end") {
            entry.2 = end.parse().unwrap();
        }
    }
    assert_eq!(steps.len(), 3, "{out}");
    let list: Vec<_> = steps.values().collect();
    for (i, a) in list.iter().enumerate() {
        assert!(allocated.contains(&a.0), "{a:?} not in {allocated:?}");
        for b in &list[i + 1..] {
            let together = a.1 < b.2 && b.1 < a.2;
            assert!(
                !(together && a.0 == b.0),
                "two steps ran at once on GPU {}: {out}",
                a.0
            );
        }
    }
}
