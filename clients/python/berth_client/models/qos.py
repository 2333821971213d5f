from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.qos_spec import QosSpec


T = TypeVar("T", bound="Qos")


@_attrs_define
class Qos:
    """A QOS as the api shows it: its name and its definition, as `PUT /v1/qos/{name}`
    takes it.

        Attributes:
            name (str): Name.
            spec (QosSpec): `PUT /v1/qos/{name}`: a QOS's whole definition (absent fields take their defaults).
    """

    name: str
    spec: QosSpec
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        spec = self.spec.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "spec": spec,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.qos_spec import QosSpec  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        spec = QosSpec.from_dict(d.pop("spec"))

        qos = cls(
            name=name,
            spec=spec,
        )

        qos.additional_properties = d
        return qos

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
