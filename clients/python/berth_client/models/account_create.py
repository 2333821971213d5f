from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.tres_limits import TresLimits


T = TypeVar("T", bound="AccountCreate")


@_attrs_define
class AccountCreate:
    """`POST /v1/accounts`.

    Attributes:
        name (str): The account name (letters, digits, `_.-`).
        grp_tres (None | TresLimits | Unset):
        parent (None | str | Unset): The parent account (default `root`): organisation → team → project.
        shares (int | None | Unset): Fairshare shares relative to its siblings (default 1).
    """

    name: str
    grp_tres: None | TresLimits | Unset = UNSET
    parent: None | str | Unset = UNSET
    shares: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.tres_limits import TresLimits  # noqa: PLC0415

        name = self.name

        grp_tres: dict[str, Any] | None | Unset
        if isinstance(self.grp_tres, Unset):
            grp_tres = UNSET
        elif isinstance(self.grp_tres, TresLimits):
            grp_tres = self.grp_tres.to_dict()
        else:
            grp_tres = self.grp_tres

        parent: None | str | Unset
        if isinstance(self.parent, Unset):
            parent = UNSET
        else:
            parent = self.parent

        shares: int | None | Unset
        if isinstance(self.shares, Unset):
            shares = UNSET
        else:
            shares = self.shares

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if grp_tres is not UNSET:
            field_dict["grp_tres"] = grp_tres
        if parent is not UNSET:
            field_dict["parent"] = parent
        if shares is not UNSET:
            field_dict["shares"] = shares

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tres_limits import TresLimits  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        def _parse_grp_tres(data: object) -> None | TresLimits | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grp_tres_type_1 = TresLimits.from_dict(data)

                return grp_tres_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TresLimits | Unset, data)

        grp_tres = _parse_grp_tres(d.pop("grp_tres", UNSET))

        def _parse_parent(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        parent = _parse_parent(d.pop("parent", UNSET))

        def _parse_shares(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        shares = _parse_shares(d.pop("shares", UNSET))

        account_create = cls(
            name=name,
            grp_tres=grp_tres,
            parent=parent,
            shares=shares,
        )

        return account_create
