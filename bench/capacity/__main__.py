"""``scripts/capacity``: what a workload needs, from what the benchmarks measured.

- ``scripts/capacity [--workload FILE] [--inputs FILE]``: gateway cores, Redis shards and
  Cassandra nodes for the workload (default: the eBuddy scale, ``ebuddy.toml``), each with its
  terms, the headroom assumed and its dominant input.
- ``scripts/capacity partitions [--write-docs]``: the largest partition of every table under the
  workload; ``--write-docs`` rewrites the data-model docs' column of them.
- ``scripts/capacity measure [requests] [live] [--out FILE]``: runs the benchmark commands the
  inputs come from (both by default) and writes their parts of the inputs file (default: the
  shipped ``inputs.json``), each with its command and date.
- ``scripts/capacity check --measured FILE [--size N --rate R --workers W]``: the model's
  prediction of a ``scripts/bench live`` room case on this machine beside the case as
  ``scripts/bench --json FILE live -- ...`` measured it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.capacity import docs, inputs, model, partitions, workload


def _report(w: workload.Workload, i: inputs.Inputs) -> None:
    r = model.rates(w)
    average = w.messages.per_month / workload.SECONDS_PER_MONTH
    print(
        f"# {w.name}: {w.users.registered:,.0f} registered, {w.users.monthly_active:,.0f} monthly active, "
        f"{w.contacts.inverse_graph_keys:,.0f} keys in the inverse social graph"
    )
    print(
        f"peak: {r.sends:,.0f} messages/s ({average:,.0f} on average × {w.messages.peak_factor:g}): "
        f"{r.direct:,.0f} direct, {r.room_posts:,.0f} in rooms; {r.deliveries:,.0f} deliveries/s; "
        f"{w.users.concurrent_sockets:,.0f} sockets"
    )
    print(
        f"headroom: every line sized to run at {w.cluster.target_utilisation:.0%} of its cores at the peak; "
        f"Cassandra at replication {w.cluster.replication_factor:g} per datacenter"
    )
    print(
        f"inputs: requests {i.measured_at['requests']} (`{i.commands['requests']}`); "
        f"live {i.measured_at['live']} (`{i.commands['live']}`)"
    )
    print(
        f"Cassandra CPU per statement, over the request benchmarks: {i.node_cpu_us_per_statement:.0f} µs; "
        f"per delivery: {i.delivery.node_cpu_us:.1f} µs ({i.delivery.cql:.3f} statements)"
    )
    print()
    for line in model.lines(w, i):
        share = line.dominant.amount / line.total if line.total else 0.0
        print(f"{line.name}: {line.needed} {line.unit}; dominant: {line.dominant.what} ({share:.0%})")
        for term in sorted(line.terms, key=lambda t: -t.amount):
            print(f"    {term.amount:10.2f} cores  {term.what}")
        if line.note:
            print(f"    {line.note}")


def _partitions(w: workload.Workload, write_docs: bool) -> None:
    sizes = partitions.largest(w)
    print(f"| table | largest partition ({w.name}) |")
    print("|---|---|")
    for p in sizes.values():
        print(f"| `{p.table}` | {partitions.cell(p)} |")
    if write_docs:
        for page in docs.write(sizes):
            print(f"wrote {page.relative_to(docs.ROOT)}", file=sys.stderr)


def _measure(out: Path, parts: Sequence[str]) -> None:
    """Run the benchmark commands of ``parts`` (both by default) and write their rows to ``out``,
    keeping the other part from the file as it was."""
    root = docs.ROOT
    document: dict[str, object] = json.loads(out.read_text()) if out.exists() else {}
    commands = {"requests": inputs.REQUESTS_COMMAND, "live": inputs.LIVE_COMMAND}
    for part in parts or commands:
        command = commands[part]
        with tempfile.TemporaryDirectory() as scratch:
            file = Path(scratch) / f"{part}.json"
            shown = command.format(file="FILE")
            print(f"==> {shown}", file=sys.stderr, flush=True)
            subprocess.run(command.format(file=file).split(), cwd=root, check=True)
            measured = json.loads(file.read_text())
            measured["command"] = shown
            document[part] = measured
            out.write_text(json.dumps(document, indent=1) + "\n")
            print(f"wrote the {part} part of {out}", file=sys.stderr)
    inputs.parse(document)  # everything the model needs is there


def _check(i: inputs.Inputs, measured_file: Path, size: int, rate: float, workers: int) -> None:
    measured = json.loads(measured_file.read_text())
    rows = [
        r
        for r in measured["rows"]
        if r.get("scenario") == "room" and r["size"] == size and r["rate"] == rate and r["workers"] == workers
    ]
    if not rows:
        raise SystemExit(f"{measured_file}: no room case N={size} R={rate:g} w{workers}")
    row = rows[0]
    node_cores = next(
        (r["node_cores"] for r in json.loads(inputs.DEFAULT_INPUTS.read_text())["live"]["rows"]
         if r.get("scenario") == "room" and r["workers"] == 1),
        0.0,
    )  # fmt: skip
    free = (os.cpu_count() or 1) - node_cores
    p = model.predict_room(i, size=size, rate=rate, workers=workers, cores=free)
    print(f"room N={size} R={rate:g} w{workers} ({measured['measured_at']}, `{measured['command']}`)")
    print(f"cores free for the gateway: {free:.2f} (this machine's {os.cpu_count()} less the node's)")
    print("| | predicted | measured |")
    print("|---|---:|---:|")
    print(f"| deliveries/s | {p.deliveries_per_second:,.0f} | {row['deliveries_per_second']:,.0f} |")
    print(f"| gateway cores | {p.gateway_cores:.2f} | {row['gateway_cores']:.2f} |")
    measured_ms = row["gateway_cpu_per_1000"]
    predicted_ms = p.gateway_cores / p.deliveries_per_second * 1000 * 1000 if p.deliveries_per_second else 0.0
    print(f"| gateway CPU ms per 1000 deliveries | {predicted_ms:.1f} | {measured_ms * 1000:.1f} |")
    print(f"predicted limit: {p.limited_by}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="scripts/capacity", description=(__doc__ or "").split("\n\n")[0])
    commands = ("report", "partitions", "measure", "check")
    parser.add_argument("command", nargs="?", default="report", choices=commands)
    parser.add_argument("parts", nargs="*", help="measure: requests, live or both (the default)")
    parser.add_argument("--workload", type=Path, default=inputs.DEFAULT_WORKLOAD)
    parser.add_argument("--inputs", type=Path, default=inputs.DEFAULT_INPUTS)
    parser.add_argument("--write-docs", action="store_true", help="partitions: rewrite the docs' column")
    parser.add_argument(
        "--out", type=Path, default=inputs.DEFAULT_INPUTS, help="measure: the inputs file to write"
    )
    parser.add_argument("--measured", type=Path, help="check: a `scripts/bench --json FILE live` file")
    parser.add_argument("--size", type=int, default=200, help="check: the room's sockets")
    parser.add_argument("--rate", type=float, default=20.0, help="check: posts per second")
    parser.add_argument("--workers", type=int, default=2, help="check: gateway processes")
    args = parser.parse_args(argv)
    if args.parts and (args.command != "measure" or not set(args.parts) <= {"requests", "live"}):
        parser.error(f"only measure takes parts (requests, live), got {' '.join(args.parts)}")
    try:
        if args.command == "measure":
            _measure(args.out, args.parts)
            return
        w = workload.load(args.workload)
        if args.command == "partitions":
            _partitions(w, args.write_docs)
            return
        i = inputs.load(args.inputs)
        if args.command == "check":
            if args.measured is None:
                raise SystemExit("check needs --measured FILE")
            _check(i, args.measured, args.size, args.rate, args.workers)
        else:
            _report(w, i)
    except (workload.WorkloadError, inputs.InputError) as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
