from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.gpu_fault import GpuFault
    from ..models.gpu_sample import GpuSample
    from ..models.interruption import Interruption
    from ..models.job_report import JobReport
    from ..models.pty_applied import PtyApplied
    from ..models.running_job import RunningJob
    from ..models.running_task import RunningTask
    from ..models.step_task_report import StepTaskReport


T = TypeVar("T", bound="SyncRequest")


@_attrs_define
class SyncRequest:
    """`POST /v1/nodes/{name}/sync`: the worker's long poll. It carries the heartbeat (its
    arrival), job reports and GPU samples, and returns what the node must run or stop.

        Attributes:
            acked_seq (int | None | Unset): The highest report sequence number the api has acknowledged to this worker. When
                the api's database remembers less (it lost its last commits in a failover), the
                answer asks for the reports after what it remembers ([`SyncResponse::resend_after`]).
            gpu_faults (list[GpuFault] | Unset): GPU faults seen since the last acknowledged sync; each drains the node.
            interruption (Interruption | None | Unset):
            max_job_id (int | None | Unset): The highest job id this worker remembers (its runs, step tasks and journal):
                after
                a database failover that lost the last commits, the api moves the job id sequence
                past it so that no new job takes the id of a run the node remembers. Absent from
                older workers, and when it remembers none.
            pty_applied (list[PtyApplied] | Unset): How far the worker has applied the terminal input of each `--pty` task
                it runs.
            reports (list[JobReport] | Unset): Job reports since the last acknowledged sync, oldest first.
            running (list[RunningJob] | Unset): Job runs the worker is supervising now.
            running_tasks (list[RunningTask] | Unset): Step tasks the worker is running now.
            samples (list[GpuSample] | Unset): The latest GPU samples.
            signals_delivered (list[int] | Unset): The ids of the signals ([`SyncResponse::signals`]) the worker has dealt
                with since
                its last successful sync (sent, or dropped for a run it no longer runs): the api
                forgets them, so each is sent once. Absent from older workers.
            step_reports (list[StepTaskReport] | Unset): Step task reports since the last acknowledged sync, oldest first.
            time_limits (list[RunningJob] | Unset): Job runs that reached their time limit: the api records the TIMEOUT
                decision, and
                the worker signals them only once this sync is answered (or after a few seconds
                without an answer).
            wait_seconds (int | Unset): How long the api may hold the request when there is nothing new, seconds
                (0..=60, default 0).
    """

    acked_seq: int | None | Unset = UNSET
    gpu_faults: list[GpuFault] | Unset = UNSET
    interruption: Interruption | None | Unset = UNSET
    max_job_id: int | None | Unset = UNSET
    pty_applied: list[PtyApplied] | Unset = UNSET
    reports: list[JobReport] | Unset = UNSET
    running: list[RunningJob] | Unset = UNSET
    running_tasks: list[RunningTask] | Unset = UNSET
    samples: list[GpuSample] | Unset = UNSET
    signals_delivered: list[int] | Unset = UNSET
    step_reports: list[StepTaskReport] | Unset = UNSET
    time_limits: list[RunningJob] | Unset = UNSET
    wait_seconds: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.interruption import Interruption  # noqa: PLC0415

        acked_seq: int | None | Unset
        if isinstance(self.acked_seq, Unset):
            acked_seq = UNSET
        else:
            acked_seq = self.acked_seq

        gpu_faults: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.gpu_faults, Unset):
            gpu_faults = []
            for gpu_faults_item_data in self.gpu_faults:
                gpu_faults_item = gpu_faults_item_data.to_dict()
                gpu_faults.append(gpu_faults_item)

        interruption: dict[str, Any] | None | Unset
        if isinstance(self.interruption, Unset):
            interruption = UNSET
        elif isinstance(self.interruption, Interruption):
            interruption = self.interruption.to_dict()
        else:
            interruption = self.interruption

        max_job_id: int | None | Unset
        if isinstance(self.max_job_id, Unset):
            max_job_id = UNSET
        else:
            max_job_id = self.max_job_id

        pty_applied: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.pty_applied, Unset):
            pty_applied = []
            for pty_applied_item_data in self.pty_applied:
                pty_applied_item = pty_applied_item_data.to_dict()
                pty_applied.append(pty_applied_item)

        reports: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.reports, Unset):
            reports = []
            for reports_item_data in self.reports:
                reports_item = reports_item_data.to_dict()
                reports.append(reports_item)

        running: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.running, Unset):
            running = []
            for running_item_data in self.running:
                running_item = running_item_data.to_dict()
                running.append(running_item)

        running_tasks: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.running_tasks, Unset):
            running_tasks = []
            for running_tasks_item_data in self.running_tasks:
                running_tasks_item = running_tasks_item_data.to_dict()
                running_tasks.append(running_tasks_item)

        samples: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.samples, Unset):
            samples = []
            for samples_item_data in self.samples:
                samples_item = samples_item_data.to_dict()
                samples.append(samples_item)

        signals_delivered: list[int] | Unset = UNSET
        if not isinstance(self.signals_delivered, Unset):
            signals_delivered = self.signals_delivered

        step_reports: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.step_reports, Unset):
            step_reports = []
            for step_reports_item_data in self.step_reports:
                step_reports_item = step_reports_item_data.to_dict()
                step_reports.append(step_reports_item)

        time_limits: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.time_limits, Unset):
            time_limits = []
            for time_limits_item_data in self.time_limits:
                time_limits_item = time_limits_item_data.to_dict()
                time_limits.append(time_limits_item)

        wait_seconds = self.wait_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if acked_seq is not UNSET:
            field_dict["acked_seq"] = acked_seq
        if gpu_faults is not UNSET:
            field_dict["gpu_faults"] = gpu_faults
        if interruption is not UNSET:
            field_dict["interruption"] = interruption
        if max_job_id is not UNSET:
            field_dict["max_job_id"] = max_job_id
        if pty_applied is not UNSET:
            field_dict["pty_applied"] = pty_applied
        if reports is not UNSET:
            field_dict["reports"] = reports
        if running is not UNSET:
            field_dict["running"] = running
        if running_tasks is not UNSET:
            field_dict["running_tasks"] = running_tasks
        if samples is not UNSET:
            field_dict["samples"] = samples
        if signals_delivered is not UNSET:
            field_dict["signals_delivered"] = signals_delivered
        if step_reports is not UNSET:
            field_dict["step_reports"] = step_reports
        if time_limits is not UNSET:
            field_dict["time_limits"] = time_limits
        if wait_seconds is not UNSET:
            field_dict["wait_seconds"] = wait_seconds

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.gpu_fault import GpuFault  # noqa: PLC0415
        from ..models.gpu_sample import GpuSample  # noqa: PLC0415
        from ..models.interruption import Interruption  # noqa: PLC0415
        from ..models.job_report import JobReport  # noqa: PLC0415
        from ..models.pty_applied import PtyApplied  # noqa: PLC0415
        from ..models.running_job import RunningJob  # noqa: PLC0415
        from ..models.running_task import RunningTask  # noqa: PLC0415
        from ..models.step_task_report import StepTaskReport  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_acked_seq(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        acked_seq = _parse_acked_seq(d.pop("acked_seq", UNSET))

        _gpu_faults = d.pop("gpu_faults", UNSET)
        gpu_faults: list[GpuFault] | Unset = UNSET
        if _gpu_faults is not UNSET:
            gpu_faults = []
            for gpu_faults_item_data in _gpu_faults:
                gpu_faults_item = GpuFault.from_dict(gpu_faults_item_data)

                gpu_faults.append(gpu_faults_item)

        def _parse_interruption(data: object) -> Interruption | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                interruption_type_1 = Interruption.from_dict(data)

                return interruption_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Interruption | None | Unset, data)

        interruption = _parse_interruption(d.pop("interruption", UNSET))

        def _parse_max_job_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_job_id = _parse_max_job_id(d.pop("max_job_id", UNSET))

        _pty_applied = d.pop("pty_applied", UNSET)
        pty_applied: list[PtyApplied] | Unset = UNSET
        if _pty_applied is not UNSET:
            pty_applied = []
            for pty_applied_item_data in _pty_applied:
                pty_applied_item = PtyApplied.from_dict(pty_applied_item_data)

                pty_applied.append(pty_applied_item)

        _reports = d.pop("reports", UNSET)
        reports: list[JobReport] | Unset = UNSET
        if _reports is not UNSET:
            reports = []
            for reports_item_data in _reports:
                reports_item = JobReport.from_dict(reports_item_data)

                reports.append(reports_item)

        _running = d.pop("running", UNSET)
        running: list[RunningJob] | Unset = UNSET
        if _running is not UNSET:
            running = []
            for running_item_data in _running:
                running_item = RunningJob.from_dict(running_item_data)

                running.append(running_item)

        _running_tasks = d.pop("running_tasks", UNSET)
        running_tasks: list[RunningTask] | Unset = UNSET
        if _running_tasks is not UNSET:
            running_tasks = []
            for running_tasks_item_data in _running_tasks:
                running_tasks_item = RunningTask.from_dict(running_tasks_item_data)

                running_tasks.append(running_tasks_item)

        _samples = d.pop("samples", UNSET)
        samples: list[GpuSample] | Unset = UNSET
        if _samples is not UNSET:
            samples = []
            for samples_item_data in _samples:
                samples_item = GpuSample.from_dict(samples_item_data)

                samples.append(samples_item)

        signals_delivered = cast(list[int], d.pop("signals_delivered", UNSET))

        _step_reports = d.pop("step_reports", UNSET)
        step_reports: list[StepTaskReport] | Unset = UNSET
        if _step_reports is not UNSET:
            step_reports = []
            for step_reports_item_data in _step_reports:
                step_reports_item = StepTaskReport.from_dict(step_reports_item_data)

                step_reports.append(step_reports_item)

        _time_limits = d.pop("time_limits", UNSET)
        time_limits: list[RunningJob] | Unset = UNSET
        if _time_limits is not UNSET:
            time_limits = []
            for time_limits_item_data in _time_limits:
                time_limits_item = RunningJob.from_dict(time_limits_item_data)

                time_limits.append(time_limits_item)

        wait_seconds = d.pop("wait_seconds", UNSET)

        sync_request = cls(
            acked_seq=acked_seq,
            gpu_faults=gpu_faults,
            interruption=interruption,
            max_job_id=max_job_id,
            pty_applied=pty_applied,
            reports=reports,
            running=running,
            running_tasks=running_tasks,
            samples=samples,
            signals_delivered=signals_delivered,
            step_reports=step_reports,
            time_limits=time_limits,
            wait_seconds=wait_seconds,
        )

        return sync_request
