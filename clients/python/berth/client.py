"""The hand-written layer over the generated client (``berth_client``): what a notebook or a
CI job does with Berth, in a few calls.

Requests go through the generated operation functions (``berth_client.api.*``) and come
back as the generated models (:class:`berth_client.models.Job`, ``CloudEvent`` …); the two
streaming answers (a job's output with ``follow=true``, the Server-Sent Events of
``GET /v1/events``) are read with httpx directly (and httpx-sse), since the generated
functions read whole bodies.

Retries (stamina): a request answered 429 is sent again after its ``Retry-After`` (with
jitter), up to 10 times; one answered 503 too, where sending it again is harmless (reads,
cancellations, submissions: a submission always carries an ``Idempotency-Key``, so
however often it is sent it makes one job). A submission is also sent again when the api
cannot be reached, for up to a minute. This is what the ``berth`` CLI does.
"""

from __future__ import annotations

import json
import os
import random
import ssl
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx
import httpx_sse
import stamina

from berth_client import AuthenticatedClient
from berth_client.api.jobs import job_cancel, job_create, job_get, job_list
from berth_client.api.users import whoami_get
from berth_client.models import (
    CloudEvent,
    Job,
    JobCreate,
    JobCreated,
    JobCreateEnvironment,
    JobState,
    Problem,
    Whoami,
)
from berth_client.types import UNSET, Response, Unset

from .config import resolve_target
from .errors import ApiError, ServiceUnavailable, TooManyRequests, WaitTimeout, error_for, error_from_response

#: States in which a job has not ended yet (Slurm's); any other state is final.
ACTIVE_STATES = frozenset({JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING})

#: How many times one request is sent again after a 429 (or a harmless 503).
MAX_RETRIES = 10
#: The longest wait between two tries, whatever ``Retry-After`` says (seconds).
MAX_RETRY_WAIT = 60.0
#: How long a submission is sent again while the api answers 503 or cannot be reached (seconds).
SUBMIT_RETRY_FOR = 60.0

JobRef = int | str | Job | JobCreated


def job_id(job: JobRef) -> int:
    """The id of a job given as an id, a :class:`Job` or a :class:`JobCreated`."""
    if isinstance(job, (Job, JobCreated)):
        return job.id
    return int(job)


def is_ended(job: Job) -> bool:
    """Whether the job has reached a final state (COMPLETED, FAILED, CANCELLED, TIMEOUT …)."""
    return job.state not in ACTIVE_STATES


def exit_status(job: Job) -> int:
    """The status a process waiting for the job should exit with, as ``berth submit --wait``
    does: the job's exit code when it COMPLETED (0), its non-zero exit code when it has one,
    else 1 (cancelled, timed out, killed by a signal …)."""
    code = job.exit_code if isinstance(job.exit_code, int) else None
    if job.state == JobState.COMPLETED:
        return min(max(code or 0, 0), 255)
    if code:
        return min(max(code, 1), 255)
    return 1


def _retry_wait(error: ApiError) -> float | bool:
    # Retry-After when given (plus up to half of it, at least 0.25 s, of jitter so that
    # parallel clients spread out); else stamina's exponential backoff.
    if error.retry_after is None:
        return True
    base = min(error.retry_after, MAX_RETRY_WAIT)
    return min(base + random.uniform(0, max(base / 2, 0.25)), MAX_RETRY_WAIT)


class Client:
    """A Berth cluster, as one user (its token) sees it.

    Args:
        url: the api's base URL (``http://127.0.0.1:8750``).
        token: a bearer token (a JWT or a ``berth_…`` API token); never printed.
        timeout: seconds one request may take (streams wait for data as long as needed).
        ca_file: a PEM file of CA certificates to trust besides the system's.
        httpx_args: more arguments for the ``httpx.Client`` (``event_hooks``, ``transport`` …).

    ``client.api`` is the generated :class:`berth_client.AuthenticatedClient`, for every
    operation this layer does not wrap (``berth_client.api.nodes.node_list.sync(client=client.api)``).
    Use as a context manager, or call :meth:`close`, to release its connections.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 30.0,
        ca_file: str | os.PathLike[str] | None = None,
        httpx_args: Mapping[str, Any] | None = None,
    ) -> None:
        verify: bool | ssl.SSLContext = True
        if ca_file:
            verify = ssl.create_default_context()
            verify.load_verify_locations(cafile=os.fspath(ca_file))
        self.url = url.rstrip("/")
        self._timeout = timeout
        self.api = AuthenticatedClient(
            base_url=self.url,
            token=token,
            timeout=httpx.Timeout(timeout),
            verify_ssl=verify,
            headers={"User-Agent": "berth-python"},
            httpx_args=dict(httpx_args or {}),
        )
        self._http = self.api.get_httpx_client()

    @classmethod
    def from_env(cls, **kwargs: Any) -> Client:
        """The cluster the ``berth`` CLI would use: ``BERTH_URL`` and ``BERTH_TOKEN``, else
        the CLI's configuration file (``~/.config/berth/config.toml``, written by
        ``berth dev``; ``BERTH_CLIENT_CONFIG`` names another) for whichever is missing;
        ``BERTH_CA_FILE`` as the CLI reads it. Other arguments go to :class:`Client`.

        Raises:
            berth.ConfigError: when no URL or token is found.
        """
        target = resolve_target()
        kwargs.setdefault("ca_file", target.ca_file)
        return cls(target.url, target.token, **kwargs)

    def __repr__(self) -> str:
        return f"Client(url={self.url!r})"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connections."""
        self._http.close()

    # -- plumbing -------------------------------------------------------------------------

    def _call(
        self,
        operation: Callable[[], Response[Any]],
        *,
        submission: bool = False,
    ) -> Any:
        """Runs one generated ``sync_detailed`` call, retried as the module docstring says,
        and returns its parsed answer or raises the typed error of its problem document.
        Every operation this layer wraps may be sent twice (reads, cancellations, and
        submissions with their ``Idempotency-Key``), so 503 is retried for all of them."""

        def retry_on(exc: Exception) -> bool | float:
            if isinstance(exc, (TooManyRequests, ServiceUnavailable)):
                return _retry_wait(exc)
            return submission and isinstance(exc, httpx.TransportError)

        retries = stamina.retry_context(
            on=retry_on,
            attempts=None if submission else MAX_RETRIES + 1,
            timeout=SUBMIT_RETRY_FOR if submission else None,
            wait_initial=0.5,
            wait_max=8.0,
            wait_jitter=0.5,
        )
        for attempt in retries:
            with attempt:
                response = operation()
                if response.status_code >= 400 or isinstance(response.parsed, Problem):
                    raise error_for(response.status_code, response.headers, response.content, response.parsed)
                return response.parsed
        raise AssertionError("unreachable: stamina re-raises the last error")

    @contextmanager
    def _stream(self, path: str, *, params: Mapping[str, str], headers: Mapping[str, str]) -> Iterator[httpx.Response]:
        """Opens a streaming ``GET`` (no read timeout), retrying 429 and 503 before any of
        the body is read and connection failures; error answers raise typed errors."""

        def retry_on(exc: Exception) -> bool | float:
            if isinstance(exc, (TooManyRequests, ServiceUnavailable)):
                return _retry_wait(exc)
            return isinstance(exc, httpx.TransportError)

        timeout = httpx.Timeout(self._timeout, read=None)
        response: httpx.Response | None = None
        for attempt in stamina.retry_context(
            on=retry_on, attempts=MAX_RETRIES + 1, timeout=None, wait_initial=0.5, wait_max=8.0, wait_jitter=0.5
        ):
            with attempt:
                request = self._http.build_request("GET", path, params=params, headers=headers, timeout=timeout)
                response = self._http.send(request, stream=True)
                if response.status_code >= 400:
                    try:
                        response.read()
                    finally:
                        response.close()
                    raise error_from_response(response)
        assert response is not None
        try:
            yield response
        finally:
            response.close()

    # -- jobs -----------------------------------------------------------------------------

    def whoami(self) -> Whoami:
        """Who the token is, as the api sees it (user, role, default account …)."""
        return self._call(lambda: whoami_get.sync_detailed(client=self.api))

    def submit(
        self,
        script: str | os.PathLike[str] | None = None,
        *,
        command: str | None = None,
        args: Iterable[str] = (),
        script_args: Iterable[str] = (),
        environment: Mapping[str, str] | None = None,
        submit_dir: str | None = None,
        idempotency_key: str | None = None,
        wait: bool = True,
        timeout: float | None = None,
    ) -> Job:
        """Submits a batch job and, with ``wait`` (the default), waits for it to end.

        Args:
            script: the batch script's text (its ``#SBATCH`` lines are read as ``sbatch``
                reads them), or a path (``pathlib.Path``) to read it from.
            command: instead of a script, a command to run as the whole job (``sbatch --wrap``).
            args: ``sbatch`` options (``["--gpus=1", "-t", "10"]``); they win over ``#SBATCH`` lines.
            script_args: arguments of the script (``$1``, ``$2`` …).
            environment: variables for the job (nothing of this process's environment is sent
                unless given here).
            submit_dir: the job's working directory on its node (``SLURM_SUBMIT_DIR``); by
                default a fresh directory of its own there.
            idempotency_key: sent as ``Idempotency-Key``; the same key and body give back the
                first job instead of a new one (derive it from a CI run id to make a retried
                pipeline step find its job). A random one by default, so retries of this
                call never make two jobs.
            wait: wait for the job to end (see :meth:`wait`).
            timeout: with ``wait``, seconds to wait at most (:class:`berth.WaitTimeout`).

        Returns:
            the job: ended (``state``, ``exit_code``) with ``wait``, else as just submitted.

        Raises:
            berth.BadRequest: a bad option or script line (``field``, ``line``).
            berth.Unprocessable: no node could ever run it.
            berth.Conflict: ``idempotency_key`` was used before with another body.
        """
        if (script is None) == (command is None):
            raise ValueError("give either script or command")
        options = list(args)
        script_text: str | Unset = UNSET
        script_name: str | Unset = UNSET
        if isinstance(script, os.PathLike):
            with open(script, encoding="utf-8") as f:
                script_text = f.read()
            script_name = os.path.basename(os.fspath(script))
        elif script is not None:
            script_text = script
        else:
            options.append(f"--wrap={command}")
        body = JobCreate(
            args=options,
            script=script_text,
            script_name=script_name,
            script_args=list(script_args),
            environment=JobCreateEnvironment.from_dict(dict(environment)) if environment else UNSET,
            submit_dir=submit_dir if submit_dir is not None else UNSET,
        )
        key = idempotency_key or f"python-{uuid.uuid4().hex}"
        created: JobCreated = self._call(
            lambda: job_create.sync_detailed(client=self.api, body=body, idempotency_key=key), submission=True
        )
        if wait:
            return self.wait(created, timeout=timeout)
        return self.job(created)

    def job(self, job: JobRef) -> Job:
        """The job as it is now (``GET /v1/jobs/{id}``)."""
        id = job_id(job)
        return self._call(lambda: job_get.sync_detailed(id, client=self.api))

    def wait(self, job: JobRef, *, timeout: float | None = None, poll_interval: float = 2.0) -> Job:
        """Waits until the job has ended and returns it (``state``, ``exit_code``); polls
        ``GET /v1/jobs/{id}``, first every 0.25 s, then less often up to ``poll_interval``.

        Raises:
            berth.WaitTimeout: ``timeout`` seconds passed first (its ``job`` is the last view).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        interval = 0.25
        while True:
            current = self.job(job)
            if is_ended(current):
                return current
            if deadline is not None and time.monotonic() + interval > deadline:
                raise WaitTimeout(f"job {current.id} is still {current.state.value} after {timeout} s", current)
            time.sleep(interval)
            interval = min(interval * 1.5, poll_interval)

    def logs(self, job: JobRef, *, follow: bool = False, stream: str = "stdout") -> Iterator[str]:
        """The job's output (``GET /v1/jobs/{id}/output``) as text chunks, as they arrive.

        With ``follow``, the answer stays open and new output comes until the job ends (a
        pending job's output starts when it runs). ``stream="stderr"`` reads standard error
        when the job writes it to its own file. ``"".join(client.logs(job))`` is the whole.
        A connection that drops while following raises ``httpx.TransportError``: the api
        cannot resume an output stream from where it broke, so start again with
        ``logs(job)`` (which reads it from the start).
        """
        params = {"stream": stream}
        if follow:
            params["follow"] = "true"
        with self._stream(f"/v1/jobs/{job_id(job)}/output", params=params, headers={"Accept": "text/plain"}) as r:
            yield from r.iter_text()

    def jobs(
        self,
        *,
        state: str | JobState | Iterable[str | JobState] | None = None,
        user: str | None = None,
        partition: str | None = None,
        name: str | None = None,
        account: str | Iterable[str] | None = None,
        qos: str | Iterable[str] | None = None,
        page_size: int = 100,
    ) -> Iterator[Job]:
        """Every job that matches the filters (all of them, AND), by ascending id, following
        the api's cursor from page to page (``page_size`` jobs a request, 1 to 1,000).
        Plain users see their own jobs and those of the accounts they coordinate."""
        query: dict[str, Any] = {
            "state": _comma_list(state),
            "user": user,
            "partition": partition,
            "name": name,
            "account": _comma_list(account),
            "qos": _comma_list(qos),
        }
        query = {k: v for k, v in query.items() if v is not None}
        cursor: str | Unset = UNSET
        while True:
            page = self._call(
                lambda cursor=cursor: job_list.sync_detailed(client=self.api, limit=page_size, cursor=cursor, **query)
            )
            yield from page.items
            if not isinstance(page.next_cursor, str) or not page.next_cursor:
                return
            cursor = page.next_cursor

    def cancel(self, job: JobRef) -> Job:
        """Cancels the job (``scancel``) and returns it: a pending job is CANCELLED at once, a
        running one is marked CANCELLED and its processes are signalled; an ended one is
        returned as it is."""
        id = job_id(job)
        return self._call(lambda: job_cancel.sync_detailed(id, client=self.api))

    # -- events ---------------------------------------------------------------------------

    def events(
        self,
        *,
        types: str | Iterable[str] | None = None,
        subject: str | None = None,
        last_event_id: str | None = None,
        reconnect: bool = True,
        max_reconnect_wait: float = 30.0,
    ) -> Iterator[CloudEvent]:
        """The cluster's events (CloudEvents) as they happen, from the Server-Sent Events of
        ``GET /v1/events``; the iterator does not end by itself.

        Args:
            types: only these types (``"berth.job.ended"``, ``berth.job.*`` patterns).
            subject: only events about this (``"jobs/12"``, ``"nodes/node-1"``).
            last_event_id: start after this event (an event id, as ``Last-Event-ID``);
                by default only events that happen from now on.
            reconnect: when the connection drops (or the api closes the stream), connect
                again with ``Last-Event-ID`` set to the last event received, so that every
                event arrives once; waits as the stream's ``retry`` field says, doubling while
                reconnections bring nothing, up to ``max_reconnect_wait``. Without it the
                iterator ends (or raises the connection error).
        """
        params: dict[str, str] = {}
        type_list = _comma_list(types)
        if type_list:
            params["type"] = type_list
        if subject:
            params["subject"] = subject
        last = last_event_id
        server_retry = 1.0
        quiet = 0  # reconnections in a row that brought no event
        while True:
            headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            try:
                with self._stream("/v1/events", params=params, headers=headers) as response:
                    for sse in httpx_sse.EventSource(response).iter_sse():
                        if sse.retry is not None:
                            server_retry = sse.retry / 1000
                        if not sse.data:
                            continue
                        event = CloudEvent.from_dict(json.loads(sse.data))
                        last = sse.id or event.id
                        quiet = 0
                        yield event
            except (httpx.TransportError, httpx_sse.SSEError):
                if not reconnect:
                    raise
            if not reconnect:
                return
            time.sleep(min(server_retry * (2**quiet), max_reconnect_wait))
            quiet = min(quiet + 1, 16)


def _comma_list(value: str | JobState | Iterable[str | JobState] | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, (str, JobState)):
        value = [value]
    items = [v.value if isinstance(v, JobState) else str(v) for v in value]
    return ",".join(items) if items else None


__all__ = [
    "ACTIVE_STATES",
    "Client",
    "JobRef",
    "exit_status",
    "is_ended",
    "job_id",
]
