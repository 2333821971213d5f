from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step_create_environment import StepCreateEnvironment


T = TypeVar("T", bound="StepCreate")


@_attrs_define
class StepCreate:
    """`POST /v1/jobs/{id}/steps`: `srun`'s options and command. Absent counts take the job's
    (`-n` its task count, `--ntasks-per-node`, `--gpus-per-task`, `--cpus-per-task`), as
    `srun` inherits them inside an allocation.

        Attributes:
            command (list[str]): The program and its arguments (`["bash", "-c", "echo hi"]`), run once per task.
            cpus_per_task (int | None | Unset): `-c/--cpus-per-task` (`SLURM_CPUS_PER_TASK`).
            distribution (None | str | Unset): `-m/--distribution`: how task ids go round the step's nodes: `block` (the
                default: ids grow node by node), `cyclic` (one task per node in turn), `plane=N`
                (N tasks per node in turn); a `:socket[:core]` part (`block`, `cyclic`, `fcyclic`,
                `*`) and `,Pack`/`,NoPack` are accepted and leave placement within a node as it
                is (tasks are not bound to CPUs of their own). `arbitrary` is refused.
            environment (StepCreateEnvironment | Unset): The tasks' environment (what `srun --export` passes on).
            gpu_bind (None | str | Unset): `--gpu-bind`: `none` (every task sees all of its node's GPUs of the job),
                `single:N` (N tasks share each GPU, in order), `closest` (as the default: no
                topology is known yet). Default: each task its own GPUs with `--gpus-per-task`,
                else all of the node's.
            gpus_per_task (int | None | Unset): `--gpus-per-task`: each task gets this many of its node's allocated GPUs.
            kill_on_bad_exit (bool | Unset): `-K/--kill-on-bad-exit`: a task ending with a non-zero code stops the others.
            nodelist (None | str | Unset): `-w/--nodelist`: these nodes of the allocation (a host list, `node-[1-2]`).
            nodes (int | None | Unset): `-N/--nodes`: use the first N nodes of the allocation.
            ntasks (int | None | Unset): `-n/--ntasks`.
            ntasks_per_node (int | None | Unset): `--ntasks-per-node`.
            overlap (bool | Unset): `--overlap`: the step may share GPUs with other steps. Without it, a step with
                `--gpus-per-task` gets GPUs no other running step of that kind holds, and waits
                (409, srun retries) while too few are free.
            pty (bool | Unset): `--pty`: task 0 runs in a pseudo-terminal on its node (its stdin, stdout and
                stderr); what its user types arrives through `POST /v1/jobs/{id}/steps/{step}/input`
                and its output is task 0's stdout. Only the job's user (or an admin) may make one.
            work_dir (None | str | Unset): The tasks' working directory (`srun`'s), absolute; absent: the job's.
    """

    command: list[str]
    cpus_per_task: int | None | Unset = UNSET
    distribution: None | str | Unset = UNSET
    environment: StepCreateEnvironment | Unset = UNSET
    gpu_bind: None | str | Unset = UNSET
    gpus_per_task: int | None | Unset = UNSET
    kill_on_bad_exit: bool | Unset = UNSET
    nodelist: None | str | Unset = UNSET
    nodes: int | None | Unset = UNSET
    ntasks: int | None | Unset = UNSET
    ntasks_per_node: int | None | Unset = UNSET
    overlap: bool | Unset = UNSET
    pty: bool | Unset = UNSET
    work_dir: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        command = self.command

        cpus_per_task: int | None | Unset
        if isinstance(self.cpus_per_task, Unset):
            cpus_per_task = UNSET
        else:
            cpus_per_task = self.cpus_per_task

        distribution: None | str | Unset
        if isinstance(self.distribution, Unset):
            distribution = UNSET
        else:
            distribution = self.distribution

        environment: dict[str, Any] | Unset = UNSET
        if not isinstance(self.environment, Unset):
            environment = self.environment.to_dict()

        gpu_bind: None | str | Unset
        if isinstance(self.gpu_bind, Unset):
            gpu_bind = UNSET
        else:
            gpu_bind = self.gpu_bind

        gpus_per_task: int | None | Unset
        if isinstance(self.gpus_per_task, Unset):
            gpus_per_task = UNSET
        else:
            gpus_per_task = self.gpus_per_task

        kill_on_bad_exit = self.kill_on_bad_exit

        nodelist: None | str | Unset
        if isinstance(self.nodelist, Unset):
            nodelist = UNSET
        else:
            nodelist = self.nodelist

        nodes: int | None | Unset
        if isinstance(self.nodes, Unset):
            nodes = UNSET
        else:
            nodes = self.nodes

        ntasks: int | None | Unset
        if isinstance(self.ntasks, Unset):
            ntasks = UNSET
        else:
            ntasks = self.ntasks

        ntasks_per_node: int | None | Unset
        if isinstance(self.ntasks_per_node, Unset):
            ntasks_per_node = UNSET
        else:
            ntasks_per_node = self.ntasks_per_node

        overlap = self.overlap

        pty = self.pty

        work_dir: None | str | Unset
        if isinstance(self.work_dir, Unset):
            work_dir = UNSET
        else:
            work_dir = self.work_dir

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "command": command,
            }
        )
        if cpus_per_task is not UNSET:
            field_dict["cpus_per_task"] = cpus_per_task
        if distribution is not UNSET:
            field_dict["distribution"] = distribution
        if environment is not UNSET:
            field_dict["environment"] = environment
        if gpu_bind is not UNSET:
            field_dict["gpu_bind"] = gpu_bind
        if gpus_per_task is not UNSET:
            field_dict["gpus_per_task"] = gpus_per_task
        if kill_on_bad_exit is not UNSET:
            field_dict["kill_on_bad_exit"] = kill_on_bad_exit
        if nodelist is not UNSET:
            field_dict["nodelist"] = nodelist
        if nodes is not UNSET:
            field_dict["nodes"] = nodes
        if ntasks is not UNSET:
            field_dict["ntasks"] = ntasks
        if ntasks_per_node is not UNSET:
            field_dict["ntasks_per_node"] = ntasks_per_node
        if overlap is not UNSET:
            field_dict["overlap"] = overlap
        if pty is not UNSET:
            field_dict["pty"] = pty
        if work_dir is not UNSET:
            field_dict["work_dir"] = work_dir

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.step_create_environment import StepCreateEnvironment  # noqa: PLC0415

        d = dict(src_dict)
        command = cast(list[str], d.pop("command"))

        def _parse_cpus_per_task(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cpus_per_task = _parse_cpus_per_task(d.pop("cpus_per_task", UNSET))

        def _parse_distribution(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        distribution = _parse_distribution(d.pop("distribution", UNSET))

        _environment = d.pop("environment", UNSET)
        environment: StepCreateEnvironment | Unset
        if isinstance(_environment, Unset):
            environment = UNSET
        else:
            environment = StepCreateEnvironment.from_dict(_environment)

        def _parse_gpu_bind(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        gpu_bind = _parse_gpu_bind(d.pop("gpu_bind", UNSET))

        def _parse_gpus_per_task(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        gpus_per_task = _parse_gpus_per_task(d.pop("gpus_per_task", UNSET))

        kill_on_bad_exit = d.pop("kill_on_bad_exit", UNSET)

        def _parse_nodelist(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        nodelist = _parse_nodelist(d.pop("nodelist", UNSET))

        def _parse_nodes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        nodes = _parse_nodes(d.pop("nodes", UNSET))

        def _parse_ntasks(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ntasks = _parse_ntasks(d.pop("ntasks", UNSET))

        def _parse_ntasks_per_node(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ntasks_per_node = _parse_ntasks_per_node(d.pop("ntasks_per_node", UNSET))

        overlap = d.pop("overlap", UNSET)

        pty = d.pop("pty", UNSET)

        def _parse_work_dir(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        work_dir = _parse_work_dir(d.pop("work_dir", UNSET))

        step_create = cls(
            command=command,
            cpus_per_task=cpus_per_task,
            distribution=distribution,
            environment=environment,
            gpu_bind=gpu_bind,
            gpus_per_task=gpus_per_task,
            kill_on_bad_exit=kill_on_bad_exit,
            nodelist=nodelist,
            nodes=nodes,
            ntasks=ntasks,
            ntasks_per_node=ntasks_per_node,
            overlap=overlap,
            pty=pty,
            work_dir=work_dir,
        )

        return step_create
