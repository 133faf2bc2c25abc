"""Process bookkeeping shared by the local Cassandra node and the local Redis server.

Each service keeps a pid file and a lock file in its own directory of the per-user cache;
the flock serialises check-and-start and stop across processes (test sessions, worktrees,
CLI calls), and the service runs detached so it outlives the process that started it.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

HOST = "127.0.0.1"
LOG_TAIL_LINES = 30
# Runs "$@" in the background with output to $1 and prints its pid.
_DETACH = 'log="$1"; shift; "$@" </dev/null >"$log" 2>&1 & echo $!'

Progress = Callable[[str], None]


class DevNodeError(Exception):
    """An expected failure; the message is for a human and may end with lines of a log."""


def print_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def port_open(port: int, timeout: float = 1.0, host: str = HOST) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_port_closed(port: int, timeout: float, host: str = HOST) -> bool:
    """Also covers a service that just exited: its sockets can outlive its pid by a moment."""
    deadline = time.monotonic() + timeout
    while port_open(port, timeout=0.5, host=host):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def pid_alive(pid: int) -> bool:
    """True for a live process; a zombie counts as dead (nobody may have reaped it yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return False
    except OSError:
        pass
    else:
        return stat.rpartition(")")[2].split()[:1] != ["Z"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cmdline(pid: int) -> list[str] | None:
    """The process's argv, or None where /proc is unavailable."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode(errors="replace").split("\0")


def wait_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def tail(path: Path, offset: int = 0, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of path written at or after offset ('' if none)."""
    try:
        size = path.stat().st_size
        start = offset if offset <= size else 0
        start = max(start, size - 256 * 1024)
        with path.open("rb") as fh:
            fh.seek(start)
            text = fh.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@contextmanager
def locked(home: Path, lock_file: Path, progress: Progress) -> Iterator[None]:
    """Serialise check-and-start across processes, so one instance runs and one download happens."""
    home.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another process using {home} (lock {lock_file})")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_pid(pid_file: Path) -> int | None:
    """The pid in the file; 0 for an unreadable file, None for a missing one."""
    try:
        pid = int(pid_file.read_text().strip())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return 0
    return max(pid, 0)


def live_pid(pid_file: Path, is_ours: Callable[[int], bool], *, clean: bool) -> int | None:
    """The pid in ``pid_file`` if that process lives and ``is_ours`` (a recycled pid is not);
    with ``clean``, a stale file is removed."""
    pid = read_pid(pid_file)
    if pid is None:
        return None
    if pid > 0 and pid_alive(pid) and is_ours(pid):
        return pid
    if clean:
        pid_file.unlink(missing_ok=True)
    return None


def write_pid(pid_file: Path, pid: int) -> None:
    tmp_pid = pid_file.with_suffix(".pid.tmp")
    tmp_pid.write_text(f"{pid}\n")
    tmp_pid.replace(pid_file)


def launch_detached(what: str, args: list[str], log: Path, cwd: Path) -> int:
    """Start args (``what``, for the error message) in the background with output to log, and return its pid.

    A throwaway ``sh`` starts it and exits, so the service is not a child of this process:
    it outlives us, and stopping it from here leaves no zombie to reap.
    """
    done = subprocess.run(
        ["/bin/sh", "-c", _DETACH, "sh", str(log), *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        start_new_session=True,
        check=False,
    )
    try:
        return int(done.stdout.strip())
    except ValueError as exc:
        detail = done.stderr.strip() or done.stdout.strip()
        raise DevNodeError(f"Could not start {what}: {detail}") from exc


def kill(name: str, pid: int) -> None:
    """SIGKILL, as a crash or the kernel's OOM killer would: no drain, no flush, no goodbye to
    peers. Returns once the process is gone."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    except PermissionError as exc:
        raise DevNodeError(f"Not allowed to kill {name} (pid {pid}): {exc}") from exc
    if not wait_exit(pid, 10.0):
        raise DevNodeError(f"{name} (pid {pid}) survived SIGKILL")


def terminate(name: str, pid: int, timeout: float, progress: Progress) -> None:
    """SIGTERM, then SIGKILL after timeout; returns once the process is gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError as exc:
        raise DevNodeError(f"Not allowed to stop {name} (pid {pid}): {exc}") from exc
    if not wait_exit(pid, timeout):
        progress(f"{name} (pid {pid}) did not stop within {timeout:.0f}s; killing it")
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if not wait_exit(pid, 10.0):
            raise DevNodeError(f"{name} (pid {pid}) survived SIGKILL")
