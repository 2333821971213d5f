//! `--hint=nomultithread` (issue 29), end to end on a node whose worker simulates two
//! hardware threads per core (`--simulate-cpus 4 --simulate-threads-per-core 2`: cores
//! {0,1} and {2,3}, each core's threads on one real CPU, core `c` on real CPU
//! `real[c mod n]`): the node shows Slurm's layout; a `-n1 -c2` job with the hint holds
//! two whole cores (4 CPUs, as Slurm counts them) and runs on one thread of each, its
//! steps too; no other job gets a sibling thread of its cores; without the hint the same
//! job holds the two threads of one core.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use berth_core::wire::Node;

/// The value after `key=` on the job output line that starts with it.
fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
}

/// The real CPUs the worker runs CPU ids on: its affinity, which it inherits from this
/// test process.
fn real_cpus() -> Vec<u32> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    (0..nix::sched::CpuSet::count())
        .filter(|&i| set.is_set(i).unwrap_or(false))
        .map(|i| i as u32)
        .collect()
}

/// The Linux CPU list (`0-1`, `3`) of the real CPUs of simulated cores `cores`.
fn cpu_list(cores: &[u32]) -> String {
    let real = real_cpus();
    let mut cpus: Vec<u32> = cores
        .iter()
        .map(|c| real[*c as usize % real.len()])
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    berth_worker::topology::format_cpu_list(&cpus)
}

/// What the job script prints: Slurm's CPU variables, its affinity (as `nproc` and
/// `/proc/self/status` show it) and that of a step, then it waits.
const REPORT: &str = "#!/bin/bash\n\
    echo cpus_on_node=$SLURM_CPUS_ON_NODE\n\
    echo job_cpus_per_node=$SLURM_JOB_CPUS_PER_NODE\n\
    echo hint=${SLURM_HINT-unset}\n\
    echo allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)\n\
    echo nproc=$(nproc)\n\
    srun bash -c 'echo step_allowed=$(sed -n \"s/^Cpus_allowed_list:[[:space:]]*//p\" /proc/self/status)'\n\
    echo reported=yes\n\
    sleep 300\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nomultithread_takes_whole_cores_and_one_thread_of_each() {
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            gpus: "1xH100",
            ..Default::default()
        },
        &[
            "--simulate-cpus",
            "4",
            "--simulate-threads-per-core",
            "2",
            "--simulate-memory",
            "4096",
        ],
    )
    .await;

    // The node's layout, as REST, scontrol and sinfo show it.
    let node: Node = c.get("/v1/nodes/node-1").await;
    assert_eq!(
        (
            node.cpus,
            node.sockets,
            node.cores_per_socket,
            node.threads_per_core
        ),
        (4, 1, 2, 2),
        "{node:?}"
    );
    let (code, out, err) = c.cli(&c.token, &["scontrol", "show", "node", "node-1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("CoresPerSocket=2"), "{out}");
    assert!(out.contains(" Sockets=1 "), "{out}");
    assert!(out.contains("ThreadsPerCore=2"), "{out}");
    let (code, out, err) =
        c.slurm_command("sinfo", &c.token, &["-h", "-N", "-o", "%N %z %X %Y %Z"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "node-1 1:2:2 1 2 2");

    // sbatch --hint=nomultithread -n1 -c2: two whole cores, all four threads held.
    let script = c.dir.join("report.sh");
    std::fs::write(&script, REPORT).unwrap();
    let (code, out, err) = c.slurm_command(
        "sbatch",
        &c.token,
        &[
            "--parsable",
            "--hint=nomultithread",
            "-n1",
            "-c2",
            "-t",
            "10",
            script.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let hinted: i64 = out.trim().parse().unwrap_or_else(|_| panic!("{out}"));
    let job = c
        .wait_for(hinted, 60, |j| j.state == JobState::Running)
        .await;
    assert_eq!(job.allocations.len(), 1);
    assert_eq!(
        job.allocations[0].cpus,
        vec![0, 1, 2, 3],
        "{:?}",
        job.allocations
    );
    assert_eq!(job.num_cpus, 4);
    let (code, out, err) = c.cli(&c.token, &["scontrol", "show", "job", &hinted.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("NumCPUs=4 NumTasks=1 CPUs/Task=2 ReqB:S:C:T=*:*:*:1"),
        "{out}"
    );
    assert!(out.contains("CPU_IDs=0-3"), "{out}");
    let node: Node = c.get("/v1/nodes/node-1").await;
    assert_eq!(node.cpus_allocated, 4);

    // The job runs on one thread of each of its two cores (one real CPU per simulated
    // core), and so does its step; Slurm's variables count all four CPUs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let out = loop {
        let out = c.output(hinted).await;
        if value(&out, "reported").is_some() || std::time::Instant::now() > deadline {
            break out;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(value(&out, "cpus_on_node"), Some("4"), "{out}");
    assert_eq!(value(&out, "job_cpus_per_node"), Some("4"), "{out}");
    assert_eq!(value(&out, "hint"), Some("nomultithread"), "{out}");
    let one_per_core = cpu_list(&[0, 1]);
    assert_eq!(value(&out, "allowed"), Some(one_per_core.as_str()), "{out}");
    let expected_nproc = if real_cpus().len() > 1 { "2" } else { "1" };
    assert_eq!(value(&out, "nproc"), Some(expected_nproc), "{out}");
    assert_eq!(
        value(&out, "step_allowed"),
        Some(one_per_core.as_str()),
        "{out}"
    );

    // The other threads of its cores are held: a one-CPU job waits, though the hinted
    // job runs on only two of the node's four CPUs.
    let small = c.submit("#!/bin/bash\nsleep 300\n", &["-n1", "-c1"]).await;
    let waiting = c
        .wait_for(small, 30, |j| j.reason.as_deref() == Some("Resources"))
        .await;
    assert_eq!(waiting.state, JobState::Pending, "{waiting:?}");
    assert!(waiting.allocations.is_empty());
    let (code, _, err) = c.cli(&c.token, &["cancel", &hinted.to_string()]);
    assert_eq!(code, 0, "{err}");

    // A job without the hint gets whole cores too (Slurm's CR_Core): the one-CPU job
    // holds both threads of core 0, and `-n1 -c2` the two threads of core 1.
    let small = c
        .wait_for(small, 60, |j| j.state == JobState::Running)
        .await;
    assert_eq!(
        small.allocations[0].cpus,
        vec![0, 1],
        "{:?}",
        small.allocations
    );
    let plain = c.submit(REPORT, &["-n1", "-c2", "-t", "10"]).await;
    let job = c
        .wait_for(plain, 60, |j| j.state == JobState::Running)
        .await;
    assert_eq!(job.allocations[0].cpus, vec![2, 3], "{:?}", job.allocations);
    assert_eq!(job.num_cpus, 2);
    let (code, out, err) = c.cli(&c.token, &["scontrol", "show", "job", &plain.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("NumCPUs=2 NumTasks=1 CPUs/Task=2 ReqB:S:C:T=*:*:*:*"),
        "{out}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let out = loop {
        let out = c.output(plain).await;
        if value(&out, "reported").is_some() || std::time::Instant::now() > deadline {
            break out;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(value(&out, "cpus_on_node"), Some("2"), "{out}");
    assert_eq!(value(&out, "hint"), Some("unset"), "{out}");
    // Both threads of core 1 run on its one real CPU.
    assert_eq!(
        value(&out, "allowed"),
        Some(cpu_list(&[1]).as_str()),
        "{out}"
    );
    for id in [small.id, plain] {
        c.cli(&c.token, &["cancel", &id.to_string()]);
    }

    // A hinted job that needs more cores than the node has is refused at submission.
    let (status, p) = c
        .try_submit("#!/bin/bash\ntrue\n", &["--hint=nomultithread", "-c", "3"])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (422, Some("--cpus-per-task")),
        "{p:?}"
    );
    assert!(p.detail.contains("3 cores"), "{p:?}");
    // The largest node is counted in what was asked for: its 2 cores, not its 4 CPUs.
    assert!(p.detail.contains("(the largest has 2)"), "{p:?}");
}
