from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.launch_fault import LaunchFault
from ..models.report_kind import ReportKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="JobReport")


@_attrs_define
class JobReport:
    """A job report from a worker. Reports are applied at most once per (job, run, kind).

    Attributes:
        at (datetime.datetime): When.
        job_id (int): The job.
        kind (ReportKind): What happened to a job's process on a node.
        run (int): The run (the job's restart count when it was assigned).
        cancelled (bool | Unset): The worker ended it because it was cancelled.
        cpu_time_seconds (float | None | Unset): CPU time (user and system) of the run's processes on the batch node,
            seconds, from
            the job's cgroup (`Exited`; absent where the node has no cgroup for the job).
        exit_code (int | None | Unset): The exit code (`Exited`).
        grant (None | str | Unset): The run's grant ([`Assignment::grant`]): lets the api accept the report even when
            its database forgot that the run was placed on this node.
        incarnation (None | Unset | UUID): The job's incarnation ([`Assignment::incarnation`]): the api refuses a report
            whose
            incarnation differs from its job's (another job that had the same id). Absent from
            workers older than incarnations.
        launch_fault (LaunchFault | None | Unset):
        max_rss_mib (int | None | Unset): Peak memory of the run's cgroup on the batch node, MiB (`Exited`; sacct's
            `MaxRSS`; absent where not reported).
        message (None | str | Unset): A message (`LaunchFailed`).
        node_failed (bool | Unset): The node, not the job, ended the run (`Exited`): it lost contact with the api for
            its whole lease and stopped the run so that the job could never run twice at once,
            or its worker stopped with its jobs (`berth dev`). The api treats the run as one
            on a failed node: requeued (`--requeue`, the default) or ended NODE_FAIL, unless it
            has already moved on.
        out_of_memory (bool | Unset): The kernel's OOM killer killed a process of the job (its memory limit).
        pid (int | None | Unset): The batch shell's process id, which is also its process group (`Started`).
        seq (int | None | Unset): The worker's sequence number for this report: reports of one node are numbered in
            the order they happened, kept on disk until acknowledged, and sent again in that
            order after an outage (the api applies each once per job, run, kind and node).
        signal (int | None | Unset): The signal that killed it (`Exited`).
        timed_out (bool | Unset): The worker ended it at its time limit.
    """

    at: datetime.datetime
    job_id: int
    kind: ReportKind
    run: int
    cancelled: bool | Unset = UNSET
    cpu_time_seconds: float | None | Unset = UNSET
    exit_code: int | None | Unset = UNSET
    grant: None | str | Unset = UNSET
    incarnation: None | Unset | UUID = UNSET
    launch_fault: LaunchFault | None | Unset = UNSET
    max_rss_mib: int | None | Unset = UNSET
    message: None | str | Unset = UNSET
    node_failed: bool | Unset = UNSET
    out_of_memory: bool | Unset = UNSET
    pid: int | None | Unset = UNSET
    seq: int | None | Unset = UNSET
    signal: int | None | Unset = UNSET
    timed_out: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        job_id = self.job_id

        kind = self.kind.value

        run = self.run

        cancelled = self.cancelled

        cpu_time_seconds: float | None | Unset
        if isinstance(self.cpu_time_seconds, Unset):
            cpu_time_seconds = UNSET
        else:
            cpu_time_seconds = self.cpu_time_seconds

        exit_code: int | None | Unset
        if isinstance(self.exit_code, Unset):
            exit_code = UNSET
        else:
            exit_code = self.exit_code

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

        launch_fault: None | str | Unset
        if isinstance(self.launch_fault, Unset):
            launch_fault = UNSET
        elif isinstance(self.launch_fault, LaunchFault):
            launch_fault = self.launch_fault.value
        else:
            launch_fault = self.launch_fault

        max_rss_mib: int | None | Unset
        if isinstance(self.max_rss_mib, Unset):
            max_rss_mib = UNSET
        else:
            max_rss_mib = self.max_rss_mib

        message: None | str | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message

        node_failed = self.node_failed

        out_of_memory = self.out_of_memory

        pid: int | None | Unset
        if isinstance(self.pid, Unset):
            pid = UNSET
        else:
            pid = self.pid

        seq: int | None | Unset
        if isinstance(self.seq, Unset):
            seq = UNSET
        else:
            seq = self.seq

        signal: int | None | Unset
        if isinstance(self.signal, Unset):
            signal = UNSET
        else:
            signal = self.signal

        timed_out = self.timed_out

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "job_id": job_id,
                "kind": kind,
                "run": run,
            }
        )
        if cancelled is not UNSET:
            field_dict["cancelled"] = cancelled
        if cpu_time_seconds is not UNSET:
            field_dict["cpu_time_seconds"] = cpu_time_seconds
        if exit_code is not UNSET:
            field_dict["exit_code"] = exit_code
        if grant is not UNSET:
            field_dict["grant"] = grant
        if incarnation is not UNSET:
            field_dict["incarnation"] = incarnation
        if launch_fault is not UNSET:
            field_dict["launch_fault"] = launch_fault
        if max_rss_mib is not UNSET:
            field_dict["max_rss_mib"] = max_rss_mib
        if message is not UNSET:
            field_dict["message"] = message
        if node_failed is not UNSET:
            field_dict["node_failed"] = node_failed
        if out_of_memory is not UNSET:
            field_dict["out_of_memory"] = out_of_memory
        if pid is not UNSET:
            field_dict["pid"] = pid
        if seq is not UNSET:
            field_dict["seq"] = seq
        if signal is not UNSET:
            field_dict["signal"] = signal
        if timed_out is not UNSET:
            field_dict["timed_out"] = timed_out

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        job_id = d.pop("job_id")

        kind = ReportKind(d.pop("kind"))

        run = d.pop("run")

        cancelled = d.pop("cancelled", UNSET)

        def _parse_cpu_time_seconds(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cpu_time_seconds = _parse_cpu_time_seconds(d.pop("cpu_time_seconds", UNSET))

        def _parse_exit_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exit_code = _parse_exit_code(d.pop("exit_code", UNSET))

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

        def _parse_launch_fault(data: object) -> LaunchFault | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                launch_fault_type_1 = LaunchFault(data)

                return launch_fault_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LaunchFault | None | Unset, data)

        launch_fault = _parse_launch_fault(d.pop("launch_fault", UNSET))

        def _parse_max_rss_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_rss_mib = _parse_max_rss_mib(d.pop("max_rss_mib", UNSET))

        def _parse_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        node_failed = d.pop("node_failed", UNSET)

        out_of_memory = d.pop("out_of_memory", UNSET)

        def _parse_pid(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pid = _parse_pid(d.pop("pid", UNSET))

        def _parse_seq(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        seq = _parse_seq(d.pop("seq", UNSET))

        def _parse_signal(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        signal = _parse_signal(d.pop("signal", UNSET))

        timed_out = d.pop("timed_out", UNSET)

        job_report = cls(
            at=at,
            job_id=job_id,
            kind=kind,
            run=run,
            cancelled=cancelled,
            cpu_time_seconds=cpu_time_seconds,
            exit_code=exit_code,
            grant=grant,
            incarnation=incarnation,
            launch_fault=launch_fault,
            max_rss_mib=max_rss_mib,
            message=message,
            node_failed=node_failed,
            out_of_memory=out_of_memory,
            pid=pid,
            seq=seq,
            signal=signal,
            timed_out=timed_out,
        )

        job_report.additional_properties = d
        return job_report

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
