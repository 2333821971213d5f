from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.node_join import NodeJoin
from ...models.node_joined import NodeJoined
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    *,
    body: NodeJoin,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/nodes/join",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> NodeJoined | Problem | None:
    if response.status_code == 200:
        response_200 = NodeJoined.from_dict(response.json())

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

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

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
) -> Response[NodeJoined | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: NodeJoin,
) -> Response[NodeJoined | Problem]:
    """Join a node (worker) with a bootstrap token.

     The bearer is a bootstrap token (`berth_boot_…`), not a user's token. The answer holds
    the node's credential, for its own routes only (register, sync, its jobs' output).
    A name that is taken (a registered node, or one holding a live credential) is refused:
    a bootstrap token never takes over a node; an admin re-keys one explicitly
    (`POST /v1/nodes/{name}/credential`). A token bound to a node (a cloud instance's,
    minted by the scheduler at launch) joins only as that node, and only while that pool
    node is POWERING_UP without a live credential.

    Args:
        body (NodeJoin): `POST /v1/nodes/join` (with a bootstrap token as the bearer).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NodeJoined | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: NodeJoin,
) -> NodeJoined | Problem | None:
    """Join a node (worker) with a bootstrap token.

     The bearer is a bootstrap token (`berth_boot_…`), not a user's token. The answer holds
    the node's credential, for its own routes only (register, sync, its jobs' output).
    A name that is taken (a registered node, or one holding a live credential) is refused:
    a bootstrap token never takes over a node; an admin re-keys one explicitly
    (`POST /v1/nodes/{name}/credential`). A token bound to a node (a cloud instance's,
    minted by the scheduler at launch) joins only as that node, and only while that pool
    node is POWERING_UP without a live credential.

    Args:
        body (NodeJoin): `POST /v1/nodes/join` (with a bootstrap token as the bearer).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NodeJoined | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: NodeJoin,
) -> Response[NodeJoined | Problem]:
    """Join a node (worker) with a bootstrap token.

     The bearer is a bootstrap token (`berth_boot_…`), not a user's token. The answer holds
    the node's credential, for its own routes only (register, sync, its jobs' output).
    A name that is taken (a registered node, or one holding a live credential) is refused:
    a bootstrap token never takes over a node; an admin re-keys one explicitly
    (`POST /v1/nodes/{name}/credential`). A token bound to a node (a cloud instance's,
    minted by the scheduler at launch) joins only as that node, and only while that pool
    node is POWERING_UP without a live credential.

    Args:
        body (NodeJoin): `POST /v1/nodes/join` (with a bootstrap token as the bearer).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NodeJoined | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: NodeJoin,
) -> NodeJoined | Problem | None:
    """Join a node (worker) with a bootstrap token.

     The bearer is a bootstrap token (`berth_boot_…`), not a user's token. The answer holds
    the node's credential, for its own routes only (register, sync, its jobs' output).
    A name that is taken (a registered node, or one holding a live credential) is refused:
    a bootstrap token never takes over a node; an admin re-keys one explicitly
    (`POST /v1/nodes/{name}/credential`). A token bound to a node (a cloud instance's,
    minted by the scheduler at launch) joins only as that node, and only while that pool
    node is POWERING_UP without a live credential.

    Args:
        body (NodeJoin): `POST /v1/nodes/join` (with a bootstrap token as the bearer).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NodeJoined | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
