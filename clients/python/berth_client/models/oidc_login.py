from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.console_token import ConsoleToken
from ..types import UNSET, Unset

T = TypeVar("T", bound="OidcLogin")


@_attrs_define
class OidcLogin:
    """An issuer the console may log in through (`GET /v1/oidc/issuers`): what a browser
    needs for the authorization code flow with PKCE. Public: no secret is in it.

        Attributes:
            client_id (str): The console's client id there.
            issuer (str): The issuer (`iss`); its discovery document is `<issuer>/.well-known/openid-configuration`.
            scopes (str): The scopes to ask for, space-separated.
            token (ConsoleToken): Which token of an issuer's token answer the console uses as its bearer token.
            authorization_endpoint (None | str | Unset): The authorization endpoint, when configured (else read from
                discovery).
            token_endpoint (None | str | Unset): The token endpoint, when configured (else read from discovery).
    """

    client_id: str
    issuer: str
    scopes: str
    token: ConsoleToken
    authorization_endpoint: None | str | Unset = UNSET
    token_endpoint: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        client_id = self.client_id

        issuer = self.issuer

        scopes = self.scopes

        token = self.token.value

        authorization_endpoint: None | str | Unset
        if isinstance(self.authorization_endpoint, Unset):
            authorization_endpoint = UNSET
        else:
            authorization_endpoint = self.authorization_endpoint

        token_endpoint: None | str | Unset
        if isinstance(self.token_endpoint, Unset):
            token_endpoint = UNSET
        else:
            token_endpoint = self.token_endpoint

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "client_id": client_id,
                "issuer": issuer,
                "scopes": scopes,
                "token": token,
            }
        )
        if authorization_endpoint is not UNSET:
            field_dict["authorization_endpoint"] = authorization_endpoint
        if token_endpoint is not UNSET:
            field_dict["token_endpoint"] = token_endpoint

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        client_id = d.pop("client_id")

        issuer = d.pop("issuer")

        scopes = d.pop("scopes")

        token = ConsoleToken(d.pop("token"))

        def _parse_authorization_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        authorization_endpoint = _parse_authorization_endpoint(d.pop("authorization_endpoint", UNSET))

        def _parse_token_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        token_endpoint = _parse_token_endpoint(d.pop("token_endpoint", UNSET))

        oidc_login = cls(
            client_id=client_id,
            issuer=issuer,
            scopes=scopes,
            token=token,
            authorization_endpoint=authorization_endpoint,
            token_endpoint=token_endpoint,
        )

        oidc_login.additional_properties = d
        return oidc_login

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
