from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="InstanceTypeSpec")


@_attrs_define
class InstanceTypeSpec:
    """One instance type a pool may launch, in the pool's order of preference.

    Attributes:
        cpus (int): Logical CPUs.
        memory (str): Memory (`256G`; MiB without a suffix).
        name (str): The provider's type name (`p5.48xlarge`, `sim-8xh100`).
        gpu_memory (None | str | Unset): Memory of each GPU (`80G`; MiB without a suffix). Default 81920 MiB.
        gpus (str | Unset): Its GPUs as `COUNTxMODEL` (`8xH100`); `""` or `"0"`: none.
        price_per_hour (float | Unset): What one instance costs per hour, in the pool's currency (default 0).
    """

    cpus: int
    memory: str
    name: str
    gpu_memory: None | str | Unset = UNSET
    gpus: str | Unset = UNSET
    price_per_hour: float | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cpus = self.cpus

        memory = self.memory

        name = self.name

        gpu_memory: None | str | Unset
        if isinstance(self.gpu_memory, Unset):
            gpu_memory = UNSET
        else:
            gpu_memory = self.gpu_memory

        gpus = self.gpus

        price_per_hour = self.price_per_hour

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cpus": cpus,
                "memory": memory,
                "name": name,
            }
        )
        if gpu_memory is not UNSET:
            field_dict["gpu_memory"] = gpu_memory
        if gpus is not UNSET:
            field_dict["gpus"] = gpus
        if price_per_hour is not UNSET:
            field_dict["price_per_hour"] = price_per_hour

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cpus = d.pop("cpus")

        memory = d.pop("memory")

        name = d.pop("name")

        def _parse_gpu_memory(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        gpu_memory = _parse_gpu_memory(d.pop("gpu_memory", UNSET))

        gpus = d.pop("gpus", UNSET)

        price_per_hour = d.pop("price_per_hour", UNSET)

        instance_type_spec = cls(
            cpus=cpus,
            memory=memory,
            name=name,
            gpu_memory=gpu_memory,
            gpus=gpus,
            price_per_hour=price_per_hour,
        )

        return instance_type_spec
