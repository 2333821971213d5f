from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.gpu_fault_kind import GpuFaultKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="GpuFault")


@_attrs_define
class GpuFault:
    """A GPU fault seen by a worker (in a sync request). Its node is drained with a reason
    naming it.

        Attributes:
            index (int): The device index.
            kind (GpuFaultKind): What is wrong with a GPU.
            xid (int | None | Unset): The XID code, for `xid`.
    """

    index: int
    kind: GpuFaultKind
    xid: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index = self.index

        kind = self.kind.value

        xid: int | None | Unset
        if isinstance(self.xid, Unset):
            xid = UNSET
        else:
            xid = self.xid

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index": index,
                "kind": kind,
            }
        )
        if xid is not UNSET:
            field_dict["xid"] = xid

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        index = d.pop("index")

        kind = GpuFaultKind(d.pop("kind"))

        def _parse_xid(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        xid = _parse_xid(d.pop("xid", UNSET))

        gpu_fault = cls(
            index=index,
            kind=kind,
            xid=xid,
        )

        gpu_fault.additional_properties = d
        return gpu_fault

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
