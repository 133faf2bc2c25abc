"""What the gateway shows of itself: the playground page's security headers, and introspection
and ``/metrics``, open on the embedded development node and closed by default on a real cluster.

A contact point makes a real cluster to the gateway, whoever serves it: these tests name the
embedded node's own address (``127.0.0.1``) as one.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import aiohttp
import pytest

from gateway.server.app import SERVICES
from tests.conftest import ServerFactory
from tests.support.client import Api

SCHEMA_QUERY = "{ __schema { queryType { name } } }"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


async def get(url: str, **headers: str) -> tuple[int, Any, str]:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as response:
        return response.status, response.headers.copy(), await response.text()


async def introspects(api: Api) -> bool:
    response = await api.call(SCHEMA_QUERY)
    if response.errors:
        assert set(response.codes) == {"GRAPHQL_VALIDATION_FAILED"}, response
        return False
    return response.result == {"__schema": {"queryType": {"name": "Query"}}}


async def test_the_playground_page_carries_its_security_headers(api: Api) -> None:
    status, headers, page = await get(api.url, Accept="text/html")
    assert status == 200 and "graphiql" in page.lower()
    policy = {
        part.split()[0]: part.split()[1:]
        for part in headers["Content-Security-Policy"].split(";")
        if part.strip()
    }
    assert policy["default-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert policy["object-src"] == ["'none'"]
    assert "'unsafe-inline'" not in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"]
    # Each inline script of the page is allowed by its hash, and nothing else inline is.
    inline = _INLINE_SCRIPT.findall(page)
    assert inline
    for script in inline:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy["script-src"]
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    asset = re.search(r'src="(/graphql/static/graphiql\.min\.js\?v=[0-9a-f]+)"', page)
    assert asset is not None
    status, headers, _ = await get(api.base_url + asset.group(1))
    assert status == 200 and headers["X-Content-Type-Options"] == "nosniff"


async def test_a_real_cluster_closes_introspection_and_metrics_by_default(make_server: ServerFactory) -> None:
    cluster, _ = await make_server(contact_points=("127.0.0.1",), introspection=None)
    assert not await introspects(cluster)
    assert (await cluster.ok("{ __typename }")) == {"__typename": "Query"}
    status, _, _ = await get(f"{cluster.base_url}/metrics")
    assert status == 404

    token = "m" + "3f9a" * 12
    scraped, _ = await make_server(contact_points=("127.0.0.1",), introspection=True, metrics_token=token)
    assert await introspects(scraped)
    for header in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
        status, headers, _ = await get(f"{scraped.base_url}/metrics", **header)
        assert status == 401, header
        assert headers["WWW-Authenticate"] == 'Bearer realm="metrics"'
    status, headers, text = await get(f"{scraped.base_url}/metrics", Authorization=f"Bearer {token}")
    assert status == 200 and "gateway_http_requests_total" in text


async def test_the_development_node_opens_both_by_default(make_server: ServerFactory) -> None:
    local, app = await make_server(introspection=None)
    if not app[SERVICES].settings.embedded:
        pytest.skip("the suite runs against a real cluster: there is no development node")
    assert await introspects(local)
    status, _, text = await get(f"{local.base_url}/metrics")
    assert status == 200 and "gateway_http_requests_total" in text
