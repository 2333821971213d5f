from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="JobWillRun")


@_attrs_define
class JobWillRun:
    """`POST /v1/jobs/will-run` answer (`sbatch --test-only`): when and where the job would
    start if it were submitted now, as Slurm's will-run test tells. Nothing is stored.

        Attributes:
            cpus (int): The CPUs it would hold in all (Slurm's "using N processors").
            job_id (int): The id the job would have had: drawn from the job id sequence and never given to
                any job (Slurm prints one too, though nothing is kept).
            nodes (list[str]): The nodes it would run on (at that start).
            partition (str): The partition it would run in.
            reason (None | str | Unset): Why it would wait (Slurm's reason names: `Priority`, `Resources` …), when it
                could not start at once.
            start_time (datetime.datetime | None | Unset): The earliest expected start (RFC 3339, UTC): now when it could
                start at once, else
                the start the scheduler's plan reserves for it. `None`: the plan gives it no start
                yet (see `reason`).
    """

    cpus: int
    job_id: int
    nodes: list[str]
    partition: str
    reason: None | str | Unset = UNSET
    start_time: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cpus = self.cpus

        job_id = self.job_id

        nodes = self.nodes

        partition = self.partition

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

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
                "cpus": cpus,
                "job_id": job_id,
                "nodes": nodes,
                "partition": partition,
            }
        )
        if reason is not UNSET:
            field_dict["reason"] = reason
        if start_time is not UNSET:
            field_dict["start_time"] = start_time

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cpus = d.pop("cpus")

        job_id = d.pop("job_id")

        nodes = cast(list[str], d.pop("nodes"))

        partition = d.pop("partition")

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

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

        job_will_run = cls(
            cpus=cpus,
            job_id=job_id,
            nodes=nodes,
            partition=partition,
            reason=reason,
            start_time=start_time,
        )

        job_will_run.additional_properties = d
        return job_will_run

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
