from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.output_stream import OutputStream
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: int,
    *,
    stream: OutputStream | Unset = UNSET,
    follow: bool | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_stream: str | Unset = UNSET
    if not isinstance(stream, Unset):
        json_stream = stream.value

    params["stream"] = json_stream

    params["follow"] = follow

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/jobs/{id}/output".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | str | None:
    if response.status_code == 200:
        response_200 = response.text
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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | str]:
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
    stream: OutputStream | Unset = UNSET,
    follow: bool | Unset = UNSET,
) -> Response[Problem | str]:
    """Read a job's output.

     Returns what the job has written to the stream so far, as text, streamed from the
    database page by page. With `follow=true` the response stays open and new output is
    streamed until the job ends. The api keeps at most its output cap per run (`[api]
    output_cap_mib`); a run cut there ends with a line saying so (the file on the node is
    whole).

    Args:
        id (int):
        stream (OutputStream | Unset): Which output stream.
        follow (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | str]
    """

    kwargs = _get_kwargs(
        id=id,
        stream=stream,
        follow=follow,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    *,
    client: AuthenticatedClient,
    stream: OutputStream | Unset = UNSET,
    follow: bool | Unset = UNSET,
) -> Problem | str | None:
    """Read a job's output.

     Returns what the job has written to the stream so far, as text, streamed from the
    database page by page. With `follow=true` the response stays open and new output is
    streamed until the job ends. The api keeps at most its output cap per run (`[api]
    output_cap_mib`); a run cut there ends with a line saying so (the file on the node is
    whole).

    Args:
        id (int):
        stream (OutputStream | Unset): Which output stream.
        follow (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | str
    """

    return sync_detailed(
        id=id,
        client=client,
        stream=stream,
        follow=follow,
    ).parsed


async def asyncio_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
    stream: OutputStream | Unset = UNSET,
    follow: bool | Unset = UNSET,
) -> Response[Problem | str]:
    """Read a job's output.

     Returns what the job has written to the stream so far, as text, streamed from the
    database page by page. With `follow=true` the response stays open and new output is
    streamed until the job ends. The api keeps at most its output cap per run (`[api]
    output_cap_mib`); a run cut there ends with a line saying so (the file on the node is
    whole).

    Args:
        id (int):
        stream (OutputStream | Unset): Which output stream.
        follow (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | str]
    """

    kwargs = _get_kwargs(
        id=id,
        stream=stream,
        follow=follow,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    *,
    client: AuthenticatedClient,
    stream: OutputStream | Unset = UNSET,
    follow: bool | Unset = UNSET,
) -> Problem | str | None:
    """Read a job's output.

     Returns what the job has written to the stream so far, as text, streamed from the
    database page by page. With `follow=true` the response stays open and new output is
    streamed until the job ends. The api keeps at most its output cap per run (`[api]
    output_cap_mib`); a run cut there ends with a line saying so (the file on the node is
    whole).

    Args:
        id (int):
        stream (OutputStream | Unset): Which output stream.
        follow (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | str
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            stream=stream,
            follow=follow,
        )
    ).parsed
