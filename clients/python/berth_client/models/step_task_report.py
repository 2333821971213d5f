from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.report_kind import ReportKind
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step_task_key import StepTaskKey


T = TypeVar("T", bound="StepTaskReport")


@_attrs_define
class StepTaskReport:
    """What happened to a step task (in a sync request). Applied at most once per task and
    kind.

        Attributes:
            at (datetime.datetime): When.
            key (StepTaskKey): Names one task of one step of one job run.
            kind (ReportKind): What happened to a job's process on a node.
            exit_code (int | None | Unset): The exit code (`exited`).
            incarnation (None | Unset | UUID): The job's incarnation, from the task's launch: the api refuses a report of
                another
                job that had the same id.
            message (None | str | Unset): Why it could not start (`launch_failed`).
            signal (int | None | Unset): The signal that ended it (`exited`).
    """

    at: datetime.datetime
    key: StepTaskKey
    kind: ReportKind
    exit_code: int | None | Unset = UNSET
    incarnation: None | Unset | UUID = UNSET
    message: None | str | Unset = UNSET
    signal: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        key = self.key.to_dict()

        kind = self.kind.value

        exit_code: int | None | Unset
        if isinstance(self.exit_code, Unset):
            exit_code = UNSET
        else:
            exit_code = self.exit_code

        incarnation: None | str | Unset
        if isinstance(self.incarnation, Unset):
            incarnation = UNSET
        elif isinstance(self.incarnation, UUID):
            incarnation = str(self.incarnation)
        else:
            incarnation = self.incarnation

        message: None | str | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message

        signal: int | None | Unset
        if isinstance(self.signal, Unset):
            signal = UNSET
        else:
            signal = self.signal

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "key": key,
                "kind": kind,
            }
        )
        if exit_code is not UNSET:
            field_dict["exit_code"] = exit_code
        if incarnation is not UNSET:
            field_dict["incarnation"] = incarnation
        if message is not UNSET:
            field_dict["message"] = message
        if signal is not UNSET:
            field_dict["signal"] = signal

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.step_task_key import StepTaskKey  # noqa: PLC0415

        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        key = StepTaskKey.from_dict(d.pop("key"))

        kind = ReportKind(d.pop("kind"))

        def _parse_exit_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exit_code = _parse_exit_code(d.pop("exit_code", UNSET))

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

        def _parse_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        def _parse_signal(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        signal = _parse_signal(d.pop("signal", UNSET))

        step_task_report = cls(
            at=at,
            key=key,
            kind=kind,
            exit_code=exit_code,
            incarnation=incarnation,
            message=message,
            signal=signal,
        )

        step_task_report.additional_properties = d
        return step_task_report

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
