"""Errors of the Berth client.

Every error answer of the api is an RFC 9457 problem document (``application/problem+json``):
:class:`ApiError` carries it (``status``, ``code``, ``detail``, ``field``, ``line``,
``request_id``), and its subclass names the status (:class:`BadRequest` for 400,
:class:`NotFound` for 404 …), so callers catch what they can handle::

    try:
        client.submit(script)
    except berth.BadRequest as e:
        print(e.field, e.line, e.detail)   # "--nodes", 3, "not a number"
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import httpx

from berth_client.models import Problem
from berth_client.types import Unset


class BerthError(Exception):
    """Anything the Berth client raises on purpose."""


class ConfigError(BerthError):
    """No cluster configured: neither ``BERTH_URL``/``BERTH_TOKEN`` nor the CLI's file give one,
    or that file cannot be read."""


class WaitTimeout(BerthError, TimeoutError):
    """:meth:`berth.Client.wait` gave up before the job ended; ``job`` is its last view."""

    def __init__(self, message: str, job: Any) -> None:
        super().__init__(message)
        self.job = job


class ApiError(BerthError):
    """The api answered with an error status.

    Attributes:
        status: the HTTP status (``400``).
        problem: the problem document as the generated model
            (:class:`berth_client.models.Problem`), or ``None`` when the answer was not one
            (a proxy's error page); ``body`` then holds its text.
        retry_after: seconds the answer's ``Retry-After`` asks to wait (429, 503), or ``None``.
    """

    def __init__(self, status: int, problem: Problem | None, body: str = "", retry_after: float | None = None):
        self.status = status
        self.problem = problem
        self.body = body
        self.retry_after = retry_after
        super().__init__(self._message())

    @property
    def code(self) -> str | None:
        """The stable machine-readable code (``invalid_option``, ``max_job_count`` …)."""
        return self.problem.code if self.problem else None

    @property
    def detail(self) -> str | None:
        """What went wrong, in words."""
        return self.problem.detail if self.problem else None

    @property
    def title(self) -> str | None:
        """The problem type's short summary."""
        return self.problem.title if self.problem else None

    @property
    def type(self) -> str | None:
        """The problem type's URI (``urn:berth:problem:invalid-option``)."""
        return self.problem.type_ if self.problem else None

    @property
    def field(self) -> str | None:
        """The offending field or option (``--nodes``, ``spec.time_limit``), when there is one."""
        return _present(self.problem.field) if self.problem else None

    @property
    def line(self) -> int | None:
        """The offending batch-script line (1-based), for script errors."""
        return _present(self.problem.line) if self.problem else None

    @property
    def request_id(self) -> str | None:
        """The request id, to find the request in the api's logs."""
        return _present(self.problem.request_id) if self.problem else None

    def _message(self) -> str:
        # As the CLI prints a problem: `line 3: --nodes: not a number`.
        if self.problem is None:
            return f"HTTP {self.status}: {self.body.strip()[:500]}"
        detail = (self.problem.detail or "").strip() or self.problem.title
        field = self.field
        if field and field not in detail:
            detail = f"{field}: {detail}"
        line = self.line
        if line is not None and not detail.startswith(f"line {line}"):
            detail = f"line {line}: {detail}"
        return f"{self.status} {self.problem.code}: {detail}"


class BadRequest(ApiError):
    """400: a bad option, field or parameter (``field`` and ``line`` name it)."""


class Unauthorized(ApiError):
    """401: no token, or one the api does not accept."""


class Forbidden(ApiError):
    """403: the token is known but may not do this."""


class NotFound(ApiError):
    """404: no such object, or one the caller may not see (another tenant's job)."""


class Conflict(ApiError):
    """409: a conflict (an ``Idempotency-Key`` reused with another body, a state that forbids it)."""


class PayloadTooLarge(ApiError):
    """413: the request body is larger than the api accepts."""


class Unprocessable(ApiError):
    """422: valid, but impossible (more GPUs than any node has)."""


class TooManyRequests(ApiError):
    """429: rate limited, or too many open event streams (``code`` says which); retried by the client."""


class ServiceUnavailable(ApiError):
    """503: the database is away, a request timed out, or the queue is full (``max_job_count``)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: Unprocessable,
    429: TooManyRequests,
    503: ServiceUnavailable,
}


def _present(value: Any) -> Any:
    # The generated models mark an absent field with an `Unset` instance.
    return None if isinstance(value, Unset) else value


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After``'s wait in seconds: a number of seconds, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(int(value)))
    except ValueError:
        pass
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, at.timestamp() - (time.time() if now is None else now))


def error_for(status: int, headers: httpx.Headers | dict[str, str], content: bytes, parsed: Any = None) -> ApiError:
    """The error for an answer with an error status: its problem document parsed (or taken
    from the generated function's ``parsed``), typed by status."""
    problem = parsed if isinstance(parsed, Problem) else None
    text = content.decode("utf-8", errors="replace")
    if problem is None:
        try:
            document = json.loads(text)
            if isinstance(document, dict) and "status" in document and "code" in document:
                problem = Problem.from_dict(document)
        except (ValueError, KeyError, TypeError):
            problem = None
    retry_after = retry_after_seconds(httpx.Headers(headers).get("retry-after"))
    cls = _BY_STATUS.get(status, ApiError)
    return cls(status, problem, text if problem is None else "", retry_after)


def error_from_response(response: httpx.Response) -> ApiError:
    """The error for an httpx answer with an error status (its body must be read)."""
    return error_for(response.status_code, response.headers, response.content)
