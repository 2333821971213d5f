from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="WarningSignal")


@_attrs_define
class WarningSignal:
    """A parsed `--signal`.

    Attributes:
        batch_only (bool): `B:`: the batch shell only (else every task of every step).
        seconds (int): Seconds before the time limit.
        signal (int): The signal number (Linux numbering: `USR1` is 10).
    """

    batch_only: bool
    seconds: int
    signal: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        batch_only = self.batch_only

        seconds = self.seconds

        signal = self.signal

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "batch_only": batch_only,
                "seconds": seconds,
                "signal": signal,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        batch_only = d.pop("batch_only")

        seconds = d.pop("seconds")

        signal = d.pop("signal")

        warning_signal = cls(
            batch_only=batch_only,
            seconds=seconds,
            signal=signal,
        )

        warning_signal.additional_properties = d
        return warning_signal

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
