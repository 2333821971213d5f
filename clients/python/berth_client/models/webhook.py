from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Webhook")


@_attrs_define
class Webhook:
    """A webhook (never with its secret, except in the answer to its creation).

    Attributes:
        accounts (list[str]): Account filter (empty: any).
        consecutive_failures (int): Failed attempts in a row.
        created_at (datetime.datetime): When it was made.
        description (str): The owner's note.
        enabled (bool): False once disabled after sustained failure (or paused by its owner).
        events (list[str]): The subscribed types and patterns.
        id (int): The id.
        jobs (list[int]): Job filter (empty: any).
        nodes (list[str]): Node filter (empty: any).
        owner (str): Who made it (it receives only what they may see).
        partitions (list[str]): Partition filter (empty: any).
        url (str): The endpoint.
        disabled_reason (None | str | Unset): Why it was disabled.
        failing_since (datetime.datetime | None | Unset): When the current run of failures began.
        secret (None | str | Unset): The signing secret: only in the answer to `POST /v1/webhooks`.
    """

    accounts: list[str]
    consecutive_failures: int
    created_at: datetime.datetime
    description: str
    enabled: bool
    events: list[str]
    id: int
    jobs: list[int]
    nodes: list[str]
    owner: str
    partitions: list[str]
    url: str
    disabled_reason: None | str | Unset = UNSET
    failing_since: datetime.datetime | None | Unset = UNSET
    secret: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        accounts = self.accounts

        consecutive_failures = self.consecutive_failures

        created_at = self.created_at.isoformat()

        description = self.description

        enabled = self.enabled

        events = self.events

        id = self.id

        jobs = self.jobs

        nodes = self.nodes

        owner = self.owner

        partitions = self.partitions

        url = self.url

        disabled_reason: None | str | Unset
        if isinstance(self.disabled_reason, Unset):
            disabled_reason = UNSET
        else:
            disabled_reason = self.disabled_reason

        failing_since: None | str | Unset
        if isinstance(self.failing_since, Unset):
            failing_since = UNSET
        elif isinstance(self.failing_since, datetime.datetime):
            failing_since = self.failing_since.isoformat()
        else:
            failing_since = self.failing_since

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "accounts": accounts,
                "consecutive_failures": consecutive_failures,
                "created_at": created_at,
                "description": description,
                "enabled": enabled,
                "events": events,
                "id": id,
                "jobs": jobs,
                "nodes": nodes,
                "owner": owner,
                "partitions": partitions,
                "url": url,
            }
        )
        if disabled_reason is not UNSET:
            field_dict["disabled_reason"] = disabled_reason
        if failing_since is not UNSET:
            field_dict["failing_since"] = failing_since
        if secret is not UNSET:
            field_dict["secret"] = secret

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        accounts = cast(list[str], d.pop("accounts"))

        consecutive_failures = d.pop("consecutive_failures")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        description = d.pop("description")

        enabled = d.pop("enabled")

        events = cast(list[str], d.pop("events"))

        id = d.pop("id")

        jobs = cast(list[int], d.pop("jobs"))

        nodes = cast(list[str], d.pop("nodes"))

        owner = d.pop("owner")

        partitions = cast(list[str], d.pop("partitions"))

        url = d.pop("url")

        def _parse_disabled_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        disabled_reason = _parse_disabled_reason(d.pop("disabled_reason", UNSET))

        def _parse_failing_since(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                failing_since_type_0 = datetime.datetime.fromisoformat(data)

                return failing_since_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        failing_since = _parse_failing_since(d.pop("failing_since", UNSET))

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        webhook = cls(
            accounts=accounts,
            consecutive_failures=consecutive_failures,
            created_at=created_at,
            description=description,
            enabled=enabled,
            events=events,
            id=id,
            jobs=jobs,
            nodes=nodes,
            owner=owner,
            partitions=partitions,
            url=url,
            disabled_reason=disabled_reason,
            failing_since=failing_since,
            secret=secret,
        )

        webhook.additional_properties = d
        return webhook

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
