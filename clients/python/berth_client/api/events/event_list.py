from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.event_list import EventList
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    after: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    type_: str | Unset = UNSET,
    subject: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id

    params: dict[str, Any] = {}

    params["after"] = after

    params["limit"] = limit

    params["type"] = type_

    params["subject"] = subject

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/events",
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> EventList | Problem | None:
    if response.status_code == 200:
        response_200 = EventList.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[EventList | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    type_: str | Unset = UNSET,
    subject: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Response[EventList | Problem]:
    """List or stream events.

     As JSON: a page of events after `after` (or from the oldest), in commit-safe order;
    follow `next_cursor`. With `Accept: text/event-stream`: Server-Sent Events, each with
    `id` the event's id, `event` its type and `data` the CloudEvent, from after
    `Last-Event-ID` (or `after`; by default only new events), kept open. Users see the
    events of their jobs and of the accounts they coordinate, and every node, pool,
    scheduler and reservation event. A principal holds at most `[api]
    max_event_streams_per_user` open streams (16 by default) and an api process
    `max_event_streams` (4,096): one more is refused with 429, naming the limit.

    Args:
        after (str | Unset):
        limit (int | Unset):
        type_ (str | Unset):
        subject (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EventList | Problem]
    """

    kwargs = _get_kwargs(
        after=after,
        limit=limit,
        type_=type_,
        subject=subject,
        last_event_id=last_event_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    type_: str | Unset = UNSET,
    subject: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> EventList | Problem | None:
    """List or stream events.

     As JSON: a page of events after `after` (or from the oldest), in commit-safe order;
    follow `next_cursor`. With `Accept: text/event-stream`: Server-Sent Events, each with
    `id` the event's id, `event` its type and `data` the CloudEvent, from after
    `Last-Event-ID` (or `after`; by default only new events), kept open. Users see the
    events of their jobs and of the accounts they coordinate, and every node, pool,
    scheduler and reservation event. A principal holds at most `[api]
    max_event_streams_per_user` open streams (16 by default) and an api process
    `max_event_streams` (4,096): one more is refused with 429, naming the limit.

    Args:
        after (str | Unset):
        limit (int | Unset):
        type_ (str | Unset):
        subject (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EventList | Problem
    """

    return sync_detailed(
        client=client,
        after=after,
        limit=limit,
        type_=type_,
        subject=subject,
        last_event_id=last_event_id,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    type_: str | Unset = UNSET,
    subject: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Response[EventList | Problem]:
    """List or stream events.

     As JSON: a page of events after `after` (or from the oldest), in commit-safe order;
    follow `next_cursor`. With `Accept: text/event-stream`: Server-Sent Events, each with
    `id` the event's id, `event` its type and `data` the CloudEvent, from after
    `Last-Event-ID` (or `after`; by default only new events), kept open. Users see the
    events of their jobs and of the accounts they coordinate, and every node, pool,
    scheduler and reservation event. A principal holds at most `[api]
    max_event_streams_per_user` open streams (16 by default) and an api process
    `max_event_streams` (4,096): one more is refused with 429, naming the limit.

    Args:
        after (str | Unset):
        limit (int | Unset):
        type_ (str | Unset):
        subject (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EventList | Problem]
    """

    kwargs = _get_kwargs(
        after=after,
        limit=limit,
        type_=type_,
        subject=subject,
        last_event_id=last_event_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    after: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    type_: str | Unset = UNSET,
    subject: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> EventList | Problem | None:
    """List or stream events.

     As JSON: a page of events after `after` (or from the oldest), in commit-safe order;
    follow `next_cursor`. With `Accept: text/event-stream`: Server-Sent Events, each with
    `id` the event's id, `event` its type and `data` the CloudEvent, from after
    `Last-Event-ID` (or `after`; by default only new events), kept open. Users see the
    events of their jobs and of the accounts they coordinate, and every node, pool,
    scheduler and reservation event. A principal holds at most `[api]
    max_event_streams_per_user` open streams (16 by default) and an api process
    `max_event_streams` (4,096): one more is refused with 429, naming the limit.

    Args:
        after (str | Unset):
        limit (int | Unset):
        type_ (str | Unset):
        subject (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EventList | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            after=after,
            limit=limit,
            type_=type_,
            subject=subject,
            last_event_id=last_event_id,
        )
    ).parsed
