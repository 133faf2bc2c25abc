"""Where the gateway's time goes under a benchmark's load: py-spy on the gateway process.

With ``BENCH_PROFILE=<dir>`` (``scripts/bench --profile <dir> [names]``), every
gateway case of a benchmark is sampled by ``py-spy record --gil`` (the thread
holding the interpreter lock, so every sample is CPU spent in Python or in C
called from it) while it is measured. The raw stacks go to
``<dir>/<case>.txt`` and a summary is printed under the case's row: the share of
samples by layer (HTTP, Strawberry, graphql-core, the fast path, resolvers and
stores, the driver's calls, and its sockets on the event loop or its own I/O thread)
and the busiest frames.

py-spy attaches to another process: it needs root or ``CAP_SYS_PTRACE`` (or
``kernel.yama.ptrace_scope`` 0).
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Layers by the frames that belong to them; a sample counts for the layer of its
#: innermost frame that names one (the driver's I/O thread by its thread's root).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("driver: statements sent (Database, execute_async)", ("gateway/db/session.py",)),
    ("driver: sockets on the loop (reads, decoding, writes)", ("gateway/db/loop_io.py", "cassandra/")),
    (
        "stores: rows to records",
        (
            "store.py",
            "timeline.py",
            "clock.py",
            "records.py",
        ),
    ),
    ("DataLoaders", ("dataloader.py",)),
    ("plain fields and scalars", ("plain_fields.py", "scalars.py")),
    ("graphql-core executor", ("graphql/execution",)),
    ("Strawberry execution and extensions", ("strawberry/schema", "strawberry/extensions", "gateway/graph/")),
    (
        "resolvers",
        (
            "gateway/users/",
            "gateway/messenger/",
            "gateway/rooms/",
            "gateway/blog/",
            "gateway/mail/",
            "gateway/contacts/",
        ),
    ),
    ("HTTP view, JSON, compression", ("strawberry/http", "strawberry/aiohttp", "cross_web", "gateway/http/")),
    (
        "aiohttp and middlewares",
        ("aiohttp/", "gateway/server/metrics.py", "gateway/server/drain.py", "gateway/mail/uploads.py"),
    ),
    ("event loop", ("asyncio/", "web.py", "uvloop")),
]
DRIVER_THREAD = "driver: its I/O thread (reads, decoding)"


def _py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise SystemExit("py-spy is not installed (it comes with the test extra: pip install -e '.[test]')")
    return found


@contextmanager
def profiling(pid: int | None, case: str) -> Iterator[None]:
    """Sample ``pid`` while the block runs, when ``BENCH_PROFILE`` names a directory."""
    directory = os.environ.get("BENCH_PROFILE")
    if not directory or pid is None:
        yield
        return
    Path(directory).mkdir(parents=True, exist_ok=True)
    out = Path(directory) / (re.sub(r"[^a-z0-9]+", "-", case.lower()).strip("-") + ".txt")
    command = [
        _py_spy(),
        "record",
        "-p",
        str(pid),
        "-r",
        "200",
        "-f",
        "raw",
        "--gil",
        "--nonblocking",
        "-o",
        str(out),
    ]
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=60)
    if out.exists():
        print(summary(out))


def _frame(frame: str) -> str:
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rsplit('/', 1)[-1].split(':')[0]})" if where else name


def summary(path: Path, top: int = 12) -> str:
    layers: collections.Counter[str] = collections.Counter()
    frames: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        stack_frames = stack.split(";")
        frames[_frame(stack_frames[-1])] += samples
        if stack_frames[0].startswith("Thread._bootstrap"):
            layers[DRIVER_THREAD] += samples
            continue
        layers[_layer(stack_frames)] += samples
    if not total:
        return f"   (no samples in {path})"
    lines = [f"   profile ({total} samples, {path}):"]
    lines += [f"   {100 * n / total:5.1f}%  {layer}" for layer, n in layers.most_common()]
    lines.append("   busiest frames:")
    lines += [f"   {100 * n / total:5.1f}%  {frame}" for frame, n in frames.most_common(top)]
    return "\n".join(lines)


def _layer(stack_frames: list[str]) -> str:
    for frame in reversed(stack_frames):
        for layer, marks in LAYERS:
            if any(mark in frame for mark in marks):
                return layer
    return "other"


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(summary(Path(name)))
