from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.power_action import PowerAction

T = TypeVar("T", bound="NodePower")


@_attrs_define
class NodePower:
    """The body of `POST /v1/nodes/{name}/power`.

    Attributes:
        action (PowerAction): `POST /v1/nodes/{name}/power`: Slurm's `scontrol update NodeName=… State=POWER_UP |
            POWER_DOWN | POWER_DOWN_FORCE` for a pool node.
    """

    action: PowerAction

    def to_dict(self) -> dict[str, Any]:
        action = self.action.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "action": action,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        action = PowerAction(d.pop("action"))

        node_power = cls(
            action=action,
        )

        return node_power
