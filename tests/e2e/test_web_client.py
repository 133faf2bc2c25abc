"""The reference web client (examples/web) built and driven in headless Chromium
(tests/js/webclient.mjs): two people chat, one goes offline and comes back to exactly the
messages it missed; rooms, the mailbox and the blog work; a screenshot of each screen is kept."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.db.timeline import REPLAY_MAX
from tests.support.client import Api, unique_login
from tests.support.js_runner import run_node
from tests.support.rooms import create_room

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "examples" / "web"
GENERATED = WEB / "src" / "gql"
#: Screenshots of the last run, by scenario (ignored by git).
ARTIFACTS = ROOT / "artifacts" / "web-client"
#: The build's inputs, as `dist/.inputs` records them: a build is reused while they are unchanged.
SKIPPED = {"node_modules", "dist"}


def _digest(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for file in sorted(files):
        digest.update(str(file.relative_to(ROOT)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def _inputs() -> str:
    """The digest of the build's inputs: examples/web but its node_modules and dist, and the schema."""
    files = [ROOT / "schema.graphql"]
    for entry in WEB.iterdir():
        if entry.is_file():
            files.append(entry)
        elif entry.name not in SKIPPED:
            files.extend(f for f in entry.rglob("*") if f.is_file())
    return _digest(files)


def _generated() -> str:
    return _digest(list(GENERATED.rglob("*.ts")))


def _read(file: Path) -> str | None:
    return file.read_text().strip() if file.is_file() else None


async def _run(*command: str) -> None:
    process = await asyncio.create_subprocess_exec(
        *command, cwd=WEB, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(process.communicate(), timeout=600)
    assert process.returncode == 0, f"{' '.join(command)} failed:\n{output.decode()[-4000:]}"


async def build_web_client() -> bool:
    """``npm ci`` (when package-lock.json changed; scripts/test does it first) and ``npm run build``
    (codegen, tsc, vite build) into examples/web/dist when an input changed; whether it was built now.
    The build regenerates src/gql from schema.graphql: a checked-in copy that differs fails."""
    if shutil.which("npm") is None:
        pytest.fail("npm (Node 20.19 or newer) is not on PATH: the web client is built with it")
    installed = WEB / "node_modules" / ".installed"
    lock = hashlib.sha256((WEB / "package-lock.json").read_bytes()).hexdigest()
    if await asyncio.to_thread(_read, installed) != lock:
        await _run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
        await asyncio.to_thread(installed.write_text, lock + "\n")
    stamp = WEB / "dist" / ".inputs"
    inputs = await asyncio.to_thread(_inputs)
    if await asyncio.to_thread(_read, stamp) == inputs:
        return False
    checked_in = await asyncio.to_thread(_generated)
    await _run("npm", "run", "build")
    assert await asyncio.to_thread(_generated) == checked_in, (
        "examples/web/src/gql was stale: `npm run build` regenerated it from schema.graphql; commit it"
    )
    await asyncio.to_thread(stamp.write_text, inputs + "\n")
    return True


@contextlib.asynccontextmanager
async def preview(gateway: str) -> AsyncIterator[str]:
    """``vite preview`` of the build on a free port, forwarding the API to ``gateway`` as
    examples/web/vite.config.ts says; its URL while the block runs."""
    process = await asyncio.create_subprocess_exec(
        str(WEB / "node_modules" / ".bin" / "vite"),
        "preview",
        "--port",
        "0",
        cwd=WEB,
        env={**os.environ, "GATEWAY_URL": gateway, "NO_COLOR": "1"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    output = process.stdout

    async def drain() -> None:  # proxy errors, if any: read, so that vite never blocks on the pipe
        while await output.readline():
            pass

    draining: asyncio.Task[None] | None = None
    try:
        seen = b""
        while (found := re.search(rb"Local:\s+(http://\S+)", seen)) is None:
            line = await asyncio.wait_for(output.readline(), timeout=60)
            assert line, f"vite preview ended: {seen.decode()}"
            seen += line
        draining = asyncio.create_task(drain())
        yield found.group(1).decode()
    finally:
        process.terminate()
        await process.wait()
        if draining is not None:
            await draining


async def drive(api: Api, scenario: str, **config: object) -> dict[str, Any]:
    """Builds the app (or reuses the build), serves it beside ``api``'s gateway and runs
    tests/js/webclient.mjs's ``scenario`` in Chromium; its report. Screenshots go to
    artifacts/web-client/<scenario>/."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail(
            "chromium is not installed: scripts/test installs Debian's chromium when root, "
            "otherwise `apt-get install chromium`"
        )
    started = time.monotonic()
    built = await build_web_client()
    build_seconds = time.monotonic() - started
    artifacts = ARTIFACTS / scenario
    await asyncio.to_thread(shutil.rmtree, artifacts, True)
    await asyncio.to_thread(artifacts.mkdir, parents=True)
    browsing = time.monotonic()
    async with preview(api.base_url) as app:
        settings = {
            **config,
            "scenario": scenario,
            "app": app,
            "url": api.url,
            "chromium": chromium,
            "noSandbox": os.geteuid() == 0,
            "artifacts": str(artifacts),
        }
        report: dict[str, Any] = await run_node(
            "webclient.mjs", json.dumps(settings), needs="playwright-core"
        )
    print(
        f"web client, {scenario}: build {'made' if built else 'reused'} in {build_seconds:.1f}s, "
        f"browser {time.monotonic() - browsing:.1f}s; screenshots in {artifacts}: "
        f"{', '.join(sorted(report['screenshots']))}; {json.dumps(report)[:3000]}"
    )
    sizes = await asyncio.to_thread(lambda: [Path(f).stat().st_size for f in report["screenshots"].values()])
    assert all(sizes)
    assert report["pageErrors"] == [] and report["consoleErrors"] == []
    return report


async def _message_ids(api: Api, token: str, partner: str) -> dict[str, str]:
    data = await api.ok(
        "query($w: String!) { me { conversation(with: $w) { messages { nodes { id content } } } } }",
        {"w": partner},
        token=token,
    )
    return {m["content"]: m["id"] for m in data["me"]["conversation"]["messages"]["nodes"]}


async def test_the_web_client_chats_resumes_after_going_offline_and_shows_every_screen(api: Api) -> None:
    bob = await api.sign_up("webbob", firstname="Bob")
    alice = {
        "login": unique_login("webalice"),
        "password": "a-web-password",
        "firstname": "Alice",
        "lastname": "Web",
        "email": "alice@example.com",
    }
    room = await create_room(api, bob)
    title = f"Front page {uuid.uuid4().hex[:8]}"
    await api.ok(
        "mutation($input: PostInput!) { publishPost(input: $input) { id } }",
        {"input": {"slug": f"web-{uuid.uuid4().hex[:12]}", "title": title, "body": "Hi.", "tags": ["web"]}},
        token=bob.token,
    )
    report = await drive(
        api,
        "tour",
        alice=alice,
        bob={"login": bob.login, "password": bob.password},
        room=room,
        post=title,
        file={"name": "minutes.txt", "text": "Minutes of the meeting.\n" * 200},
    )

    steps = report["steps"]
    assert bob.login in steps["mainView"]["row"] and steps["mainView"]["total"] == "1"
    assert steps["typing"]["shown"] == "Alice is typing…"
    assert steps["answered"]["alice"] == steps["answered"]["bob"] == ["hello 1", "hi"]
    # Offline: the socket went, and bob saw alice's last-seen time.
    assert steps["offline"]["socketsClosed"] >= 1 and "last seen" in steps["offline"]["bobSees"]
    assert steps["back"]["whileOffline"] == ["hello 1", "hi"]
    # Back online: exactly the missed messages, in order, once each ...
    assert steps["back"]["after"] == ["hello 1", "hi", "missed 1", "missed 2", "missed 3"]
    # ... because the subscription resumed from the last message alice had received.
    ids = await _message_ids(api, bob.token, alice["login"])
    resubscribed = steps["back"]["resubscribed"]
    assert resubscribed and {s["after"] for s in resubscribed} == {ids["hi"]}, resubscribed

    assert steps["room"]["alice"][-1] == "welcome to the room"
    assert steps["mail"]["status"] == 200 and steps["mail"]["sha256"] == steps["mail"]["expected"]
    assert "sig=" in steps["mail"]["href"]
    assert steps["blog"]["titles"][0] == title
    assert sorted(report["screenshots"]) == ["blog", "chats", "conversation", "mail", "rooms", "sign-in"]


async def test_the_web_client_missing_more_than_the_replay_shows_the_newest_page_then_goes_live(
    api: Api,
) -> None:
    alice, bob = await api.sign_up("webalice"), await api.sign_up("webbob")
    held = await api.ok(
        'mutation($to: String!) { sendMessage(to: $to, content: "before") { id } }',
        {"to": alice.login},
        token=bob.token,
    )
    report = await drive(
        api,
        "far-behind",
        alice={"login": alice.login, "password": alice.password},
        bob={"login": bob.login, "token": bob.token},
        missed=REPLAY_MAX + 1,
    )
    back = report["steps"]["back"]
    # The newest page (the conversation screen shows 50), oldest first, then the live message.
    assert back["shown"] == [f"late {n}" for n in range(REPLAY_MAX + 1 - 49, REPLAY_MAX + 2)]
    assert back["then"] == [f"late {REPLAY_MAX + 1}", "live again"]
    # Resumed from the message held, refused (too many), then from now.
    held_id = held["sendMessage"]["id"]
    assert [s["after"] for s in back["resubscribed"]] == [held_id, None], back["resubscribed"]
