from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="GpuSeriesPoint")


@_attrs_define
class GpuSeriesPoint:
    """One point of a GPU's time series: the samples of one time bucket.

    Attributes:
        memory_used_mib (int): Highest memory in use in the bucket, MiB.
        time (datetime.datetime): The bucket's start (RFC 3339, UTC).
        utilization_pct (float): Mean utilisation in the bucket, percent.
        power_w (float | None | Unset): Mean power draw in the bucket, watts (`None` when the GPU reports none).
    """

    memory_used_mib: int
    time: datetime.datetime
    utilization_pct: float
    power_w: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        memory_used_mib = self.memory_used_mib

        time = self.time.isoformat()

        utilization_pct = self.utilization_pct

        power_w: float | None | Unset
        if isinstance(self.power_w, Unset):
            power_w = UNSET
        else:
            power_w = self.power_w

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "memory_used_mib": memory_used_mib,
                "time": time,
                "utilization_pct": utilization_pct,
            }
        )
        if power_w is not UNSET:
            field_dict["power_w"] = power_w

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        memory_used_mib = d.pop("memory_used_mib")

        time = datetime.datetime.fromisoformat(d.pop("time"))

        utilization_pct = d.pop("utilization_pct")

        def _parse_power_w(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        power_w = _parse_power_w(d.pop("power_w", UNSET))

        gpu_series_point = cls(
            memory_used_mib=memory_used_mib,
            time=time,
            utilization_pct=utilization_pct,
            power_w=power_w,
        )

        gpu_series_point.additional_properties = d
        return gpu_series_point

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
