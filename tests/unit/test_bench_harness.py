"""The benchmarks' side-by-side measurement (``bench/harness.py``): cases compared with each other
take turns, each meets every stretch of the run, and each row adds up all of its calls."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bench.harness import Stats, side_by_side
from bench.summary import floor_of, print_floors, round_ratios


async def test_cases_take_turns_and_each_row_counts_all_its_calls() -> None:
    calls: list[tuple[str, int]] = []

    def recorder(case: str) -> Callable[[int], Awaitable[None]]:
        async def call(index: int) -> None:
            calls.append((case, index))

        return call

    gateway, driver = await side_by_side(
        ("gateway: a", recorder("gateway")),
        ("driver:  b", recorder("driver")),
        requests=10,
        concurrency=3,
        warmup=2,
        rounds=4,
    )

    assert calls[:4] == [("gateway", -1), ("gateway", -2), ("driver", -1), ("driver", -2)]
    measured = calls[4:]
    # Rounds of 3, 3, 2, 2 calls per case; the case going first alternates.
    firsts = [measured[i][0] for i in (0, 6, 12, 16)]
    assert firsts == ["gateway", "driver", "gateway", "driver"]
    for case in ("gateway", "driver"):
        assert sorted(i for c, i in measured if c == case) == list(range(10))
    # Each round's calls are a contiguous stretch of indexes, the same for both cases.
    assert [i for c, i in measured[:6] if c == "gateway"] == [0, 1, 2]
    assert sorted(i for c, i in measured[6:12] if c == "driver") == [3, 4, 5]

    assert (gateway.name, driver.name) == ("gateway: a", "driver:  b")
    for row in (gateway, driver):
        assert row.requests == 10
        assert len(row.latencies_ms) == 10
        assert row.seconds > 0


def test_added_rows_sum_time_and_cpu_and_weigh_means_by_requests() -> None:
    first = Stats("gateway: x", 30, 1.5, [1.0] * 30, statements=4.0, gateway_cpu=0.6, local_cpu=0.1)
    second = Stats("gateway: x", 10, 0.5, [3.0] * 10, statements=8.0, gateway_cpu=0.2, local_cpu=0.1)

    row = Stats.added("gateway: x", [first, second])

    assert (row.requests, row.seconds) == (40, 2.0)
    assert row.rps == 20.0
    assert row.statements == 5.0
    assert row.cpu_per_1000 == 20.0
    assert row.pct(0.99) == 3.0 and row.pct(0.5) == 1.0


def test_the_summary_shows_how_far_the_rounds_ratios_spread() -> None:
    gateway = Stats.added(
        "gateway: x",
        [Stats("gateway: x", 10, 1.0, [1.0] * 10, 4.0), Stats("gateway: x", 10, 0.5, [1.0] * 10, 4.0)],
    )
    driver = Stats.added(
        "driver:  x",
        [Stats("driver:  x", 10, 0.5, [1.0] * 10, 4.0), Stats("driver:  x", 10, 0.5, [1.0] * 10, 4.0)],
    )
    assert gateway.rounds_rps == [10.0, 20.0]

    spread = round_ratios({"rounds_rps": gateway.rounds_rps}, {"rounds_rps": driver.rounds_rps})

    assert spread == "0.50-1.00"
    assert round_ratios({"rounds_rps": []}, {"rounds_rps": []}) == ""


def _row(report: str, name: str, rps: float, cpu: float) -> dict[str, object]:
    return {"report": report, "name": name, "rps": rps, "cpu_per_1000": cpu, "statements": 4.0}


def test_a_floor_row_is_paired_with_its_gateway_case_only(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        _row("reads", "gateway: front page", 500.0, 1.5),
        _row("reads", "floor:   front page", 800.0, 0.9),
        _row("reads", "driver:  front page", 1000.0, 0.6),
        # No floor of its own: the next case's floor is not its.
        _row("reads", "gateway: post page", 300.0, 2.5),
        _row("reads", "driver:  post page", 900.0, 1.0),
        _row("reads", "gateway: comments", 200.0, 3.0),
        _row("reads", "floor:   comments", 400.0, 1.2),
        # Another report's floor is not the last case's either.
        _row("writes", "gateway: publish", 100.0, 4.0),
        _row("other", "floor:   publish", 150.0, 2.0),
    ]
    assert floor_of(rows, rows[0]) is rows[1]
    assert floor_of(rows, rows[3]) is None
    assert floor_of(rows, rows[5]) is rows[6]
    assert floor_of(rows, rows[7]) is None

    print_floors(rows)

    lines = capsys.readouterr().out.splitlines()
    front = next(line for line in lines if line.startswith("front page"))
    # floor requests/s, floor / driver, gateway / floor, floor CPU, gateway CPU, what GraphQL adds.
    assert front.split()[2:] == ["800", "0.80", "0.62", "0.90", "1.50", "0.60", "4.0"]
    comments = next(line for line in lines if line.startswith("comments"))
    # No driver row after it in its report: the floor / driver column stays empty.
    assert comments.split()[1:] == ["400", "0.50", "1.20", "3.00", "1.80", "4.0"]
    assert not any(line.startswith(("post page", "publish")) for line in lines)
