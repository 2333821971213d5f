from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.job_state import JobState
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.job_allocation import JobAllocation
    from ..models.job_environment import JobEnvironment
    from ..models.job_spec import JobSpec


T = TypeVar("T", bound="Job")


@_attrs_define
class Job:
    """A job, as `GET /v1/jobs/{id}` shows it.

    Attributes:
        allocations (list[JobAllocation]): The allocation, node by node in node-index order, once placed.
        gpus_per_node (int): GPUs asked for on each node (all of the node's for a whole-node exclusive job).
        id (int): The job id.
        name (str): The job name (`--job-name`, else the script's file name, else `sbatch`).
        num_nodes (int): Nodes asked for.
        num_tasks (int): Tasks asked for.
        partition (str): The partition: while a job that listed several (`-p a,b`) is pending, all of them
            separated by commas (as squeue shows them); once it started, the one it runs in.
        restart_count (int): How many times the job was requeued.
        spec (JobSpec): A job's specification, field by field as `sbatch` names its options. Absent fields take
            Slurm's defaults (one node, one task, the default partition's time limit).
        state (JobState): A job's state, as Slurm names it (`JOB_STATE` in `squeue -l`).
        submit_time (datetime.datetime): When it was submitted.
        user (str): The submitting user.
        account (None | str | Unset): The account charged.
        array_job_id (int | None | Unset): The array's id (`%A`), for an array task or master.
        array_max_running (int | None | Unset): For an array master: the most tasks that may run at once
            (`--array=…%N`), if
            limited.
        array_task_id (int | None | Unset): The array task index (`%a`), once the task has its own row.
        array_tasks_pending (None | str | Unset): For an array master: the task indices not started yet (`3-99%4` style,
            without
            the limit).
        end_time (datetime.datetime | None | Unset): When it ended.
        environment (JobEnvironment | Unset): The job's environment; values of variables named like secrets
            ([`crate::identity::is_secret_name`]) are masked as `********`.
        exit_code (int | None | Unset): The batch script's exit code, once ended.
        exit_signal (int | None | Unset): The signal that ended the batch script, if one did.
        expected_start (datetime.datetime | None | Unset): For a pending job with a backfill reservation: when it is
            planned to start
            (`squeue --start`).
        nice (int | Unset): `--nice`.
        nodelist (None | str | Unset): The allocated nodes as a compressed host list (`node-[1-2]`).
        num_cpus (int | Unset): CPUs (Slurm's `NumCPUs`): those allocated over all its nodes once placed by CPU,
            else those asked for (tasks × CPUs per task).
        output_truncated (bool | Unset): Whether the api stopped keeping this job's output at its cap (`[api]
            output_cap_mib`) for some run and stream: `GET /v1/jobs/{id}/output` then ends that
            run's part with a truncation line; the files on the node are whole.
        priority (int | None | Unset): The multifactor priority the scheduler computed last (pending jobs).
        qos (None | str | Unset): The QOS.
        queue_position (int | None | Unset): For a pending job that is not held: its place in the scheduler's order (1 =
            the
            first it considers), by priority, then submit time, then id, over every pending
            job of every partition.
        reason (None | str | Unset): Why a pending job waits (Slurm's reason names: `Priority`, `Resources` …), or why
            a job ended as it did, in Slurm's names (`None` for COMPLETED, `NonZeroExitCode`,
            `RaisedSignal`, `TimeLimit`, `NodeDown`, `OutOfMemory`, `JobLaunchFailure`, …;
            see [`crate::reason::ended_job_reason`]).
        start_time (datetime.datetime | None | Unset): When its current run started.
        state_description (None | str | Unset): What ended the job, when Berth knows more than the reason's name
            (Slurm's
            `state_desc`: `launch failed on node-1: …`, `preempted by job 7`); absent
            otherwise and while the job has not ended.
        stderr_path (None | str | Unset): The stderr file, pattern expanded (same as stdout when not split).
        stdout_path (None | str | Unset): The stdout file, pattern expanded for the batch node.
        time_limit (int | None | Unset): The time limit in seconds; `None` is unlimited.
        work_dir (None | str | Unset): The working directory of the batch script.
    """

    allocations: list[JobAllocation]
    gpus_per_node: int
    id: int
    name: str
    num_nodes: int
    num_tasks: int
    partition: str
    restart_count: int
    spec: JobSpec
    state: JobState
    submit_time: datetime.datetime
    user: str
    account: None | str | Unset = UNSET
    array_job_id: int | None | Unset = UNSET
    array_max_running: int | None | Unset = UNSET
    array_task_id: int | None | Unset = UNSET
    array_tasks_pending: None | str | Unset = UNSET
    end_time: datetime.datetime | None | Unset = UNSET
    environment: JobEnvironment | Unset = UNSET
    exit_code: int | None | Unset = UNSET
    exit_signal: int | None | Unset = UNSET
    expected_start: datetime.datetime | None | Unset = UNSET
    nice: int | Unset = UNSET
    nodelist: None | str | Unset = UNSET
    num_cpus: int | Unset = UNSET
    output_truncated: bool | Unset = UNSET
    priority: int | None | Unset = UNSET
    qos: None | str | Unset = UNSET
    queue_position: int | None | Unset = UNSET
    reason: None | str | Unset = UNSET
    start_time: datetime.datetime | None | Unset = UNSET
    state_description: None | str | Unset = UNSET
    stderr_path: None | str | Unset = UNSET
    stdout_path: None | str | Unset = UNSET
    time_limit: int | None | Unset = UNSET
    work_dir: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allocations = []
        for allocations_item_data in self.allocations:
            allocations_item = allocations_item_data.to_dict()
            allocations.append(allocations_item)

        gpus_per_node = self.gpus_per_node

        id = self.id

        name = self.name

        num_nodes = self.num_nodes

        num_tasks = self.num_tasks

        partition = self.partition

        restart_count = self.restart_count

        spec = self.spec.to_dict()

        state = self.state.value

        submit_time = self.submit_time.isoformat()

        user = self.user

        account: None | str | Unset
        if isinstance(self.account, Unset):
            account = UNSET
        else:
            account = self.account

        array_job_id: int | None | Unset
        if isinstance(self.array_job_id, Unset):
            array_job_id = UNSET
        else:
            array_job_id = self.array_job_id

        array_max_running: int | None | Unset
        if isinstance(self.array_max_running, Unset):
            array_max_running = UNSET
        else:
            array_max_running = self.array_max_running

        array_task_id: int | None | Unset
        if isinstance(self.array_task_id, Unset):
            array_task_id = UNSET
        else:
            array_task_id = self.array_task_id

        array_tasks_pending: None | str | Unset
        if isinstance(self.array_tasks_pending, Unset):
            array_tasks_pending = UNSET
        else:
            array_tasks_pending = self.array_tasks_pending

        end_time: None | str | Unset
        if isinstance(self.end_time, Unset):
            end_time = UNSET
        elif isinstance(self.end_time, datetime.datetime):
            end_time = self.end_time.isoformat()
        else:
            end_time = self.end_time

        environment: dict[str, Any] | Unset = UNSET
        if not isinstance(self.environment, Unset):
            environment = self.environment.to_dict()

        exit_code: int | None | Unset
        if isinstance(self.exit_code, Unset):
            exit_code = UNSET
        else:
            exit_code = self.exit_code

        exit_signal: int | None | Unset
        if isinstance(self.exit_signal, Unset):
            exit_signal = UNSET
        else:
            exit_signal = self.exit_signal

        expected_start: None | str | Unset
        if isinstance(self.expected_start, Unset):
            expected_start = UNSET
        elif isinstance(self.expected_start, datetime.datetime):
            expected_start = self.expected_start.isoformat()
        else:
            expected_start = self.expected_start

        nice = self.nice

        nodelist: None | str | Unset
        if isinstance(self.nodelist, Unset):
            nodelist = UNSET
        else:
            nodelist = self.nodelist

        num_cpus = self.num_cpus

        output_truncated = self.output_truncated

        priority: int | None | Unset
        if isinstance(self.priority, Unset):
            priority = UNSET
        else:
            priority = self.priority

        qos: None | str | Unset
        if isinstance(self.qos, Unset):
            qos = UNSET
        else:
            qos = self.qos

        queue_position: int | None | Unset
        if isinstance(self.queue_position, Unset):
            queue_position = UNSET
        else:
            queue_position = self.queue_position

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        start_time: None | str | Unset
        if isinstance(self.start_time, Unset):
            start_time = UNSET
        elif isinstance(self.start_time, datetime.datetime):
            start_time = self.start_time.isoformat()
        else:
            start_time = self.start_time

        state_description: None | str | Unset
        if isinstance(self.state_description, Unset):
            state_description = UNSET
        else:
            state_description = self.state_description

        stderr_path: None | str | Unset
        if isinstance(self.stderr_path, Unset):
            stderr_path = UNSET
        else:
            stderr_path = self.stderr_path

        stdout_path: None | str | Unset
        if isinstance(self.stdout_path, Unset):
            stdout_path = UNSET
        else:
            stdout_path = self.stdout_path

        time_limit: int | None | Unset
        if isinstance(self.time_limit, Unset):
            time_limit = UNSET
        else:
            time_limit = self.time_limit

        work_dir: None | str | Unset
        if isinstance(self.work_dir, Unset):
            work_dir = UNSET
        else:
            work_dir = self.work_dir

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "allocations": allocations,
                "gpus_per_node": gpus_per_node,
                "id": id,
                "name": name,
                "num_nodes": num_nodes,
                "num_tasks": num_tasks,
                "partition": partition,
                "restart_count": restart_count,
                "spec": spec,
                "state": state,
                "submit_time": submit_time,
                "user": user,
            }
        )
        if account is not UNSET:
            field_dict["account"] = account
        if array_job_id is not UNSET:
            field_dict["array_job_id"] = array_job_id
        if array_max_running is not UNSET:
            field_dict["array_max_running"] = array_max_running
        if array_task_id is not UNSET:
            field_dict["array_task_id"] = array_task_id
        if array_tasks_pending is not UNSET:
            field_dict["array_tasks_pending"] = array_tasks_pending
        if end_time is not UNSET:
            field_dict["end_time"] = end_time
        if environment is not UNSET:
            field_dict["environment"] = environment
        if exit_code is not UNSET:
            field_dict["exit_code"] = exit_code
        if exit_signal is not UNSET:
            field_dict["exit_signal"] = exit_signal
        if expected_start is not UNSET:
            field_dict["expected_start"] = expected_start
        if nice is not UNSET:
            field_dict["nice"] = nice
        if nodelist is not UNSET:
            field_dict["nodelist"] = nodelist
        if num_cpus is not UNSET:
            field_dict["num_cpus"] = num_cpus
        if output_truncated is not UNSET:
            field_dict["output_truncated"] = output_truncated
        if priority is not UNSET:
            field_dict["priority"] = priority
        if qos is not UNSET:
            field_dict["qos"] = qos
        if queue_position is not UNSET:
            field_dict["queue_position"] = queue_position
        if reason is not UNSET:
            field_dict["reason"] = reason
        if start_time is not UNSET:
            field_dict["start_time"] = start_time
        if state_description is not UNSET:
            field_dict["state_description"] = state_description
        if stderr_path is not UNSET:
            field_dict["stderr_path"] = stderr_path
        if stdout_path is not UNSET:
            field_dict["stdout_path"] = stdout_path
        if time_limit is not UNSET:
            field_dict["time_limit"] = time_limit
        if work_dir is not UNSET:
            field_dict["work_dir"] = work_dir

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.job_allocation import JobAllocation  # noqa: PLC0415
        from ..models.job_environment import JobEnvironment  # noqa: PLC0415
        from ..models.job_spec import JobSpec  # noqa: PLC0415

        d = dict(src_dict)
        allocations = []
        _allocations = d.pop("allocations")
        for allocations_item_data in _allocations:
            allocations_item = JobAllocation.from_dict(allocations_item_data)

            allocations.append(allocations_item)

        gpus_per_node = d.pop("gpus_per_node")

        id = d.pop("id")

        name = d.pop("name")

        num_nodes = d.pop("num_nodes")

        num_tasks = d.pop("num_tasks")

        partition = d.pop("partition")

        restart_count = d.pop("restart_count")

        spec = JobSpec.from_dict(d.pop("spec"))

        state = JobState(d.pop("state"))

        submit_time = datetime.datetime.fromisoformat(d.pop("submit_time"))

        user = d.pop("user")

        def _parse_account(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        account = _parse_account(d.pop("account", UNSET))

        def _parse_array_job_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        array_job_id = _parse_array_job_id(d.pop("array_job_id", UNSET))

        def _parse_array_max_running(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        array_max_running = _parse_array_max_running(d.pop("array_max_running", UNSET))

        def _parse_array_task_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        array_task_id = _parse_array_task_id(d.pop("array_task_id", UNSET))

        def _parse_array_tasks_pending(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        array_tasks_pending = _parse_array_tasks_pending(d.pop("array_tasks_pending", UNSET))

        def _parse_end_time(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                end_time_type_0 = datetime.datetime.fromisoformat(data)

                return end_time_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        end_time = _parse_end_time(d.pop("end_time", UNSET))

        _environment = d.pop("environment", UNSET)
        environment: JobEnvironment | Unset
        if isinstance(_environment, Unset):
            environment = UNSET
        else:
            environment = JobEnvironment.from_dict(_environment)

        def _parse_exit_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exit_code = _parse_exit_code(d.pop("exit_code", UNSET))

        def _parse_exit_signal(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exit_signal = _parse_exit_signal(d.pop("exit_signal", UNSET))

        def _parse_expected_start(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                expected_start_type_0 = datetime.datetime.fromisoformat(data)

                return expected_start_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        expected_start = _parse_expected_start(d.pop("expected_start", UNSET))

        nice = d.pop("nice", UNSET)

        def _parse_nodelist(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        nodelist = _parse_nodelist(d.pop("nodelist", UNSET))

        num_cpus = d.pop("num_cpus", UNSET)

        output_truncated = d.pop("output_truncated", UNSET)

        def _parse_priority(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        priority = _parse_priority(d.pop("priority", UNSET))

        def _parse_qos(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        qos = _parse_qos(d.pop("qos", UNSET))

        def _parse_queue_position(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        queue_position = _parse_queue_position(d.pop("queue_position", UNSET))

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        def _parse_start_time(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                start_time_type_0 = datetime.datetime.fromisoformat(data)

                return start_time_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        start_time = _parse_start_time(d.pop("start_time", UNSET))

        def _parse_state_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        state_description = _parse_state_description(d.pop("state_description", UNSET))

        def _parse_stderr_path(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stderr_path = _parse_stderr_path(d.pop("stderr_path", UNSET))

        def _parse_stdout_path(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stdout_path = _parse_stdout_path(d.pop("stdout_path", UNSET))

        def _parse_time_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        time_limit = _parse_time_limit(d.pop("time_limit", UNSET))

        def _parse_work_dir(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        work_dir = _parse_work_dir(d.pop("work_dir", UNSET))

        job = cls(
            allocations=allocations,
            gpus_per_node=gpus_per_node,
            id=id,
            name=name,
            num_nodes=num_nodes,
            num_tasks=num_tasks,
            partition=partition,
            restart_count=restart_count,
            spec=spec,
            state=state,
            submit_time=submit_time,
            user=user,
            account=account,
            array_job_id=array_job_id,
            array_max_running=array_max_running,
            array_task_id=array_task_id,
            array_tasks_pending=array_tasks_pending,
            end_time=end_time,
            environment=environment,
            exit_code=exit_code,
            exit_signal=exit_signal,
            expected_start=expected_start,
            nice=nice,
            nodelist=nodelist,
            num_cpus=num_cpus,
            output_truncated=output_truncated,
            priority=priority,
            qos=qos,
            queue_position=queue_position,
            reason=reason,
            start_time=start_time,
            state_description=state_description,
            stderr_path=stderr_path,
            stdout_path=stdout_path,
            time_limit=time_limit,
            work_dir=work_dir,
        )

        job.additional_properties = d
        return job

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
