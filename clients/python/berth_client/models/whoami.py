from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.token_scope import TokenScope
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.membership import Membership


T = TypeVar("T", bound="Whoami")


@_attrs_define
class Whoami:
    """`GET /v1/whoami`: who the api takes the caller to be, and what the credentials allow.

    Attributes:
        accounts (list[Membership]): The accounts the user belongs to (with whether they coordinate each).
        role (str): `admin`, `operator`, `user` or `node`: the role the credentials carry.
        user (str): The user (a worker's token: `node:NAME`).
        default_account (None | str | Unset): The user's default account, when recorded.
        job_id (int | None | Unset): For a job's own token (`BERTH_TOKEN` inside a job): its job.
        scope (None | TokenScope | Unset):
        token_id (int | None | Unset): The API token used, when the caller used one.
    """

    accounts: list[Membership]
    role: str
    user: str
    default_account: None | str | Unset = UNSET
    job_id: int | None | Unset = UNSET
    scope: None | TokenScope | Unset = UNSET
    token_id: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        accounts = []
        for accounts_item_data in self.accounts:
            accounts_item = accounts_item_data.to_dict()
            accounts.append(accounts_item)

        role = self.role

        user = self.user

        default_account: None | str | Unset
        if isinstance(self.default_account, Unset):
            default_account = UNSET
        else:
            default_account = self.default_account

        job_id: int | None | Unset
        if isinstance(self.job_id, Unset):
            job_id = UNSET
        else:
            job_id = self.job_id

        scope: None | str | Unset
        if isinstance(self.scope, Unset):
            scope = UNSET
        elif isinstance(self.scope, TokenScope):
            scope = self.scope.value
        else:
            scope = self.scope

        token_id: int | None | Unset
        if isinstance(self.token_id, Unset):
            token_id = UNSET
        else:
            token_id = self.token_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "accounts": accounts,
                "role": role,
                "user": user,
            }
        )
        if default_account is not UNSET:
            field_dict["default_account"] = default_account
        if job_id is not UNSET:
            field_dict["job_id"] = job_id
        if scope is not UNSET:
            field_dict["scope"] = scope
        if token_id is not UNSET:
            field_dict["token_id"] = token_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.membership import Membership  # noqa: PLC0415

        d = dict(src_dict)
        accounts = []
        _accounts = d.pop("accounts")
        for accounts_item_data in _accounts:
            accounts_item = Membership.from_dict(accounts_item_data)

            accounts.append(accounts_item)

        role = d.pop("role")

        user = d.pop("user")

        def _parse_default_account(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        default_account = _parse_default_account(d.pop("default_account", UNSET))

        def _parse_job_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        job_id = _parse_job_id(d.pop("job_id", UNSET))

        def _parse_scope(data: object) -> None | TokenScope | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                scope_type_1 = TokenScope(data)

                return scope_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TokenScope | Unset, data)

        scope = _parse_scope(d.pop("scope", UNSET))

        def _parse_token_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        token_id = _parse_token_id(d.pop("token_id", UNSET))

        whoami = cls(
            accounts=accounts,
            role=role,
            user=user,
            default_account=default_account,
            job_id=job_id,
            scope=scope,
            token_id=token_id,
        )

        whoami.additional_properties = d
        return whoami

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
