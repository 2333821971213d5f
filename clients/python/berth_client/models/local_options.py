from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="LocalOptions")


@_attrs_define
class LocalOptions:
    """Local provider settings of a pool.

    Attributes:
        boot_delay (int | Unset): Seconds a worker waits before it starts, as an instance boots (default 0).
        capacity_errors (list[str] | Unset): Instance types (`type`, or `type/zone`) that fail with
            `InsufficientInstanceCapacity`,
            to exercise fallback. The provider also reads `inject.toml` in its state directory
            at every launch for the same list, changeable while it runs.
    """

    boot_delay: int | Unset = UNSET
    capacity_errors: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        boot_delay = self.boot_delay

        capacity_errors: list[str] | Unset = UNSET
        if not isinstance(self.capacity_errors, Unset):
            capacity_errors = self.capacity_errors

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if boot_delay is not UNSET:
            field_dict["boot_delay"] = boot_delay
        if capacity_errors is not UNSET:
            field_dict["capacity_errors"] = capacity_errors

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        boot_delay = d.pop("boot_delay", UNSET)

        capacity_errors = cast(list[str], d.pop("capacity_errors", UNSET))

        local_options = cls(
            boot_delay=boot_delay,
            capacity_errors=capacity_errors,
        )

        return local_options
