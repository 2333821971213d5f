from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PartitionSpec")


@_attrs_define
class PartitionSpec:
    """`PUT /v1/partitions/{name}`: a partition's whole definition, as Slurm's `PartitionName=`
    line in slurm.conf or `scontrol create partition` take it. Absent fields take their
    defaults.

        Attributes:
            allowed_accounts (list[str] | Unset): `AllowAccounts` (existing accounts); empty means every account.
            allowed_qos (list[str] | Unset): `AllowQos` (existing QOS); empty means every QOS.
            def_cpu_per_gpu (int | None | Unset): `DefCpuPerGPU`: CPUs per GPU given to a job that asks GPUs but neither
                `-c/--cpus-per-task` nor `--cpus-per-gpu` (absent: one CPU per task).
            def_mem_per_cpu (int | None | Unset): `DefMemPerCPU`, MiB: memory per CPU given to a job that asks no memory
                (and no
                GPUs where `DefMemPerGPU` is set).
            def_mem_per_gpu (int | None | Unset): `DefMemPerGPU`, MiB: memory per GPU given to a GPU job that asks no
                memory.
            default_time (int | None | Unset): The time limit given to jobs that set none, seconds (`DefaultTime`; absent:
                unlimited).
            is_default (bool | Unset): Jobs that name no partition land here (`Default=YES`); the previous default stops
                being one.
            max_mem_per_node (int | None | Unset): `MaxMemPerNode`, MiB: a job asking more memory on a node is refused at
                submission;
                defaults are capped to it.
            max_nodes (int | None | Unset): `MaxNodes` per job (absent: unlimited).
            max_time (int | None | Unset): The largest time limit a job may ask, seconds (`MaxTime`; absent: unlimited).
            nodes (list[str] | Unset): Member node names (`Nodes`); empty means every node. Names need not be registered
                yet (a node that joins later is a member).
            priority_tier (int | Unset): `PriorityTier`, default 1.
    """

    allowed_accounts: list[str] | Unset = UNSET
    allowed_qos: list[str] | Unset = UNSET
    def_cpu_per_gpu: int | None | Unset = UNSET
    def_mem_per_cpu: int | None | Unset = UNSET
    def_mem_per_gpu: int | None | Unset = UNSET
    default_time: int | None | Unset = UNSET
    is_default: bool | Unset = UNSET
    max_mem_per_node: int | None | Unset = UNSET
    max_nodes: int | None | Unset = UNSET
    max_time: int | None | Unset = UNSET
    nodes: list[str] | Unset = UNSET
    priority_tier: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
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

        is_default = self.is_default

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

        nodes: list[str] | Unset = UNSET
        if not isinstance(self.nodes, Unset):
            nodes = self.nodes

        priority_tier = self.priority_tier

        field_dict: dict[str, Any] = {}

        field_dict.update({})
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
        if is_default is not UNSET:
            field_dict["is_default"] = is_default
        if max_mem_per_node is not UNSET:
            field_dict["max_mem_per_node"] = max_mem_per_node
        if max_nodes is not UNSET:
            field_dict["max_nodes"] = max_nodes
        if max_time is not UNSET:
            field_dict["max_time"] = max_time
        if nodes is not UNSET:
            field_dict["nodes"] = nodes
        if priority_tier is not UNSET:
            field_dict["priority_tier"] = priority_tier

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
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

        is_default = d.pop("is_default", UNSET)

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

        nodes = cast(list[str], d.pop("nodes", UNSET))

        priority_tier = d.pop("priority_tier", UNSET)

        partition_spec = cls(
            allowed_accounts=allowed_accounts,
            allowed_qos=allowed_qos,
            def_cpu_per_gpu=def_cpu_per_gpu,
            def_mem_per_cpu=def_mem_per_cpu,
            def_mem_per_gpu=def_mem_per_gpu,
            default_time=default_time,
            is_default=is_default,
            max_mem_per_node=max_mem_per_node,
            max_nodes=max_nodes,
            max_time=max_time,
            nodes=nodes,
            priority_tier=priority_tier,
        )

        return partition_spec
