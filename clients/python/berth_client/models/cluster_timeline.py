from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.cluster_timeline_point import ClusterTimelinePoint


T = TypeVar("T", bound="ClusterTimeline")


@_attrs_define
class ClusterTimeline:
    """`GET /v1/usage/cluster/timeline`: GPU allocation and utilisation over time.

    Attributes:
        end (datetime.datetime): Window end.
        points (list[ClusterTimelinePoint]): Buckets with a sample, oldest first (buckets the scheduler did not sample,
            as
            when none ran, are absent).
        start (datetime.datetime): Window start.
        step_seconds (int): The width of each bucket, seconds.
    """

    end: datetime.datetime
    points: list[ClusterTimelinePoint]
    start: datetime.datetime
    step_seconds: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        end = self.end.isoformat()

        points = []
        for points_item_data in self.points:
            points_item = points_item_data.to_dict()
            points.append(points_item)

        start = self.start.isoformat()

        step_seconds = self.step_seconds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "end": end,
                "points": points,
                "start": start,
                "step_seconds": step_seconds,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.cluster_timeline_point import ClusterTimelinePoint  # noqa: PLC0415

        d = dict(src_dict)
        end = datetime.datetime.fromisoformat(d.pop("end"))

        points = []
        _points = d.pop("points")
        for points_item_data in _points:
            points_item = ClusterTimelinePoint.from_dict(points_item_data)

            points.append(points_item)

        start = datetime.datetime.fromisoformat(d.pop("start"))

        step_seconds = d.pop("step_seconds")

        cluster_timeline = cls(
            end=end,
            points=points,
            start=start,
            step_seconds=step_seconds,
        )

        cluster_timeline.additional_properties = d
        return cluster_timeline

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
