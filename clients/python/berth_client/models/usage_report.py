from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.usage_report_row import UsageReportRow
    from ..models.usage_report_total import UsageReportTotal


T = TypeVar("T", bound="UsageReport")


@_attrs_define
class UsageReport:
    """`GET /v1/usage`: TRES time allocated in a window.

    Attributes:
        end (datetime.datetime): Window end (on the hour, excluded).
        group_by (list[str]): The groupings, in column order.
        rows (list[UsageReportRow]): The groups, by their keys; groups with no usage of the reported TRES and no jobs
            are left out.
        start (datetime.datetime): Window start (on the hour, included).
        total (UsageReportTotal): The whole (visible) usage: TRES name → usage in the unit.
        tres (list[str]): The TRES reported, in order.
        unit (str): `seconds`, `minutes` or `hours`.
    """

    end: datetime.datetime
    group_by: list[str]
    rows: list[UsageReportRow]
    start: datetime.datetime
    total: UsageReportTotal
    tres: list[str]
    unit: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        end = self.end.isoformat()

        group_by = self.group_by

        rows = []
        for rows_item_data in self.rows:
            rows_item = rows_item_data.to_dict()
            rows.append(rows_item)

        start = self.start.isoformat()

        total = self.total.to_dict()

        tres = self.tres

        unit = self.unit

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "end": end,
                "group_by": group_by,
                "rows": rows,
                "start": start,
                "total": total,
                "tres": tres,
                "unit": unit,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.usage_report_row import UsageReportRow  # noqa: PLC0415
        from ..models.usage_report_total import UsageReportTotal  # noqa: PLC0415

        d = dict(src_dict)
        end = datetime.datetime.fromisoformat(d.pop("end"))

        group_by = cast(list[str], d.pop("group_by"))

        rows = []
        _rows = d.pop("rows")
        for rows_item_data in _rows:
            rows_item = UsageReportRow.from_dict(rows_item_data)

            rows.append(rows_item)

        start = datetime.datetime.fromisoformat(d.pop("start"))

        total = UsageReportTotal.from_dict(d.pop("total"))

        tres = cast(list[str], d.pop("tres"))

        unit = d.pop("unit")

        usage_report = cls(
            end=end,
            group_by=group_by,
            rows=rows,
            start=start,
            total=total,
            tres=tres,
            unit=unit,
        )

        usage_report.additional_properties = d
        return usage_report

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
