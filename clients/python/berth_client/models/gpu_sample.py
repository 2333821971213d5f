from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="GpuSample")


@_attrs_define
class GpuSample:
    """A GPU sample, taken by the worker.

    Attributes:
        index (int): The device index.
        memory_used_mib (int): Memory in use, MiB.
        power_w (float): Power draw, watts.
        temperature_c (int): Temperature, degrees Celsius.
        utilization_pct (int): Utilisation, percent.
    """

    index: int
    memory_used_mib: int
    power_w: float
    temperature_c: int
    utilization_pct: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index = self.index

        memory_used_mib = self.memory_used_mib

        power_w = self.power_w

        temperature_c = self.temperature_c

        utilization_pct = self.utilization_pct

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index": index,
                "memory_used_mib": memory_used_mib,
                "power_w": power_w,
                "temperature_c": temperature_c,
                "utilization_pct": utilization_pct,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        index = d.pop("index")

        memory_used_mib = d.pop("memory_used_mib")

        power_w = d.pop("power_w")

        temperature_c = d.pop("temperature_c")

        utilization_pct = d.pop("utilization_pct")

        gpu_sample = cls(
            index=index,
            memory_used_mib=memory_used_mib,
            power_w=power_w,
            temperature_c=temperature_c,
            utilization_pct=utilization_pct,
        )

        gpu_sample.additional_properties = d
        return gpu_sample

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
