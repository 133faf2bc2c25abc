"""The extension hook runner (``gateway/graph/hooks.py``) against Strawberry's own:
for every pair of hook behaviours, with and without an error in the stage's body,
the same hooks run in the same order and the stage ends the same way."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from strawberry.extensions import SchemaExtension
from strawberry.extensions.context import OperationContextManager
from strawberry.extensions.runner import SchemaExtensionsRunner

from gateway.graph.hooks import HookRunner

Events = list[str]


def _extension(behaviour: str, name: str, events: Events) -> SchemaExtension:
    """An extension whose ``on_operation`` behaves as ``behaviour`` says, recording in ``events``."""

    def gen_plain(self: Any) -> Iterator[None]:
        events.append(f"{name} enter")
        yield
        events.append(f"{name} leave")

    def gen_raises_before(self: Any) -> Iterator[None]:
        events.append(f"{name} enter")
        raise ValueError(f"{name} before")
        yield  # pragma: no cover

    def gen_raises_after(self: Any) -> Iterator[None]:
        yield
        events.append(f"{name} leave")
        raise KeyError(f"{name} after")

    def gen_suppresses(self: Any) -> Iterator[None]:
        try:
            yield
        except Exception as error:
            events.append(f"{name} swallowed {error!r}")

    def gen_replaces(self: Any) -> Iterator[None]:
        try:
            yield
        except Exception as error:
            raise LookupError(f"{name} replaced {error!r}") from error

    def gen_finally(self: Any) -> Iterator[None]:
        try:
            yield
        finally:
            events.append(f"{name} finally")

    def gen_never_yields(self: Any) -> Iterator[None]:
        events.append(f"{name} enter")
        return
        yield  # pragma: no cover

    def gen_yields_twice(self: Any) -> Iterator[None]:
        yield
        yield

    async def agen_plain(self: Any) -> AsyncIterator[None]:
        events.append(f"{name} enter")
        yield
        events.append(f"{name} leave")

    async def agen_suppresses(self: Any) -> AsyncIterator[None]:
        try:
            yield
        except Exception as error:
            events.append(f"{name} swallowed {error!r}")

    async def agen_replaces(self: Any) -> AsyncIterator[None]:
        try:
            yield
        except Exception as error:
            raise LookupError(f"{name} replaced {error!r}") from error

    async def coroutine(self: Any) -> None:
        events.append(f"{name} awaited")

    def call(self: Any) -> None:
        events.append(f"{name} called")

    hooks: dict[str, Callable[..., Any]] = {
        f.__name__: f
        for f in (
            gen_plain, gen_raises_before, gen_raises_after, gen_suppresses, gen_replaces, gen_finally,
            gen_never_yields, gen_yields_twice, agen_plain, agen_suppresses, agen_replaces, coroutine,
            call,
        )
    }  # fmt: skip
    if behaviour == "none":
        cls = type(f"Ext_{name}", (SchemaExtension,), {})
    else:
        cls = type(f"Ext_{name}", (SchemaExtension,), {"on_operation": hooks[behaviour]})
    return cls(execution_context=None)


BEHAVIOURS = [
    "none", "gen_plain", "gen_raises_before", "gen_raises_after", "gen_suppresses", "gen_replaces",
    "gen_finally", "gen_never_yields", "gen_yields_twice", "agen_plain", "agen_suppresses",
    "agen_replaces", "coroutine", "call",
]  # fmt: skip

#: A hook that fails before its yield: Strawberry leaves the hooks entered before it
#: suspended (closed whenever the garbage collector gets to them); the runner closes them
#: at once with the error. The outcome is the same.
FAILS_ON_ENTRY = {"gen_raises_before", "gen_never_yields"}


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "ok"
    cause = f" from {error.__cause__!r}" if error.__cause__ else ""
    return f"{type(error).__name__}: {error}{cause}"


async def _drive(stage: Any, events: Events, body_error: BaseException | None) -> str:
    try:
        async with stage:
            events.append("body")
            if body_error is not None:
                raise body_error
    except BaseException as error:
        return _describe(error)
    return "ok"


@pytest.mark.parametrize("body_fails", [False, True], ids=["body ok", "body raises"])
@pytest.mark.parametrize(("first", "second"), list(itertools.product(BEHAVIOURS, repeat=2)))
async def test_the_runner_runs_hooks_as_strawberry_does(first: str, second: str, body_fails: bool) -> None:
    outcomes = []
    for stage_of in (
        lambda extensions: OperationContextManager(extensions),
        lambda extensions: HookRunner(None, extensions).operation(),
    ):
        events: Events = []
        extensions = [_extension(first, "a", events), _extension(second, "b", events)]
        body_error = RuntimeError("body") if body_fails else None
        outcome = await _drive(stage_of(extensions), events, body_error)
        outcomes.append((outcome, events))
    (strawberry_outcome, strawberry_events), (our_outcome, our_events) = outcomes
    assert our_outcome == strawberry_outcome
    if second in FAILS_ON_ENTRY and first not in FAILS_ON_ENTRY:
        assert our_events[: len(strawberry_events)] == strawberry_events
    else:
        assert our_events == strawberry_events


async def test_hooks_entered_before_one_that_fails_on_entry_see_its_error() -> None:
    events: Events = []
    extensions = [
        _extension("gen_plain", "a", events),
        _extension("gen_suppresses", "b", events),
        _extension("gen_raises_before", "c", events),
    ]
    outcome = await _drive(HookRunner(None, extensions).operation(), events, None)
    assert outcome == "ValueError: c before"
    assert events == ["a enter", "c enter", "b swallowed ValueError('c before')", "a leave"]


def test_the_sync_stage_runs_sync_hooks_and_refuses_async_ones() -> None:
    events: Events = []
    extensions = [_extension("gen_plain", "a", events), _extension("call", "b", events)]
    with HookRunner(None, extensions).operation():
        events.append("body")
    assert events == ["a enter", "b called", "body", "a leave"]

    events.clear()
    extensions = [_extension("gen_finally", "a", events), _extension("agen_plain", "b", events)]
    with pytest.raises(RuntimeError, match="failed to complete synchronously"):
        with HookRunner(None, extensions).operation():
            events.append("body")
    assert events == ["a finally"]


async def test_results_are_merged_as_strawberry_merges_them() -> None:
    """Only extensions with results of their own are asked, in order, the context's last."""

    class Silent(SchemaExtension):
        pass

    class Sync(SchemaExtension):
        def get_results(self) -> dict[str, Any]:
            return {"a": 1, "shared": "sync"}

    class Async(SchemaExtension):
        async def get_results(self) -> dict[str, Any]:
            return {"b": 2, "shared": "async"}

    class Context:
        def __init__(self) -> None:
            self.extensions_results = {"c": 3, "a": "context"}

    for order in ([Silent, Sync, Async], [Async, Silent, Sync]):
        extensions = [cls() for cls in order]
        ours = await HookRunner(None, extensions).get_extensions_results(Context())
        theirs = await SchemaExtensionsRunner(None, extensions).get_extensions_results(Context())  # type: ignore[arg-type]
        assert ours == theirs
        assert list(ours.items()) == list(theirs.items())
