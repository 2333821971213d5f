from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.user_role import UserRole
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.membership import Membership


T = TypeVar("T", bound="User")


@_attrs_define
class User:
    """A user.

    Attributes:
        memberships (list[Membership]): The accounts the user belongs to.
        name (str): The user name.
        role (UserRole): A role a user row may hold (`node` is for workers' tokens only).
        default_account (None | str | Unset): The account jobs are charged to when a submission names none.
    """

    memberships: list[Membership]
    name: str
    role: UserRole
    default_account: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        memberships = []
        for memberships_item_data in self.memberships:
            memberships_item = memberships_item_data.to_dict()
            memberships.append(memberships_item)

        name = self.name

        role = self.role.value

        default_account: None | str | Unset
        if isinstance(self.default_account, Unset):
            default_account = UNSET
        else:
            default_account = self.default_account

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "memberships": memberships,
                "name": name,
                "role": role,
            }
        )
        if default_account is not UNSET:
            field_dict["default_account"] = default_account

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.membership import Membership  # noqa: PLC0415

        d = dict(src_dict)
        memberships = []
        _memberships = d.pop("memberships")
        for memberships_item_data in _memberships:
            memberships_item = Membership.from_dict(memberships_item_data)

            memberships.append(memberships_item)

        name = d.pop("name")

        role = UserRole(d.pop("role"))

        def _parse_default_account(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        default_account = _parse_default_account(d.pop("default_account", UNSET))

        user = cls(
            memberships=memberships,
            name=name,
            role=role,
            default_account=default_account,
        )

        user.additional_properties = d
        return user

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
