from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.job_create_environment import JobCreateEnvironment
    from ..models.job_spec import JobSpec


T = TypeVar("T", bound="JobCreate")


@_attrs_define
class JobCreate:
    """`POST /v1/jobs`: a batch script with optional `sbatch` command-line options, or a
    structured spec with a script. Exactly one of `script` or `spec.wrap` must give the
    commands to run.

        Attributes:
            args (list[str] | Unset): `sbatch` command-line options (`["--gres=gpu:2", "-t", "10"]`); they win over the
                script's `#SBATCH` lines.
            environment (JobCreateEnvironment | Unset): The submission environment exported to the job (`--export=ALL`,
                Slurm's default).
            script (None | str | Unset): The batch script; its `#SBATCH` lines are parsed as `sbatch` does.
            script_args (list[str] | Unset): Arguments for the batch script (`sbatch job.sh a b`: `$1=a`, `$2=b`), passed to
                it
                as argv, never through a shell.
            script_name (None | str | Unset): The batch script's file name, the job's name when no `--job-name` is given (as
                `sbatch` names jobs after their script).
            spec (JobSpec | None | Unset):
            submit_dir (None | str | Unset): The directory the job was submitted from (`SLURM_SUBMIT_DIR`); the default
                working
                directory.
    """

    args: list[str] | Unset = UNSET
    environment: JobCreateEnvironment | Unset = UNSET
    script: None | str | Unset = UNSET
    script_args: list[str] | Unset = UNSET
    script_name: None | str | Unset = UNSET
    spec: JobSpec | None | Unset = UNSET
    submit_dir: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.job_spec import JobSpec  # noqa: PLC0415

        args: list[str] | Unset = UNSET
        if not isinstance(self.args, Unset):
            args = self.args

        environment: dict[str, Any] | Unset = UNSET
        if not isinstance(self.environment, Unset):
            environment = self.environment.to_dict()

        script: None | str | Unset
        if isinstance(self.script, Unset):
            script = UNSET
        else:
            script = self.script

        script_args: list[str] | Unset = UNSET
        if not isinstance(self.script_args, Unset):
            script_args = self.script_args

        script_name: None | str | Unset
        if isinstance(self.script_name, Unset):
            script_name = UNSET
        else:
            script_name = self.script_name

        spec: dict[str, Any] | None | Unset
        if isinstance(self.spec, Unset):
            spec = UNSET
        elif isinstance(self.spec, JobSpec):
            spec = self.spec.to_dict()
        else:
            spec = self.spec

        submit_dir: None | str | Unset
        if isinstance(self.submit_dir, Unset):
            submit_dir = UNSET
        else:
            submit_dir = self.submit_dir

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if args is not UNSET:
            field_dict["args"] = args
        if environment is not UNSET:
            field_dict["environment"] = environment
        if script is not UNSET:
            field_dict["script"] = script
        if script_args is not UNSET:
            field_dict["script_args"] = script_args
        if script_name is not UNSET:
            field_dict["script_name"] = script_name
        if spec is not UNSET:
            field_dict["spec"] = spec
        if submit_dir is not UNSET:
            field_dict["submit_dir"] = submit_dir

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.job_create_environment import JobCreateEnvironment  # noqa: PLC0415
        from ..models.job_spec import JobSpec  # noqa: PLC0415

        d = dict(src_dict)
        args = cast(list[str], d.pop("args", UNSET))

        _environment = d.pop("environment", UNSET)
        environment: JobCreateEnvironment | Unset
        if isinstance(_environment, Unset):
            environment = UNSET
        else:
            environment = JobCreateEnvironment.from_dict(_environment)

        def _parse_script(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        script = _parse_script(d.pop("script", UNSET))

        script_args = cast(list[str], d.pop("script_args", UNSET))

        def _parse_script_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        script_name = _parse_script_name(d.pop("script_name", UNSET))

        def _parse_spec(data: object) -> JobSpec | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                spec_type_1 = JobSpec.from_dict(data)

                return spec_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobSpec | None | Unset, data)

        spec = _parse_spec(d.pop("spec", UNSET))

        def _parse_submit_dir(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        submit_dir = _parse_submit_dir(d.pop("submit_dir", UNSET))

        job_create = cls(
            args=args,
            environment=environment,
            script=script,
            script_args=script_args,
            script_name=script_name,
            spec=spec,
            submit_dir=submit_dir,
        )

        return job_create
