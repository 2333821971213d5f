from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.reservation import Reservation
from ...models.reservation_update import ReservationUpdate
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: ReservationUpdate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/v1/reservations/{name}".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Reservation | None:
    if response.status_code == 200:
        response_200 = Reservation.from_dict(response.json())

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
    name: str,
    *,
    client: AuthenticatedClient,
    body: ReservationUpdate,
) -> Response[Problem | Reservation]:
    """Change an advance reservation (admin or operator).

     Slurm's `scontrol update ReservationName=…`: the fields given replace the stored ones;
    the result is checked as a new reservation would be (its own hold does not count).

    Args:
        name (str):
        body (ReservationUpdate): `PATCH /v1/reservations/{name}` (`scontrol update
            ReservationName=…`): the fields given
            replace the reservation's; the rest stay. A new `start_time` without `end_time` or
            `duration` keeps the duration; new `nodes`, `node_cnt` or `gpus` pick the held
            resources again.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Reservation]
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
    body: ReservationUpdate,
) -> Problem | Reservation | None:
    """Change an advance reservation (admin or operator).

     Slurm's `scontrol update ReservationName=…`: the fields given replace the stored ones;
    the result is checked as a new reservation would be (its own hold does not count).

    Args:
        name (str):
        body (ReservationUpdate): `PATCH /v1/reservations/{name}` (`scontrol update
            ReservationName=…`): the fields given
            replace the reservation's; the rest stay. A new `start_time` without `end_time` or
            `duration` keeps the duration; new `nodes`, `node_cnt` or `gpus` pick the held
            resources again.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Reservation
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
    body: ReservationUpdate,
) -> Response[Problem | Reservation]:
    """Change an advance reservation (admin or operator).

     Slurm's `scontrol update ReservationName=…`: the fields given replace the stored ones;
    the result is checked as a new reservation would be (its own hold does not count).

    Args:
        name (str):
        body (ReservationUpdate): `PATCH /v1/reservations/{name}` (`scontrol update
            ReservationName=…`): the fields given
            replace the reservation's; the rest stay. A new `start_time` without `end_time` or
            `duration` keeps the duration; new `nodes`, `node_cnt` or `gpus` pick the held
            resources again.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Reservation]
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
    body: ReservationUpdate,
) -> Problem | Reservation | None:
    """Change an advance reservation (admin or operator).

     Slurm's `scontrol update ReservationName=…`: the fields given replace the stored ones;
    the result is checked as a new reservation would be (its own hold does not count).

    Args:
        name (str):
        body (ReservationUpdate): `PATCH /v1/reservations/{name}` (`scontrol update
            ReservationName=…`): the fields given
            replace the reservation's; the rest stay. A new `start_time` without `end_time` or
            `duration` keeps the duration; new `nodes`, `node_cnt` or `gpus` pick the held
            resources again.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Reservation
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
