from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.token_scope import TokenScope
from ..types import UNSET, Unset

T = TypeVar("T", bound="ApiTokenCreate")


@_attrs_define
class ApiTokenCreate:
    """`POST /v1/tokens`.

    Attributes:
        name (str): What the token is for (`ci-main`), 1 to 200 characters.
        expires_in_days (int | None | Unset): Days until it expires, 1 to 365 (default 90).
        scope (TokenScope | Unset): What an API token may do, on top of its owner's role.
    """

    name: str
    expires_in_days: int | None | Unset = UNSET
    scope: TokenScope | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        expires_in_days: int | None | Unset
        if isinstance(self.expires_in_days, Unset):
            expires_in_days = UNSET
        else:
            expires_in_days = self.expires_in_days

        scope: str | Unset = UNSET
        if not isinstance(self.scope, Unset):
            scope = self.scope.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if expires_in_days is not UNSET:
            field_dict["expires_in_days"] = expires_in_days
        if scope is not UNSET:
            field_dict["scope"] = scope

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        def _parse_expires_in_days(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        expires_in_days = _parse_expires_in_days(d.pop("expires_in_days", UNSET))

        _scope = d.pop("scope", UNSET)
        scope: TokenScope | Unset
        if isinstance(_scope, Unset):
            scope = UNSET
        else:
            scope = TokenScope(_scope)

        api_token_create = cls(
            name=name,
            expires_in_days=expires_in_days,
            scope=scope,
        )

        return api_token_create
