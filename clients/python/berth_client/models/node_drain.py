from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="NodeDrain")


@_attrs_define
class NodeDrain:
    """`POST /v1/nodes/{name}/drain`: why the node is drained (scontrol's `Reason=`, required
    as in Slurm).

        Attributes:
            reason (str): The reason shown by `berth nodes` and `sinfo -R` (1-256 characters).
    """

    reason: str

    def to_dict(self) -> dict[str, Any]:
        reason = self.reason

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "reason": reason,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reason = d.pop("reason")

        node_drain = cls(
            reason=reason,
        )

        return node_drain
