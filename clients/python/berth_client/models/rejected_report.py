from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.report_source import ReportSource
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step_task_key import StepTaskKey


T = TypeVar("T", bound="RejectedReport")


@_attrs_define
class RejectedReport:
    """A report the api refused for good, and why.

    Attributes:
        detail (str): Why.
        job_id (int): The job.
        run (int): The run.
        source (ReportSource): Which kind of report a [`RejectedReport`] is.
        status (int): The HTTP status the report alone would have had: 403 for a run not placed on this
            node, 409 for a report of another job that had the same id (its incarnation
            differs from the job's), 422 for one that can never apply, 400 for a bad field.
        seq (int | None | Unset): The job report's sequence number.
        task (None | StepTaskKey | Unset):
    """

    detail: str
    job_id: int
    run: int
    source: ReportSource
    status: int
    seq: int | None | Unset = UNSET
    task: None | StepTaskKey | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.step_task_key import StepTaskKey  # noqa: PLC0415

        detail = self.detail

        job_id = self.job_id

        run = self.run

        source = self.source.value

        status = self.status

        seq: int | None | Unset
        if isinstance(self.seq, Unset):
            seq = UNSET
        else:
            seq = self.seq

        task: dict[str, Any] | None | Unset
        if isinstance(self.task, Unset):
            task = UNSET
        elif isinstance(self.task, StepTaskKey):
            task = self.task.to_dict()
        else:
            task = self.task

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "detail": detail,
                "job_id": job_id,
                "run": run,
                "source": source,
                "status": status,
            }
        )
        if seq is not UNSET:
            field_dict["seq"] = seq
        if task is not UNSET:
            field_dict["task"] = task

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.step_task_key import StepTaskKey  # noqa: PLC0415

        d = dict(src_dict)
        detail = d.pop("detail")

        job_id = d.pop("job_id")

        run = d.pop("run")

        source = ReportSource(d.pop("source"))

        status = d.pop("status")

        def _parse_seq(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        seq = _parse_seq(d.pop("seq", UNSET))

        def _parse_task(data: object) -> None | StepTaskKey | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                task_type_1 = StepTaskKey.from_dict(data)

                return task_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StepTaskKey | Unset, data)

        task = _parse_task(d.pop("task", UNSET))

        rejected_report = cls(
            detail=detail,
            job_id=job_id,
            run=run,
            source=source,
            status=status,
            seq=seq,
            task=task,
        )

        rejected_report.additional_properties = d
        return rejected_report

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
