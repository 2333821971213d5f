from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.fairshare_row import FairshareRow


T = TypeVar("T", bound="FairshareList")


@_attrs_define
class FairshareList:
    """`GET /v1/fairshare`: every association's fairshare (sshare).

    Attributes:
        associations (list[FairshareRow]): By account, then user. Raw usage is as the scheduler last decayed it (at most
            a
            minute or so ago); normalized usage and the factor do not depend on that.
    """

    associations: list[FairshareRow]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        associations = []
        for associations_item_data in self.associations:
            associations_item = associations_item_data.to_dict()
            associations.append(associations_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "associations": associations,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.fairshare_row import FairshareRow  # noqa: PLC0415

        d = dict(src_dict)
        associations = []
        _associations = d.pop("associations")
        for associations_item_data in _associations:
            associations_item = FairshareRow.from_dict(associations_item_data)

            associations.append(associations_item)

        fairshare_list = cls(
            associations=associations,
        )

        fairshare_list.additional_properties = d
        return fairshare_list

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
