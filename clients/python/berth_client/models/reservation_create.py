from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.reservation_flag import ReservationFlag
from ..types import UNSET, Unset

T = TypeVar("T", bound="ReservationCreate")


@_attrs_define
class ReservationCreate:
    """`POST /v1/reservations`: an advance reservation, as Slurm's `scontrol create
    reservation` takes it. Exactly one of `nodes`, `node_cnt` or `gpus` says what it holds;
    at least one of `users` or `accounts` says who may use it; `end_time` or `duration`
    says when it ends.

        Attributes:
            name (str): `ReservationName`: 1-64 letters, digits, `_`, `.` or `-`, not starting with `-`.
            accounts (list[str] | Unset): `Accounts`: accounts whose jobs may use it.
            duration (None | str | Unset): `Duration`, Slurm's time format: `minutes`, `hours:minutes:seconds`,
                `days-hours[:minutes[:seconds]]`.
            end_time (None | str | Unset): `EndTime`, in the forms of `start_time`.
            flags (list[ReservationFlag] | Unset): `Flags`.
            gpus (int | None | Unset): `TRES=gres/gpu:N`: this many GPUs, picked at creation (on as few nodes as they fit).
            node_cnt (int | None | Unset): `NodeCnt`: this many whole nodes, picked at creation (idle ones first).
            nodes (None | str | Unset): `Nodes`: a host list (`node-[1-2]`) or `ALL`.
            partition (None | str | Unset): `PartitionName`: `node_cnt`, `gpus` and `ALL` pick from this partition's nodes.
            start_time (None | str | Unset): `StartTime`: `now`, `now+N[minutes|hours|days…]`, `YYYY-MM-DDTHH:MM[:SS]` (UTC)
                or
                RFC 3339; absent: now.
            users (list[str] | Unset): `Users`: user names whose jobs may use it.
    """

    name: str
    accounts: list[str] | Unset = UNSET
    duration: None | str | Unset = UNSET
    end_time: None | str | Unset = UNSET
    flags: list[ReservationFlag] | Unset = UNSET
    gpus: int | None | Unset = UNSET
    node_cnt: int | None | Unset = UNSET
    nodes: None | str | Unset = UNSET
    partition: None | str | Unset = UNSET
    start_time: None | str | Unset = UNSET
    users: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        accounts: list[str] | Unset = UNSET
        if not isinstance(self.accounts, Unset):
            accounts = self.accounts

        duration: None | str | Unset
        if isinstance(self.duration, Unset):
            duration = UNSET
        else:
            duration = self.duration

        end_time: None | str | Unset
        if isinstance(self.end_time, Unset):
            end_time = UNSET
        else:
            end_time = self.end_time

        flags: list[str] | Unset = UNSET
        if not isinstance(self.flags, Unset):
            flags = []
            for flags_item_data in self.flags:
                flags_item = flags_item_data.value
                flags.append(flags_item)

        gpus: int | None | Unset
        if isinstance(self.gpus, Unset):
            gpus = UNSET
        else:
            gpus = self.gpus

        node_cnt: int | None | Unset
        if isinstance(self.node_cnt, Unset):
            node_cnt = UNSET
        else:
            node_cnt = self.node_cnt

        nodes: None | str | Unset
        if isinstance(self.nodes, Unset):
            nodes = UNSET
        else:
            nodes = self.nodes

        partition: None | str | Unset
        if isinstance(self.partition, Unset):
            partition = UNSET
        else:
            partition = self.partition

        start_time: None | str | Unset
        if isinstance(self.start_time, Unset):
            start_time = UNSET
        else:
            start_time = self.start_time

        users: list[str] | Unset = UNSET
        if not isinstance(self.users, Unset):
            users = self.users

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if accounts is not UNSET:
            field_dict["accounts"] = accounts
        if duration is not UNSET:
            field_dict["duration"] = duration
        if end_time is not UNSET:
            field_dict["end_time"] = end_time
        if flags is not UNSET:
            field_dict["flags"] = flags
        if gpus is not UNSET:
            field_dict["gpus"] = gpus
        if node_cnt is not UNSET:
            field_dict["node_cnt"] = node_cnt
        if nodes is not UNSET:
            field_dict["nodes"] = nodes
        if partition is not UNSET:
            field_dict["partition"] = partition
        if start_time is not UNSET:
            field_dict["start_time"] = start_time
        if users is not UNSET:
            field_dict["users"] = users

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        accounts = cast(list[str], d.pop("accounts", UNSET))

        def _parse_duration(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        duration = _parse_duration(d.pop("duration", UNSET))

        def _parse_end_time(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        end_time = _parse_end_time(d.pop("end_time", UNSET))

        _flags = d.pop("flags", UNSET)
        flags: list[ReservationFlag] | Unset = UNSET
        if _flags is not UNSET:
            flags = []
            for flags_item_data in _flags:
                flags_item = ReservationFlag(flags_item_data)

                flags.append(flags_item)

        def _parse_gpus(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        gpus = _parse_gpus(d.pop("gpus", UNSET))

        def _parse_node_cnt(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        node_cnt = _parse_node_cnt(d.pop("node_cnt", UNSET))

        def _parse_nodes(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        nodes = _parse_nodes(d.pop("nodes", UNSET))

        def _parse_partition(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        partition = _parse_partition(d.pop("partition", UNSET))

        def _parse_start_time(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        start_time = _parse_start_time(d.pop("start_time", UNSET))

        users = cast(list[str], d.pop("users", UNSET))

        reservation_create = cls(
            name=name,
            accounts=accounts,
            duration=duration,
            end_time=end_time,
            flags=flags,
            gpus=gpus,
            node_cnt=node_cnt,
            nodes=nodes,
            partition=partition,
            start_time=start_time,
            users=users,
        )

        return reservation_create
