from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.signal_target import SignalTarget
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.signalled_run import SignalledRun


T = TypeVar("T", bound="JobSignalQueued")


@_attrs_define
class JobSignalQueued:
    """The answer to `POST /v1/jobs/{id}/signal`: the signal is queued for the job's nodes,
    whose workers send it within a sync (milliseconds when they are connected).

        Attributes:
            jobs (list[SignalledRun]): The runs signalled: one, or every running task of an array.
            signal (int): The signal number (Linux numbering: `USR1` is 10).
            target (SignalTarget): Which of a running job's processes a signal goes to (Slurm's `scancel` flags).
            step (int | None | Unset): The step, for [`SignalTarget::Step`].
    """

    jobs: list[SignalledRun]
    signal: int
    target: SignalTarget
    step: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        jobs = []
        for jobs_item_data in self.jobs:
            jobs_item = jobs_item_data.to_dict()
            jobs.append(jobs_item)

        signal = self.signal

        target = self.target.value

        step: int | None | Unset
        if isinstance(self.step, Unset):
            step = UNSET
        else:
            step = self.step

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "jobs": jobs,
                "signal": signal,
                "target": target,
            }
        )
        if step is not UNSET:
            field_dict["step"] = step

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.signalled_run import SignalledRun  # noqa: PLC0415

        d = dict(src_dict)
        jobs = []
        _jobs = d.pop("jobs")
        for jobs_item_data in _jobs:
            jobs_item = SignalledRun.from_dict(jobs_item_data)

            jobs.append(jobs_item)

        signal = d.pop("signal")

        target = SignalTarget(d.pop("target"))

        def _parse_step(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        step = _parse_step(d.pop("step", UNSET))

        job_signal_queued = cls(
            jobs=jobs,
            signal=signal,
            target=target,
            step=step,
        )

        job_signal_queued.additional_properties = d
        return job_signal_queued

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
