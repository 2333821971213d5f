from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.acct_step import AcctStep
    from ..models.tres import Tres


T = TypeVar("T", bound="AcctJob")


@_attrs_define
class AcctJob:
    """One job run as sacct shows it.

    Attributes:
        account (str): Account.
        alloc_tres (Tres): Trackable resources (Slurm's TRES) of a run, over all its nodes.
        elapsed (int): Seconds from start to end (to now while it runs).
        eligible_time (datetime.datetime): Eligible to start (submit, or `--begin` when later).
        gpu_seconds (float): GPU-seconds held (GPUs × seconds, summed over nodes).
        job_id (int): The job's id (`JobIDRaw`).
        job_id_display (str): The job id as sacct prints it (`JobID`): `12`, `5_3` (array task), `5_[4-9]`
            (array tasks not started).
        name (str): Job name.
        nodelist (str): The nodes it held, as a Slurm hostlist (`gpu[1-2]`); `None assigned` when none.
        partition (str): Partition.
        qos (str): QOS.
        req_tres (Tres): Trackable resources (Slurm's TRES) of a run, over all its nodes.
        restarts (int): Restarts before this run (Berth's; Slurm's `SLURM_RESTART_COUNT`).
        run (int): The run (the restart count when it ran; 0 for the first).
        state (str): The run's state: Slurm's long name (`COMPLETED`, `RUNNING` …), or for a run a requeue
            ended `REQUEUED`, `NODE_FAIL` or `PREEMPTED`.
        submit_time (datetime.datetime): Submitted.
        user (str): User.
        cost (float | None | Unset): Cloud cost on pool nodes, in the pools' currency: price per hour × hours held ×
            the run's share of the node (GPUs held / node GPUs, else CPUs, else all).
        cpu_time_s (float | None | Unset): CPU time used, seconds (user + system, from the job's cgroup on its batch
            node;
            `None` where the cgroup does not report it).
        end_time (datetime.datetime | None | Unset): Ended.
        energy_j (float | None | Unset): GPU energy, joules.
        exit_code (int | None | Unset): Exit code of the batch script.
        exit_signal (int | None | Unset): Signal that ended it.
        gpu_mem_peak_mib (int | None | Unset): Peak GPU memory used, MiB.
        gpu_util_avg (float | None | Unset): Average GPU utilisation over its samples, %.
        max_rss_mib (int | None | Unset): Peak memory of the job's cgroup on its batch node, MiB (`None` where the
            cgroup
            does not report it).
        reason (None | str | Unset): Pending or end reason.
        requeue_reason (None | str | Unset): What ended a requeued run (`node_fail on n1`, `preempted by job 7`,
            `requeued by alice`).
        start_time (datetime.datetime | None | Unset): Started.
        steps (list[AcctStep] | Unset): Its steps (only when asked for): `batch`, then `0`, `1` ….
        time_limit (int | None | Unset): Time limit, seconds; absent: unlimited.
    """

    account: str
    alloc_tres: Tres
    elapsed: int
    eligible_time: datetime.datetime
    gpu_seconds: float
    job_id: int
    job_id_display: str
    name: str
    nodelist: str
    partition: str
    qos: str
    req_tres: Tres
    restarts: int
    run: int
    state: str
    submit_time: datetime.datetime
    user: str
    cost: float | None | Unset = UNSET
    cpu_time_s: float | None | Unset = UNSET
    end_time: datetime.datetime | None | Unset = UNSET
    energy_j: float | None | Unset = UNSET
    exit_code: int | None | Unset = UNSET
    exit_signal: int | None | Unset = UNSET
    gpu_mem_peak_mib: int | None | Unset = UNSET
    gpu_util_avg: float | None | Unset = UNSET
    max_rss_mib: int | None | Unset = UNSET
    reason: None | str | Unset = UNSET
    requeue_reason: None | str | Unset = UNSET
    start_time: datetime.datetime | None | Unset = UNSET
    steps: list[AcctStep] | Unset = UNSET
    time_limit: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        account = self.account

        alloc_tres = self.alloc_tres.to_dict()

        elapsed = self.elapsed

        eligible_time = self.eligible_time.isoformat()

        gpu_seconds = self.gpu_seconds

        job_id = self.job_id

        job_id_display = self.job_id_display

        name = self.name

        nodelist = self.nodelist

        partition = self.partition

        qos = self.qos

        req_tres = self.req_tres.to_dict()

        restarts = self.restarts

        run = self.run

        state = self.state

        submit_time = self.submit_time.isoformat()

        user = self.user

        cost: float | None | Unset
        if isinstance(self.cost, Unset):
            cost = UNSET
        else:
            cost = self.cost

        cpu_time_s: float | None | Unset
        if isinstance(self.cpu_time_s, Unset):
            cpu_time_s = UNSET
        else:
            cpu_time_s = self.cpu_time_s

        end_time: None | str | Unset
        if isinstance(self.end_time, Unset):
            end_time = UNSET
        elif isinstance(self.end_time, datetime.datetime):
            end_time = self.end_time.isoformat()
        else:
            end_time = self.end_time

        energy_j: float | None | Unset
        if isinstance(self.energy_j, Unset):
            energy_j = UNSET
        else:
            energy_j = self.energy_j

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

        gpu_mem_peak_mib: int | None | Unset
        if isinstance(self.gpu_mem_peak_mib, Unset):
            gpu_mem_peak_mib = UNSET
        else:
            gpu_mem_peak_mib = self.gpu_mem_peak_mib

        gpu_util_avg: float | None | Unset
        if isinstance(self.gpu_util_avg, Unset):
            gpu_util_avg = UNSET
        else:
            gpu_util_avg = self.gpu_util_avg

        max_rss_mib: int | None | Unset
        if isinstance(self.max_rss_mib, Unset):
            max_rss_mib = UNSET
        else:
            max_rss_mib = self.max_rss_mib

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        requeue_reason: None | str | Unset
        if isinstance(self.requeue_reason, Unset):
            requeue_reason = UNSET
        else:
            requeue_reason = self.requeue_reason

        start_time: None | str | Unset
        if isinstance(self.start_time, Unset):
            start_time = UNSET
        elif isinstance(self.start_time, datetime.datetime):
            start_time = self.start_time.isoformat()
        else:
            start_time = self.start_time

        steps: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.steps, Unset):
            steps = []
            for steps_item_data in self.steps:
                steps_item = steps_item_data.to_dict()
                steps.append(steps_item)

        time_limit: int | None | Unset
        if isinstance(self.time_limit, Unset):
            time_limit = UNSET
        else:
            time_limit = self.time_limit

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "account": account,
                "alloc_tres": alloc_tres,
                "elapsed": elapsed,
                "eligible_time": eligible_time,
                "gpu_seconds": gpu_seconds,
                "job_id": job_id,
                "job_id_display": job_id_display,
                "name": name,
                "nodelist": nodelist,
                "partition": partition,
                "qos": qos,
                "req_tres": req_tres,
                "restarts": restarts,
                "run": run,
                "state": state,
                "submit_time": submit_time,
                "user": user,
            }
        )
        if cost is not UNSET:
            field_dict["cost"] = cost
        if cpu_time_s is not UNSET:
            field_dict["cpu_time_s"] = cpu_time_s
        if end_time is not UNSET:
            field_dict["end_time"] = end_time
        if energy_j is not UNSET:
            field_dict["energy_j"] = energy_j
        if exit_code is not UNSET:
            field_dict["exit_code"] = exit_code
        if exit_signal is not UNSET:
            field_dict["exit_signal"] = exit_signal
        if gpu_mem_peak_mib is not UNSET:
            field_dict["gpu_mem_peak_mib"] = gpu_mem_peak_mib
        if gpu_util_avg is not UNSET:
            field_dict["gpu_util_avg"] = gpu_util_avg
        if max_rss_mib is not UNSET:
            field_dict["max_rss_mib"] = max_rss_mib
        if reason is not UNSET:
            field_dict["reason"] = reason
        if requeue_reason is not UNSET:
            field_dict["requeue_reason"] = requeue_reason
        if start_time is not UNSET:
            field_dict["start_time"] = start_time
        if steps is not UNSET:
            field_dict["steps"] = steps
        if time_limit is not UNSET:
            field_dict["time_limit"] = time_limit

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.acct_step import AcctStep  # noqa: PLC0415
        from ..models.tres import Tres  # noqa: PLC0415

        d = dict(src_dict)
        account = d.pop("account")

        alloc_tres = Tres.from_dict(d.pop("alloc_tres"))

        elapsed = d.pop("elapsed")

        eligible_time = datetime.datetime.fromisoformat(d.pop("eligible_time"))

        gpu_seconds = d.pop("gpu_seconds")

        job_id = d.pop("job_id")

        job_id_display = d.pop("job_id_display")

        name = d.pop("name")

        nodelist = d.pop("nodelist")

        partition = d.pop("partition")

        qos = d.pop("qos")

        req_tres = Tres.from_dict(d.pop("req_tres"))

        restarts = d.pop("restarts")

        run = d.pop("run")

        state = d.pop("state")

        submit_time = datetime.datetime.fromisoformat(d.pop("submit_time"))

        user = d.pop("user")

        def _parse_cost(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cost = _parse_cost(d.pop("cost", UNSET))

        def _parse_cpu_time_s(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cpu_time_s = _parse_cpu_time_s(d.pop("cpu_time_s", UNSET))

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

        def _parse_energy_j(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        energy_j = _parse_energy_j(d.pop("energy_j", UNSET))

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

        def _parse_gpu_mem_peak_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        gpu_mem_peak_mib = _parse_gpu_mem_peak_mib(d.pop("gpu_mem_peak_mib", UNSET))

        def _parse_gpu_util_avg(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        gpu_util_avg = _parse_gpu_util_avg(d.pop("gpu_util_avg", UNSET))

        def _parse_max_rss_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_rss_mib = _parse_max_rss_mib(d.pop("max_rss_mib", UNSET))

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        def _parse_requeue_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        requeue_reason = _parse_requeue_reason(d.pop("requeue_reason", UNSET))

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

        _steps = d.pop("steps", UNSET)
        steps: list[AcctStep] | Unset = UNSET
        if _steps is not UNSET:
            steps = []
            for steps_item_data in _steps:
                steps_item = AcctStep.from_dict(steps_item_data)

                steps.append(steps_item)

        def _parse_time_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        time_limit = _parse_time_limit(d.pop("time_limit", UNSET))

        acct_job = cls(
            account=account,
            alloc_tres=alloc_tres,
            elapsed=elapsed,
            eligible_time=eligible_time,
            gpu_seconds=gpu_seconds,
            job_id=job_id,
            job_id_display=job_id_display,
            name=name,
            nodelist=nodelist,
            partition=partition,
            qos=qos,
            req_tres=req_tres,
            restarts=restarts,
            run=run,
            state=state,
            submit_time=submit_time,
            user=user,
            cost=cost,
            cpu_time_s=cpu_time_s,
            end_time=end_time,
            energy_j=energy_j,
            exit_code=exit_code,
            exit_signal=exit_signal,
            gpu_mem_peak_mib=gpu_mem_peak_mib,
            gpu_util_avg=gpu_util_avg,
            max_rss_mib=max_rss_mib,
            reason=reason,
            requeue_reason=requeue_reason,
            start_time=start_time,
            steps=steps,
            time_limit=time_limit,
        )

        acct_job.additional_properties = d
        return acct_job

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
