"""A local Redis Cluster of three masters on loopback, for the sharded broker.

Each master is a :class:`~devnode.redis.run.RedisServer` of its own (Debian's
``redis-server`` with ``--cluster-enabled yes``), in ``<cache>/redis-cluster-<port>/``::

    node-<port>/data/nodes.conf   the master's view of the cluster (kept: a restarted master
                                  rejoins and serves its slots again)
    node-<port>/redis.log         its output
    .lock                         flock held around every check-and-start and stop

The first start joins the three with ``redis-cli --cluster create ... --cluster-replicas 0``
(16384 slots split in three); later starts find the cluster formed and wait until every
master reports ``cluster_state:ok``. No replicas: a stopped master's slots go unserved
until it is back, which is what the broker's tests of a lost shard need. The masters run
with ``cluster-require-full-coverage no``, so the others keep serving their own slots.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import redis

from devnode.common import HOST, DevNodeError, Progress, locked, print_progress
from devnode.redis.install import ensure_redis_server
from devnode.redis.run import RedisServer, RedisStatus
from gateway.settings.tooling import ToolingSettings

#: Offset of a master's cluster bus port from its client port, as Redis's default.
BUS_OFFSET = 10000
MASTERS = 3


@dataclass(frozen=True)
class ClusterStatus:
    nodes: list[RedisStatus]
    #: ``cluster_state`` of each running master (``ok`` or ``fail``), None when it does not answer.
    states: list[str | None]

    @property
    def ok(self) -> bool:
        return all(state == "ok" for state in self.states)


def cluster_info(port: int, timeout: float = 1.0) -> dict[str, str] | None:
    """``CLUSTER INFO`` of the master on ``port``, None when it does not answer."""
    client = redis.Redis(host=HOST, port=port, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        raw = client.execute_command("CLUSTER INFO")  # type: ignore[no-untyped-call]  # redis 8.1: unannotated
    except redis.RedisError:
        return None
    finally:
        client.close()
    if isinstance(raw, dict):  # redis-py parses the reply
        return {str(key): str(value) for key, value in raw.items()}
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


class LocalRedisCluster:
    """Three masters on ``ports`` (client port, bus port), default the three from
    ``tooling.redis_cluster_port`` on, each bus port 10000 above."""

    def __init__(
        self,
        tooling: ToolingSettings,
        progress: Progress = print_progress,
        *,
        ports: Sequence[tuple[int, int]] | None = None,
        home: Path | None = None,
    ) -> None:
        self._progress = progress
        if ports is None:
            base = tooling.redis_cluster_port
            ports = [(base + n, base + n + BUS_OFFSET) for n in range(MASTERS)]
        self.ports = [port for port, _ in ports]
        first = self.ports[0]
        self.home = home or tooling.cassandra_home.expanduser().resolve() / f"redis-cluster-{first}"
        self._lock_file = self.home / ".lock"
        self.masters = [
            RedisServer(tooling, progress, port=port, home=self.home / f"node-{port}", cluster_port=bus)
            for port, bus in ports
        ]

    @property
    def url(self) -> str:
        """``GATEWAY_BROKER_URL`` of this cluster."""
        return "redis+cluster://" + ",".join(f"{HOST}:{port}" for port in self.ports)

    def master(self, number: int) -> RedisServer:
        """Master ``number``, from 1."""
        if not 1 <= number <= len(self.masters):
            raise DevNodeError(f"--node must be 1 to {len(self.masters)}, got {number}")
        return self.masters[number - 1]

    def start(self, timeout: float = 60.0) -> None:
        """Start every master (reusing those running), form the cluster on first use, and
        wait until every master says ``cluster_state:ok``."""
        with locked(self.home, self._lock_file, self._progress):
            for master in self.masters:
                master.start()
            infos = [cluster_info(port) for port in self.ports]
            fresh = [info is not None and info.get("cluster_slots_assigned") == "0" for info in infos]
            if all(fresh):
                self._create()
            elif any(fresh):
                raise DevNodeError(
                    f"The local Redis Cluster in {self.home} is half formed (some masters own no "
                    f"slots): stop it (`gateway redis stop --cluster`), remove {self.home} and start again."
                )
            self._wait_ok(timeout)

    def start_node(self, number: int, timeout: float = 60.0) -> None:
        """Start one master again; it rejoins with the slots of its ``nodes.conf``."""
        with locked(self.home, self._lock_file, self._progress):
            self.master(number).start()
            self._wait_ok(timeout)

    def stop(self, number: int | None = None) -> None:
        """Stop every master, or master ``number``."""
        with locked(self.home, self._lock_file, self._progress):
            for master in self.masters if number is None else [self.master(number)]:
                master.stop()

    def status(self) -> ClusterStatus:
        statuses = [master.status() for master in self.masters]
        states = []
        for status in statuses:
            info = cluster_info(status.port) if status.running else None
            states.append(None if info is None else info.get("cluster_state"))
        return ClusterStatus(statuses, states)

    def _create(self) -> None:
        cli = _redis_cli(ensure_redis_server(self._progress))
        nodes = [f"{HOST}:{port}" for port in self.ports]
        self._progress(f"forming a Redis Cluster of {len(nodes)} masters: {' '.join(nodes)}")
        args = [cli, "--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes"]
        done = subprocess.run(
            args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
        )
        if done.returncode != 0:
            output = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
            raise DevNodeError(f"redis-cli --cluster create failed (exit {done.returncode}):\n{output}")

    def _wait_ok(self, timeout: float) -> None:
        started = time.monotonic()
        while True:
            infos = [cluster_info(port) for port in self.ports]
            states = [None if info is None else info.get("cluster_state") for info in infos]
            if all(state == "ok" for state in states):
                elapsed = time.monotonic() - started
                self._progress(f"Redis Cluster ok on {self.url} ({elapsed:.1f}s)")
                return
            if time.monotonic() - started >= timeout:
                seen = dict(zip(self.ports, states, strict=True))
                raise DevNodeError(
                    f"The local Redis Cluster did not reach cluster_state:ok within {timeout:.0f}s "
                    f"(states {seen}); logs in {self.home}/node-*/redis.log"
                )
            time.sleep(0.1)


def _redis_cli(server: str) -> str:
    """``redis-cli`` beside ``redis-server`` (Debian's redis-tools, which redis-server needs), or on PATH."""
    beside = Path(server).with_name("redis-cli")
    if beside.is_file():
        return str(beside)
    found = shutil.which("redis-cli")
    if found is None:
        raise DevNodeError("redis-cli is needed to form the local Redis Cluster; install redis-tools.")
    return found
