from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

T = TypeVar("T", bound="JobBatch")


@_attrs_define
class JobBatch:
    """`POST /v1/jobs/cancel`, `/v1/jobs/hold`, `/v1/jobs/release`: one action on many jobs
    in one request (`scancel 12 13 14_2`, `scontrol hold 12 13`).

        Attributes:
            jobs (list[str]): The jobs, as `scancel` names them: `12`, or one array task `12_3` (cancel only);
                1 to 1000 of them.
    """

    jobs: list[str]

    def to_dict(self) -> dict[str, Any]:
        jobs = self.jobs

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "jobs": jobs,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        jobs = cast(list[str], d.pop("jobs"))

        job_batch = cls(
            jobs=jobs,
        )

        return job_batch
