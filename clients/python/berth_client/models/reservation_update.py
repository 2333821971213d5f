from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.reservation_flag import ReservationFlag
from ..types import UNSET, Unset

T = TypeVar("T", bound="ReservationUpdate")


@_attrs_define
class ReservationUpdate:
    """`PATCH /v1/reservations/{name}` (`scontrol update ReservationName=…`): the fields given
    replace the reservation's; the rest stay. A new `start_time` without `end_time` or
    `duration` keeps the duration; new `nodes`, `node_cnt` or `gpus` pick the held
    resources again.

        Attributes:
            accounts (list[str] | None | Unset): `Accounts`.
            duration (None | str | Unset): `Duration`.
            end_time (None | str | Unset): `EndTime`.
            flags (list[ReservationFlag] | None | Unset): `Flags`.
            gpus (int | None | Unset): `TRES=gres/gpu:N`.
            node_cnt (int | None | Unset): `NodeCnt`.
            nodes (None | str | Unset): `Nodes`.
            partition (None | str | Unset): `PartitionName`.
            start_time (None | str | Unset): `StartTime`, as in [`ReservationCreate::start_time`].
            users (list[str] | None | Unset): `Users`.
    """

    accounts: list[str] | None | Unset = UNSET
    duration: None | str | Unset = UNSET
    end_time: None | str | Unset = UNSET
    flags: list[ReservationFlag] | None | Unset = UNSET
    gpus: int | None | Unset = UNSET
    node_cnt: int | None | Unset = UNSET
    nodes: None | str | Unset = UNSET
    partition: None | str | Unset = UNSET
    start_time: None | str | Unset = UNSET
    users: list[str] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        accounts: list[str] | None | Unset
        if isinstance(self.accounts, Unset):
            accounts = UNSET
        elif isinstance(self.accounts, list):
            accounts = self.accounts

        else:
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

        flags: list[str] | None | Unset
        if isinstance(self.flags, Unset):
            flags = UNSET
        elif isinstance(self.flags, list):
            flags = []
            for flags_type_0_item_data in self.flags:
                flags_type_0_item = flags_type_0_item_data.value
                flags.append(flags_type_0_item)

        else:
            flags = self.flags

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

        users: list[str] | None | Unset
        if isinstance(self.users, Unset):
            users = UNSET
        elif isinstance(self.users, list):
            users = self.users

        else:
            users = self.users

        field_dict: dict[str, Any] = {}

        field_dict.update({})
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

        def _parse_accounts(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                accounts_type_0 = cast(list[str], data)

                return accounts_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        accounts = _parse_accounts(d.pop("accounts", UNSET))

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

        def _parse_flags(data: object) -> list[ReservationFlag] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                flags_type_0 = []
                _flags_type_0 = data
                for flags_type_0_item_data in _flags_type_0:
                    flags_type_0_item = ReservationFlag(flags_type_0_item_data)

                    flags_type_0.append(flags_type_0_item)

                return flags_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ReservationFlag] | None | Unset, data)

        flags = _parse_flags(d.pop("flags", UNSET))

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

        def _parse_users(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                users_type_0 = cast(list[str], data)

                return users_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        users = _parse_users(d.pop("users", UNSET))

        reservation_update = cls(
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

        return reservation_update
