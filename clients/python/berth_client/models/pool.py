from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.cloud_event import CloudEvent
    from ..models.pool_cooldown import PoolCooldown
    from ..models.pool_node import PoolNode
    from ..models.pool_nodes_by_state import PoolNodesByState
    from ..models.pool_spec import PoolSpec


T = TypeVar("T", bound="Pool")


@_attrs_define
class Pool:
    """A pool as `GET /v1/pools` shows it.

    Attributes:
        cooldowns (list[PoolCooldown]): (instance type, zone) set aside after capacity errors.
        events (list[CloudEvent]): Its most recent events, newest first (at most 50).
        hourly_spend (float): What its running instances cost per hour (sum of their types' prices).
        launches_in_flight (int): Launch requests sent to the provider and not yet answered.
        name (str): Its name.
        nodes (list[PoolNode]): Its nodes.
        nodes_active (int): Nodes with an instance (every state but `POWERED_DOWN`).
        nodes_by_state (PoolNodesByState): Its nodes by state name (`POWERED_DOWN`, `POWERING_UP`, `IDLE`, `MIXED`, …).
        spec (PoolSpec): A pool, as declared: `PUT /v1/pools/{name}` takes it, `[pools.NAME]` in the server
            config holds it.
        backoff_until (datetime.datetime | None | Unset): Launches are held back until then after repeated failures.
        last_error (None | str | Unset): The last launch error, if any.
        last_error_at (datetime.datetime | None | Unset): When it happened.
    """

    cooldowns: list[PoolCooldown]
    events: list[CloudEvent]
    hourly_spend: float
    launches_in_flight: int
    name: str
    nodes: list[PoolNode]
    nodes_active: int
    nodes_by_state: PoolNodesByState
    spec: PoolSpec
    backoff_until: datetime.datetime | None | Unset = UNSET
    last_error: None | str | Unset = UNSET
    last_error_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cooldowns = []
        for cooldowns_item_data in self.cooldowns:
            cooldowns_item = cooldowns_item_data.to_dict()
            cooldowns.append(cooldowns_item)

        events = []
        for events_item_data in self.events:
            events_item = events_item_data.to_dict()
            events.append(events_item)

        hourly_spend = self.hourly_spend

        launches_in_flight = self.launches_in_flight

        name = self.name

        nodes = []
        for nodes_item_data in self.nodes:
            nodes_item = nodes_item_data.to_dict()
            nodes.append(nodes_item)

        nodes_active = self.nodes_active

        nodes_by_state = self.nodes_by_state.to_dict()

        spec = self.spec.to_dict()

        backoff_until: None | str | Unset
        if isinstance(self.backoff_until, Unset):
            backoff_until = UNSET
        elif isinstance(self.backoff_until, datetime.datetime):
            backoff_until = self.backoff_until.isoformat()
        else:
            backoff_until = self.backoff_until

        last_error: None | str | Unset
        if isinstance(self.last_error, Unset):
            last_error = UNSET
        else:
            last_error = self.last_error

        last_error_at: None | str | Unset
        if isinstance(self.last_error_at, Unset):
            last_error_at = UNSET
        elif isinstance(self.last_error_at, datetime.datetime):
            last_error_at = self.last_error_at.isoformat()
        else:
            last_error_at = self.last_error_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cooldowns": cooldowns,
                "events": events,
                "hourly_spend": hourly_spend,
                "launches_in_flight": launches_in_flight,
                "name": name,
                "nodes": nodes,
                "nodes_active": nodes_active,
                "nodes_by_state": nodes_by_state,
                "spec": spec,
            }
        )
        if backoff_until is not UNSET:
            field_dict["backoff_until"] = backoff_until
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if last_error_at is not UNSET:
            field_dict["last_error_at"] = last_error_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.cloud_event import CloudEvent  # noqa: PLC0415
        from ..models.pool_cooldown import PoolCooldown  # noqa: PLC0415
        from ..models.pool_node import PoolNode  # noqa: PLC0415
        from ..models.pool_nodes_by_state import PoolNodesByState  # noqa: PLC0415
        from ..models.pool_spec import PoolSpec  # noqa: PLC0415

        d = dict(src_dict)
        cooldowns = []
        _cooldowns = d.pop("cooldowns")
        for cooldowns_item_data in _cooldowns:
            cooldowns_item = PoolCooldown.from_dict(cooldowns_item_data)

            cooldowns.append(cooldowns_item)

        events = []
        _events = d.pop("events")
        for events_item_data in _events:
            events_item = CloudEvent.from_dict(events_item_data)

            events.append(events_item)

        hourly_spend = d.pop("hourly_spend")

        launches_in_flight = d.pop("launches_in_flight")

        name = d.pop("name")

        nodes = []
        _nodes = d.pop("nodes")
        for nodes_item_data in _nodes:
            nodes_item = PoolNode.from_dict(nodes_item_data)

            nodes.append(nodes_item)

        nodes_active = d.pop("nodes_active")

        nodes_by_state = PoolNodesByState.from_dict(d.pop("nodes_by_state"))

        spec = PoolSpec.from_dict(d.pop("spec"))

        def _parse_backoff_until(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                backoff_until_type_0 = datetime.datetime.fromisoformat(data)

                return backoff_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        backoff_until = _parse_backoff_until(d.pop("backoff_until", UNSET))

        def _parse_last_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error = _parse_last_error(d.pop("last_error", UNSET))

        def _parse_last_error_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_error_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_error_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        last_error_at = _parse_last_error_at(d.pop("last_error_at", UNSET))

        pool = cls(
            cooldowns=cooldowns,
            events=events,
            hourly_spend=hourly_spend,
            launches_in_flight=launches_in_flight,
            name=name,
            nodes=nodes,
            nodes_active=nodes_active,
            nodes_by_state=nodes_by_state,
            spec=spec,
            backoff_until=backoff_until,
            last_error=last_error,
            last_error_at=last_error_at,
        )

        pool.additional_properties = d
        return pool

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
