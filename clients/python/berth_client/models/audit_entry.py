from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="AuditEntry")


@_attrs_define
class AuditEntry:
    """One audited call.

    Attributes:
        at (datetime.datetime): When it was answered.
        id (int): Id (increasing).
        method (str): HTTP method.
        path (str): Path, without the query.
        status (int): HTTP status of the answer.
        actor (None | str | Unset): The caller; absent when the credentials did not verify.
        remote_addr (None | str | Unset): The peer's address.
        request_id (None | str | Unset): The request id.
        role (None | str | Unset): The caller's role.
        token_id (int | None | Unset): The API token used, when one was.
    """

    at: datetime.datetime
    id: int
    method: str
    path: str
    status: int
    actor: None | str | Unset = UNSET
    remote_addr: None | str | Unset = UNSET
    request_id: None | str | Unset = UNSET
    role: None | str | Unset = UNSET
    token_id: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        id = self.id

        method = self.method

        path = self.path

        status = self.status

        actor: None | str | Unset
        if isinstance(self.actor, Unset):
            actor = UNSET
        else:
            actor = self.actor

        remote_addr: None | str | Unset
        if isinstance(self.remote_addr, Unset):
            remote_addr = UNSET
        else:
            remote_addr = self.remote_addr

        request_id: None | str | Unset
        if isinstance(self.request_id, Unset):
            request_id = UNSET
        else:
            request_id = self.request_id

        role: None | str | Unset
        if isinstance(self.role, Unset):
            role = UNSET
        else:
            role = self.role

        token_id: int | None | Unset
        if isinstance(self.token_id, Unset):
            token_id = UNSET
        else:
            token_id = self.token_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "id": id,
                "method": method,
                "path": path,
                "status": status,
            }
        )
        if actor is not UNSET:
            field_dict["actor"] = actor
        if remote_addr is not UNSET:
            field_dict["remote_addr"] = remote_addr
        if request_id is not UNSET:
            field_dict["request_id"] = request_id
        if role is not UNSET:
            field_dict["role"] = role
        if token_id is not UNSET:
            field_dict["token_id"] = token_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        id = d.pop("id")

        method = d.pop("method")

        path = d.pop("path")

        status = d.pop("status")

        def _parse_actor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        actor = _parse_actor(d.pop("actor", UNSET))

        def _parse_remote_addr(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        remote_addr = _parse_remote_addr(d.pop("remote_addr", UNSET))

        def _parse_request_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        request_id = _parse_request_id(d.pop("request_id", UNSET))

        def _parse_role(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        role = _parse_role(d.pop("role", UNSET))

        def _parse_token_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        token_id = _parse_token_id(d.pop("token_id", UNSET))

        audit_entry = cls(
            at=at,
            id=id,
            method=method,
            path=path,
            status=status,
            actor=actor,
            remote_addr=remote_addr,
            request_id=request_id,
            role=role,
            token_id=token_id,
        )

        audit_entry.additional_properties = d
        return audit_entry

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
