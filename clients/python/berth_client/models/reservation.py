from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.reservation_flag import ReservationFlag
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.reservation_node import ReservationNode


T = TypeVar("T", bound="Reservation")


@_attrs_define
class Reservation:
    """An advance reservation, as `GET /v1/reservations/{name}` shows it. For `DAILY` and
    `WEEKLY` ones, `start_time` and `end_time` are the current or next window.

        Attributes:
            accounts (list[str]): `Accounts`.
            cpus (int): CPUs of the wholly held nodes.
            created_by (str): Who created it.
            duration (int): Seconds.
            end_time (datetime.datetime): The (current or next) window's end.
            flags (list[ReservationFlag]): `Flags`.
            gpus (int): GPUs held (all of a wholly held node's).
            name (str): `ReservationName`.
            node_cnt (int): Nodes held (wholly or in part).
            node_list (str): The nodes as a compressed host list (`node-[1-2]`).
            nodes (list[ReservationNode]): What it holds, node by node (by name).
            start_time (datetime.datetime): The (current or next) window's start.
            state (str): `ACTIVE` inside the window, else `INACTIVE`.
            tres (str): Slurm's `TRES=` (`cpu=8,gres/gpu=8`).
            users (list[str]): `Users`.
            partition (None | str | Unset): `PartitionName`.
    """

    accounts: list[str]
    cpus: int
    created_by: str
    duration: int
    end_time: datetime.datetime
    flags: list[ReservationFlag]
    gpus: int
    name: str
    node_cnt: int
    node_list: str
    nodes: list[ReservationNode]
    start_time: datetime.datetime
    state: str
    tres: str
    users: list[str]
    partition: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        accounts = self.accounts

        cpus = self.cpus

        created_by = self.created_by

        duration = self.duration

        end_time = self.end_time.isoformat()

        flags = []
        for flags_item_data in self.flags:
            flags_item = flags_item_data.value
            flags.append(flags_item)

        gpus = self.gpus

        name = self.name

        node_cnt = self.node_cnt

        node_list = self.node_list

        nodes = []
        for nodes_item_data in self.nodes:
            nodes_item = nodes_item_data.to_dict()
            nodes.append(nodes_item)

        start_time = self.start_time.isoformat()

        state = self.state

        tres = self.tres

        users = self.users

        partition: None | str | Unset
        if isinstance(self.partition, Unset):
            partition = UNSET
        else:
            partition = self.partition

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "accounts": accounts,
                "cpus": cpus,
                "created_by": created_by,
                "duration": duration,
                "end_time": end_time,
                "flags": flags,
                "gpus": gpus,
                "name": name,
                "node_cnt": node_cnt,
                "node_list": node_list,
                "nodes": nodes,
                "start_time": start_time,
                "state": state,
                "tres": tres,
                "users": users,
            }
        )
        if partition is not UNSET:
            field_dict["partition"] = partition

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.reservation_node import ReservationNode  # noqa: PLC0415

        d = dict(src_dict)
        accounts = cast(list[str], d.pop("accounts"))

        cpus = d.pop("cpus")

        created_by = d.pop("created_by")

        duration = d.pop("duration")

        end_time = datetime.datetime.fromisoformat(d.pop("end_time"))

        flags = []
        _flags = d.pop("flags")
        for flags_item_data in _flags:
            flags_item = ReservationFlag(flags_item_data)

            flags.append(flags_item)

        gpus = d.pop("gpus")

        name = d.pop("name")

        node_cnt = d.pop("node_cnt")

        node_list = d.pop("node_list")

        nodes = []
        _nodes = d.pop("nodes")
        for nodes_item_data in _nodes:
            nodes_item = ReservationNode.from_dict(nodes_item_data)

            nodes.append(nodes_item)

        start_time = datetime.datetime.fromisoformat(d.pop("start_time"))

        state = d.pop("state")

        tres = d.pop("tres")

        users = cast(list[str], d.pop("users"))

        def _parse_partition(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        partition = _parse_partition(d.pop("partition", UNSET))

        reservation = cls(
            accounts=accounts,
            cpus=cpus,
            created_by=created_by,
            duration=duration,
            end_time=end_time,
            flags=flags,
            gpus=gpus,
            name=name,
            node_cnt=node_cnt,
            node_list=node_list,
            nodes=nodes,
            start_time=start_time,
            state=state,
            tres=tres,
            users=users,
            partition=partition,
        )

        reservation.additional_properties = d
        return reservation

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
