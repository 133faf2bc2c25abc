"""Byte-level mutation of valid inputs: HTTP requests as sent on the wire, protocol messages.

Each mutator takes the bytes of something valid and returns a damaged copy; :func:`mutate`
applies one to three of them, chosen at random, and names what it did, so a failure report
says which damage found it. The HTTP-aware ones (headers repeated, content types swapped,
lengths that lie, smuggling pairs of framing headers) act on a request's head and leave the
body; the blind ones (bits flipped, bytes inserted or deleted, truncation, splicing with
another input) act anywhere.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

#: Bytes that mean something to a parser somewhere.
INTERESTING = (
    b"\x00",
    b"\r",
    b"\n",
    b"\r\n",
    b"\r\n\r\n",
    b":",
    b" ",
    b"\t",
    b"\xff",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b'"',
    b"\\",
    b"\\u0000",
    b"\\ud800",
    b"{",
    b"}",
    b"[",
    b"]",
    b"%",
    b"%00",
    b"--",
    b"\xe2\x82\xac",
    b"A" * 9000,
    b"9" * 40,
    b"-1",
    b"1e309",
    b"{" * 200,
    b"[" * 200,
)

CONTENT_TYPES = (
    b"application/json",
    b"application/json; charset=utf-16",
    b"application/json; charset=latin-1",
    b"application/graphql",
    b"application/graphql-response+json",
    b"application/x-www-form-urlencoded",
    b"multipart/form-data",
    b"multipart/form-data; boundary=",
    b'multipart/form-data; boundary="b"; boundary=c',
    b"multipart/mixed; boundary=b",
    b"text/plain",
    b"text/html",
    b"*/*",
    b"",
    b";;;",
    b"application/json, text/html",
    b"\xff\xfe",
)

LENGTHS = (b"0", b"1", b"-1", b"99999999999999999999", b"1e3", b"0x10", b" 5", b"5, 5", b"")

HEADERS = (
    b"Transfer-Encoding: chunked",
    b"Transfer-Encoding: gzip, chunked",
    b"Transfer-Encoding: identity",
    b"Content-Encoding: gzip",
    b"Content-Encoding: br",
    b"Expect: 100-continue",
    b"Connection: upgrade",
    b"Upgrade: websocket",
    b"Upgrade: h2c",
    b"Authorization: Bearer ",
    b"Authorization: Basic Zm9vOmJhcg==",
    b"Authorization: Bearer " + b"x" * 5000,
    b"X-Forwarded-For: 1.2.3.4, ::1, garbage",
    b"X-Request-Id: " + b"r" * 300,
    b"traceparent: 00-zz-zz-zz",
    b"Origin: null",
    b"Origin: https://evil.example",
    b"Accept: application/graphql-response+json",
    b"Accept: text/html",
    b"Accept-Encoding: gzip, br",
    b"Range: bytes=0-0,5-9",
    b"If-None-Match: *",
    b"GraphQL-Preflight: 1",
    b"Cookie: " + b"c=1; " * 500,
)

METHODS = (
    b"GET",
    b"POST",
    b"PUT",
    b"DELETE",
    b"PATCH",
    b"OPTIONS",
    b"HEAD",
    b"TRACE",
    b"CONNECT",
    b"get",
    b"P\x00ST",
)

Mutator = Callable[[random.Random, bytes, Sequence[bytes]], bytes]


def _split(request: bytes) -> tuple[list[bytes], bytes]:
    head, separator, body = request.partition(b"\r\n\r\n")
    return head.split(b"\r\n"), body if separator else b""


def _join(lines: list[bytes], body: bytes) -> bytes:
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def flip_bits(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    if not data:
        return data
    damaged = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
    return bytes(damaged)


def insert_bytes(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    at = rng.randint(0, len(data))
    piece = rng.choice(INTERESTING) if rng.random() < 0.7 else rng.randbytes(rng.randint(1, 64))
    return data[:at] + piece + data[at:]


def delete_bytes(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    if not data:
        return data
    start = rng.randrange(len(data))
    return data[:start] + data[start + rng.randint(1, 64) :]


def truncate(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    return data[: rng.randint(0, len(data))]


def splice(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    other = rng.choice(others) if others else data
    return data[: rng.randint(0, len(data))] + other[rng.randint(0, len(other)) :]


def duplicate_header(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    lines, body = _split(data)
    if len(lines) < 2:
        return data
    index = rng.randrange(1, len(lines))
    copy = lines[index]
    if rng.random() < 0.5 and b":" in copy:
        name, _, _ = copy.partition(b":")
        copy = name + b": " + rng.choice((b"", b"x", b"0", b"application/json", rng.randbytes(8)))
    lines.insert(rng.randrange(1, len(lines) + 1), copy)
    return _join(lines, body)


def _set_header(lines: list[bytes], name: bytes, value: bytes) -> list[bytes]:
    kept = [line for line in lines if not line.lower().startswith(name.lower() + b":")]
    return [*kept, name + b": " + value]


def swap_content_type(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    lines, body = _split(data)
    return _join(_set_header(lines, b"Content-Type", rng.choice(CONTENT_TYPES)), body)


def lie_about_length(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    lines, body = _split(data)
    choices = (
        *LENGTHS,
        str(max(0, len(body) - rng.randint(1, 50))).encode(),
        str(len(body) + rng.randint(1, 5000)).encode(),
    )
    return _join(_set_header(lines, b"Content-Length", rng.choice(choices)), body)


def add_header(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    lines, body = _split(data)
    lines.insert(rng.randrange(1, len(lines) + 1) if len(lines) > 1 else 1, rng.choice(HEADERS))
    return _join(lines, body)


def fold_header(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    """Obsolete line folding, or blanks where none belong."""
    lines, body = _split(data)
    if len(lines) < 2:
        return data
    index = rng.randrange(1, len(lines))
    name, _, value = lines[index].partition(b":")
    lines[index] = rng.choice(
        (name + b" :" + value, name + b":\r\n " + value, b" " + lines[index], name + b"::" + value)
    )
    return _join(lines, body)


def change_method(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    lines, body = _split(data)
    parts = lines[0].split(b" ")
    parts[0] = rng.choice(METHODS)
    lines[0] = b" ".join(parts)
    return _join(lines, body)


def change_target(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    lines, body = _split(data)
    parts = lines[0].split(b" ")
    if len(parts) < 3:
        return data
    parts[1] = rng.choice(
        (
            b"/graphql/../graphql",
            b"//graphql",
            b"/graphql%00",
            b"/graphql?" + b"a=1&" * 2000,
            b"/graphql?query=%7B",
            b"/graphql?query={__typename}&query={__typename}",
            b"/attachments/../../etc/passwd",
            b"/graphql/static/../../../settings/__init__.py",
            b"*",
            b"http://evil.example/graphql",
            b"/" + b"a" * 9000,
        )
    )
    lines[0] = b" ".join(parts)
    return _join(lines, body)


def change_version(rng: random.Random, data: bytes, _others: Sequence[bytes]) -> bytes:
    lines, body = _split(data)
    parts = lines[0].split(b" ")
    parts[-1] = rng.choice((b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.1x", b"HTTP/0.9", b"HTTP/9.9", b""))
    lines[0] = b" ".join(parts)
    return _join(lines, body)


BLIND: tuple[Mutator, ...] = (flip_bits, insert_bytes, delete_bytes, truncate, splice)
HTTP_AWARE: tuple[Mutator, ...] = (
    duplicate_header,
    swap_content_type,
    lie_about_length,
    add_header,
    fold_header,
    change_method,
    change_target,
    change_version,
)


def mutate(
    rng: random.Random, data: bytes, others: Sequence[bytes], mutators: Sequence[Mutator]
) -> tuple[bytes, list[str]]:
    """``data`` damaged by one to three of ``mutators``, and their names in order."""
    names = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        mutator = rng.choice(mutators)
        data = mutator(rng, data, others)
        names.append(mutator.__name__)
    return data, names
