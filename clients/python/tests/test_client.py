"""The client against a live ``berth dev`` (see conftest.py): what a user of it checks."""

from __future__ import annotations

import queue
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import berth
from berth import JobState


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for_state(client: berth.Client, job: berth.Job, state: JobState, timeout: float = 60) -> berth.Job:
    deadline = time.monotonic() + timeout
    while True:
        current = client.job(job)
        if current.state == state:
            return current
        assert time.monotonic() < deadline, f"job {current.id} is {current.state.value}, not {state.value}"
        time.sleep(0.2)


# -- configuration --------------------------------------------------------------------------


def test_from_env_reads_the_environment_first(cluster, monkeypatch, tmp_path):
    monkeypatch.setenv("BERTH_URL", cluster.url)
    monkeypatch.setenv("BERTH_TOKEN", cluster.token)
    monkeypatch.setenv("BERTH_CLIENT_CONFIG", str(tmp_path / "absent.toml"))
    with berth.Client.from_env() as client:
        assert client.url == cluster.url
        assert client.whoami().user == "root"


def test_from_env_reads_the_file_berth_dev_wrote(cluster, monkeypatch):
    # `berth dev` ran with HOME=$BERTH_TEST_HOME and wrote the CLI's configuration file
    # there; the client finds it where the CLI does.
    for name in ("BERTH_URL", "BERTH_TOKEN", "BERTH_CLIENT_CONFIG", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", cluster.home)
    assert berth.client_config_path() == Path(cluster.home) / ".config" / "berth" / "config.toml"
    with berth.Client.from_env() as client:
        assert client.url == cluster.url
        assert client.whoami().user == "root"
    # BERTH_URL alone overrides the file's URL; the token still comes from the file.
    monkeypatch.setenv("BERTH_URL", "http://127.0.0.1:9")
    assert berth.resolve_target().url == "http://127.0.0.1:9"
    assert berth.resolve_target().token == cluster.token


def test_from_env_without_a_cluster_says_what_to_set(monkeypatch, tmp_path):
    for name in ("BERTH_URL", "BERTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BERTH_CLIENT_CONFIG", str(tmp_path / "absent.toml"))
    with pytest.raises(berth.ConfigError, match="BERTH_URL"):
        berth.Client.from_env()


def test_the_token_is_never_in_reprs(cluster):
    # Booleans first, so that a failure does not print the token either.
    with berth.Client(cluster.url, cluster.token) as client:
        assert client.whoami().user == "root"  # the generated client now holds the header
        in_client = cluster.token in repr(client)
        in_generated = cluster.token in repr(client.api)
    in_target = cluster.token in repr(berth.Target(cluster.url, cluster.token))
    assert not in_client, "the token is in repr(Client)"
    assert not in_generated, "the token is in repr(Client.api)"
    assert not in_target, "the token is in repr(Target)"


# -- submit and wait --------------------------------------------------------------------------


def test_submit_waits_for_a_job_that_succeeds(client):
    job = client.submit(command="echo hello from berth", args=["-J", unique("ok")])
    assert job.state == JobState.COMPLETED
    assert job.exit_code == 0
    assert berth.exit_status(job) == 0
    assert "".join(client.logs(job)) == "hello from berth\n"


def test_submit_waits_for_a_job_that_fails_with_its_exit_code(client, tmp_path):
    script = tmp_path / "fail.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH -J failing\necho about to fail\nexit 3\n")
    job = client.submit(script)
    assert job.state == JobState.FAILED
    assert job.exit_code == 3
    assert berth.exit_status(job) == 3
    assert job.name == "failing"
    assert "".join(client.logs(job)) == "about to fail\n"


def test_script_arguments_and_environment_reach_the_job(client):
    job = client.submit(
        '#!/bin/bash\necho "$1 $2 $GREETING"\n',
        script_args=["first", "second"],
        environment={"GREETING": "hi", "PATH": "/usr/bin:/bin"},
    )
    assert job.state == JobState.COMPLETED
    assert "".join(client.logs(job)) == "first second hi\n"


def test_a_bad_script_line_is_a_typed_error_naming_line_and_option(client):
    with pytest.raises(berth.BadRequest) as caught:
        client.submit("#!/bin/bash\n#SBATCH --nodes=x\necho never\n")
    e = caught.value
    assert e.status == 400
    assert e.code == "invalid_option"
    assert e.line == 2
    assert e.field is not None and e.field.startswith("--nodes")
    assert "not a number" in e.detail
    assert str(e).startswith("400 invalid_option: line 2: ")


def test_an_unknown_job_is_not_found(client):
    with pytest.raises(berth.NotFound) as caught:
        client.job(10**12)
    assert caught.value.status == 404
    assert caught.value.code == "not_found"


def test_an_impossible_request_is_unprocessable(client):
    with pytest.raises(berth.Unprocessable) as caught:
        client.submit(command="true", args=["--gpus-per-node=64"])
    assert caught.value.status == 422


def test_the_same_idempotency_key_gives_back_the_same_job(client):
    key = unique("ci-run")
    first = client.submit(command="sleep 0.2", idempotency_key=key, wait=False)
    again = client.submit(command="sleep 0.2", idempotency_key=key, wait=False)
    assert again.id == first.id
    with pytest.raises(berth.Conflict) as caught:
        client.submit(command="sleep 0.3", idempotency_key=key, wait=False)
    assert caught.value.status == 409
    assert client.wait(first).state == JobState.COMPLETED


def test_wait_gives_up_after_its_timeout(client):
    job = client.submit(command="sleep 30", wait=False)
    with pytest.raises(berth.WaitTimeout) as caught:
        client.wait(job, timeout=1)
    assert caught.value.job.id == job.id
    assert caught.value.job.state in (JobState.PENDING, JobState.RUNNING)
    client.cancel(job)


# -- logs -------------------------------------------------------------------------------------


def test_logs_follow_a_job_to_its_end(client):
    job = client.submit(command="for i in 1 2 3 4 5 6 7 8; do echo line $i; sleep 0.4; done", wait=False)
    arrivals: list[tuple[float, str]] = []
    for chunk in client.logs(job, follow=True):
        arrivals.append((time.monotonic(), chunk))
    text = "".join(chunk for _, chunk in arrivals)
    assert text == "".join(f"line {i}\n" for i in range(1, 9))
    # Followed, not read once at the end: the lines came over the job's ~3.2 s.
    assert arrivals[-1][0] - arrivals[0][0] > 1.0
    # The stream ended because the job did.
    assert client.job(job).state == JobState.COMPLETED


# -- cancel -----------------------------------------------------------------------------------


def test_cancel_a_running_job(client):
    job = client.submit(command="echo started; sleep 300", wait=False)
    wait_for_state(client, job, JobState.RUNNING)
    cancelled = client.cancel(job)
    assert cancelled.state == JobState.CANCELLED
    ended = client.wait(job, timeout=60)
    assert ended.state == JobState.CANCELLED
    assert berth.exit_status(ended) == 1
    # Cancelling again changes nothing.
    assert client.cancel(job).state == JobState.CANCELLED


# -- listing ----------------------------------------------------------------------------------


def test_jobs_pages_through_every_job(client, recorded):
    name = unique("held")
    submitted = [client.submit(command="true", args=["--hold", "-J", name], wait=False).id for _ in range(23)]
    try:
        recorded.answers.clear()
        listed = list(client.jobs(name=name, page_size=5))
        assert [j.id for j in listed] == sorted(submitted)
        assert all(j.state == JobState.PENDING and j.reason == "JobHeldUser" for j in listed)
        # 23 jobs, 5 a page: 5 pages, each its own request.
        assert recorded.count("GET", "/v1/jobs", 200) == 5
        assert [j.id for j in client.jobs(name=name, state="PENDING", page_size=1000)] == sorted(submitted)
    finally:
        for id in submitted:
            client.cancel(id)
    assert [j.id for j in client.jobs(name=name, state=[JobState.CANCELLED], page_size=7)] == sorted(submitted)
    assert list(client.jobs(name=name, state="PENDING")) == []


# -- rate limits ------------------------------------------------------------------------------


def test_rate_limited_requests_are_retried_after_retry_after(client, recorded):
    # scripts/test-clients runs `berth dev --rate-limit-per-user 20 --rate-limit-burst 20`:
    # 80 requests from 8 threads at once go past it; the client waits as Retry-After says
    # and every call returns its answer.
    job = client.submit(command="true")
    recorded.answers.clear()
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        seen = list(pool.map(lambda _: client.job(job).id, range(80)))
    assert seen == [job.id] * 80
    limited = recorded.count("GET", f"/v1/jobs/{job.id}", 429)
    assert limited >= 1
    assert recorded.count("GET", f"/v1/jobs/{job.id}", 200) == 80
    # Retry-After is a whole number of seconds (at least 1): the client waited it.
    assert time.monotonic() - started >= 1.0


# -- events -----------------------------------------------------------------------------------


def test_an_event_stream_resumed_after_a_disconnect_gets_every_event_once(cluster, client, proxy):
    through_proxy = berth.Client(proxy.url, cluster.token)
    received: queue.Queue = queue.Queue()
    last_subject: list[str] = []  # the consumer stops after this job's end

    def consume() -> None:
        try:
            for event in through_proxy.events(types="berth.job.*"):
                received.put(event)
                if event.type_ == "berth.job.ended" and event.subject in last_subject:
                    return
        except Exception as e:  # reported to the test below
            received.put(e)

    threading.Thread(target=consume, daemon=True).start()
    events: list[berth.CloudEvent] = []

    def until_ended(job_id: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.type_ == "berth.job.ended" and e.subject == f"jobs/{job_id}" for e in events):
            item = received.get(timeout=max(deadline - time.monotonic(), 0.1))
            if isinstance(item, Exception):
                raise item
            events.append(item)

    # A stream starts with the events that happen once it is open: submit until one arrives.
    deadline = time.monotonic() + 30
    while received.empty():
        assert time.monotonic() < deadline, "the event stream never opened"
        client.submit(command="true")
    before = [client.submit(command="echo before", wait=False) for _ in range(2)]
    for job in before:
        until_ended(job.id)

    # The network drops the stream; jobs run and end while the client cannot reach the api.
    proxy.cut()
    during = [client.submit(command="echo during") for _ in range(2)]
    assert all(job.state == JobState.COMPLETED for job in during)
    time.sleep(1)
    proxy.mend()
    after = client.submit(command="echo after", wait=False)
    last_subject.append(f"jobs/{after.id}")
    until_ended(after.id)
    through_proxy.close()

    assert proxy.connections >= 2, "the client never reconnected"
    ids = [e.id for e in events]
    assert len(ids) == len(set(ids)), "an event arrived twice"
    # Every job's submission, start and end arrived, those of the jobs that ran while the
    # stream was cut included.
    for job in [*before, *during, after]:
        types = [e.type_ for e in events if e.subject == f"jobs/{job.id}"]
        assert types == ["berth.job.submitted", "berth.job.started", "berth.job.ended"], (job.id, types)
    ended = {int(e.data["job_id"]): e.data["state"] for e in events if e.type_ == "berth.job.ended"}
    assert all(ended[job.id] == "COMPLETED" for job in during)
    # Exactly what the api lists for the same filter over the same span, in its order.
    listed = list_events(client, after=ids[0], types="berth.job.*", until=ids[-1])
    assert ids[1:] == listed

    # A new stream given last_event_id starts right after that event.
    resume_at = ids[len(ids) // 2]
    with berth.Client(cluster.url, cluster.token) as fresh:
        resumed = fresh.events(types="berth.job.*", last_event_id=resume_at)
        expected = ids[ids.index(resume_at) + 1 :]
        got = [next(resumed).id for _ in expected]
        resumed.close()
    assert got == expected


def list_events(client: berth.Client, *, after: str, types: str, until: str) -> list[str]:
    """Event ids after ``after`` up to ``until``, from the JSON listing of ``GET /v1/events``."""
    from berth_client.api.events import event_list

    out: list[str] = []
    cursor = after
    while True:
        page = event_list.sync(client=client.api, after=cursor, type_=types, limit=100)
        for e in page.items:
            out.append(e.id)
            if e.id == until:
                return out
        assert isinstance(page.next_cursor, str), f"{until} not listed"
        cursor = page.next_cursor


# -- database outage (last: it stops berth dev's PostgreSQL for a few seconds) -----------------


def test_a_submission_during_a_database_outage_is_retried_and_makes_one_job(client, recorded, database):
    name = unique("outage")
    database.stop()
    outcome: dict = {}

    def submit() -> None:
        try:
            outcome["job"] = client.submit(command="echo survived", args=["-J", name], timeout=90)
        except Exception as e:  # reported below
            outcome["error"] = e

    submitter = threading.Thread(target=submit)
    submitter.start()
    deadline = time.monotonic() + 30
    while recorded.count("POST", "/v1/jobs", 503) < 2:
        assert time.monotonic() < deadline, f"the api never answered 503: {recorded.answers}"
        time.sleep(0.1)
    database.start()
    submitter.join(120)
    assert "error" not in outcome, outcome.get("error")
    job = outcome["job"]
    assert job.state == JobState.COMPLETED
    assert "".join(client.logs(job)) == "survived\n"
    # Sent several times, with its Idempotency-Key: one job.
    assert recorded.count("POST", "/v1/jobs", 201) == 1
    assert [j.id for j in client.jobs(name=name)] == [job.id]
