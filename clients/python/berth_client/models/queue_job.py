from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.job_state import JobState
from ..types import UNSET, Unset

T = TypeVar("T", bound="QueueJob")


@_attrs_define
class QueueJob:
    """A job as `squeue` lists it (`GET /v1/queue`): the fields squeue's formats show, and
    none of [`Job`]'s submitted spec, environment or per-node allocation detail, so that a
    queue of 10,000 jobs is a small answer. Each field means what [`Job`]'s field of the
    same name means. A field with no value (a pending job's `start_time` …) is left out
    rather than sent as `null`: a queue is mostly pending jobs, and those fields are most
    of its bytes. `GET /v1/queue?fields=…` leaves out every field it does not name but
    `id` and `state` ([`QueueFields`]); a field left out reads as its default here (an
    empty string, 0, 1970-01-01T00:00:00Z, none).

        Attributes:
            id (int): The job id.
            state (JobState): A job's state, as Slurm names it (`JOB_STATE` in `squeue -l`).
            account (None | str | Unset): The account charged.
            array_job_id (int | None | Unset): The array's id, for an array task or master.
            array_max_running (int | None | Unset): For an array master: the most tasks that may run at once (`%N`), if
                limited.
            array_task_id (int | None | Unset): The array task index.
            array_tasks_pending (None | str | Unset): For an array master: the task indices not started yet (`4-9`).
            end_time (datetime.datetime | None | Unset): When it ended.
            exit_code (int | None | Unset): The batch script's exit code, once ended.
            exit_signal (int | None | Unset): The signal that ended the batch script, if one did.
            expected_start (datetime.datetime | None | Unset): A pending job's planned start (`squeue --start`).
            gpus_per_node (int | Unset): GPUs on each node.
            name (str | Unset): The job name.
            nice (int | Unset): `--nice`.
            nodelist (None | str | Unset): The allocated nodes as a compressed host list (`node-[1-2]`).
            num_cpus (int | Unset): CPUs: allocated once placed by CPU, else asked for.
            num_nodes (int | Unset): Nodes asked for.
            num_tasks (int | Unset): Tasks asked for.
            partition (str | Unset): The partition (while pending, every partition it may start in, `a,b`).
            priority (int | None | Unset): A pending job's multifactor priority.
            qos (None | str | Unset): The QOS.
            reason (None | str | Unset): Why a pending job waits, or why a job ended as it did (Slurm's names, as
                [`crate::wire::Job::reason`]).
            restart_count (int | Unset): How many times the job was requeued.
            start_time (datetime.datetime | None | Unset): When its current run started.
            submit_time (datetime.datetime | Unset): When it was submitted.
            time_limit (int | None | Unset): The time limit in seconds; `None` is unlimited.
            user (str | Unset): The submitting user.
            work_dir (None | str | Unset): The working directory of the batch script.
    """

    id: int
    state: JobState
    account: None | str | Unset = UNSET
    array_job_id: int | None | Unset = UNSET
    array_max_running: int | None | Unset = UNSET
    array_task_id: int | None | Unset = UNSET
    array_tasks_pending: None | str | Unset = UNSET
    end_time: datetime.datetime | None | Unset = UNSET
    exit_code: int | None | Unset = UNSET
    exit_signal: int | None | Unset = UNSET
    expected_start: datetime.datetime | None | Unset = UNSET
    gpus_per_node: int | Unset = UNSET
    name: str | Unset = UNSET
    nice: int | Unset = UNSET
    nodelist: None | str | Unset = UNSET
    num_cpus: int | Unset = UNSET
    num_nodes: int | Unset = UNSET
    num_tasks: int | Unset = UNSET
    partition: str | Unset = UNSET
    priority: int | None | Unset = UNSET
    qos: None | str | Unset = UNSET
    reason: None | str | Unset = UNSET
    restart_count: int | Unset = UNSET
    start_time: datetime.datetime | None | Unset = UNSET
    submit_time: datetime.datetime | Unset = UNSET
    time_limit: int | None | Unset = UNSET
    user: str | Unset = UNSET
    work_dir: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        state = self.state.value

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

        gpus_per_node = self.gpus_per_node

        name = self.name

        nice = self.nice

        nodelist: None | str | Unset
        if isinstance(self.nodelist, Unset):
            nodelist = UNSET
        else:
            nodelist = self.nodelist

        num_cpus = self.num_cpus

        num_nodes = self.num_nodes

        num_tasks = self.num_tasks

        partition = self.partition

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

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        restart_count = self.restart_count

        start_time: None | str | Unset
        if isinstance(self.start_time, Unset):
            start_time = UNSET
        elif isinstance(self.start_time, datetime.datetime):
            start_time = self.start_time.isoformat()
        else:
            start_time = self.start_time

        submit_time: str | Unset = UNSET
        if not isinstance(self.submit_time, Unset):
            submit_time = self.submit_time.isoformat()

        time_limit: int | None | Unset
        if isinstance(self.time_limit, Unset):
            time_limit = UNSET
        else:
            time_limit = self.time_limit

        user = self.user

        work_dir: None | str | Unset
        if isinstance(self.work_dir, Unset):
            work_dir = UNSET
        else:
            work_dir = self.work_dir

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "state": state,
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
        if exit_code is not UNSET:
            field_dict["exit_code"] = exit_code
        if exit_signal is not UNSET:
            field_dict["exit_signal"] = exit_signal
        if expected_start is not UNSET:
            field_dict["expected_start"] = expected_start
        if gpus_per_node is not UNSET:
            field_dict["gpus_per_node"] = gpus_per_node
        if name is not UNSET:
            field_dict["name"] = name
        if nice is not UNSET:
            field_dict["nice"] = nice
        if nodelist is not UNSET:
            field_dict["nodelist"] = nodelist
        if num_cpus is not UNSET:
            field_dict["num_cpus"] = num_cpus
        if num_nodes is not UNSET:
            field_dict["num_nodes"] = num_nodes
        if num_tasks is not UNSET:
            field_dict["num_tasks"] = num_tasks
        if partition is not UNSET:
            field_dict["partition"] = partition
        if priority is not UNSET:
            field_dict["priority"] = priority
        if qos is not UNSET:
            field_dict["qos"] = qos
        if reason is not UNSET:
            field_dict["reason"] = reason
        if restart_count is not UNSET:
            field_dict["restart_count"] = restart_count
        if start_time is not UNSET:
            field_dict["start_time"] = start_time
        if submit_time is not UNSET:
            field_dict["submit_time"] = submit_time
        if time_limit is not UNSET:
            field_dict["time_limit"] = time_limit
        if user is not UNSET:
            field_dict["user"] = user
        if work_dir is not UNSET:
            field_dict["work_dir"] = work_dir

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        state = JobState(d.pop("state"))

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

        gpus_per_node = d.pop("gpus_per_node", UNSET)

        name = d.pop("name", UNSET)

        nice = d.pop("nice", UNSET)

        def _parse_nodelist(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        nodelist = _parse_nodelist(d.pop("nodelist", UNSET))

        num_cpus = d.pop("num_cpus", UNSET)

        num_nodes = d.pop("num_nodes", UNSET)

        num_tasks = d.pop("num_tasks", UNSET)

        partition = d.pop("partition", UNSET)

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

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        restart_count = d.pop("restart_count", UNSET)

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

        _submit_time = d.pop("submit_time", UNSET)
        submit_time: datetime.datetime | Unset
        if isinstance(_submit_time, Unset):
            submit_time = UNSET
        else:
            submit_time = datetime.datetime.fromisoformat(_submit_time)

        def _parse_time_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        time_limit = _parse_time_limit(d.pop("time_limit", UNSET))

        user = d.pop("user", UNSET)

        def _parse_work_dir(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        work_dir = _parse_work_dir(d.pop("work_dir", UNSET))

        queue_job = cls(
            id=id,
            state=state,
            account=account,
            array_job_id=array_job_id,
            array_max_running=array_max_running,
            array_task_id=array_task_id,
            array_tasks_pending=array_tasks_pending,
            end_time=end_time,
            exit_code=exit_code,
            exit_signal=exit_signal,
            expected_start=expected_start,
            gpus_per_node=gpus_per_node,
            name=name,
            nice=nice,
            nodelist=nodelist,
            num_cpus=num_cpus,
            num_nodes=num_nodes,
            num_tasks=num_tasks,
            partition=partition,
            priority=priority,
            qos=qos,
            reason=reason,
            restart_count=restart_count,
            start_time=start_time,
            submit_time=submit_time,
            time_limit=time_limit,
            user=user,
            work_dir=work_dir,
        )

        queue_job.additional_properties = d
        return queue_job

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
