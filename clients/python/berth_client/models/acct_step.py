from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.tres import Tres


T = TypeVar("T", bound="AcctStep")


@_attrs_define
class AcctStep:
    """One step of a job run.

    Attributes:
        alloc_tres (Tres): Trackable resources (Slurm's TRES) of a run, over all its nodes.
        elapsed (int): Seconds from start to end (to now while it runs).
        name (str): The step's name (`batch`, or its program).
        nodelist (str): Nodes it ran on, as a hostlist.
        ntasks (int): Tasks.
        state (str): State (Slurm's long name).
        step (str): `batch` (the batch script) or the step id (`0`, `1` …).
        end_time (datetime.datetime | None | Unset): Ended.
        exit_code (int | None | Unset): Exit code.
        exit_signal (int | None | Unset): Signal that ended it.
        start_time (datetime.datetime | None | Unset): Started.
    """

    alloc_tres: Tres
    elapsed: int
    name: str
    nodelist: str
    ntasks: int
    state: str
    step: str
    end_time: datetime.datetime | None | Unset = UNSET
    exit_code: int | None | Unset = UNSET
    exit_signal: int | None | Unset = UNSET
    start_time: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        alloc_tres = self.alloc_tres.to_dict()

        elapsed = self.elapsed

        name = self.name

        nodelist = self.nodelist

        ntasks = self.ntasks

        state = self.state

        step = self.step

        end_time: None | str | Unset
        if isinstance(self.end_time, Unset):
            end_time = UNSET
        elif isinstance(self.end_time, datetime.datetime):
            end_time = self.end_time.isoformat()
        else:
            end_time = self.end_time

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

        start_time: None | str | Unset
        if isinstance(self.start_time, Unset):
            start_time = UNSET
        elif isinstance(self.start_time, datetime.datetime):
            start_time = self.start_time.isoformat()
        else:
            start_time = self.start_time

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "alloc_tres": alloc_tres,
                "elapsed": elapsed,
                "name": name,
                "nodelist": nodelist,
                "ntasks": ntasks,
                "state": state,
                "step": step,
            }
        )
        if end_time is not UNSET:
            field_dict["end_time"] = end_time
        if exit_code is not UNSET:
            field_dict["exit_code"] = exit_code
        if exit_signal is not UNSET:
            field_dict["exit_signal"] = exit_signal
        if start_time is not UNSET:
            field_dict["start_time"] = start_time

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tres import Tres  # noqa: PLC0415

        d = dict(src_dict)
        alloc_tres = Tres.from_dict(d.pop("alloc_tres"))

        elapsed = d.pop("elapsed")

        name = d.pop("name")

        nodelist = d.pop("nodelist")

        ntasks = d.pop("ntasks")

        state = d.pop("state")

        step = d.pop("step")

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

        acct_step = cls(
            alloc_tres=alloc_tres,
            elapsed=elapsed,
            name=name,
            nodelist=nodelist,
            ntasks=ntasks,
            state=state,
            step=step,
            end_time=end_time,
            exit_code=exit_code,
            exit_signal=exit_signal,
            start_time=start_time,
        )

        acct_step.additional_properties = d
        return acct_step

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
