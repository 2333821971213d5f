from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.sync_request import SyncRequest
from ...models.sync_response import SyncResponse
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: SyncRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/nodes/{name}/sync".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | SyncResponse | None:
    if response.status_code == 200:
        response_200 = SyncResponse.from_dict(response.json())

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

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

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
) -> Response[Problem | SyncResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    body: SyncRequest,
) -> Response[Problem | SyncResponse]:
    """Sync a node (worker long poll).

     Carries the worker's heartbeat, job reports (applied once each), GPU samples and the
    signals it has sent; returns the batch scripts the node must run, the job runs it must
    stop, the time limits of those it runs and the signals it must send to them. When there is nothing
    to say, the answer waits up to
    `wait_seconds` for a change. A report about a run not placed on this node, or one that
    can never apply, is refused alone and listed in `rejected` with why; a database that
    forgot reports it acknowledged asks for them again (`resend_after`).

    Args:
        name (str):
        body (SyncRequest): `POST /v1/nodes/{name}/sync`: the worker's long poll. It carries the
            heartbeat (its
            arrival), job reports and GPU samples, and returns what the node must run or stop.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SyncResponse]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    *,
    client: AuthenticatedClient,
    body: SyncRequest,
) -> Problem | SyncResponse | None:
    """Sync a node (worker long poll).

     Carries the worker's heartbeat, job reports (applied once each), GPU samples and the
    signals it has sent; returns the batch scripts the node must run, the job runs it must
    stop, the time limits of those it runs and the signals it must send to them. When there is nothing
    to say, the answer waits up to
    `wait_seconds` for a change. A report about a run not placed on this node, or one that
    can never apply, is refused alone and listed in `rejected` with why; a database that
    forgot reports it acknowledged asks for them again (`resend_after`).

    Args:
        name (str):
        body (SyncRequest): `POST /v1/nodes/{name}/sync`: the worker's long poll. It carries the
            heartbeat (its
            arrival), job reports and GPU samples, and returns what the node must run or stop.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SyncResponse
    """

    return sync_detailed(
        name=name,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    body: SyncRequest,
) -> Response[Problem | SyncResponse]:
    """Sync a node (worker long poll).

     Carries the worker's heartbeat, job reports (applied once each), GPU samples and the
    signals it has sent; returns the batch scripts the node must run, the job runs it must
    stop, the time limits of those it runs and the signals it must send to them. When there is nothing
    to say, the answer waits up to
    `wait_seconds` for a change. A report about a run not placed on this node, or one that
    can never apply, is refused alone and listed in `rejected` with why; a database that
    forgot reports it acknowledged asks for them again (`resend_after`).

    Args:
        name (str):
        body (SyncRequest): `POST /v1/nodes/{name}/sync`: the worker's long poll. It carries the
            heartbeat (its
            arrival), job reports and GPU samples, and returns what the node must run or stop.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SyncResponse]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient,
    body: SyncRequest,
) -> Problem | SyncResponse | None:
    """Sync a node (worker long poll).

     Carries the worker's heartbeat, job reports (applied once each), GPU samples and the
    signals it has sent; returns the batch scripts the node must run, the job runs it must
    stop, the time limits of those it runs and the signals it must send to them. When there is nothing
    to say, the answer waits up to
    `wait_seconds` for a change. A report about a run not placed on this node, or one that
    can never apply, is refused alone and listed in `rejected` with why; a database that
    forgot reports it acknowledged asks for them again (`resend_after`).

    Args:
        name (str):
        body (SyncRequest): `POST /v1/nodes/{name}/sync`: the worker's long poll. It carries the
            heartbeat (its
            arrival), job reports and GPU samples, and returns what the node must run or stop.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SyncResponse
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
