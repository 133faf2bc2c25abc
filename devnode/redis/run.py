"""Start, stop and inspect the local Redis server.

Its own instance (not the system service), on loopback, in ``<cache>/redis-<port>/``::

    data/        working directory (nothing is persisted: no RDB snapshots, no AOF)
    redis.log    the server's output
    redis.pid    pid of the running server
    .lock        flock held around every check-and-start and stop

Like the Cassandra node it is started once, reused while it answers PING, and keeps running
after the Python process that started it exits.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from devnode.common import (
    HOST,
    DevNodeError,
    Progress,
    cmdline,
    kill,
    launch_detached,
    live_pid,
    locked,
    pid_alive,
    print_progress,
    tail,
    terminate,
    wait_exit,
    wait_port_closed,
    write_pid,
)
from devnode.redis.install import ensure_redis_server
from gateway.settings.tooling import ToolingSettings


@dataclass(frozen=True)
class RedisStatus:
    running: bool
    pid: int | None
    ping: bool
    port: int
    home: Path


def _command(port: int, *words: str, timeout: float = 1.0) -> bytes | None:
    """Send one command in RESP and return the first line of the reply (None if none came)."""
    request = f"*{len(words)}\r\n".encode() + b"".join(
        f"${len(word.encode())}\r\n{word}\r\n".encode() for word in words
    )
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as conn:
            conn.sendall(request)
            reply = conn.recv(512)
    except OSError:
        return None
    return reply.split(b"\r\n", 1)[0] if reply else None


def ping(port: int) -> bool:
    return _command(port, "PING") == b"+PONG"


#: Milliseconds before the other masters count an unanswering master as failed.
CLUSTER_NODE_TIMEOUT_MS = 3000


class RedisServer:
    """The local Redis server for ``tooling.redis_port``, kept in the per-user cache; or, given
    ``port``, ``home`` and ``cluster_port``, one master of a local Redis Cluster
    (:class:`devnode.redis.cluster.LocalRedisCluster`)."""

    def __init__(
        self,
        tooling: ToolingSettings,
        progress: Progress = print_progress,
        *,
        port: int | None = None,
        home: Path | None = None,
        cluster_port: int | None = None,
    ) -> None:
        self._progress = progress
        self.port = tooling.redis_port if port is None else port
        self.cluster_port = cluster_port
        self.home = home or tooling.cassandra_home.expanduser().resolve() / f"redis-{self.port}"
        self._data = self.home / "data"
        self._log = self.home / "redis.log"
        self._pid_file = self.home / "redis.pid"
        self._lock_file = self.home / ".lock"

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def start(self, timeout: float = 30.0) -> None:
        """Start the server (installing redis-server on first use if allowed) or reuse the running one."""
        try:
            with locked(self.home, self._lock_file, self._progress):
                pid = self._live_pid(clean=True)
                if pid is not None:
                    if ping(self.port):
                        self._progress(f"Redis already running (pid {pid}, on {HOST}:{self.port})")
                        return
                    self._progress(f"Redis (pid {pid}) is still starting")
                    self._wait_for_ping(pid, timeout, log_offset=0)
                    return
                if not wait_port_closed(self.port, 5.0):
                    raise DevNodeError(
                        f"Port {HOST}:{self.port} is already in use by a process other than the Redis "
                        f"server of {self.home}: stop it, or choose another port with GATEWAY_REDIS_PORT."
                    )
                server = ensure_redis_server(self._progress)
                self._data.mkdir(parents=True, exist_ok=True)
                log_offset = self._log.stat().st_size if self._log.exists() else 0
                self._progress(f"starting Redis ({server}) on {HOST}:{self.port}, log {self._log}")
                args = [
                    server,
                    "--bind", HOST,
                    "--port", str(self.port),
                    "--protected-mode", "yes",
                    "--daemonize", "no",
                    "--save", "",
                    "--appendonly", "no",
                    "--dir", str(self._data),
                    "--logfile", "",
                    *self._cluster_args(),
                ]  # fmt: skip
                pid = launch_detached("redis-server", args, self._log, self.home)
                write_pid(self._pid_file, pid)
                self._wait_for_ping(pid, timeout, log_offset)
        except OSError as exc:
            raise DevNodeError(f"Local Redis in {self.home}: {exc}") from exc

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the server: SHUTDOWN NOSAVE, then SIGTERM (and SIGKILL) by pid if it stays up."""
        try:
            with locked(self.home, self._lock_file, self._progress):
                pid = self._live_pid(clean=True)
                if pid is None:
                    self._progress(f"Redis is not running (home {self.home})")
                    return
                self._progress(f"stopping Redis (pid {pid})")
                started = time.monotonic()
                _command(self.port, "SHUTDOWN", "NOSAVE")
                if not wait_exit(pid, timeout):
                    terminate("Redis", pid, timeout, self._progress)
                wait_port_closed(self.port, 10.0)
                self._pid_file.unlink(missing_ok=True)
                self._progress(f"Redis stopped after {time.monotonic() - started:.0f}s")
        except OSError as exc:
            raise DevNodeError(f"Local Redis in {self.home}: {exc}") from exc

    def kill(self) -> None:
        """Kill the server with SIGKILL (a crash: every connection cut, every key gone, as
        nothing is persisted) and wait until its port is closed; ``start`` starts a fresh one."""
        try:
            with locked(self.home, self._lock_file, self._progress):
                pid = self._live_pid(clean=True)
                if pid is None:
                    self._progress(f"Redis is not running (home {self.home})")
                    return
                self._progress(f"killing Redis (pid {pid}) with SIGKILL")
                kill("Redis", pid)
                wait_port_closed(self.port, 10.0)
                self._pid_file.unlink(missing_ok=True)
        except OSError as exc:
            raise DevNodeError(f"Local Redis in {self.home}: {exc}") from exc

    def _cluster_args(self) -> list[str]:
        """A cluster master: its slots map in ``data/nodes.conf`` (kept across restarts, so a
        restarted master takes its slots back), its bus on ``cluster_port``. The masters that
        stay serve their slots while one is down (``cluster-require-full-coverage no``)."""
        if self.cluster_port is None:
            return []
        return [
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-port", str(self.cluster_port),
            "--cluster-node-timeout", str(CLUSTER_NODE_TIMEOUT_MS),
            "--cluster-require-full-coverage", "no",
            "--cluster-allow-pubsubshard-when-down", "yes",
        ]  # fmt: skip

    def status(self) -> RedisStatus:
        """A snapshot without side effects; ``ping`` is true whoever answers on the port."""
        pid = self._live_pid(clean=False)
        return RedisStatus(
            running=pid is not None, pid=pid, ping=ping(self.port), port=self.port, home=self.home
        )

    def _live_pid(self, *, clean: bool) -> int | None:
        """The pid in the pid file if it is this port's live redis-server."""
        return live_pid(self._pid_file, self._is_our_server, clean=clean)

    def _is_our_server(self, pid: int) -> bool:
        """Guards against a recycled pid: it must be redis-server listening on this port.

        Redis rewrites its argv to "redis-server 127.0.0.1:<port>" once it runs; before that
        the argv still holds "--port <port>".
        """
        argv = cmdline(pid)
        if argv is None:
            return True
        words = " ".join(argv).split()
        if not words or Path(words[0]).name != "redis-server":
            return False
        port = str(self.port)
        return f"{HOST}:{port}" in words or any(
            word == "--port" and following == port for word, following in pairwise(words)
        )

    def _wait_for_ping(self, pid: int, timeout: float, log_offset: int) -> None:
        started = time.monotonic()
        while True:
            elapsed = time.monotonic() - started
            if ping(self.port):
                self._progress(f"Redis ready on {HOST}:{self.port} (pid {pid}, {elapsed:.1f}s)")
                return
            if not pid_alive(pid):
                self._pid_file.unlink(missing_ok=True)
                raise DevNodeError(f"Redis (pid {pid}) exited during start.{self._log_excerpt(log_offset)}")
            if elapsed >= timeout:
                excerpt = self._log_excerpt(log_offset)
                terminate("Redis", pid, 10.0, self._progress)
                self._pid_file.unlink(missing_ok=True)
                raise DevNodeError(
                    f"Redis did not answer PING on {HOST}:{self.port} within {timeout:.0f}s "
                    f"and was stopped.{excerpt}"
                )
            time.sleep(0.1)

    def _log_excerpt(self, log_offset: int) -> str:
        text = tail(self._log, log_offset)
        return f"\n--- last lines of {self._log} ---\n{text}" if text else f"\n(nothing in {self._log})"
