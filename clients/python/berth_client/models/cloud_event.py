from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.cloud_event_data import CloudEventData


T = TypeVar("T", bound="CloudEvent")


@_attrs_define
class CloudEvent:
    """One event, as CloudEvents 1.0 (JSON format) with Berth's extension attributes.

    Attributes:
        data (CloudEventData): What changed: for jobs `job_id`, `name`, `user`, `account`, `partition`, `state`,
            `reason`, `exit_code`, `exit_signal`, `restart_count`, …; for nodes `node`,
            `state`, `previous_state`, `reason`, `pool`.
        datacontenttype (str): `application/json`.
        id (str): The event's id (a decimal number; unique within this cluster).
        source (str): `/berth`.
        specversion (str): `1.0`.
        subject (str): What it is about: `jobs/123`, `nodes/gpu-7`, `pools/burst`, `scheduler/scheduler`,
            `reservations/maint`.
        time (datetime.datetime): When it happened (RFC 3339).
        type_ (str): `berth.job.ended`, … (see the module documentation).
    """

    data: CloudEventData
    datacontenttype: str
    id: str
    source: str
    specversion: str
    subject: str
    time: datetime.datetime
    type_: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data.to_dict()

        datacontenttype = self.datacontenttype

        id = self.id

        source = self.source

        specversion = self.specversion

        subject = self.subject

        time = self.time.isoformat()

        type_ = self.type_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "datacontenttype": datacontenttype,
                "id": id,
                "source": source,
                "specversion": specversion,
                "subject": subject,
                "time": time,
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.cloud_event_data import CloudEventData  # noqa: PLC0415

        d = dict(src_dict)
        data = CloudEventData.from_dict(d.pop("data"))

        datacontenttype = d.pop("datacontenttype")

        id = d.pop("id")

        source = d.pop("source")

        specversion = d.pop("specversion")

        subject = d.pop("subject")

        time = datetime.datetime.fromisoformat(d.pop("time"))

        type_ = d.pop("type")

        cloud_event = cls(
            data=data,
            datacontenttype=datacontenttype,
            id=id,
            source=source,
            specversion=specversion,
            subject=subject,
            time=time,
            type_=type_,
        )

        cloud_event.additional_properties = d
        return cloud_event

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
