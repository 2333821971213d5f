from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.market import Market
from ..models.provider_kind import ProviderKind
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.ec_2_options import Ec2Options
    from ..models.instance_type_spec import InstanceTypeSpec
    from ..models.local_options import LocalOptions
    from ..models.pool_spec_tags import PoolSpecTags


T = TypeVar("T", bound="PoolSpec")


@_attrs_define
class PoolSpec:
    """A pool, as declared: `PUT /v1/pools/{name}` takes it, `[pools.NAME]` in the server
    config holds it.

        Attributes:
            instance_types (list[InstanceTypeSpec]): Instance types in order of preference (at least one): a capacity error
                on one sets
                it aside for `capacity_cooldown` and the next is tried.
            max_nodes (int): The most nodes it may have (its node slots `<pool>-1` … `<pool>-<max_nodes>`).
            provider (ProviderKind): Which provider launches a pool's instances.
            boot_timeout (int | Unset): Seconds an instance has to join before it is terminated and its job requeued
                (Slurm's `ResumeTimeout`; default 600).
            capacity_cooldown (int | Unset): Seconds an (instance type, zone) is set aside after a capacity error (default
                180).
            ec2 (Ec2Options | None | Unset):
            expected_boot (int | None | Unset): Seconds a launch is expected to take to join, counted in planned start times
                (default: a quarter of `boot_timeout`; the local provider: its `boot_delay` + 5).
            features (list[str] | Unset): Features its nodes have (for `--constraint`).
            idle_timeout (int | Unset): Seconds a node may stay idle before it is terminated (Slurm's `SuspendTime`;
                default 600).
            image (None | str | Unset): The machine image (EC2: an AMI id). Required for `ec2`.
            launch_rate_per_minute (int | Unset): The most instances launched per minute (default 20).
            local (LocalOptions | None | Unset):
            market (Market | Unset): How instances are bought.
            min_nodes (int | Unset): Nodes kept running even when idle (default 0).
            partitions (list[str] | Unset): Partitions its nodes join.
            subnets (list[str] | Unset): Subnets to launch in, in order of preference (EC2 subnet ids).
            tags (PoolSpecTags | Unset): Tags put on every instance (besides Berth's own `berth:*` tags).
            zones (list[str] | Unset): Availability zones to launch in, in order of preference, when no subnets are given.
    """

    instance_types: list[InstanceTypeSpec]
    max_nodes: int
    provider: ProviderKind
    boot_timeout: int | Unset = UNSET
    capacity_cooldown: int | Unset = UNSET
    ec2: Ec2Options | None | Unset = UNSET
    expected_boot: int | None | Unset = UNSET
    features: list[str] | Unset = UNSET
    idle_timeout: int | Unset = UNSET
    image: None | str | Unset = UNSET
    launch_rate_per_minute: int | Unset = UNSET
    local: LocalOptions | None | Unset = UNSET
    market: Market | Unset = UNSET
    min_nodes: int | Unset = UNSET
    partitions: list[str] | Unset = UNSET
    subnets: list[str] | Unset = UNSET
    tags: PoolSpecTags | Unset = UNSET
    zones: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.ec_2_options import Ec2Options  # noqa: PLC0415
        from ..models.local_options import LocalOptions  # noqa: PLC0415

        instance_types = []
        for instance_types_item_data in self.instance_types:
            instance_types_item = instance_types_item_data.to_dict()
            instance_types.append(instance_types_item)

        max_nodes = self.max_nodes

        provider = self.provider.value

        boot_timeout = self.boot_timeout

        capacity_cooldown = self.capacity_cooldown

        ec2: dict[str, Any] | None | Unset
        if isinstance(self.ec2, Unset):
            ec2 = UNSET
        elif isinstance(self.ec2, Ec2Options):
            ec2 = self.ec2.to_dict()
        else:
            ec2 = self.ec2

        expected_boot: int | None | Unset
        if isinstance(self.expected_boot, Unset):
            expected_boot = UNSET
        else:
            expected_boot = self.expected_boot

        features: list[str] | Unset = UNSET
        if not isinstance(self.features, Unset):
            features = self.features

        idle_timeout = self.idle_timeout

        image: None | str | Unset
        if isinstance(self.image, Unset):
            image = UNSET
        else:
            image = self.image

        launch_rate_per_minute = self.launch_rate_per_minute

        local: dict[str, Any] | None | Unset
        if isinstance(self.local, Unset):
            local = UNSET
        elif isinstance(self.local, LocalOptions):
            local = self.local.to_dict()
        else:
            local = self.local

        market: str | Unset = UNSET
        if not isinstance(self.market, Unset):
            market = self.market.value

        min_nodes = self.min_nodes

        partitions: list[str] | Unset = UNSET
        if not isinstance(self.partitions, Unset):
            partitions = self.partitions

        subnets: list[str] | Unset = UNSET
        if not isinstance(self.subnets, Unset):
            subnets = self.subnets

        tags: dict[str, Any] | Unset = UNSET
        if not isinstance(self.tags, Unset):
            tags = self.tags.to_dict()

        zones: list[str] | Unset = UNSET
        if not isinstance(self.zones, Unset):
            zones = self.zones

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "instance_types": instance_types,
                "max_nodes": max_nodes,
                "provider": provider,
            }
        )
        if boot_timeout is not UNSET:
            field_dict["boot_timeout"] = boot_timeout
        if capacity_cooldown is not UNSET:
            field_dict["capacity_cooldown"] = capacity_cooldown
        if ec2 is not UNSET:
            field_dict["ec2"] = ec2
        if expected_boot is not UNSET:
            field_dict["expected_boot"] = expected_boot
        if features is not UNSET:
            field_dict["features"] = features
        if idle_timeout is not UNSET:
            field_dict["idle_timeout"] = idle_timeout
        if image is not UNSET:
            field_dict["image"] = image
        if launch_rate_per_minute is not UNSET:
            field_dict["launch_rate_per_minute"] = launch_rate_per_minute
        if local is not UNSET:
            field_dict["local"] = local
        if market is not UNSET:
            field_dict["market"] = market
        if min_nodes is not UNSET:
            field_dict["min_nodes"] = min_nodes
        if partitions is not UNSET:
            field_dict["partitions"] = partitions
        if subnets is not UNSET:
            field_dict["subnets"] = subnets
        if tags is not UNSET:
            field_dict["tags"] = tags
        if zones is not UNSET:
            field_dict["zones"] = zones

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.ec_2_options import Ec2Options  # noqa: PLC0415
        from ..models.instance_type_spec import InstanceTypeSpec  # noqa: PLC0415
        from ..models.local_options import LocalOptions  # noqa: PLC0415
        from ..models.pool_spec_tags import PoolSpecTags  # noqa: PLC0415

        d = dict(src_dict)
        instance_types = []
        _instance_types = d.pop("instance_types")
        for instance_types_item_data in _instance_types:
            instance_types_item = InstanceTypeSpec.from_dict(instance_types_item_data)

            instance_types.append(instance_types_item)

        max_nodes = d.pop("max_nodes")

        provider = ProviderKind(d.pop("provider"))

        boot_timeout = d.pop("boot_timeout", UNSET)

        capacity_cooldown = d.pop("capacity_cooldown", UNSET)

        def _parse_ec2(data: object) -> Ec2Options | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                ec2_type_1 = Ec2Options.from_dict(data)

                return ec2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Ec2Options | None | Unset, data)

        ec2 = _parse_ec2(d.pop("ec2", UNSET))

        def _parse_expected_boot(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        expected_boot = _parse_expected_boot(d.pop("expected_boot", UNSET))

        features = cast(list[str], d.pop("features", UNSET))

        idle_timeout = d.pop("idle_timeout", UNSET)

        def _parse_image(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        image = _parse_image(d.pop("image", UNSET))

        launch_rate_per_minute = d.pop("launch_rate_per_minute", UNSET)

        def _parse_local(data: object) -> LocalOptions | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                local_type_1 = LocalOptions.from_dict(data)

                return local_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LocalOptions | None | Unset, data)

        local = _parse_local(d.pop("local", UNSET))

        _market = d.pop("market", UNSET)
        market: Market | Unset
        if isinstance(_market, Unset):
            market = UNSET
        else:
            market = Market(_market)

        min_nodes = d.pop("min_nodes", UNSET)

        partitions = cast(list[str], d.pop("partitions", UNSET))

        subnets = cast(list[str], d.pop("subnets", UNSET))

        _tags = d.pop("tags", UNSET)
        tags: PoolSpecTags | Unset
        if isinstance(_tags, Unset):
            tags = UNSET
        else:
            tags = PoolSpecTags.from_dict(_tags)

        zones = cast(list[str], d.pop("zones", UNSET))

        pool_spec = cls(
            instance_types=instance_types,
            max_nodes=max_nodes,
            provider=provider,
            boot_timeout=boot_timeout,
            capacity_cooldown=capacity_cooldown,
            ec2=ec2,
            expected_boot=expected_boot,
            features=features,
            idle_timeout=idle_timeout,
            image=image,
            launch_rate_per_minute=launch_rate_per_minute,
            local=local,
            market=market,
            min_nodes=min_nodes,
            partitions=partitions,
            subnets=subnets,
            tags=tags,
            zones=zones,
        )

        return pool_spec
