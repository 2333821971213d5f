from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.signal_target import SignalTarget
from ..types import UNSET, Unset

T = TypeVar("T", bound="SignalDelivery")


@_attrs_define
class SignalDelivery:
    """A signal a node must send now (node sync answer): to the processes of one job run
    that its worker started, as `target` says. The worker acknowledges it by its `id` in
    its next sync ([`crate::wire::SyncRequest::signals_delivered`]), so that it is sent
    once; one for a run or step the node does not run any more is acknowledged unsent.

        Attributes:
            id (int): The delivery's id (one per signal and node).
            job_id (int): The job.
            run (int): The run.
            signal (int): The signal number, 1 to 64.
            target (SignalTarget): Which of a running job's processes a signal goes to (Slurm's `scancel` flags).
            incarnation (None | Unset | UUID): The job's incarnation ([`crate::wire::Incarnation`]): a run of another job
                that had
                the same id does not get it.
            step (int | None | Unset): The step, for [`SignalTarget::Step`].
    """

    id: int
    job_id: int
    run: int
    signal: int
    target: SignalTarget
    incarnation: None | Unset | UUID = UNSET
    step: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        job_id = self.job_id

        run = self.run

        signal = self.signal

        target = self.target.value

        incarnation: None | str | Unset
        if isinstance(self.incarnation, Unset):
            incarnation = UNSET
        elif isinstance(self.incarnation, UUID):
            incarnation = str(self.incarnation)
        else:
            incarnation = self.incarnation

        step: int | None | Unset
        if isinstance(self.step, Unset):
            step = UNSET
        else:
            step = self.step

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "job_id": job_id,
                "run": run,
                "signal": signal,
                "target": target,
            }
        )
        if incarnation is not UNSET:
            field_dict["incarnation"] = incarnation
        if step is not UNSET:
            field_dict["step"] = step

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        job_id = d.pop("job_id")

        run = d.pop("run")

        signal = d.pop("signal")

        target = SignalTarget(d.pop("target"))

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

        def _parse_step(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        step = _parse_step(d.pop("step", UNSET))

        signal_delivery = cls(
            id=id,
            job_id=job_id,
            run=run,
            signal=signal,
            target=target,
            incarnation=incarnation,
            step=step,
        )

        signal_delivery.additional_properties = d
        return signal_delivery

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
