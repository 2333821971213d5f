"""Berth's Python client: ``Client.from_env()``, then ``submit``, ``wait``, ``logs``,
``jobs``, ``cancel`` and ``events``; errors carry the api's RFC 9457 problem document.

This package is the hand-written layer; ``berth_client`` (generated from
``openapi/berth.json`` by openapi-python-client) holds every operation and model of the
api, reachable through ``Client.api``.

    import berth

    client = berth.Client.from_env()
    job = client.submit(command="python train.py", args=["--gpus=1", "-t", "30"])
    print(job.id, job.state.value, job.exit_code)
"""

from berth_client.models import CloudEvent, Job, JobState

from .client import ACTIVE_STATES, Client, exit_status, is_ended, job_id
from .config import Target, client_config_path, resolve_target
from .errors import (
    ApiError,
    BadRequest,
    BerthError,
    ConfigError,
    Conflict,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
    Unprocessable,
    WaitTimeout,
)

__version__ = "0.1.0"

__all__ = [
    "ACTIVE_STATES",
    "ApiError",
    "BadRequest",
    "BerthError",
    "Client",
    "CloudEvent",
    "ConfigError",
    "Conflict",
    "Forbidden",
    "Job",
    "JobState",
    "NotFound",
    "PayloadTooLarge",
    "ServiceUnavailable",
    "Target",
    "TooManyRequests",
    "Unauthorized",
    "Unprocessable",
    "WaitTimeout",
    "client_config_path",
    "exit_status",
    "is_ended",
    "job_id",
    "resolve_target",
]
