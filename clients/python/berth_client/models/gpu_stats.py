from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="GpuStats")


@_attrs_define
class GpuStats:
    """One GPU's usage by a job run.

    Attributes:
        avg_utilization_pct (float): Average utilisation over those samples, percent.
        energy_joules (float): Energy used, joules (power integrated between samples).
        index (int): The device index.
        last_sampled_at (datetime.datetime): When the latest sample was taken.
        node (str): The node.
        peak_memory_mib (int): Highest memory in use, MiB.
        samples (int): Samples taken while the job held it.
        memory_used_mib (int | None | Unset): Latest memory in use, MiB.
        power_w (float | None | Unset): Latest power draw, watts.
        temperature_c (int | None | Unset): Latest temperature, °C.
        utilization_pct (int | None | Unset): Latest utilisation, percent.
    """

    avg_utilization_pct: float
    energy_joules: float
    index: int
    last_sampled_at: datetime.datetime
    node: str
    peak_memory_mib: int
    samples: int
    memory_used_mib: int | None | Unset = UNSET
    power_w: float | None | Unset = UNSET
    temperature_c: int | None | Unset = UNSET
    utilization_pct: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        avg_utilization_pct = self.avg_utilization_pct

        energy_joules = self.energy_joules

        index = self.index

        last_sampled_at = self.last_sampled_at.isoformat()

        node = self.node

        peak_memory_mib = self.peak_memory_mib

        samples = self.samples

        memory_used_mib: int | None | Unset
        if isinstance(self.memory_used_mib, Unset):
            memory_used_mib = UNSET
        else:
            memory_used_mib = self.memory_used_mib

        power_w: float | None | Unset
        if isinstance(self.power_w, Unset):
            power_w = UNSET
        else:
            power_w = self.power_w

        temperature_c: int | None | Unset
        if isinstance(self.temperature_c, Unset):
            temperature_c = UNSET
        else:
            temperature_c = self.temperature_c

        utilization_pct: int | None | Unset
        if isinstance(self.utilization_pct, Unset):
            utilization_pct = UNSET
        else:
            utilization_pct = self.utilization_pct

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "avg_utilization_pct": avg_utilization_pct,
                "energy_joules": energy_joules,
                "index": index,
                "last_sampled_at": last_sampled_at,
                "node": node,
                "peak_memory_mib": peak_memory_mib,
                "samples": samples,
            }
        )
        if memory_used_mib is not UNSET:
            field_dict["memory_used_mib"] = memory_used_mib
        if power_w is not UNSET:
            field_dict["power_w"] = power_w
        if temperature_c is not UNSET:
            field_dict["temperature_c"] = temperature_c
        if utilization_pct is not UNSET:
            field_dict["utilization_pct"] = utilization_pct

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        avg_utilization_pct = d.pop("avg_utilization_pct")

        energy_joules = d.pop("energy_joules")

        index = d.pop("index")

        last_sampled_at = datetime.datetime.fromisoformat(d.pop("last_sampled_at"))

        node = d.pop("node")

        peak_memory_mib = d.pop("peak_memory_mib")

        samples = d.pop("samples")

        def _parse_memory_used_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        memory_used_mib = _parse_memory_used_mib(d.pop("memory_used_mib", UNSET))

        def _parse_power_w(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        power_w = _parse_power_w(d.pop("power_w", UNSET))

        def _parse_temperature_c(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        temperature_c = _parse_temperature_c(d.pop("temperature_c", UNSET))

        def _parse_utilization_pct(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        utilization_pct = _parse_utilization_pct(d.pop("utilization_pct", UNSET))

        gpu_stats = cls(
            avg_utilization_pct=avg_utilization_pct,
            energy_joules=energy_joules,
            index=index,
            last_sampled_at=last_sampled_at,
            node=node,
            peak_memory_mib=peak_memory_mib,
            samples=samples,
            memory_used_mib=memory_used_mib,
            power_w=power_w,
            temperature_c=temperature_c,
            utilization_pct=utilization_pct,
        )

        gpu_stats.additional_properties = d
        return gpu_stats

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
