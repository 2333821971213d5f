from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.open_mode import OpenMode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.assignment_environment import AssignmentEnvironment
    from ..models.assignment_slurm_variables import AssignmentSlurmVariables
    from ..models.warning_signal import WarningSignal


T = TypeVar("T", bound="Assignment")


@_attrs_define
class Assignment:
    """A batch script the node must run.

    Attributes:
        environment (AssignmentEnvironment): The submission environment.
        gpus (list[int]): The GPU indices allocated on this node.
        job_id (int): The job id.
        name (str): The job name.
        node_index (int): This node's index in the allocation (`SLURM_NODEID`).
        nodes (list[str]): Every allocated node, in node-index order.
        ntasks (int): Tasks in the job.
        open_mode (OpenMode): `--open-mode`: whether output files are truncated or appended to when a job starts.
        partition (str): The partition.
        run (int): The run (the job's restart count).
        script (str): The batch script.
        stdout (str): The stdout pattern (`--output`, else `slurm-%j.out`).
        user (str): The submitting user.
        account (None | str | Unset): The account.
        array_job_id (int | None | Unset): The array's master job id, for an array task.
        array_task_count (int | None | Unset): Tasks in the array.
        array_task_id (int | None | Unset): The array task index.
        cpu_ids (list[int] | Unset): The logical CPU ids allocated to the job on this node (as the node reported its
            CPUs: `0 .. cpus`); the worker confines the job to them (a cpuset) where it can.
            Empty: not placed by CPU (a scheduler older than CPU placement).
        cpu_limit (int | None | Unset): CPUs the job may use on this node (`--cpus-per-task` × its tasks here); enforced
            as a CPU quota with cgroups where the node has them.
        cpus_per_task (int | None | Unset): `--cpus-per-task`, when given.
        gpus_per_task (int | None | Unset): `--gpus-per-task`, when given (`SLURM_GPUS_PER_TASK`, inherited by `srun`).
        grant (None | str | Unset): The api's signed statement that this run (job, run, node, GPUs) was placed on this
            node (a JWT with audience `berth-run-grant`, signed with the server's HS256
            secret; absent when the server has none). The worker keeps it with the run and
            attaches it to the run's reports: after a database failover that forgot the
            placement, it proves the run is this node's. It is no bearer token.
        incarnation (None | Unset | UUID): The job's incarnation ([`Incarnation`]): the worker keeps it with the run,
            puts it
            on the run's reports and output, and never takes a run of another incarnation for
            this one (it stops that one first). Absent from apis older than incarnations.
        job_token (None | str | Unset): A token scoped to this job (`BERTH_TOKEN` in the job): it may read, requeue and
            cancel the job, create its steps and submit jobs as its user, nothing else.
        memory_limit_mib (int | None | Unset): The job's memory limit on this node, MiB (`--mem`, `--mem-per-gpu` × GPUs
            here, or
            `--mem-per-cpu` × CPUs here); enforced with cgroups where the node has them.
        ntasks_per_node (int | None | Unset): `--ntasks-per-node`, when given.
        script_args (list[str] | Unset): The batch script's arguments (`sbatch job.sh a b`): its `$1`, `$2` …, given to
            it
            as argv (never through a shell).
        slurm_variables (AssignmentSlurmVariables | Unset): Slurm's output variables the api works out from the job's
            record (see
            [`crate::wire::API_SLURM_VARIABLES`]): the worker sets these, and removes those of
            that list that are absent (never inheriting its own).
        stderr (None | str | Unset): The stderr pattern, when split from stdout.
        submit_dir (None | str | Unset): The directory the job was submitted from.
        threads_per_core (int | None | Unset): The most hardware threads of each of its cores the job runs on (Slurm's
            `threads_per_core`: 1 for `--hint=nomultithread`); the worker confines the job to
            the lowest that many CPU ids of each core of `cpu_ids`, by the core of each id it
            reported. `None`: every CPU of `cpu_ids`.
        time_limit (int | None | Unset): The time limit, seconds; `None`: unlimited.
        warning_signal (None | Unset | WarningSignal):
        work_dir (None | str | Unset): The working directory (`--chdir`, else the submit directory); `None`: the worker
            makes a scratch directory.
    """

    environment: AssignmentEnvironment
    gpus: list[int]
    job_id: int
    name: str
    node_index: int
    nodes: list[str]
    ntasks: int
    open_mode: OpenMode
    partition: str
    run: int
    script: str
    stdout: str
    user: str
    account: None | str | Unset = UNSET
    array_job_id: int | None | Unset = UNSET
    array_task_count: int | None | Unset = UNSET
    array_task_id: int | None | Unset = UNSET
    cpu_ids: list[int] | Unset = UNSET
    cpu_limit: int | None | Unset = UNSET
    cpus_per_task: int | None | Unset = UNSET
    gpus_per_task: int | None | Unset = UNSET
    grant: None | str | Unset = UNSET
    incarnation: None | Unset | UUID = UNSET
    job_token: None | str | Unset = UNSET
    memory_limit_mib: int | None | Unset = UNSET
    ntasks_per_node: int | None | Unset = UNSET
    script_args: list[str] | Unset = UNSET
    slurm_variables: AssignmentSlurmVariables | Unset = UNSET
    stderr: None | str | Unset = UNSET
    submit_dir: None | str | Unset = UNSET
    threads_per_core: int | None | Unset = UNSET
    time_limit: int | None | Unset = UNSET
    warning_signal: None | Unset | WarningSignal = UNSET
    work_dir: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.warning_signal import WarningSignal  # noqa: PLC0415

        environment = self.environment.to_dict()

        gpus = self.gpus

        job_id = self.job_id

        name = self.name

        node_index = self.node_index

        nodes = self.nodes

        ntasks = self.ntasks

        open_mode = self.open_mode.value

        partition = self.partition

        run = self.run

        script = self.script

        stdout = self.stdout

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

        array_task_count: int | None | Unset
        if isinstance(self.array_task_count, Unset):
            array_task_count = UNSET
        else:
            array_task_count = self.array_task_count

        array_task_id: int | None | Unset
        if isinstance(self.array_task_id, Unset):
            array_task_id = UNSET
        else:
            array_task_id = self.array_task_id

        cpu_ids: list[int] | Unset = UNSET
        if not isinstance(self.cpu_ids, Unset):
            cpu_ids = self.cpu_ids

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

        gpus_per_task: int | None | Unset
        if isinstance(self.gpus_per_task, Unset):
            gpus_per_task = UNSET
        else:
            gpus_per_task = self.gpus_per_task

        grant: None | str | Unset
        if isinstance(self.grant, Unset):
            grant = UNSET
        else:
            grant = self.grant

        incarnation: None | str | Unset
        if isinstance(self.incarnation, Unset):
            incarnation = UNSET
        elif isinstance(self.incarnation, UUID):
            incarnation = str(self.incarnation)
        else:
            incarnation = self.incarnation

        job_token: None | str | Unset
        if isinstance(self.job_token, Unset):
            job_token = UNSET
        else:
            job_token = self.job_token

        memory_limit_mib: int | None | Unset
        if isinstance(self.memory_limit_mib, Unset):
            memory_limit_mib = UNSET
        else:
            memory_limit_mib = self.memory_limit_mib

        ntasks_per_node: int | None | Unset
        if isinstance(self.ntasks_per_node, Unset):
            ntasks_per_node = UNSET
        else:
            ntasks_per_node = self.ntasks_per_node

        script_args: list[str] | Unset = UNSET
        if not isinstance(self.script_args, Unset):
            script_args = self.script_args

        slurm_variables: dict[str, Any] | Unset = UNSET
        if not isinstance(self.slurm_variables, Unset):
            slurm_variables = self.slurm_variables.to_dict()

        stderr: None | str | Unset
        if isinstance(self.stderr, Unset):
            stderr = UNSET
        else:
            stderr = self.stderr

        submit_dir: None | str | Unset
        if isinstance(self.submit_dir, Unset):
            submit_dir = UNSET
        else:
            submit_dir = self.submit_dir

        threads_per_core: int | None | Unset
        if isinstance(self.threads_per_core, Unset):
            threads_per_core = UNSET
        else:
            threads_per_core = self.threads_per_core

        time_limit: int | None | Unset
        if isinstance(self.time_limit, Unset):
            time_limit = UNSET
        else:
            time_limit = self.time_limit

        warning_signal: dict[str, Any] | None | Unset
        if isinstance(self.warning_signal, Unset):
            warning_signal = UNSET
        elif isinstance(self.warning_signal, WarningSignal):
            warning_signal = self.warning_signal.to_dict()
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
                "environment": environment,
                "gpus": gpus,
                "job_id": job_id,
                "name": name,
                "node_index": node_index,
                "nodes": nodes,
                "ntasks": ntasks,
                "open_mode": open_mode,
                "partition": partition,
                "run": run,
                "script": script,
                "stdout": stdout,
                "user": user,
            }
        )
        if account is not UNSET:
            field_dict["account"] = account
        if array_job_id is not UNSET:
            field_dict["array_job_id"] = array_job_id
        if array_task_count is not UNSET:
            field_dict["array_task_count"] = array_task_count
        if array_task_id is not UNSET:
            field_dict["array_task_id"] = array_task_id
        if cpu_ids is not UNSET:
            field_dict["cpu_ids"] = cpu_ids
        if cpu_limit is not UNSET:
            field_dict["cpu_limit"] = cpu_limit
        if cpus_per_task is not UNSET:
            field_dict["cpus_per_task"] = cpus_per_task
        if gpus_per_task is not UNSET:
            field_dict["gpus_per_task"] = gpus_per_task
        if grant is not UNSET:
            field_dict["grant"] = grant
        if incarnation is not UNSET:
            field_dict["incarnation"] = incarnation
        if job_token is not UNSET:
            field_dict["job_token"] = job_token
        if memory_limit_mib is not UNSET:
            field_dict["memory_limit_mib"] = memory_limit_mib
        if ntasks_per_node is not UNSET:
            field_dict["ntasks_per_node"] = ntasks_per_node
        if script_args is not UNSET:
            field_dict["script_args"] = script_args
        if slurm_variables is not UNSET:
            field_dict["slurm_variables"] = slurm_variables
        if stderr is not UNSET:
            field_dict["stderr"] = stderr
        if submit_dir is not UNSET:
            field_dict["submit_dir"] = submit_dir
        if threads_per_core is not UNSET:
            field_dict["threads_per_core"] = threads_per_core
        if time_limit is not UNSET:
            field_dict["time_limit"] = time_limit
        if warning_signal is not UNSET:
            field_dict["warning_signal"] = warning_signal
        if work_dir is not UNSET:
            field_dict["work_dir"] = work_dir

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.assignment_environment import AssignmentEnvironment  # noqa: PLC0415
        from ..models.assignment_slurm_variables import AssignmentSlurmVariables  # noqa: PLC0415
        from ..models.warning_signal import WarningSignal  # noqa: PLC0415

        d = dict(src_dict)
        environment = AssignmentEnvironment.from_dict(d.pop("environment"))

        gpus = cast(list[int], d.pop("gpus"))

        job_id = d.pop("job_id")

        name = d.pop("name")

        node_index = d.pop("node_index")

        nodes = cast(list[str], d.pop("nodes"))

        ntasks = d.pop("ntasks")

        open_mode = OpenMode(d.pop("open_mode"))

        partition = d.pop("partition")

        run = d.pop("run")

        script = d.pop("script")

        stdout = d.pop("stdout")

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

        def _parse_array_task_count(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        array_task_count = _parse_array_task_count(d.pop("array_task_count", UNSET))

        def _parse_array_task_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        array_task_id = _parse_array_task_id(d.pop("array_task_id", UNSET))

        cpu_ids = cast(list[int], d.pop("cpu_ids", UNSET))

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

        def _parse_gpus_per_task(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        gpus_per_task = _parse_gpus_per_task(d.pop("gpus_per_task", UNSET))

        def _parse_grant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        grant = _parse_grant(d.pop("grant", UNSET))

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

        def _parse_job_token(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        job_token = _parse_job_token(d.pop("job_token", UNSET))

        def _parse_memory_limit_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        memory_limit_mib = _parse_memory_limit_mib(d.pop("memory_limit_mib", UNSET))

        def _parse_ntasks_per_node(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ntasks_per_node = _parse_ntasks_per_node(d.pop("ntasks_per_node", UNSET))

        script_args = cast(list[str], d.pop("script_args", UNSET))

        _slurm_variables = d.pop("slurm_variables", UNSET)
        slurm_variables: AssignmentSlurmVariables | Unset
        if isinstance(_slurm_variables, Unset):
            slurm_variables = UNSET
        else:
            slurm_variables = AssignmentSlurmVariables.from_dict(_slurm_variables)

        def _parse_stderr(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stderr = _parse_stderr(d.pop("stderr", UNSET))

        def _parse_submit_dir(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        submit_dir = _parse_submit_dir(d.pop("submit_dir", UNSET))

        def _parse_threads_per_core(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        threads_per_core = _parse_threads_per_core(d.pop("threads_per_core", UNSET))

        def _parse_time_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        time_limit = _parse_time_limit(d.pop("time_limit", UNSET))

        def _parse_warning_signal(data: object) -> None | Unset | WarningSignal:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                warning_signal_type_1 = WarningSignal.from_dict(data)

                return warning_signal_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WarningSignal, data)

        warning_signal = _parse_warning_signal(d.pop("warning_signal", UNSET))

        def _parse_work_dir(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        work_dir = _parse_work_dir(d.pop("work_dir", UNSET))

        assignment = cls(
            environment=environment,
            gpus=gpus,
            job_id=job_id,
            name=name,
            node_index=node_index,
            nodes=nodes,
            ntasks=ntasks,
            open_mode=open_mode,
            partition=partition,
            run=run,
            script=script,
            stdout=stdout,
            user=user,
            account=account,
            array_job_id=array_job_id,
            array_task_count=array_task_count,
            array_task_id=array_task_id,
            cpu_ids=cpu_ids,
            cpu_limit=cpu_limit,
            cpus_per_task=cpus_per_task,
            gpus_per_task=gpus_per_task,
            grant=grant,
            incarnation=incarnation,
            job_token=job_token,
            memory_limit_mib=memory_limit_mib,
            ntasks_per_node=ntasks_per_node,
            script_args=script_args,
            slurm_variables=slurm_variables,
            stderr=stderr,
            submit_dir=submit_dir,
            threads_per_core=threads_per_core,
            time_limit=time_limit,
            warning_signal=warning_signal,
            work_dir=work_dir,
        )

        assignment.additional_properties = d
        return assignment

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
