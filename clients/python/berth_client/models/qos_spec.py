from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.preempt_mode import PreemptMode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.tres_limits import TresLimits


T = TypeVar("T", bound="QosSpec")


@_attrs_define
class QosSpec:
    """`PUT /v1/qos/{name}`: a QOS's whole definition (absent fields take their defaults).

    Attributes:
        description (str | Unset): Free text. Default: ''.
        grace_time (int | Unset): `GraceTime`: seconds between SIGTERM and the kill of a preempted job of this QOS.
            Default: 0.
        grp_tres (TresLimits | Unset): A TRES limit set (Slurm's `gres/gpu=8,cpu=64,node=2`); an absent key is no limit.
        max_jobs_per_user (int | None | Unset): `MaxJobsPerUser`: running jobs per user.
        max_submit_jobs_per_user (int | None | Unset): `MaxSubmitJobsPerUser`: jobs not ended (pending or running) per
            user; more are
            refused at submission.
        max_tres_per_account (TresLimits | Unset): A TRES limit set (Slurm's `gres/gpu=8,cpu=64,node=2`); an absent key
            is no limit.
        max_tres_per_user (TresLimits | Unset): A TRES limit set (Slurm's `gres/gpu=8,cpu=64,node=2`); an absent key is
            no limit.
        max_wall (int | None | Unset): `MaxWall`: the longest time limit, seconds.
        preempt (list[str] | Unset): `Preempt`: the QOS whose running jobs this QOS's jobs may preempt.
        preempt_exempt_time (int | Unset): `PreemptExemptTime`: seconds after its start during which a job of this QOS
            is not
            preempted. Default: 0.
        preempt_mode (PreemptMode | Unset): What happens to a job when it is preempted (Slurm's `PreemptMode`). Default:
            PreemptMode.CANCEL.
        priority (int | Unset): `Priority`: the QOS factor of the multifactor priority (≥ 0). Default: 0.
        usage_factor (float | Unset): `UsageFactor`: multiplies the usage its jobs are charged (≥ 0; default 1).
            Default: 1.0.
    """

    description: str | Unset = ""
    grace_time: int | Unset = 0
    grp_tres: TresLimits | Unset = UNSET
    max_jobs_per_user: int | None | Unset = UNSET
    max_submit_jobs_per_user: int | None | Unset = UNSET
    max_tres_per_account: TresLimits | Unset = UNSET
    max_tres_per_user: TresLimits | Unset = UNSET
    max_wall: int | None | Unset = UNSET
    preempt: list[str] | Unset = UNSET
    preempt_exempt_time: int | Unset = 0
    preempt_mode: PreemptMode | Unset = PreemptMode.CANCEL
    priority: int | Unset = 0
    usage_factor: float | Unset = 1.0

    def to_dict(self) -> dict[str, Any]:
        description = self.description

        grace_time = self.grace_time

        grp_tres: dict[str, Any] | Unset = UNSET
        if not isinstance(self.grp_tres, Unset):
            grp_tres = self.grp_tres.to_dict()

        max_jobs_per_user: int | None | Unset
        if isinstance(self.max_jobs_per_user, Unset):
            max_jobs_per_user = UNSET
        else:
            max_jobs_per_user = self.max_jobs_per_user

        max_submit_jobs_per_user: int | None | Unset
        if isinstance(self.max_submit_jobs_per_user, Unset):
            max_submit_jobs_per_user = UNSET
        else:
            max_submit_jobs_per_user = self.max_submit_jobs_per_user

        max_tres_per_account: dict[str, Any] | Unset = UNSET
        if not isinstance(self.max_tres_per_account, Unset):
            max_tres_per_account = self.max_tres_per_account.to_dict()

        max_tres_per_user: dict[str, Any] | Unset = UNSET
        if not isinstance(self.max_tres_per_user, Unset):
            max_tres_per_user = self.max_tres_per_user.to_dict()

        max_wall: int | None | Unset
        if isinstance(self.max_wall, Unset):
            max_wall = UNSET
        else:
            max_wall = self.max_wall

        preempt: list[str] | Unset = UNSET
        if not isinstance(self.preempt, Unset):
            preempt = self.preempt

        preempt_exempt_time = self.preempt_exempt_time

        preempt_mode: str | Unset = UNSET
        if not isinstance(self.preempt_mode, Unset):
            preempt_mode = self.preempt_mode.value

        priority = self.priority

        usage_factor = self.usage_factor

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if description is not UNSET:
            field_dict["description"] = description
        if grace_time is not UNSET:
            field_dict["grace_time"] = grace_time
        if grp_tres is not UNSET:
            field_dict["grp_tres"] = grp_tres
        if max_jobs_per_user is not UNSET:
            field_dict["max_jobs_per_user"] = max_jobs_per_user
        if max_submit_jobs_per_user is not UNSET:
            field_dict["max_submit_jobs_per_user"] = max_submit_jobs_per_user
        if max_tres_per_account is not UNSET:
            field_dict["max_tres_per_account"] = max_tres_per_account
        if max_tres_per_user is not UNSET:
            field_dict["max_tres_per_user"] = max_tres_per_user
        if max_wall is not UNSET:
            field_dict["max_wall"] = max_wall
        if preempt is not UNSET:
            field_dict["preempt"] = preempt
        if preempt_exempt_time is not UNSET:
            field_dict["preempt_exempt_time"] = preempt_exempt_time
        if preempt_mode is not UNSET:
            field_dict["preempt_mode"] = preempt_mode
        if priority is not UNSET:
            field_dict["priority"] = priority
        if usage_factor is not UNSET:
            field_dict["usage_factor"] = usage_factor

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tres_limits import TresLimits  # noqa: PLC0415

        d = dict(src_dict)
        description = d.pop("description", UNSET)

        grace_time = d.pop("grace_time", UNSET)

        _grp_tres = d.pop("grp_tres", UNSET)
        grp_tres: TresLimits | Unset
        if isinstance(_grp_tres, Unset):
            grp_tres = UNSET
        else:
            grp_tres = TresLimits.from_dict(_grp_tres)

        def _parse_max_jobs_per_user(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_jobs_per_user = _parse_max_jobs_per_user(d.pop("max_jobs_per_user", UNSET))

        def _parse_max_submit_jobs_per_user(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_submit_jobs_per_user = _parse_max_submit_jobs_per_user(d.pop("max_submit_jobs_per_user", UNSET))

        _max_tres_per_account = d.pop("max_tres_per_account", UNSET)
        max_tres_per_account: TresLimits | Unset
        if isinstance(_max_tres_per_account, Unset):
            max_tres_per_account = UNSET
        else:
            max_tres_per_account = TresLimits.from_dict(_max_tres_per_account)

        _max_tres_per_user = d.pop("max_tres_per_user", UNSET)
        max_tres_per_user: TresLimits | Unset
        if isinstance(_max_tres_per_user, Unset):
            max_tres_per_user = UNSET
        else:
            max_tres_per_user = TresLimits.from_dict(_max_tres_per_user)

        def _parse_max_wall(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_wall = _parse_max_wall(d.pop("max_wall", UNSET))

        preempt = cast(list[str], d.pop("preempt", UNSET))

        preempt_exempt_time = d.pop("preempt_exempt_time", UNSET)

        _preempt_mode = d.pop("preempt_mode", UNSET)
        preempt_mode: PreemptMode | Unset
        if isinstance(_preempt_mode, Unset):
            preempt_mode = UNSET
        else:
            preempt_mode = PreemptMode(_preempt_mode)

        priority = d.pop("priority", UNSET)

        usage_factor = d.pop("usage_factor", UNSET)

        qos_spec = cls(
            description=description,
            grace_time=grace_time,
            grp_tres=grp_tres,
            max_jobs_per_user=max_jobs_per_user,
            max_submit_jobs_per_user=max_submit_jobs_per_user,
            max_tres_per_account=max_tres_per_account,
            max_tres_per_user=max_tres_per_user,
            max_wall=max_wall,
            preempt=preempt,
            preempt_exempt_time=preempt_exempt_time,
            preempt_mode=preempt_mode,
            priority=priority,
            usage_factor=usage_factor,
        )

        return qos_spec
