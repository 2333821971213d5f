//! `--mem=0` is all of each node's usable memory (Slurm: "a memory size specification of
//! zero is treated as a special case and grants the job access to all of the memory on
//! each node"), end to end: the allocation, `scontrol`'s and `sacct`'s TRES, the job's
//! cgroup limit, and no sharing of that memory with another job that asks memory.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use berth_core::wire::Node;
use reqwest::Method;
use serde_json::json;

/// The line `key=value` of `text`.
fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mem_zero_gets_the_whole_usable_memory_and_shares_it_with_no_one() {
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            gpus: "2xH100",
            ..Default::default()
        },
        &["--simulate-cpus", "4", "--simulate-memory", "4096"],
    )
    .await;
    c.wait_node("node-1", 60, |_| true).await;
    // 512 MiB kept for the system: 3584 MiB usable.
    let (s, n) = c
        .call(
            Method::PATCH,
            "/v1/nodes/node-1",
            Some(&c.token),
            Some(json!({"mem_spec_limit_mib": 512})),
        )
        .await;
    assert_eq!(s, 200, "{n}");
    let node: Node = c.get("/v1/nodes/node-1").await;
    assert_eq!(node.memory_effective_mib, 3584, "{node:?}");
    let usable = node.memory_effective_mib;

    // The job says its Slurm memory variable and its cgroup's memory limit (the group
    // under berth/ that /proc/self/cgroup names: v1's memory hierarchy, else v2's).
    let whole = c
        .submit(
            "#!/bin/bash\n#SBATCH --mem=0 -c 1 -t 5\n\
             echo mem_per_node=${SLURM_MEM_PER_NODE-unset}\n\
             g=$(sed -n 's|^[0-9]*:memory:.*/berth/||p' /proc/self/cgroup)\n\
             if [ -n \"$g\" ]; then f=/sys/fs/cgroup/memory/berth/$g/memory.limit_in_bytes\n\
             else g=$(sed -n 's|^0::.*/berth/||p' /proc/self/cgroup); f=/sys/fs/cgroup/berth/$g/memory.max; fi\n\
             echo limit=$(cat $f 2>/dev/null || echo none)\n\
             sleep 300\n",
            &[],
        )
        .await;
    let job = c
        .wait_for(whole, 60, |j| j.state == JobState::Running)
        .await;
    assert_eq!(job.allocations.len(), 1);
    assert_eq!(
        job.allocations[0].memory_mib, usable,
        "{:?}",
        job.allocations
    );
    assert_eq!(job.allocations[0].cpus.len(), 1, "one CPU, all the memory");

    // Neither another --mem=0 job nor a --mem job shares the memory, though 3 CPUs are
    // free; a job asking no memory (a share in proportion to its CPUs) waits too.
    let second_whole = c
        .submit("#!/bin/bash\nsleep 300\n", &["--mem=0", "-c", "1"])
        .await;
    let some = c
        .submit("#!/bin/bash\nsleep 300\n", &["--mem=100M", "-c", "1"])
        .await;
    for id in [second_whole, some] {
        let j = c
            .wait_for(id, 30, |j| j.reason.as_deref() == Some("Resources"))
            .await;
        assert_eq!(j.state, JobState::Pending, "{j:?}");
    }

    // scontrol and sacct say what it holds: all of the usable memory.
    let (code, out, err) = c.cli(&c.token, &["scontrol", "show", "job", &whole.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("AllocTRES=cpu=1,mem=3584M,node=1"), "{out}");
    assert!(out.contains(" MinMemoryNode=0 "), "{out}");
    let (code, out, err) = c.slurm_command(
        "sacct",
        &c.token,
        &[
            "-j",
            &whole.to_string(),
            "-X",
            "-n",
            "-P",
            "-o",
            "AllocTRES",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("mem=3584M"), "{out}");

    // Slurm sets no SLURM_MEM_PER_NODE for --mem=0; the cgroup limit is the whole usable
    // memory where the worker runs as root with cgroups.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let out = loop {
        let out = c.output(whole).await;
        if value(&out, "limit").is_some() || std::time::Instant::now() > deadline {
            break out;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(value(&out, "mem_per_node"), Some("unset"), "{out}");
    let hierarchy = berth_worker::cgroup::detect(std::path::Path::new("/sys/fs/cgroup"));
    if nix::unistd::geteuid().is_root() && hierarchy.is_some() {
        assert_eq!(
            value(&out, "limit"),
            Some((usable * 1024 * 1024).to_string().as_str()),
            "{out}"
        );
    } else {
        eprintln!("cgroup limit not checked: needs root and cgroups (v2, or v1 memory)");
    }

    // When it ends, the second --mem=0 job (first in the queue) takes all the memory in
    // turn, and the --mem job still waits for it.
    let (code, _, err) = c.cli(&c.token, &["cancel", &whole.to_string()]);
    assert_eq!(code, 0, "{err}");
    let j = c
        .wait_for(second_whole, 60, |j| j.state == JobState::Running)
        .await;
    assert_eq!(j.allocations[0].memory_mib, usable);
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let j = c.job(some).await;
    assert_eq!(
        (j.state, j.reason.as_deref()),
        (JobState::Pending, Some("Resources")),
        "{j:?}"
    );
    let (code, _, err) = c.cli(&c.token, &["cancel", &second_whole.to_string()]);
    assert_eq!(code, 0, "{err}");
    let j = c.wait_for(some, 60, |j| j.state == JobState::Running).await;
    assert_eq!(j.allocations[0].memory_mib, 100);
    c.cli(&c.token, &["cancel", &some.to_string()]);

    // Where MaxMemPerNode is below a node's usable memory, --mem=0 is refused (Slurm:
    // "Memory required by task is not available"), naming --mem.
    let (status, p) = c
        .call(
            Method::PUT,
            "/v1/partitions/small",
            Some(&c.token),
            Some(json!({ "nodes": ["node-1"], "max_mem_per_node": 1000 })),
        )
        .await;
    assert_eq!(status, 201, "{p}");
    let (status, p) = c
        .try_submit("#!/bin/bash\ntrue\n", &["-p", "small", "--mem=0"])
        .await
        .unwrap_err();
    assert_eq!((status, p.field.as_deref()), (422, Some("--mem")), "{p:?}");
    assert!(p.detail.contains("MaxMemPerNode=1000 MiB"), "{p:?}");
    assert!(p.detail.contains("3584 MiB on its largest node"), "{p:?}");
}
