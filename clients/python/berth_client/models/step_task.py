from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="StepTask")


@_attrs_define
class StepTask:
    """One task of a step, as `GET /v1/jobs/{id}/steps/{step}` shows it.

    Attributes:
        gpus (list[int]): Physical GPU indices it sees.
        local_id (int): `SLURM_LOCALID`.
        node (str): The node it runs on.
        node_index (int): `SLURM_NODEID`: the node's index in the job's allocation.
        task_id (int): `SLURM_PROCID`.
        ended_at (datetime.datetime | None | Unset): When it ended.
        exit_code (int | None | Unset): Its exit code.
        exit_signal (int | None | Unset): The signal that ended it.
        message (None | str | Unset): Why it could not be started, when it could not.
        started_at (datetime.datetime | None | Unset): When its worker started it.
    """

    gpus: list[int]
    local_id: int
    node: str
    node_index: int
    task_id: int
    ended_at: datetime.datetime | None | Unset = UNSET
    exit_code: int | None | Unset = UNSET
    exit_signal: int | None | Unset = UNSET
    message: None | str | Unset = UNSET
    started_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gpus = self.gpus

        local_id = self.local_id

        node = self.node

        node_index = self.node_index

        task_id = self.task_id

        ended_at: None | str | Unset
        if isinstance(self.ended_at, Unset):
            ended_at = UNSET
        elif isinstance(self.ended_at, datetime.datetime):
            ended_at = self.ended_at.isoformat()
        else:
            ended_at = self.ended_at

        exit_code: int | None | Unset
        if isinstance(self.exit_code, Unset):
            exit_code = UNSET
        else:
            exit_code = self.exit_code

        exit_signal: int | None | Unset
        if isinstance(self.exit_signal, Unset):
            exit_signal = UNSET
        else:
            exit_signal = self.exit_signal

        message: None | str | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message

        started_at: None | str | Unset
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        elif isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gpus": gpus,
                "local_id": local_id,
                "node": node,
                "node_index": node_index,
                "task_id": task_id,
            }
        )
        if ended_at is not UNSET:
            field_dict["ended_at"] = ended_at
        if exit_code is not UNSET:
            field_dict["exit_code"] = exit_code
        if exit_signal is not UNSET:
            field_dict["exit_signal"] = exit_signal
        if message is not UNSET:
            field_dict["message"] = message
        if started_at is not UNSET:
            field_dict["started_at"] = started_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        gpus = cast(list[int], d.pop("gpus"))

        local_id = d.pop("local_id")

        node = d.pop("node")

        node_index = d.pop("node_index")

        task_id = d.pop("task_id")

        def _parse_ended_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ended_at_type_0 = datetime.datetime.fromisoformat(data)

                return ended_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        ended_at = _parse_ended_at(d.pop("ended_at", UNSET))

        def _parse_exit_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exit_code = _parse_exit_code(d.pop("exit_code", UNSET))

        def _parse_exit_signal(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exit_signal = _parse_exit_signal(d.pop("exit_signal", UNSET))

        def _parse_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        def _parse_started_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        started_at = _parse_started_at(d.pop("started_at", UNSET))

        step_task = cls(
            gpus=gpus,
            local_id=local_id,
            node=node,
            node_index=node_index,
            task_id=task_id,
            ended_at=ended_at,
            exit_code=exit_code,
            exit_signal=exit_signal,
            message=message,
            started_at=started_at,
        )

        step_task.additional_properties = d
        return step_task

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
