"""Reading the gateway's /metrics."""

from __future__ import annotations

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.support.client import Api
from tests.support.processes import METRICS_TOKEN

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(api: Api, *, fresh_connection: bool = False) -> Samples:
    connector = aiohttp.TCPConnector(force_close=True) if fresh_connection else None
    # The token is what a real cluster's /metrics wants; the development node's ignores it.
    headers = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    async with (
        aiohttp.ClientSession(connector=connector) as http,
        http.get(f"{api.base_url}/metrics", headers=headers) as r,
    ):
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=")
        text = await r.text()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)
