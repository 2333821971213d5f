from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.step_state import StepState
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step_task import StepTask


T = TypeVar("T", bound="Step")


@_attrs_define
class Step:
    """A job step.

    Attributes:
        command (list[str]): The command.
        created_at (datetime.datetime): When it was created.
        job_id (int): The job.
        kill_on_bad_exit (bool): `--kill-on-bad-exit`.
        nodelist (str): The nodes, compressed (`SLURM_STEP_NODELIST`).
        run (int): The job's run the step belongs to.
        state (StepState): A step's state.
        step_id (int): `SLURM_STEP_ID`.
        tasks (list[StepTask]): Its tasks by `task_id`.
        end_time (datetime.datetime | None | Unset): When its last task ended.
        exit_code (int | None | Unset): The highest task exit code once ended (128 + signal for a signalled task).
        kill_reason (None | str | Unset): Why the remaining tasks are being stopped, when they are.
        pty (bool | Unset): `--pty`: task 0 runs in a pseudo-terminal.
    """

    command: list[str]
    created_at: datetime.datetime
    job_id: int
    kill_on_bad_exit: bool
    nodelist: str
    run: int
    state: StepState
    step_id: int
    tasks: list[StepTask]
    end_time: datetime.datetime | None | Unset = UNSET
    exit_code: int | None | Unset = UNSET
    kill_reason: None | str | Unset = UNSET
    pty: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        command = self.command

        created_at = self.created_at.isoformat()

        job_id = self.job_id

        kill_on_bad_exit = self.kill_on_bad_exit

        nodelist = self.nodelist

        run = self.run

        state = self.state.value

        step_id = self.step_id

        tasks = []
        for tasks_item_data in self.tasks:
            tasks_item = tasks_item_data.to_dict()
            tasks.append(tasks_item)

        end_time: None | str | Unset
        if isinstance(self.end_time, Unset):
            end_time = UNSET
        elif isinstance(self.end_time, datetime.datetime):
            end_time = self.end_time.isoformat()
        else:
            end_time = self.end_time

        exit_code: int | None | Unset
        if isinstance(self.exit_code, Unset):
            exit_code = UNSET
        else:
            exit_code = self.exit_code

        kill_reason: None | str | Unset
        if isinstance(self.kill_reason, Unset):
            kill_reason = UNSET
        else:
            kill_reason = self.kill_reason

        pty = self.pty

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "command": command,
                "created_at": created_at,
                "job_id": job_id,
                "kill_on_bad_exit": kill_on_bad_exit,
                "nodelist": nodelist,
                "run": run,
                "state": state,
                "step_id": step_id,
                "tasks": tasks,
            }
        )
        if end_time is not UNSET:
            field_dict["end_time"] = end_time
        if exit_code is not UNSET:
            field_dict["exit_code"] = exit_code
        if kill_reason is not UNSET:
            field_dict["kill_reason"] = kill_reason
        if pty is not UNSET:
            field_dict["pty"] = pty

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.step_task import StepTask  # noqa: PLC0415

        d = dict(src_dict)
        command = cast(list[str], d.pop("command"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        job_id = d.pop("job_id")

        kill_on_bad_exit = d.pop("kill_on_bad_exit")

        nodelist = d.pop("nodelist")

        run = d.pop("run")

        state = StepState(d.pop("state"))

        step_id = d.pop("step_id")

        tasks = []
        _tasks = d.pop("tasks")
        for tasks_item_data in _tasks:
            tasks_item = StepTask.from_dict(tasks_item_data)

            tasks.append(tasks_item)

        def _parse_end_time(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                end_time_type_0 = datetime.datetime.fromisoformat(data)

                return end_time_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        end_time = _parse_end_time(d.pop("end_time", UNSET))

        def _parse_exit_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exit_code = _parse_exit_code(d.pop("exit_code", UNSET))

        def _parse_kill_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        kill_reason = _parse_kill_reason(d.pop("kill_reason", UNSET))

        pty = d.pop("pty", UNSET)

        step = cls(
            command=command,
            created_at=created_at,
            job_id=job_id,
            kill_on_bad_exit=kill_on_bad_exit,
            nodelist=nodelist,
            run=run,
            state=state,
            step_id=step_id,
            tasks=tasks,
            end_time=end_time,
            exit_code=exit_code,
            kill_reason=kill_reason,
            pty=pty,
        )

        step.additional_properties = d
        return step

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
