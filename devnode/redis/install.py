"""Find ``redis-server``, or install Debian's ``redis-server`` package when this machine allows it."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from devnode.common import LOG_TAIL_LINES, DevNodeError, Progress

_SEARCH = ("/usr/bin", "/usr/sbin")
_APT_TIMEOUT = 900.0


def find_redis_server() -> str | None:
    """``redis-server`` on PATH, else in /usr/bin or /usr/sbin (often not on a user's PATH)."""
    found = shutil.which("redis-server")
    if found is not None:
        return found
    for directory in _SEARCH:
        candidate = Path(directory) / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def ensure_redis_server(progress: Progress) -> str:
    """The path of ``redis-server``, installing it with apt-get when root; else a clear error."""
    found = find_redis_server()
    if found is not None:
        return found
    apt_get = shutil.which("apt-get")
    if os.geteuid() != 0 or apt_get is None:
        why = "apt-get is not available" if apt_get is None else "installing it needs root"
        raise DevNodeError(
            "redis-server is needed for the local Redis, but it was not found on PATH, in /usr/bin "
            f"or in /usr/sbin, and {why}. Install it, e.g. `sudo apt-get install redis-server` "
            "(Debian/Ubuntu), `dnf install redis` (Fedora) or `brew install redis` (macOS)."
        )
    started = time.monotonic()
    progress("redis-server not found; installing Debian's redis-server package with apt-get")
    _apt(progress, [apt_get, "update"])
    _apt(progress, [apt_get, "install", "-y", "--no-install-recommends", "redis-server"])
    found = find_redis_server()
    if found is None:
        raise DevNodeError("apt-get installed redis-server, but no redis-server executable was found.")
    progress(f"redis-server installed at {found} ({time.monotonic() - started:.0f}s)")
    return found


def _apt(progress: Progress, args: list[str]) -> None:
    progress(f"running {' '.join([Path(args[0]).name, *args[1:]])}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        done = subprocess.run(
            args,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=_APT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise DevNodeError(f"{' '.join(args)} did not finish within {_APT_TIMEOUT:.0f}s") from exc
    if done.returncode != 0:
        output = "\n".join(done.stdout.strip().splitlines()[-LOG_TAIL_LINES:])
        raise DevNodeError(
            f"{' '.join(args)} failed (exit {done.returncode}); install redis-server yourself. "
            f"apt-get said:\n{output}"
        )
