from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.gpu_info import GpuInfo


T = TypeVar("T", bound="NodeRegister")


@_attrs_define
class NodeRegister:
    """`POST /v1/nodes/register`: a worker announces its node and inventory. Registering
    again (after a restart) updates the inventory.

        Attributes:
            cpus (int): CPUs.
            gpus (list[GpuInfo]): GPUs.
            hostname (str): The host's name, for information.
            memory_mib (int): Memory, MiB.
            name (str): The node name, unique in the cluster.
            cpu_cores (list[int] | Unset): Per CPU id (`0 .. cpus`), the core it is on (cores numbered over the whole node:
                the hardware threads of one core share a number); empty when unknown (every CPU
                a core of its own). On a node whose cores have several threads the scheduler
                gives jobs whole cores ([`crate::cores`]).
            cpu_domains (list[int] | Unset): Per CPU id (`0 .. cpus`), its topology domain, numbered as GPU domains are
                ([`GpuInfo`]'s `domain`: the NUMA node); empty when unknown. The scheduler gives a
                job CPUs of its GPUs' domains first.
            cpu_sockets (list[int] | Unset): Per CPU id (`0 .. cpus`), its socket (physical package, numbered from 0); empty
                when unknown. Shown as Slurm's `Sockets=`.
            features (list[str] | Unset): Features for `--constraint`.
            weight (int | None | Unset): Slurm's Weight, when the worker declares one (operators' configured weight wins).
    """

    cpus: int
    gpus: list[GpuInfo]
    hostname: str
    memory_mib: int
    name: str
    cpu_cores: list[int] | Unset = UNSET
    cpu_domains: list[int] | Unset = UNSET
    cpu_sockets: list[int] | Unset = UNSET
    features: list[str] | Unset = UNSET
    weight: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cpus = self.cpus

        gpus = []
        for gpus_item_data in self.gpus:
            gpus_item = gpus_item_data.to_dict()
            gpus.append(gpus_item)

        hostname = self.hostname

        memory_mib = self.memory_mib

        name = self.name

        cpu_cores: list[int] | Unset = UNSET
        if not isinstance(self.cpu_cores, Unset):
            cpu_cores = self.cpu_cores

        cpu_domains: list[int] | Unset = UNSET
        if not isinstance(self.cpu_domains, Unset):
            cpu_domains = self.cpu_domains

        cpu_sockets: list[int] | Unset = UNSET
        if not isinstance(self.cpu_sockets, Unset):
            cpu_sockets = self.cpu_sockets

        features: list[str] | Unset = UNSET
        if not isinstance(self.features, Unset):
            features = self.features

        weight: int | None | Unset
        if isinstance(self.weight, Unset):
            weight = UNSET
        else:
            weight = self.weight

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cpus": cpus,
                "gpus": gpus,
                "hostname": hostname,
                "memory_mib": memory_mib,
                "name": name,
            }
        )
        if cpu_cores is not UNSET:
            field_dict["cpu_cores"] = cpu_cores
        if cpu_domains is not UNSET:
            field_dict["cpu_domains"] = cpu_domains
        if cpu_sockets is not UNSET:
            field_dict["cpu_sockets"] = cpu_sockets
        if features is not UNSET:
            field_dict["features"] = features
        if weight is not UNSET:
            field_dict["weight"] = weight

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.gpu_info import GpuInfo  # noqa: PLC0415

        d = dict(src_dict)
        cpus = d.pop("cpus")

        gpus = []
        _gpus = d.pop("gpus")
        for gpus_item_data in _gpus:
            gpus_item = GpuInfo.from_dict(gpus_item_data)

            gpus.append(gpus_item)

        hostname = d.pop("hostname")

        memory_mib = d.pop("memory_mib")

        name = d.pop("name")

        cpu_cores = cast(list[int], d.pop("cpu_cores", UNSET))

        cpu_domains = cast(list[int], d.pop("cpu_domains", UNSET))

        cpu_sockets = cast(list[int], d.pop("cpu_sockets", UNSET))

        features = cast(list[str], d.pop("features", UNSET))

        def _parse_weight(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        weight = _parse_weight(d.pop("weight", UNSET))

        node_register = cls(
            cpus=cpus,
            gpus=gpus,
            hostname=hostname,
            memory_mib=memory_mib,
            name=name,
            cpu_cores=cpu_cores,
            cpu_domains=cpu_domains,
            cpu_sockets=cpu_sockets,
            features=features,
            weight=weight,
        )

        return node_register
