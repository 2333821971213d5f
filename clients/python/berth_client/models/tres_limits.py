from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="TresLimits")


@_attrs_define
class TresLimits:
    """A TRES limit set (Slurm's `gres/gpu=8,cpu=64,node=2`); an absent key is no limit.

    Attributes:
        cpu (int | None | Unset): CPUs.
        gpu (int | None | Unset): GPUs (`gres/gpu`).
        node (int | None | Unset): Nodes.
    """

    cpu: int | None | Unset = UNSET
    gpu: int | None | Unset = UNSET
    node: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cpu: int | None | Unset
        if isinstance(self.cpu, Unset):
            cpu = UNSET
        else:
            cpu = self.cpu

        gpu: int | None | Unset
        if isinstance(self.gpu, Unset):
            gpu = UNSET
        else:
            gpu = self.gpu

        node: int | None | Unset
        if isinstance(self.node, Unset):
            node = UNSET
        else:
            node = self.node

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if cpu is not UNSET:
            field_dict["cpu"] = cpu
        if gpu is not UNSET:
            field_dict["gpu"] = gpu
        if node is not UNSET:
            field_dict["node"] = node

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_cpu(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cpu = _parse_cpu(d.pop("cpu", UNSET))

        def _parse_gpu(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        gpu = _parse_gpu(d.pop("gpu", UNSET))

        def _parse_node(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        node = _parse_node(d.pop("node", UNSET))

        tres_limits = cls(
            cpu=cpu,
            gpu=gpu,
            node=node,
        )

        return tres_limits
