from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.queue_list import QueueList
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
    fields: str | Unset = UNSET,
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

    params["fields"] = fields

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/queue",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | QueueList | None:
    if response.status_code == 200:
        response_200 = QueueList.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | QueueList]:
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
    fields: str | Unset = UNSET,
) -> Response[Problem | QueueList]:
    """List the queue as squeue shows it.

     The live queue, as slurmctld holds it: jobs not ended, and ended jobs for
    `[scheduler] min_job_age_seconds` (Slurm's `MinJobAge`, 300 s) after their end; older
    ones stay in `GET /v1/jobs` and accounting.

    The jobs `GET /v1/jobs` lists for the same filters (and the same caller), with only
    the fields squeue's formats show: no spec, environment or allocation detail, and no
    queue position, by ascending id.

    Two shapes, by `Accept`:
    * `application/json` (the default): a page of up to `limit` jobs (1..=10000, default
      10000); pages follow `next_cursor`.
    * `application/x-ndjson`: one job a line (a [`QueueJob`] document), sent as the
      database returns them, so that a client reads the first while the last are still
      being read: every matching job, or the first `limit` (1..=10000) when it is given
      (ask for the rest with `cursor` set to the last line's id). A stream cut short (the
      database failed mid-way, the client took nothing for 5 s, or the whole took over
      60 s) ends the connection without the chunked body's last chunk, never as a shorter
      list that looks whole.

    `fields` (`name,user,partition`) keeps only those fields of each job, beside `id` and
    `state`, in either shape; a name that is no field of `QueueJob` is a 400 naming it.

    Args:
        state (str | Unset):
        user (str | Unset):
        partition (str | Unset):
        name (str | Unset):
        account (str | Unset):
        qos (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):
        fields (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueueList]
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
        fields=fields,
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
    fields: str | Unset = UNSET,
) -> Problem | QueueList | None:
    """List the queue as squeue shows it.

     The live queue, as slurmctld holds it: jobs not ended, and ended jobs for
    `[scheduler] min_job_age_seconds` (Slurm's `MinJobAge`, 300 s) after their end; older
    ones stay in `GET /v1/jobs` and accounting.

    The jobs `GET /v1/jobs` lists for the same filters (and the same caller), with only
    the fields squeue's formats show: no spec, environment or allocation detail, and no
    queue position, by ascending id.

    Two shapes, by `Accept`:
    * `application/json` (the default): a page of up to `limit` jobs (1..=10000, default
      10000); pages follow `next_cursor`.
    * `application/x-ndjson`: one job a line (a [`QueueJob`] document), sent as the
      database returns them, so that a client reads the first while the last are still
      being read: every matching job, or the first `limit` (1..=10000) when it is given
      (ask for the rest with `cursor` set to the last line's id). A stream cut short (the
      database failed mid-way, the client took nothing for 5 s, or the whole took over
      60 s) ends the connection without the chunked body's last chunk, never as a shorter
      list that looks whole.

    `fields` (`name,user,partition`) keeps only those fields of each job, beside `id` and
    `state`, in either shape; a name that is no field of `QueueJob` is a 400 naming it.

    Args:
        state (str | Unset):
        user (str | Unset):
        partition (str | Unset):
        name (str | Unset):
        account (str | Unset):
        qos (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):
        fields (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueueList
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
        fields=fields,
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
    fields: str | Unset = UNSET,
) -> Response[Problem | QueueList]:
    """List the queue as squeue shows it.

     The live queue, as slurmctld holds it: jobs not ended, and ended jobs for
    `[scheduler] min_job_age_seconds` (Slurm's `MinJobAge`, 300 s) after their end; older
    ones stay in `GET /v1/jobs` and accounting.

    The jobs `GET /v1/jobs` lists for the same filters (and the same caller), with only
    the fields squeue's formats show: no spec, environment or allocation detail, and no
    queue position, by ascending id.

    Two shapes, by `Accept`:
    * `application/json` (the default): a page of up to `limit` jobs (1..=10000, default
      10000); pages follow `next_cursor`.
    * `application/x-ndjson`: one job a line (a [`QueueJob`] document), sent as the
      database returns them, so that a client reads the first while the last are still
      being read: every matching job, or the first `limit` (1..=10000) when it is given
      (ask for the rest with `cursor` set to the last line's id). A stream cut short (the
      database failed mid-way, the client took nothing for 5 s, or the whole took over
      60 s) ends the connection without the chunked body's last chunk, never as a shorter
      list that looks whole.

    `fields` (`name,user,partition`) keeps only those fields of each job, beside `id` and
    `state`, in either shape; a name that is no field of `QueueJob` is a 400 naming it.

    Args:
        state (str | Unset):
        user (str | Unset):
        partition (str | Unset):
        name (str | Unset):
        account (str | Unset):
        qos (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):
        fields (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueueList]
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
        fields=fields,
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
    fields: str | Unset = UNSET,
) -> Problem | QueueList | None:
    """List the queue as squeue shows it.

     The live queue, as slurmctld holds it: jobs not ended, and ended jobs for
    `[scheduler] min_job_age_seconds` (Slurm's `MinJobAge`, 300 s) after their end; older
    ones stay in `GET /v1/jobs` and accounting.

    The jobs `GET /v1/jobs` lists for the same filters (and the same caller), with only
    the fields squeue's formats show: no spec, environment or allocation detail, and no
    queue position, by ascending id.

    Two shapes, by `Accept`:
    * `application/json` (the default): a page of up to `limit` jobs (1..=10000, default
      10000); pages follow `next_cursor`.
    * `application/x-ndjson`: one job a line (a [`QueueJob`] document), sent as the
      database returns them, so that a client reads the first while the last are still
      being read: every matching job, or the first `limit` (1..=10000) when it is given
      (ask for the rest with `cursor` set to the last line's id). A stream cut short (the
      database failed mid-way, the client took nothing for 5 s, or the whole took over
      60 s) ends the connection without the chunked body's last chunk, never as a shorter
      list that looks whole.

    `fields` (`name,user,partition`) keeps only those fields of each job, beside `id` and
    `state`, in either shape; a name that is no field of `QueueJob` is a 400 naming it.

    Args:
        state (str | Unset):
        user (str | Unset):
        partition (str | Unset):
        name (str | Unset):
        account (str | Unset):
        qos (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):
        fields (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueueList
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
            fields=fields,
        )
    ).parsed
