//! What srun says about its tasks' ends, in the words of Slurm's srun (`_task_finish` in
//! `src/srun/launch.c`, `task_state_print` in `src/srun/task_state.c`):
//!
//! * a task that exits non-zero: `srun: error: node-1: task 3: Exited with exit code 2`
//!   (`tasks 0-3` for several of one node ending alike);
//! * a task killed by a signal: `srun: error: node-1: task 0: Terminated` (the C
//!   library's name of the signal), unless srun itself was stopping the step;
//! * when `--wait` runs out: `srun: First task exited 30s ago`, then each task's state
//!   (`srun: StepId=12.0 task 1: running`, `… tasks 0,2-3: exited`, `… exited
//!   abnormally`, `… failed to start`), then `srun: Terminating StepId=12.0`.

#[allow(unused_imports)]
use super::*;
use berth_core::step::StepTask;

/// The C library's `strsignal` text for signal `n` (glibc's words), `Signal n` for one
/// without a name here.
pub fn signal_text(n: i32) -> String {
    let text = match n {
        1 => "Hangup",
        2 => "Interrupt",
        3 => "Quit",
        4 => "Illegal instruction",
        5 => "Trace/breakpoint trap",
        6 => "Aborted",
        7 => "Bus error",
        8 => "Floating point exception",
        9 => "Killed",
        10 => "User defined signal 1",
        11 => "Segmentation fault",
        12 => "User defined signal 2",
        13 => "Broken pipe",
        14 => "Alarm clock",
        15 => "Terminated",
        24 => "CPU time limit exceeded",
        25 => "File size limit exceeded",
        _ => return format!("Signal {n}"),
    };
    text.to_string()
}

/// Task ids as Slurm's `bit_fmt` writes a set: ascending, runs as ranges (`0-2,4`).
pub fn task_ids(ids: &[u32]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            ids[i].to_string()
        } else {
            format!("{}-{}", ids[i], ids[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// `task` or `tasks`, with the ids.
fn tasks_word(ids: &[u32]) -> String {
    let word = if ids.len() == 1 { "task" } else { "tasks" };
    format!("{word} {}", task_ids(ids))
}

/// How one task ended, as srun reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Ending {
    /// Exited with a non-zero code.
    Exited(i32),
    /// Killed by this signal.
    Signalled(i32),
}

impl Ending {
    fn of(task: &StepTask) -> Option<Ending> {
        match (task.exit_signal.filter(|s| *s > 0), task.exit_code) {
            (Some(signal), _) => Some(Ending::Signalled(signal)),
            (None, Some(code)) if code != 0 => Some(Ending::Exited(code)),
            _ => None,
        }
    }
}

/// srun's lines for the tasks of `tasks` that ended badly and are not in `told` (which
/// gets them): one per node and way of ending, in order of the first task id; killed
/// tasks are left unsaid when `stopping` (srun itself stopped the step, as Slurm's srun
/// says them only with `-v` then).
pub fn task_exit_lines(tasks: &[StepTask], told: &mut HashSet<u32>, stopping: bool) -> Vec<String> {
    let mut groups: BTreeMap<(String, Ending), Vec<u32>> = BTreeMap::new();
    for task in tasks {
        if task.ended_at.is_none() || told.contains(&task.task_id) {
            continue;
        }
        told.insert(task.task_id);
        let Some(ending) = Ending::of(task) else {
            continue;
        };
        if stopping && matches!(ending, Ending::Signalled(_)) {
            continue;
        }
        groups
            .entry((task.node.clone(), ending))
            .or_default()
            .push(task.task_id);
    }
    let mut groups: Vec<_> = groups.into_iter().collect();
    groups.sort_by_key(|(_, ids)| ids.iter().min().copied());
    groups
        .into_iter()
        .map(|((node, ending), ids)| {
            let what = match ending {
                Ending::Exited(code) => format!("Exited with exit code {code}"),
                Ending::Signalled(signal) => signal_text(signal),
            };
            format!("srun: error: {node}: {}: {what}", tasks_word(&ids))
        })
        .collect()
}

/// Slurm's `task_state_print` for step `job_id.step_id` (what srun says when `--wait`
/// runs out): the tasks that failed to start, run, exited abnormally, exited, one line
/// each that has any.
pub fn task_state_lines(job_id: i64, step_id: u32, tasks: &[StepTask]) -> Vec<String> {
    let mut failed = Vec::new();
    let mut running = Vec::new();
    let mut abnormal = Vec::new();
    let mut exited = Vec::new();
    for task in tasks {
        let list = match (task.started_at, task.ended_at) {
            (_, None) => &mut running,
            (None, Some(_)) => &mut failed,
            (Some(_), Some(_)) if Ending::of(task).is_some() => &mut abnormal,
            _ => &mut exited,
        };
        list.push(task.task_id);
    }
    [
        (failed, "failed to start"),
        (running, "running"),
        (abnormal, "exited abnormally"),
        (exited, "exited"),
    ]
    .into_iter()
    .filter(|(ids, _)| !ids.is_empty())
    .map(|(ids, state)| {
        format!(
            "srun: StepId={job_id}.{step_id} {}: {state}",
            tasks_word(&ids)
        )
    })
    .collect()
}

#[cfg(test)]
mod exit_tests {
    use super::*;

    fn task(id: u32, node: &str, code: Option<i32>, signal: Option<i32>, ended: bool) -> StepTask {
        let at = chrono::DateTime::from_timestamp(1_700_000_000, 0);
        StepTask {
            task_id: id,
            node: node.to_string(),
            node_index: 0,
            local_id: id,
            gpus: Vec::new(),
            started_at: at,
            ended_at: at.filter(|_| ended),
            exit_code: code,
            exit_signal: signal,
            message: None,
        }
    }

    #[test]
    fn task_ids_run_as_ranges() {
        assert_eq!(task_ids(&[4, 0, 1, 2]), "0-2,4");
        assert_eq!(task_ids(&[3]), "3");
        assert_eq!(task_ids(&[1, 3, 5, 6]), "1,3,5-6");
    }

    /// Slurm's words for tasks that ended badly: one line per node and ending, the
    /// killed ones unsaid when srun stopped the step itself, each task said once.
    #[test]
    fn bad_ends_in_slurms_words() {
        let tasks = vec![
            task(0, "node-1", Some(0), None, true),
            task(1, "node-1", Some(3), None, true),
            task(2, "node-2", Some(3), None, true),
            task(3, "node-2", Some(3), None, true),
            task(4, "node-2", Some(143), Some(15), true),
            task(5, "node-2", None, None, false),
        ];
        let mut told = HashSet::new();
        assert_eq!(
            task_exit_lines(&tasks, &mut told, false),
            vec![
                "srun: error: node-1: task 1: Exited with exit code 3",
                "srun: error: node-2: tasks 2-3: Exited with exit code 3",
                "srun: error: node-2: task 4: Terminated",
            ]
        );
        assert!(task_exit_lines(&tasks, &mut told, false).is_empty());
        let mut told = HashSet::new();
        assert_eq!(
            task_exit_lines(&tasks, &mut told, true).len(),
            2,
            "killed tasks are not said while srun stops the step"
        );
        assert_eq!(
            task_state_lines(12, 0, &tasks),
            vec![
                "srun: StepId=12.0 task 5: running",
                "srun: StepId=12.0 tasks 1-4: exited abnormally",
                "srun: StepId=12.0 task 0: exited",
            ]
        );
    }
}
