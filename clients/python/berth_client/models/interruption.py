from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Interruption")


@_attrs_define
class Interruption:
    """An interruption notice of the node's cloud instance, as EC2's instance metadata
    `spot/instance-action` gives it (`{"action": "terminate", "time": "2026-12-01T12:00:00Z"}`).

        Attributes:
            action (str): What will happen to the instance: `terminate`, `stop` or `hibernate`.
            time (datetime.datetime): When it will happen (RFC 3339, UTC).
    """

    action: str
    time: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        action = self.action

        time = self.time.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "action": action,
                "time": time,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        action = d.pop("action")

        time = datetime.datetime.fromisoformat(d.pop("time"))

        interruption = cls(
            action=action,
            time=time,
        )

        interruption.additional_properties = d
        return interruption

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
