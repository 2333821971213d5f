from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookCreate")


@_attrs_define
class WebhookCreate:
    """`POST /v1/webhooks`.

    Attributes:
        events (list[str]): The event types to receive: exact types, `berth.job.*`-style prefixes or `*`.
        url (str): Where to POST events (`https://…`; `http://` too).
        accounts (list[str] | Unset): Only events of jobs of these accounts (empty: any).
        description (str | Unset): A note for the owner.
        jobs (list[int] | Unset): Only events of these jobs (empty: any).
        nodes (list[str] | Unset): Only events of these nodes (empty: any).
        partitions (list[str] | Unset): Only events of jobs in these partitions (empty: any).
        secret (None | str | Unset): The signing secret (Standard Webhooks: `whsec_` and the base64 of 24 to 64 random
            bytes); one is generated when absent. Shown once, in the answer to this call.
    """

    events: list[str]
    url: str
    accounts: list[str] | Unset = UNSET
    description: str | Unset = UNSET
    jobs: list[int] | Unset = UNSET
    nodes: list[str] | Unset = UNSET
    partitions: list[str] | Unset = UNSET
    secret: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        events = self.events

        url = self.url

        accounts: list[str] | Unset = UNSET
        if not isinstance(self.accounts, Unset):
            accounts = self.accounts

        description = self.description

        jobs: list[int] | Unset = UNSET
        if not isinstance(self.jobs, Unset):
            jobs = self.jobs

        nodes: list[str] | Unset = UNSET
        if not isinstance(self.nodes, Unset):
            nodes = self.nodes

        partitions: list[str] | Unset = UNSET
        if not isinstance(self.partitions, Unset):
            partitions = self.partitions

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "events": events,
                "url": url,
            }
        )
        if accounts is not UNSET:
            field_dict["accounts"] = accounts
        if description is not UNSET:
            field_dict["description"] = description
        if jobs is not UNSET:
            field_dict["jobs"] = jobs
        if nodes is not UNSET:
            field_dict["nodes"] = nodes
        if partitions is not UNSET:
            field_dict["partitions"] = partitions
        if secret is not UNSET:
            field_dict["secret"] = secret

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        events = cast(list[str], d.pop("events"))

        url = d.pop("url")

        accounts = cast(list[str], d.pop("accounts", UNSET))

        description = d.pop("description", UNSET)

        jobs = cast(list[int], d.pop("jobs", UNSET))

        nodes = cast(list[str], d.pop("nodes", UNSET))

        partitions = cast(list[str], d.pop("partitions", UNSET))

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        webhook_create = cls(
            events=events,
            url=url,
            accounts=accounts,
            description=description,
            jobs=jobs,
            nodes=nodes,
            partitions=partitions,
            secret=secret,
        )

        return webhook_create
