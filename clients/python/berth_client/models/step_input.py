from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="StepInput")


@_attrs_define
class StepInput:
    """`POST /v1/jobs/{id}/steps/{step}/input`: what the user of a `--pty` step typed, and the
    terminal's size when it changed (`srun --pty` sends both). Input is applied on the node
    in the order the api stored it.

        Attributes:
            cols (int | None | Unset): The terminal's columns (1..=65535), given with `rows`.
            data (None | str | Unset): The bytes typed, base64 (RFC 4648 with padding), at most [`STEP_INPUT_MAX_BYTES`]
                once decoded; absent or empty: none.
            rows (int | None | Unset): The terminal's rows (1..=65535), given with `cols` when its size changed.
    """

    cols: int | None | Unset = UNSET
    data: None | str | Unset = UNSET
    rows: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cols: int | None | Unset
        if isinstance(self.cols, Unset):
            cols = UNSET
        else:
            cols = self.cols

        data: None | str | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        else:
            data = self.data

        rows: int | None | Unset
        if isinstance(self.rows, Unset):
            rows = UNSET
        else:
            rows = self.rows

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if cols is not UNSET:
            field_dict["cols"] = cols
        if data is not UNSET:
            field_dict["data"] = data
        if rows is not UNSET:
            field_dict["rows"] = rows

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_cols(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cols = _parse_cols(d.pop("cols", UNSET))

        def _parse_data(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        data = _parse_data(d.pop("data", UNSET))

        def _parse_rows(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        rows = _parse_rows(d.pop("rows", UNSET))

        step_input = cls(
            cols=cols,
            data=data,
            rows=rows,
        )

        return step_input
