from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="RunningJob")


@_attrs_define
class RunningJob:
    """A job run the worker is supervising.

    Attributes:
        job_id (int): The job.
        run (int): Its run.
        incarnation (None | Unset | UUID): The job's incarnation, from the run's assignment: a run of another job that
            had
            the same id (before a database failover) is stopped, not mistaken for this one.
    """

    job_id: int
    run: int
    incarnation: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        run = self.run

        incarnation: None | str | Unset
        if isinstance(self.incarnation, Unset):
            incarnation = UNSET
        elif isinstance(self.incarnation, UUID):
            incarnation = str(self.incarnation)
        else:
            incarnation = self.incarnation

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "run": run,
            }
        )
        if incarnation is not UNSET:
            field_dict["incarnation"] = incarnation

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job_id = d.pop("job_id")

        run = d.pop("run")

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

        running_job = cls(
            job_id=job_id,
            run=run,
            incarnation=incarnation,
        )

        running_job.additional_properties = d
        return running_job

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
