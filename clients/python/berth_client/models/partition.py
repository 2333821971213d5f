from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Partition")


@_attrs_define
class Partition:
    """A partition, as `GET /v1/partitions` shows it.

    Attributes:
        is_default (bool): Whether jobs that name no partition land here.
        name (str): The name.
        nodes (list[str]): Member nodes; empty means every node.
        total_gpus (int): GPUs currently in it.
        total_nodes (int): Nodes currently in it.
        allowed_accounts (list[str] | Unset): `AllowAccounts`; empty means every account.
        allowed_qos (list[str] | Unset): `AllowQos`; empty means every QOS.
        def_cpu_per_gpu (int | None | Unset): `DefCpuPerGPU`: CPUs per GPU for jobs that ask GPUs but no CPUs (`None`:
            one per
            task).
        def_mem_per_cpu (int | None | Unset): `DefMemPerCPU`, MiB: memory per CPU for jobs that ask no memory.
        def_mem_per_gpu (int | None | Unset): `DefMemPerGPU`, MiB: memory per GPU for GPU jobs that ask no memory.
        default_time (int | None | Unset): The time limit given to jobs that set none, seconds (`None`: unlimited).
        max_mem_per_node (int | None | Unset): `MaxMemPerNode`, MiB: the most memory a job may have on one node.
        max_nodes (int | None | Unset): `MaxNodes` per job (`None`: unlimited).
        max_time (int | None | Unset): The largest time limit a job may ask, seconds (`None`: unlimited).
        priority_tier (int | Unset): `PriorityTier`: the partition factor of the multifactor priority.
    """

    is_default: bool
    name: str
    nodes: list[str]
    total_gpus: int
    total_nodes: int
    allowed_accounts: list[str] | Unset = UNSET
    allowed_qos: list[str] | Unset = UNSET
    def_cpu_per_gpu: int | None | Unset = UNSET
    def_mem_per_cpu: int | None | Unset = UNSET
    def_mem_per_gpu: int | None | Unset = UNSET
    default_time: int | None | Unset = UNSET
    max_mem_per_node: int | None | Unset = UNSET
    max_nodes: int | None | Unset = UNSET
    max_time: int | None | Unset = UNSET
    priority_tier: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        is_default = self.is_default

        name = self.name

        nodes = self.nodes

        total_gpus = self.total_gpus

        total_nodes = self.total_nodes

        allowed_accounts: list[str] | Unset = UNSET
        if not isinstance(self.allowed_accounts, Unset):
            allowed_accounts = self.allowed_accounts

        allowed_qos: list[str] | Unset = UNSET
        if not isinstance(self.allowed_qos, Unset):
            allowed_qos = self.allowed_qos

        def_cpu_per_gpu: int | None | Unset
        if isinstance(self.def_cpu_per_gpu, Unset):
            def_cpu_per_gpu = UNSET
        else:
            def_cpu_per_gpu = self.def_cpu_per_gpu

        def_mem_per_cpu: int | None | Unset
        if isinstance(self.def_mem_per_cpu, Unset):
            def_mem_per_cpu = UNSET
        else:
            def_mem_per_cpu = self.def_mem_per_cpu

        def_mem_per_gpu: int | None | Unset
        if isinstance(self.def_mem_per_gpu, Unset):
            def_mem_per_gpu = UNSET
        else:
            def_mem_per_gpu = self.def_mem_per_gpu

        default_time: int | None | Unset
        if isinstance(self.default_time, Unset):
            default_time = UNSET
        else:
            default_time = self.default_time

        max_mem_per_node: int | None | Unset
        if isinstance(self.max_mem_per_node, Unset):
            max_mem_per_node = UNSET
        else:
            max_mem_per_node = self.max_mem_per_node

        max_nodes: int | None | Unset
        if isinstance(self.max_nodes, Unset):
            max_nodes = UNSET
        else:
            max_nodes = self.max_nodes

        max_time: int | None | Unset
        if isinstance(self.max_time, Unset):
            max_time = UNSET
        else:
            max_time = self.max_time

        priority_tier = self.priority_tier

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "is_default": is_default,
                "name": name,
                "nodes": nodes,
                "total_gpus": total_gpus,
                "total_nodes": total_nodes,
            }
        )
        if allowed_accounts is not UNSET:
            field_dict["allowed_accounts"] = allowed_accounts
        if allowed_qos is not UNSET:
            field_dict["allowed_qos"] = allowed_qos
        if def_cpu_per_gpu is not UNSET:
            field_dict["def_cpu_per_gpu"] = def_cpu_per_gpu
        if def_mem_per_cpu is not UNSET:
            field_dict["def_mem_per_cpu"] = def_mem_per_cpu
        if def_mem_per_gpu is not UNSET:
            field_dict["def_mem_per_gpu"] = def_mem_per_gpu
        if default_time is not UNSET:
            field_dict["default_time"] = default_time
        if max_mem_per_node is not UNSET:
            field_dict["max_mem_per_node"] = max_mem_per_node
        if max_nodes is not UNSET:
            field_dict["max_nodes"] = max_nodes
        if max_time is not UNSET:
            field_dict["max_time"] = max_time
        if priority_tier is not UNSET:
            field_dict["priority_tier"] = priority_tier

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        is_default = d.pop("is_default")

        name = d.pop("name")

        nodes = cast(list[str], d.pop("nodes"))

        total_gpus = d.pop("total_gpus")

        total_nodes = d.pop("total_nodes")

        allowed_accounts = cast(list[str], d.pop("allowed_accounts", UNSET))

        allowed_qos = cast(list[str], d.pop("allowed_qos", UNSET))

        def _parse_def_cpu_per_gpu(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        def_cpu_per_gpu = _parse_def_cpu_per_gpu(d.pop("def_cpu_per_gpu", UNSET))

        def _parse_def_mem_per_cpu(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        def_mem_per_cpu = _parse_def_mem_per_cpu(d.pop("def_mem_per_cpu", UNSET))

        def _parse_def_mem_per_gpu(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        def_mem_per_gpu = _parse_def_mem_per_gpu(d.pop("def_mem_per_gpu", UNSET))

        def _parse_default_time(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        default_time = _parse_default_time(d.pop("default_time", UNSET))

        def _parse_max_mem_per_node(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_mem_per_node = _parse_max_mem_per_node(d.pop("max_mem_per_node", UNSET))

        def _parse_max_nodes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_nodes = _parse_max_nodes(d.pop("max_nodes", UNSET))

        def _parse_max_time(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_time = _parse_max_time(d.pop("max_time", UNSET))

        priority_tier = d.pop("priority_tier", UNSET)

        partition = cls(
            is_default=is_default,
            name=name,
            nodes=nodes,
            total_gpus=total_gpus,
            total_nodes=total_nodes,
            allowed_accounts=allowed_accounts,
            allowed_qos=allowed_qos,
            def_cpu_per_gpu=def_cpu_per_gpu,
            def_mem_per_cpu=def_mem_per_cpu,
            def_mem_per_gpu=def_mem_per_gpu,
            default_time=default_time,
            max_mem_per_node=max_mem_per_node,
            max_nodes=max_nodes,
            max_time=max_time,
            priority_tier=priority_tier,
        )

        partition.additional_properties = d
        return partition

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
