from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job import Job
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/jobs/{id}/top".format(
            id=quote(str(id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Job | Problem | None:
    if response.status_code == 200:
        response_200 = Job.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Job | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
) -> Response[Job | Problem]:
    """Move a pending job to the top of its user's queue (scontrol top).

     Among the pending (unheld) jobs of the same user, partition, account and QOS, the
    job goes first: its nice is lowered just enough to put its priority above theirs, and
    the nice of those that were ahead raised by an equal share of that (Slurm's method:
    the user's jobs together gain nothing on anyone else's). Whoever may hold the job may
    top it (its owner, its account's coordinators, admins and operators; Slurm needs
    `SchedulerParameters=enable_user_top` for users). A job already first is left as it
    is; 409 for a held job or one the scheduler has not prioritised yet, and when a peer
    is too far ahead (an admin adjustment) for nice values to reorder them.

    Args:
        id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Job | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    *,
    client: AuthenticatedClient,
) -> Job | Problem | None:
    """Move a pending job to the top of its user's queue (scontrol top).

     Among the pending (unheld) jobs of the same user, partition, account and QOS, the
    job goes first: its nice is lowered just enough to put its priority above theirs, and
    the nice of those that were ahead raised by an equal share of that (Slurm's method:
    the user's jobs together gain nothing on anyone else's). Whoever may hold the job may
    top it (its owner, its account's coordinators, admins and operators; Slurm needs
    `SchedulerParameters=enable_user_top` for users). A job already first is left as it
    is; 409 for a held job or one the scheduler has not prioritised yet, and when a peer
    is too far ahead (an admin adjustment) for nice values to reorder them.

    Args:
        id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Job | Problem
    """

    return sync_detailed(
        id=id,
        client=client,
    ).parsed


async def asyncio_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
) -> Response[Job | Problem]:
    """Move a pending job to the top of its user's queue (scontrol top).

     Among the pending (unheld) jobs of the same user, partition, account and QOS, the
    job goes first: its nice is lowered just enough to put its priority above theirs, and
    the nice of those that were ahead raised by an equal share of that (Slurm's method:
    the user's jobs together gain nothing on anyone else's). Whoever may hold the job may
    top it (its owner, its account's coordinators, admins and operators; Slurm needs
    `SchedulerParameters=enable_user_top` for users). A job already first is left as it
    is; 409 for a held job or one the scheduler has not prioritised yet, and when a peer
    is too far ahead (an admin adjustment) for nice values to reorder them.

    Args:
        id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Job | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    *,
    client: AuthenticatedClient,
) -> Job | Problem | None:
    """Move a pending job to the top of its user's queue (scontrol top).

     Among the pending (unheld) jobs of the same user, partition, account and QOS, the
    job goes first: its nice is lowered just enough to put its priority above theirs, and
    the nice of those that were ahead raised by an equal share of that (Slurm's method:
    the user's jobs together gain nothing on anyone else's). Whoever may hold the job may
    top it (its owner, its account's coordinators, admins and operators; Slurm needs
    `SchedulerParameters=enable_user_top` for users). A job already first is left as it
    is; 409 for a held job or one the scheduler has not prioritised yet, and when a peer
    is too far ahead (an admin adjustment) for nice values to reorder them.

    Args:
        id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Job | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
        )
    ).parsed
