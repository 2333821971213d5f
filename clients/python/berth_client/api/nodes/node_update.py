from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.node import Node
from ...models.node_update import NodeUpdate
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: NodeUpdate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/v1/nodes/{name}".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Node | Problem | None:
    if response.status_code == 200:
        response_200 = Node.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Node | Problem]:
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
    body: NodeUpdate,
) -> Response[Node | Problem]:
    """Configure a node (admin or operator).

     Sets what slurm.conf's node line (and `scontrol update NodeName=…`) sets: CPUs,
    RealMemory (MiB), Features, Weight, CoreSpecCount and MemSpecLimit (MiB). A field left
    out keeps its value; `null` returns it to what the worker reports. Configured values
    survive the worker's re-registration; the scheduler places by them from its next cycle.

    Args:
        name (str):
        body (NodeUpdate): `PATCH /v1/nodes/{name}`: what an operator configures for a node, as
            slurm.conf's node
            line (and `scontrol update NodeName=…`) does. A field left out keeps its value; `null`
            clears the configured value, so the worker's reported one applies again (Weight: 1;
            the reserves: 0). Configured values survive the worker's re-registration.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Node | Problem]
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
    body: NodeUpdate,
) -> Node | Problem | None:
    """Configure a node (admin or operator).

     Sets what slurm.conf's node line (and `scontrol update NodeName=…`) sets: CPUs,
    RealMemory (MiB), Features, Weight, CoreSpecCount and MemSpecLimit (MiB). A field left
    out keeps its value; `null` returns it to what the worker reports. Configured values
    survive the worker's re-registration; the scheduler places by them from its next cycle.

    Args:
        name (str):
        body (NodeUpdate): `PATCH /v1/nodes/{name}`: what an operator configures for a node, as
            slurm.conf's node
            line (and `scontrol update NodeName=…`) does. A field left out keeps its value; `null`
            clears the configured value, so the worker's reported one applies again (Weight: 1;
            the reserves: 0). Configured values survive the worker's re-registration.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Node | Problem
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
    body: NodeUpdate,
) -> Response[Node | Problem]:
    """Configure a node (admin or operator).

     Sets what slurm.conf's node line (and `scontrol update NodeName=…`) sets: CPUs,
    RealMemory (MiB), Features, Weight, CoreSpecCount and MemSpecLimit (MiB). A field left
    out keeps its value; `null` returns it to what the worker reports. Configured values
    survive the worker's re-registration; the scheduler places by them from its next cycle.

    Args:
        name (str):
        body (NodeUpdate): `PATCH /v1/nodes/{name}`: what an operator configures for a node, as
            slurm.conf's node
            line (and `scontrol update NodeName=…`) does. A field left out keeps its value; `null`
            clears the configured value, so the worker's reported one applies again (Weight: 1;
            the reserves: 0). Configured values survive the worker's re-registration.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Node | Problem]
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
    body: NodeUpdate,
) -> Node | Problem | None:
    """Configure a node (admin or operator).

     Sets what slurm.conf's node line (and `scontrol update NodeName=…`) sets: CPUs,
    RealMemory (MiB), Features, Weight, CoreSpecCount and MemSpecLimit (MiB). A field left
    out keeps its value; `null` returns it to what the worker reports. Configured values
    survive the worker's re-registration; the scheduler places by them from its next cycle.

    Args:
        name (str):
        body (NodeUpdate): `PATCH /v1/nodes/{name}`: what an operator configures for a node, as
            slurm.conf's node
            line (and `scontrol update NodeName=…`) does. A field left out keeps its value; `null`
            clears the configured value, so the worker's reported one applies again (Weight: 1;
            the reserves: 0). Configured values survive the worker's re-registration.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Node | Problem
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
