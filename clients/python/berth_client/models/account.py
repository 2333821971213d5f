from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.tres_limits import TresLimits


T = TypeVar("T", bound="Account")


@_attrs_define
class Account:
    """An account.

    Attributes:
        name (str): The account name.
        shares (int): Fairshare shares.
        grp_tres (TresLimits | Unset): A TRES limit set (Slurm's `gres/gpu=8,cpu=64,node=2`); an absent key is no limit.
        parent (None | str | Unset): The parent account; absent only for `root`.
    """

    name: str
    shares: int
    grp_tres: TresLimits | Unset = UNSET
    parent: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        shares = self.shares

        grp_tres: dict[str, Any] | Unset = UNSET
        if not isinstance(self.grp_tres, Unset):
            grp_tres = self.grp_tres.to_dict()

        parent: None | str | Unset
        if isinstance(self.parent, Unset):
            parent = UNSET
        else:
            parent = self.parent

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "shares": shares,
            }
        )
        if grp_tres is not UNSET:
            field_dict["grp_tres"] = grp_tres
        if parent is not UNSET:
            field_dict["parent"] = parent

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tres_limits import TresLimits  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        shares = d.pop("shares")

        _grp_tres = d.pop("grp_tres", UNSET)
        grp_tres: TresLimits | Unset
        if isinstance(_grp_tres, Unset):
            grp_tres = UNSET
        else:
            grp_tres = TresLimits.from_dict(_grp_tres)

        def _parse_parent(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        parent = _parse_parent(d.pop("parent", UNSET))

        account = cls(
            name=name,
            shares=shares,
            grp_tres=grp_tres,
            parent=parent,
        )

        account.additional_properties = d
        return account

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
