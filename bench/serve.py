"""Serve the gateway for a benchmark in its own process: ``python -m bench.serve '<settings json>'``.

The load generator then runs in another process, as real clients would, instead
of sharing one interpreter (and one GIL) with the server it measures.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import fields, replace
from pathlib import Path

import uvloop
from aiohttp import web

from gateway.app import create_app
from gateway.settings import Settings


def main() -> None:
    overrides = json.loads(sys.argv[1])
    types = {f.name: f.type for f in fields(Settings)}
    for name, value in list(overrides.items()):
        if name not in types:
            raise SystemExit(f"unknown setting {name}")
        if name == "cassandra_home":
            overrides[name] = Path(value)
        elif name == "contact_points":
            overrides[name] = tuple(value)
    settings = replace(Settings.from_env(), **overrides)
    logging.basicConfig(level=logging.WARNING)
    web.run_app(
        create_app(settings),
        host="127.0.0.1",
        port=settings.port,
        print=None,
        access_log=None,
        loop=uvloop.new_event_loop(),
    )


if __name__ == "__main__":
    main()
