from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.gpu_kind import GpuKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="GpuInfo")


@_attrs_define
class GpuInfo:
    """A GPU (or a MIG instance or shard of one) as a node reports it: a device the
    scheduler places jobs on.

        Attributes:
            index (int): The device index on the node (what `CUDA_VISIBLE_DEVICES` names).
            memory_mib (int): Total memory, MiB.
            model (str): The model name (`NVIDIA H100 80GB HBM3`).
            uuid (str): The device UUID (`GPU-…`).
            domain (int | None | Unset): Topology domain: GPUs of the node with the same number are close (the NUMA node of
                the GPU's PCI device under NVML; `--gpus 8xH100/2` domains when simulated). The
                scheduler gives a job GPUs of one domain when it can. Absent when unknown.
            kind (GpuKind | Unset): What kind of device a node offers for GPU requests.
            parent (int | None | Unset): For a MIG instance or a shard: the index of the physical GPU it is part of (whose
                `/dev/nvidiaN` the job may open).
    """

    index: int
    memory_mib: int
    model: str
    uuid: str
    domain: int | None | Unset = UNSET
    kind: GpuKind | Unset = UNSET
    parent: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index = self.index

        memory_mib = self.memory_mib

        model = self.model

        uuid = self.uuid

        domain: int | None | Unset
        if isinstance(self.domain, Unset):
            domain = UNSET
        else:
            domain = self.domain

        kind: str | Unset = UNSET
        if not isinstance(self.kind, Unset):
            kind = self.kind.value

        parent: int | None | Unset
        if isinstance(self.parent, Unset):
            parent = UNSET
        else:
            parent = self.parent

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index": index,
                "memory_mib": memory_mib,
                "model": model,
                "uuid": uuid,
            }
        )
        if domain is not UNSET:
            field_dict["domain"] = domain
        if kind is not UNSET:
            field_dict["kind"] = kind
        if parent is not UNSET:
            field_dict["parent"] = parent

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        index = d.pop("index")

        memory_mib = d.pop("memory_mib")

        model = d.pop("model")

        uuid = d.pop("uuid")

        def _parse_domain(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        domain = _parse_domain(d.pop("domain", UNSET))

        _kind = d.pop("kind", UNSET)
        kind: GpuKind | Unset
        if isinstance(_kind, Unset):
            kind = UNSET
        else:
            kind = GpuKind(_kind)

        def _parse_parent(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        parent = _parse_parent(d.pop("parent", UNSET))

        gpu_info = cls(
            index=index,
            memory_mib=memory_mib,
            model=model,
            uuid=uuid,
            domain=domain,
            kind=kind,
            parent=parent,
        )

        gpu_info.additional_properties = d
        return gpu_info

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
