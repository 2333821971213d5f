import datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job_gpu_samples import JobGpuSamples
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: int,
    *,
    run: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    points: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["run"] = run

    json_since: str | Unset = UNSET
    if not isinstance(since, Unset):
        json_since = since.isoformat()
    params["since"] = json_since

    params["points"] = points

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/jobs/{id}/gpu-samples".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> JobGpuSamples | Problem | None:
    if response.status_code == 200:
        response_200 = JobGpuSamples.from_dict(response.json())

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
) -> Response[JobGpuSamples | Problem]:
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
    run: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    points: int | Unset = UNSET,
) -> Response[JobGpuSamples | Problem]:
    """Show a job's GPU usage over time.

     Per GPU the run held: mean utilisation (percent), highest memory in use (MiB) and
    mean power (watts) per time bucket. Workers sample every sync; the series keeps one
    sample per GPU every 10 s, and buckets widen so that a series has at most `points`
    points. Kept after the job ends, with the job.

    Args:
        id (int):
        run (int | Unset):
        since (datetime.datetime | Unset):
        points (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobGpuSamples | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        run=run,
        since=since,
        points=points,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    *,
    client: AuthenticatedClient,
    run: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    points: int | Unset = UNSET,
) -> JobGpuSamples | Problem | None:
    """Show a job's GPU usage over time.

     Per GPU the run held: mean utilisation (percent), highest memory in use (MiB) and
    mean power (watts) per time bucket. Workers sample every sync; the series keeps one
    sample per GPU every 10 s, and buckets widen so that a series has at most `points`
    points. Kept after the job ends, with the job.

    Args:
        id (int):
        run (int | Unset):
        since (datetime.datetime | Unset):
        points (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobGpuSamples | Problem
    """

    return sync_detailed(
        id=id,
        client=client,
        run=run,
        since=since,
        points=points,
    ).parsed


async def asyncio_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
    run: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    points: int | Unset = UNSET,
) -> Response[JobGpuSamples | Problem]:
    """Show a job's GPU usage over time.

     Per GPU the run held: mean utilisation (percent), highest memory in use (MiB) and
    mean power (watts) per time bucket. Workers sample every sync; the series keeps one
    sample per GPU every 10 s, and buckets widen so that a series has at most `points`
    points. Kept after the job ends, with the job.

    Args:
        id (int):
        run (int | Unset):
        since (datetime.datetime | Unset):
        points (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobGpuSamples | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        run=run,
        since=since,
        points=points,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    *,
    client: AuthenticatedClient,
    run: int | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    points: int | Unset = UNSET,
) -> JobGpuSamples | Problem | None:
    """Show a job's GPU usage over time.

     Per GPU the run held: mean utilisation (percent), highest memory in use (MiB) and
    mean power (watts) per time bucket. Workers sample every sync; the series keeps one
    sample per GPU every 10 s, and buckets widen so that a series has at most `points`
    points. Kept after the job ends, with the job.

    Args:
        id (int):
        run (int | Unset):
        since (datetime.datetime | Unset):
        points (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobGpuSamples | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            run=run,
            since=since,
            points=points,
        )
    ).parsed
