//! The queue on the wire: squeue's rows (whole or with only the fields asked for), list
//! queries and output streams.

#[allow(unused_imports)]
use super::*;

/// A job as `squeue` lists it (`GET /v1/queue`): the fields squeue's formats show, and
/// none of [`Job`]'s submitted spec, environment or per-node allocation detail, so that a
/// queue of 10,000 jobs is a small answer. Each field means what [`Job`]'s field of the
/// same name means. A field with no value (a pending job's `start_time` …) is left out
/// rather than sent as `null`: a queue is mostly pending jobs, and those fields are most
/// of its bytes. `GET /v1/queue?fields=…` leaves out every field it does not name but
/// `id` and `state` ([`QueueFields`]); a field left out reads as its default here (an
/// empty string, 0, 1970-01-01T00:00:00Z, none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QueueJob {
    /// The job id.
    pub id: i64,
    /// The job name.
    #[serde(default)]
    pub name: String,
    /// The submitting user.
    #[serde(default)]
    pub user: String,
    /// The account charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The partition (while pending, every partition it may start in, `a,b`).
    #[serde(default)]
    pub partition: String,
    /// The QOS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// The state.
    pub state: JobState,
    /// Why a pending job waits, or why a job ended as it did (Slurm's names, as
    /// [`crate::wire::Job::reason`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it was submitted.
    #[serde(default)]
    pub submit_time: DateTime<Utc>,
    /// When its current run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<DateTime<Utc>>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    /// The time limit in seconds; `None` is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<u64>,
    /// Nodes asked for.
    #[serde(default)]
    pub num_nodes: u32,
    /// Tasks asked for.
    #[serde(default)]
    pub num_tasks: u32,
    /// CPUs: allocated once placed by CPU, else asked for.
    #[serde(default)]
    pub num_cpus: u32,
    /// GPUs on each node.
    #[serde(default)]
    pub gpus_per_node: u32,
    /// The allocated nodes as a compressed host list (`node-[1-2]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodelist: Option<String>,
    /// The working directory of the batch script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<String>,
    /// How many times the job was requeued.
    #[serde(default)]
    pub restart_count: u32,
    /// The batch script's exit code, once ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the batch script, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    /// A pending job's planned start (`squeue --start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_start: Option<DateTime<Utc>>,
    /// A pending job's multifactor priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// `--nice`.
    #[serde(default)]
    pub nice: i32,
    /// The array's id, for an array task or master.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_job_id: Option<i64>,
    /// The array task index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_task_id: Option<u32>,
    /// For an array master: the task indices not started yet (`4-9`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_tasks_pending: Option<String>,
    /// For an array master: the most tasks that may run at once (`%N`), if limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_max_running: Option<u32>,
}

impl From<&Job> for QueueJob {
    fn from(job: &Job) -> QueueJob {
        QueueJob {
            id: job.id,
            name: job.name.clone(),
            user: job.user.clone(),
            account: job.account.clone(),
            partition: job.partition.clone(),
            qos: job.qos.clone(),
            state: job.state,
            reason: job.reason.clone(),
            submit_time: job.submit_time,
            start_time: job.start_time,
            end_time: job.end_time,
            time_limit: job.time_limit,
            num_nodes: job.num_nodes,
            num_tasks: job.num_tasks,
            num_cpus: job.num_cpus,
            gpus_per_node: job.gpus_per_node,
            nodelist: job.nodelist.clone(),
            work_dir: job.work_dir.clone(),
            restart_count: job.restart_count,
            exit_code: job.exit_code,
            exit_signal: job.exit_signal,
            expected_start: job.expected_start,
            priority: job.priority,
            nice: job.nice,
            array_job_id: job.array_job_id,
            array_task_id: job.array_task_id,
            array_tasks_pending: job.array_tasks_pending.clone(),
            array_max_running: job.array_max_running,
        }
    }
}

/// Which of [`QueueJob`]'s fields an answer of `GET /v1/queue` carries (`fields=name,user`:
/// a sparse fieldset): `id` and `state` always, and those named. squeue asks for the
/// fields its format prints, so that 10,000 jobs are a third of the bytes to encode, send
/// and parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFields(u32);

/// A [`QueueJob`] as an answer with [`QueueFields`] writes it: only those fields, each as
/// [`QueueJob`]'s own serialization writes it (a field with no value left out).
#[derive(Debug, Clone, Copy)]
pub struct SparseQueueJob<'a> {
    /// The job.
    pub job: &'a QueueJob,
    /// The fields written.
    pub fields: QueueFields,
}

/// Whether a field of a [`QueueJob`] has a value to write (an `Option` that is `Some`;
/// every other field always has).
trait QueueFieldValue {
    fn has_value(&self) -> bool {
        true
    }
}

impl<T> QueueFieldValue for Option<T> {
    fn has_value(&self) -> bool {
        self.is_some()
    }
}

impl QueueFieldValue for i64 {}
impl QueueFieldValue for i32 {}
impl QueueFieldValue for u32 {}
impl QueueFieldValue for String {}
impl QueueFieldValue for JobState {}
impl QueueFieldValue for DateTime<Utc> {}

/// Defines [`QueueFields::NAMES`] and [`SparseQueueJob`]'s serialization from one list of
/// [`QueueJob`]'s fields, which must name every field in its order (a destructuring
/// below fails to compile otherwise).
macro_rules! queue_fields {
    ($($field:ident),* $(,)?) => {
        impl QueueFields {
            /// Every field's name, in [`QueueJob`]'s order (field `i` is bit `i`).
            pub const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];
        }

        impl Serialize for SparseQueueJob<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let job = self.job;
                let mut map = serializer.serialize_map(None)?;
                let mut bit = 0;
                $(
                    if self.fields.0 & (1 << bit) != 0 && job.$field.has_value() {
                        map.serialize_entry(stringify!($field), &job.$field)?;
                    }
                    bit += 1;
                )*
                debug_assert_eq!(bit, QueueFields::NAMES.len());
                map.end()
            }
        }

        /// Compiles only while the list above names every field of [`QueueJob`].
        #[allow(dead_code)]
        fn queue_fields_name_every_field(job: QueueJob) {
            let QueueJob { $($field: _),* } = job;
        }
    };
}

queue_fields!(
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
);

impl QueueFields {
    /// Every field: what an answer without `fields` carries.
    pub const ALL: QueueFields = QueueFields((1 << QueueFields::NAMES.len()) - 1);

    /// `id` and `state` and the fields named in `list` (comma-separated names of
    /// [`QueueJob`]'s fields, as `fields=` takes them; blanks around a name and empty
    /// items are ignored).
    ///
    /// # Errors
    /// A message naming the first name that is not a field, and listing the fields.
    pub fn parse(list: &str) -> Result<QueueFields, String> {
        let mut bits = QueueFields::bit("id") | QueueFields::bit("state");
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let Some(i) = QueueFields::NAMES.iter().position(|n| *n == name) else {
                return Err(format!(
                    "{name:?} is not a field of a queue job (one of {})",
                    QueueFields::NAMES.join(", ")
                ));
            };
            bits |= 1 << i;
        }
        Ok(QueueFields(bits))
    }

    /// Whether the field `name` is in the set (`false` for a name that is no field).
    pub fn contains(self, name: &str) -> bool {
        self.0 & QueueFields::bit(name) != 0
    }

    fn bit(name: &str) -> u32 {
        QueueFields::NAMES
            .iter()
            .position(|n| *n == name)
            .map_or(0, |i| 1 << i)
    }
}

/// `GET /v1/queue`'s own parameters (beside [`JobListQuery`]'s filters).
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct QueueQuery {
    /// Only these fields of each job (comma-separated names of `QueueJob`'s fields:
    /// `name,user,partition`); `id` and `state` are always sent. Every field when absent.
    pub fields: Option<String>,
}

/// A page of the queue (`GET /v1/queue`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct QueueList {
    /// The jobs, by ascending id.
    pub items: Vec<QueueJob>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// `GET /v1/jobs` and `GET /v1/queue` filters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobListQuery {
    /// Only jobs in these states (comma-separated, long or compact names).
    pub state: Option<String>,
    /// Only this user's jobs.
    pub user: Option<String>,
    /// Only jobs of this partition.
    pub partition: Option<String>,
    /// Only jobs with this name.
    pub name: Option<String>,
    /// Only jobs charged to these accounts (comma-separated, as `squeue -A`).
    pub account: Option<String>,
    /// Only jobs of these QOS (comma-separated, as `squeue -q`).
    pub qos: Option<String>,
    /// Page size: `GET /v1/jobs` 1..=1000 (default 100); `GET /v1/queue` 1..=10000
    /// (default 10000; as `application/x-ndjson`, every job unless given).
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// Which output stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputStream {
    /// Standard output (and standard error when they share a file).
    Stdout,
    /// Standard error, when `--error` names its own file.
    Stderr,
}

impl OutputStream {
    /// The lower-case name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
}

/// `GET /v1/jobs/{id}/output` query.
#[derive(Debug, Clone, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OutputQuery {
    /// `stdout` (default) or `stderr`.
    pub stream: Option<OutputStream>,
    /// Keep the response open and stream new output until the job ends.
    #[serde(default)]
    pub follow: bool,
}
