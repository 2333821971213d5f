from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job_signal import JobSignal
from ...models.job_signal_queued import JobSignalQueued
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    id: int,
    *,
    body: JobSignal,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/jobs/{id}/signal".format(
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> JobSignalQueued | Problem | None:
    if response.status_code == 202:
        response_202 = JobSignalQueued.from_dict(response.json())

        return response_202

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


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[JobSignalQueued | Problem]:
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
    body: JobSignal,
) -> Response[JobSignalQueued | Problem]:
    """Signal a running job.

     Sends `signal` (a name: `USR1`, `SIGUSR1`, or a number 1 to 31; the real-time signals
    above are refused) to the tasks of every
    running step (the default, Slurm's `scancel --signal`), to the batch shell alone
    (`batch`, `scancel -b`), to the batch shell with everything it started and every step
    (`full`, `scancel -f`), or to one step's tasks (`step`, `scancel --signal JOB.STEP`).
    The job goes on running. An array's id signals every running task of the array;
    `array_task` names one. The job's nodes send it within a sync (milliseconds while
    they are connected). `KILL` is sent like any other signal: to cancel a job, use
    `POST /v1/jobs/{id}/cancel`. Whoever may cancel the job may signal it (its user, its
    account's coordinators, operators and admins, and the job's own token).

    Args:
        id (int):
        body (JobSignal): `POST /v1/jobs/{id}/signal`: a signal for a running job's processes
            (`scancel
            --signal=SIG [-b|-f] JOB[.STEP]`). The job goes on running: a handler in it decides
            what the signal means.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobSignalQueued | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    *,
    client: AuthenticatedClient,
    body: JobSignal,
) -> JobSignalQueued | Problem | None:
    """Signal a running job.

     Sends `signal` (a name: `USR1`, `SIGUSR1`, or a number 1 to 31; the real-time signals
    above are refused) to the tasks of every
    running step (the default, Slurm's `scancel --signal`), to the batch shell alone
    (`batch`, `scancel -b`), to the batch shell with everything it started and every step
    (`full`, `scancel -f`), or to one step's tasks (`step`, `scancel --signal JOB.STEP`).
    The job goes on running. An array's id signals every running task of the array;
    `array_task` names one. The job's nodes send it within a sync (milliseconds while
    they are connected). `KILL` is sent like any other signal: to cancel a job, use
    `POST /v1/jobs/{id}/cancel`. Whoever may cancel the job may signal it (its user, its
    account's coordinators, operators and admins, and the job's own token).

    Args:
        id (int):
        body (JobSignal): `POST /v1/jobs/{id}/signal`: a signal for a running job's processes
            (`scancel
            --signal=SIG [-b|-f] JOB[.STEP]`). The job goes on running: a handler in it decides
            what the signal means.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobSignalQueued | Problem
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
    body: JobSignal,
) -> Response[JobSignalQueued | Problem]:
    """Signal a running job.

     Sends `signal` (a name: `USR1`, `SIGUSR1`, or a number 1 to 31; the real-time signals
    above are refused) to the tasks of every
    running step (the default, Slurm's `scancel --signal`), to the batch shell alone
    (`batch`, `scancel -b`), to the batch shell with everything it started and every step
    (`full`, `scancel -f`), or to one step's tasks (`step`, `scancel --signal JOB.STEP`).
    The job goes on running. An array's id signals every running task of the array;
    `array_task` names one. The job's nodes send it within a sync (milliseconds while
    they are connected). `KILL` is sent like any other signal: to cancel a job, use
    `POST /v1/jobs/{id}/cancel`. Whoever may cancel the job may signal it (its user, its
    account's coordinators, operators and admins, and the job's own token).

    Args:
        id (int):
        body (JobSignal): `POST /v1/jobs/{id}/signal`: a signal for a running job's processes
            (`scancel
            --signal=SIG [-b|-f] JOB[.STEP]`). The job goes on running: a handler in it decides
            what the signal means.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobSignalQueued | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    *,
    client: AuthenticatedClient,
    body: JobSignal,
) -> JobSignalQueued | Problem | None:
    """Signal a running job.

     Sends `signal` (a name: `USR1`, `SIGUSR1`, or a number 1 to 31; the real-time signals
    above are refused) to the tasks of every
    running step (the default, Slurm's `scancel --signal`), to the batch shell alone
    (`batch`, `scancel -b`), to the batch shell with everything it started and every step
    (`full`, `scancel -f`), or to one step's tasks (`step`, `scancel --signal JOB.STEP`).
    The job goes on running. An array's id signals every running task of the array;
    `array_task` names one. The job's nodes send it within a sync (milliseconds while
    they are connected). `KILL` is sent like any other signal: to cancel a job, use
    `POST /v1/jobs/{id}/cancel`. Whoever may cancel the job may signal it (its user, its
    account's coordinators, operators and admins, and the job's own token).

    Args:
        id (int):
        body (JobSignal): `POST /v1/jobs/{id}/signal`: a signal for a running job's processes
            (`scancel
            --signal=SIG [-b|-f] JOB[.STEP]`). The job goes on running: a handler in it decides
            what the signal means.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobSignalQueued | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
        )
    ).parsed
