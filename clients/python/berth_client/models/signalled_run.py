from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SignalledRun")


@_attrs_define
class SignalledRun:
    """One job run a signal was queued for, and the nodes it goes to.

    Attributes:
        job_id (int): The job (an array task's own id).
        nodes (list[str]): The nodes whose workers deliver it (those running the batch shell or the tasks
            aimed at); empty when none runs any (a step not started anywhere yet).
        run (int): The run (the job's restart count).
    """

    job_id: int
    nodes: list[str]
    run: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        nodes = self.nodes

        run = self.run

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "nodes": nodes,
                "run": run,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job_id = d.pop("job_id")

        nodes = cast(list[str], d.pop("nodes"))

        run = d.pop("run")

        signalled_run = cls(
            job_id=job_id,
            nodes=nodes,
            run=run,
        )

        signalled_run.additional_properties = d
        return signalled_run

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
