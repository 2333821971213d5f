//! Slurm-style text output, as pure functions of the wire types: `squeue`'s default
//! format, `sinfo`'s partition and node views, and `scontrol show job`.
//!
//! Text from the api may hold characters a terminal would act on (escape sequences in a
//! job name stored before the api refused them, a reason, a path): [`escape_strings`]
//! makes every string of an answer printable, and the client applies it to every answer
//! it decodes ([`crate::client`]), so no command prints them raw. Job output (`berth
//! logs`) is the exception: it is the job's own bytes, printed as `cat` would.

use berth_core::duration::format_duration;
use berth_core::state::{JobState, NodeState};
use berth_core::wire::{Job, Node, Partition, QueueJob};
use chrono::{DateTime, Local, Utc};

/// Prints a job's output as it arrives: the bytes as they are when stdout is not a
/// terminal (`berth logs 5 > out.txt` keeps them whole), and on a terminal through
/// [`berth_core::text::TerminalFilter`] (lines, progress bars and colours pass; other
/// escape sequences of the job's are shown escaped, never obeyed: the output may be
/// another user's, read by an operator).
pub struct OutputPrinter {
    terminal: Option<(Vec<u8>, berth_core::text::TerminalFilter)>,
}

impl OutputPrinter {
    /// A printer for this process's stdout.
    pub fn stdout() -> OutputPrinter {
        use std::io::IsTerminal;
        OutputPrinter::new(std::io::stdout().is_terminal())
    }

    /// A printer that filters (`terminal`) or passes bytes through.
    pub fn new(terminal: bool) -> OutputPrinter {
        OutputPrinter {
            terminal: terminal.then(Default::default),
        }
    }

    /// What to write for `chunk` (a chunk may end inside a UTF-8 character: the rest
    /// waits for the next one).
    pub fn chunk(&mut self, chunk: &[u8]) -> Vec<u8> {
        let Some((partial, filter)) = &mut self.terminal else {
            return chunk.to_vec();
        };
        partial.extend_from_slice(chunk);
        let mut text = String::new();
        let mut rest: &[u8] = partial;
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    text.push_str(valid);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        // Cut inside a character: wait for its rest.
                        None => {
                            rest = after;
                            break;
                        }
                        Some(bad) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                    }
                }
            }
        }
        let kept = rest.to_vec();
        *partial = kept;
        filter.filter(&text).into_bytes()
    }

    /// What is left to write at the end.
    pub fn finish(&mut self) -> Vec<u8> {
        match &mut self.terminal {
            Some((partial, filter)) => {
                let mut end = filter.finish();
                if !partial.is_empty() {
                    end.push(char::REPLACEMENT_CHARACTER);
                    partial.clear();
                }
                end.into_bytes()
            }
            None => Vec::new(),
        }
    }
}

/// `job` with the control and bidirectional-formatting characters of each of its strings
/// escaped as [`escape_strings`] escapes them (the fields are named one by one, so that a
/// string field added to [`QueueJob`] does not compile until it is escaped here too).
pub fn escape_queue_job(job: QueueJob) -> QueueJob {
    fn text(s: String) -> String {
        match berth_core::text::escape(&s) {
            std::borrow::Cow::Owned(escaped) => escaped,
            std::borrow::Cow::Borrowed(_) => s,
        }
    }
    let QueueJob {
        id,
        name,
        user,
        account,
        partition,
        qos,
        state,
        reason,
        submit_time,
        start_time,
        end_time,
        time_limit,
        num_nodes,
        num_tasks,
        num_cpus,
        gpus_per_node,
        nodelist,
        work_dir,
        restart_count,
        exit_code,
        exit_signal,
        expected_start,
        priority,
        nice,
        array_job_id,
        array_task_id,
        array_tasks_pending,
        array_max_running,
    } = job;
    QueueJob {
        id,
        name: text(name),
        user: text(user),
        account: account.map(text),
        partition: text(partition),
        qos: qos.map(text),
        state,
        reason: reason.map(text),
        submit_time,
        start_time,
        end_time,
        time_limit,
        num_nodes,
        num_tasks,
        num_cpus,
        gpus_per_node,
        nodelist: nodelist.map(text),
        work_dir: work_dir.map(text),
        restart_count,
        exit_code,
        exit_signal,
        expected_start,
        priority,
        nice,
        array_job_id,
        array_task_id,
        array_tasks_pending: array_tasks_pending.map(text),
        array_max_running,
    }
}

/// Escapes, in place, the control and bidirectional-formatting characters of every
/// string in `value` (keys too) with [`berth_core::text::escape`] (`\e`, `\n`,
/// `\u{202E}` …).
pub fn escape_strings(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(escaped) = berth_core::text::escape(s) {
                *s = escaped;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(escape_strings),
        Value::Object(map) => {
            if map
                .keys()
                .any(|k| berth_core::text::forbidden_char(k).is_some())
            {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    escape_strings(&mut v);
                    map.insert(berth_core::text::escape(&k).into_owned(), v);
                }
            } else {
                map.values_mut().for_each(escape_strings);
            }
        }
        _ => {}
    }
}

/// Pads or truncates `value` to `width` characters, right-aligned when `right`
/// (squeue's `%.N` fields) and left-aligned otherwise.
pub(crate) fn field(value: &str, width: usize, right: bool) -> String {
    let mut out = String::with_capacity(width);
    push_field(&mut out, value, width, right);
    out
}

/// [`field`] appended to `out` (squeue writes 10,000 lines of them into one buffer).
fn push_field(out: &mut String, value: &str, width: usize, right: bool) {
    // The first `width` characters, and how many they are (ASCII, nearly always: bytes).
    let (shown, count) = if value.is_ascii() {
        let n = value.len().min(width);
        (&value[..n], n)
    } else {
        match value.char_indices().nth(width) {
            Some((cut, _)) => (&value[..cut], width),
            None => (value, value.chars().count()),
        }
    };
    let pad = width.saturating_sub(count);
    if right {
        out.extend(std::iter::repeat_n(' ', pad));
    }
    out.push_str(shown);
    if !right {
        out.extend(std::iter::repeat_n(' ', pad));
    }
}

/// How long a job has run at `now`, seconds: nothing while pending, up to its end once
/// ended.
pub fn job_run_seconds(job: &Job, now: DateTime<Utc>) -> u64 {
    let Some(start) = job.start_time else {
        return 0;
    };
    if job.state == JobState::Pending {
        return 0;
    }
    let end = job.end_time.unwrap_or(now);
    (end - start).num_seconds().max(0) as u64
}

/// The header line of [`squeue_line`]'s format.
pub const SQUEUE_HEADER: &str =
    "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)";

/// One job in squeue's default format, `%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R`:
/// right-aligned, truncated columns; the id as `%i` prints it (`5_3` for an array task);
/// TIME is the elapsed run time; the last column is the node list once placed,
/// `(Reason)` while pending.
pub fn squeue_line(job: &QueueJob, now: DateTime<Utc>) -> String {
    let mut out = String::with_capacity(96);
    push_squeue_line(&mut out, job, now);
    out
}

/// [`squeue_line`] appended to `out` (no newline).
fn push_squeue_line(out: &mut String, job: &QueueJob, now: DateTime<Utc>) {
    let (id, time, nodes) = (
        crate::squeue::job_id_display(job),
        format_duration(crate::squeue::run_seconds(job, now)),
        job.num_nodes.to_string(),
    );
    let fields = [
        (id.as_str(), 18),
        (job.partition.as_str(), 9),
        (job.name.as_str(), 8),
        (job.user.as_str(), 8),
        (job.state.compact(), 2),
        (time.as_str(), 10),
        (nodes.as_str(), 6),
    ];
    for (value, width) in fields {
        push_field(out, value, width, true);
        out.push(' ');
    }
    match (&job.nodelist, job.state) {
        (Some(nodes), state) if state != JobState::Pending && !nodes.is_empty() => {
            out.push_str(nodes)
        }
        _ => {
            out.push('(');
            out.push_str(job.reason.as_deref().unwrap_or("None"));
            out.push(')');
        }
    }
}

/// The whole `squeue` table: the header, then one line per job, each line ending in a
/// newline.
pub fn squeue_table(jobs: &[QueueJob], now: DateTime<Utc>) -> String {
    let mut out = String::with_capacity((jobs.len() + 1) * 96);
    out.push_str(SQUEUE_HEADER);
    out.push('\n');
    for job in jobs {
        push_squeue_line(&mut out, job, now);
        out.push('\n');
    }
    out
}

/// A time limit as sinfo prints it: `infinite`, else squeue's `M:SS`, `H:MM:SS`,
/// `D-HH:MM:SS`.
pub fn sinfo_time_limit(seconds: Option<u64>) -> String {
    match seconds {
        None => "infinite".to_string(),
        Some(s) => format_duration(s),
    }
}

/// Whether `node` is in `partition` (an empty member list means every node).
pub fn node_in_partition(node: &Node, partition: &Partition) -> bool {
    partition.nodes.is_empty()
        || partition.nodes.iter().any(|n| n == &node.name)
        || node.partitions.iter().any(|p| p == &partition.name)
}

/// A node's state as sinfo's `%t` prints it: the short name, and for a cloud node
/// Slurm's power suffix: `~` powered down (`idle~`), `#` powering up (`idle#`, or
/// `alloc#`/`mix#` when jobs already wait on it), `%` powering down (`idle%`).
pub fn node_state_short(node: &Node) -> String {
    let held = node.gpus_allocated > 0 || node.cpus_allocated > 0;
    let base = if !held {
        "idle"
    } else if node.gpus_allocated as usize >= node.gpus.len()
        || node.cpus_allocated >= node.cpus_effective.max(1)
    {
        "alloc"
    } else {
        "mix"
    };
    match node.state {
        NodeState::PoweredDown => format!("{base}~"),
        NodeState::PoweringUp => format!("{base}#"),
        NodeState::PoweringDown => format!("{base}%"),
        other => other.short().to_string(),
    }
}

/// A node's CPUs as sinfo's `%C`: (allocated, idle, other, total). Other counts the
/// CPUs kept for the system (CoreSpecCount) and, on a node that takes no work (drained,
/// down, powered down), every CPU not allocated.
pub fn cpus_aiot(node: &Node) -> (u32, u32, u32, u32) {
    let total = node.cpus;
    let allocated = node.cpus_allocated.min(total);
    let takes_work = matches!(
        node.state,
        NodeState::Idle | NodeState::Mixed | NodeState::Allocated
    );
    let other = if takes_work {
        total.saturating_sub(node.cpus_effective.max(allocated))
    } else {
        total - allocated
    };
    (allocated, total - allocated - other, other, total)
}

/// Features as sinfo prints them: comma-separated, `(null)` for none.
fn features_text(node: &Node) -> String {
    if node.features.is_empty() {
        "(null)".to_string()
    } else {
        node.features.join(",")
    }
}

/// One part of an sinfo `-o` format.
#[derive(Debug, Clone, PartialEq)]
/// A piece of a Slurm `%` output format (`-o "%.18i %j"`): literal text, or a field
/// letter with an optional width (`%10j`) and right alignment (`%.10j`).
pub(crate) enum SinfoPart {
    Literal(String),
    Field {
        kind: char,
        width: Option<usize>,
        right: bool,
    },
}

/// Parses a Slurm `%` output format given to `-o`, accepting the field letters `known`
/// (`%%` is a literal `%`; widths are capped at 1,024; `%#X`, sinfo's "as wide as the
/// widest value", gives width `Some(0)`).
///
/// # Errors
/// A message naming the format and the letter that is not a field, or a format cut short.
pub(crate) fn parse_percent_format(format: &str, known: &[char]) -> Result<Vec<SinfoPart>, String> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            literal.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            literal.push('%');
            continue;
        }
        let auto = chars.peek() == Some(&'#');
        if auto {
            chars.next();
        }
        let right = chars.peek() == Some(&'.');
        if right {
            chars.next();
        }
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        let kind = chars
            .next()
            .ok_or_else(|| format!("-o {format:?}: a field is cut short at the end"))?;
        if !known.contains(&kind) {
            let list: Vec<String> = known.iter().map(|k| format!("%{k}")).collect();
            return Err(format!(
                "-o {format:?}: %{kind} is not a field Berth shows ({})",
                list.join(" ")
            ));
        }
        if !literal.is_empty() {
            parts.push(SinfoPart::Literal(std::mem::take(&mut literal)));
        }
        let width = if auto {
            Some(0)
        } else {
            digits
                .parse::<usize>()
                .ok()
                .map(|w| w.min(1024))
                .filter(|w| *w > 0)
        };
        parts.push(SinfoPart::Field { kind, width, right });
    }
    if !literal.is_empty() {
        parts.push(SinfoPart::Literal(literal));
    }
    Ok(parts)
}

/// Rows in a parsed Slurm `%` format (squeue `-o`, sprio `-o`): a header line of
/// `headers`' names (unless `header` is false), then one line per row with `value(letter,
/// row)`; `%.N` right-aligns in N columns, `%N` left-aligns, no width prints the value
/// whole. Lines end in a newline, trailing spaces trimmed.
pub(crate) fn percent_table<T>(
    parts: &[SinfoPart],
    headers: &[(char, &str)],
    rows: &[T],
    value: impl Fn(char, &T) -> String,
    header: bool,
) -> String {
    let mut out = String::new();
    let mut line_of = |get: &dyn Fn(char) -> String| {
        let mut line = String::new();
        for p in parts {
            match p {
                SinfoPart::Literal(text) => line.push_str(text),
                SinfoPart::Field { kind, width, right } => match width {
                    Some(w) if *w > 0 => line.push_str(&field(&get(*kind), *w, *right)),
                    _ => line.push_str(&get(*kind)),
                },
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    if header {
        line_of(&|k| {
            headers
                .iter()
                .find(|(f, _)| *f == k)
                .map_or("", |(_, h)| h)
                .to_string()
        });
    }
    for row in rows {
        line_of(&|k| value(k, row));
    }
    out
}

/// scontrol's `Key=Value` layout: the first line flush left, the others indented by three
/// spaces, each ending in a newline.
pub(crate) fn key_value_lines(lines: &[String]) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push_str("   ");
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Berth's node table (`berth nodes --gpus`, `sinfo --gpus`): one line per node with its
/// state, CPUs
/// (allocated/idle/other/total), memory (MiB), GPUs allocated out of its total, GPU
/// model(s), features and the drain/down reason. Columns are left-aligned and as wide as
/// their widest value.
pub fn node_table(nodes: &[Node]) -> String {
    let header = [
        "NODELIST".to_string(),
        "STATE".to_string(),
        "CPUS(A/I/O/T)".to_string(),
        "MEMORY".to_string(),
        "GPUS(ALLOC/TOTAL)".to_string(),
        "MODEL".to_string(),
        "FEATURES".to_string(),
        "REASON".to_string(),
    ];
    let mut rows = vec![header];
    for node in nodes {
        let mut models: Vec<&str> = Vec::new();
        for gpu in &node.gpus {
            if !models.contains(&gpu.model.as_str()) {
                models.push(&gpu.model);
            }
        }
        let model = if models.is_empty() {
            "-".to_string()
        } else {
            models.join(",")
        };
        let (a, i, o, t) = cpus_aiot(node);
        rows.push([
            node.name.clone(),
            node_state_short(node),
            format!("{a}/{i}/{o}/{t}"),
            node.memory_mib.to_string(),
            format!("{}/{}", node.gpus_allocated, node.gpus.len()),
            model,
            features_text(node),
            node.reason.clone().unwrap_or_else(|| "none".to_string()),
        ]);
    }
    let widths: Vec<usize> = (0..8)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, value) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(value);
            } else {
                line.push_str(&format!("{value:<w$} ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A duration as scontrol prints it: `HH:MM:SS`, or `D-HH:MM:SS` past a day.
pub fn scontrol_duration(seconds: u64) -> String {
    let days = seconds / 86_400;
    let h = (seconds % 86_400) / 3600;
    let m = (seconds % 3600) / 60;
    let s = seconds % 60;
    if days > 0 {
        format!("{days}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// A time as scontrol prints it: local time `YYYY-MM-DDTHH:MM:SS`, `Unknown` when unset.
pub fn scontrol_time(time: Option<DateTime<Utc>>) -> String {
    match time {
        Some(t) => t
            .with_timezone(&Local)
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string(),
        None => "Unknown".to_string(),
    }
}

/// GPU indices as Slurm's `IDX:` ranges (`0-1,4`); CPU ids likewise (`CPU_IDs=`).
pub fn gpu_index_ranges(indices: &[u32]) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Slurm's `AllocTRES` of a placed job: `cpu=N,mem=M,node=N,gres/gpu=N` over all its
/// nodes (`cpu` and `mem` only where placed by CPU and memory; memory in Slurm's units,
/// `M`, or `G`/`T` when exact). `None` before the job is placed.
fn alloc_tres(job: &Job, gres: &str) -> Option<String> {
    if job.allocations.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    let cpus: usize = job.allocations.iter().map(|a| a.cpus.len()).sum();
    if cpus > 0 {
        parts.push(format!("cpu={cpus}"));
    }
    let mem: u64 = job.allocations.iter().map(|a| a.memory_mib).sum();
    if mem > 0 {
        parts.push(format!("mem={}", memory_units(mem)));
    }
    parts.push(format!("node={}", job.allocations.len()));
    let gpus: usize = job.allocations.iter().map(|a| a.gpus.len()).sum();
    if gpus > 0 {
        parts.push(format!("gres/{gres}={gpus}"));
    }
    Some(parts.join(","))
}

/// MiB as Slurm prints memory: `M`, or the largest of `G`, `T` that divides it exactly.
pub(crate) fn memory_units(mib: u64) -> String {
    if mib.is_multiple_of(1024 * 1024) {
        format!("{}T", mib / (1024 * 1024))
    } else if mib.is_multiple_of(1024) {
        format!("{}G", mib / 1024)
    } else {
        format!("{mib}M")
    }
}

/// `scontrol show job` style: `Key=Value` pairs, a few per line, continuation lines
/// indented by three spaces; `(null)` for unset text, `Unknown` for unset times. Each
/// allocated node gets a line with its GPU indices (`Nodes=node-1 GRES=gpu:2(IDX:0-1)`).
pub fn scontrol_job(job: &Job, now: DateTime<Utc>) -> String {
    fn or_null(v: &Option<String>) -> &str {
        v.as_deref().filter(|s| !s.is_empty()).unwrap_or("(null)")
    }
    let mut lines: Vec<String> = Vec::new();
    // An array's job says which array and which task(s), as Slurm's first line does:
    // `ArrayTaskId=4-9` (and `ArrayTaskThrottle=2` for `%2`) on the master that still
    // holds pending tasks.
    let array = match (
        job.array_job_id,
        job.array_task_id,
        &job.array_tasks_pending,
    ) {
        (Some(array), Some(task), _) => format!(" ArrayJobId={array} ArrayTaskId={task}"),
        (Some(array), None, Some(pending)) => format!(
            " ArrayJobId={array} ArrayTaskId={pending}{}",
            job.array_max_running
                .map(|n| format!(" ArrayTaskThrottle={n}"))
                .unwrap_or_default()
        ),
        _ => String::new(),
    };
    lines.push(format!("JobId={}{array} JobName={}", job.id, job.name));
    lines.push(format!(
        "UserId={} Account={} QOS={}",
        job.user,
        or_null(&job.account),
        or_null(&job.qos)
    ));
    lines.push(format!(
        "JobState={} Reason={} Dependency={}",
        job.state,
        job.reason.as_deref().unwrap_or("None"),
        or_null(&job.spec.dependency)
    ));
    lines.push(format!(
        "Requeue={} Restarts={}",
        u8::from(job.spec.requeue.unwrap_or(true)),
        job.restart_count
    ));
    lines.push(format!(
        "ExitCode={}:{}",
        job.exit_code.unwrap_or(0),
        job.exit_signal.unwrap_or(0)
    ));
    lines.push(format!(
        "RunTime={} TimeLimit={}",
        scontrol_duration(job_run_seconds(job, now)),
        match job.time_limit {
            Some(s) => scontrol_duration(s),
            None => "UNLIMITED".to_string(),
        }
    ));
    lines.push(format!(
        "SubmitTime={}",
        scontrol_time(Some(job.submit_time))
    ));
    lines.push(format!(
        "StartTime={} EndTime={}",
        scontrol_time(job.start_time),
        scontrol_time(job.end_time)
    ));
    lines.push(format!("Partition={}", job.partition));
    if let Some(r) = job.spec.reservation.as_deref().filter(|r| !r.is_empty()) {
        lines.push(format!("Reservation={r}"));
    }
    // What it asked for (Slurm's request lines), so a user can check `-w`, `-x`, `-C`,
    // `--mem*` and `--time-min` while it waits.
    lines.push(format!(
        "ReqNodeList={} ExcNodeList={}",
        or_null(&job.spec.nodelist),
        or_null(&job.spec.exclude)
    ));
    lines.push(format!(
        "NodeList={}",
        job.nodelist
            .as_deref()
            .filter(|s| !s.is_empty())
            .unwrap_or("(null)")
    ));
    // Slurm's requested boards, sockets, cores and threads per core: only the last is
    // ever set here (`--hint=nomultithread`: 1).
    let threads = berth_core::cores::hint_threads_per_core(job.spec.hint.as_deref())
        .map_or_else(|| "*".to_string(), |t| t.to_string());
    lines.push(format!(
        "NumNodes={} NumCPUs={} NumTasks={} CPUs/Task={} ReqB:S:C:T=*:*:*:{threads}",
        job.num_nodes,
        job.num_cpus,
        job.num_tasks,
        job.spec.cpus_per_task.unwrap_or(1)
    ));
    // A `--gres=shard:N` job holds shards (device indices of shards), not GPUs.
    let gres = if job.spec.resource_request().shards {
        "shard"
    } else {
        "gpu"
    };
    if job.gpus_per_node > 0 {
        lines.push(format!("TresPerNode=gres/{gres}:{}", job.gpus_per_node));
    }
    if let Some(tres) = alloc_tres(job, gres) {
        lines.push(format!("AllocTRES={tres}"));
    }
    for allocation in &job.allocations {
        let mut line = format!("  Nodes={}", allocation.node);
        if !allocation.cpus.is_empty() {
            line.push_str(&format!(" CPU_IDs={}", gpu_index_ranges(&allocation.cpus)));
        }
        if allocation.memory_mib > 0 {
            line.push_str(&format!(" Mem={}", allocation.memory_mib));
        }
        line.push_str(&format!(
            " GRES={gres}:{}(IDX:{})",
            allocation.gpus.len(),
            gpu_index_ranges(&allocation.gpus)
        ));
        lines.push(line);
    }
    let memory = match (
        job.spec.mem_mib,
        job.spec.mem_per_cpu_mib,
        job.spec.mem_per_gpu_mib,
    ) {
        // Slurm writes 0 without a unit (`--mem=0`: all of each node's memory).
        (Some(0), _, _) => "MinMemoryNode=0".to_string(),
        (Some(m), _, _) => format!("MinMemoryNode={m}M"),
        (None, Some(m), _) => format!("MinMemoryCPU={m}M"),
        (None, None, Some(m)) => format!("MemPerTres=gres/gpu:{m}"),
        (None, None, None) => "MinMemoryNode=0".to_string(),
    };
    lines.push(format!(
        "MinCPUsNode={} {memory} TimeMin={}",
        job.spec.resource_request().cpus_per_node.max(1),
        job.spec
            .time_min
            .map_or_else(|| "N/A".to_string(), scontrol_duration)
    ));
    lines.push(format!("Features={}", or_null(&job.spec.constraint)));
    lines.push(format!("WorkDir={}", or_null(&job.work_dir)));
    lines.push(format!("StdOut={}", or_null(&job.stdout_path)));
    lines.push(format!("StdErr={}", or_null(&job.stderr_path)));
    lines.push(format!("Comment={}", or_null(&job.spec.comment)));
    key_value_lines(&lines)
}

/// Prints one of Slurm's `--json`/`--yaml` documents (data parser v0.0.44): pretty JSON,
/// or YAML under `---` as Slurm's commands print it.
///
/// # Errors
/// Writing to stdout fails.
pub fn print_document(document: &serde_json::Value, yaml: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let text = if yaml {
        let body = serde_yaml_ng::to_string(document)?;
        format!("---\n{body}")
    } else {
        format!("{}\n", serde_json::to_string_pretty(document)?)
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use berth_core::spec::JobSpec;
    use berth_core::wire::{Gpu, JobAllocation};
    use chrono::TimeZone;

    fn at(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + s, 0).unwrap()
    }

    fn job(id: i64, state: JobState) -> Job {
        Job {
            id,
            name: "train".into(),
            user: "alice".into(),
            account: None,
            partition: "gpu".into(),
            qos: None,
            state,
            reason: None,
            state_description: None,
            submit_time: at(0),
            start_time: None,
            end_time: None,
            time_limit: Some(3600),
            exit_code: None,
            exit_signal: None,
            num_nodes: 1,
            num_tasks: 1,
            num_cpus: 1,
            gpus_per_node: 2,
            allocations: vec![],
            nodelist: None,
            work_dir: Some("/home/alice".into()),
            stdout_path: Some("/home/alice/slurm-7.out".into()),
            stderr_path: Some("/home/alice/slurm-7.out".into()),
            restart_count: 0,
            spec: JobSpec::default(),
            expected_start: None,
            queue_position: None,
            priority: None,
            nice: 0,
            array_job_id: None,
            array_task_id: None,
            array_tasks_pending: None,
            array_max_running: None,
            environment: Default::default(),
            output_truncated: false,
        }
    }

    pub(crate) fn node(name: &str, state: NodeState, gpus: u32, alloc: u32) -> Node {
        Node {
            name: name.into(),
            state,
            reason: None,
            reason_user: None,
            reason_time: None,
            cpus: 32,
            memory_mib: 1024,
            features: vec![],
            cpus_effective: 32,
            cpus_allocated: 0,
            memory_effective_mib: 1024,
            memory_allocated_mib: 0,
            weight: 1,
            core_spec_count: 0,
            mem_spec_limit_mib: 0,
            sockets: 32,
            cores_per_socket: 1,
            threads_per_core: 1,
            gpus: (0..gpus)
                .map(|i| Gpu {
                    index: i,
                    uuid: format!("GPU-{i}"),
                    model: "NVIDIA H100 80GB HBM3".into(),
                    memory_mib: 81_559,
                    domain: None,
                    kind: Default::default(),
                    parent: None,
                    allocated: i < alloc,
                    job_id: None,
                    utilization_pct: None,
                    memory_used_mib: None,
                })
                .collect(),
            gpus_allocated: alloc,
            last_heartbeat: None,
            partitions: vec!["gpu".into()],
            pool: None,
            instance_id: None,
            instance_type: None,
            market: None,
            zone: None,
        }
    }

    pub(crate) fn partition(name: &str, is_default: bool) -> Partition {
        Partition {
            name: name.into(),
            is_default,
            default_time: None,
            max_time: None,
            nodes: vec![],
            total_nodes: 0,
            total_gpus: 0,
            priority_tier: 1,
            max_nodes: None,
            allowed_accounts: vec![],
            allowed_qos: vec![],
            def_cpu_per_gpu: None,
            def_mem_per_gpu: None,
            def_mem_per_cpu: None,
            max_mem_per_node: None,
        }
    }

    #[test]
    fn answers_are_made_printable_before_any_command_sees_them() {
        let mut v = serde_json::json!({
            "name": "x\u{1b}]0;pwned\u{7}",
            "items": [{"reason": "a\nb", "user": "ok"}],
            "env": {"K\u{9b}": "v\u{202E}"},
            "n": 3
        });
        escape_strings(&mut v);
        assert_eq!(v["name"], "x\\e]0;pwned\\u{0007}");
        assert_eq!(v["items"][0]["reason"], "a\\nb");
        assert_eq!(v["items"][0]["user"], "ok");
        assert_eq!(v["env"]["K\\u{009B}"], "v\\u{202E}");
        assert_eq!(v["n"], 3);
        let mut job = job(7, JobState::Pending);
        job.name = "\u{1b}[2Jevil".into();
        let mut value = serde_json::to_value(&job).unwrap();
        escape_strings(&mut value);
        let job: Job = serde_json::from_value(value).unwrap();
        let line = squeue_line(&QueueJob::from(&job), at(0));
        assert!(!line.contains('\u{1b}'), "{line:?}");
        assert!(line.contains("\\e[2Jev"), "{line:?}");
        // The queue's typed path escapes the same way, every string field.
        let mut raw = QueueJob::from(&job);
        raw.name = "\u{1b}[2Jevil".into();
        raw.user = "u\u{202E}".into();
        raw.account = Some("a\nb".into());
        raw.partition = "p\u{7}".into();
        raw.qos = Some("q\u{9b}".into());
        raw.reason = Some("r\r".into());
        raw.nodelist = Some("n\u{1b}".into());
        raw.work_dir = Some("/w\u{8}".into());
        raw.array_tasks_pending = Some("1\u{0}".into());
        let escaped = escape_queue_job(raw.clone());
        let mut via_value = serde_json::to_value(&raw).unwrap();
        escape_strings(&mut via_value);
        assert_eq!(serde_json::to_value(&escaped).unwrap(), via_value);
        assert_eq!(escaped.name, "\\e[2Jevil");
    }

    #[test]
    fn field_pads_and_truncates() {
        assert_eq!(field("abc", 5, true), "  abc");
        assert_eq!(field("abc", 5, false), "abc  ");
        assert_eq!(field("a_long_name", 8, true), "a_long_n");
    }

    #[test]
    fn squeue_pending_line_shows_reason_and_zero_time() {
        let mut j = job(7, JobState::Pending);
        j.reason = Some("Resources".into());
        let line = squeue_line(&QueueJob::from(&j), at(100));
        assert_eq!(
            line,
            "                 7       gpu    train    alice PD       0:00      1 (Resources)"
        );
        // Columns line up with the header.
        assert_eq!(line.find("(Resources)"), SQUEUE_HEADER.find("NODELIST"));
        assert_eq!(line.find(" PD "), SQUEUE_HEADER.find(" ST "));
    }

    #[test]
    fn squeue_pending_without_reason_shows_none() {
        let j = job(8, JobState::Pending);
        assert!(squeue_line(&QueueJob::from(&j), at(0)).ends_with(" (None)"));
    }

    #[test]
    fn squeue_running_line_shows_elapsed_time_and_nodelist() {
        let mut j = job(12, JobState::Running);
        j.name = "a_very_long_job_name".into();
        j.start_time = Some(at(10));
        j.nodelist = Some("node-[1-2]".into());
        j.num_nodes = 2;
        let line = squeue_line(&QueueJob::from(&j), at(10 + 3725));
        assert_eq!(
            line,
            "                12       gpu a_very_l    alice  R    1:02:05      2 node-[1-2]"
        );
        let table = squeue_table(&[QueueJob::from(&j)], at(10 + 3725));
        assert!(table.starts_with(SQUEUE_HEADER));
        assert_eq!(table.lines().count(), 2);
    }

    #[test]
    fn ended_job_time_stops_at_its_end() {
        let mut j = job(3, JobState::Completed);
        j.start_time = Some(at(0));
        j.end_time = Some(at(65));
        j.nodelist = Some("node-1".into());
        assert_eq!(job_run_seconds(&j, at(10_000)), 65);
        assert!(squeue_line(&QueueJob::from(&j), at(10_000)).contains(" CD       1:05 "));
    }

    #[test]
    fn node_table_shows_gpus_and_reason() {
        let mut down = node("node-10", NodeState::Down, 0, 0);
        down.reason = Some("not responding".into());
        let mut one = node("node-1", NodeState::Mixed, 8, 3);
        one.cpus_allocated = 4;
        one.cpus_effective = 30;
        one.features = vec!["h100".into(), "ib".into()];
        let table = node_table(&[one, down]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines,
            vec![
                "NODELIST STATE CPUS(A/I/O/T) MEMORY GPUS(ALLOC/TOTAL) MODEL                 FEATURES REASON",
                "node-1   mix   4/26/2/32     1024   3/8               NVIDIA H100 80GB HBM3 h100,ib  none",
                "node-10  down  0/0/32/32     1024   0/0               -                     (null)   not responding",
            ]
        );
    }

    #[test]
    fn gpu_indices_compress_to_ranges() {
        assert_eq!(gpu_index_ranges(&[0, 1, 2, 5, 7, 6]), "0-2,5-7");
        assert_eq!(gpu_index_ranges(&[3]), "3");
        assert_eq!(gpu_index_ranges(&[]), "");
    }

    #[test]
    fn scontrol_shows_key_values() {
        let mut j = job(7, JobState::Failed);
        j.start_time = Some(at(5));
        j.end_time = Some(at(5 + 90_061));
        j.exit_code = Some(3);
        j.nodelist = Some("node-1".into());
        j.allocations = vec![JobAllocation {
            node: "node-1".into(),
            gpus: vec![0, 1],
            cpus: vec![],
            memory_mib: 0,
        }];
        let text = scontrol_job(&j, at(100_000));
        assert!(text.starts_with("JobId=7 JobName=train\n   UserId=alice Account=(null)"));
        // An array's master holding pending tasks, and one task.
        let mut master = j.clone();
        master.array_job_id = Some(5);
        master.array_tasks_pending = Some("4-9".into());
        master.array_max_running = Some(2);
        let shown = scontrol_job(&master, at(100_000));
        assert!(
            shown.starts_with("JobId=7 ArrayJobId=5 ArrayTaskId=4-9 ArrayTaskThrottle=2 JobName="),
            "{shown}"
        );
        let mut task = master;
        task.array_task_id = Some(3);
        let shown = scontrol_job(&task, at(100_000));
        assert!(
            shown.starts_with("JobId=7 ArrayJobId=5 ArrayTaskId=3 JobName="),
            "{shown}"
        );
        assert!(text.contains("JobState=FAILED Reason=None"), "{text}");
        assert!(text.contains("ExitCode=3:0"), "{text}");
        assert!(
            text.contains("RunTime=1-01:01:01 TimeLimit=01:00:00"),
            "{text}"
        );
        assert!(
            text.contains("NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1"),
            "{text}"
        );
        assert!(text.contains("AllocTRES=node=1,gres/gpu=2"), "{text}");
        assert!(text.contains("NodeList=node-1"), "{text}");
        assert!(text.contains("TresPerNode=gres/gpu:2"), "{text}");
        assert!(text.contains("Nodes=node-1 GRES=gpu:2(IDX:0-1)"), "{text}");
        assert!(text.contains("StdOut=/home/alice/slurm-7.out"), "{text}");
        assert!(text.contains("Comment=(null)"), "{text}");
        let pending = scontrol_job(&job(8, JobState::Pending), at(0));
        assert!(
            pending.contains("StartTime=Unknown EndTime=Unknown"),
            "{pending}"
        );
        assert!(
            pending.contains("ReqNodeList=(null) ExcNodeList=(null)"),
            "{pending}"
        );
        assert!(pending.contains("Features=(null)"), "{pending}");
        // What a pending job asked for is shown as it waits.
        let mut asked = job(10, JobState::Pending);
        asked.spec.nodelist = Some("node-[1-2]".into());
        asked.spec.exclude = Some("node-3".into());
        asked.spec.constraint = Some("[ib|eth]".into());
        asked.spec.mem_mib = Some(4096);
        asked.spec.cpus_per_task = Some(4);
        asked.spec.time_min = Some(600);
        let text = scontrol_job(&asked, at(0));
        assert!(
            text.contains("ReqNodeList=node-[1-2] ExcNodeList=node-3"),
            "{text}"
        );
        assert!(
            text.contains("MinCPUsNode=4 MinMemoryNode=4096M TimeMin=00:10:00"),
            "{text}"
        );
        assert!(text.contains("Features=[ib|eth]"), "{text}");
        // A shard job holds shards, and says so.
        j.spec.gres = Some("shard:2".into());
        let text = scontrol_job(&j, at(100_000));
        assert!(text.contains("TresPerNode=gres/shard:2"), "{text}");
        assert!(text.contains("GRES=shard:2(IDX:0-1)"), "{text}");
    }

    #[test]
    fn scontrol_shows_the_cpus_and_memory_each_node_holds() {
        let mut j = job(9, JobState::Running);
        j.num_nodes = 2;
        j.num_tasks = 2;
        j.num_cpus = 6;
        j.spec.cpus_per_task = Some(3);
        j.allocations = vec![
            JobAllocation {
                node: "node-1".into(),
                gpus: vec![0],
                cpus: vec![0, 1, 2],
                memory_mib: 4096,
            },
            JobAllocation {
                node: "node-2".into(),
                gpus: vec![1],
                cpus: vec![4, 6, 7],
                memory_mib: 4096,
            },
        ];
        let text = scontrol_job(&j, at(100));
        assert!(
            text.contains("NumNodes=2 NumCPUs=6 NumTasks=2 CPUs/Task=3"),
            "{text}"
        );
        assert!(
            text.contains("AllocTRES=cpu=6,mem=8G,node=2,gres/gpu=2"),
            "{text}"
        );
        assert!(
            text.contains("Nodes=node-1 CPU_IDs=0-2 Mem=4096 GRES=gpu:1(IDX:0)"),
            "{text}"
        );
        assert!(
            text.contains("Nodes=node-2 CPU_IDs=4,6-7 Mem=4096 GRES=gpu:1(IDX:1)"),
            "{text}"
        );
        assert_eq!(memory_units(1536), "1536M");
        assert_eq!(memory_units(1024 * 1024), "1T");
    }

    #[test]
    fn job_output_is_filtered_on_a_terminal_and_whole_when_piped() {
        let raw = "\u{1b}]52;c;cm0gLXJm\u{7}ok \u{1b}[1mbold\u{1b}[0m é\n".as_bytes();
        let mut piped = OutputPrinter::new(false);
        assert_eq!(piped.chunk(raw), raw);
        let mut tty = OutputPrinter::new(true);
        // Cut inside the é and inside a colour sequence: both wait for the next chunk.
        let cut = raw.len() - 2;
        let mut out = tty.chunk(&raw[..12]);
        out.extend(tty.chunk(&raw[12..cut]));
        out.extend(tty.chunk(&raw[cut..]));
        out.extend(tty.finish());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\\e]52;c;cm0gLXJm\\u{0007}ok \u{1b}[1mbold\u{1b}[0m é\n"
        );
    }
}
