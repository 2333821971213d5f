from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="JobSignal")


@_attrs_define
class JobSignal:
    """`POST /v1/jobs/{id}/signal`: a signal for a running job's processes (`scancel
    --signal=SIG [-b|-f] JOB[.STEP]`). The job goes on running: a handler in it decides
    what the signal means.

        Attributes:
            signal (int | str): A signal as the api takes one: a number (`10`) or a name (`"USR1"`, `"SIGUSR1"`,
                `"10"`), read as Slurm's commands read one (Linux numbering).
            array_task (int | None | Unset): With the id of a job array: only this task of it (`12_3`). Without, an array's
                id
                signals every running task of the array.
            batch (bool | Unset): The batch shell alone (`scancel -b`), not the steps.
            full (bool | Unset): The batch shell, what it started, and every step (`scancel -f`); wins over `batch`.
            step (int | None | Unset): One step's tasks (`scancel --signal JOB.STEP`); not with `batch` or `full`.
    """

    signal: int | str
    array_task: int | None | Unset = UNSET
    batch: bool | Unset = UNSET
    full: bool | Unset = UNSET
    step: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        signal: int | str
        signal = self.signal

        array_task: int | None | Unset
        if isinstance(self.array_task, Unset):
            array_task = UNSET
        else:
            array_task = self.array_task

        batch = self.batch

        full = self.full

        step: int | None | Unset
        if isinstance(self.step, Unset):
            step = UNSET
        else:
            step = self.step

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "signal": signal,
            }
        )
        if array_task is not UNSET:
            field_dict["array_task"] = array_task
        if batch is not UNSET:
            field_dict["batch"] = batch
        if full is not UNSET:
            field_dict["full"] = full
        if step is not UNSET:
            field_dict["step"] = step

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_signal(data: object) -> int | str:
            return cast(int | str, data)

        signal = _parse_signal(d.pop("signal"))

        def _parse_array_task(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        array_task = _parse_array_task(d.pop("array_task", UNSET))

        batch = d.pop("batch", UNSET)

        full = d.pop("full", UNSET)

        def _parse_step(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        step = _parse_step(d.pop("step", UNSET))

        job_signal = cls(
            signal=signal,
            array_task=array_task,
            batch=batch,
            full=full,
            step=step,
        )

        return job_signal
