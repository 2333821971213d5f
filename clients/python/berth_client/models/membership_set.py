from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="MembershipSet")


@_attrs_define
class MembershipSet:
    """`PUT /v1/accounts/{name}/users/{user}`: adds the user to the account or changes the
    membership.

        Attributes:
            coordinator (bool | Unset): Make the user a coordinator of the account.
            default (bool | Unset): Make this the user's default account (a user's first membership becomes the
                default anyway).
    """

    coordinator: bool | Unset = UNSET
    default: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        coordinator = self.coordinator

        default = self.default

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if coordinator is not UNSET:
            field_dict["coordinator"] = coordinator
        if default is not UNSET:
            field_dict["default"] = default

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        coordinator = d.pop("coordinator", UNSET)

        default = d.pop("default", UNSET)

        membership_set = cls(
            coordinator=coordinator,
            default=default,
        )

        return membership_set
