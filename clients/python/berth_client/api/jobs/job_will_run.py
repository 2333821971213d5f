from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job_create import JobCreate
from ...models.job_will_run import JobWillRun
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    *,
    body: JobCreate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/jobs/will-run",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> JobWillRun | Problem | None:
    if response.status_code == 200:
        response_200 = JobWillRun.from_dict(response.json())

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
) -> Response[JobWillRun | Problem]:
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
) -> Response[JobWillRun | Problem]:
    """Test a batch job without submitting it (`sbatch --test-only`).

     The body is what `POST /v1/jobs` takes, checked the same way (the same errors); nothing
    is stored. The answer says when and where the job would start if it were submitted now:
    the scheduler's planner over the current queue, nodes and running jobs' time limits.

    Args:
        body (JobCreate): `POST /v1/jobs`: a batch script with optional `sbatch` command-line
            options, or a
            structured spec with a script. Exactly one of `script` or `spec.wrap` must give the
            commands to run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobWillRun | Problem]
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
    body: JobCreate,
) -> JobWillRun | Problem | None:
    """Test a batch job without submitting it (`sbatch --test-only`).

     The body is what `POST /v1/jobs` takes, checked the same way (the same errors); nothing
    is stored. The answer says when and where the job would start if it were submitted now:
    the scheduler's planner over the current queue, nodes and running jobs' time limits.

    Args:
        body (JobCreate): `POST /v1/jobs`: a batch script with optional `sbatch` command-line
            options, or a
            structured spec with a script. Exactly one of `script` or `spec.wrap` must give the
            commands to run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobWillRun | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: JobCreate,
) -> Response[JobWillRun | Problem]:
    """Test a batch job without submitting it (`sbatch --test-only`).

     The body is what `POST /v1/jobs` takes, checked the same way (the same errors); nothing
    is stored. The answer says when and where the job would start if it were submitted now:
    the scheduler's planner over the current queue, nodes and running jobs' time limits.

    Args:
        body (JobCreate): `POST /v1/jobs`: a batch script with optional `sbatch` command-line
            options, or a
            structured spec with a script. Exactly one of `script` or `spec.wrap` must give the
            commands to run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobWillRun | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: JobCreate,
) -> JobWillRun | Problem | None:
    """Test a batch job without submitting it (`sbatch --test-only`).

     The body is what `POST /v1/jobs` takes, checked the same way (the same errors); nothing
    is stored. The answer says when and where the job would start if it were submitted now:
    the scheduler's planner over the current queue, nodes and running jobs' time limits.

    Args:
        body (JobCreate): `POST /v1/jobs`: a batch script with optional `sbatch` command-line
            options, or a
            structured spec with a script. Exactly one of `script` or `spec.wrap` must give the
            commands to run.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobWillRun | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
