from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="NodeUpdate")


@_attrs_define
class NodeUpdate:
    """`PATCH /v1/nodes/{name}`: what an operator configures for a node, as slurm.conf's node
    line (and `scontrol update NodeName=…`) does. A field left out keeps its value; `null`
    clears the configured value, so the worker's reported one applies again (Weight: 1;
    the reserves: 0). Configured values survive the worker's re-registration.

        Attributes:
            core_spec_count (int | None | Unset): Slurm's CoreSpecCount: CPUs kept for the system (fewer than the node's
                CPUs).
            cpus (int | None | Unset): Slurm's CPUs: logical CPUs (sockets × cores × threads), 1 or more.
            features (list[str] | None | Unset): Slurm's Features (`h100`, `ib`): letters, digits, `_`, `.`, `-`; an empty
                list
                configures none.
            mem_spec_limit_mib (int | None | Unset): Slurm's MemSpecLimit, MiB: memory kept for the system (less than
                RealMemory).
            memory_mib (int | None | Unset): Slurm's RealMemory, MiB, 1 or more.
            weight (int | None | Unset): Slurm's Weight: nodes of lower weight are placed first.
    """

    core_spec_count: int | None | Unset = UNSET
    cpus: int | None | Unset = UNSET
    features: list[str] | None | Unset = UNSET
    mem_spec_limit_mib: int | None | Unset = UNSET
    memory_mib: int | None | Unset = UNSET
    weight: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        core_spec_count: int | None | Unset
        if isinstance(self.core_spec_count, Unset):
            core_spec_count = UNSET
        else:
            core_spec_count = self.core_spec_count

        cpus: int | None | Unset
        if isinstance(self.cpus, Unset):
            cpus = UNSET
        else:
            cpus = self.cpus

        features: list[str] | None | Unset
        if isinstance(self.features, Unset):
            features = UNSET
        elif isinstance(self.features, list):
            features = self.features

        else:
            features = self.features

        mem_spec_limit_mib: int | None | Unset
        if isinstance(self.mem_spec_limit_mib, Unset):
            mem_spec_limit_mib = UNSET
        else:
            mem_spec_limit_mib = self.mem_spec_limit_mib

        memory_mib: int | None | Unset
        if isinstance(self.memory_mib, Unset):
            memory_mib = UNSET
        else:
            memory_mib = self.memory_mib

        weight: int | None | Unset
        if isinstance(self.weight, Unset):
            weight = UNSET
        else:
            weight = self.weight

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if core_spec_count is not UNSET:
            field_dict["core_spec_count"] = core_spec_count
        if cpus is not UNSET:
            field_dict["cpus"] = cpus
        if features is not UNSET:
            field_dict["features"] = features
        if mem_spec_limit_mib is not UNSET:
            field_dict["mem_spec_limit_mib"] = mem_spec_limit_mib
        if memory_mib is not UNSET:
            field_dict["memory_mib"] = memory_mib
        if weight is not UNSET:
            field_dict["weight"] = weight

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_core_spec_count(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        core_spec_count = _parse_core_spec_count(d.pop("core_spec_count", UNSET))

        def _parse_cpus(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cpus = _parse_cpus(d.pop("cpus", UNSET))

        def _parse_features(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                features_type_0 = cast(list[str], data)

                return features_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        features = _parse_features(d.pop("features", UNSET))

        def _parse_mem_spec_limit_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        mem_spec_limit_mib = _parse_mem_spec_limit_mib(d.pop("mem_spec_limit_mib", UNSET))

        def _parse_memory_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        memory_mib = _parse_memory_mib(d.pop("memory_mib", UNSET))

        def _parse_weight(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        weight = _parse_weight(d.pop("weight", UNSET))

        node_update = cls(
            core_spec_count=core_spec_count,
            cpus=cpus,
            features=features,
            mem_spec_limit_mib=mem_spec_limit_mib,
            memory_mib=memory_mib,
            weight=weight,
        )

        return node_update
