from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.market import Market
from ..models.node_state import NodeState
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.gpu import Gpu


T = TypeVar("T", bound="Node")


@_attrs_define
class Node:
    """A node, as `GET /v1/nodes` shows it.

    Attributes:
        cpus (int): CPUs (Slurm's CPUTot): the configured value, else what the worker reported.
        features (list[str]): Features for `--constraint` (Slurm's AvailableFeatures).
        gpus (list[Gpu]): Its GPUs by index.
        gpus_allocated (int): GPUs held by live allocations.
        memory_mib (int): Memory (Slurm's RealMemory), MiB: the configured value, else what the worker
            reported.
        name (str): The node name (`node-1`).
        partitions (list[str]): Partitions it belongs to.
        state (NodeState): A node's state, as `sinfo` names it. IDLE, MIXED and ALLOCATED are derived from its
            allocations; the others are set by an operator or by failure detection.
        core_spec_count (int | Unset): Slurm's CoreSpecCount: CPUs kept for the system.
        cores_per_socket (int | Unset): Slurm's CoresPerSocket (1 when its worker reported no layout).
        cpus_allocated (int | Unset): CPUs held by running jobs (Slurm's CPUAlloc).
        cpus_effective (int | Unset): CPUs jobs may use (Slurm's CPUEfctv): `cpus` less `core_spec_count`.
        instance_id (None | str | Unset): The provider's id of its instance, while it has one.
        instance_type (None | str | Unset): Its instance's type (`p5.48xlarge`).
        last_heartbeat (datetime.datetime | None | Unset): The last time the worker synced.
        market (Market | None | Unset):
        mem_spec_limit_mib (int | Unset): Slurm's MemSpecLimit, MiB: memory kept for the system.
        memory_allocated_mib (int | Unset): Memory held by running jobs, MiB (Slurm's AllocMem).
        memory_effective_mib (int | Unset): Memory jobs may use, MiB: `memory_mib` less `mem_spec_limit_mib`.
        pool (None | str | Unset): The cloud pool whose node slot it is (absent: a static node).
        reason (None | str | Unset): Why it is drained or down.
        reason_time (datetime.datetime | None | Unset): When the reason was set (sinfo's `%H`).
        reason_user (None | str | Unset): Who set the reason (Slurm's `REASON_UID`, sinfo's `%u`): the operator who
            drained
            the node, or `slurm` for the reasons Berth sets itself (`Not responding`, `Kill task
            failed`, a GPU fault …).
        sockets (int | Unset): Slurm's Sockets: the sockets its worker reported, else `cpus` (what Slurm shows
            for a node configured with CPUs alone).
        threads_per_core (int | Unset): Slurm's ThreadsPerCore: hardware threads per core (1 when its worker reported no
            layout). Where it is above 1, jobs are given whole cores.
        weight (int | Unset): Slurm's Weight: nodes of lower weight are placed first (default 1).
        zone (None | str | Unset): Its instance's availability zone.
    """

    cpus: int
    features: list[str]
    gpus: list[Gpu]
    gpus_allocated: int
    memory_mib: int
    name: str
    partitions: list[str]
    state: NodeState
    core_spec_count: int | Unset = UNSET
    cores_per_socket: int | Unset = UNSET
    cpus_allocated: int | Unset = UNSET
    cpus_effective: int | Unset = UNSET
    instance_id: None | str | Unset = UNSET
    instance_type: None | str | Unset = UNSET
    last_heartbeat: datetime.datetime | None | Unset = UNSET
    market: Market | None | Unset = UNSET
    mem_spec_limit_mib: int | Unset = UNSET
    memory_allocated_mib: int | Unset = UNSET
    memory_effective_mib: int | Unset = UNSET
    pool: None | str | Unset = UNSET
    reason: None | str | Unset = UNSET
    reason_time: datetime.datetime | None | Unset = UNSET
    reason_user: None | str | Unset = UNSET
    sockets: int | Unset = UNSET
    threads_per_core: int | Unset = UNSET
    weight: int | Unset = UNSET
    zone: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cpus = self.cpus

        features = self.features

        gpus = []
        for gpus_item_data in self.gpus:
            gpus_item = gpus_item_data.to_dict()
            gpus.append(gpus_item)

        gpus_allocated = self.gpus_allocated

        memory_mib = self.memory_mib

        name = self.name

        partitions = self.partitions

        state = self.state.value

        core_spec_count = self.core_spec_count

        cores_per_socket = self.cores_per_socket

        cpus_allocated = self.cpus_allocated

        cpus_effective = self.cpus_effective

        instance_id: None | str | Unset
        if isinstance(self.instance_id, Unset):
            instance_id = UNSET
        else:
            instance_id = self.instance_id

        instance_type: None | str | Unset
        if isinstance(self.instance_type, Unset):
            instance_type = UNSET
        else:
            instance_type = self.instance_type

        last_heartbeat: None | str | Unset
        if isinstance(self.last_heartbeat, Unset):
            last_heartbeat = UNSET
        elif isinstance(self.last_heartbeat, datetime.datetime):
            last_heartbeat = self.last_heartbeat.isoformat()
        else:
            last_heartbeat = self.last_heartbeat

        market: None | str | Unset
        if isinstance(self.market, Unset):
            market = UNSET
        elif isinstance(self.market, Market):
            market = self.market.value
        else:
            market = self.market

        mem_spec_limit_mib = self.mem_spec_limit_mib

        memory_allocated_mib = self.memory_allocated_mib

        memory_effective_mib = self.memory_effective_mib

        pool: None | str | Unset
        if isinstance(self.pool, Unset):
            pool = UNSET
        else:
            pool = self.pool

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        reason_time: None | str | Unset
        if isinstance(self.reason_time, Unset):
            reason_time = UNSET
        elif isinstance(self.reason_time, datetime.datetime):
            reason_time = self.reason_time.isoformat()
        else:
            reason_time = self.reason_time

        reason_user: None | str | Unset
        if isinstance(self.reason_user, Unset):
            reason_user = UNSET
        else:
            reason_user = self.reason_user

        sockets = self.sockets

        threads_per_core = self.threads_per_core

        weight = self.weight

        zone: None | str | Unset
        if isinstance(self.zone, Unset):
            zone = UNSET
        else:
            zone = self.zone

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cpus": cpus,
                "features": features,
                "gpus": gpus,
                "gpus_allocated": gpus_allocated,
                "memory_mib": memory_mib,
                "name": name,
                "partitions": partitions,
                "state": state,
            }
        )
        if core_spec_count is not UNSET:
            field_dict["core_spec_count"] = core_spec_count
        if cores_per_socket is not UNSET:
            field_dict["cores_per_socket"] = cores_per_socket
        if cpus_allocated is not UNSET:
            field_dict["cpus_allocated"] = cpus_allocated
        if cpus_effective is not UNSET:
            field_dict["cpus_effective"] = cpus_effective
        if instance_id is not UNSET:
            field_dict["instance_id"] = instance_id
        if instance_type is not UNSET:
            field_dict["instance_type"] = instance_type
        if last_heartbeat is not UNSET:
            field_dict["last_heartbeat"] = last_heartbeat
        if market is not UNSET:
            field_dict["market"] = market
        if mem_spec_limit_mib is not UNSET:
            field_dict["mem_spec_limit_mib"] = mem_spec_limit_mib
        if memory_allocated_mib is not UNSET:
            field_dict["memory_allocated_mib"] = memory_allocated_mib
        if memory_effective_mib is not UNSET:
            field_dict["memory_effective_mib"] = memory_effective_mib
        if pool is not UNSET:
            field_dict["pool"] = pool
        if reason is not UNSET:
            field_dict["reason"] = reason
        if reason_time is not UNSET:
            field_dict["reason_time"] = reason_time
        if reason_user is not UNSET:
            field_dict["reason_user"] = reason_user
        if sockets is not UNSET:
            field_dict["sockets"] = sockets
        if threads_per_core is not UNSET:
            field_dict["threads_per_core"] = threads_per_core
        if weight is not UNSET:
            field_dict["weight"] = weight
        if zone is not UNSET:
            field_dict["zone"] = zone

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.gpu import Gpu  # noqa: PLC0415

        d = dict(src_dict)
        cpus = d.pop("cpus")

        features = cast(list[str], d.pop("features"))

        gpus = []
        _gpus = d.pop("gpus")
        for gpus_item_data in _gpus:
            gpus_item = Gpu.from_dict(gpus_item_data)

            gpus.append(gpus_item)

        gpus_allocated = d.pop("gpus_allocated")

        memory_mib = d.pop("memory_mib")

        name = d.pop("name")

        partitions = cast(list[str], d.pop("partitions"))

        state = NodeState(d.pop("state"))

        core_spec_count = d.pop("core_spec_count", UNSET)

        cores_per_socket = d.pop("cores_per_socket", UNSET)

        cpus_allocated = d.pop("cpus_allocated", UNSET)

        cpus_effective = d.pop("cpus_effective", UNSET)

        def _parse_instance_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instance_id = _parse_instance_id(d.pop("instance_id", UNSET))

        def _parse_instance_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instance_type = _parse_instance_type(d.pop("instance_type", UNSET))

        def _parse_last_heartbeat(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_heartbeat_type_0 = datetime.datetime.fromisoformat(data)

                return last_heartbeat_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        last_heartbeat = _parse_last_heartbeat(d.pop("last_heartbeat", UNSET))

        def _parse_market(data: object) -> Market | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                market_type_1 = Market(data)

                return market_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Market | None | Unset, data)

        market = _parse_market(d.pop("market", UNSET))

        mem_spec_limit_mib = d.pop("mem_spec_limit_mib", UNSET)

        memory_allocated_mib = d.pop("memory_allocated_mib", UNSET)

        memory_effective_mib = d.pop("memory_effective_mib", UNSET)

        def _parse_pool(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        pool = _parse_pool(d.pop("pool", UNSET))

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        def _parse_reason_time(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reason_time_type_0 = datetime.datetime.fromisoformat(data)

                return reason_time_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        reason_time = _parse_reason_time(d.pop("reason_time", UNSET))

        def _parse_reason_user(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason_user = _parse_reason_user(d.pop("reason_user", UNSET))

        sockets = d.pop("sockets", UNSET)

        threads_per_core = d.pop("threads_per_core", UNSET)

        weight = d.pop("weight", UNSET)

        def _parse_zone(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        zone = _parse_zone(d.pop("zone", UNSET))

        node = cls(
            cpus=cpus,
            features=features,
            gpus=gpus,
            gpus_allocated=gpus_allocated,
            memory_mib=memory_mib,
            name=name,
            partitions=partitions,
            state=state,
            core_spec_count=core_spec_count,
            cores_per_socket=cores_per_socket,
            cpus_allocated=cpus_allocated,
            cpus_effective=cpus_effective,
            instance_id=instance_id,
            instance_type=instance_type,
            last_heartbeat=last_heartbeat,
            market=market,
            mem_spec_limit_mib=mem_spec_limit_mib,
            memory_allocated_mib=memory_allocated_mib,
            memory_effective_mib=memory_effective_mib,
            pool=pool,
            reason=reason,
            reason_time=reason_time,
            reason_user=reason_user,
            sockets=sockets,
            threads_per_core=threads_per_core,
            weight=weight,
            zone=zone,
        )

        node.additional_properties = d
        return node

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
