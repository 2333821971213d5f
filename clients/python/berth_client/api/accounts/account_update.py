from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.account import Account
from ...models.account_update import AccountUpdate
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: AccountUpdate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/v1/accounts/{name}".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Account | Problem | None:
    if response.status_code == 200:
        response_200 = Account.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Account | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    body: AccountUpdate,
) -> Response[Account | Problem]:
    """Change an account (`sacctmgr modify account NAME set ...`).

     Sets its fairshare `shares` and/or its `grp_tres` (Slurm's association `GrpTRES`:
    what all running jobs charged to the account and its sub-accounts may hold together;
    a job that would go past it waits with `AssocGrpGRES`, `AssocGrpCpuLimit` or
    `AssocGrpNodeLimit`). Absent fields stay as they are; `grp_tres` replaces the whole
    limit set. Running jobs are never stopped by a lower limit.

    Args:
        name (str):
        body (AccountUpdate): `PATCH /v1/accounts/{name}` (`sacctmgr modify account NAME set
            ...`): the fields to
            change; an absent field stays as it is.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Account | Problem]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    *,
    client: AuthenticatedClient,
    body: AccountUpdate,
) -> Account | Problem | None:
    """Change an account (`sacctmgr modify account NAME set ...`).

     Sets its fairshare `shares` and/or its `grp_tres` (Slurm's association `GrpTRES`:
    what all running jobs charged to the account and its sub-accounts may hold together;
    a job that would go past it waits with `AssocGrpGRES`, `AssocGrpCpuLimit` or
    `AssocGrpNodeLimit`). Absent fields stay as they are; `grp_tres` replaces the whole
    limit set. Running jobs are never stopped by a lower limit.

    Args:
        name (str):
        body (AccountUpdate): `PATCH /v1/accounts/{name}` (`sacctmgr modify account NAME set
            ...`): the fields to
            change; an absent field stays as it is.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Account | Problem
    """

    return sync_detailed(
        name=name,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    body: AccountUpdate,
) -> Response[Account | Problem]:
    """Change an account (`sacctmgr modify account NAME set ...`).

     Sets its fairshare `shares` and/or its `grp_tres` (Slurm's association `GrpTRES`:
    what all running jobs charged to the account and its sub-accounts may hold together;
    a job that would go past it waits with `AssocGrpGRES`, `AssocGrpCpuLimit` or
    `AssocGrpNodeLimit`). Absent fields stay as they are; `grp_tres` replaces the whole
    limit set. Running jobs are never stopped by a lower limit.

    Args:
        name (str):
        body (AccountUpdate): `PATCH /v1/accounts/{name}` (`sacctmgr modify account NAME set
            ...`): the fields to
            change; an absent field stays as it is.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Account | Problem]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient,
    body: AccountUpdate,
) -> Account | Problem | None:
    """Change an account (`sacctmgr modify account NAME set ...`).

     Sets its fairshare `shares` and/or its `grp_tres` (Slurm's association `GrpTRES`:
    what all running jobs charged to the account and its sub-accounts may hold together;
    a job that would go past it waits with `AssocGrpGRES`, `AssocGrpCpuLimit` or
    `AssocGrpNodeLimit`). Absent fields stay as they are; `grp_tres` replaces the whole
    limit set. Running jobs are never stopped by a lower limit.

    Args:
        name (str):
        body (AccountUpdate): `PATCH /v1/accounts/{name}` (`sacctmgr modify account NAME set
            ...`): the fields to
            change; an absent field stays as it is.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Account | Problem
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
