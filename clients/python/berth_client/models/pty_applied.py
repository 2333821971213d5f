from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.step_task_key import StepTaskKey


T = TypeVar("T", bound="PtyApplied")


@_attrs_define
class PtyApplied:
    """How far a worker has applied a running `--pty` task's input (in a sync request): the
    highest [`PtyInput::seq`] written to its terminal, 0 before any. Listed for every
    `--pty` task it runs, so the api knows which input to send.

        Attributes:
            key (StepTaskKey): Names one task of one step of one job run.
            seq (int): The highest sequence number applied.
    """

    key: StepTaskKey
    seq: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        key = self.key.to_dict()

        seq = self.seq

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "key": key,
                "seq": seq,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.step_task_key import StepTaskKey  # noqa: PLC0415

        d = dict(src_dict)
        key = StepTaskKey.from_dict(d.pop("key"))

        seq = d.pop("seq")

        pty_applied = cls(
            key=key,
            seq=seq,
        )

        pty_applied.additional_properties = d
        return pty_applied

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
