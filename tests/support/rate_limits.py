"""Helpers of the rate-limit tests."""

from __future__ import annotations

from typing import Any

from tests.support.client import Api, Response

SIGN_IN = "mutation($l: String!, $p: String!) { signIn(login: $l, password: $p) { token user { login } } }"


def retry_after(response: Response) -> int:
    """The retryAfter of the single RATE_LIMITED error of ``response``."""
    assert response.codes == ["RATE_LIMITED"], response
    seconds = response.errors[0]["extensions"]["retryAfter"]
    assert isinstance(seconds, int) and seconds >= 1
    return seconds


async def sign_in(api: Api, login: str, password: str, **kwargs: Any) -> Response:
    return await api.call(SIGN_IN, {"l": login, "p": password}, **kwargs)
