"""Fuzzing the WebSocket: damaged protocol messages, and frames no client should send.

Messages: valid sequences of both protocols (``connection_init`` with a token, ``subscribe``
or ``start`` of a subscription and of a query, ``ping``, ``complete``/``stop``), with one or
more messages damaged byte by byte (``tests/support/fuzz/mutate.py``'s blind mutators: sent as text
when they still decode, else as binary) or in their JSON (a value, anywhere, replaced by
another of any type or size). Frames: after the handshake on a raw socket, frames with
reserved opcodes, RSV bits, no mask, lengths that lie or overflow, fragments interleaved
with control frames, continuations without a start, oversized or fragmented control frames,
odd close codes, text that is not UTF-8, ping floods (``tests/support/fuzz/frames.py``).

Whatever arrives, the gateway must never close a socket with 1011 (its internal error),
never send ``INTERNAL_SERVER_ERROR``, answer or close within ``HANG_GUARD`` seconds, write no
traceback or error to its log, and still serve afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections import Counter
from typing import Any

import aiohttp

from tests.support.client import Account, Api
from tests.support.fuzz.budget import HANG_GUARD, Budget
from tests.support.fuzz.frames import CLOSE, HANDSHAKE, TEXT, close_code, frame, odd_frames, server_frames
from tests.support.fuzz.mutate import BLIND, mutate
from tests.support.fuzz.watch import watching
from tests.support.fuzz.wire import address
from tests.support.ws_protocol import LEGACY_WS, TRANSPORT_WS

BRIEF_MESSAGES = 150
BRIEF_FRAMES = 150
CONCURRENCY = 8
#: Seconds of silence after which a socket has said all it will about a case.
QUIET = 0.3
SUBSCRIPTION = "subscription { messageReceived { id content sender { login } } }"
QUERY = "query { me { user { login } } rooms(first: 2) { nodes { name } } }"

JSON_VALUES: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    2**70,
    1e308,
    "",
    "x" * 100_000,
    "\ud800",
    "\u0000",
    [],
    {},
    [[[[[[[[[[[]]]]]]]]]]],
    {"a": {"b": {"c": {}}}},
    "subscribe",
    "connection_init",
    "1",
)


def sequence(protocol: str, token: str) -> list[dict[str, Any]]:
    init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
    if protocol == TRANSPORT_WS:
        return [
            init,
            {"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}},
            {"id": "2", "type": "subscribe", "payload": {"query": QUERY, "variables": {}}},
            {"type": "ping", "payload": {}},
            {"id": "1", "type": "complete"},
        ]
    return [
        init,
        {"id": "1", "type": "start", "payload": {"query": SUBSCRIPTION}},
        {"id": "2", "type": "start", "payload": {"query": QUERY}},
        {"id": "1", "type": "stop"},
        {"type": "connection_terminate"},
    ]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def replace_value(rng: random.Random, message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with the value at a random place (the whole message too) replaced."""
    path = rng.choice(_paths(message))
    replacement = rng.choice(JSON_VALUES)
    if not path:
        return replacement if isinstance(replacement, dict) else {"payload": replacement}
    copy = json.loads(json.dumps(message))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = replacement
    return copy


def damaged_sequence(rng: random.Random, protocol: str, token: str) -> tuple[list[bytes], list[str]]:
    messages = sequence(protocol, token)[: rng.randint(1, 5)]
    texts: list[bytes] = []
    damage: list[str] = []
    for index, message in enumerate(messages):
        if rng.random() < 0.4 or (index == len(messages) - 1 and not damage):
            if rng.random() < 0.5:
                damage.append(f"json@{index}")
                message = replace_value(rng, message)
                texts.append(json.dumps(message).encode("utf-8", "surrogatepass"))
            else:
                data, names = mutate(rng, json.dumps(message).encode(), [], BLIND)
                damage.append(f"{'+'.join(names)}@{index}")
                texts.append(data)
        else:
            texts.append(json.dumps(message).encode())
    return texts, damage


async def message_case(api: Api, protocol: str, texts: list[bytes]) -> tuple[int | None, list[str]]:
    """Send ``texts`` on a socket; the server's close code (None when the socket was still
    open once the server fell quiet) and what was wrong."""
    problems: list[str] = []
    quiet = False
    url = api.url.replace("http://", "ws://", 1)
    async with aiohttp.ClientSession() as http, http.ws_connect(url, protocols=[protocol]) as ws:
        try:
            async with asyncio.timeout(HANG_GUARD):
                for text in texts:
                    try:
                        await ws.send_str(text.decode("utf-8"))
                    except UnicodeDecodeError:
                        await ws.send_bytes(text)
                    except ConnectionResetError:
                        break
                while True:
                    try:
                        message = await ws.receive(timeout=QUIET)
                    except TimeoutError:
                        quiet = True  # still open: the client closes it
                        break
                    if message.type in (
                        aiohttp.WSMsgType.CLOSE,
                        aiohttp.WSMsgType.CLOSED,
                        aiohttp.WSMsgType.CLOSING,
                    ):
                        break
                    if message.type == aiohttp.WSMsgType.TEXT and "INTERNAL_SERVER_ERROR" in message.data:
                        problems.append(f"INTERNAL_SERVER_ERROR: {message.data[:300]}")
        except TimeoutError:
            problems.append("no end to the exchange within the guard")
        code = None if quiet else ws.close_code
    if code == 1011:
        problems.append("closed with 1011 (internal error)")
    return code, problems


async def frame_case(
    host: str, port: int, protocol: str, frames: list[bytes], init: bytes | None
) -> tuple[list[int | None], list[str]]:
    """A raw socket: handshake, ``init`` if given, then ``frames`` and end of input; the close
    codes the server sent, and what was wrong."""
    problems: list[str] = []
    reader, writer = await asyncio.open_connection(host, port)
    received = bytearray()
    try:
        writer.write(HANDSHAKE.format(protocol=protocol).encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANG_GUARD)
        if not head.startswith(b"HTTP/1.1 101"):
            return [], [f"handshake answered {head[:40]!r}"]
        with contextlib.suppress(ConnectionError):
            if init is not None:
                writer.write(init)
            for data in frames:
                writer.write(data)
            await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        try:
            async with asyncio.timeout(HANG_GUARD):
                with contextlib.suppress(ConnectionError):
                    while chunk := await reader.read(65536):
                        received += chunk
        except TimeoutError:
            problems.append("still open after the guard")
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    sent = server_frames(bytes(received))
    codes = [close_code(payload) for opcode, payload in sent if opcode == CLOSE]
    if 1011 in codes:
        problems.append("closed with 1011 (internal error)")
    if any(b"INTERNAL_SERVER_ERROR" in payload for _, payload in sent):
        problems.append("INTERNAL_SERVER_ERROR sent")
    return codes, problems


async def _still_serving(api: Api, account: Account) -> None:
    result = await api.ok("{ me { user { login } } }", token=account.token)
    assert result["me"]["user"]["login"] == account.login


async def test_damaged_protocol_messages_never_fail_the_server(api: Api) -> None:
    account = await api.sign_up("fuzzws")
    budget = Budget(brief=BRIEF_MESSAGES)
    rng = budget.rng()
    closes: Counter[str] = Counter()
    failures: list[str] = []
    with watching() as log:
        while len(failures) < 20:
            cases: list[tuple[str, list[bytes], list[str]]] = []
            while len(cases) < CONCURRENCY and budget.more():
                protocol = rng.choice((TRANSPORT_WS, LEGACY_WS))
                cases.append((protocol, *damaged_sequence(rng, protocol, account.token)))
            if not cases:
                break
            results = await asyncio.gather(
                *(message_case(api, protocol, texts) for protocol, texts, _ in cases)
            )
            logged = log.take()
            for (protocol, texts, damage), (code, problems) in zip(cases, results, strict=True):
                closes[str(code)] += 1
                failures += [f"{problem} ({protocol}, {damage}): {texts!r:.600}" for problem in problems]
            if logged:
                round_of = "\n  ".join(f"{p} {d}: {t!r:.300}" for p, t, d in cases)
                failures.append(f"log: {logged[:5]}\n  in the round of:\n  {round_of}")
    await _still_serving(api, account)
    print(f"\nWebSocket message fuzz: {budget.describe()}; close codes {dict(closes.most_common())}")
    print(f"WebSocket message fuzz: {log.known} known log records let through (tests/support/fuzz/watch.py)")
    assert not failures, "\n\n".join(failures[:10])


async def test_frames_no_client_should_send_never_fail_the_server(api: Api) -> None:
    account = await api.sign_up("fuzzframe")
    host, port = address(api.base_url)
    budget = Budget(brief=BRIEF_FRAMES)
    rng = budget.rng()
    kinds: Counter[str] = Counter()
    closes: Counter[str] = Counter()
    failures: list[str] = []
    valid = [json.dumps(message).encode() for message in sequence(TRANSPORT_WS, account.token)]
    with watching() as log:
        while len(failures) < 20:
            cases: list[tuple[str, list[bytes], bytes | None, str]] = []
            while len(cases) < CONCURRENCY and budget.more():
                protocol = rng.choice((TRANSPORT_WS, LEGACY_WS, "graphql-transport-ws, graphql-ws", "x"))
                init = frame(TEXT, valid[0]) if rng.random() < 0.5 else None
                frames, kind = odd_frames(rng, rng.choice(valid))
                cases.append((protocol, frames, init, kind))
            if not cases:
                break
            results = await asyncio.gather(*(frame_case(host, port, p, f, i) for p, f, i, _ in cases))
            logged = log.take()
            for (protocol, frames, _, kind), (codes, problems) in zip(cases, results, strict=True):
                kinds[kind] += 1
                closes.update(str(code) for code in codes or [None])
                failures += [f"{problem} ({protocol}, {kind}): {frames!r:.400}" for problem in problems]
            if logged:
                round_of = "\n  ".join(f"{p} {k}: {f!r:.200}" for p, f, _, k in cases)
                failures.append(f"log: {logged[:5]}\n  in the round of:\n  {round_of}")
    await _still_serving(api, account)
    print(f"\nWebSocket frame fuzz: {budget.describe()}; kinds {dict(kinds.most_common())}")
    print(f"WebSocket frame fuzz: close codes {dict(closes.most_common())}")
    print(f"WebSocket frame fuzz: {log.known} known log records let through (tests/support/fuzz/watch.py)")
    assert not failures, "\n\n".join(failures[:10])
