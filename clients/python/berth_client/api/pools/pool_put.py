from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.pool import Pool
from ...models.pool_spec import PoolSpec
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: PoolSpec,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/pools/{name}".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Pool | Problem | None:
    if response.status_code == 200:
        response_200 = Pool.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = Pool.from_dict(response.json())

        return response_201

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Pool | Problem]:
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
    body: PoolSpec,
) -> Response[Pool | Problem]:
    """Declare a cloud node pool (admins).

     The body is the pool's whole definition (what `[pools.NAME]` in the server
    configuration holds). Its node slots `<name>-1` … `<name>-<max_nodes>` are created
    POWERED_DOWN with the shape of the first instance type, and join the node lists of
    `partitions` (a partition listing no nodes holds every node already). Lowering
    `max_nodes` removes the slots above it that are powered down; the others stay until
    they are powered down (no instance is launched for them) and a later declaration
    removes them.

    Args:
        name (str):
        body (PoolSpec): A pool, as declared: `PUT /v1/pools/{name}` takes it, `[pools.NAME]` in
            the server
            config holds it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Pool | Problem]
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
    body: PoolSpec,
) -> Pool | Problem | None:
    """Declare a cloud node pool (admins).

     The body is the pool's whole definition (what `[pools.NAME]` in the server
    configuration holds). Its node slots `<name>-1` … `<name>-<max_nodes>` are created
    POWERED_DOWN with the shape of the first instance type, and join the node lists of
    `partitions` (a partition listing no nodes holds every node already). Lowering
    `max_nodes` removes the slots above it that are powered down; the others stay until
    they are powered down (no instance is launched for them) and a later declaration
    removes them.

    Args:
        name (str):
        body (PoolSpec): A pool, as declared: `PUT /v1/pools/{name}` takes it, `[pools.NAME]` in
            the server
            config holds it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Pool | Problem
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
    body: PoolSpec,
) -> Response[Pool | Problem]:
    """Declare a cloud node pool (admins).

     The body is the pool's whole definition (what `[pools.NAME]` in the server
    configuration holds). Its node slots `<name>-1` … `<name>-<max_nodes>` are created
    POWERED_DOWN with the shape of the first instance type, and join the node lists of
    `partitions` (a partition listing no nodes holds every node already). Lowering
    `max_nodes` removes the slots above it that are powered down; the others stay until
    they are powered down (no instance is launched for them) and a later declaration
    removes them.

    Args:
        name (str):
        body (PoolSpec): A pool, as declared: `PUT /v1/pools/{name}` takes it, `[pools.NAME]` in
            the server
            config holds it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Pool | Problem]
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
    body: PoolSpec,
) -> Pool | Problem | None:
    """Declare a cloud node pool (admins).

     The body is the pool's whole definition (what `[pools.NAME]` in the server
    configuration holds). Its node slots `<name>-1` … `<name>-<max_nodes>` are created
    POWERED_DOWN with the shape of the first instance type, and join the node lists of
    `partitions` (a partition listing no nodes holds every node already). Lowering
    `max_nodes` removes the slots above it that are powered down; the others stay until
    they are powered down (no instance is launched for them) and a later declaration
    removes them.

    Args:
        name (str):
        body (PoolSpec): A pool, as declared: `PUT /v1/pools/{name}` takes it, `[pools.NAME]` in
            the server
            config holds it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Pool | Problem
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
