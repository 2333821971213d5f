from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.cluster_usage import ClusterUsage
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    unit: str | Unset = UNSET,
    tres: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["start"] = start

    params["end"] = end

    params["unit"] = unit

    params["tres"] = tres

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/usage/cluster",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ClusterUsage | Problem | None:
    if response.status_code == 200:
        response_200 = ClusterUsage.from_dict(response.json())

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
) -> Response[ClusterUsage | Problem]:
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
    unit: str | Unset = UNSET,
    tres: str | Unset = UNSET,
) -> Response[ClusterUsage | Problem]:
    """Cluster GPU utilisation in a window.

     GPU time per GPU model and in total, as sreport's `cluster Utilization` columns:
    allocated (exact, from the allocations), down (DOWN, DRAINING or DRAINED nodes),
    planned down (powered-down cloud nodes), reserved (held by an active reservation),
    idle (the rest) and reported (every GPU). Down, planned down, reserved and reported
    come from the scheduler's per-minute samples of GPU states, each standing for its
    minute. Window and unit as for `GET /v1/usage`.

    Args:
        start (str | Unset):
        end (str | Unset):
        unit (str | Unset):
        tres (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ClusterUsage | Problem]
    """

    kwargs = _get_kwargs(
        start=start,
        end=end,
        unit=unit,
        tres=tres,
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
    unit: str | Unset = UNSET,
    tres: str | Unset = UNSET,
) -> ClusterUsage | Problem | None:
    """Cluster GPU utilisation in a window.

     GPU time per GPU model and in total, as sreport's `cluster Utilization` columns:
    allocated (exact, from the allocations), down (DOWN, DRAINING or DRAINED nodes),
    planned down (powered-down cloud nodes), reserved (held by an active reservation),
    idle (the rest) and reported (every GPU). Down, planned down, reserved and reported
    come from the scheduler's per-minute samples of GPU states, each standing for its
    minute. Window and unit as for `GET /v1/usage`.

    Args:
        start (str | Unset):
        end (str | Unset):
        unit (str | Unset):
        tres (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ClusterUsage | Problem
    """

    return sync_detailed(
        client=client,
        start=start,
        end=end,
        unit=unit,
        tres=tres,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    unit: str | Unset = UNSET,
    tres: str | Unset = UNSET,
) -> Response[ClusterUsage | Problem]:
    """Cluster GPU utilisation in a window.

     GPU time per GPU model and in total, as sreport's `cluster Utilization` columns:
    allocated (exact, from the allocations), down (DOWN, DRAINING or DRAINED nodes),
    planned down (powered-down cloud nodes), reserved (held by an active reservation),
    idle (the rest) and reported (every GPU). Down, planned down, reserved and reported
    come from the scheduler's per-minute samples of GPU states, each standing for its
    minute. Window and unit as for `GET /v1/usage`.

    Args:
        start (str | Unset):
        end (str | Unset):
        unit (str | Unset):
        tres (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ClusterUsage | Problem]
    """

    kwargs = _get_kwargs(
        start=start,
        end=end,
        unit=unit,
        tres=tres,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    unit: str | Unset = UNSET,
    tres: str | Unset = UNSET,
) -> ClusterUsage | Problem | None:
    """Cluster GPU utilisation in a window.

     GPU time per GPU model and in total, as sreport's `cluster Utilization` columns:
    allocated (exact, from the allocations), down (DOWN, DRAINING or DRAINED nodes),
    planned down (powered-down cloud nodes), reserved (held by an active reservation),
    idle (the rest) and reported (every GPU). Down, planned down, reserved and reported
    come from the scheduler's per-minute samples of GPU states, each standing for its
    minute. Window and unit as for `GET /v1/usage`.

    Args:
        start (str | Unset):
        end (str | Unset):
        unit (str | Unset):
        tres (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ClusterUsage | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            start=start,
            end=end,
            unit=unit,
            tres=tres,
        )
    ).parsed
