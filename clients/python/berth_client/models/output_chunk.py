from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..models.output_stream import OutputStream
from ..types import UNSET, Unset

T = TypeVar("T", bound="OutputChunk")


@_attrs_define
class OutputChunk:
    """`POST /v1/jobs/{id}/output`: a chunk of a job's output file, uploaded by the worker.
    Chunks are keyed by (run, stream, offset), so a repeated upload is harmless.

        Attributes:
            data (str): The bytes, as UTF-8 (invalid sequences replaced).
            offset (int): Byte offset of `data` in this run's stream.
            run (int): The run.
            stream (OutputStream): Which output stream.
            incarnation (None | Unset | UUID): The job's incarnation ([`Assignment::incarnation`]): output of another job
                that
                had the same id is refused (404). Absent from older workers.
    """

    data: str
    offset: int
    run: int
    stream: OutputStream
    incarnation: None | Unset | UUID = UNSET

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        offset = self.offset

        run = self.run

        stream = self.stream.value

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

        output_chunk = cls(
            data=data,
            offset=offset,
            run=run,
            stream=stream,
            incarnation=incarnation,
        )

        return output_chunk
