"""Apollo Client 4 (Node, tests/js/apollo.mjs) against the running gateway, as a frontend uses it."""

from __future__ import annotations

import json
import time

from tests.client import Api
from tests.js_runner import run_node


async def test_apollo_client_scenario(api: Api) -> None:
    alice = await api.sign_up("apolloa")
    bob = await api.sign_up("apollob")
    config = {
        "url": api.url,
        "alice": {"login": alice.login, "password": alice.password},
        "bob": {"login": bob.login, "password": bob.password},
    }
    started = time.monotonic()
    report = await run_node("apollo.mjs", json.dumps(config), needs="@apollo/client")
    print(f"Apollo scenario: {time.monotonic() - started:.1f}s; {json.dumps(report)}")

    assert report["signIn"] == {"login": alice.login, "userId": report["signIn"]["userId"], "token": True}
    assert report["mainView"] is True
    assert report["upload"] == {
        "size": report["upload"]["sentSize"], "sentSize": 8600, "downloadStatus": 200, "sameBytes": True,
    }
    # Every one of the nine queries reads back from the default cache as it was fetched...
    assert report["cache"] == {"readBack": 9, "missing": [], "changed": []}
    # ...which a cache that cannot tell entities apart does not manage (the check can fail).
    assert report["cacheWithoutIds"]["readBack"] < 9
    assert report["markRead"] == {
        "before": [2, 2], "talkPartner": 0, "talkPartnerConversation": 0, "conversation": 0,
    }
    assert report["subscription"] is not None
    assert report["subscription"]["sender"] == bob.login
    assert report["subscription"]["content"].startswith("live ")
    # APQ: the first use sends the hash alone, is told PersistedQueryNotFound, retries with
    # the query (POST); the next use is one hash-only GET.
    registration, hash_only = report["apq"]["registration"], report["apq"]["hashOnly"]
    assert [(r["method"], r["hasQuery"]) for r in registration] == [("GET", False), ("POST", True)]
    assert len({r["hash"] for r in registration}) == 1
    assert hash_only == [{**registration[0], "batch": None}]
    assert report["apq"]["sameData"] is True
    # BatchHttpLink: three queries, one request carrying an array of three.
    assert report["batch"]["requests"] == [{"method": "POST", "batch": 3, "hasQuery": True, "hash": None}]
    assert report["batch"]["answers"] == [True, True, True]
