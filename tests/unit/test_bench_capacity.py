"""The capacity model (bench/capacity/): its arithmetic, its input reading, and the data-model
docs' column of partition sizes, which it generates."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest

from bench.capacity import docs, inputs, model, partitions, workload

SHIPPED = workload.load(inputs.DEFAULT_WORKLOAD)


def _gateway_row(
    name: str, cpu: float, node: float, statements: float, requests: int = 1000
) -> dict[str, Any]:
    return {
        "report": "r", "name": name, "rps": 100.0, "p99": 1.0, "statements": statements,
        "cpu_per_1000": cpu, "node_cpu_per_1000": node, "requests": requests, "lwts": 0.0,
        "lwt_retries": 0.0, "client_cpu_per_1000": 0.0, "rounds_rps": [], "node_cpu": 1.0,
        "node_requests": 4000,
    }  # fmt: skip


def _live_row(scenario: str, size: int, workers: int, **values: float) -> dict[str, Any]:
    row: dict[str, Any] = {
        "report": "live delivery", "name": f"live: {scenario} {size} w{workers}", "scenario": scenario,
        "size": size, "rate": 5.0, "workers": workers, "sent": 100, "expected": 100 * size,
        "received": 100 * size, "deliveries_per_second": 5.0 * size, "gateway_cpu_per_1000": 0.05,
        "node_cpu_per_1000": 0.002, "redis_cpu": 0.0, "gateway_cores": 0.3, "node_cores": 0.5,
        "cql_per_delivery": 0.001, "rss_per_socket_kib": 40.0,
    }  # fmt: skip
    row.update(values)
    return row


def document() -> dict[str, Any]:
    """Inputs of round numbers: every operation 2 ms of gateway CPU over 4 statements, the room
    post 10 ms; the node 1 s of CPU over every 4000 requests it served (250 µs a statement); a
    send 2 lightweight transactions."""
    rows = []
    for name, (case, _) in inputs.OPERATIONS.items():
        case = case + " 5000" if name == "contact_upload" else case
        rows.append(_gateway_row(case, 10.0 if name == "room_post" else 2.0, 1.0, 4.0))
        rows.append({**_gateway_row("driver: same", 1.0, 1.0, 4.0), "lwts": 2.0 if name == "send" else 0.0})
    live = [
        # 60 µs per delivery in the room of 1000, its post's 10 µs included (10 ms / 1000)
        _live_row("room", 1000, 1, gateway_cpu_per_1000=0.06, node_cpu_per_1000=0.003),
        # 70 µs at two processes: 10 µs more per delivery, 10 ms more per message
        _live_row("room", 1000, 2, gateway_cpu_per_1000=0.07),
        _live_row("pairs", 100, 2, redis_cpu=0.01, sent=200),
    ]
    return {
        "requests": {"command": "scripts/bench --json FILE x", "measured_at": "t1", "rows": rows},
        "live": {"command": "scripts/bench --json FILE live", "measured_at": "t2", "rows": live},
    }


def test_inputs_are_read_from_the_rows() -> None:
    i = inputs.parse(document())
    send = i.operations["send"]
    assert (send.gateway_cpu_ms, send.statements, send.lwts) == (2.0, 4.0, 2.0)
    # 4 statements and two lightweight transactions, each three more: 10 × 250 µs
    assert send.node_cpu_ms == pytest.approx(2.5)
    assert i.operations["conversation"].node_cpu_ms == pytest.approx(1.0)
    assert send.writes and not i.operations["conversation"].writes
    assert i.delivery.gateway_cpu_us == pytest.approx(50.0)  # 60 less the post's 10
    assert i.delivery.node_cpu_us == pytest.approx(0.001 * 250)
    assert i.delivery.per_process_message_us == pytest.approx(10.0 * 1000)
    assert i.redis_cpu_us_per_send == pytest.approx(50.0)  # 0.01 s over 200 sends
    assert i.rss_kib_per_socket == 40.0
    assert i.node_cpu_us_per_statement == pytest.approx(250.0)
    assert i.commands["live"] == "scripts/bench --json FILE live"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("live"), "no 'live' rows"),
        (lambda d: d["requests"]["rows"].pop(0), "no row 'gateway: sendMessage"),
        (lambda d: d["live"]["rows"].pop(2), "the pairs case at two processes"),
        (lambda d: d["requests"]["rows"][0].update(cpu_per_1000=None), "no number 'cpu_per_1000'"),
    ],
)
def test_a_missing_input_names_the_command_or_the_figure(change: Any, message: str) -> None:
    d = document()
    change(d)
    with pytest.raises(inputs.InputError, match=message.replace("(", r"\(")):
        inputs.parse(d)


def _workload(**changes: dict[str, float]) -> workload.Workload:
    raw: dict[str, Any] = {
        "users": {
            "registered": 1, "monthly_active": 1, "concurrent_sockets": 1000,
        },
        "messages": {
            "per_month": 1000 * workload.SECONDS_PER_MONTH, "peak_factor": 2, "room_share": 0.5,
            "room_online_members": 11, "content_bytes": 60,
        },
        "reads_per_send": {"conversation": 1, "talk_partners": 0, "room_history": 0},
        "contacts": {"uploads_per_day": 0, "book_size": 5000, "inverse_graph_keys": 0},
        "partitions": {k: 1 for k in workload.Partitions.__dataclass_fields__},
        "cluster": {
            "target_utilisation": 0.5, "cassandra_cores_per_node": 16, "replication_factor": 3,
            "gateway_cores_per_host": 16, "cassandra_disk_per_node_gb": 1e12, "message_retention_years": 1,
        },
    }  # fmt: skip
    for section, values in changes.items():
        raw[section].update(values)
    return workload.parse(raw)


def test_rates_at_the_peak() -> None:
    r = model.rates(_workload())
    assert r.sends == pytest.approx(2000)  # 1000/s on average, twice at the peak
    assert r.direct == pytest.approx(1000)
    assert r.room_posts == pytest.approx(1000)
    assert r.deliveries == pytest.approx(1000 + 1000 * 11)
    assert r.requests["conversation"] == pytest.approx(1000)


def test_gateway_cores_are_rate_times_cost_over_the_headroom() -> None:
    line = model.gateway(_workload(), inputs.parse(document()))
    busy = (
        1000 * 2e-3  # sends
        + 1000 * 2e-3  # conversations
        + 1000 * 10e-3  # room posts
        + 12000 * 50e-6  # deliveries
        + 1000 * 10 * 10e-3  # each room message on 10 further processes
    )
    assert line.total == pytest.approx(busy)
    assert line.needed == math.ceil(busy / 0.5)
    assert line.dominant.what.startswith("room messages on 10 further processes")
    assert "1,000 × 40 KiB" in line.note


def test_cassandra_counts_every_replica_of_a_write_and_a_quorum_of_a_read() -> None:
    line = model.cassandra(_workload(), inputs.parse(document()))
    terms = {t.what.split()[0]: t.amount for t in line.terms}
    assert terms["send"] == pytest.approx(1000 * 2.5e-3 * 3)
    assert terms["conversation"] == pytest.approx(1000 * 1e-3 * 2)
    assert terms["deliveries"] == pytest.approx(12000 * 0.25e-6 * 2)
    assert line.needed == 3  # a few cores' work, but never fewer nodes than replicas


def test_redis_shards_and_the_dominant_input() -> None:
    line = model.redis(
        _workload(messages={"per_month": 100_000 * workload.SECONDS_PER_MONTH}), inputs.parse(document())
    )
    # 200 000 messages/s at the peak × 50 µs = 10 cores, at 50%: 20 shards
    assert line.needed == 20
    assert line.dominant.what.startswith("messages 200,000/s")


def test_the_prediction_of_a_room_case() -> None:
    i = inputs.parse(document())
    kept_up = model.predict_room(i, size=100, rate=1, workers=2, cores=1.5)
    assert kept_up.deliveries_per_second == 100
    assert kept_up.gateway_cores == pytest.approx(10e-3 + 100 * 50e-6 + 10e-3)
    behind = model.predict_room(i, size=100, rate=100, workers=2, cores=1.5)
    assert behind.gateway_cores == 1.5
    assert behind.deliveries_per_second == pytest.approx(1.5 / (10e-3 + 100 * 50e-6 + 10e-3) * 100)


@pytest.mark.parametrize(
    ("section", "values", "message"),
    [
        ("messages", {"room_share": 1.5}, "messages.room_share must be 0 to 1"),
        ("users", {"concurrent_sockets": "many"}, "users.concurrent_sockets must be a number"),
        ("cluster", {"target_utilisation": 0}, "target_utilisation must be above 0"),
        ("cluster", {"surplus": 1}, r"\[cluster\] has unknown keys surplus"),
    ],
)
def test_a_bad_workload_is_named(section: str, values: dict[str, Any], message: str) -> None:
    with pytest.raises(workload.WorkloadError, match=message):
        _workload(**{section: values})


def test_the_shipped_workload_and_inputs_give_an_answer() -> None:
    i = inputs.load()
    assert "scripts/bench --json" in i.commands["requests"] and i.measured_at["requests"]
    lines = model.lines(SHIPPED, i)
    assert [line.name for line in lines] == ["gateway cores", "Redis shards", "Cassandra nodes"]
    assert all(line.needed >= 1 for line in lines)


def test_the_migrations_are_read_with_their_alterations() -> None:
    tables = partitions.tables()
    talk = tables["talk_partners"]
    assert talk.partition_key == ("owner",)
    assert talk.clustering == ("row_kind", "partner", "client_message_id")
    assert talk.columns["partner_read_at"] == "timestamp"  # added by a later migration
    assert tables["direct_messages"].partition_key == ("conversation_id", "bucket")


def test_row_bytes_and_buckets() -> None:
    table = partitions.Table(
        "t", {"k": "text", "id": "timeuuid", "content": "text", "n": "int"}, ("k",), ("id",)
    )
    # a row: its overhead, the clustering id, the content and the int with a cell's overhead each
    assert partitions.row_bytes(table, SHIPPED) == 8 + 16 + (60 + 3) + (4 + 3)
    assert partitions.bucket_days("messenger_bucket") == 30
    assert partitions.bucket_days("room_bucket") == 1


def test_every_table_has_a_partition_size_and_the_docs_show_it() -> None:
    sizes = partitions.largest(SHIPPED)
    assert set(sizes) == set(partitions.tables())
    shown = docs.documented(sizes)
    missing = sorted(set(sizes) - set(shown))
    assert not missing, f"tables with no row in the data-model docs: {missing}"
    stale = {
        name: (str(page.relative_to(docs.ROOT)), held)
        for name, (page, held) in shown.items()
        if held != partitions.cell(sizes[name])
    }
    assert not stale, f"run `scripts/capacity partitions --write-docs`: {stale}"


def test_the_docs_column_is_added_then_replaced() -> None:
    sizes = partitions.largest(SHIPPED)
    text = "| table | key | bound |\n|---|---|---|\n| `users` | `login` | one row |\n\nafter"
    once = docs.rewrite(text, "largest partition x", sizes)
    assert once.split("\n")[0] == "| table | key | bound | largest partition x |"
    assert once.split("\n")[2].endswith(f"| {partitions.cell(sizes['users'])} |")
    assert docs.rewrite(once, "largest partition x", sizes) == once
    changed = copy.deepcopy(sizes)
    changed["users"] = partitions.Partition("users", "one user", 2, 600)
    assert "2 rows, 600 B: one user" in docs.rewrite(once, "largest partition x", changed)


def test_a_table_without_a_scenario_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "001.cql").write_text("CREATE TABLE IF NOT EXISTS novel (k text PRIMARY KEY, v int);")
    with pytest.raises(KeyError, match="novel"):
        partitions.largest(SHIPPED, tmp_path)
