"""Start, stop and inspect the local Cassandra node.

One real single-node Cassandra lives in a per-user cache (``ToolingSettings.cassandra_home``)::

    <version>/lib/   the jars: the tarball's lib/, or cassandra-all and its runtime dependencies
    conf/            cassandra.yaml and logback.xml, rewritten on every start
    data/            data, commitlog, hints, saved_caches, cdc_raw
    logs/            system.log (Cassandra's log) and stdout.log (the JVM's own output)
    cassandra.pid    pid of the running node
    .lock            flock held around every check-and-start and stop

The node is started once and reused by later runs and test sessions; it keeps running after
the Python process that started it exits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from devnode.cassandra.configure import MAIN_CLASS, STORAGE_PORT, NodeConfig, Placement, check_heap
from devnode.cassandra.install import CASSANDRA_VERSION, Installer, find_java
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
    port_open,
    print_progress,
    tail,
    terminate,
    wait_port_closed,
    write_pid,
)
from gateway.settings.tooling import ToolingSettings

_REPORT_EVERY = 10.0


@dataclass(frozen=True)
class NodeStatus:
    running: bool
    pid: int | None
    cql_ready: bool
    home: Path
    version: str


class CassandraNode:
    """The local Cassandra node kept in ``tooling.cassandra_home``, serving CQL on ``cql_port``.

    The node runs ``CassandraDaemon`` directly with the JVM options Cassandra's
    ``conf/jvm17-server.options`` would give, whether its jars came from the binary tarball or
    were assembled from ``cassandra-all`` with Maven. The tarball's ``bin/cassandra`` refuses to
    run as root unless given ``-R``; starting the daemon class directly has no such check, so
    the node starts the same way as root (e.g. in containers and CI) as for a normal user.

    A member of the local ring (``devnode.cassandra.ring``) is the same thing with its own
    ``home`` under the cache directory, its own ``placement`` and heap, and a ``name``.
    """

    def __init__(
        self,
        tooling: ToolingSettings,
        cql_port: int,
        progress: Progress = print_progress,
        *,
        home: Path | None = None,
        placement: Placement | None = None,
        heap: tuple[str, str] | None = None,
        name: str = "Cassandra",
    ) -> None:
        self._progress = progress
        self.name = name
        root = tooling.cassandra_home.expanduser().resolve()
        self.home = home or root
        self.port = cql_port
        self.placement = placement or Placement()
        self.host = self.placement.host
        self._heap_variable, heap_size = heap or ("GATEWAY_CASSANDRA_HEAP", tooling.cassandra_heap)
        self._installer = Installer(root, progress)
        self._config = NodeConfig(self.home, self._installer.lib, self.port, heap_size, self.placement)
        self._system_log = self._config.logs / "system.log"
        self._stdout_log = self._config.logs / "stdout.log"
        self._pid_file = self.home / "cassandra.pid"
        self._lock_file = self.home / ".lock"

    def start(self, timeout: float = 180.0, *, restart_outdated: bool = False) -> None:
        """Start the node (downloading it on first use) or reuse the running one.

        Returns once the CQL port accepts connections. ``timeout`` bounds the wait for the
        CQL port, not the one-off download. A running node whose ``cassandra.yaml`` is not the
        one this version of the project writes is reused with a word saying so, or, with
        ``restart_outdated`` (ring members, whose tests rely on their configuration), stopped
        and started again with the current one.
        """
        try:
            with locked(self.home, self._lock_file, self._progress):
                pid = self._live_pid(clean=True)
                if pid is not None and not self._config.current():
                    if restart_outdated:
                        self._progress(f"{self.name} (pid {pid}) runs an older cassandra.yaml; restarting it")
                        self._stop_locked(pid, 60.0)
                        pid = None
                    else:
                        self._progress(
                            f"{self.name} (pid {pid}) runs an older cassandra.yaml; "
                            "`gateway cassandra stop` and start it again to apply the current one"
                        )
                if pid is not None:
                    if port_open(self.port, host=self.host):
                        self._progress(
                            f"{self.name} {CASSANDRA_VERSION} already running (pid {pid}, "
                            f"CQL on {self.host}:{self.port})"
                        )
                        return
                    self._progress(f"{self.name} (pid {pid}) is still starting")
                    self._wait_for_cql(pid, timeout, log_offset=0)
                    return
                check_heap(self._config.heap, self._heap_variable)
                self._check_ports_free()
                java = find_java(self._progress)
                self._installer.ensure_installed()
                self._progress(f"configuring the node in {self.home}")
                self._config.write()
                log_offset = self._system_log.stat().st_size if self._system_log.exists() else 0
                pid = self._launch(java)
                self._wait_for_cql(pid, timeout, log_offset)
        except OSError as exc:
            raise DevNodeError(f"{self.name} in {self.home}: {exc}") from exc

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the node: SIGTERM (Cassandra drains and flushes), then SIGKILL after ``timeout``."""
        try:
            with locked(self.home, self._lock_file, self._progress):
                pid = self._live_pid(clean=True)
                if pid is None:
                    self._progress(f"{self.name} is not running (home {self.home})")
                    return
                self._stop_locked(pid, timeout)
        except OSError as exc:
            raise DevNodeError(f"{self.name} in {self.home}: {exc}") from exc

    def _stop_locked(self, pid: int, timeout: float) -> None:
        """Stop the running node ``pid`` (the home's lock held): SIGTERM, SIGKILL after ``timeout``."""
        self._progress(f"stopping {self.name} (pid {pid})")
        started = time.monotonic()
        self._terminate(pid, timeout)
        self._pid_file.unlink(missing_ok=True)
        self._progress(f"{self.name} stopped after {time.monotonic() - started:.0f}s")

    def kill(self) -> None:
        """Kill the node with SIGKILL (a crash: no drain, no flush, its peers not told) and wait
        until its ports are closed; ``start`` brings it back, replaying its commit log."""
        try:
            with locked(self.home, self._lock_file, self._progress):
                pid = self._live_pid(clean=True)
                if pid is None:
                    self._progress(f"{self.name} is not running (home {self.home})")
                    return
                self._progress(f"killing {self.name} (pid {pid}) with SIGKILL")
                kill(self.name, pid)
                for port in (self.port, STORAGE_PORT):
                    wait_port_closed(port, 10.0, host=self.host)
                self._pid_file.unlink(missing_ok=True)
        except OSError as exc:
            raise DevNodeError(f"{self.name} in {self.home}: {exc}") from exc

    def status(self) -> NodeStatus:
        """A snapshot without side effects; ``cql_ready`` is true whoever listens on the port."""
        pid = self._live_pid(clean=False)
        return NodeStatus(
            running=pid is not None,
            pid=pid,
            cql_ready=port_open(self.port, host=self.host),
            home=self.home,
            version=CASSANDRA_VERSION,
        )

    def _live_pid(self, *, clean: bool) -> int | None:
        """The pid in the pid file if it is this home's live Cassandra."""
        return live_pid(self._pid_file, self._is_our_node, clean=clean)

    def _is_our_node(self, pid: int) -> bool:
        """Guards against a recycled pid: it must be CassandraDaemon running this home's config."""
        argv = cmdline(pid)
        if argv is None:
            return True
        return MAIN_CLASS in argv and self._config.config_arg in argv

    def _terminate(self, pid: int, timeout: float) -> None:
        """Returns once the process and its ports are gone."""
        terminate(self.name, pid, timeout, self._progress)
        for port in (self.port, STORAGE_PORT):
            wait_port_closed(port, 10.0, host=self.host)
        wait_port_closed(self.placement.jmx_port, 10.0)

    def _check_ports_free(self) -> None:
        other = "another Cassandra node may be running; stop it"
        own_port = "stop it, or choose another port with CASSANDRA_PORT"
        ports = (
            (self.host, self.port, "CQL native transport", own_port),
            (self.host, STORAGE_PORT, "Cassandra storage (internode)", other),
            (HOST, self.placement.jmx_port, "Cassandra JMX", other),
        )
        for host, port, role, advice in ports:
            if not wait_port_closed(port, 5.0, host=host):
                raise DevNodeError(
                    f"Port {host}:{port} ({role}) is already in use by a process other than the "
                    f"Cassandra node of {self.home}: {advice}."
                )

    def _launch(self, java: str) -> int:
        args = self._config.jvm_args(java)
        self._progress(
            f"starting {self.name} {CASSANDRA_VERSION} (heap {self._config.heap}, "
            f"CQL on {self.host}:{self.port}, log {self._system_log})"
        )
        pid = launch_detached("the JVM", args, self._stdout_log, self.home)
        write_pid(self._pid_file, pid)
        return pid

    def _wait_for_cql(self, pid: int, timeout: float, log_offset: int) -> None:
        started = time.monotonic()
        next_report = _REPORT_EVERY
        while True:
            elapsed = time.monotonic() - started
            if port_open(self.port, host=self.host):
                self._progress(f"{self.name} ready on {self.host}:{self.port} (pid {pid}, {elapsed:.0f}s)")
                return
            if not pid_alive(pid):
                self._pid_file.unlink(missing_ok=True)
                raise DevNodeError(
                    f"{self.name} (pid {pid}) exited during start after {elapsed:.0f}s."
                    + self._logs_excerpt(log_offset)
                )
            if elapsed >= timeout:
                self._progress(f"CQL port not open after {timeout:.0f}s; stopping {self.name} (pid {pid})")
                excerpt = self._logs_excerpt(log_offset)
                self._terminate(pid, 30.0)
                self._pid_file.unlink(missing_ok=True)
                raise DevNodeError(
                    f"{self.name} did not open its CQL port {self.host}:{self.port} "
                    f"within {timeout:.0f}s "
                    f"and was stopped.{excerpt}"
                )
            if elapsed >= next_report:
                self._progress(f"waiting for the CQL port {self.port}... {elapsed:.0f}s")
                next_report += _REPORT_EVERY
            time.sleep(0.5)

    def _logs_excerpt(self, log_offset: int) -> str:
        parts = []
        system = tail(self._system_log, log_offset)
        if system:
            parts.append(f"\n--- last lines of {self._system_log} ---\n{system}")
        stdout = tail(self._stdout_log)
        if stdout:
            parts.append(f"\n--- last lines of {self._stdout_log} ---\n{stdout}")
        return "".join(parts) or f"\n(nothing in {self._system_log} or {self._stdout_log})"
