from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ClusterUsageRow")


@_attrs_define
class ClusterUsageRow:
    """Cluster utilisation of some GPUs over a window, GPU time in the report's unit
    (sreport's `cluster Utilization` columns).

        Attributes:
            allocated (float): Held by job allocations (exact, from the allocations).
            down (float): Not allocated, on DOWN, DRAINING or DRAINED nodes (sampled each minute).
            idle (float): The rest: `reported − allocated − down − planned_down − reserved`, at least 0.
            planned_down (float): Not allocated, on powered-down cloud nodes (Slurm's `PLND Down`; sampled).
            reported (float): Every GPU for every sampled minute.
            reserved (float): Not allocated, held by an active reservation (Slurm's `Planned`; sampled).
            samples (int): Minutes sampled (per model; the total sums them).
            gpu_model (None | str | Unset): The GPU model (absent on the total).
    """

    allocated: float
    down: float
    idle: float
    planned_down: float
    reported: float
    reserved: float
    samples: int
    gpu_model: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allocated = self.allocated

        down = self.down

        idle = self.idle

        planned_down = self.planned_down

        reported = self.reported

        reserved = self.reserved

        samples = self.samples

        gpu_model: None | str | Unset
        if isinstance(self.gpu_model, Unset):
            gpu_model = UNSET
        else:
            gpu_model = self.gpu_model

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "allocated": allocated,
                "down": down,
                "idle": idle,
                "planned_down": planned_down,
                "reported": reported,
                "reserved": reserved,
                "samples": samples,
            }
        )
        if gpu_model is not UNSET:
            field_dict["gpu_model"] = gpu_model

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        allocated = d.pop("allocated")

        down = d.pop("down")

        idle = d.pop("idle")

        planned_down = d.pop("planned_down")

        reported = d.pop("reported")

        reserved = d.pop("reserved")

        samples = d.pop("samples")

        def _parse_gpu_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        gpu_model = _parse_gpu_model(d.pop("gpu_model", UNSET))

        cluster_usage_row = cls(
            allocated=allocated,
            down=down,
            idle=idle,
            planned_down=planned_down,
            reported=reported,
            reserved=reserved,
            samples=samples,
            gpu_model=gpu_model,
        )

        cluster_usage_row.additional_properties = d
        return cluster_usage_row

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
