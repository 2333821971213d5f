from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="StepTaskKey")


@_attrs_define
class StepTaskKey:
    """Names one task of one step of one job run.

    Attributes:
        job_id (int): The job.
        run (int): The job's run.
        step_id (int): The step.
        task_id (int): The task (`SLURM_PROCID`).
    """

    job_id: int
    run: int
    step_id: int
    task_id: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        run = self.run

        step_id = self.step_id

        task_id = self.task_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "run": run,
                "step_id": step_id,
                "task_id": task_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job_id = d.pop("job_id")

        run = d.pop("run")

        step_id = d.pop("step_id")

        task_id = d.pop("task_id")

        step_task_key = cls(
            job_id=job_id,
            run=run,
            step_id=step_id,
            task_id=task_id,
        )

        step_task_key.additional_properties = d
        return step_task_key

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
