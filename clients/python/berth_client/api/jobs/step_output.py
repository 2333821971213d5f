from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.step_output import StepOutput
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: int,
    step: int,
    *,
    after: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["after"] = after

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/jobs/{id}/steps/{step}/output".format(
            id=quote(str(id), safe=""),
            step=quote(str(step), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | StepOutput | None:
    if response.status_code == 200:
        response_200 = StepOutput.from_dict(response.json())

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
) -> Response[Problem | StepOutput]:
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
    after: int | Unset = UNSET,
) -> Response[Problem | StepOutput]:
    """Read a step's output.

     The tasks' output chunks in arrival order after `after` (at most 1000 at a time), each
    naming its task and stream. A task's output is complete once it has ended.

    Args:
        id (int):
        step (int):
        after (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StepOutput]
    """

    kwargs = _get_kwargs(
        id=id,
        step=step,
        after=after,
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
    after: int | Unset = UNSET,
) -> Problem | StepOutput | None:
    """Read a step's output.

     The tasks' output chunks in arrival order after `after` (at most 1000 at a time), each
    naming its task and stream. A task's output is complete once it has ended.

    Args:
        id (int):
        step (int):
        after (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StepOutput
    """

    return sync_detailed(
        id=id,
        step=step,
        client=client,
        after=after,
    ).parsed


async def asyncio_detailed(
    id: int,
    step: int,
    *,
    client: AuthenticatedClient,
    after: int | Unset = UNSET,
) -> Response[Problem | StepOutput]:
    """Read a step's output.

     The tasks' output chunks in arrival order after `after` (at most 1000 at a time), each
    naming its task and stream. A task's output is complete once it has ended.

    Args:
        id (int):
        step (int):
        after (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StepOutput]
    """

    kwargs = _get_kwargs(
        id=id,
        step=step,
        after=after,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    step: int,
    *,
    client: AuthenticatedClient,
    after: int | Unset = UNSET,
) -> Problem | StepOutput | None:
    """Read a step's output.

     The tasks' output chunks in arrival order after `after` (at most 1000 at a time), each
    naming its task and stream. A task's output is complete once it has ended.

    Args:
        id (int):
        step (int):
        after (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StepOutput
    """

    return (
        await asyncio_detailed(
            id=id,
            step=step,
            client=client,
            after=after,
        )
    ).parsed
