"""``gateway serve --workers N``: N gateway processes on one port, and a parent that watches them.

Each worker is a fresh interpreter (``python -m gateway serve --worker``), so it
builds its own Cassandra driver session and event loop; nothing is inherited
across a fork. The workers listen with SO_REUSEPORT on the same address and the
kernel spreads new connections over them. Since two WebSockets of one user may
land on different workers, they share subscriptions through the broker
(``GATEWAY_BROKER_URL``); ``__main__`` makes sure there is one before calling
:func:`supervise`.

The parent serves nothing. SIGTERM or SIGINT is forwarded to every worker, each
drains (see ``gateway/server/drain.py``), and the parent exits when they all have: 0
when every worker exited 0. A worker that exits while nobody asked it to is a
failure the parent does not hide by restarting it: the other workers are stopped
the same graceful way and the parent exits 1 naming the worker, so the process
manager above (systemd, Kubernetes) restarts the whole service with its own
back-off and the crash is visible.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from types import FrameType

log = logging.getLogger(__name__)

#: Seconds between checks of the workers.
POLL_SECONDS = 0.2


def worker_count(value: str) -> int:
    """``--workers``: a positive number, or ``auto`` for one per core."""
    if value == "auto":
        return os.cpu_count() or 1
    try:
        count = int(value)
    except ValueError:
        raise ValueError(f"--workers must be a positive number or 'auto', got {value!r}") from None
    if count < 1:
        raise ValueError(f"--workers must be a positive number or 'auto', got {value!r}")
    return count


class Supervisor:
    def __init__(self, count: int, env: Mapping[str, str], *, seed: bool, grace_seconds: float) -> None:
        self.count = count
        self.env = dict(env)
        self.seed = seed
        #: How long a stopping worker may take before it is killed (its drain, plus start-up).
        self.grace_seconds = grace_seconds
        self.workers: list[subprocess.Popen[bytes]] = []
        self.stopping = False
        self.asked_to_stop = False

    def _command(self, index: int) -> list[str]:
        command = [sys.executable, "-m", "gateway", "serve", "--worker"]
        # One worker seeds the demo data; the others would only repeat its idempotent work.
        if self.seed and index == 0:
            command.append("--seed")
        return command

    def _on_signal(self, signum: int, _: FrameType | None) -> None:
        self.asked_to_stop = True
        if not self.stopping:
            log.info("%s: stopping %d workers", signal.Signals(signum).name, len(self.workers))
        self._stop()

    def _stop(self) -> None:
        self.stopping = True
        for worker in self.workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        env = {**self.env, "GATEWAY_SEED": "0"}
        for index in range(self.count):
            self.workers.append(subprocess.Popen(self._command(index), env=env))
        log.info("started %d workers: %s", self.count, ", ".join(str(w.pid) for w in self.workers))
        failed: subprocess.Popen[bytes] | None = None
        stop_deadline: float | None = None
        while any(w.poll() is None for w in self.workers):
            if not self.stopping:
                failed = next((w for w in self.workers if w.poll() is not None), None)
                if failed is not None:
                    log.error(
                        "worker %d exited with code %s while serving; stopping the others",
                        failed.pid,
                        failed.returncode,
                    )
                    self._stop()
            if self.stopping:
                stop_deadline = stop_deadline or time.monotonic() + self.grace_seconds
                if time.monotonic() > stop_deadline:
                    for worker in self.workers:
                        if worker.poll() is None:
                            log.error("worker %d still running; killing it", worker.pid)
                            worker.kill()
            time.sleep(POLL_SECONDS)
        codes = [w.wait() for w in self.workers]
        if failed is None and not self.asked_to_stop:
            failed = self.workers[0]
        if failed is not None:
            print(f"error: worker {failed.pid} exited with code {failed.returncode}", file=sys.stderr)
            return 1
        return 0 if all(code == 0 for code in codes) else 1
