from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="FairshareRow")


@_attrs_define
class FairshareRow:
    """One association's fairshare, as `sshare` shows it.

    Attributes:
        account (str): The account.
        fairshare (float): The factor `2^(−U/S)`.
        norm_shares (float): Normalized shares `S`, 0..=1.
        norm_usage (float): Normalized usage `U`, 0..=1.
        raw_usage (float): Decayed usage (billing-seconds).
        user (str): The user.
    """

    account: str
    fairshare: float
    norm_shares: float
    norm_usage: float
    raw_usage: float
    user: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        account = self.account

        fairshare = self.fairshare

        norm_shares = self.norm_shares

        norm_usage = self.norm_usage

        raw_usage = self.raw_usage

        user = self.user

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "account": account,
                "fairshare": fairshare,
                "norm_shares": norm_shares,
                "norm_usage": norm_usage,
                "raw_usage": raw_usage,
                "user": user,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        account = d.pop("account")

        fairshare = d.pop("fairshare")

        norm_shares = d.pop("norm_shares")

        norm_usage = d.pop("norm_usage")

        raw_usage = d.pop("raw_usage")

        user = d.pop("user")

        fairshare_row = cls(
            account=account,
            fairshare=fairshare,
            norm_shares=norm_shares,
            norm_usage=norm_usage,
            raw_usage=raw_usage,
            user=user,
        )

        fairshare_row.additional_properties = d
        return fairshare_row

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
