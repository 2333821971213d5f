from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="JobKeepalive")


@_attrs_define
class JobKeepalive:
    """`POST /v1/jobs/{id}/keepalive` answer: the allocation's client (salloc, srun outside
    an allocation) is alive, and until when the job lasts without another keep-alive
    (Slurm's `InactiveLimit`).

        Attributes:
            inactive_limit (int): The cluster's inactive limit, seconds (`[scheduler] inactive_limit_seconds`; 0:
                none, the job is never ended for its client's silence). A client sends its next
                keep-alive well within it (salloc and srun: every quarter of it, at most 30 s).
            job_id (int): The job.
            expires_at (datetime.datetime | None | Unset): When the job ends (a running one TIMEOUT, a pending one
                CANCELLED, reason
                `InactiveLimit`) unless another keep-alive comes first; `None` without a limit.
    """

    inactive_limit: int
    job_id: int
    expires_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        inactive_limit = self.inactive_limit

        job_id = self.job_id

        expires_at: None | str | Unset
        if isinstance(self.expires_at, Unset):
            expires_at = UNSET
        elif isinstance(self.expires_at, datetime.datetime):
            expires_at = self.expires_at.isoformat()
        else:
            expires_at = self.expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "inactive_limit": inactive_limit,
                "job_id": job_id,
            }
        )
        if expires_at is not UNSET:
            field_dict["expires_at"] = expires_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        inactive_limit = d.pop("inactive_limit")

        job_id = d.pop("job_id")

        def _parse_expires_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                expires_at_type_0 = datetime.datetime.fromisoformat(data)

                return expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        expires_at = _parse_expires_at(d.pop("expires_at", UNSET))

        job_keepalive = cls(
            inactive_limit=inactive_limit,
            job_id=job_id,
            expires_at=expires_at,
        )

        job_keepalive.additional_properties = d
        return job_keepalive

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
