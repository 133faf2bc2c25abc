"""Persisted queries over HTTP: the extension's body, a POST, the error codes of an answer."""

from __future__ import annotations

import hashlib
from typing import Any

import aiohttp

from tests.support.client import Api

GRJ = "application/graphql-response+json"


def sha(document: str) -> str:
    return hashlib.sha256(document.encode()).hexdigest()


def persisted(document: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": sha(document)}}


async def post(api: Api, body: dict[str, Any], accept: str = GRJ) -> tuple[int, dict[str, Any]]:
    headers = {"Accept": accept}
    async with aiohttp.ClientSession() as http, http.post(api.url, json=body, headers=headers) as r:
        return r.status, await r.json(content_type=None)


def codes(result: dict[str, Any]) -> list[str]:
    return [e["extensions"]["code"] for e in result.get("errors", [])]
