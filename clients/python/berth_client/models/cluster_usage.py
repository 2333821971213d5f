from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.cluster_usage_row import ClusterUsageRow


T = TypeVar("T", bound="ClusterUsage")


@_attrs_define
class ClusterUsage:
    """`GET /v1/usage/cluster`: cluster GPU utilisation in a window.

    Attributes:
        end (datetime.datetime): Window end (on the hour, excluded).
        rows (list[ClusterUsageRow]): Per GPU model.
        start (datetime.datetime): Window start (on the hour, included).
        total (ClusterUsageRow): Cluster utilisation of some GPUs over a window, GPU time in the report's unit
            (sreport's `cluster Utilization` columns).
        tres (str): `gres/gpu`.
        unit (str): `seconds`, `minutes` or `hours`.
    """

    end: datetime.datetime
    rows: list[ClusterUsageRow]
    start: datetime.datetime
    total: ClusterUsageRow
    tres: str
    unit: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        end = self.end.isoformat()

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
        from ..models.cluster_usage_row import ClusterUsageRow  # noqa: PLC0415

        d = dict(src_dict)
        end = datetime.datetime.fromisoformat(d.pop("end"))

        rows = []
        _rows = d.pop("rows")
        for rows_item_data in _rows:
            rows_item = ClusterUsageRow.from_dict(rows_item_data)

            rows.append(rows_item)

        start = datetime.datetime.fromisoformat(d.pop("start"))

        total = ClusterUsageRow.from_dict(d.pop("total"))

        tres = d.pop("tres")

        unit = d.pop("unit")

        cluster_usage = cls(
            end=end,
            rows=rows,
            start=start,
            total=total,
            tres=tres,
            unit=unit,
        )

        cluster_usage.additional_properties = d
        return cluster_usage

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
