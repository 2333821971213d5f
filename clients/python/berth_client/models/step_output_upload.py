from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..models.output_stream import OutputStream
from ..types import UNSET, Unset

T = TypeVar("T", bound="StepOutputUpload")


@_attrs_define
class StepOutputUpload:
    """`POST /v1/jobs/{id}/steps/{step}/output`: a chunk of a task's output, uploaded by its
    worker. Keyed by (run, task, stream, offset), so a repeated upload is harmless.

        Attributes:
            data (str): The bytes, as UTF-8 (invalid sequences replaced).
            offset (int): Byte offset of `data` in the task's stream.
            run (int): The job's run.
            stream (OutputStream): Which output stream.
            task_id (int): The task.
            incarnation (None | Unset | UUID): The job's incarnation ([`crate::wire::Incarnation`]): output of another job
                that
                had the same id is refused (404). Absent from older workers.
    """

    data: str
    offset: int
    run: int
    stream: OutputStream
    task_id: int
    incarnation: None | Unset | UUID = UNSET

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        offset = self.offset

        run = self.run

        stream = self.stream.value

        task_id = self.task_id

        incarnation: None | str | Unset
        if isinstance(self.incarnation, Unset):
            incarnation = UNSET
        elif isinstance(self.incarnation, UUID):
            incarnation = str(self.incarnation)
        else:
            incarnation = self.incarnation

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "data": data,
                "offset": offset,
                "run": run,
                "stream": stream,
                "task_id": task_id,
            }
        )
        if incarnation is not UNSET:
            field_dict["incarnation"] = incarnation

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        data = d.pop("data")

        offset = d.pop("offset")

        run = d.pop("run")

        stream = OutputStream(d.pop("stream"))

        task_id = d.pop("task_id")

        def _parse_incarnation(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                incarnation_type_0 = UUID(data)

                return incarnation_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        incarnation = _parse_incarnation(d.pop("incarnation", UNSET))

        step_output_upload = cls(
            data=data,
            offset=offset,
            run=run,
            stream=stream,
            task_id=task_id,
            incarnation=incarnation,
        )

        return step_output_upload
