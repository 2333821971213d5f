from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PoolCooldown")


@_attrs_define
class PoolCooldown:
    """An (instance type, zone) set aside.

    Attributes:
        error (str): The provider's error.
        instance_type (str): The instance type.
        until (datetime.datetime): Set aside until then.
        zone (str): The zone (`""`: any).
    """

    error: str
    instance_type: str
    until: datetime.datetime
    zone: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        error = self.error

        instance_type = self.instance_type

        until = self.until.isoformat()

        zone = self.zone

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "error": error,
                "instance_type": instance_type,
                "until": until,
                "zone": zone,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        error = d.pop("error")

        instance_type = d.pop("instance_type")

        until = datetime.datetime.fromisoformat(d.pop("until"))

        zone = d.pop("zone")

        pool_cooldown = cls(
            error=error,
            instance_type=instance_type,
            until=until,
            zone=zone,
        )

        pool_cooldown.additional_properties = d
        return pool_cooldown

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
