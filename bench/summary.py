"""One line per gateway case beside its driver baseline, from the rows the benches appended to
the ``BENCH_SUMMARY`` file: ``python -m bench.summary FILE`` (``scripts/bench --summary`` runs it).

A gateway row is paired with the next driver row of the same report (the benches list each
gateway case before the driver doing the same CQL); rows with no driver row after them are
listed with the driver columns empty. ``python -m bench.summary FILE JSON COMMAND`` also writes
the rows, with the command and the date, to the JSON file (``scripts/bench --json JSON``).
Cases measured side by side in rounds
(``bench.harness.side_by_side``) also show the lowest and highest ratio of one round's
gateway requests/s to the same round's driver requests/s: how far the machine moved the ratio
within the run. Cases measured with a ``floor:`` row (``bench/floor.py``: HTTP and the same
stores, no GraphQL) get a second table: the floor's ratio to the driver, which no GraphQL layer
on this stack can pass, and the CPU the gateway's GraphQL layer adds over the floor.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from typing import Any


def pairs(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    paired: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for index, row in enumerate(rows):
        if not row["name"].startswith("gateway"):
            continue
        driver = next(
            (
                later
                for later in rows[index + 1 :]
                if later["report"] == row["report"] and later["name"].startswith("driver")
            ),
            None,
        )
        paired.append((row, driver))
    return paired


def floor_of(rows: list[dict[str, Any]], gateway: dict[str, Any]) -> dict[str, Any] | None:
    """The ``floor:`` row measured with ``gateway`` (after it in its report, before the next
    gateway row): the same reads over HTTP without GraphQL (``bench/floor.py``)."""
    start = next(index for index, row in enumerate(rows) if row is gateway) + 1
    for later in rows[start:]:
        if later["report"] != gateway["report"] or later["name"].startswith("gateway"):
            return None
        if later["name"].startswith("floor"):
            return later
    return None


def print_floors(rows: list[dict[str, Any]]) -> None:
    """The cases measured with a floor: what HTTP and the stores cost without any GraphQL, so
    the ratio no GraphQL layer on this stack can pass, and what the gateway's layer adds."""
    floors = [(g, d, f) for g, d in pairs(rows) if (f := floor_of(rows, g)) is not None]
    if not floors:
        return
    print("\nFloors: the same reads over HTTP without GraphQL (bench/floor.py), same run")
    print(
        f"{'case':<48} {'floor_rps':>9} {'floor/drv':>9} {'gw/floor':>8} {'floor_cpu/1k':>12}"
        f" {'gw_cpu/1k':>9} {'graphql_cpu/1k':>14} {'stmts':>5}"
    )
    for gateway, driver, floor in floors:
        name = gateway["name"].removeprefix("gateway:").strip()[:48]
        over_driver = f"{floor['rps'] / driver['rps']:.2f}" if driver and driver["rps"] else ""
        over_floor = gateway["rps"] / floor["rps"] if floor["rps"] else 0.0
        layer = gateway["cpu_per_1000"] - floor["cpu_per_1000"]
        print(
            f"{name:<48} {floor['rps']:>9.0f} {over_driver:>9} {over_floor:>8.2f}"
            f" {floor['cpu_per_1000']:>12.2f} {gateway['cpu_per_1000']:>9.2f} {layer:>14.2f}"
            f" {floor['statements']:>5.1f}"
        )


def write_json(rows: list[dict[str, Any]], path: str, command: str) -> None:
    """The rows as one JSON document, with the command that measured them, when, and on what
    (``scripts/bench --json FILE``; ``scripts/capacity`` reads it)."""
    document = {
        "command": command,
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cores": os.cpu_count(),
        "load_average_after": round(os.getloadavg()[0], 2),
        "rows": rows,
    }
    with open(path, "w") as out:
        json.dump(document, out, indent=1)
        out.write("\n")


def main() -> None:
    with open(sys.argv[1]) as source:
        rows = [json.loads(line) for line in source if line.strip()]
    if len(sys.argv) > 3:
        write_json(rows, sys.argv[2], sys.argv[3])
    rows = [row for row in rows if row.get("report") != "live delivery"]
    io = os.environ.get("CASSANDRA_IO") or "loop"
    baseline = os.environ.get("BENCH_BASELINE_IO") or io
    print(f"\nCassandra I/O: gateway {io} (CASSANDRA_IO), driver baseline {baseline} (BENCH_BASELINE_IO)")
    print(
        f"{'case':<48} {'gw_rps':>7} {'drv_rps':>7} {'ratio':>6} {'gw_p99':>7} {'drv_p99':>7}"
        f" {'stmts':>5} {'gw_cpu/1k':>9} {'drv_cpu/1k':>10} {'client_cpu/1k':>13} {'round_ratios':>12}"
    )
    for gateway, driver in pairs(rows):
        name = gateway["name"].removeprefix("gateway:").strip()[:48]
        if driver is None:
            print(
                f"{name:<48} {gateway['rps']:>7.0f} {'':>7} {'':>6} {gateway['p99']:>7.1f} {'':>7}"
                f" {gateway['statements']:>5.1f} {gateway['cpu_per_1000']:>9.2f} {'':>10}"
                f" {gateway.get('client_cpu_per_1000', 0.0):>13.2f}"
            )
            continue
        ratio = gateway["rps"] / driver["rps"] if driver["rps"] else 0.0
        print(
            f"{name:<48} {gateway['rps']:>7.0f} {driver['rps']:>7.0f} {ratio:>6.2f}"
            f" {gateway['p99']:>7.1f} {driver['p99']:>7.1f} {gateway['statements']:>5.1f}"
            f" {gateway['cpu_per_1000']:>9.2f} {driver['cpu_per_1000']:>10.2f}"
            f" {gateway.get('client_cpu_per_1000', 0.0):>13.2f} {round_ratios(gateway, driver):>12}"
        )
    print_floors(rows)


def round_ratios(gateway: dict[str, Any], driver: dict[str, Any]) -> str:
    """``low-high`` of the rounds' ratios, or empty for cases not measured in rounds."""
    ratios = [
        g / d
        for g, d in zip(gateway.get("rounds_rps") or [], driver.get("rounds_rps") or [], strict=False)
        if d
    ]
    return f"{min(ratios):.2f}-{max(ratios):.2f}" if len(ratios) > 1 else ""


if __name__ == "__main__":
    main()
