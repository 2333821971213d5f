from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ClusterTimelinePoint")


@_attrs_define
class ClusterTimelinePoint:
    """One bucket of the cluster's GPU timeline: GPU counts averaged over its sampled minutes.

    Attributes:
        gpus_allocated (float): GPUs held by job allocations.
        gpus_down (float): GPUs on DOWN, DRAINING or DRAINED nodes, not allocated.
        gpus_planned_down (float): GPUs on powered-down cloud nodes.
        gpus_reserved (float): GPUs held by an active reservation, not allocated.
        gpus_total (float): GPUs in the cluster (mean over the bucket's sampled minutes).
        time (datetime.datetime): The bucket's start.
        utilization_pct (float | None | Unset): Mean utilisation of the GPUs jobs held, percent, from the workers'
            samples
            (`None` when no job reported a sample in the bucket).
    """

    gpus_allocated: float
    gpus_down: float
    gpus_planned_down: float
    gpus_reserved: float
    gpus_total: float
    time: datetime.datetime
    utilization_pct: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gpus_allocated = self.gpus_allocated

        gpus_down = self.gpus_down

        gpus_planned_down = self.gpus_planned_down

        gpus_reserved = self.gpus_reserved

        gpus_total = self.gpus_total

        time = self.time.isoformat()

        utilization_pct: float | None | Unset
        if isinstance(self.utilization_pct, Unset):
            utilization_pct = UNSET
        else:
            utilization_pct = self.utilization_pct

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gpus_allocated": gpus_allocated,
                "gpus_down": gpus_down,
                "gpus_planned_down": gpus_planned_down,
                "gpus_reserved": gpus_reserved,
                "gpus_total": gpus_total,
                "time": time,
            }
        )
        if utilization_pct is not UNSET:
            field_dict["utilization_pct"] = utilization_pct

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        gpus_allocated = d.pop("gpus_allocated")

        gpus_down = d.pop("gpus_down")

        gpus_planned_down = d.pop("gpus_planned_down")

        gpus_reserved = d.pop("gpus_reserved")

        gpus_total = d.pop("gpus_total")

        time = datetime.datetime.fromisoformat(d.pop("time"))

        def _parse_utilization_pct(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        utilization_pct = _parse_utilization_pct(d.pop("utilization_pct", UNSET))

        cluster_timeline_point = cls(
            gpus_allocated=gpus_allocated,
            gpus_down=gpus_down,
            gpus_planned_down=gpus_planned_down,
            gpus_reserved=gpus_reserved,
            gpus_total=gpus_total,
            time=time,
            utilization_pct=utilization_pct,
        )

        cluster_timeline_point.additional_properties = d
        return cluster_timeline_point

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
