from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="JobUpdate")


@_attrs_define
class JobUpdate:
    """`PATCH /v1/jobs/{id}`: changes to a pending job (and the pending tasks of its array);
    of a running job only `time_limit` may change. Absent fields are left as they are.

        Attributes:
            begin (None | str | Unset): `--begin` (`now+1hour`, `2026-12-01T10:00` …).
            nice (int | None | Unset): `--nice`: lowers the priority by this much; a negative value (raising it) needs
                the admin or operator role.
            priority_adjust (int | None | Unset): An administrator's priority adjustment, added to the multifactor priority
                (admin
                or operator only).
            time_limit (None | str | Unset): The time limit, Slurm's `--time` format (`30`, `1:00:00`, `2-0`); raising it
                needs
                the admin or operator role. The only change a running job takes (counted from its
                start; its nodes enforce it from their next sync).
    """

    begin: None | str | Unset = UNSET
    nice: int | None | Unset = UNSET
    priority_adjust: int | None | Unset = UNSET
    time_limit: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        begin: None | str | Unset
        if isinstance(self.begin, Unset):
            begin = UNSET
        else:
            begin = self.begin

        nice: int | None | Unset
        if isinstance(self.nice, Unset):
            nice = UNSET
        else:
            nice = self.nice

        priority_adjust: int | None | Unset
        if isinstance(self.priority_adjust, Unset):
            priority_adjust = UNSET
        else:
            priority_adjust = self.priority_adjust

        time_limit: None | str | Unset
        if isinstance(self.time_limit, Unset):
            time_limit = UNSET
        else:
            time_limit = self.time_limit

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if begin is not UNSET:
            field_dict["begin"] = begin
        if nice is not UNSET:
            field_dict["nice"] = nice
        if priority_adjust is not UNSET:
            field_dict["priority_adjust"] = priority_adjust
        if time_limit is not UNSET:
            field_dict["time_limit"] = time_limit

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_begin(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        begin = _parse_begin(d.pop("begin", UNSET))

        def _parse_nice(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        nice = _parse_nice(d.pop("nice", UNSET))

        def _parse_priority_adjust(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        priority_adjust = _parse_priority_adjust(d.pop("priority_adjust", UNSET))

        def _parse_time_limit(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        time_limit = _parse_time_limit(d.pop("time_limit", UNSET))

        job_update = cls(
            begin=begin,
            nice=nice,
            priority_adjust=priority_adjust,
            time_limit=time_limit,
        )

        return job_update
