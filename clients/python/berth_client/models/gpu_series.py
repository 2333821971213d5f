from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.gpu_series_point import GpuSeriesPoint


T = TypeVar("T", bound="GpuSeries")


@_attrs_define
class GpuSeries:
    """One GPU's time series within a job run.

    Attributes:
        index (int): The device index.
        node (str): The node.
        points (list[GpuSeriesPoint]): The points, oldest first.
    """

    index: int
    node: str
    points: list[GpuSeriesPoint]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index = self.index

        node = self.node

        points = []
        for points_item_data in self.points:
            points_item = points_item_data.to_dict()
            points.append(points_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index": index,
                "node": node,
                "points": points,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.gpu_series_point import GpuSeriesPoint  # noqa: PLC0415

        d = dict(src_dict)
        index = d.pop("index")

        node = d.pop("node")

        points = []
        _points = d.pop("points")
        for points_item_data in _points:
            points_item = GpuSeriesPoint.from_dict(points_item_data)

            points.append(points_item)

        gpu_series = cls(
            index=index,
            node=node,
            points=points,
        )

        gpu_series.additional_properties = d
        return gpu_series

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
