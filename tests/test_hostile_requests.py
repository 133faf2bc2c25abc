"""The hostile-request corpus (``tests/hostile/corpus.py``) against the running gateway.

Each request gets its documented status and ``extensions.code``, none is
answered with a 5xx or an uncoded error, and ``/readyz`` still answers 200
after the whole corpus.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from tests.client import Api
from tests.hostile.corpus import CORPUS, GRJ, Hostile


async def send(api: Api, case: Hostile) -> tuple[int, Any]:
    headers = {"Accept": GRJ, **case.headers}
    if case.content_type is not None:
        headers["Content-Type"] = case.content_type
    url = api.url + (f"?{case.query_string}" if case.query_string else "")
    async with (
        aiohttp.ClientSession(skip_auto_headers=["Content-Type"]) as http,
        http.request(case.method, url, data=case.body, headers=headers) as response,
    ):
        text = await response.text(errors="replace")
        try:
            import json

            return response.status, json.loads(text)
        except ValueError:
            return response.status, text


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
async def test_a_hostile_request_gets_its_documented_answer(api: Api, case: Hostile) -> None:
    status, body = await send(api, case)
    assert isinstance(body, (dict, list)), (status, body)
    results = body if case.batch else [body]
    assert isinstance(body, list) == case.batch, body
    for result in results:
        assert isinstance(result, dict), result
        if status >= 400:
            assert "data" not in result, result
        codes = [error.get("extensions", {}).get("code") for error in result["errors"]]
        assert codes and all(code == case.code for code in codes), (status, result)
    assert status == case.status, (status, body)


async def test_readyz_answers_after_the_corpus(api: Api) -> None:
    for case in CORPUS:
        await send(api, case)
    async with aiohttp.ClientSession() as http, http.get(api.base_url + "/readyz") as response:
        assert response.status == 200
        assert (await response.json())["status"] == "ready"
