from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job_create import JobCreate
from ...models.job_created import JobCreated
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: JobCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/jobs",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> JobCreated | Problem | None:
    if response.status_code == 200:
        response_200 = JobCreated.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = JobCreated.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

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
) -> Response[JobCreated | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: JobCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[JobCreated | Problem]:
    """Submit a batch job.

     The body holds a batch script whose `#SBATCH` lines are read as `sbatch` reads them,
    optional command-line options (which win), or a structured spec. A repeated request
    with the same `Idempotency-Key` and body returns the first job (200) instead of making
    another.

    Args:
        idempotency_key (None | str | Unset):
        body (JobCreate): `POST /v1/jobs`: a batch script with optional `sbatch` command-line
            options, or a
            structured spec with a script. Exactly one of `script` or `spec.wrap` must give the
            commands to run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobCreated | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: JobCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> JobCreated | Problem | None:
    """Submit a batch job.

     The body holds a batch script whose `#SBATCH` lines are read as `sbatch` reads them,
    optional command-line options (which win), or a structured spec. A repeated request
    with the same `Idempotency-Key` and body returns the first job (200) instead of making
    another.

    Args:
        idempotency_key (None | str | Unset):
        body (JobCreate): `POST /v1/jobs`: a batch script with optional `sbatch` command-line
            options, or a
            structured spec with a script. Exactly one of `script` or `spec.wrap` must give the
            commands to run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobCreated | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: JobCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[JobCreated | Problem]:
    """Submit a batch job.

     The body holds a batch script whose `#SBATCH` lines are read as `sbatch` reads them,
    optional command-line options (which win), or a structured spec. A repeated request
    with the same `Idempotency-Key` and body returns the first job (200) instead of making
    another.

    Args:
        idempotency_key (None | str | Unset):
        body (JobCreate): `POST /v1/jobs`: a batch script with optional `sbatch` command-line
            options, or a
            structured spec with a script. Exactly one of `script` or `spec.wrap` must give the
            commands to run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobCreated | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: JobCreate,
    idempotency_key: None | str | Unset = UNSET,
) -> JobCreated | Problem | None:
    """Submit a batch job.

     The body holds a batch script whose `#SBATCH` lines are read as `sbatch` reads them,
    optional command-line options (which win), or a structured spec. A repeated request
    with the same `Idempotency-Key` and body returns the first job (200) instead of making
    another.

    Args:
        idempotency_key (None | str | Unset):
        body (JobCreate): `POST /v1/jobs`: a batch script with optional `sbatch` command-line
            options, or a
            structured spec with a script. Exactly one of `script` or `spec.wrap` must give the
            commands to run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobCreated | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
