from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="NodeBootstrapCreate")


@_attrs_define
class NodeBootstrapCreate:
    """`POST /v1/nodes/bootstrap-tokens`: a token a new worker joins with.

    Attributes:
        one_time (bool | Unset): One join only (default); `false` lets any number of workers join until it expires
            (an autoscaled pool's instance template).
        ttl_minutes (int | None | Unset): Minutes until it expires, 1 to 43200 (30 days; default 60).
    """

    one_time: bool | Unset = UNSET
    ttl_minutes: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        one_time = self.one_time

        ttl_minutes: int | None | Unset
        if isinstance(self.ttl_minutes, Unset):
            ttl_minutes = UNSET
        else:
            ttl_minutes = self.ttl_minutes

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if one_time is not UNSET:
            field_dict["one_time"] = one_time
        if ttl_minutes is not UNSET:
            field_dict["ttl_minutes"] = ttl_minutes

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        one_time = d.pop("one_time", UNSET)

        def _parse_ttl_minutes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ttl_minutes = _parse_ttl_minutes(d.pop("ttl_minutes", UNSET))

        node_bootstrap_create = cls(
            one_time=one_time,
            ttl_minutes=ttl_minutes,
        )

        return node_bootstrap_create
