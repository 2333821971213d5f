from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.step import Step
from ...models.step_create import StepCreate
from ...types import Response


def _get_kwargs(
    id: int,
    *,
    body: StepCreate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/jobs/{id}/steps".format(
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Step | None:
    if response.status_code == 201:
        response_201 = Step.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | Step]:
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
    body: StepCreate,
) -> Response[Problem | Step]:
    """Create a job step (srun).

     Lays the step's tasks out on the job's allocation (`distribution`: block by default,
    cyclic or plane=N; absent counts take the job's) and hands them to the nodes' workers, which start
    them at their next
    sync. The answer lists every task with its node, `SLURM_PROCID`, `SLURM_LOCALID` and
    GPUs. Only the job's user (or an admin) runs steps in it: a step runs as that user.

    A step with `gpus_per_task` and without `overlap` gets GPUs that no other running such
    step holds; while too few are free the answer is 409 `step_resources_busy` (srun waits
    and retries). Steps without `gpus_per_task`, or with `overlap`, share the job's GPUs.

    Args:
        id (int):
        body (StepCreate): `POST /v1/jobs/{id}/steps`: `srun`'s options and command. Absent counts
            take the job's
            (`-n` its task count, `--ntasks-per-node`, `--gpus-per-task`, `--cpus-per-task`), as
            `srun` inherits them inside an allocation.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Step]
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
    body: StepCreate,
) -> Problem | Step | None:
    """Create a job step (srun).

     Lays the step's tasks out on the job's allocation (`distribution`: block by default,
    cyclic or plane=N; absent counts take the job's) and hands them to the nodes' workers, which start
    them at their next
    sync. The answer lists every task with its node, `SLURM_PROCID`, `SLURM_LOCALID` and
    GPUs. Only the job's user (or an admin) runs steps in it: a step runs as that user.

    A step with `gpus_per_task` and without `overlap` gets GPUs that no other running such
    step holds; while too few are free the answer is 409 `step_resources_busy` (srun waits
    and retries). Steps without `gpus_per_task`, or with `overlap`, share the job's GPUs.

    Args:
        id (int):
        body (StepCreate): `POST /v1/jobs/{id}/steps`: `srun`'s options and command. Absent counts
            take the job's
            (`-n` its task count, `--ntasks-per-node`, `--gpus-per-task`, `--cpus-per-task`), as
            `srun` inherits them inside an allocation.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Step
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
    body: StepCreate,
) -> Response[Problem | Step]:
    """Create a job step (srun).

     Lays the step's tasks out on the job's allocation (`distribution`: block by default,
    cyclic or plane=N; absent counts take the job's) and hands them to the nodes' workers, which start
    them at their next
    sync. The answer lists every task with its node, `SLURM_PROCID`, `SLURM_LOCALID` and
    GPUs. Only the job's user (or an admin) runs steps in it: a step runs as that user.

    A step with `gpus_per_task` and without `overlap` gets GPUs that no other running such
    step holds; while too few are free the answer is 409 `step_resources_busy` (srun waits
    and retries). Steps without `gpus_per_task`, or with `overlap`, share the job's GPUs.

    Args:
        id (int):
        body (StepCreate): `POST /v1/jobs/{id}/steps`: `srun`'s options and command. Absent counts
            take the job's
            (`-n` its task count, `--ntasks-per-node`, `--gpus-per-task`, `--cpus-per-task`), as
            `srun` inherits them inside an allocation.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Step]
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
    body: StepCreate,
) -> Problem | Step | None:
    """Create a job step (srun).

     Lays the step's tasks out on the job's allocation (`distribution`: block by default,
    cyclic or plane=N; absent counts take the job's) and hands them to the nodes' workers, which start
    them at their next
    sync. The answer lists every task with its node, `SLURM_PROCID`, `SLURM_LOCALID` and
    GPUs. Only the job's user (or an admin) runs steps in it: a step runs as that user.

    A step with `gpus_per_task` and without `overlap` gets GPUs that no other running such
    step holds; while too few are free the answer is 409 `step_resources_busy` (srun waits
    and retries). Steps without `gpus_per_task`, or with `overlap`, share the job's GPUs.

    Args:
        id (int):
        body (StepCreate): `POST /v1/jobs/{id}/steps`: `srun`'s options and command. Absent counts
            take the job's
            (`-n` its task count, `--ntasks-per-node`, `--gpus-per-task`, `--cpus-per-task`), as
            `srun` inherits them inside an allocation.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Step
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
        )
    ).parsed
