"""The gateway's Loader batches and caches exactly as Strawberry's DataLoader does.

Each scenario runs against both classes; the ``load_fn`` calls (which keys, in
which batches) and what every caller got must be the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from strawberry.dataloader import DataLoader

from gateway.graph.dataloader import Loader

Scenario = Callable[[DataLoader[str, str]], Awaitable[list[Any]]]


def _loaders(**options: Any) -> list[tuple[DataLoader[str, str], list[list[str]]]]:
    made: list[tuple[DataLoader[str, str], list[list[str]]]] = []
    for cls in (DataLoader, Loader):
        calls: list[list[str]] = []

        async def load(keys: list[str], calls: list[list[str]] = calls) -> list[str | BaseException]:
            calls.append(list(keys))
            await asyncio.sleep(0)
            return [ValueError(f"no {key}") if key.startswith("bad") else key.upper() for key in keys]

        made.append((cls(load_fn=load, **options), calls))
    return made


async def _outcome(awaitable: Awaitable[Any]) -> Any:
    try:
        return await awaitable
    except Exception as error:
        return f"{type(error).__name__}: {error}"


async def _page_of_keys(loader: DataLoader[str, str]) -> list[Any]:
    return [await _outcome(loader.load_many([f"user{i}" for i in range(50)]))]


async def _repeats_in_one_pass(loader: DataLoader[str, str]) -> list[Any]:
    first = loader.load("a")
    many = loader.load_many(["a", "b", "a", "c"])
    single = loader.load("b")
    return [await _outcome(first), await _outcome(many), await _outcome(single)]


async def _cached_across_passes(loader: DataLoader[str, str]) -> list[Any]:
    first = await _outcome(loader.load_many(["a", "b"]))
    second = await _outcome(loader.load_many(["b", "d", "a"]))
    third = await _outcome(loader.load("d"))
    return [first, second, third]


async def _errors_per_key(loader: DataLoader[str, str]) -> list[Any]:
    return [await _outcome(loader.load("bad1")), await _outcome(loader.load_many(["x", "bad2"]))]


async def _concurrent_callers(loader: DataLoader[str, str]) -> list[Any]:
    return list(
        await asyncio.gather(
            _outcome(loader.load_many(["a", "b"])),
            _outcome(loader.load_many(["b", "c"])),
            _outcome(loader.load("c")),
        )
    )


async def _cancelled_key_is_loaded_again(loader: DataLoader[str, str]) -> list[Any]:
    loader.load("a").cancel()  # type: ignore[attr-defined]  # a future
    return [await _outcome(loader.load_many(["a", "b"]))]


async def _primed_keys_need_no_call(loader: DataLoader[str, str]) -> list[Any]:
    loader.prime("a", "primed")
    many = await _outcome(loader.load_many(["a", "b"]))
    loader.clear("a")
    return [many, await _outcome(loader.load("a"))]


SCENARIOS: list[Scenario] = [
    _page_of_keys,
    _repeats_in_one_pass,
    _cached_across_passes,
    _errors_per_key,
    _concurrent_callers,
    _cancelled_key_is_loaded_again,
    _primed_keys_need_no_call,
]
OPTIONS: list[dict[str, Any]] = [{}, {"max_batch_size": 20}, {"max_batch_size": 2}, {"cache": False}]


@pytest.mark.parametrize(
    "options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default"
)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__.strip("_"))
async def test_same_batches_and_answers_as_strawberry(scenario: Scenario, options: dict[str, Any]) -> None:
    (reference, reference_calls), (ours, our_calls) = _loaders(**options)
    expected = await scenario(reference)
    got = await scenario(ours)
    assert got == expected
    assert our_calls == reference_calls
    assert our_calls  # every scenario loads something


async def test_a_page_of_fifty_keys_is_one_call_within_the_batch_size() -> None:
    (_, _), (ours, calls) = _loaders(max_batch_size=100)
    values = await ours.load_many([f"user{i}" for i in range(50)])
    assert values == [f"USER{i}" for i in range(50)]
    assert [len(keys) for keys in calls] == [50]
    (_, _), (split, split_calls) = _loaders(max_batch_size=20)
    await split.load_many([f"user{i}" for i in range(50)])
    assert [len(keys) for keys in split_calls] == [20, 20, 10]
