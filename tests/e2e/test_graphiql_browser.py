"""GraphiQL in headless Chromium (tests/js/graphiql.mjs): the playground works from the gateway alone,
within its Content-Security-Policy."""

from __future__ import annotations

import json
import os
import shutil
import time
from urllib.parse import urlsplit

import pytest
from aiohttp import web

from gateway.server.app import SERVICES
from tests.support.client import Api
from tests.support.js_runner import run_node


async def test_graphiql_runs_its_example_a_query_shows_the_docs_and_receives_a_subscription(
    api: Api, app: web.Application
) -> None:
    from gateway.users.seed import seed_users

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail(
            "chromium is not installed: scripts/test installs Debian's chromium when root, "
            "otherwise `apt-get install chromium`"
        )
    # The example signs in a demo user.
    services = app[SERVICES]
    await seed_users(services.db, services.settings)
    viewer = await api.sign_up("graphiqla", firstname="Grace")
    sender = await api.sign_up("graphiqlb")
    config = {
        "url": api.url,
        "chromium": chromium,
        "noSandbox": os.geteuid() == 0,
        "viewer": {"login": viewer.login, "token": viewer.token},
        "sender": {"login": sender.login, "token": sender.token},
    }
    started = time.monotonic()
    report = await run_node("graphiql.mjs", json.dumps(config), needs="playwright-core")
    print(
        f"GraphiQL in Chromium: {time.monotonic() - started:.1f}s, {len(report['requests'])} requests; "
        f"{json.dumps(report)[:3000]}"
    )

    steps = report["steps"]
    assert steps["example"] == {
        "opensWithExample": True,
        "signedIn": "alice",
        "me": "alice",
        "errors": [],
        "atMs": steps["example"]["atMs"],
    }
    assert steps["headers"]["typed"] is True
    assert steps["query"]["typed"] == "{ me { id user { login firstname } } }"
    assert steps["query"]["login"] == viewer.login and steps["query"]["errors"] is None
    assert "Query" in steps["docs"]["text"] and "node" in steps["docs"]["text"]
    assert steps["subscription"]["sender"] == sender.login
    assert steps["subscription"]["content"].startswith("from the test ")
    assert report["pageErrors"] == []
    assert report["cspViolations"] == []
    # The page, its scripts and styles, introspection, queries and the WebSocket: all from the gateway.
    assert report["foreign"] == []
    gateway = urlsplit(api.url)
    hosts = {(urlsplit(u).hostname, urlsplit(u).port) for u in report["requests"]}
    assert hosts == {(gateway.hostname, gateway.port)}
    assert any(u.startswith("ws://") for u in report["requests"])
    assert any("/graphql/static/graphiql.min.js" in u for u in report["requests"])
