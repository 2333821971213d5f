from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.membership_set import MembershipSet
from ...models.problem import Problem
from ...models.user import User
from ...types import Response


def _get_kwargs(
    name: str,
    user: str,
    *,
    body: MembershipSet,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/accounts/{name}/users/{user}".format(
            name=quote(str(name), safe=""),
            user=quote(str(user), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | User | None:
    if response.status_code == 200:
        response_200 = User.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | User]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    user: str,
    *,
    client: AuthenticatedClient,
    body: MembershipSet,
) -> Response[Problem | User]:
    """Add a user to an account, or change their membership.

     `coordinator` lets the user see and manage every job of the account and its
    sub-accounts; `default` makes it the account used when a submission names none (a
    user's first account becomes their default anyway).

    Args:
        name (str):
        user (str):
        body (MembershipSet): `PUT /v1/accounts/{name}/users/{user}`: adds the user to the account
            or changes the
            membership.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | User]
    """

    kwargs = _get_kwargs(
        name=name,
        user=user,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    user: str,
    *,
    client: AuthenticatedClient,
    body: MembershipSet,
) -> Problem | User | None:
    """Add a user to an account, or change their membership.

     `coordinator` lets the user see and manage every job of the account and its
    sub-accounts; `default` makes it the account used when a submission names none (a
    user's first account becomes their default anyway).

    Args:
        name (str):
        user (str):
        body (MembershipSet): `PUT /v1/accounts/{name}/users/{user}`: adds the user to the account
            or changes the
            membership.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | User
    """

    return sync_detailed(
        name=name,
        user=user,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    name: str,
    user: str,
    *,
    client: AuthenticatedClient,
    body: MembershipSet,
) -> Response[Problem | User]:
    """Add a user to an account, or change their membership.

     `coordinator` lets the user see and manage every job of the account and its
    sub-accounts; `default` makes it the account used when a submission names none (a
    user's first account becomes their default anyway).

    Args:
        name (str):
        user (str):
        body (MembershipSet): `PUT /v1/accounts/{name}/users/{user}`: adds the user to the account
            or changes the
            membership.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | User]
    """

    kwargs = _get_kwargs(
        name=name,
        user=user,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    user: str,
    *,
    client: AuthenticatedClient,
    body: MembershipSet,
) -> Problem | User | None:
    """Add a user to an account, or change their membership.

     `coordinator` lets the user see and manage every job of the account and its
    sub-accounts; `default` makes it the account used when a submission names none (a
    user's first account becomes their default anyway).

    Args:
        name (str):
        user (str):
        body (MembershipSet): `PUT /v1/accounts/{name}/users/{user}`: adds the user to the account
            or changes the
            membership.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | User
    """

    return (
        await asyncio_detailed(
            name=name,
            user=user,
            client=client,
            body=body,
        )
    ).parsed
