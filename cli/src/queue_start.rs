//! `berth queue --start` (squeue `--start`): the expected start of each pending job, as
//! the scheduler's last backfill pass planned it.

use berth_core::wire::QueueJob;
use chrono::Local;

/// The header of [`start_table`], squeue `--start`'s default format
/// (`%.18i %.9P %.8j %.8u %.2t %.19S %.6D %R`).
pub const START_HEADER: &str =
    "             JOBID PARTITION     NAME     USER ST          START_TIME  NODES NODELIST(REASON)";

fn right(value: &str, width: usize) -> String {
    let truncated: String = value.chars().take(width).collect();
    format!("{truncated:>width$}")
}

/// One line per job: its expected start in local time (`YYYY-MM-DDTHH:MM:SS`, `N/A` when
/// it has none) and its pending reason; each line ends in a newline, after the header.
pub fn start_table(jobs: &[QueueJob]) -> String {
    let mut out = format!("{START_HEADER}\n");
    for job in jobs {
        let start = job.expected_start.map_or("N/A".to_string(), |t| {
            t.with_timezone(&Local)
                .format("%Y-%m-%dT%H:%M:%S")
                .to_string()
        });
        let id = match (job.array_job_id, job.array_task_id) {
            (Some(a), Some(t)) => format!("{a}_{t}"),
            _ => job.id.to_string(),
        };
        out.push_str(&format!(
            "{} {} {} {} {} {} {} ({})\n",
            right(&id, 18),
            right(&job.partition, 9),
            right(&job.name, 8),
            right(&job.user, 8),
            right(job.state.compact(), 2),
            right(&start, 19),
            right(&job.num_nodes.to_string(), 6),
            job.reason.as_deref().unwrap_or("None")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::state::JobState;
    use berth_core::wire::Job;
    use chrono::{TimeZone, Utc};

    #[test]
    fn start_table_shows_expected_starts_and_reasons() {
        let at = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
        let job = Job {
            id: 7,
            name: "train".into(),
            user: "alice".into(),
            account: None,
            partition: "gpu".into(),
            qos: None,
            state: JobState::Pending,
            reason: Some("Resources".into()),
            state_description: None,
            submit_time: at,
            start_time: None,
            end_time: None,
            time_limit: Some(3600),
            exit_code: None,
            exit_signal: None,
            num_nodes: 4,
            num_tasks: 1,
            num_cpus: 1,
            gpus_per_node: 8,
            allocations: vec![],
            nodelist: None,
            work_dir: None,
            stdout_path: None,
            stderr_path: None,
            restart_count: 0,
            spec: Default::default(),
            expected_start: Some(at),
            queue_position: None,
            priority: None,
            nice: 0,
            array_job_id: None,
            array_task_id: None,
            array_tasks_pending: None,
            array_max_running: None,
            environment: Default::default(),
            output_truncated: false,
        };
        let none = Job {
            id: 8,
            expected_start: None,
            queue_position: None,
            reason: Some("Dependency".into()),
            ..job.clone()
        };
        let table = start_table(&[QueueJob::from(&job), QueueJob::from(&none)]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], START_HEADER);
        let local = at
            .with_timezone(&Local)
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string();
        assert!(
            lines[1].ends_with(&format!("{local}      4 (Resources)")),
            "{}",
            lines[1]
        );
        assert!(lines[1].trim_start().starts_with("7 "));
        assert!(
            lines[2].ends_with("N/A      4 (Dependency)"),
            "{}",
            lines[2]
        );
    }
}
