from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job_list import JobList
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    state: str | Unset = UNSET,
    user: str | Unset = UNSET,
    partition: str | Unset = UNSET,
    name: str | Unset = UNSET,
    account: str | Unset = UNSET,
    qos: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["state"] = state

    params["user"] = user

    params["partition"] = partition

    params["name"] = name

    params["account"] = account

    params["qos"] = qos

    params["limit"] = limit

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/jobs",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> JobList | Problem | None:
    if response.status_code == 200:
        response_200 = JobList.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[JobList | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    state: str | Unset = UNSET,
    user: str | Unset = UNSET,
    partition: str | Unset = UNSET,
    name: str | Unset = UNSET,
    account: str | Unset = UNSET,
    qos: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[JobList | Problem]:
    """List jobs.

     Filters combine with AND; pages follow `next_cursor`. Plain users see only their own
    jobs and those of the accounts they coordinate.

    Args:
        state (str | Unset):
        user (str | Unset):
        partition (str | Unset):
        name (str | Unset):
        account (str | Unset):
        qos (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobList | Problem]
    """

    kwargs = _get_kwargs(
        state=state,
        user=user,
        partition=partition,
        name=name,
        account=account,
        qos=qos,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    state: str | Unset = UNSET,
    user: str | Unset = UNSET,
    partition: str | Unset = UNSET,
    name: str | Unset = UNSET,
    account: str | Unset = UNSET,
    qos: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> JobList | Problem | None:
    """List jobs.

     Filters combine with AND; pages follow `next_cursor`. Plain users see only their own
    jobs and those of the accounts they coordinate.

    Args:
        state (str | Unset):
        user (str | Unset):
        partition (str | Unset):
        name (str | Unset):
        account (str | Unset):
        qos (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobList | Problem
    """

    return sync_detailed(
        client=client,
        state=state,
        user=user,
        partition=partition,
        name=name,
        account=account,
        qos=qos,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    state: str | Unset = UNSET,
    user: str | Unset = UNSET,
    partition: str | Unset = UNSET,
    name: str | Unset = UNSET,
    account: str | Unset = UNSET,
    qos: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[JobList | Problem]:
    """List jobs.

     Filters combine with AND; pages follow `next_cursor`. Plain users see only their own
    jobs and those of the accounts they coordinate.

    Args:
        state (str | Unset):
        user (str | Unset):
        partition (str | Unset):
        name (str | Unset):
        account (str | Unset):
        qos (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobList | Problem]
    """

    kwargs = _get_kwargs(
        state=state,
        user=user,
        partition=partition,
        name=name,
        account=account,
        qos=qos,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    state: str | Unset = UNSET,
    user: str | Unset = UNSET,
    partition: str | Unset = UNSET,
    name: str | Unset = UNSET,
    account: str | Unset = UNSET,
    qos: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> JobList | Problem | None:
    """List jobs.

     Filters combine with AND; pages follow `next_cursor`. Plain users see only their own
    jobs and those of the accounts they coordinate.

    Args:
        state (str | Unset):
        user (str | Unset):
        partition (str | Unset):
        name (str | Unset):
        account (str | Unset):
        qos (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobList | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            state=state,
            user=user,
            partition=partition,
            name=name,
            account=account,
            qos=qos,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
