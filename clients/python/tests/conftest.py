"""Fixtures for the client's tests, which talk to a live ``berth dev``.

``scripts/test-clients`` starts ``berth dev`` on free ports with a scratch data directory
and passes it in the environment: ``BERTH_TEST_URL``, ``BERTH_TEST_TOKEN`` (the admin
token ``berth dev`` prints) and ``BERTH_TEST_HOME`` (the ``HOME`` it ran with, under which
it wrote the CLI's ``.config/berth/config.toml``), and ``BERTH_TEST_PG_DIR``, the data
directory of the private PostgreSQL it started, which :class:`PrivatePostgres` stops and
starts again for the outage test. Nothing of Berth is mocked; the one stand-in is
:class:`CuttableProxy`, a TCP relay the event-stream test cuts to drop its connection as
a network would.
"""

from __future__ import annotations

import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

import berth


@dataclass
class Cluster:
    url: str
    token: str = field(repr=False)
    home: str


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    missing = [v for v in ("BERTH_TEST_URL", "BERTH_TEST_TOKEN", "BERTH_TEST_HOME") if not os.environ.get(v)]
    if missing:
        pytest.exit(
            f"{', '.join(missing)} not set: these tests need a live `berth dev`; run `bash scripts/test-clients`",
            returncode=2,
        )
    return Cluster(os.environ["BERTH_TEST_URL"], os.environ["BERTH_TEST_TOKEN"], os.environ["BERTH_TEST_HOME"])


@dataclass
class Recorded:
    """What a client sent and got: ``(method, path, status)`` of every answer."""

    answers: list[tuple[str, str, int]] = field(default_factory=list)

    def hook(self, response: httpx.Response) -> None:
        self.answers.append((response.request.method, response.request.url.path, response.status_code))

    def count(self, method: str, path: str, status: int | None = None) -> int:
        return sum(1 for m, p, s in self.answers if m == method and p == path and (status is None or s == status))


@pytest.fixture
def recorded() -> Recorded:
    return Recorded()


@pytest.fixture
def client(cluster: Cluster, recorded: Recorded) -> Iterator[berth.Client]:
    with berth.Client(cluster.url, cluster.token, httpx_args={"event_hooks": {"response": [recorded.hook]}}) as c:
        yield c


class CuttableProxy:
    """Relays TCP connections from a local port to the api. :meth:`cut` closes every open
    connection and turns new ones away (accepted, then closed at once) until :meth:`mend`."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self._open: list[socket.socket] = []
        self._cut = False
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                if self._cut:
                    downstream.close()
                    continue
                self.connections += 1
                upstream = socket.create_connection(self.target)
                self._open += [downstream, upstream]
            for a, b in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            for s in self._open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self._open.clear()

    def mend(self) -> None:
        with self._lock:
            self._cut = False

    def close(self) -> None:
        self.cut()
        self.listener.close()


@pytest.fixture
def proxy(cluster: Cluster) -> Iterator[CuttableProxy]:
    url = httpx.URL(cluster.url)
    p = CuttableProxy(url.host, url.port or 80)
    yield p
    p.close()


class PrivatePostgres:
    """The PostgreSQL server ``berth dev`` started in its data directory, stopped and started
    again with ``pg_ctl`` (as the account that owns it, ``berth dev`` running it as
    ``postgres`` or ``nobody`` when root) and the options it was started with."""

    def __init__(self, cluster_dir: str) -> None:
        self.cluster_dir = cluster_dir
        found = shutil.which("pg_ctl") or max(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), default=None)
        if found is None:
            raise RuntimeError("pg_ctl not found")
        self.pg_ctl = found
        owner = os.stat(cluster_dir).st_uid
        self.as_owner = ["runuser", "-u", pwd.getpwuid(owner).pw_name, "--"] if os.geteuid() == 0 and owner != 0 else []
        # postmaster.opts: the postgres command line, `"/…/postgres" "-D" "DIR" "-p" "5432" …`.
        with open(os.path.join(cluster_dir, "postmaster.opts")) as f:
            words = shlex.split(f.read())[1:]
        options = [w for i, w in enumerate(words) if w != "-D" and (i == 0 or words[i - 1] != "-D")]
        self.options = shlex.join(options)

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run([*self.as_owner, self.pg_ctl, "-D", self.cluster_dir, *args], check=True, capture_output=True)

    def stop(self) -> None:
        self._pg_ctl("-m", "fast", "-w", "stop")

    def start(self) -> None:
        log = os.path.join(self.cluster_dir, "restart.log")
        self._pg_ctl("-o", self.options, "-l", log, "-w", "-t", "60", "start")


@pytest.fixture
def database() -> Iterator[PrivatePostgres]:
    cluster_dir = os.environ.get("BERTH_TEST_PG_DIR")
    if not cluster_dir:
        pytest.skip("berth dev runs on DATABASE_URL, not a PostgreSQL of its own (BERTH_TEST_PG_DIR unset)")
    pg = PrivatePostgres(cluster_dir)
    yield pg
    # Whatever the test did, leave the server running for the tests after it.
    try:
        pg.start()
    except subprocess.CalledProcessError:
        pass  # already running
