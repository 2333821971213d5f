from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.qos import Qos
from ...models.qos_spec import QosSpec
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: QosSpec,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/qos/{name}".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Qos | None:
    if response.status_code == 200:
        response_200 = Qos.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = Qos.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | Qos]:
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
    body: QosSpec,
) -> Response[Problem | Qos]:
    """Create or replace a QOS (admin or operator).

     The body is the QOS's whole definition; absent fields take their defaults. QOS named
    in `preempt` must exist (a QOS may not preempt itself).

    Args:
        name (str):
        body (QosSpec): `PUT /v1/qos/{name}`: a QOS's whole definition (absent fields take their
            defaults).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Qos]
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
    body: QosSpec,
) -> Problem | Qos | None:
    """Create or replace a QOS (admin or operator).

     The body is the QOS's whole definition; absent fields take their defaults. QOS named
    in `preempt` must exist (a QOS may not preempt itself).

    Args:
        name (str):
        body (QosSpec): `PUT /v1/qos/{name}`: a QOS's whole definition (absent fields take their
            defaults).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Qos
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
    body: QosSpec,
) -> Response[Problem | Qos]:
    """Create or replace a QOS (admin or operator).

     The body is the QOS's whole definition; absent fields take their defaults. QOS named
    in `preempt` must exist (a QOS may not preempt itself).

    Args:
        name (str):
        body (QosSpec): `PUT /v1/qos/{name}`: a QOS's whole definition (absent fields take their
            defaults).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Qos]
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
    body: QosSpec,
) -> Problem | Qos | None:
    """Create or replace a QOS (admin or operator).

     The body is the QOS's whole definition; absent fields take their defaults. QOS named
    in `preempt` must exist (a QOS may not preempt itself).

    Args:
        name (str):
        body (QosSpec): `PUT /v1/qos/{name}`: a QOS's whole definition (absent fields take their
            defaults).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Qos
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
