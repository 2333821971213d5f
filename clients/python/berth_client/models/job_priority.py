from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.priority_factors import PriorityFactors


T = TypeVar("T", bound="JobPriority")


@_attrs_define
class JobPriority:
    """`GET /v1/jobs/{id}/priority`: a pending job's priority factors (sprio), as the
    scheduler computed them last.

        Attributes:
            computed_at (str): When the scheduler computed it (RFC 3339).
            factors (PriorityFactors): Each factor of a priority (0..=1 before weighting) and the total.
            job_id (int): The job.
            partition (str): Its partition.
            user (str): Its user.
            weighted (PriorityFactors): Each factor of a priority (0..=1 before weighting) and the total.
            account (None | str | Unset): Its account (the user's default account when the job named none).
            qos (None | str | Unset): Its QOS.
    """

    computed_at: str
    factors: PriorityFactors
    job_id: int
    partition: str
    user: str
    weighted: PriorityFactors
    account: None | str | Unset = UNSET
    qos: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        computed_at = self.computed_at

        factors = self.factors.to_dict()

        job_id = self.job_id

        partition = self.partition

        user = self.user

        weighted = self.weighted.to_dict()

        account: None | str | Unset
        if isinstance(self.account, Unset):
            account = UNSET
        else:
            account = self.account

        qos: None | str | Unset
        if isinstance(self.qos, Unset):
            qos = UNSET
        else:
            qos = self.qos

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "computed_at": computed_at,
                "factors": factors,
                "job_id": job_id,
                "partition": partition,
                "user": user,
                "weighted": weighted,
            }
        )
        if account is not UNSET:
            field_dict["account"] = account
        if qos is not UNSET:
            field_dict["qos"] = qos

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.priority_factors import PriorityFactors  # noqa: PLC0415

        d = dict(src_dict)
        computed_at = d.pop("computed_at")

        factors = PriorityFactors.from_dict(d.pop("factors"))

        job_id = d.pop("job_id")

        partition = d.pop("partition")

        user = d.pop("user")

        weighted = PriorityFactors.from_dict(d.pop("weighted"))

        def _parse_account(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        account = _parse_account(d.pop("account", UNSET))

        def _parse_qos(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        qos = _parse_qos(d.pop("qos", UNSET))

        job_priority = cls(
            computed_at=computed_at,
            factors=factors,
            job_id=job_id,
            partition=partition,
            user=user,
            weighted=weighted,
            account=account,
            qos=qos,
        )

        job_priority.additional_properties = d
        return job_priority

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
