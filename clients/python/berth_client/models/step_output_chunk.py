from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.output_stream import OutputStream

T = TypeVar("T", bound="StepOutputChunk")


@_attrs_define
class StepOutputChunk:
    """A chunk of a task's output.

    Attributes:
        data (str): The bytes, as UTF-8.
        seq (int): Arrival order within the step; pass the last one seen as `after`.
        stream (OutputStream): Which output stream.
        task_id (int): The task that wrote it.
    """

    data: str
    seq: int
    stream: OutputStream
    task_id: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        seq = self.seq

        stream = self.stream.value

        task_id = self.task_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "seq": seq,
                "stream": stream,
                "task_id": task_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        data = d.pop("data")

        seq = d.pop("seq")

        stream = OutputStream(d.pop("stream"))

        task_id = d.pop("task_id")

        step_output_chunk = cls(
            data=data,
            seq=seq,
            stream=stream,
            task_id=task_id,
        )

        step_output_chunk.additional_properties = d
        return step_output_chunk

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
