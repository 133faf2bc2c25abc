"""Serve the gateway for a benchmark in its own process: ``python -m bench.serve '<settings json>'``.

The load generator then runs in another process, as real clients would, instead
of sharing one interpreter (and one GIL) with the server it measures. It is
served as ``gateway serve`` serves (``gateway.server.serve.run``), on 127.0.0.1.
"""

from __future__ import annotations

import json
import logging
import sys
import typing
from dataclasses import replace
from pathlib import Path

from gateway.server.app import create_app
from gateway.server.serve import run
from gateway.settings import Settings


def main() -> None:
    overrides = json.loads(sys.argv[1])
    types = typing.get_type_hints(Settings)
    for name, value in list(overrides.items()):
        if name not in types:
            raise SystemExit(f"unknown setting {name}")
        kinds = (types[name], *typing.get_args(types[name]))
        if Path in kinds and value is not None:
            overrides[name] = Path(value)
        elif typing.get_origin(types[name]) is tuple:
            overrides[name] = tuple(value)
    settings = replace(Settings.from_env(), **overrides, host="127.0.0.1")
    logging.basicConfig(level=logging.WARNING)
    run(create_app(settings), settings)


if __name__ == "__main__":
    main()
