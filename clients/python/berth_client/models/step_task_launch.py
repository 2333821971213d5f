from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step_task_key import StepTaskKey
    from ..models.step_task_launch_environment import StepTaskLaunchEnvironment


T = TypeVar("T", bound="StepTaskLaunch")


@_attrs_define
class StepTaskLaunch:
    """A step task a node must start (in a sync answer).

    Attributes:
        command (list[str]): The command (argv).
        environment (StepTaskLaunchEnvironment): The environment from `srun`; the worker overlays the task's Slurm
            variables.
        gpus (list[int]): The task's GPUs (`CUDA_VISIBLE_DEVICES`).
        job_gpus (list[int]): The job's GPUs on this node (`SLURM_JOB_GPUS`).
        key (StepTaskKey): Names one task of one step of one job run.
        local_id (int): `SLURM_LOCALID`.
        node_index (int): `SLURM_NODEID`.
        ntasks (int): Tasks in the step (`SLURM_NTASKS`, `SLURM_STEP_NUM_TASKS`).
        step_gpus (list[int]): The step's GPUs on this node (`SLURM_STEP_GPUS`).
        step_nodes (list[str]): The step's nodes, in order (`SLURM_STEP_NODELIST`).
        tasks_on_node (int): Tasks of the step on this node (`SLURM_STEP_TASKS_PER_NODE` here).
        cpu_limit (int | None | Unset): The job's CPUs on this node (its cgroup's quota).
        cpus_per_task (int | None | Unset): `--cpus-per-task`.
        incarnation (None | Unset | UUID): The job's incarnation ([`crate::wire::Incarnation`]): the worker puts it on
            the
            task's reports and never takes a task of another incarnation for this one.
        job_cpu_ids (list[int] | Unset): The job's logical CPU ids on this node (its cpuset, which the step's tasks
            share);
            empty: not placed by CPU.
        job_threads_per_core (int | None | Unset): The job's most hardware threads per core (`--hint=nomultithread`: 1):
            the task
            runs on the lowest that many ids of each core of `job_cpu_ids`, as the job does.
            `None`: every CPU of `job_cpu_ids`.
        memory_limit_mib (int | None | Unset): The job's memory limit on this node, MiB (its cgroup's, shared with the
            batch
            shell on the batch node).
        pty (bool | Unset): Run in a pseudo-terminal (task 0 of a `--pty` step): its input arrives as
            [`PtyInput`]s.
        user (str | Unset): The job's user (whom a worker running as root runs the task as).
        warning_at (datetime.datetime | None | Unset): … at this time (the job's start plus its time limit less the
            warning's seconds).
        warning_signal (int | None | Unset): The job's `--signal` without `B:`: the signal number to send the task …
        work_dir (None | str | Unset): The working directory; absent: the job's work dir, else a scratch directory.
    """

    command: list[str]
    environment: StepTaskLaunchEnvironment
    gpus: list[int]
    job_gpus: list[int]
    key: StepTaskKey
    local_id: int
    node_index: int
    ntasks: int
    step_gpus: list[int]
    step_nodes: list[str]
    tasks_on_node: int
    cpu_limit: int | None | Unset = UNSET
    cpus_per_task: int | None | Unset = UNSET
    incarnation: None | Unset | UUID = UNSET
    job_cpu_ids: list[int] | Unset = UNSET
    job_threads_per_core: int | None | Unset = UNSET
    memory_limit_mib: int | None | Unset = UNSET
    pty: bool | Unset = UNSET
    user: str | Unset = UNSET
    warning_at: datetime.datetime | None | Unset = UNSET
    warning_signal: int | None | Unset = UNSET
    work_dir: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        command = self.command

        environment = self.environment.to_dict()

        gpus = self.gpus

        job_gpus = self.job_gpus

        key = self.key.to_dict()

        local_id = self.local_id

        node_index = self.node_index

        ntasks = self.ntasks

        step_gpus = self.step_gpus

        step_nodes = self.step_nodes

        tasks_on_node = self.tasks_on_node

        cpu_limit: int | None | Unset
        if isinstance(self.cpu_limit, Unset):
            cpu_limit = UNSET
        else:
            cpu_limit = self.cpu_limit

        cpus_per_task: int | None | Unset
        if isinstance(self.cpus_per_task, Unset):
            cpus_per_task = UNSET
        else:
            cpus_per_task = self.cpus_per_task

        incarnation: None | str | Unset
        if isinstance(self.incarnation, Unset):
            incarnation = UNSET
        elif isinstance(self.incarnation, UUID):
            incarnation = str(self.incarnation)
        else:
            incarnation = self.incarnation

        job_cpu_ids: list[int] | Unset = UNSET
        if not isinstance(self.job_cpu_ids, Unset):
            job_cpu_ids = self.job_cpu_ids

        job_threads_per_core: int | None | Unset
        if isinstance(self.job_threads_per_core, Unset):
            job_threads_per_core = UNSET
        else:
            job_threads_per_core = self.job_threads_per_core

        memory_limit_mib: int | None | Unset
        if isinstance(self.memory_limit_mib, Unset):
            memory_limit_mib = UNSET
        else:
            memory_limit_mib = self.memory_limit_mib

        pty = self.pty

        user = self.user

        warning_at: None | str | Unset
        if isinstance(self.warning_at, Unset):
            warning_at = UNSET
        elif isinstance(self.warning_at, datetime.datetime):
            warning_at = self.warning_at.isoformat()
        else:
            warning_at = self.warning_at

        warning_signal: int | None | Unset
        if isinstance(self.warning_signal, Unset):
            warning_signal = UNSET
        else:
            warning_signal = self.warning_signal

        work_dir: None | str | Unset
        if isinstance(self.work_dir, Unset):
            work_dir = UNSET
        else:
            work_dir = self.work_dir

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "command": command,
                "environment": environment,
                "gpus": gpus,
                "job_gpus": job_gpus,
                "key": key,
                "local_id": local_id,
                "node_index": node_index,
                "ntasks": ntasks,
                "step_gpus": step_gpus,
                "step_nodes": step_nodes,
                "tasks_on_node": tasks_on_node,
            }
        )
        if cpu_limit is not UNSET:
            field_dict["cpu_limit"] = cpu_limit
        if cpus_per_task is not UNSET:
            field_dict["cpus_per_task"] = cpus_per_task
        if incarnation is not UNSET:
            field_dict["incarnation"] = incarnation
        if job_cpu_ids is not UNSET:
            field_dict["job_cpu_ids"] = job_cpu_ids
        if job_threads_per_core is not UNSET:
            field_dict["job_threads_per_core"] = job_threads_per_core
        if memory_limit_mib is not UNSET:
            field_dict["memory_limit_mib"] = memory_limit_mib
        if pty is not UNSET:
            field_dict["pty"] = pty
        if user is not UNSET:
            field_dict["user"] = user
        if warning_at is not UNSET:
            field_dict["warning_at"] = warning_at
        if warning_signal is not UNSET:
            field_dict["warning_signal"] = warning_signal
        if work_dir is not UNSET:
            field_dict["work_dir"] = work_dir

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.step_task_key import StepTaskKey  # noqa: PLC0415
        from ..models.step_task_launch_environment import StepTaskLaunchEnvironment  # noqa: PLC0415

        d = dict(src_dict)
        command = cast(list[str], d.pop("command"))

        environment = StepTaskLaunchEnvironment.from_dict(d.pop("environment"))

        gpus = cast(list[int], d.pop("gpus"))

        job_gpus = cast(list[int], d.pop("job_gpus"))

        key = StepTaskKey.from_dict(d.pop("key"))

        local_id = d.pop("local_id")

        node_index = d.pop("node_index")

        ntasks = d.pop("ntasks")

        step_gpus = cast(list[int], d.pop("step_gpus"))

        step_nodes = cast(list[str], d.pop("step_nodes"))

        tasks_on_node = d.pop("tasks_on_node")

        def _parse_cpu_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cpu_limit = _parse_cpu_limit(d.pop("cpu_limit", UNSET))

        def _parse_cpus_per_task(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cpus_per_task = _parse_cpus_per_task(d.pop("cpus_per_task", UNSET))

        def _parse_incarnation(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                incarnation_type_0 = UUID(data)

                return incarnation_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        incarnation = _parse_incarnation(d.pop("incarnation", UNSET))

        job_cpu_ids = cast(list[int], d.pop("job_cpu_ids", UNSET))

        def _parse_job_threads_per_core(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        job_threads_per_core = _parse_job_threads_per_core(d.pop("job_threads_per_core", UNSET))

        def _parse_memory_limit_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        memory_limit_mib = _parse_memory_limit_mib(d.pop("memory_limit_mib", UNSET))

        pty = d.pop("pty", UNSET)

        user = d.pop("user", UNSET)

        def _parse_warning_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                warning_at_type_0 = datetime.datetime.fromisoformat(data)

                return warning_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        warning_at = _parse_warning_at(d.pop("warning_at", UNSET))

        def _parse_warning_signal(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        warning_signal = _parse_warning_signal(d.pop("warning_signal", UNSET))

        def _parse_work_dir(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        work_dir = _parse_work_dir(d.pop("work_dir", UNSET))

        step_task_launch = cls(
            command=command,
            environment=environment,
            gpus=gpus,
            job_gpus=job_gpus,
            key=key,
            local_id=local_id,
            node_index=node_index,
            ntasks=ntasks,
            step_gpus=step_gpus,
            step_nodes=step_nodes,
            tasks_on_node=tasks_on_node,
            cpu_limit=cpu_limit,
            cpus_per_task=cpus_per_task,
            incarnation=incarnation,
            job_cpu_ids=job_cpu_ids,
            job_threads_per_core=job_threads_per_core,
            memory_limit_mib=memory_limit_mib,
            pty=pty,
            user=user,
            warning_at=warning_at,
            warning_signal=warning_signal,
            work_dir=work_dir,
        )

        step_task_launch.additional_properties = d
        return step_task_launch

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
