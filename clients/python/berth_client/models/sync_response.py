from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.assignment import Assignment
    from ..models.cancellation import Cancellation
    from ..models.pty_input import PtyInput
    from ..models.rejected_report import RejectedReport
    from ..models.run_limit import RunLimit
    from ..models.signal_delivery import SignalDelivery
    from ..models.step_task_key import StepTaskKey
    from ..models.step_task_launch import StepTaskLaunch


T = TypeVar("T", bound="SyncResponse")


@_attrs_define
class SyncResponse:
    """The answer to a sync.

    Attributes:
        assignments (list[Assignment]): Job runs the node must be running; the worker starts those it does not know.
        cancellations (list[Cancellation]): Job runs the node must stop (SIGTERM to the process group, SIGKILL after a
            grace).
        lease_ms (int | None | Unset): The node's lease, milliseconds counted from when the worker sent this sync: how
            long its runs may go on without another successful sync. It is shorter than the
            scheduler's node timeout (after which a silent node's runs are requeued), so a
            worker whose lease runs out has stopped its runs (SIGTERM, SIGKILL by the lease's
            end) before any of them can start again elsewhere. `None`: no lease (runs go on
            through any silence).
        pty_input (list[PtyInput] | Unset): Terminal input for the `--pty` tasks the node runs, after what it said it
            applied
            ([`SyncRequest::pty_applied`]), in order.
        rejected (list[RejectedReport] | Unset): Reports of this sync the api refused and will never apply (a run not
            placed on
            this node, a report that contradicts the job's record), each with why. They count
            as answered: the worker logs them and does not send them again.
        resend_after (int | None | Unset): The database remembers this node's reports only up to this sequence number,
            less
            than the worker's `acked_seq` (a failover lost its last commits): the worker sends
            again the reports after it that it still keeps. Nothing else was applied or
            decided in this answer.
        run_limits (list[RunLimit] | Unset): The time limit of each job run the node said it runs and may go on running;
            the
            worker moves a run's deadline when it differs from the one it enforces.
        signals (list[SignalDelivery] | Unset): Signals for the processes of runs the node runs (`scancel --signal`),
            oldest
            first; the worker sends each to the process groups it started for that run and
            acknowledges it in its next sync ([`SyncRequest::signals_delivered`]).
        step_cancellations (list[StepTaskKey] | Unset): Step tasks the node must stop (SIGTERM, SIGKILL after the
            grace).
        step_tasks (list[StepTaskLaunch] | Unset): Step tasks the node must run; the worker starts those it does not
            know.
    """

    assignments: list[Assignment]
    cancellations: list[Cancellation]
    lease_ms: int | None | Unset = UNSET
    pty_input: list[PtyInput] | Unset = UNSET
    rejected: list[RejectedReport] | Unset = UNSET
    resend_after: int | None | Unset = UNSET
    run_limits: list[RunLimit] | Unset = UNSET
    signals: list[SignalDelivery] | Unset = UNSET
    step_cancellations: list[StepTaskKey] | Unset = UNSET
    step_tasks: list[StepTaskLaunch] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        assignments = []
        for assignments_item_data in self.assignments:
            assignments_item = assignments_item_data.to_dict()
            assignments.append(assignments_item)

        cancellations = []
        for cancellations_item_data in self.cancellations:
            cancellations_item = cancellations_item_data.to_dict()
            cancellations.append(cancellations_item)

        lease_ms: int | None | Unset
        if isinstance(self.lease_ms, Unset):
            lease_ms = UNSET
        else:
            lease_ms = self.lease_ms

        pty_input: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.pty_input, Unset):
            pty_input = []
            for pty_input_item_data in self.pty_input:
                pty_input_item = pty_input_item_data.to_dict()
                pty_input.append(pty_input_item)

        rejected: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.rejected, Unset):
            rejected = []
            for rejected_item_data in self.rejected:
                rejected_item = rejected_item_data.to_dict()
                rejected.append(rejected_item)

        resend_after: int | None | Unset
        if isinstance(self.resend_after, Unset):
            resend_after = UNSET
        else:
            resend_after = self.resend_after

        run_limits: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.run_limits, Unset):
            run_limits = []
            for run_limits_item_data in self.run_limits:
                run_limits_item = run_limits_item_data.to_dict()
                run_limits.append(run_limits_item)

        signals: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.signals, Unset):
            signals = []
            for signals_item_data in self.signals:
                signals_item = signals_item_data.to_dict()
                signals.append(signals_item)

        step_cancellations: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.step_cancellations, Unset):
            step_cancellations = []
            for step_cancellations_item_data in self.step_cancellations:
                step_cancellations_item = step_cancellations_item_data.to_dict()
                step_cancellations.append(step_cancellations_item)

        step_tasks: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.step_tasks, Unset):
            step_tasks = []
            for step_tasks_item_data in self.step_tasks:
                step_tasks_item = step_tasks_item_data.to_dict()
                step_tasks.append(step_tasks_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "assignments": assignments,
                "cancellations": cancellations,
            }
        )
        if lease_ms is not UNSET:
            field_dict["lease_ms"] = lease_ms
        if pty_input is not UNSET:
            field_dict["pty_input"] = pty_input
        if rejected is not UNSET:
            field_dict["rejected"] = rejected
        if resend_after is not UNSET:
            field_dict["resend_after"] = resend_after
        if run_limits is not UNSET:
            field_dict["run_limits"] = run_limits
        if signals is not UNSET:
            field_dict["signals"] = signals
        if step_cancellations is not UNSET:
            field_dict["step_cancellations"] = step_cancellations
        if step_tasks is not UNSET:
            field_dict["step_tasks"] = step_tasks

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.assignment import Assignment  # noqa: PLC0415
        from ..models.cancellation import Cancellation  # noqa: PLC0415
        from ..models.pty_input import PtyInput  # noqa: PLC0415
        from ..models.rejected_report import RejectedReport  # noqa: PLC0415
        from ..models.run_limit import RunLimit  # noqa: PLC0415
        from ..models.signal_delivery import SignalDelivery  # noqa: PLC0415
        from ..models.step_task_key import StepTaskKey  # noqa: PLC0415
        from ..models.step_task_launch import StepTaskLaunch  # noqa: PLC0415

        d = dict(src_dict)
        assignments = []
        _assignments = d.pop("assignments")
        for assignments_item_data in _assignments:
            assignments_item = Assignment.from_dict(assignments_item_data)

            assignments.append(assignments_item)

        cancellations = []
        _cancellations = d.pop("cancellations")
        for cancellations_item_data in _cancellations:
            cancellations_item = Cancellation.from_dict(cancellations_item_data)

            cancellations.append(cancellations_item)

        def _parse_lease_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        lease_ms = _parse_lease_ms(d.pop("lease_ms", UNSET))

        _pty_input = d.pop("pty_input", UNSET)
        pty_input: list[PtyInput] | Unset = UNSET
        if _pty_input is not UNSET:
            pty_input = []
            for pty_input_item_data in _pty_input:
                pty_input_item = PtyInput.from_dict(pty_input_item_data)

                pty_input.append(pty_input_item)

        _rejected = d.pop("rejected", UNSET)
        rejected: list[RejectedReport] | Unset = UNSET
        if _rejected is not UNSET:
            rejected = []
            for rejected_item_data in _rejected:
                rejected_item = RejectedReport.from_dict(rejected_item_data)

                rejected.append(rejected_item)

        def _parse_resend_after(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        resend_after = _parse_resend_after(d.pop("resend_after", UNSET))

        _run_limits = d.pop("run_limits", UNSET)
        run_limits: list[RunLimit] | Unset = UNSET
        if _run_limits is not UNSET:
            run_limits = []
            for run_limits_item_data in _run_limits:
                run_limits_item = RunLimit.from_dict(run_limits_item_data)

                run_limits.append(run_limits_item)

        _signals = d.pop("signals", UNSET)
        signals: list[SignalDelivery] | Unset = UNSET
        if _signals is not UNSET:
            signals = []
            for signals_item_data in _signals:
                signals_item = SignalDelivery.from_dict(signals_item_data)

                signals.append(signals_item)

        _step_cancellations = d.pop("step_cancellations", UNSET)
        step_cancellations: list[StepTaskKey] | Unset = UNSET
        if _step_cancellations is not UNSET:
            step_cancellations = []
            for step_cancellations_item_data in _step_cancellations:
                step_cancellations_item = StepTaskKey.from_dict(step_cancellations_item_data)

                step_cancellations.append(step_cancellations_item)

        _step_tasks = d.pop("step_tasks", UNSET)
        step_tasks: list[StepTaskLaunch] | Unset = UNSET
        if _step_tasks is not UNSET:
            step_tasks = []
            for step_tasks_item_data in _step_tasks:
                step_tasks_item = StepTaskLaunch.from_dict(step_tasks_item_data)

                step_tasks.append(step_tasks_item)

        sync_response = cls(
            assignments=assignments,
            cancellations=cancellations,
            lease_ms=lease_ms,
            pty_input=pty_input,
            rejected=rejected,
            resend_after=resend_after,
            run_limits=run_limits,
            signals=signals,
            step_cancellations=step_cancellations,
            step_tasks=step_tasks,
        )

        sync_response.additional_properties = d
        return sync_response

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
