from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.gpu_stats import GpuStats


T = TypeVar("T", bound="JobStats")


@_attrs_define
class JobStats:
    """A job run's GPU usage.

    Attributes:
        energy_joules (float): Energy used by all its GPUs, joules.
        gpus (list[GpuStats]): Per GPU, by node then index.
        job_id (int): The job.
        peak_memory_mib (int): The highest memory in use on any one GPU, MiB.
        run (int): The run (restart count) these figures are for.
        avg_utilization_pct (float | None | Unset): Average utilisation over every sample of every GPU, percent (`None`
            before the
            first sample).
    """

    energy_joules: float
    gpus: list[GpuStats]
    job_id: int
    peak_memory_mib: int
    run: int
    avg_utilization_pct: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        energy_joules = self.energy_joules

        gpus = []
        for gpus_item_data in self.gpus:
            gpus_item = gpus_item_data.to_dict()
            gpus.append(gpus_item)

        job_id = self.job_id

        peak_memory_mib = self.peak_memory_mib

        run = self.run

        avg_utilization_pct: float | None | Unset
        if isinstance(self.avg_utilization_pct, Unset):
            avg_utilization_pct = UNSET
        else:
            avg_utilization_pct = self.avg_utilization_pct

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "energy_joules": energy_joules,
                "gpus": gpus,
                "job_id": job_id,
                "peak_memory_mib": peak_memory_mib,
                "run": run,
            }
        )
        if avg_utilization_pct is not UNSET:
            field_dict["avg_utilization_pct"] = avg_utilization_pct

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.gpu_stats import GpuStats  # noqa: PLC0415

        d = dict(src_dict)
        energy_joules = d.pop("energy_joules")

        gpus = []
        _gpus = d.pop("gpus")
        for gpus_item_data in _gpus:
            gpus_item = GpuStats.from_dict(gpus_item_data)

            gpus.append(gpus_item)

        job_id = d.pop("job_id")

        peak_memory_mib = d.pop("peak_memory_mib")

        run = d.pop("run")

        def _parse_avg_utilization_pct(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        avg_utilization_pct = _parse_avg_utilization_pct(d.pop("avg_utilization_pct", UNSET))

        job_stats = cls(
            energy_joules=energy_joules,
            gpus=gpus,
            job_id=job_id,
            peak_memory_mib=peak_memory_mib,
            run=run,
            avg_utilization_pct=avg_utilization_pct,
        )

        job_stats.additional_properties = d
        return job_stats

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
