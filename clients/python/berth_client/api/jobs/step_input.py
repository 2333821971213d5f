from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.step_input import StepInput
from ...types import Response


def _get_kwargs(
    id: int,
    step: int,
    *,
    body: StepInput,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/jobs/{id}/steps/{step}/input".format(
            id=quote(str(id), safe=""),
            step=quote(str(step), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | Problem | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: int,
    step: int,
    *,
    client: AuthenticatedClient,
    body: StepInput,
) -> Response[Any | Problem]:
    """Type into a `--pty` step's terminal (`srun --pty`).

     Stores the bytes typed (`data`, base64) and the terminal's new size (`rows`, `cols`)
    for the node that runs the step's task 0, which writes them to the task's
    pseudo-terminal in the order the api stored them (within milliseconds: the node's long
    poll is woken). Only the job's user (or an admin) may: what is typed runs as that user.

    Args:
        id (int):
        step (int):
        body (StepInput): `POST /v1/jobs/{id}/steps/{step}/input`: what the user of a `--pty` step
            typed, and the
            terminal's size when it changed (`srun --pty` sends both). Input is applied on the node
            in the order the api stored it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        step=step,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    step: int,
    *,
    client: AuthenticatedClient,
    body: StepInput,
) -> Any | Problem | None:
    """Type into a `--pty` step's terminal (`srun --pty`).

     Stores the bytes typed (`data`, base64) and the terminal's new size (`rows`, `cols`)
    for the node that runs the step's task 0, which writes them to the task's
    pseudo-terminal in the order the api stored them (within milliseconds: the node's long
    poll is woken). Only the job's user (or an admin) may: what is typed runs as that user.

    Args:
        id (int):
        step (int):
        body (StepInput): `POST /v1/jobs/{id}/steps/{step}/input`: what the user of a `--pty` step
            typed, and the
            terminal's size when it changed (`srun --pty` sends both). Input is applied on the node
            in the order the api stored it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        id=id,
        step=step,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    id: int,
    step: int,
    *,
    client: AuthenticatedClient,
    body: StepInput,
) -> Response[Any | Problem]:
    """Type into a `--pty` step's terminal (`srun --pty`).

     Stores the bytes typed (`data`, base64) and the terminal's new size (`rows`, `cols`)
    for the node that runs the step's task 0, which writes them to the task's
    pseudo-terminal in the order the api stored them (within milliseconds: the node's long
    poll is woken). Only the job's user (or an admin) may: what is typed runs as that user.

    Args:
        id (int):
        step (int):
        body (StepInput): `POST /v1/jobs/{id}/steps/{step}/input`: what the user of a `--pty` step
            typed, and the
            terminal's size when it changed (`srun --pty` sends both). Input is applied on the node
            in the order the api stored it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        step=step,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    step: int,
    *,
    client: AuthenticatedClient,
    body: StepInput,
) -> Any | Problem | None:
    """Type into a `--pty` step's terminal (`srun --pty`).

     Stores the bytes typed (`data`, base64) and the terminal's new size (`rows`, `cols`)
    for the node that runs the step's task 0, which writes them to the task's
    pseudo-terminal in the order the api stored them (within milliseconds: the node's long
    poll is woken). Only the job's user (or an admin) may: what is typed runs as that user.

    Args:
        id (int):
        step (int):
        body (StepInput): `POST /v1/jobs/{id}/steps/{step}/input`: what the user of a `--pty` step
            typed, and the
            terminal's size when it changed (`srun --pty` sends both). Input is applied on the node
            in the order the api stored it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            step=step,
            client=client,
            body=body,
        )
    ).parsed
