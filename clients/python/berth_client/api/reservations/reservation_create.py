from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.reservation import Reservation
from ...models.reservation_create import ReservationCreate
from ...types import Response


def _get_kwargs(
    *,
    body: ReservationCreate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/reservations",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Reservation | None:
    if response.status_code == 201:
        response_201 = Reservation.from_dict(response.json())

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

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

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
) -> Response[Problem | Reservation]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: ReservationCreate,
) -> Response[Problem | Reservation]:
    """Create an advance reservation (admin or operator).

     Slurm's `scontrol create reservation`: what it holds is picked now and stored. Refused
    with 409 where running jobs would still hold those resources in its window (without
    `IGNORE_JOBS`) or another reservation holds them at an overlapping time (without
    `MAINT`).

    Args:
        body (ReservationCreate): `POST /v1/reservations`: an advance reservation, as Slurm's
            `scontrol create
            reservation` takes it. Exactly one of `nodes`, `node_cnt` or `gpus` says what it holds;
            at least one of `users` or `accounts` says who may use it; `end_time` or `duration`
            says when it ends.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Reservation]
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
    body: ReservationCreate,
) -> Problem | Reservation | None:
    """Create an advance reservation (admin or operator).

     Slurm's `scontrol create reservation`: what it holds is picked now and stored. Refused
    with 409 where running jobs would still hold those resources in its window (without
    `IGNORE_JOBS`) or another reservation holds them at an overlapping time (without
    `MAINT`).

    Args:
        body (ReservationCreate): `POST /v1/reservations`: an advance reservation, as Slurm's
            `scontrol create
            reservation` takes it. Exactly one of `nodes`, `node_cnt` or `gpus` says what it holds;
            at least one of `users` or `accounts` says who may use it; `end_time` or `duration`
            says when it ends.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Reservation
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: ReservationCreate,
) -> Response[Problem | Reservation]:
    """Create an advance reservation (admin or operator).

     Slurm's `scontrol create reservation`: what it holds is picked now and stored. Refused
    with 409 where running jobs would still hold those resources in its window (without
    `IGNORE_JOBS`) or another reservation holds them at an overlapping time (without
    `MAINT`).

    Args:
        body (ReservationCreate): `POST /v1/reservations`: an advance reservation, as Slurm's
            `scontrol create
            reservation` takes it. Exactly one of `nodes`, `node_cnt` or `gpus` says what it holds;
            at least one of `users` or `accounts` says who may use it; `end_time` or `duration`
            says when it ends.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Reservation]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: ReservationCreate,
) -> Problem | Reservation | None:
    """Create an advance reservation (admin or operator).

     Slurm's `scontrol create reservation`: what it holds is picked now and stored. Refused
    with 409 where running jobs would still hold those resources in its window (without
    `IGNORE_JOBS`) or another reservation holds them at an overlapping time (without
    `MAINT`).

    Args:
        body (ReservationCreate): `POST /v1/reservations`: an advance reservation, as Slurm's
            `scontrol create
            reservation` takes it. Exactly one of `nodes`, `node_cnt` or `gpus` says what it holds;
            at least one of `users` or `accounts` says who may use it; `end_time` or `duration`
            says when it ends.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Reservation
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
