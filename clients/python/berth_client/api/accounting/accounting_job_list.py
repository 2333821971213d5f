from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.acct_job_list import AcctJobList
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    user: str | Unset = UNSET,
    account: str | Unset = UNSET,
    partition: str | Unset = UNSET,
    state: str | Unset = UNSET,
    qos: str | Unset = UNSET,
    node: str | Unset = UNSET,
    job: str | Unset = UNSET,
    duplicates: bool | Unset = UNSET,
    steps: bool | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["start"] = start

    params["end"] = end

    params["user"] = user

    params["account"] = account

    params["partition"] = partition

    params["state"] = state

    params["qos"] = qos

    params["node"] = node

    params["job"] = job

    params["duplicates"] = duplicates

    params["steps"] = steps

    params["limit"] = limit

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/accounting/jobs",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> AcctJobList | Problem | None:
    if response.status_code == 200:
        response_200 = AcctJobList.from_dict(response.json())

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


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[AcctJobList | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    user: str | Unset = UNSET,
    account: str | Unset = UNSET,
    partition: str | Unset = UNSET,
    state: str | Unset = UNSET,
    qos: str | Unset = UNSET,
    node: str | Unset = UNSET,
    job: str | Unset = UNSET,
    duplicates: bool | Unset = UNSET,
    steps: bool | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[AcctJobList | Problem]:
    """List job accounting records (sacct).

     One item per job run, by job id then run: by default each job's latest run
    (`duplicates=true`: every run, one row per requeue), with TRES requested and
    allocated, times, state, exit code, node list, GPU-seconds, GPU utilisation, memory
    and energy, and cloud cost; pending and running jobs are read live. Filters combine
    with AND; pages follow `next_cursor`. Plain users see their own jobs and those of the
    accounts they coordinate.

    Args:
        start (str | Unset):
        end (str | Unset):
        user (str | Unset):
        account (str | Unset):
        partition (str | Unset):
        state (str | Unset):
        qos (str | Unset):
        node (str | Unset):
        job (str | Unset):
        duplicates (bool | Unset):
        steps (bool | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AcctJobList | Problem]
    """

    kwargs = _get_kwargs(
        start=start,
        end=end,
        user=user,
        account=account,
        partition=partition,
        state=state,
        qos=qos,
        node=node,
        job=job,
        duplicates=duplicates,
        steps=steps,
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
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    user: str | Unset = UNSET,
    account: str | Unset = UNSET,
    partition: str | Unset = UNSET,
    state: str | Unset = UNSET,
    qos: str | Unset = UNSET,
    node: str | Unset = UNSET,
    job: str | Unset = UNSET,
    duplicates: bool | Unset = UNSET,
    steps: bool | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> AcctJobList | Problem | None:
    """List job accounting records (sacct).

     One item per job run, by job id then run: by default each job's latest run
    (`duplicates=true`: every run, one row per requeue), with TRES requested and
    allocated, times, state, exit code, node list, GPU-seconds, GPU utilisation, memory
    and energy, and cloud cost; pending and running jobs are read live. Filters combine
    with AND; pages follow `next_cursor`. Plain users see their own jobs and those of the
    accounts they coordinate.

    Args:
        start (str | Unset):
        end (str | Unset):
        user (str | Unset):
        account (str | Unset):
        partition (str | Unset):
        state (str | Unset):
        qos (str | Unset):
        node (str | Unset):
        job (str | Unset):
        duplicates (bool | Unset):
        steps (bool | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AcctJobList | Problem
    """

    return sync_detailed(
        client=client,
        start=start,
        end=end,
        user=user,
        account=account,
        partition=partition,
        state=state,
        qos=qos,
        node=node,
        job=job,
        duplicates=duplicates,
        steps=steps,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    user: str | Unset = UNSET,
    account: str | Unset = UNSET,
    partition: str | Unset = UNSET,
    state: str | Unset = UNSET,
    qos: str | Unset = UNSET,
    node: str | Unset = UNSET,
    job: str | Unset = UNSET,
    duplicates: bool | Unset = UNSET,
    steps: bool | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[AcctJobList | Problem]:
    """List job accounting records (sacct).

     One item per job run, by job id then run: by default each job's latest run
    (`duplicates=true`: every run, one row per requeue), with TRES requested and
    allocated, times, state, exit code, node list, GPU-seconds, GPU utilisation, memory
    and energy, and cloud cost; pending and running jobs are read live. Filters combine
    with AND; pages follow `next_cursor`. Plain users see their own jobs and those of the
    accounts they coordinate.

    Args:
        start (str | Unset):
        end (str | Unset):
        user (str | Unset):
        account (str | Unset):
        partition (str | Unset):
        state (str | Unset):
        qos (str | Unset):
        node (str | Unset):
        job (str | Unset):
        duplicates (bool | Unset):
        steps (bool | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AcctJobList | Problem]
    """

    kwargs = _get_kwargs(
        start=start,
        end=end,
        user=user,
        account=account,
        partition=partition,
        state=state,
        qos=qos,
        node=node,
        job=job,
        duplicates=duplicates,
        steps=steps,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    user: str | Unset = UNSET,
    account: str | Unset = UNSET,
    partition: str | Unset = UNSET,
    state: str | Unset = UNSET,
    qos: str | Unset = UNSET,
    node: str | Unset = UNSET,
    job: str | Unset = UNSET,
    duplicates: bool | Unset = UNSET,
    steps: bool | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> AcctJobList | Problem | None:
    """List job accounting records (sacct).

     One item per job run, by job id then run: by default each job's latest run
    (`duplicates=true`: every run, one row per requeue), with TRES requested and
    allocated, times, state, exit code, node list, GPU-seconds, GPU utilisation, memory
    and energy, and cloud cost; pending and running jobs are read live. Filters combine
    with AND; pages follow `next_cursor`. Plain users see their own jobs and those of the
    accounts they coordinate.

    Args:
        start (str | Unset):
        end (str | Unset):
        user (str | Unset):
        account (str | Unset):
        partition (str | Unset):
        state (str | Unset):
        qos (str | Unset):
        node (str | Unset):
        job (str | Unset):
        duplicates (bool | Unset):
        steps (bool | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AcctJobList | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            start=start,
            end=end,
            user=user,
            account=account,
            partition=partition,
            state=state,
            qos=qos,
            node=node,
            job=job,
            duplicates=duplicates,
            steps=steps,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
