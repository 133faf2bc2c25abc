"""The Grafana dashboard and the Prometheus alerting rules of ``ops/`` name only metrics a
running gateway exports, so neither can rot: every PromQL expression of the dashboard (its
panels and its variable) and of the rules is read, the metric names it selects are taken
out, and each must be in the gateway's ``/metrics`` (or be Prometheus's own ``up``). The
other way round, every metric the gateway exports is on the dashboard.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.support.client import Api
from tests.support.processes import METRICS_TOKEN

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "ops" / "grafana" / "dashboards" / "gateway.json"
RULES = ROOT / "ops" / "prometheus" / "rules.yml"
PROMETHEUS = ROOT / "ops" / "prometheus" / "prometheus.yml"
COMPOSE = ROOT / "compose.yaml"
#: Series Prometheus makes itself for every target it scrapes.
SCRAPE_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
#: The samples each kind of metric family gives.
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "gauge": ("",),
    "info": ("_info",),
    "unknown": ("",),
}
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless"}
_KEYWORDS |= {"offset", "inf", "nan", "atan2"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: strings, label matchers, ranges, Grafana
    variables, the label lists of ``by``/``without``/``on``/``ignoring``/``group_*``, functions
    and aggregations (a name followed by ``(``), keywords and numbers taken out."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\[[^\[\]]*\]", " ", text)
    text = re.sub(r"\$\{?\w+\}?", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.:])[A-Za-z_:][\w:]*", text):
        name = match.group(0)
        if name.lower() in _KEYWORDS or text[match.end() :].lstrip().startswith("("):
            continue
        names.add(name)
    return names


def _panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for panel in panels:
        found.append(panel)
        found.extend(_panels(panel.get("panels", [])))
    return found


def dashboard_expressions() -> dict[str, str]:
    """Each PromQL expression of the dashboard, by where it is."""
    board = json.loads(DASHBOARD.read_text())
    found = {
        f"panel {panel['title']!r} {target['refId']}": target["expr"]
        for panel in _panels(board["panels"])
        for target in panel.get("targets", [])
    }
    for variable in board["templating"]["list"]:
        query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        values = re.fullmatch(r"label_values\((?:(.+),\s*)?(\w+)\)", query)
        assert values is not None, f"variable {variable['name']}: {query}"
        found[f"variable {variable['name']}"] = values.group(1) or ""
    return found


def rule_expressions() -> dict[str, str]:
    rules = yaml.safe_load(RULES.read_text())
    return {
        f"rule {rule.get('alert') or rule.get('record')}": rule["expr"]
        for group in rules["groups"]
        for rule in group["rules"]
    }


async def exported(api: Api) -> tuple[set[str], set[str]]:
    """The sample names ``/metrics`` can give (each family by its type's suffixes, whether or
    not a labelled one has a sample yet), and the families."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{api.base_url}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}) as r,
    ):
        assert r.status == 200
        text = await r.text()
    names: set[str] = set()
    families: set[str] = set()
    for family in text_string_to_metric_families(text):
        if not family.name.endswith("_created"):  # the time a counter started, parsed as its own
            families.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES[family.type])
        names.update(sample.name for sample in family.samples)
    return names, families


def test_names_are_taken_out_of_promql() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, operation) (rate(a_bucket{x=~"b(c)|d", y!="{z}"}[5m])))'
        " > 0.5 and on (instance) group_left(pod) max without (le) (b_total offset 1h) / 1e3"
        " or vector(1) unless c:recorded[$__rate_interval:1m] + count_over_time(d[${window}])"
    )
    assert metric_names(expr) == {"a_bucket", "b_total", "c:recorded", "d"}


def test_the_files_are_what_prometheus_and_grafana_read() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert "./ops/prometheus:/etc/prometheus:ro" in services["prometheus"]["volumes"]
    assert services["prometheus"]["secrets"] == ["metrics_token"]
    assert "./ops/grafana/dashboards:/var/lib/grafana/dashboards:ro" in services["grafana"]["volumes"]
    assert "./ops/grafana/provisioning:/etc/grafana/provisioning:ro" in services["grafana"]["volumes"]
    config = yaml.safe_load(PROMETHEUS.read_text())
    assert config["rule_files"] == ["/etc/prometheus/rules.yml"]
    [job] = config["scrape_configs"]
    assert job["job_name"] == "gateway"
    assert job["authorization"] == {"credentials_file": "/run/secrets/metrics_token"}
    for name, expr in rule_expressions().items():
        assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}"), name
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert {"alert", "expr", "for", "labels", "annotations"} <= set(rule), rule
            assert rule["labels"]["severity"] in {"page", "ticket"}, rule
    board = json.loads(DASHBOARD.read_text())
    ids = [panel["id"] for panel in _panels(board["panels"])]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for panel in _panels(board["panels"]):
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "prometheus", panel["title"]


async def test_every_metric_of_the_dashboard_and_the_rules_is_exported(api: Api) -> None:
    names, families = await exported(api)
    expressions = {**dashboard_expressions(), **rule_expressions()}
    used: dict[str, set[str]] = {}
    for where, expr in expressions.items():
        found = metric_names(expr)
        assert found or where.startswith("variable"), f"{where} selects no metric: {expr}"
        for name in found:
            used.setdefault(name, set()).add(where)
    missing = {name: sorted(places) for name, places in used.items() if name not in names | SCRAPE_SERIES}
    print(f"{len(expressions)} expressions name {len(used)} metrics; {len(names)} exported")
    assert missing == {}, missing
    # The service levels' alerts are there.
    alerts = set(rule_expressions())
    for alert in (
        "LatencyP99High",
        "ErrorRateHigh",
        "DeliveryLagHigh",
        "BrokerUnavailable",
        "CassandraUnavailable",
    ):
        assert f"rule Gateway{alert}" in alerts
    # And the dashboard shows every metric the gateway exports.
    shown = {name for where, expr in dashboard_expressions().items() for name in metric_names(expr)}
    unshown = {
        family
        for family in families
        if family.startswith("gateway_") and not any(name.startswith(family) for name in shown)
    }
    assert unshown == set(), unshown


@pytest.mark.parametrize("expr", ["sum(rate(gateway_nope_total[5m]))", "gateway_nope"])
async def test_a_metric_the_gateway_does_not_export_is_caught(api: Api, expr: str) -> None:
    names, _ = await exported(api)
    assert metric_names(expr) - names - SCRAPE_SERIES == {
        "gateway_nope_total" if "total" in expr else "gateway_nope"
    }
