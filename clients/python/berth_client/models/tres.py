from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.tres_gpu_models import TresGpuModels


T = TypeVar("T", bound="Tres")


@_attrs_define
class Tres:
    """Trackable resources (Slurm's TRES) of a run, over all its nodes.

    Attributes:
        billing (int): Billing units: the CPUs (Slurm's default `TRESBillingWeights`).
        cpu (int): CPUs.
        gpu_models (TresGpuModels): GPUs by model (lower case, as Slurm's GRES types: `h100`).
        gpus (int): GPUs (or GPU shards for `--gres=shard`).
        nodes (int): Nodes.
        mem_mib (int | None | Unset): Memory, MiB (absent: a share of each node, not a fixed size).
    """

    billing: int
    cpu: int
    gpu_models: TresGpuModels
    gpus: int
    nodes: int
    mem_mib: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        billing = self.billing

        cpu = self.cpu

        gpu_models = self.gpu_models.to_dict()

        gpus = self.gpus

        nodes = self.nodes

        mem_mib: int | None | Unset
        if isinstance(self.mem_mib, Unset):
            mem_mib = UNSET
        else:
            mem_mib = self.mem_mib

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "billing": billing,
                "cpu": cpu,
                "gpu_models": gpu_models,
                "gpus": gpus,
                "nodes": nodes,
            }
        )
        if mem_mib is not UNSET:
            field_dict["mem_mib"] = mem_mib

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tres_gpu_models import TresGpuModels  # noqa: PLC0415

        d = dict(src_dict)
        billing = d.pop("billing")

        cpu = d.pop("cpu")

        gpu_models = TresGpuModels.from_dict(d.pop("gpu_models"))

        gpus = d.pop("gpus")

        nodes = d.pop("nodes")

        def _parse_mem_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        mem_mib = _parse_mem_mib(d.pop("mem_mib", UNSET))

        tres = cls(
            billing=billing,
            cpu=cpu,
            gpu_models=gpu_models,
            gpus=gpus,
            nodes=nodes,
            mem_mib=mem_mib,
        )

        tres.additional_properties = d
        return tres

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
