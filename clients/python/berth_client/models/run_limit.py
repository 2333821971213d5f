from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="RunLimit")


@_attrs_define
class RunLimit:
    """The current time limit of a job run the node is running, so that a change made while
    it runs (`scontrol update JobId=… TimeLimit=…`) moves its deadline.

        Attributes:
            job_id (int): The job.
            run (int): Its run.
            time_limit (int | None | Unset): The time limit, seconds, counted from the run's start; `None`: unlimited.
    """

    job_id: int
    run: int
    time_limit: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        run = self.run

        time_limit: int | None | Unset
        if isinstance(self.time_limit, Unset):
            time_limit = UNSET
        else:
            time_limit = self.time_limit

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "run": run,
            }
        )
        if time_limit is not UNSET:
            field_dict["time_limit"] = time_limit

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job_id = d.pop("job_id")

        run = d.pop("run")

        def _parse_time_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        time_limit = _parse_time_limit(d.pop("time_limit", UNSET))

        run_limit = cls(
            job_id=job_id,
            run=run,
            time_limit=time_limit,
        )

        run_limit.additional_properties = d
        return run_limit

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
