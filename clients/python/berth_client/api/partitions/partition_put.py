from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.partition import Partition
from ...models.partition_spec import PartitionSpec
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: PartitionSpec,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/partitions/{name}".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Partition | Problem | None:
    if response.status_code == 200:
        response_200 = Partition.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = Partition.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Partition | Problem]:
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
    body: PartitionSpec,
) -> Response[Partition | Problem]:
    """Create or replace a partition (admin or operator).

     The body is the partition's whole definition (Slurm's `PartitionName=` line); absent
    fields take their defaults. Jobs already submitted keep their time limits; pending jobs
    are placed on the new node set from the scheduler's next pass. Making a partition the
    default takes that from the previous default.

    Args:
        name (str):
        body (PartitionSpec): `PUT /v1/partitions/{name}`: a partition's whole definition, as
            Slurm's `PartitionName=`
            line in slurm.conf or `scontrol create partition` take it. Absent fields take their
            defaults.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Partition | Problem]
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
    body: PartitionSpec,
) -> Partition | Problem | None:
    """Create or replace a partition (admin or operator).

     The body is the partition's whole definition (Slurm's `PartitionName=` line); absent
    fields take their defaults. Jobs already submitted keep their time limits; pending jobs
    are placed on the new node set from the scheduler's next pass. Making a partition the
    default takes that from the previous default.

    Args:
        name (str):
        body (PartitionSpec): `PUT /v1/partitions/{name}`: a partition's whole definition, as
            Slurm's `PartitionName=`
            line in slurm.conf or `scontrol create partition` take it. Absent fields take their
            defaults.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Partition | Problem
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
    body: PartitionSpec,
) -> Response[Partition | Problem]:
    """Create or replace a partition (admin or operator).

     The body is the partition's whole definition (Slurm's `PartitionName=` line); absent
    fields take their defaults. Jobs already submitted keep their time limits; pending jobs
    are placed on the new node set from the scheduler's next pass. Making a partition the
    default takes that from the previous default.

    Args:
        name (str):
        body (PartitionSpec): `PUT /v1/partitions/{name}`: a partition's whole definition, as
            Slurm's `PartitionName=`
            line in slurm.conf or `scontrol create partition` take it. Absent fields take their
            defaults.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Partition | Problem]
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
    body: PartitionSpec,
) -> Partition | Problem | None:
    """Create or replace a partition (admin or operator).

     The body is the partition's whole definition (Slurm's `PartitionName=` line); absent
    fields take their defaults. Jobs already submitted keep their time limits; pending jobs
    are placed on the new node set from the scheduler's next pass. Making a partition the
    default takes that from the previous default.

    Args:
        name (str):
        body (PartitionSpec): `PUT /v1/partitions/{name}`: a partition's whole definition, as
            Slurm's `PartitionName=`
            line in slurm.conf or `scontrol create partition` take it. Absent fields take their
            defaults.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Partition | Problem
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
