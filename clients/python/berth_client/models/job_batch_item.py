from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.job import Job
    from ..models.problem import Problem


T = TypeVar("T", bound="JobBatchItem")


@_attrs_define
class JobBatchItem:
    """One job's outcome in a [`JobBatchResult`]: what the single-job request
    (`POST /v1/jobs/{id}/cancel` …) would have answered.

        Attributes:
            job (str): The job as named in the request (`12`, `12_3`).
            status (int): The HTTP status the single-job request would have had (200, 404, 409 …).
            problem (None | Problem | Unset):
            result (Job | None | Unset):
    """

    job: str
    status: int
    problem: None | Problem | Unset = UNSET
    result: Job | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.job import Job  # noqa: PLC0415
        from ..models.problem import Problem  # noqa: PLC0415

        job = self.job

        status = self.status

        problem: dict[str, Any] | None | Unset
        if isinstance(self.problem, Unset):
            problem = UNSET
        elif isinstance(self.problem, Problem):
            problem = self.problem.to_dict()
        else:
            problem = self.problem

        result: dict[str, Any] | None | Unset
        if isinstance(self.result, Unset):
            result = UNSET
        elif isinstance(self.result, Job):
            result = self.result.to_dict()
        else:
            result = self.result

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job": job,
                "status": status,
            }
        )
        if problem is not UNSET:
            field_dict["problem"] = problem
        if result is not UNSET:
            field_dict["result"] = result

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.job import Job  # noqa: PLC0415
        from ..models.problem import Problem  # noqa: PLC0415

        d = dict(src_dict)
        job = d.pop("job")

        status = d.pop("status")

        def _parse_problem(data: object) -> None | Problem | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                problem_type_1 = Problem.from_dict(data)

                return problem_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Problem | Unset, data)

        problem = _parse_problem(d.pop("problem", UNSET))

        def _parse_result(data: object) -> Job | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                result_type_1 = Job.from_dict(data)

                return result_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Job | None | Unset, data)

        result = _parse_result(d.pop("result", UNSET))

        job_batch_item = cls(
            job=job,
            status=status,
            problem=problem,
            result=result,
        )

        job_batch_item.additional_properties = d
        return job_batch_item

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
