from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PriorityFactors")


@_attrs_define
class PriorityFactors:
    """Each factor of a priority (0..=1 before weighting) and the total.

    Attributes:
        adjust (int): The administrator's adjustment (added).
        age (float): The age factor.
        fairshare (float): The fairshare factor.
        job_size (float): The job-size factor.
        nice (int): The nice value (subtracted).
        partition (float): The partition factor.
        priority (int): The priority: the weighted sum, minus nice, plus the adjustment.
        qos (float): The QOS factor.
    """

    adjust: int
    age: float
    fairshare: float
    job_size: float
    nice: int
    partition: float
    priority: int
    qos: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        adjust = self.adjust

        age = self.age

        fairshare = self.fairshare

        job_size = self.job_size

        nice = self.nice

        partition = self.partition

        priority = self.priority

        qos = self.qos

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "adjust": adjust,
                "age": age,
                "fairshare": fairshare,
                "job_size": job_size,
                "nice": nice,
                "partition": partition,
                "priority": priority,
                "qos": qos,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        adjust = d.pop("adjust")

        age = d.pop("age")

        fairshare = d.pop("fairshare")

        job_size = d.pop("job_size")

        nice = d.pop("nice")

        partition = d.pop("partition")

        priority = d.pop("priority")

        qos = d.pop("qos")

        priority_factors = cls(
            adjust=adjust,
            age=age,
            fairshare=fairshare,
            job_size=job_size,
            nice=nice,
            partition=partition,
            priority=priority,
            qos=qos,
        )

        priority_factors.additional_properties = d
        return priority_factors

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
