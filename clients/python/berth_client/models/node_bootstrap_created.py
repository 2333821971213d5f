from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="NodeBootstrapCreated")


@_attrs_define
class NodeBootstrapCreated:
    """`POST /v1/nodes/bootstrap-tokens` answer: the token, shown this once.

    Attributes:
        expires_at (datetime.datetime): Refused after this.
        id (int): Id.
        one_time (bool): Whether it joins one worker only.
        token (str): The bootstrap token (`berth_boot_…`), for `berth worker --bootstrap-token`.
    """

    expires_at: datetime.datetime
    id: int
    one_time: bool
    token: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        expires_at = self.expires_at.isoformat()

        id = self.id

        one_time = self.one_time

        token = self.token

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "expires_at": expires_at,
                "id": id,
                "one_time": one_time,
                "token": token,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))

        id = d.pop("id")

        one_time = d.pop("one_time")

        token = d.pop("token")

        node_bootstrap_created = cls(
            expires_at=expires_at,
            id=id,
            one_time=one_time,
            token=token,
        )

        node_bootstrap_created.additional_properties = d
        return node_bootstrap_created

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
