from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.gpu_kind import GpuKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="Gpu")


@_attrs_define
class Gpu:
    """A GPU in a node view, with its latest sample and holder.

    Attributes:
        index (int): The device index.
        memory_mib (int): Total memory, MiB.
        model (str): The model name.
        uuid (str): The device UUID.
        allocated (bool | Unset): A job holds it (whether or not the caller may see which).
        domain (int | None | Unset): Topology domain (see [`GpuInfo::domain`]), when the node reports one.
        job_id (int | None | Unset): The job holding it, when the caller may see that job (admins and operators see
            every job; a user their own and their coordinated accounts'). Another tenant's
            job is left out, as it is everywhere: an invisible job answers like an absent one.
        kind (GpuKind | Unset): What kind of device a node offers for GPU requests.
        memory_used_mib (int | None | Unset): Latest memory in use, MiB (left out like `utilization_pct`).
        parent (int | None | Unset): The physical GPU of a MIG instance or shard.
        utilization_pct (int | None | Unset): Latest utilisation, percent (left out, like `job_id`, while a job the
            caller may
            not see holds it).
    """

    index: int
    memory_mib: int
    model: str
    uuid: str
    allocated: bool | Unset = UNSET
    domain: int | None | Unset = UNSET
    job_id: int | None | Unset = UNSET
    kind: GpuKind | Unset = UNSET
    memory_used_mib: int | None | Unset = UNSET
    parent: int | None | Unset = UNSET
    utilization_pct: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index = self.index

        memory_mib = self.memory_mib

        model = self.model

        uuid = self.uuid

        allocated = self.allocated

        domain: int | None | Unset
        if isinstance(self.domain, Unset):
            domain = UNSET
        else:
            domain = self.domain

        job_id: int | None | Unset
        if isinstance(self.job_id, Unset):
            job_id = UNSET
        else:
            job_id = self.job_id

        kind: str | Unset = UNSET
        if not isinstance(self.kind, Unset):
            kind = self.kind.value

        memory_used_mib: int | None | Unset
        if isinstance(self.memory_used_mib, Unset):
            memory_used_mib = UNSET
        else:
            memory_used_mib = self.memory_used_mib

        parent: int | None | Unset
        if isinstance(self.parent, Unset):
            parent = UNSET
        else:
            parent = self.parent

        utilization_pct: int | None | Unset
        if isinstance(self.utilization_pct, Unset):
            utilization_pct = UNSET
        else:
            utilization_pct = self.utilization_pct

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
        if allocated is not UNSET:
            field_dict["allocated"] = allocated
        if domain is not UNSET:
            field_dict["domain"] = domain
        if job_id is not UNSET:
            field_dict["job_id"] = job_id
        if kind is not UNSET:
            field_dict["kind"] = kind
        if memory_used_mib is not UNSET:
            field_dict["memory_used_mib"] = memory_used_mib
        if parent is not UNSET:
            field_dict["parent"] = parent
        if utilization_pct is not UNSET:
            field_dict["utilization_pct"] = utilization_pct

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        index = d.pop("index")

        memory_mib = d.pop("memory_mib")

        model = d.pop("model")

        uuid = d.pop("uuid")

        allocated = d.pop("allocated", UNSET)

        def _parse_domain(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        domain = _parse_domain(d.pop("domain", UNSET))

        def _parse_job_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        job_id = _parse_job_id(d.pop("job_id", UNSET))

        _kind = d.pop("kind", UNSET)
        kind: GpuKind | Unset
        if isinstance(_kind, Unset):
            kind = UNSET
        else:
            kind = GpuKind(_kind)

        def _parse_memory_used_mib(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        memory_used_mib = _parse_memory_used_mib(d.pop("memory_used_mib", UNSET))

        def _parse_parent(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        parent = _parse_parent(d.pop("parent", UNSET))

        def _parse_utilization_pct(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        utilization_pct = _parse_utilization_pct(d.pop("utilization_pct", UNSET))

        gpu = cls(
            index=index,
            memory_mib=memory_mib,
            model=model,
            uuid=uuid,
            allocated=allocated,
            domain=domain,
            job_id=job_id,
            kind=kind,
            memory_used_mib=memory_used_mib,
            parent=parent,
            utilization_pct=utilization_pct,
        )

        gpu.additional_properties = d
        return gpu

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
