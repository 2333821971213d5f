from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.market import Market
from ..models.node_state import NodeState
from ..types import UNSET, Unset

T = TypeVar("T", bound="PoolNode")


@_attrs_define
class PoolNode:
    """One of a pool's nodes.

    Attributes:
        name (str): The node name.
        state (NodeState): A node's state, as `sinfo` names it. IDLE, MIXED and ALLOCATED are derived from its
            allocations; the others are set by an operator or by failure detection.
        age_seconds (int | None | Unset): Seconds since its instance was requested.
        instance_id (None | str | Unset): The instance id, when it has one.
        instance_type (None | str | Unset): The instance type.
        market (Market | None | Unset):
        reason (None | str | Unset): Why it is in its state.
        zone (None | str | Unset): The zone.
    """

    name: str
    state: NodeState
    age_seconds: int | None | Unset = UNSET
    instance_id: None | str | Unset = UNSET
    instance_type: None | str | Unset = UNSET
    market: Market | None | Unset = UNSET
    reason: None | str | Unset = UNSET
    zone: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        state = self.state.value

        age_seconds: int | None | Unset
        if isinstance(self.age_seconds, Unset):
            age_seconds = UNSET
        else:
            age_seconds = self.age_seconds

        instance_id: None | str | Unset
        if isinstance(self.instance_id, Unset):
            instance_id = UNSET
        else:
            instance_id = self.instance_id

        instance_type: None | str | Unset
        if isinstance(self.instance_type, Unset):
            instance_type = UNSET
        else:
            instance_type = self.instance_type

        market: None | str | Unset
        if isinstance(self.market, Unset):
            market = UNSET
        elif isinstance(self.market, Market):
            market = self.market.value
        else:
            market = self.market

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        zone: None | str | Unset
        if isinstance(self.zone, Unset):
            zone = UNSET
        else:
            zone = self.zone

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "state": state,
            }
        )
        if age_seconds is not UNSET:
            field_dict["age_seconds"] = age_seconds
        if instance_id is not UNSET:
            field_dict["instance_id"] = instance_id
        if instance_type is not UNSET:
            field_dict["instance_type"] = instance_type
        if market is not UNSET:
            field_dict["market"] = market
        if reason is not UNSET:
            field_dict["reason"] = reason
        if zone is not UNSET:
            field_dict["zone"] = zone

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        state = NodeState(d.pop("state"))

        def _parse_age_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        age_seconds = _parse_age_seconds(d.pop("age_seconds", UNSET))

        def _parse_instance_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instance_id = _parse_instance_id(d.pop("instance_id", UNSET))

        def _parse_instance_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instance_type = _parse_instance_type(d.pop("instance_type", UNSET))

        def _parse_market(data: object) -> Market | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                market_type_1 = Market(data)

                return market_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Market | None | Unset, data)

        market = _parse_market(d.pop("market", UNSET))

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        def _parse_zone(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        zone = _parse_zone(d.pop("zone", UNSET))

        pool_node = cls(
            name=name,
            state=state,
            age_seconds=age_seconds,
            instance_id=instance_id,
            instance_type=instance_type,
            market=market,
            reason=reason,
            zone=zone,
        )

        pool_node.additional_properties = d
        return pool_node

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
