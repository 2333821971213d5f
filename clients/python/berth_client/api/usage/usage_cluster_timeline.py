from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.cluster_timeline import ClusterTimeline
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    points: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["start"] = start

    params["end"] = end

    params["points"] = points

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/usage/cluster/timeline",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ClusterTimeline | Problem | None:
    if response.status_code == 200:
        response_200 = ClusterTimeline.from_dict(response.json())

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


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ClusterTimeline | Problem]:
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
    points: int | Unset = UNSET,
) -> Response[ClusterTimeline | Problem]:
    """Show the cluster's GPU allocation and utilisation over time.

     Per time bucket: GPUs in the cluster, allocated, down, planned down and reserved (the
    scheduler's per-minute samples, averaged over the bucket), and the mean utilisation of
    the GPUs jobs held (the workers' samples). For the console's overview; open to every
    person, like `GET /v1/usage/cluster`.

    Args:
        start (str | Unset):
        end (str | Unset):
        points (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ClusterTimeline | Problem]
    """

    kwargs = _get_kwargs(
        start=start,
        end=end,
        points=points,
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
    points: int | Unset = UNSET,
) -> ClusterTimeline | Problem | None:
    """Show the cluster's GPU allocation and utilisation over time.

     Per time bucket: GPUs in the cluster, allocated, down, planned down and reserved (the
    scheduler's per-minute samples, averaged over the bucket), and the mean utilisation of
    the GPUs jobs held (the workers' samples). For the console's overview; open to every
    person, like `GET /v1/usage/cluster`.

    Args:
        start (str | Unset):
        end (str | Unset):
        points (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ClusterTimeline | Problem
    """

    return sync_detailed(
        client=client,
        start=start,
        end=end,
        points=points,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    points: int | Unset = UNSET,
) -> Response[ClusterTimeline | Problem]:
    """Show the cluster's GPU allocation and utilisation over time.

     Per time bucket: GPUs in the cluster, allocated, down, planned down and reserved (the
    scheduler's per-minute samples, averaged over the bucket), and the mean utilisation of
    the GPUs jobs held (the workers' samples). For the console's overview; open to every
    person, like `GET /v1/usage/cluster`.

    Args:
        start (str | Unset):
        end (str | Unset):
        points (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ClusterTimeline | Problem]
    """

    kwargs = _get_kwargs(
        start=start,
        end=end,
        points=points,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    points: int | Unset = UNSET,
) -> ClusterTimeline | Problem | None:
    """Show the cluster's GPU allocation and utilisation over time.

     Per time bucket: GPUs in the cluster, allocated, down, planned down and reserved (the
    scheduler's per-minute samples, averaged over the bucket), and the mean utilisation of
    the GPUs jobs held (the workers' samples). For the console's overview; open to every
    person, like `GET /v1/usage/cluster`.

    Args:
        start (str | Unset):
        end (str | Unset):
        points (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ClusterTimeline | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            start=start,
            end=end,
            points=points,
        )
    ).parsed
