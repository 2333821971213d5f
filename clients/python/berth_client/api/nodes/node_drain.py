from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.node import Node
from ...models.node_drain import NodeDrain
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: NodeDrain,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/nodes/{name}/drain".format(
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
    body: NodeDrain,
) -> Response[Node | Problem]:
    """Drain a node (admin or operator).

     No new job is placed on it; jobs running there finish. The node is DRAINING while it
    holds jobs and DRAINED after; a DOWN node stays DOWN but keeps the reason, so it does not
    return to service by itself. Draining again replaces the reason.

    Args:
        name (str):
        body (NodeDrain): `POST /v1/nodes/{name}/drain`: why the node is drained (scontrol's
            `Reason=`, required
            as in Slurm).

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
    body: NodeDrain,
) -> Node | Problem | None:
    """Drain a node (admin or operator).

     No new job is placed on it; jobs running there finish. The node is DRAINING while it
    holds jobs and DRAINED after; a DOWN node stays DOWN but keeps the reason, so it does not
    return to service by itself. Draining again replaces the reason.

    Args:
        name (str):
        body (NodeDrain): `POST /v1/nodes/{name}/drain`: why the node is drained (scontrol's
            `Reason=`, required
            as in Slurm).

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
    body: NodeDrain,
) -> Response[Node | Problem]:
    """Drain a node (admin or operator).

     No new job is placed on it; jobs running there finish. The node is DRAINING while it
    holds jobs and DRAINED after; a DOWN node stays DOWN but keeps the reason, so it does not
    return to service by itself. Draining again replaces the reason.

    Args:
        name (str):
        body (NodeDrain): `POST /v1/nodes/{name}/drain`: why the node is drained (scontrol's
            `Reason=`, required
            as in Slurm).

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
    body: NodeDrain,
) -> Node | Problem | None:
    """Drain a node (admin or operator).

     No new job is placed on it; jobs running there finish. The node is DRAINING while it
    holds jobs and DRAINED after; a DOWN node stays DOWN but keeps the reason, so it does not
    return to service by itself. Draining again replaces the reason.

    Args:
        name (str):
        body (NodeDrain): `POST /v1/nodes/{name}/drain`: why the node is drained (scontrol's
            `Reason=`, required
            as in Slurm).

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
