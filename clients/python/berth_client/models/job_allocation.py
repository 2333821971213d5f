from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="JobAllocation")


@_attrs_define
class JobAllocation:
    """One node's share of a job's allocation.

    Attributes:
        gpus (list[int]): Physical GPU indices on that node.
        node (str): The node's name.
        cpus (list[int] | Unset): Logical CPU ids on that node (Slurm's `CPU_IDs`); empty: not placed by CPU.
        memory_mib (int | Unset): Memory on that node, MiB (Slurm's `Mem`); 0: not placed by memory.
    """

    gpus: list[int]
    node: str
    cpus: list[int] | Unset = UNSET
    memory_mib: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gpus = self.gpus

        node = self.node

        cpus: list[int] | Unset = UNSET
        if not isinstance(self.cpus, Unset):
            cpus = self.cpus

        memory_mib = self.memory_mib

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gpus": gpus,
                "node": node,
            }
        )
        if cpus is not UNSET:
            field_dict["cpus"] = cpus
        if memory_mib is not UNSET:
            field_dict["memory_mib"] = memory_mib

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        gpus = cast(list[int], d.pop("gpus"))

        node = d.pop("node")

        cpus = cast(list[int], d.pop("cpus", UNSET))

        memory_mib = d.pop("memory_mib", UNSET)

        job_allocation = cls(
            gpus=gpus,
            node=node,
            cpus=cpus,
            memory_mib=memory_mib,
        )

        job_allocation.additional_properties = d
        return job_allocation

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
