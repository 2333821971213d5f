from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.gpu_series import GpuSeries


T = TypeVar("T", bound="JobGpuSamples")


@_attrs_define
class JobGpuSamples:
    """A job run's per-GPU utilisation, memory and power over time
    (`GET /v1/jobs/{id}/gpu-samples`).

        Attributes:
            gpus (list[GpuSeries]): Per GPU the run held, by node then index; empty before the first sample.
            job_id (int): The job.
            run (int): The run (restart count) these series are for.
            step_seconds (int): The width of each point's bucket, seconds (at least the sampling interval, 10 s;
                wider when the run is long, so that a series has at most `points` points).
    """

    gpus: list[GpuSeries]
    job_id: int
    run: int
    step_seconds: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gpus = []
        for gpus_item_data in self.gpus:
            gpus_item = gpus_item_data.to_dict()
            gpus.append(gpus_item)

        job_id = self.job_id

        run = self.run

        step_seconds = self.step_seconds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gpus": gpus,
                "job_id": job_id,
                "run": run,
                "step_seconds": step_seconds,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.gpu_series import GpuSeries  # noqa: PLC0415

        d = dict(src_dict)
        gpus = []
        _gpus = d.pop("gpus")
        for gpus_item_data in _gpus:
            gpus_item = GpuSeries.from_dict(gpus_item_data)

            gpus.append(gpus_item)

        job_id = d.pop("job_id")

        run = d.pop("run")

        step_seconds = d.pop("step_seconds")

        job_gpu_samples = cls(
            gpus=gpus,
            job_id=job_id,
            run=run,
            step_seconds=step_seconds,
        )

        job_gpu_samples.additional_properties = d
        return job_gpu_samples

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
