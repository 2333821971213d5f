from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.usage_report import UsageReport
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    group_by: str | Unset = UNSET,
    tres: str | Unset = UNSET,
    unit: str | Unset = UNSET,
    accounts: str | Unset = UNSET,
    users: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["start"] = start

    params["end"] = end

    params["group_by"] = group_by

    params["tres"] = tres

    params["unit"] = unit

    params["accounts"] = accounts

    params["users"] = users

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/usage",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | UsageReport | None:
    if response.status_code == 200:
        response_200 = UsageReport.from_dict(response.json())

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
) -> Response[Problem | UsageReport]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    group_by: str | Unset = UNSET,
    tres: str | Unset = UNSET,
    unit: str | Unset = UNSET,
    accounts: str | Unset = UNSET,
    users: str | Unset = UNSET,
) -> Response[Problem | UsageReport]:
    """Usage of TRES in a window, grouped.

     TRES time held by job allocations in the hours of the window (`start` rounded down
    to the hour, `end` up; default yesterday 00:00 UTC, as sreport, to now),
    grouped by any of `account`, `user`, `partition`, `qos`, `gpu_model`, for the TRES
    asked (`gres/gpu`, `cpu`, `mem` in MiB × unit, `node`, `billing`), in seconds,
    minutes or hours. A run spanning hours is split at the hour boundaries; the current
    hour counts up to the scheduler's last rollup (seconds old). Users see their own
    usage and that of the accounts they belong to; admins and operators everything.

    Args:
        start (str | Unset):
        end (str | Unset):
        group_by (str | Unset):
        tres (str | Unset):
        unit (str | Unset):
        accounts (str | Unset):
        users (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | UsageReport]
    """

    kwargs = _get_kwargs(
        start=start,
        end=end,
        group_by=group_by,
        tres=tres,
        unit=unit,
        accounts=accounts,
        users=users,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    group_by: str | Unset = UNSET,
    tres: str | Unset = UNSET,
    unit: str | Unset = UNSET,
    accounts: str | Unset = UNSET,
    users: str | Unset = UNSET,
) -> Problem | UsageReport | None:
    """Usage of TRES in a window, grouped.

     TRES time held by job allocations in the hours of the window (`start` rounded down
    to the hour, `end` up; default yesterday 00:00 UTC, as sreport, to now),
    grouped by any of `account`, `user`, `partition`, `qos`, `gpu_model`, for the TRES
    asked (`gres/gpu`, `cpu`, `mem` in MiB × unit, `node`, `billing`), in seconds,
    minutes or hours. A run spanning hours is split at the hour boundaries; the current
    hour counts up to the scheduler's last rollup (seconds old). Users see their own
    usage and that of the accounts they belong to; admins and operators everything.

    Args:
        start (str | Unset):
        end (str | Unset):
        group_by (str | Unset):
        tres (str | Unset):
        unit (str | Unset):
        accounts (str | Unset):
        users (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | UsageReport
    """

    return sync_detailed(
        client=client,
        start=start,
        end=end,
        group_by=group_by,
        tres=tres,
        unit=unit,
        accounts=accounts,
        users=users,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    group_by: str | Unset = UNSET,
    tres: str | Unset = UNSET,
    unit: str | Unset = UNSET,
    accounts: str | Unset = UNSET,
    users: str | Unset = UNSET,
) -> Response[Problem | UsageReport]:
    """Usage of TRES in a window, grouped.

     TRES time held by job allocations in the hours of the window (`start` rounded down
    to the hour, `end` up; default yesterday 00:00 UTC, as sreport, to now),
    grouped by any of `account`, `user`, `partition`, `qos`, `gpu_model`, for the TRES
    asked (`gres/gpu`, `cpu`, `mem` in MiB × unit, `node`, `billing`), in seconds,
    minutes or hours. A run spanning hours is split at the hour boundaries; the current
    hour counts up to the scheduler's last rollup (seconds old). Users see their own
    usage and that of the accounts they belong to; admins and operators everything.

    Args:
        start (str | Unset):
        end (str | Unset):
        group_by (str | Unset):
        tres (str | Unset):
        unit (str | Unset):
        accounts (str | Unset):
        users (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | UsageReport]
    """

    kwargs = _get_kwargs(
        start=start,
        end=end,
        group_by=group_by,
        tres=tres,
        unit=unit,
        accounts=accounts,
        users=users,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    group_by: str | Unset = UNSET,
    tres: str | Unset = UNSET,
    unit: str | Unset = UNSET,
    accounts: str | Unset = UNSET,
    users: str | Unset = UNSET,
) -> Problem | UsageReport | None:
    """Usage of TRES in a window, grouped.

     TRES time held by job allocations in the hours of the window (`start` rounded down
    to the hour, `end` up; default yesterday 00:00 UTC, as sreport, to now),
    grouped by any of `account`, `user`, `partition`, `qos`, `gpu_model`, for the TRES
    asked (`gres/gpu`, `cpu`, `mem` in MiB × unit, `node`, `billing`), in seconds,
    minutes or hours. A run spanning hours is split at the hour boundaries; the current
    hour counts up to the scheduler's last rollup (seconds old). Users see their own
    usage and that of the accounts they belong to; admins and operators everything.

    Args:
        start (str | Unset):
        end (str | Unset):
        group_by (str | Unset):
        tres (str | Unset):
        unit (str | Unset):
        accounts (str | Unset):
        users (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | UsageReport
    """

    return (
        await asyncio_detailed(
            client=client,
            start=start,
            end=end,
            group_by=group_by,
            tres=tres,
            unit=unit,
            accounts=accounts,
            users=users,
        )
    ).parsed
