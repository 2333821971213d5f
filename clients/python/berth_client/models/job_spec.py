from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.open_mode import OpenMode
from ..types import UNSET, Unset

T = TypeVar("T", bound="JobSpec")


@_attrs_define
class JobSpec:
    """A job's specification, field by field as `sbatch` names its options. Absent fields take
    Slurm's defaults (one node, one task, the default partition's time limit).

        Attributes:
            account (None | str | Unset): `-A/--account`.
            array (None | str | Unset): `-a/--array`, verbatim (`0-15:4%4`, `1,3,5`).
            begin (None | str | Unset): `-b/--begin`, verbatim (`now+1hour`, `2026-12-01T10:00`).
            chdir (None | str | Unset): `-D/--chdir`: the working directory of the batch script.
            comment (None | str | Unset): `--comment`.
            constraint (None | str | Unset): `-C/--constraint`: node features (`a100&nvlink`, `h100|a100`, `[ib1|ib2]`,
                `a100*2`; see [`crate::constraint`]).
            cpus_per_gpu (int | None | Unset): `--cpus-per-gpu`: CPUs for each GPU the job gets on a node.
            cpus_per_task (int | None | Unset): `-c/--cpus-per-task`.
            dependency (None | str | Unset): `-d/--dependency`, verbatim (`afterok:12:13,singleton`).
            error (None | str | Unset): `-e/--error`, a filename pattern.
            exclude (None | str | Unset): `-x/--exclude`: nodes the job must not be given, a host list.
            exclusive (bool | Unset): `--exclusive`: no other job shares the nodes; with no GPU option, the job gets
                every GPU of each node. Default: False.
            export (None | str | Unset): `--export` (`ALL`, `NONE`, or `[ALL,]NAME[=value],…`).
            gpu_type (None | str | Unset): The GPU type asked for by `--gres=gpu:TYPE:N` or `--gpus*=TYPE:N`.
            gpus (int | None | Unset): `-G/--gpus`: GPUs for the whole job.
            gpus_per_node (int | None | Unset): `--gpus-per-node` (or the count of `--gres=gpu:N`, which is per node).
            gpus_per_task (int | None | Unset): `--gpus-per-task`.
            gres (None | str | Unset): `--gres`, verbatim (`gpu:h100:4`); its GPU part also sets `gpus_per_node`/`gpu_type`.
            hint (None | str | Unset): `--hint`.
            hold (bool | Unset): `-H/--hold`: submitted held. Default: False.
            job_name (None | str | Unset): `-J/--job-name`.
            mail_type (None | str | Unset): `--mail-type`.
            mail_user (None | str | Unset): `--mail-user`.
            mem_mib (int | None | Unset): `--mem`: memory per node in MiB (`0` means all of it, as in Slurm).
            mem_per_cpu_mib (int | None | Unset): `--mem-per-cpu`, MiB.
            mem_per_gpu_mib (int | None | Unset): `--mem-per-gpu`, MiB.
            nice (int | None | Unset): `--nice`: lowers priority by this amount (negative raises it, admins only).
            nodelist (None | str | Unset): `-w/--nodelist`: nodes the job must be given (all of them), a host list
                (`node-[1-3],gpu7`).
            nodes (int | None | Unset): `-N/--nodes`: the minimum node count.
            nodes_max (int | None | Unset): `-N/--nodes=min-max`: the maximum node count, when a range was given.
            ntasks (int | None | Unset): `-n/--ntasks`.
            ntasks_per_node (int | None | Unset): `--ntasks-per-node`.
            open_mode (None | OpenMode | Unset):
            output (None | str | Unset): `-o/--output`, a filename pattern (see [`crate::pattern`]).
            overcommit (bool | Unset): `-O/--overcommit`. Default: False.
            parsable (bool | Unset): `--parsable`: the client prints only the job id. Default: False.
            partition (None | str | Unset): `-p/--partition`: one partition, or several separated by commas (`a,b`: the job
                starts in the first listed one where it can start; see [`JobSpec::partitions`]).
            qos (None | str | Unset): `-q/--qos`.
            requeue (bool | None | Unset): `--requeue` (true) or `--no-requeue` (false).
            reservation (None | str | Unset): `--reservation`.
            signal (None | str | Unset): `--signal=[{R|B}:]SIG[@seconds]`, verbatim.
            time_limit (int | None | Unset): `-t/--time`, seconds. Absent: the partition's default. `Some(0)`: no limit
                (`--time=0`, `UNLIMITED`, `INFINITE`), which means the partition's maximum.
            time_min (int | None | Unset): `--time-min`, seconds.
            wait_all_nodes (bool | None | Unset): `--wait-all-nodes=0|1`.
            wckey (None | str | Unset): `--wckey`: stored and shown; Berth keeps no accounting by workload key (as Slurm
                with `TrackWCKey=no`, its default, ignores it).
            wrap (None | str | Unset): `--wrap`: a command to run as the whole batch script.
    """

    account: None | str | Unset = UNSET
    array: None | str | Unset = UNSET
    begin: None | str | Unset = UNSET
    chdir: None | str | Unset = UNSET
    comment: None | str | Unset = UNSET
    constraint: None | str | Unset = UNSET
    cpus_per_gpu: int | None | Unset = UNSET
    cpus_per_task: int | None | Unset = UNSET
    dependency: None | str | Unset = UNSET
    error: None | str | Unset = UNSET
    exclude: None | str | Unset = UNSET
    exclusive: bool | Unset = False
    export: None | str | Unset = UNSET
    gpu_type: None | str | Unset = UNSET
    gpus: int | None | Unset = UNSET
    gpus_per_node: int | None | Unset = UNSET
    gpus_per_task: int | None | Unset = UNSET
    gres: None | str | Unset = UNSET
    hint: None | str | Unset = UNSET
    hold: bool | Unset = False
    job_name: None | str | Unset = UNSET
    mail_type: None | str | Unset = UNSET
    mail_user: None | str | Unset = UNSET
    mem_mib: int | None | Unset = UNSET
    mem_per_cpu_mib: int | None | Unset = UNSET
    mem_per_gpu_mib: int | None | Unset = UNSET
    nice: int | None | Unset = UNSET
    nodelist: None | str | Unset = UNSET
    nodes: int | None | Unset = UNSET
    nodes_max: int | None | Unset = UNSET
    ntasks: int | None | Unset = UNSET
    ntasks_per_node: int | None | Unset = UNSET
    open_mode: None | OpenMode | Unset = UNSET
    output: None | str | Unset = UNSET
    overcommit: bool | Unset = False
    parsable: bool | Unset = False
    partition: None | str | Unset = UNSET
    qos: None | str | Unset = UNSET
    requeue: bool | None | Unset = UNSET
    reservation: None | str | Unset = UNSET
    signal: None | str | Unset = UNSET
    time_limit: int | None | Unset = UNSET
    time_min: int | None | Unset = UNSET
    wait_all_nodes: bool | None | Unset = UNSET
    wckey: None | str | Unset = UNSET
    wrap: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        account: None | str | Unset
        if isinstance(self.account, Unset):
            account = UNSET
        else:
            account = self.account

        array: None | str | Unset
        if isinstance(self.array, Unset):
            array = UNSET
        else:
            array = self.array

        begin: None | str | Unset
        if isinstance(self.begin, Unset):
            begin = UNSET
        else:
            begin = self.begin

        chdir: None | str | Unset
        if isinstance(self.chdir, Unset):
            chdir = UNSET
        else:
            chdir = self.chdir

        comment: None | str | Unset
        if isinstance(self.comment, Unset):
            comment = UNSET
        else:
            comment = self.comment

        constraint: None | str | Unset
        if isinstance(self.constraint, Unset):
            constraint = UNSET
        else:
            constraint = self.constraint

        cpus_per_gpu: int | None | Unset
        if isinstance(self.cpus_per_gpu, Unset):
            cpus_per_gpu = UNSET
        else:
            cpus_per_gpu = self.cpus_per_gpu

        cpus_per_task: int | None | Unset
        if isinstance(self.cpus_per_task, Unset):
            cpus_per_task = UNSET
        else:
            cpus_per_task = self.cpus_per_task

        dependency: None | str | Unset
        if isinstance(self.dependency, Unset):
            dependency = UNSET
        else:
            dependency = self.dependency

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        exclude: None | str | Unset
        if isinstance(self.exclude, Unset):
            exclude = UNSET
        else:
            exclude = self.exclude

        exclusive = self.exclusive

        export: None | str | Unset
        if isinstance(self.export, Unset):
            export = UNSET
        else:
            export = self.export

        gpu_type: None | str | Unset
        if isinstance(self.gpu_type, Unset):
            gpu_type = UNSET
        else:
            gpu_type = self.gpu_type

        gpus: int | None | Unset
        if isinstance(self.gpus, Unset):
            gpus = UNSET
        else:
            gpus = self.gpus

        gpus_per_node: int | None | Unset
        if isinstance(self.gpus_per_node, Unset):
            gpus_per_node = UNSET
        else:
            gpus_per_node = self.gpus_per_node

        gpus_per_task: int | None | Unset
        if isinstance(self.gpus_per_task, Unset):
            gpus_per_task = UNSET
        else:
            gpus_per_task = self.gpus_per_task

        gres: None | str | Unset
        if isinstance(self.gres, Unset):
            gres = UNSET
        else:
            gres = self.gres

        hint: None | str | Unset
        if isinstance(self.hint, Unset):
            hint = UNSET
        else:
            hint = self.hint

        hold = self.hold

        job_name: None | str | Unset
        if isinstance(self.job_name, Unset):
            job_name = UNSET
        else:
            job_name = self.job_name

        mail_type: None | str | Unset
        if isinstance(self.mail_type, Unset):
            mail_type = UNSET
        else:
            mail_type = self.mail_type

        mail_user: None | str | Unset
        if isinstance(self.mail_user, Unset):
            mail_user = UNSET
        else:
            mail_user = self.mail_user

        mem_mib: int | None | Unset
        if isinstance(self.mem_mib, Unset):
            mem_mib = UNSET
        else:
            mem_mib = self.mem_mib

        mem_per_cpu_mib: int | None | Unset
        if isinstance(self.mem_per_cpu_mib, Unset):
            mem_per_cpu_mib = UNSET
        else:
            mem_per_cpu_mib = self.mem_per_cpu_mib

        mem_per_gpu_mib: int | None | Unset
        if isinstance(self.mem_per_gpu_mib, Unset):
            mem_per_gpu_mib = UNSET
        else:
            mem_per_gpu_mib = self.mem_per_gpu_mib

        nice: int | None | Unset
        if isinstance(self.nice, Unset):
            nice = UNSET
        else:
            nice = self.nice

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

        nodes_max: int | None | Unset
        if isinstance(self.nodes_max, Unset):
            nodes_max = UNSET
        else:
            nodes_max = self.nodes_max

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

        open_mode: None | str | Unset
        if isinstance(self.open_mode, Unset):
            open_mode = UNSET
        elif isinstance(self.open_mode, OpenMode):
            open_mode = self.open_mode.value
        else:
            open_mode = self.open_mode

        output: None | str | Unset
        if isinstance(self.output, Unset):
            output = UNSET
        else:
            output = self.output

        overcommit = self.overcommit

        parsable = self.parsable

        partition: None | str | Unset
        if isinstance(self.partition, Unset):
            partition = UNSET
        else:
            partition = self.partition

        qos: None | str | Unset
        if isinstance(self.qos, Unset):
            qos = UNSET
        else:
            qos = self.qos

        requeue: bool | None | Unset
        if isinstance(self.requeue, Unset):
            requeue = UNSET
        else:
            requeue = self.requeue

        reservation: None | str | Unset
        if isinstance(self.reservation, Unset):
            reservation = UNSET
        else:
            reservation = self.reservation

        signal: None | str | Unset
        if isinstance(self.signal, Unset):
            signal = UNSET
        else:
            signal = self.signal

        time_limit: int | None | Unset
        if isinstance(self.time_limit, Unset):
            time_limit = UNSET
        else:
            time_limit = self.time_limit

        time_min: int | None | Unset
        if isinstance(self.time_min, Unset):
            time_min = UNSET
        else:
            time_min = self.time_min

        wait_all_nodes: bool | None | Unset
        if isinstance(self.wait_all_nodes, Unset):
            wait_all_nodes = UNSET
        else:
            wait_all_nodes = self.wait_all_nodes

        wckey: None | str | Unset
        if isinstance(self.wckey, Unset):
            wckey = UNSET
        else:
            wckey = self.wckey

        wrap: None | str | Unset
        if isinstance(self.wrap, Unset):
            wrap = UNSET
        else:
            wrap = self.wrap

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if account is not UNSET:
            field_dict["account"] = account
        if array is not UNSET:
            field_dict["array"] = array
        if begin is not UNSET:
            field_dict["begin"] = begin
        if chdir is not UNSET:
            field_dict["chdir"] = chdir
        if comment is not UNSET:
            field_dict["comment"] = comment
        if constraint is not UNSET:
            field_dict["constraint"] = constraint
        if cpus_per_gpu is not UNSET:
            field_dict["cpus_per_gpu"] = cpus_per_gpu
        if cpus_per_task is not UNSET:
            field_dict["cpus_per_task"] = cpus_per_task
        if dependency is not UNSET:
            field_dict["dependency"] = dependency
        if error is not UNSET:
            field_dict["error"] = error
        if exclude is not UNSET:
            field_dict["exclude"] = exclude
        if exclusive is not UNSET:
            field_dict["exclusive"] = exclusive
        if export is not UNSET:
            field_dict["export"] = export
        if gpu_type is not UNSET:
            field_dict["gpu_type"] = gpu_type
        if gpus is not UNSET:
            field_dict["gpus"] = gpus
        if gpus_per_node is not UNSET:
            field_dict["gpus_per_node"] = gpus_per_node
        if gpus_per_task is not UNSET:
            field_dict["gpus_per_task"] = gpus_per_task
        if gres is not UNSET:
            field_dict["gres"] = gres
        if hint is not UNSET:
            field_dict["hint"] = hint
        if hold is not UNSET:
            field_dict["hold"] = hold
        if job_name is not UNSET:
            field_dict["job_name"] = job_name
        if mail_type is not UNSET:
            field_dict["mail_type"] = mail_type
        if mail_user is not UNSET:
            field_dict["mail_user"] = mail_user
        if mem_mib is not UNSET:
            field_dict["mem_mib"] = mem_mib
        if mem_per_cpu_mib is not UNSET:
            field_dict["mem_per_cpu_mib"] = mem_per_cpu_mib
        if mem_per_gpu_mib is not UNSET:
            field_dict["mem_per_gpu_mib"] = mem_per_gpu_mib
        if nice is not UNSET:
            field_dict["nice"] = nice
        if nodelist is not UNSET:
            field_dict["nodelist"] = nodelist
        if nodes is not UNSET:
            field_dict["nodes"] = nodes
        if nodes_max is not UNSET:
            field_dict["nodes_max"] = nodes_max
        if ntasks is not UNSET:
            field_dict["ntasks"] = ntasks
        if ntasks_per_node is not UNSET:
            field_dict["ntasks_per_node"] = ntasks_per_node
        if open_mode is not UNSET:
            field_dict["open_mode"] = open_mode
        if output is not UNSET:
            field_dict["output"] = output
        if overcommit is not UNSET:
            field_dict["overcommit"] = overcommit
        if parsable is not UNSET:
            field_dict["parsable"] = parsable
        if partition is not UNSET:
            field_dict["partition"] = partition
        if qos is not UNSET:
            field_dict["qos"] = qos
        if requeue is not UNSET:
            field_dict["requeue"] = requeue
        if reservation is not UNSET:
            field_dict["reservation"] = reservation
        if signal is not UNSET:
            field_dict["signal"] = signal
        if time_limit is not UNSET:
            field_dict["time_limit"] = time_limit
        if time_min is not UNSET:
            field_dict["time_min"] = time_min
        if wait_all_nodes is not UNSET:
            field_dict["wait_all_nodes"] = wait_all_nodes
        if wckey is not UNSET:
            field_dict["wckey"] = wckey
        if wrap is not UNSET:
            field_dict["wrap"] = wrap

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_account(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        account = _parse_account(d.pop("account", UNSET))

        def _parse_array(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        array = _parse_array(d.pop("array", UNSET))

        def _parse_begin(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        begin = _parse_begin(d.pop("begin", UNSET))

        def _parse_chdir(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        chdir = _parse_chdir(d.pop("chdir", UNSET))

        def _parse_comment(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        comment = _parse_comment(d.pop("comment", UNSET))

        def _parse_constraint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        constraint = _parse_constraint(d.pop("constraint", UNSET))

        def _parse_cpus_per_gpu(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cpus_per_gpu = _parse_cpus_per_gpu(d.pop("cpus_per_gpu", UNSET))

        def _parse_cpus_per_task(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cpus_per_task = _parse_cpus_per_task(d.pop("cpus_per_task", UNSET))

        def _parse_dependency(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        dependency = _parse_dependency(d.pop("dependency", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_exclude(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        exclude = _parse_exclude(d.pop("exclude", UNSET))

        exclusive = d.pop("exclusive", UNSET)

        def _parse_export(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        export = _parse_export(d.pop("export", UNSET))

        def _parse_gpu_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        gpu_type = _parse_gpu_type(d.pop("gpu_type", UNSET))

        def _parse_gpus(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        gpus = _parse_gpus(d.pop("gpus", UNSET))

        def _parse_gpus_per_node(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        gpus_per_node = _parse_gpus_per_node(d.pop("gpus_per_node", UNSET))

        def _parse_gpus_per_task(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        gpus_per_task = _parse_gpus_per_task(d.pop("gpus_per_task", UNSET))

        def _parse_gres(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        gres = _parse_gres(d.pop("gres", UNSET))

        def _parse_hint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        hint = _parse_hint(d.pop("hint", UNSET))

        hold = d.pop("hold", UNSET)

        def _parse_job_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        job_name = _parse_job_name(d.pop("job_name", UNSET))

        def _parse_mail_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        mail_type = _parse_mail_type(d.pop("mail_type", UNSET))

        def _parse_mail_user(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        mail_user = _parse_mail_user(d.pop("mail_user", UNSET))

        def _parse_mem_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        mem_mib = _parse_mem_mib(d.pop("mem_mib", UNSET))

        def _parse_mem_per_cpu_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        mem_per_cpu_mib = _parse_mem_per_cpu_mib(d.pop("mem_per_cpu_mib", UNSET))

        def _parse_mem_per_gpu_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        mem_per_gpu_mib = _parse_mem_per_gpu_mib(d.pop("mem_per_gpu_mib", UNSET))

        def _parse_nice(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        nice = _parse_nice(d.pop("nice", UNSET))

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

        def _parse_nodes_max(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        nodes_max = _parse_nodes_max(d.pop("nodes_max", UNSET))

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

        def _parse_open_mode(data: object) -> None | OpenMode | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                open_mode_type_1 = OpenMode(data)

                return open_mode_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OpenMode | Unset, data)

        open_mode = _parse_open_mode(d.pop("open_mode", UNSET))

        def _parse_output(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        output = _parse_output(d.pop("output", UNSET))

        overcommit = d.pop("overcommit", UNSET)

        parsable = d.pop("parsable", UNSET)

        def _parse_partition(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        partition = _parse_partition(d.pop("partition", UNSET))

        def _parse_qos(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        qos = _parse_qos(d.pop("qos", UNSET))

        def _parse_requeue(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        requeue = _parse_requeue(d.pop("requeue", UNSET))

        def _parse_reservation(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reservation = _parse_reservation(d.pop("reservation", UNSET))

        def _parse_signal(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        signal = _parse_signal(d.pop("signal", UNSET))

        def _parse_time_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        time_limit = _parse_time_limit(d.pop("time_limit", UNSET))

        def _parse_time_min(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        time_min = _parse_time_min(d.pop("time_min", UNSET))

        def _parse_wait_all_nodes(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        wait_all_nodes = _parse_wait_all_nodes(d.pop("wait_all_nodes", UNSET))

        def _parse_wckey(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        wckey = _parse_wckey(d.pop("wckey", UNSET))

        def _parse_wrap(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        wrap = _parse_wrap(d.pop("wrap", UNSET))

        job_spec = cls(
            account=account,
            array=array,
            begin=begin,
            chdir=chdir,
            comment=comment,
            constraint=constraint,
            cpus_per_gpu=cpus_per_gpu,
            cpus_per_task=cpus_per_task,
            dependency=dependency,
            error=error,
            exclude=exclude,
            exclusive=exclusive,
            export=export,
            gpu_type=gpu_type,
            gpus=gpus,
            gpus_per_node=gpus_per_node,
            gpus_per_task=gpus_per_task,
            gres=gres,
            hint=hint,
            hold=hold,
            job_name=job_name,
            mail_type=mail_type,
            mail_user=mail_user,
            mem_mib=mem_mib,
            mem_per_cpu_mib=mem_per_cpu_mib,
            mem_per_gpu_mib=mem_per_gpu_mib,
            nice=nice,
            nodelist=nodelist,
            nodes=nodes,
            nodes_max=nodes_max,
            ntasks=ntasks,
            ntasks_per_node=ntasks_per_node,
            open_mode=open_mode,
            output=output,
            overcommit=overcommit,
            parsable=parsable,
            partition=partition,
            qos=qos,
            requeue=requeue,
            reservation=reservation,
            signal=signal,
            time_limit=time_limit,
            time_min=time_min,
            wait_all_nodes=wait_all_nodes,
            wckey=wckey,
            wrap=wrap,
        )

        return job_spec
