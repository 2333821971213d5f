from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step_task_key import StepTaskKey


T = TypeVar("T", bound="PtyInput")


@_attrs_define
class PtyInput:
    """Terminal input for a `--pty` task the node runs (in a sync answer): apply each once,
    in `seq` order, and report the highest applied in [`PtyApplied`].

        Attributes:
            key (StepTaskKey): Names one task of one step of one job run.
            seq (int): Arrival order at the api.
            cols (int | None | Unset): The terminal's new columns, when it was resized.
            data (str | Unset): The bytes typed, base64 (may be empty).
            rows (int | None | Unset): The terminal's new rows, when it was resized.
    """

    key: StepTaskKey
    seq: int
    cols: int | None | Unset = UNSET
    data: str | Unset = UNSET
    rows: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        key = self.key.to_dict()

        seq = self.seq

        cols: int | None | Unset
        if isinstance(self.cols, Unset):
            cols = UNSET
        else:
            cols = self.cols

        data = self.data

        rows: int | None | Unset
        if isinstance(self.rows, Unset):
            rows = UNSET
        else:
            rows = self.rows

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "key": key,
                "seq": seq,
            }
        )
        if cols is not UNSET:
            field_dict["cols"] = cols
        if data is not UNSET:
            field_dict["data"] = data
        if rows is not UNSET:
            field_dict["rows"] = rows

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.step_task_key import StepTaskKey  # noqa: PLC0415

        d = dict(src_dict)
        key = StepTaskKey.from_dict(d.pop("key"))

        seq = d.pop("seq")

        def _parse_cols(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cols = _parse_cols(d.pop("cols", UNSET))

        data = d.pop("data", UNSET)

        def _parse_rows(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        rows = _parse_rows(d.pop("rows", UNSET))

        pty_input = cls(
            key=key,
            seq=seq,
            cols=cols,
            data=data,
            rows=rows,
        )

        pty_input.additional_properties = d
        return pty_input

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
