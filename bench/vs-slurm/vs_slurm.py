#!/usr/bin/env python3
"""Berth beside Slurm on one machine: issue 30's workloads, run alternately (bench/README.md,
"vs-slurm").

    python3 bench/vs-slurm/vs_slurm.py install        # as root: Debian's Slurm, munge, slurmrestd, wrk
    python3 bench/vs-slurm/vs_slurm.py run [options]  # as root; --help lists the sizes

Slurm (Debian's slurm-wlm) runs as one slurmctld and N slurmd on this host (multiple-slurmd:
one `NodeName` and port per slurmd), each declaring G GPUs whose `File=` are character
devices made in the scratch directory (nothing opens them: `TaskPlugin=task/none`), with
SchedMD's high-throughput settings (doc/html/high_throughput.shtml; the two departures are
printed and listed in bench/README.md). Berth runs as `berth dev --workers W --gpus G` on a
PostgreSQL the harness starts itself (Debian's initdb/pg_ctl, on a socket in the scratch
directory, `pg_stat_statements` preloaded), never the machine's shared server.

Every (workload, run, system) starts a fresh cluster, waits for it to settle, measures, and
stops it; the systems alternate (Slurm first in odd runs, Berth first in even ones). CPU
time comes from /proc: the machine's from /proc/stat, each cluster's from its process
tree. Each cluster runs under a small "reaper" process of this script that is the child
subreaper (prctl PR_SET_CHILD_SUBREAPER) of everything it starts, so that daemons,
slurmstepd, shepherds and jobs, even those that daemonize, stay in its tree and are reaped
by it: a tree's CPU is the sum over its live processes of utime+stime+cutime+cstime, which
counts every process that ended inside the window exactly once. PostgreSQL's is its
postmaster's tree; the clients' (sbatch, squeue, scontrol, wrk, psql) is this script's
reaped children; "other" is what /proc/stat saw beyond all of these (the lead's builds,
anything else on the machine).

Python 3 standard library only. Stdout gets the results table (markdown); stderr the
progress and per-run lines; the scratch directory keeps results.json, table.md and logs.
"""

import argparse
import concurrent.futures
import ctypes
import datetime
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLK = os.sysconf("SC_CLK_TCK")
PG_BIN = "/usr/lib/postgresql/15/bin"
# SchedMD's high-throughput SchedulerParameters (high_throughput.shtml) but for two, which
# would measure Slurm's configured delays rather than Slurm: batch_sched_delay=20 (a batch
# job may wait 20 s for its first scheduling pass; 0 schedules at the next 1 s tick of
# slurmctld's background loop) and sched_min_interval=2000000 (at most one pass per 2 s).
SLURM_SCHED_PARAMS = ("batch_sched_delay=0,bf_continue,bf_interval=300,bf_min_age_reserve=10800,"
                      "bf_resolution=600,bf_yield_interval=1000000,partition_job_depth=500,"
                      "sched_max_job_start=200")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# /proc: machine CPU, process trees, memory


def machine_ticks():
    """Busy CPU ticks of the whole machine since boot (user+nice+system+irq+softirq+steal)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = v
    return user + nice + system + irq + softirq + steal


def loadavg1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def proc_table():
    """pid -> (ppid, comm, own ticks utime+stime, reaped children's ticks cutime+cstime)."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                s = f.read()
        except OSError:
            continue
        r = s.rfind(")")
        comm = s[s.find("(") + 1:r]
        f = s[r + 2:].split()
        table[int(name)] = (int(f[1]), comm, int(f[11]) + int(f[12]), int(f[13]) + int(f[14]))
    return table


def subtree(table, root):
    """root and its live descendants."""
    kids = {}
    for pid, row in table.items():
        kids.setdefault(row[0], []).append(pid)
    out, todo = [], [root] if root in table else []
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def tree_ticks(table, root):
    """CPU of a process tree: its live processes' own and reaped children's ticks."""
    if root is None:
        return 0
    return sum(table[p][2] + table[p][3] for p in subtree(table, root))


def own_ticks(table, pid):
    return table[pid][2] if pid in table else 0


def mem_kib(pid):
    """(Rss, Pss) of a process in KiB from smaps_rollup; (0, 0) when it is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def read_pidfile(path):
    try:
        with open(path) as f:
            return int(f.readline().strip())
    except (OSError, ValueError):
        return None


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def wait_gone(pid, timeout):
    """Waits until pid has exited (gone, or a zombie); whether it did."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


class CpuWindow:
    """CPU used between start() and stop(): the machine's, this script's and its reaped
    children's, and each group of the system under test (ticks -> ms)."""

    def __init__(self, system):
        self.system = system

    def _sample(self):
        t = os.times()
        table = proc_table()
        return (machine_ticks(), t.user + t.system, t.children_user + t.children_system,
                self.system.cpu_groups(table))

    def start(self):
        self.a = self._sample()
        self.t0 = time.time()

    def stop(self):
        self.b = self._sample()
        self.t1 = time.time()
        m = (self.b[0] - self.a[0]) * 1000.0 / CLK
        harness = (self.b[1] - self.a[1]) * 1000.0
        clients = (self.b[2] - self.a[2]) * 1000.0
        groups = {k: (self.b[3].get(k, 0) - self.a[3].get(k, 0)) * 1000.0 / CLK
                  for k in self.b[3]}
        groups["clients"] = clients
        groups["harness"] = harness
        groups["other"] = m - sum(groups.values())
        self.machine_ms = m
        self.groups_ms = groups
        return m, groups


# ---------------------------------------------------------------------------------------
# The reaper: a child subreaper that starts one command and reaps everything below it.


def reaper_main(argv):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        sys.exit("reaper: prctl(PR_SET_CHILD_SUBREAPER) failed")

    def stop(_sig, _frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    subprocess.Popen(argv)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            time.sleep(0.2)


def spawn_reaper(argv, env, log_path):
    out = open(log_path, "ab")
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), "reaper", "--"] + argv,
                            env=env, stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def run(cmd, env=None, check=True, capture=True, timeout=600, input=None):
    p = subprocess.run(cmd, env=env, capture_output=capture, text=True, timeout=timeout,
                       input=input)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}…: exit {p.returncode}: "
                           f"{(p.stderr or '').strip()[:500]} {(p.stdout or '').strip()[:200]}")
    return p


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_time(text):
    """An RFC 3339 time -> epoch seconds (fractions beyond microseconds dropped)."""
    if text is None:
        return None
    text = re.sub(r"(\.\d{6})\d+", r"\1", text.replace("Z", "+00:00"))
    return datetime.datetime.fromisoformat(text).timestamp()


# ---------------------------------------------------------------------------------------
# The systems. Each offers start/stop, CLI submission, release, a done check, its process
# groups for CPU, its memory, and REST details for P5.


class Slurm:
    name = "Slurm"
    key = "slurm"

    def __init__(self, args, work):
        self.args = args
        self.dir = os.path.join(work, "slurm")
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.host = socket.gethostname().split(".")[0]
        self.nodes = [f"node{i}" for i in range(1, args.slurm_nodes + 1)]
        self.reaper = None
        self.rest_port = None
        self.ctld_port = args.slurm_port
        self.write_config()

    def write_config(self):
        d, a = self.dir, self.args
        for sub in ("state", "log", "dev"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        for g in range(a.gpus):
            dev = os.path.join(d, "dev", f"nvidia{g}")
            if not os.path.exists(dev):
                os.mknod(dev, 0o600 | 0o020000, os.makedev(195, g))  # a fake char device
        key = os.path.join(d, "jwt_hs256.key")
        if not os.path.exists(key):
            with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(os.urandom(32))
        n = len(self.nodes)
        gpu_files = f"nvidia[0-{a.gpus - 1}]" if a.gpus > 1 else "nvidia0"
        conf = f"""# Written by bench/vs-slurm/vs_slurm.py
ClusterName=vs
SlurmctldHost={self.host}
SlurmctldPort={self.ctld_port}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.%n.log
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.%n.pid
AuthType=auth/munge
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key={d}/jwt_hs256.key
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
PriorityType=priority/basic
SchedulerType=sched/backfill
SchedulerParameters={a.slurm_sched_params}
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
GresTypes=gpu
MaxJobCount={a.max_job_count}
MinJobAge={a.slurm_min_job_age}
SlurmctldDebug=error
SlurmdDebug=error
ReturnToService=2
NodeName=node[1-{n}] NodeHostname={self.host} NodeAddr=127.0.0.1 Port=[{a.slurm_port + 1}-{a.slurm_port + n}] CPUs={a.cpus} RealMemory=1000 Gres=gpu:{a.gpus} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        for line in a.slurm_conf_extra:
            conf += line + "\n"
        with open(self.conf, "w") as f:
            f.write(conf)
        with open(os.path.join(d, "gres.conf"), "w") as f:
            f.write(f"NodeName=node[1-{n}] Name=gpu File={d}/dev/{gpu_files}\n")

    # -- lifecycle

    started_munged = False

    def ensure_munged(self):
        """Starts munged (10 threads, as SchedMD advises) unless one answers; stop_munged()
        stops the one started here."""
        if run(["munge", "-n"], check=False).returncode == 0:
            return
        for p in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
            os.makedirs(p, exist_ok=True)
        run(["chown", "-R", "munge:munge", "/run/munge", "/var/log/munge", "/var/lib/munge",
             "/etc/munge"])
        run(["su", "-s", "/bin/sh", "munge", "-c", "munged --num-threads 10"])
        for _ in range(50):
            if run(["munge", "-n"], check=False).returncode == 0:
                Slurm.started_munged = True
                return
            time.sleep(0.1)
        raise RuntimeError("munged does not answer")

    def stop_munged(self):
        pid = read_pidfile("/run/munge/munged.pid") if Slurm.started_munged else None
        if pid:
            os.kill(pid, signal.SIGTERM)
            wait_gone(pid, 10)
            Slurm.started_munged = False

    def start(self, rest=False, limits_off=True):
        del limits_off
        self.ensure_munged()
        d = self.dir
        for sub in ("state", "spool"):
            shutil.rmtree(os.path.join(d, sub), ignore_errors=True)
        os.makedirs(os.path.join(d, "state"))
        for node in self.nodes:
            os.makedirs(os.path.join(d, "spool", node))
        script = "slurmctld -c\n" + "".join(f"slurmd -N {n}\n" for n in self.nodes)
        self.rest_port = None
        if rest:
            self.rest_port = free_port()
            script += (f"SLURM_JWT=daemon exec slurmrestd -a rest_auth/jwt -s openapi/v0.0.38 "
                       f"-u nobody 127.0.0.1:{self.rest_port} >{d}/log/slurmrestd.log 2>&1 &\n")
        self.reaper = spawn_reaper(["sh", "-ec", script], self.env, os.path.join(d, "log", "start.log"))
        end = time.time() + 60
        while time.time() < end:
            p = run(["sinfo", "-h", "-o", "%D %t"], env=self.env, check=False)
            idle = sum(int(line.split()[0]) for line in p.stdout.splitlines()
                       if line.split()[1:] == ["idle"])
            if idle == len(self.nodes):
                break
            time.sleep(0.3)
        else:
            raise RuntimeError(f"Slurm's nodes did not become idle; see {d}/log")
        if rest:
            tok = run(["scontrol", "token", "lifespan=7200", "username=root"], env=self.env)
            self.rest_token = tok.stdout.strip().split("=", 1)[1]
            end = time.time() + 20
            while time.time() < end:
                try:
                    socket.create_connection(("127.0.0.1", self.rest_port), 1).close()
                    break
                except OSError:
                    time.sleep(0.2)
            else:
                raise RuntimeError(f"slurmrestd does not listen; see {d}/log/slurmrestd.log")
        self.mark_ended()

    def stop(self):
        if not self.reaper:
            return
        run(["scancel", "--quiet", "-u", "root"], env=self.env, check=False)
        end = time.time() + 60
        while time.time() < end:
            p = run(["squeue", "-h", "-o", "%i"], env=self.env, check=False)
            if p.returncode != 0 or not p.stdout.strip():
                break
            time.sleep(0.3)
        pids = [read_pidfile(os.path.join(self.dir, f"slurmd.{n}.pid")) for n in self.nodes]
        pids.append(read_pidfile(os.path.join(self.dir, "slurmctld.pid")))
        table = proc_table()
        pids += [p for p in subtree(table, self.reaper.pid) if table[p][1] == "slurmrestd"]
        for pid in pids:
            if pid:
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass
        for pid in pids:
            if pid:
                wait_gone(pid, 20)
        # Whatever is left in the tree (a step daemon past its job).
        table = proc_table()
        for pid in subtree(table, self.reaper.pid):
            if pid != self.reaper.pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.3)
        self.reaper.terminate()
        self.reaper.wait(10)
        self.reaper = None

    # -- clients

    def submit(self, opts, script):
        p = run(["sbatch", "--parsable", "-o", "/dev/null"] + opts + [script], env=self.env)
        return int(p.stdout.strip().split(";")[0])

    def release(self, ids):
        run(["scontrol", "release", ",".join(map(str, ids))], env=self.env)

    def job_state(self, job_id):
        p = run(["squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T"], env=self.env,
                check=False)
        s = p.stdout.strip()
        return s if s else "GONE"

    def ended_count(self):
        """Jobs ended since the cluster started (sdiag's counters: one cheap RPC)."""
        out = run(["sdiag"], env=self.env).stdout
        n = 0
        for key in ("Jobs completed", "Jobs canceled", "Jobs failed"):
            m = re.search(rf"^\s*{key}:\s*(\d+)", out, re.M)
            n += int(m.group(1)) if m else 0
        return n

    def mark_ended(self):
        self.completed_base = self.ended_count()

    def wait_ended(self, count, poll, timeout):
        """Waits until `count` more jobs ended than at mark_ended(); the time it saw them, or
        None."""
        end = time.time() + timeout
        while time.time() < end:
            ended = self.ended_count()
            if ended < self.completed_base:  # sdiag's counters restart at midnight UTC
                self.completed_base = 0
            if ended - self.completed_base >= count:
                return time.time()
            time.sleep(poll)
        return None

    def failed_visible(self):
        """(not COMPLETED, listed) among the ended jobs still listed (MinJobAge)."""
        out = run(["squeue", "-h", "-t", "all", "-o", "%T"], env=self.env).stdout.split()
        ended = [s for s in out if s not in ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING")]
        return sum(1 for s in ended if s != "COMPLETED"), len(ended)

    def node(self, i):
        return self.nodes[i]

    # -- CPU and memory

    def cpu_groups(self, table):
        ctld = read_pidfile(os.path.join(self.dir, "slurmctld.pid"))
        slurmds = [read_pidfile(os.path.join(self.dir, f"slurmd.{n}.pid")) for n in self.nodes]
        root = self.reaper.pid if self.reaper else None
        restd = [p for p in subtree(table, root) if table[p][1] == "slurmrestd"] if root else []
        munged = read_pidfile("/run/munge/munged.pid")
        g = {
            "slurmctld": tree_ticks(table, ctld) if ctld in table else 0,
            "slurmd": sum(own_ticks(table, p) for p in slurmds if p),
            "slurmrestd": sum(tree_ticks(table, p) for p in restd),
            "munged": tree_ticks(table, munged) if munged in table else 0,
        }
        total = tree_ticks(table, root)
        g["stepd+jobs"] = (total - g["slurmctld"] - g["slurmd"] - g["slurmrestd"]
                           - own_ticks(table, root))
        return g

    def memory(self):
        ctld = read_pidfile(os.path.join(self.dir, "slurmctld.pid"))
        slurmds = [read_pidfile(os.path.join(self.dir, f"slurmd.{n}.pid")) for n in self.nodes]
        rss, pss = mem_kib(ctld)
        d = [mem_kib(p) for p in slurmds if p]
        return {
            "control_rss": rss / 1024, "control_pss": pss / 1024,
            "parts": f"slurmctld RSS {rss / 1024:.0f} PSS {pss / 1024:.0f} MiB; "
                     f"{len(d)} slurmd PSS {sum(x[1] for x in d) / 1024:.0f} MiB",
            "all_pss": (pss + sum(x[1] for x in d)) / 1024,
        }

    # -- P5

    def rest_request(self):
        body = json.dumps({
            "script": "#!/bin/sh\ntrue\n",
            "job": {"name": "p5", "hold": True, "current_working_directory": "/tmp",
                    "environment": {"PATH": "/bin:/usr/bin"}, "standard_output": "/dev/null"},
        })
        return (f"http://127.0.0.1:{self.rest_port}/slurm/v0.0.38/job/submit", body,
                {"X-SLURM-USER-NAME": "root", "X-SLURM-USER-TOKEN": self.rest_token,
                 "Content-Type": "application/json"})


class Berth:
    name = "Berth"
    key = "berth"

    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.dir = os.path.join(work, "berth")
        os.makedirs(self.dir, exist_ok=True)
        self.bin = args.berth_bin
        self.bindir = os.path.join(self.dir, "bin")
        os.makedirs(self.bindir, exist_ok=True)
        for name in ("sbatch", "squeue", "scontrol", "scancel"):
            link = os.path.join(self.bindir, name)
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(self.bin, link)
        self.pg = Postgres(args, os.path.join(work, "pg"))
        self.reaper = None
        self.dev = None
        self.conn = None

    def start(self, rest=False, limits_off=True):
        del rest
        self.pg.restart_fresh()
        data = os.path.join(self.dir, "data")
        shutil.rmtree(data, ignore_errors=True)
        os.makedirs(data)
        cfg = os.path.join(self.dir, "config")
        os.makedirs(cfg, exist_ok=True)
        self.port = free_port()
        cmd = [self.bin, "dev", "--data-dir", data, "--listen", f"127.0.0.1:{self.port}",
               "--workers", str(self.args.berth_workers), "--gpus", self.args.berth_gpus]
        if self.args.cpus:
            cmd += ["--cpus", str(self.args.cpus)]
        if limits_off:
            cmd += ["--rate-limit-per-user", "0", "--rate-limit-per-address", "0"]
        self.limits_off = limits_off
        env = dict(os.environ, DATABASE_URL=self.pg.url("berth"), XDG_CONFIG_HOME=cfg)
        env.pop("BERTH_URL", None)
        env.pop("BERTH_TOKEN", None)
        out = os.path.join(self.dir, "dev.log")
        if os.path.exists(out):
            os.rename(out, out + ".prev")
        self.reaper = spawn_reaper(cmd, env, out)
        end = time.time() + 180
        token = None
        self.dev = None
        while time.time() < end:
            with open(out, errors="replace") as f:
                text = f.read()
            m = re.search(r"^\s*token:\s*(\S+)", text, re.M)
            if m:
                token = m.group(1)
                break
            table = proc_table()
            kids = [p for p, row in table.items() if row[0] == self.reaper.pid]
            if self.dev is None and kids:
                self.dev = kids[0]
            elif self.dev is not None and self.dev not in kids:
                raise RuntimeError(f"berth dev exited: {text[-2000:]}")
            time.sleep(0.3)
        if token is None:
            raise RuntimeError(f"berth dev did not start in 180 s; see {out}")
        self.token = token
        table = proc_table()
        self.dev = next(p for p, row in table.items() if row[0] == self.reaper.pid)
        self.env = dict(os.environ, BERTH_URL=f"http://127.0.0.1:{self.port}",
                        BERTH_TOKEN=token, XDG_CONFIG_HOME=cfg)
        self.conn = None

    def stop(self):
        if not self.reaper:
            return
        if self.dev and pid_alive(self.dev):
            os.kill(self.dev, signal.SIGINT)
            if not wait_gone(self.dev, 60):
                os.kill(self.dev, signal.SIGKILL)
        table = proc_table()
        for pid in subtree(table, self.reaper.pid):
            if pid != self.reaper.pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.3)
        self.reaper.terminate()
        self.reaper.wait(10)
        self.reaper = None
        self.dev = None

    # -- clients

    def cli(self, name):
        return os.path.join(self.bindir, name)

    def submit(self, opts, script):
        p = run([self.cli("sbatch"), "--parsable", "-o", "/dev/null"] + opts + [script],
                env=self.env)
        return int(p.stdout.strip().split(";")[0])

    def release(self, ids):
        # One comma-separated list: Berth's scontrol reads only its first job list.
        run([self.cli("scontrol"), "release", ",".join(map(str, ids))], env=self.env)

    def http(self, method, path, body=None):
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                headers = {"Authorization": f"Bearer {self.token}"}
                if body is not None:
                    headers["Content-Type"] = "application/json"
                self.conn.request(method, path, body=body, headers=headers)
                r = self.conn.getresponse()
                data = r.read()
                if r.status >= 300:
                    raise RuntimeError(f"{method} {path}: {r.status} {data[:300]!r}")
                return json.loads(data) if data else None
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        return None

    def job(self, job_id):
        return self.http("GET", f"/v1/jobs/{job_id}")

    def job_state(self, job_id):
        return self.job(job_id)["state"]

    def active(self):
        page = self.http("GET", "/v1/jobs?state=PENDING,RUNNING,SUSPENDED,COMPLETING&limit=1")
        return len(page["items"])

    def mark_ended(self):
        pass

    def wait_ended(self, count, poll, timeout):
        """Waits until no job is pending, running or completing (`count` unused: every job
        submitted here is waited for); the time it saw that, or None."""
        del count
        end = time.time() + timeout
        while time.time() < end:
            if self.active() == 0:
                return time.time()
            time.sleep(poll)
        return None

    def failed_visible(self):
        bad = 0
        for state in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                      "BOOT_FAIL"):
            cursor = ""
            while True:
                page = self.http("GET", f"/v1/jobs?state={state}&limit=1000{cursor}")
                bad += len(page["items"])
                if not page.get("next_cursor"):
                    break
                cursor = "&cursor=" + page["next_cursor"]
        return bad, None

    def node(self, i):
        return f"node-{i + 1}"

    # -- CPU and memory

    def cpu_groups(self, table):
        root = self.reaper.pid if self.reaper else None
        dev_own = own_ticks(table, self.dev)
        pg = tree_ticks(table, self.pg.postmaster())
        total = tree_ticks(table, root)
        return {"berth": dev_own, "berth children": total - dev_own - own_ticks(table, root),
                "postgres": pg}

    def memory(self):
        rss, pss = mem_kib(self.dev)
        table = proc_table()
        pg = [mem_kib(p) for p in subtree(table, self.pg.postmaster())]
        pg_pss = sum(x[1] for x in pg) / 1024
        return {
            "control_rss": rss / 1024 + sum(x[0] for x in pg) / 1024,
            "control_pss": pss / 1024 + pg_pss,
            "parts": f"berth dev RSS {rss / 1024:.0f} PSS {pss / 1024:.0f} MiB; PostgreSQL "
                     f"({len(pg)} processes) PSS {pg_pss:.0f} MiB, RSS "
                     f"{sum(x[0] for x in pg) / 1024:.0f} MiB",
            "all_pss": pss / 1024 + pg_pss,
        }

    # -- P5

    def rest_request(self):
        body = json.dumps({"script": "#!/bin/sh\ntrue\n", "args": ["-H", "-o", "/dev/null"]})
        return (f"http://127.0.0.1:{self.port}/v1/jobs", body,
                {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})


class Postgres:
    """Berth's PostgreSQL: initdb'd once into the scratch directory as the postgres user,
    Unix socket only, pg_stat_statements preloaded; restarted for each Berth cluster."""

    def __init__(self, args, d):
        self.args = args
        self.dir = d
        self.data = os.path.join(d, "data")
        self.sock = os.path.join(d, "sock")
        self.port = args.pg_port
        self.started = False

    def as_postgres(self, cmd, check=True):
        return run(["runuser", "-u", "postgres", "--"] + cmd, check=check)

    def init(self):
        if os.path.exists(os.path.join(self.data, "PG_VERSION")):
            return
        os.makedirs(self.dir, exist_ok=True)
        os.makedirs(self.sock, exist_ok=True)
        shutil.chown(self.dir, "postgres", "postgres")
        shutil.chown(self.sock, "postgres", "postgres")
        os.chmod(self.sock, 0o700)
        # As berth dev's own server (cli/src/pg.rs): trust, superuser berth, UTF8, no locale.
        self.as_postgres([f"{PG_BIN}/initdb", "-D", self.data, "-A", "trust", "-U", "berth",
                          "-E", "UTF8", "--no-locale", "--no-sync"])

    def start(self):
        self.init()
        opts = (f"-p {self.port} -k {self.sock} -c listen_addresses= "
                f"-c unix_socket_permissions=0700 "
                f"-c shared_preload_libraries=pg_stat_statements "
                f"-c pg_stat_statements.max=10000")
        self.as_postgres([f"{PG_BIN}/pg_ctl", "-D", self.data, "-o", opts, "-l",
                          os.path.join(self.dir, "pg.log"), "-w", "-t", "60", "start"])
        self.started = True

    def stop(self):
        if self.started:
            self.as_postgres([f"{PG_BIN}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"],
                             check=False)
            self.started = False

    def restart_fresh(self):
        self.stop()
        self.start()
        self.psql("postgres", "DROP DATABASE IF EXISTS berth WITH (FORCE)")
        self.psql("postgres", "CREATE DATABASE berth")
        self.psql("postgres", "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def postmaster(self):
        return read_pidfile(os.path.join(self.data, "postmaster.pid"))

    def url(self, db):
        return f"postgres://berth@localhost/{db}?host={self.sock}&port={self.port}"

    def psql(self, db, sql):
        p = run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.sock, "-p",
                 str(self.port), "-U", "berth", "-d", db, "-c", sql])
        return p.stdout.strip()

    def xacts(self):
        return int(self.psql("postgres", "SELECT xact_commit + xact_rollback FROM "
                                         "pg_stat_database WHERE datname = 'berth'") or 0)

    def reset_statements(self):
        self.psql("postgres", "SELECT pg_stat_statements_reset()")

    def statements(self):
        """(calls, [(calls, mean ms, query)] top by calls) for database berth."""
        where = "s.dbid = (SELECT oid FROM pg_database WHERE datname = 'berth')"
        total = self.psql("postgres", f"SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s "
                                      f"WHERE {where}")
        rows = self.psql("postgres",
                         "SELECT calls, round(mean_exec_time::numeric, 3), "
                         "regexp_replace(left(query, 110), '\\s+', ' ', 'g') "
                         f"FROM pg_stat_statements s WHERE {where} ORDER BY calls DESC LIMIT 12")
        top = []
        for line in rows.splitlines():
            calls, mean, query = line.split("|", 2)
            top.append((int(calls), float(mean), query))
        return int(float(total)), top


# ---------------------------------------------------------------------------------------
# Job scripts


def write_scripts(work):
    d = os.path.join(work, "scripts")
    marks = os.path.join(work, "marks")
    os.makedirs(d, exist_ok=True)
    os.makedirs(marks, exist_ok=True)
    os.chmod(marks, 0o1777)
    scripts = {
        # The job's first instruction's time, for submit -> running.
        "p1": f'#!/bin/bash\nprintf "%s\\n" "$EPOCHREALTIME" > {marks}/p1.$SLURM_JOB_ID\n',
        "true": "#!/bin/sh\ntrue\n",
        "sleep": "#!/bin/sh\nexec sleep 3600\n",
    }
    for name, text in scripts.items():
        with open(os.path.join(d, f"{name}.sh"), "w") as f:
            f.write(text)
    return d, marks


def p4_script(work, seconds, marks):
    path = os.path.join(work, "scripts", "p4.sh")
    with open(path, "w") as f:
        f.write("#!/bin/bash\ns=$EPOCHREALTIME\n"
                f"sleep {seconds}\n"
                "e=$EPOCHREALTIME\n"
                'printf "%s %s %s %s\\n" "$s" "$e" "${SLURMD_NODENAME:-?}" '
                f'"${{CUDA_VISIBLE_DEVICES:-?}}" > {marks}/$SLURM_JOB_ID.tmp\n'
                f"mv {marks}/$SLURM_JOB_ID.tmp {marks}/$SLURM_JOB_ID\n")
    return path


def submit_many(system, opts, script, n, threads):
    """n submissions by the CLI, `threads` at a time; their ids."""
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda _i: system.submit(opts, script), range(n)))


def clear_dir(d):
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))


# ---------------------------------------------------------------------------------------
# Workloads. Each takes a started, settled system and returns {metric: value} plus details.


def p1(system, a, ctx):
    scripts, marks = ctx["scripts"], ctx["marks"]
    clear_dir(marks)
    done, running, srv_running, srv_done = [], [], [], []
    for i in range(a.p1_samples):
        # A random idle time, so that submissions fall at every phase of the systems'
        # periodic loops (slurmctld's 1 s tick, Berth's cycles).
        time.sleep(a.p1_gap * (1 + random.random()))
        t0 = time.time()
        job = system.submit([], os.path.join(scripts, "p1.sh"))
        state = None
        while True:
            state = system.job_state(job)
            if state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
                break
            time.sleep(a.p1_poll)
        t1 = time.time()
        if state not in ("COMPLETED", "GONE"):
            raise RuntimeError(f"P1 job {job} ended {state}")
        done.append(t1 - t0)
        mark = os.path.join(marks, f"p1.{job}")
        for _ in range(50):
            if os.path.exists(mark):
                break
            time.sleep(0.02)
        with open(mark) as f:
            running.append(float(f.read().strip()) - t0)
        if isinstance(system, Berth):
            j = system.job(job)
            sub = parse_time(j["submit_time"])
            srv_running.append(parse_time(j["start_time"]) - sub)
            srv_done.append(parse_time(j["end_time"]) - sub)
        log(f"    sample {i + 1}: done {done[-1] * 1000:.0f} ms, first instruction "
            f"{running[-1] * 1000:.0f} ms" + (f", record start-submit {srv_running[-1] * 1000:.1f}"
                                                 f" ms, end-submit {srv_done[-1] * 1000:.1f} ms"
                                                 if srv_running else ""))
    out = {"p1_done": statistics.median(done), "p1_running": statistics.median(running)}
    if srv_running:
        out["p1_record_running"] = statistics.median(srv_running)
        out["p1_record_done"] = statistics.median(srv_done)
    return out, {}


def p_throughput(system, a, ctx, prefix, n, held):
    scripts = ctx["scripts"]
    script = os.path.join(scripts, "true.sh")
    pg = ctx.get("pg") if isinstance(system, Berth) else None
    details = {}
    ids = []
    system.mark_ended()
    if held:
        t = time.time()
        ids = submit_many(system, ["-H"], script, n, a.submit_threads)
        log(f"    {n} held jobs submitted in {time.time() - t:.1f} s; settling {a.settle} s")
        time.sleep(a.settle)
    if pg:
        pg.reset_statements()
        x0 = pg.xacts()
    win = CpuWindow(system)
    win.start()
    t0 = time.time()
    if held:
        system.release(ids)
    else:
        for _ in range(n):
            system.submit([], script)
    t_sub = time.time()
    t1 = system.wait_ended(n, a.poll, a.timeout)
    if t1 is None:
        raise RuntimeError(f"{prefix}: jobs not done within {a.timeout} s")
    win.stop()
    elapsed = t1 - t0
    out = {f"{prefix}_rate": n / elapsed, f"{prefix}_cpu": win.machine_ms / n}
    details["groups_ms_per_job"] = {k: v / n for k, v in win.groups_ms.items()}
    if pg:
        calls, top = pg.statements()
        x1 = pg.xacts()
        out[f"{prefix}_stmts"] = calls / n
        out[f"{prefix}_xacts"] = (x1 - x0) / n
        details["top_statements"] = [(c / n, m, q) for c, m, q in top]
    bad, seen = system.failed_visible()
    details["not_completed"] = bad
    log(f"    {n} jobs {'released' if held else 'submitted'} in {t_sub - t0:.1f} s, all ended "
        f"after {elapsed:.1f} s: {n / elapsed:.1f} done/s, machine CPU {win.machine_ms / n:.1f} "
        f"ms/job ({', '.join(f'{k} {v / n:.1f}' for k, v in win.groups_ms.items())}); "
        f"not COMPLETED: {bad}" + (f" of {seen} still listed" if seen is not None else ""))
    if bad:
        raise RuntimeError(f"{prefix}: {bad} jobs did not complete")
    return out, details


def p2(system, a, ctx):
    return p_throughput(system, a, ctx, "p2", a.p2_jobs, held=False)


def p3(system, a, ctx):
    return p_throughput(system, a, ctx, "p3", a.p3_jobs, held=True)


def p4(system, a, ctx):
    marks = ctx["marks"]
    clear_dir(marks)
    script = p4_script(ctx["work"], a.p4_seconds, marks)
    node = system.node(0)
    system.mark_ended()
    t = time.time()
    ids = submit_many(system, ["-H", "-w", node, "--gres=gpu:1"], script, a.p4_jobs,
                      a.submit_threads)
    log(f"    {a.p4_jobs} held one-GPU jobs on {node} submitted in {time.time() - t:.1f} s; "
        f"settling {a.settle} s")
    time.sleep(a.settle)
    t0 = time.time()
    system.release(ids)
    t1 = system.wait_ended(a.p4_jobs, a.poll, a.timeout)
    if t1 is None:
        raise RuntimeError(f"P4: jobs not done within {a.timeout} s")
    rows = []
    for name in os.listdir(marks):
        if name.endswith(".tmp"):
            continue
        with open(os.path.join(marks, name)) as f:
            s, e, host, gpu = f.read().split()
        rows.append((float(s), float(e), host, gpu))
    if len(rows) != a.p4_jobs:
        raise RuntimeError(f"P4: {len(rows)} of {a.p4_jobs} jobs left their times")
    by_gpu = {}
    for s, e, host, gpu in rows:
        by_gpu.setdefault((host, gpu), []).append((s, e))
    gaps = []
    for runs in by_gpu.values():
        runs.sort()
        gaps += [b[0] - a_[1] for a_, b in zip(runs, runs[1:])]
    makespan = max(r[1] for r in rows) - t0
    log(f"    released at 0; first start {min(r[0] for r in rows) - t0:.3f} s, last end "
        f"{makespan:.3f} s, all seen ended {t1 - t0:.3f} s; {len(by_gpu)} GPUs used; gaps "
        f"median {statistics.median(gaps) * 1000:.0f} ms, p90 "
        f"{sorted(gaps)[int(0.9 * (len(gaps) - 1))] * 1000:.0f} ms, max {max(gaps) * 1000:.0f} ms")
    if len(by_gpu) != a.gpus:
        log(f"    note: {len(by_gpu)} GPU ids seen, expected {a.gpus}: {sorted(by_gpu)}")
    return {"p4_makespan": makespan, "p4_gap": statistics.median(gaps)}, {
        "gpus_seen": len(by_gpu), "gap_mean": statistics.mean(gaps)}


WRK_LUA = r"""
local f = io.open(os.getenv("VS_BODY_FILE"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
for k, v in string.gmatch(os.getenv("VS_HEADERS"), "([^\n]+): ([^\n]+)") do
  wrk.headers[k] = v
end
function done(summary, latency, requests)
  io.write(string.format(
    'VSJSON {"requests": %d, "duration_us": %d, "status_errors": %d, "socket_errors": %d, ' ..
    '"p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


def p5(system, a, ctx, prefix="p5"):
    if not shutil.which("wrk"):
        raise RuntimeError("P5 needs wrk (apt-get install wrk)")
    work = ctx["work"]
    url, body, headers = system.rest_request()
    lua = os.path.join(work, "p5.lua")
    with open(lua, "w") as f:
        f.write(WRK_LUA)
    body_file = os.path.join(work, f"p5-{system.key}.json")
    with open(body_file, "w") as f:
        f.write(body)
    env = dict(os.environ, VS_BODY_FILE=body_file,
               VS_HEADERS="\n".join(f"{k}: {v}" for k, v in headers.items()))
    win = CpuWindow(system)
    win.start()
    p = run(["wrk", "-t", str(a.p5_threads), "-c", str(a.p5_connections), "-d",
             f"{a.p5_seconds}s", "--timeout", "10s", "-s", lua, url], env=env,
            timeout=a.p5_seconds + 120)
    win.stop()
    m = re.search(r"^VSJSON (.*)$", p.stdout, re.M)
    if not m:
        raise RuntimeError(f"wrk said: {p.stdout[-1000:]} {p.stderr[-500:]}")
    r = json.loads(m.group(1))
    secs = r["duration_us"] / 1e6
    ok = r["requests"] - r["status_errors"]
    out = {f"{prefix}_rate": ok / secs, f"{prefix}_p50": r["p50_us"] / 1000,
           f"{prefix}_p99": r["p99_us"] / 1000}
    log(f"    {r['requests']} requests in {secs:.1f} s: {ok / secs:.0f} accepted/s, "
        f"{r['status_errors']} not 2xx ({100.0 * r['status_errors'] / max(r['requests'], 1):.0f}%), "
        f"{r['socket_errors']} socket errors, p50 {r['p50_us'] / 1000:.1f} ms, p99 "
        f"{r['p99_us'] / 1000:.1f} ms; machine CPU {win.machine_ms / max(ok, 1):.2f} ms per "
        f"accepted submission ({', '.join(f'{k} {v / 1000:.1f} s' for k, v in win.groups_ms.items())})")
    return out, {"refused_share": r["status_errors"] / max(r["requests"], 1),
                 "socket_errors": r["socket_errors"],
                 "groups_s": {k: v / 1000 for k, v in win.groups_ms.items()}}


def p7(system, a, ctx):
    scripts = ctx["scripts"]
    nodes = a.slurm_nodes if isinstance(system, Slurm) else a.berth_workers
    # Every GPU busy (one whole-node job per node), so that the pending jobs wait on
    # Resources/Priority in the scheduler's queue, not on a hold.
    for i in range(nodes):
        system.submit(["-w", system.node(i), f"--gres=gpu:{a.gpus}"],
                      os.path.join(scripts, "sleep.sh"))
    t = time.time()
    submit_many(system, ["--gres=gpu:1"], os.path.join(scripts, "true.sh"), a.p7_pending,
                a.submit_threads)
    log(f"    {nodes} node-filling jobs and {a.p7_pending} pending one-GPU jobs submitted in "
        f"{time.time() - t:.1f} s; settling {a.p7_settle} s")
    time.sleep(a.p7_settle)
    mem = system.memory()
    log(f"    {mem['parts']}")
    return {"p7_control_pss": mem["control_pss"], "p7_control_rss": mem["control_rss"]}, {
        "parts": mem["parts"]}


WORKLOADS = {"P1": p1, "P2": p2, "P3": p3, "P4": p4, "P5": p5, "P7": p7}

# metric -> (workload, label, unit, format, higher is better)
METRICS = [
    ("p1_done", "P1 submit → done, one trivial job, idle cluster (client: CLI submit, poll)",
     "s", "{:.3f}", False),
    ("p1_running", "P1 submit → the job's first instruction (client clock)", "s", "{:.3f}", False),
    ("p1_record_running", "P1 submit → RUNNING from the job record (Slurm: 1 s resolution, n/a)",
     "s", "{:.3f}", False),
    ("p1_record_done", "P1 submit → end from the job record (Slurm: n/a)", "s", "{:.3f}", False),
    ("p2_rate", "P2 {p2} trivial jobs submitted by the CLI, done/s", "/s", "{:.1f}", True),
    ("p2_cpu", "P2 machine CPU per job", "ms", "{:.1f}", False),
    ("p2_stmts", "P2 PostgreSQL statements per job", "", "{:.1f}", False),
    ("p2_xacts", "P2 PostgreSQL transactions per job", "", "{:.1f}", False),
    ("p3_rate", "P3 {p3} held jobs released, done/s", "/s", "{:.1f}", True),
    ("p3_cpu", "P3 machine CPU per job", "ms", "{:.1f}", False),
    ("p3_stmts", "P3 PostgreSQL statements per job", "", "{:.1f}", False),
    ("p3_xacts", "P3 PostgreSQL transactions per job", "", "{:.1f}", False),
    ("p4_makespan", "P4 {p4} x {p4s} s one-GPU jobs on {gpus} GPUs, release → last end (ideal {p4ideal} s)",
     "s", "{:.2f}", False),
    ("p4_gap", "P4 GPU idle gap between back-to-back jobs (median)", "s", "{:.3f}", False),
    ("p5_rate", "P5 REST submissions/s, {p5c} connections, one token (Berth: limits off)", "/s",
     "{:.0f}", True),
    ("p5_p50", "P5 latency p50", "ms", "{:.1f}", False),
    ("p5_p99", "P5 latency p99", "ms", "{:.1f}", False),
    ("p5d_rate", "P5 Berth with its default rate limits, accepted/s", "/s", "{:.0f}", True),
    ("p5d_p99", "P5 Berth with its default rate limits, p99", "ms", "{:.1f}", False),
    ("p7_control_pss", "P7 memory PSS, {p7} pending (slurmctld; berth dev + PostgreSQL)", "MiB",
     "{:.0f}", False),
    ("p7_control_rss", "P7 memory RSS, same processes", "MiB", "{:.0f}", False),
]


# ---------------------------------------------------------------------------------------
# Driver


def measure(system, workload, a, ctx, limits_off=True):
    rest = workload == "P5"
    system.start(rest=rest, limits_off=limits_off)
    try:
        time.sleep(a.settle)
        load = loadavg1()
        if workload == "P5" and isinstance(system, Berth) and not limits_off:
            out, details = p5(system, a, ctx, prefix="p5d")
        else:
            out, details = WORKLOADS[workload](system, a, ctx)
        return out, details, load
    finally:
        system.stop()


def fmt_cell(values, fmt, unit):
    if not values:
        return "—"
    med = statistics.median(values)
    s = fmt.format(med)
    if len(values) > 1:
        s += f" ({fmt.format(min(values))}–{fmt.format(max(values))})"
    return s + (f" {unit}" if unit and unit != "/s" else "")


def table(results, a):
    sizes = dict(p2=f"{a.p2_jobs:,}", p3=f"{a.p3_jobs:,}", p4=a.p4_jobs, p4s=a.p4_seconds,
                 gpus=a.gpus, p4ideal=f"{a.p4_jobs * a.p4_seconds / a.gpus:g}",
                 p5c=a.p5_connections, p7=f"{a.p7_pending:,}")
    lines = ["| workload | Slurm | Berth | ratio (Berth's advantage) | load 1-min Slurm / Berth |",
             "|---|---|---|---|---|"]
    for key, label, unit, fmt, higher in METRICS:
        s = results["metrics"].get(key, {}).get("slurm", [])
        b = results["metrics"].get(key, {}).get("berth", [])
        if not s and not b:
            continue
        wl = key[:2].upper()
        ratio = "—"
        if s and b and statistics.median(s) > 0 and statistics.median(b) > 0:
            r = (statistics.median(b) / statistics.median(s) if higher
                 else statistics.median(s) / statistics.median(b))
            ratio = f"{r:.2f}x" + (" (slower)" if r < 1 else "")
        loads = results["loads"].get(wl, {})
        load = " / ".join(f"{statistics.median(loads[k]):.2f}" if loads.get(k) else "—"
                          for k in ("slurm", "berth"))
        lines.append(f"| {label.format(**sizes)} | {fmt_cell(s, fmt, unit)} | "
                     f"{fmt_cell(b, fmt, unit)} | {ratio} | {load} |")
    return "\n".join(lines)


def breakdown(results):
    lines = []
    for wl in ("p2", "p3"):
        for sk in ("slurm", "berth"):
            runs = results["details"].get(wl.upper(), {}).get(sk, [])
            groups = [r["groups_ms_per_job"] for r in runs if "groups_ms_per_job" in r]
            if not groups:
                continue
            keys = list(groups[0].keys())
            parts = ", ".join(f"{k} {statistics.median(g[k] for g in groups):.1f}" for k in keys)
            lines.append(f"* {wl.upper()} {sk}: ms of CPU per job (median of runs): {parts}")
            tops = [r["top_statements"] for r in runs if r.get("top_statements")]
            if tops:
                lines.append(f"  {wl.upper()} PostgreSQL statements per job by calls (last run):")
                for per_job, mean, q in tops[-1]:
                    lines.append(f"    {per_job:6.2f}/job  {mean:8.3f} ms  {q}")
    for sk in ("slurm", "berth"):
        runs = results["details"].get("P7", {}).get(sk, [])
        for r in runs[-1:]:
            lines.append(f"* P7 {sk} (last run): {r['parts']}")
    return "\n".join(lines)


def cmd_run(a):
    if os.geteuid() != 0:
        sys.exit("vs_slurm.py run: run as root (it starts slurmd and PostgreSQL as postgres)")
    needed = ["sbatch", "slurmctld", "slurmd", "munge", "munged", "sdiag", "psql"]
    if "P5" in a.only:
        needed += ["wrk", "slurmrestd"]
    missing = [t for t in needed if not shutil.which(t) and not os.path.exists(f"/usr/sbin/{t}")]
    if missing:
        sys.exit(f"vs_slurm.py: missing {', '.join(missing)}: run `vs_slurm.py install` first")
    if "berth" in a.systems and not os.path.exists(a.berth_bin):
        sys.exit(f"vs_slurm.py: no Berth binary at {a.berth_bin} (build with `cargo build "
                 f"--release -p berth`, or set BERTH_BIN / --berth-bin)")
    work = a.work or f"/tmp/vs-slurm.{time.strftime('%Y%m%d-%H%M%S')}"
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o755)
    scripts, marks = write_scripts(work)
    systems = {}
    if "slurm" in a.systems:
        systems["slurm"] = Slurm(a, work)
    if "berth" in a.systems:
        systems["berth"] = Berth(a, work)
    ctx = {"work": work, "scripts": scripts, "marks": marks,
           "pg": systems["berth"].pg if "berth" in systems else None}
    berth_version = (run([a.berth_bin, "--version"], check=False).stdout.strip()
                     if "berth" in a.systems else "Berth not run")
    slurm_version = run(["sinfo", "-V"], check=False,
                        env=dict(os.environ, SLURM_CONF=systems["slurm"].conf) if "slurm" in systems
                        else None).stdout.strip()
    head = (f"vs-slurm on {socket.gethostname()} ({os.cpu_count()} CPUs), "
            f"{time.strftime('%Y-%m-%d %H:%M %Z')}; {slurm_version}, {a.slurm_nodes} slurmd x "
            f"{a.gpus} fake GPUs, SchedulerParameters={a.slurm_sched_params}, "
            f"MinJobAge={a.slurm_min_job_age}; {berth_version} ({a.berth_bin}), berth dev "
            f"--workers {a.berth_workers} --gpus {a.berth_gpus}, rate limits off unless noted; "
            f"{a.runs} run(s) each, alternating; scratch {work}")
    log(head)
    results = {"head": head, "args": vars(a), "metrics": {}, "loads": {}, "details": {},
               "errors": []}

    def record(wl, sk, out, details, load):
        for k, v in out.items():
            results["metrics"].setdefault(k, {}).setdefault(sk, []).append(v)
        results["loads"].setdefault(wl, {}).setdefault(sk, []).append(load)
        results["details"].setdefault(wl, {}).setdefault(sk, []).append(details)

    try:
        for wl in a.only:
            for r in range(a.runs):
                order = ["slurm", "berth"] if r % 2 == 0 else ["berth", "slurm"]
                variants = []
                for sk in order:
                    if sk in systems:
                        variants.append((sk, True))
                        if wl == "P5" and sk == "berth" and a.p5_default_limits:
                            variants.append((sk, False))
                for sk, limits_off in variants:
                    system = systems[sk]
                    label = system.name + ("" if limits_off or wl != "P5" else " (default limits)")
                    log(f"{wl} run {r + 1}/{a.runs}: {label}")
                    try:
                        out, details, load = measure(system, wl, a, ctx, limits_off)
                    except Exception as e:  # one failed run is reported, the rest go on
                        log(f"    FAILED: {e}")
                        results["errors"].append(f"{wl} run {r + 1} {label}: {e}")
                        continue
                    log(f"    load {load:.2f}; " + ", ".join(f"{k} {v:.4g}" for k, v in out.items()))
                    record(wl, sk, out, details, load)
                    with open(os.path.join(work, "results.json"), "w") as f:
                        json.dump(results, f, indent=1)
    finally:
        for s in systems.values():
            try:
                s.stop()
            except Exception as e:
                log(f"stopping {s.name}: {e}")
        if "berth" in systems:
            systems["berth"].pg.stop()
        if "slurm" in systems:
            systems["slurm"].stop_munged()
    text = head + "\n\n" + table(results, a) + "\n\n" + breakdown(results) + "\n"
    if results["errors"]:
        text += "\nFailed runs:\n" + "\n".join(f"* {e}" for e in results["errors"]) + "\n"
    with open(os.path.join(work, "table.md"), "w") as f:
        f.write(text)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(text)
    return 1 if results["errors"] else 0


def cmd_install(_a):
    if os.geteuid() != 0:
        sys.exit("vs_slurm.py install: run as root")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], env=env, check=True)
    subprocess.run(["apt-get", "install", "-y", "-q", "slurm-wlm", "slurmrestd", "munge", "wrk",
                    "postgresql"], env=env, check=True)
    return 0


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "reaper" and sys.argv[2] == "--":
        reaper_main(sys.argv[3:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install", help="apt-get install Slurm, munge, slurmrestd, wrk, PostgreSQL")
    r = sub.add_parser("run", help="run the workloads",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    default_bin = os.environ.get("BERTH_BIN") or os.path.join(
        os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target"), "release", "berth")
    r.add_argument("--berth-bin", default=default_bin, help="the berth binary (env BERTH_BIN)")
    r.add_argument("--runs", type=int, default=3, help="runs of each workload on each system")
    r.add_argument("--only", default="P1,P2,P3,P4,P5,P7", help="workloads, comma-separated")
    r.add_argument("--systems", default="slurm,berth", help="slurm, berth or both")
    r.add_argument("--work", help="scratch directory (default /tmp/vs-slurm.<date>)")
    r.add_argument("--settle", type=float, default=5.0,
                   help="seconds of idle after a cluster starts (and after held submissions)")
    r.add_argument("--poll", type=float, default=0.2,
                   help="seconds between checks that a workload's jobs ended (P2-P4)")
    r.add_argument("--timeout", type=float, default=1800, help="longest wait for a workload")
    r.add_argument("--submit-threads", type=int, default=4,
                   help="concurrent CLI submissions when preparing held or pending jobs")
    r.add_argument("--slurm-nodes", type=int, default=16, help="slurmd daemons")
    r.add_argument("--gpus", type=int, default=8, help="GPUs per Slurm node and per Berth worker")
    r.add_argument("--cpus", type=int, default=96,
                   help="CPUs each node declares (Berth's default for 8 simulated GPUs)")
    r.add_argument("--berth-workers", type=int, default=4)
    r.add_argument("--berth-gpus", default=None,
                   help="berth dev --gpus (default: the value of --gpus)")
    r.add_argument("--slurm-port", type=int, default=16817,
                   help="slurmctld's port; the slurmd use the next ones")
    r.add_argument("--pg-port", type=int, default=55432, help="names Berth's PostgreSQL socket")
    r.add_argument("--slurm-sched-params", default=SLURM_SCHED_PARAMS)
    r.add_argument("--slurm-min-job-age", type=int, default=5,
                   help="MinJobAge (SchedMD's advice: a few seconds)")
    r.add_argument("--max-job-count", type=int, default=100000,
                   help="Slurm's MaxJobCount (Berth's default limit is 100,000)")
    r.add_argument("--slurm-conf-extra", action="append", default=[],
                   help="a line added to slurm.conf (repeatable)")
    r.add_argument("--p1-samples", type=int, default=10)
    r.add_argument("--p1-gap", type=float, default=1.0, help="idle seconds before each P1 sample: a random time between this and twice this")
    r.add_argument("--p1-poll", type=float, default=0.01,
                   help="seconds between P1's state checks (Slurm: squeue; Berth: GET)")
    r.add_argument("--p2-jobs", type=int, default=2000)
    r.add_argument("--p3-jobs", type=int, default=2000)
    r.add_argument("--p4-jobs", type=int, default=200)
    r.add_argument("--p4-seconds", type=float, default=0.2)
    r.add_argument("--p5-seconds", type=int, default=10)
    r.add_argument("--p5-connections", type=int, default=32)
    r.add_argument("--p5-threads", type=int, default=2, help="wrk threads")
    r.add_argument("--no-p5-default-limits", dest="p5_default_limits", action="store_false",
                   help="skip P5 against Berth with its default rate limits")
    r.add_argument("--p7-pending", type=int, default=10000)
    r.add_argument("--p7-settle", type=float, default=15.0,
                   help="seconds after the last submission before memory is read")
    a = ap.parse_args()
    if a.cmd == "install":
        return cmd_install(a)
    a.only = [w.strip().upper() for w in a.only.split(",") if w.strip()]
    unknown = [w for w in a.only if w not in WORKLOADS]
    if unknown:
        ap.error(f"--only: no workload {', '.join(unknown)} (known: {', '.join(WORKLOADS)})")
    a.systems = [s.strip().lower() for s in a.systems.split(",")]
    if any(s not in ("slurm", "berth") for s in a.systems):
        ap.error("--systems: slurm, berth or both")
    if a.berth_gpus is None:
        a.berth_gpus = str(a.gpus)
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
