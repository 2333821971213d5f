from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.usage_report_row_tres import UsageReportRowTres


T = TypeVar("T", bound="UsageReportRow")


@_attrs_define
class UsageReportRow:
    """One group of a usage report.

    Attributes:
        jobs (int): Job runs that ended in the window.
        tres (UsageReportRowTres): TRES name (`gres/gpu`, `cpu` …) → usage in the report's unit (`mem`: MiB × unit).
        account (None | str | Unset): The account (when grouped by account).
        gpu_model (None | str | Unset): The GPU model (when grouped by it; empty: allocations without GPUs).
        partition (None | str | Unset): The partition (when grouped by partition).
        qos (None | str | Unset): The QOS (when grouped by QOS).
        user (None | str | Unset): The user (when grouped by user).
    """

    jobs: int
    tres: UsageReportRowTres
    account: None | str | Unset = UNSET
    gpu_model: None | str | Unset = UNSET
    partition: None | str | Unset = UNSET
    qos: None | str | Unset = UNSET
    user: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        jobs = self.jobs

        tres = self.tres.to_dict()

        account: None | str | Unset
        if isinstance(self.account, Unset):
            account = UNSET
        else:
            account = self.account

        gpu_model: None | str | Unset
        if isinstance(self.gpu_model, Unset):
            gpu_model = UNSET
        else:
            gpu_model = self.gpu_model

        partition: None | str | Unset
        if isinstance(self.partition, Unset):
            partition = UNSET
        else:
            partition = self.partition

        qos: None | str | Unset
        if isinstance(self.qos, Unset):
            qos = UNSET
        else:
            qos = self.qos

        user: None | str | Unset
        if isinstance(self.user, Unset):
            user = UNSET
        else:
            user = self.user

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "jobs": jobs,
                "tres": tres,
            }
        )
        if account is not UNSET:
            field_dict["account"] = account
        if gpu_model is not UNSET:
            field_dict["gpu_model"] = gpu_model
        if partition is not UNSET:
            field_dict["partition"] = partition
        if qos is not UNSET:
            field_dict["qos"] = qos
        if user is not UNSET:
            field_dict["user"] = user

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.usage_report_row_tres import UsageReportRowTres  # noqa: PLC0415

        d = dict(src_dict)
        jobs = d.pop("jobs")

        tres = UsageReportRowTres.from_dict(d.pop("tres"))

        def _parse_account(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        account = _parse_account(d.pop("account", UNSET))

        def _parse_gpu_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        gpu_model = _parse_gpu_model(d.pop("gpu_model", UNSET))

        def _parse_partition(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        partition = _parse_partition(d.pop("partition", UNSET))

        def _parse_qos(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        qos = _parse_qos(d.pop("qos", UNSET))

        def _parse_user(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        user = _parse_user(d.pop("user", UNSET))

        usage_report_row = cls(
            jobs=jobs,
            tres=tres,
            account=account,
            gpu_model=gpu_model,
            partition=partition,
            qos=qos,
            user=user,
        )

        usage_report_row.additional_properties = d
        return usage_report_row

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
