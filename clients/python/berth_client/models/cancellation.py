from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Cancellation")


@_attrs_define
class Cancellation:
    """A job run the node must stop: SIGTERM to its batch shell's process group at once,
    SIGKILL after `grace_seconds` (when given) or the worker's kill wait.

        Attributes:
            job_id (int): The job.
            run (int): Its run.
            grace_seconds (int | None | Unset): Seconds from now until SIGKILL, in place of the worker's kill wait: what is
                left of
                a preempted run's QOS `GraceTime` (0: SIGKILL right after the SIGTERM). `None`:
                the worker's kill wait.
            incarnation (None | Unset | UUID): The incarnation of the run to stop, as the worker said it runs it
                ([`RunningJob::incarnation`]): a run of another incarnation under the same job id
                and run is not this one.
            preempted (bool | Unset): The run was preempted (QOS `PreemptMode` `CANCEL` or `REQUEUE`): the worker names
                the ending `preempted` in the job's signal reason file before the SIGTERM.
            reclaimed (bool | Unset): The node's instance is being reclaimed (a spot interruption notice): the worker
                names the ending `reclaimed` in the job's signal reason file and sends the job its
                `--signal` warning (or SIGTERM when it asked for none), then SIGTERM and SIGKILL
                within `grace_seconds`.
    """

    job_id: int
    run: int
    grace_seconds: int | None | Unset = UNSET
    incarnation: None | Unset | UUID = UNSET
    preempted: bool | Unset = UNSET
    reclaimed: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        run = self.run

        grace_seconds: int | None | Unset
        if isinstance(self.grace_seconds, Unset):
            grace_seconds = UNSET
        else:
            grace_seconds = self.grace_seconds

        incarnation: None | str | Unset
        if isinstance(self.incarnation, Unset):
            incarnation = UNSET
        elif isinstance(self.incarnation, UUID):
            incarnation = str(self.incarnation)
        else:
            incarnation = self.incarnation

        preempted = self.preempted

        reclaimed = self.reclaimed

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "run": run,
            }
        )
        if grace_seconds is not UNSET:
            field_dict["grace_seconds"] = grace_seconds
        if incarnation is not UNSET:
            field_dict["incarnation"] = incarnation
        if preempted is not UNSET:
            field_dict["preempted"] = preempted
        if reclaimed is not UNSET:
            field_dict["reclaimed"] = reclaimed

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job_id = d.pop("job_id")

        run = d.pop("run")

        def _parse_grace_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        grace_seconds = _parse_grace_seconds(d.pop("grace_seconds", UNSET))

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

        preempted = d.pop("preempted", UNSET)

        reclaimed = d.pop("reclaimed", UNSET)

        cancellation = cls(
            job_id=job_id,
            run=run,
            grace_seconds=grace_seconds,
            incarnation=incarnation,
            preempted=preempted,
            reclaimed=reclaimed,
        )

        cancellation.additional_properties = d
        return cancellation

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
