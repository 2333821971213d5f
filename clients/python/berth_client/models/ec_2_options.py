from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Ec2Options")


@_attrs_define
class Ec2Options:
    """EC2 settings of a pool.

    Attributes:
        berth_path (None | str | Unset): The path of `berth` on the image (default `/usr/local/bin/berth`).
        endpoint_url (None | str | Unset): The EC2 endpoint (default: the SDK's; `AWS_ENDPOINT_URL_EC2` also works).
        iam_instance_profile (None | str | Unset): An instance profile name (for the worker's own AWS access, if any).
        key_name (None | str | Unset): An SSH key pair name.
        region (None | str | Unset): The region (default: the SDK's chain: `AWS_REGION`, profile).
        security_group_ids (list[str] | Unset): Security group ids.
    """

    berth_path: None | str | Unset = UNSET
    endpoint_url: None | str | Unset = UNSET
    iam_instance_profile: None | str | Unset = UNSET
    key_name: None | str | Unset = UNSET
    region: None | str | Unset = UNSET
    security_group_ids: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        berth_path: None | str | Unset
        if isinstance(self.berth_path, Unset):
            berth_path = UNSET
        else:
            berth_path = self.berth_path

        endpoint_url: None | str | Unset
        if isinstance(self.endpoint_url, Unset):
            endpoint_url = UNSET
        else:
            endpoint_url = self.endpoint_url

        iam_instance_profile: None | str | Unset
        if isinstance(self.iam_instance_profile, Unset):
            iam_instance_profile = UNSET
        else:
            iam_instance_profile = self.iam_instance_profile

        key_name: None | str | Unset
        if isinstance(self.key_name, Unset):
            key_name = UNSET
        else:
            key_name = self.key_name

        region: None | str | Unset
        if isinstance(self.region, Unset):
            region = UNSET
        else:
            region = self.region

        security_group_ids: list[str] | Unset = UNSET
        if not isinstance(self.security_group_ids, Unset):
            security_group_ids = self.security_group_ids

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if berth_path is not UNSET:
            field_dict["berth_path"] = berth_path
        if endpoint_url is not UNSET:
            field_dict["endpoint_url"] = endpoint_url
        if iam_instance_profile is not UNSET:
            field_dict["iam_instance_profile"] = iam_instance_profile
        if key_name is not UNSET:
            field_dict["key_name"] = key_name
        if region is not UNSET:
            field_dict["region"] = region
        if security_group_ids is not UNSET:
            field_dict["security_group_ids"] = security_group_ids

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_berth_path(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        berth_path = _parse_berth_path(d.pop("berth_path", UNSET))

        def _parse_endpoint_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        endpoint_url = _parse_endpoint_url(d.pop("endpoint_url", UNSET))

        def _parse_iam_instance_profile(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        iam_instance_profile = _parse_iam_instance_profile(d.pop("iam_instance_profile", UNSET))

        def _parse_key_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key_name = _parse_key_name(d.pop("key_name", UNSET))

        def _parse_region(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        region = _parse_region(d.pop("region", UNSET))

        security_group_ids = cast(list[str], d.pop("security_group_ids", UNSET))

        ec_2_options = cls(
            berth_path=berth_path,
            endpoint_url=endpoint_url,
            iam_instance_profile=iam_instance_profile,
            key_name=key_name,
            region=region,
            security_group_ids=security_group_ids,
        )

        return ec_2_options
