"""Apollo Client 4 (Node, tests/js/apollo.mjs) against the running gateway, as a frontend uses it."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from pathlib import Path

from gateway.mail.attachment_store import CHUNK_SIZE
from tests.support.client import Api
from tests.support.js_runner import run_node

#: Two chunks; the ranged download asks for 200 bytes across the boundary between them.
FILE_SIZE = CHUNK_SIZE + 50_000
RANGE = (CHUNK_SIZE - 100, CHUNK_SIZE + 99)


async def test_apollo_client_scenario(api: Api, tmp_path: Path) -> None:
    alice = await api.sign_up("apolloa")
    bob = await api.sign_up("apollob")
    content = os.urandom(FILE_SIZE)
    upload = tmp_path / "clip.bin"
    upload.write_bytes(content)
    config = {
        "url": api.url,
        "alice": {"login": alice.login, "password": alice.password},
        "bob": {"login": bob.login, "password": bob.password},
        "file": {"path": str(upload), "range": RANGE},
    }
    started = time.monotonic()
    report = await run_node("apollo.mjs", json.dumps(config), needs="@apollo/client")
    ranged = report["upload"]["ranged"]
    shown = {**report, "upload": {**report["upload"], "ranged": {**ranged, "bytes": "..."}}}
    print(f"Apollo scenario: {time.monotonic() - started:.1f}s; {json.dumps(shown)}")

    assert report["signIn"] == {"login": alice.login, "userId": report["signIn"]["userId"], "token": True}
    assert report["mainView"] is True
    first, last = RANGE
    assert report["upload"] == {
        "size": FILE_SIZE,
        "urlExpiresInFuture": True,
        # The range with the bearer token: 206 and exactly those bytes, from both chunks.
        "ranged": {
            "status": 206,
            "contentRange": f"bytes {first}-{last}/{FILE_SIZE}",
            "bytes": ranged["bytes"],
        },
        # The signed url with no Authorization header: the whole file...
        "signed": {"status": 200, "length": FILE_SIZE, "sha256": hashlib.sha256(content).hexdigest()},
        # ...which the same URL without its signature does not give.
        "withoutSignatureOrToken": 401,
    }
    assert base64.b64decode(ranged["bytes"]) == content[first : last + 1]
    # Every one of the nine queries reads back from the default cache as it was fetched...
    assert report["cache"] == {"readBack": 9, "missing": [], "changed": []}
    # ...which a cache that cannot tell entities apart does not manage (the check can fail).
    assert report["cacheWithoutIds"]["readBack"] < 9
    assert report["markRead"] == {
        "before": [2, 2],
        "talkPartner": 0,
        "talkPartnerConversation": 0,
        "conversation": 0,
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
    # @defer: the header first (the messages still streaming), then everything.
    first, *_, last = report["defer"]
    assert first["dataState"] == "streaming" and first["messages"] is None
    assert last["dataState"] == "complete"
    assert {"one", "two"} <= set(last["messages"])
