//! The batch environment carries Slurm's output variables (issue 15): GPUs and memory
//! asked, tasks per node, QOS, account, partition, start and end times, the array's index
//! range, and none of them inherited from the submitter when the job did not ask.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use std::collections::BTreeMap;

/// The `NAME=value` lines of a job's output.
fn variables(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

const PRINT: &str = "for v in SLURM_GPUS_PER_NODE SLURM_TASKS_PER_NODE SLURM_JOB_CPUS_PER_NODE \
    SLURM_MEM_PER_GPU SLURM_MEM_PER_NODE SLURM_MEM_PER_CPU SLURM_JOB_QOS SLURM_JOB_ACCOUNT \
    SLURM_JOB_PARTITION SLURM_CLUSTER_NAME SLURM_JOB_START_TIME SLURM_JOB_END_TIME \
    SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_MAX SLURM_ARRAY_TASK_STEP SLURM_ARRAY_TASK_COUNT \
    SLURM_NTASKS SLURM_GPUS SLURM_STEP_ID; do echo \"$v=${!v-unset}\"; done\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batch_environment_has_slurms_output_variables() {
    let c = TestCluster::start(Options::default()).await;
    let script = format!(
        "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=3 --gpus-per-node=2 --mem-per-gpu=1G -t 10\n{PRINT}"
    );
    let id = c.submit(&script, &[]).await;
    let job = c.wait_ended(id, 60).await;
    let out = c.output(id).await;
    assert_eq!(job.state, JobState::Completed, "{out}");
    let v = variables(&out);
    assert_eq!(v["SLURM_GPUS_PER_NODE"], "2", "{out}");
    assert_eq!(v["SLURM_TASKS_PER_NODE"], "3(x2)", "{out}");
    assert_eq!(v["SLURM_NTASKS"], "6", "{out}");
    assert_eq!(v["SLURM_MEM_PER_GPU"], "1024", "{out}");
    assert_eq!(v["SLURM_MEM_PER_NODE"], "unset", "{out}");
    assert_eq!(v["SLURM_JOB_PARTITION"], job.partition, "{out}");
    assert_eq!(
        v["SLURM_JOB_QOS"],
        job.qos.clone().unwrap_or_default(),
        "{out}"
    );
    assert_eq!(v["SLURM_CLUSTER_NAME"], "berth", "{out}");
    let start: i64 = v["SLURM_JOB_START_TIME"].parse().unwrap();
    let end: i64 = v["SLURM_JOB_END_TIME"].parse().unwrap();
    assert_eq!(end - start, 600, "the 10-minute limit: {out}");
    assert_eq!(Some(start), job.start_time.map(|t| t.timestamp()), "{out}");
    assert_eq!(v["SLURM_ARRAY_TASK_MIN"], "unset", "{out}");

    // --gres=gpu:N gives SLURM_GPUS_PER_NODE too; a submitter's own value of a variable
    // the job did not ask for is not passed on.
    let script = format!("#!/bin/bash\n#SBATCH --gres=gpu:h100:1 --mem=2G\n{PRINT}");
    let id = c.submit(&script, &[]).await;
    c.wait_ended(id, 60).await;
    let v = variables(&c.output(id).await);
    assert_eq!(v["SLURM_GPUS_PER_NODE"], "h100:1");
    assert_eq!(v["SLURM_MEM_PER_NODE"], "2048");
    assert_eq!(v["SLURM_TASKS_PER_NODE"], "1");

    // An array's index range and step.
    let script = format!("#!/bin/bash\n#SBATCH --array=1-7:3\n{PRINT}");
    let first = c.submit(&script, &[]).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    let tasks = loop {
        let list: serde_json::Value = c.get("/v1/jobs?state=COMPLETED,FAILED&limit=100").await;
        let tasks: Vec<i64> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| j["array_job_id"].as_i64() == Some(first))
            .map(|j| j["id"].as_i64().unwrap())
            .collect();
        if tasks.len() == 3 {
            break tasks;
        }
        assert!(std::time::Instant::now() < deadline, "array tasks: {list}");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    for task in tasks {
        let v = variables(&c.output(task).await);
        assert_eq!(
            (
                v["SLURM_ARRAY_TASK_MIN"].as_str(),
                v["SLURM_ARRAY_TASK_MAX"].as_str(),
                v["SLURM_ARRAY_TASK_STEP"].as_str(),
                v["SLURM_ARRAY_TASK_COUNT"].as_str()
            ),
            ("1", "7", "3", "3"),
            "{v:?}"
        );
    }
}
