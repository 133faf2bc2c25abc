"""Token buckets, failure back-off and the rate syntax, on a clock the test moves."""

from __future__ import annotations

import pytest

from gateway.ratelimit.limiter import FORGET_AFTER, Backoff, InProcessRateLimiter
from gateway.settings.values import Rule, parse_rate


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


RULE = Rule("sends", capacity=3, period=30.0)  # 3 at once, then one every 10 s
BACKOFF = Backoff("sign_in", free=2, base=1.0, ceiling=8.0)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def limiter(clock: Clock) -> InProcessRateLimiter:
    return InProcessRateLimiter(clock=clock, max_keys=100)


async def test_a_bucket_allows_its_burst_then_refills_at_its_rate(
    limiter: InProcessRateLimiter, clock: Clock
) -> None:
    assert [(await limiter.take("alice", RULE)).allowed for _ in range(3)] == [True, True, True]
    refused = await limiter.take("alice", RULE)
    assert not refused.allowed and refused.retry_after == pytest.approx(10.0)
    assert (await limiter.take("bob", RULE)).allowed  # keys are independent
    clock.now += 9.0
    assert (await limiter.take("alice", RULE)).retry_after == pytest.approx(1.0)
    clock.now += 1.0
    assert (await limiter.take("alice", RULE)).allowed
    clock.now += 1000.0  # never more than the capacity
    assert [(await limiter.take("alice", RULE)).allowed for _ in range(4)] == [True, True, True, False]


async def test_costs_and_asking_without_taking(limiter: InProcessRateLimiter, clock: Clock) -> None:
    assert (await limiter.take("u", RULE, cost=2)).allowed
    assert (await limiter.take("u", RULE, cost=0)).allowed  # one left, nothing taken
    assert not (await limiter.take("u", RULE, cost=2)).allowed  # a refusal takes nothing
    assert (await limiter.take("u", RULE, cost=1)).allowed
    assert not (await limiter.take("u", RULE, cost=0)).allowed
    too_big = await limiter.take("v", RULE, cost=5)
    assert not too_big.allowed and too_big.retry_after == 0.0


async def test_back_off_grows_after_the_free_failures_and_a_success_resets_it(
    limiter: InProcessRateLimiter, clock: Clock
) -> None:
    assert (await limiter.attempt("alice", BACKOFF)).allowed
    assert (await limiter.attempt("alice", BACKOFF)).allowed
    waits = []
    for _ in range(6):
        refused = await limiter.attempt("alice", BACKOFF)
        assert not refused.allowed
        waits.append(refused.retry_after)
        clock.now += refused.retry_after
        assert (await limiter.attempt("alice", BACKOFF)).allowed
    assert waits == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    await limiter.forgive("alice", BACKOFF)
    assert (await limiter.attempt("alice", BACKOFF)).allowed
    assert (await limiter.attempt("alice", BACKOFF)).allowed
    assert not (await limiter.attempt("alice", BACKOFF)).allowed


async def test_failures_are_forgotten_after_a_quiet_day(limiter: InProcessRateLimiter, clock: Clock) -> None:
    for _ in range(2):
        await limiter.attempt("alice", BACKOFF)
    clock.now += FORGET_AFTER + 1
    assert (await limiter.attempt("alice", BACKOFF)).allowed
    assert (await limiter.attempt("alice", BACKOFF)).allowed


async def test_memory_is_bounded_by_forgetting_the_least_recently_used(clock: Clock) -> None:
    limiter = InProcessRateLimiter(clock=clock, max_keys=10)
    for _ in range(3):
        await limiter.take("first", RULE)
    for i in range(50):
        await limiter.take(f"key{i}", RULE)
    assert len(limiter) == 10
    assert (await limiter.take("first", RULE)).allowed  # forgotten, so a full bucket again


@pytest.mark.parametrize(
    ("text", "capacity", "period"),
    [("20/h", 20, 3600.0), ("5/10m", 5, 600.0), (" 1000 / d ", 1000, 86400.0), ("3/45s", 3, 45.0)],
)
def test_rate_syntax(text: str, capacity: int, period: float) -> None:
    assert parse_rate("x", text) == Rule("x", capacity, period)


@pytest.mark.parametrize("text", ["20", "20/w", "0/h", "-1/h", "20/0m", "twenty/h", ""])
def test_rate_syntax_errors(text: str) -> None:
    with pytest.raises(ValueError, match="expected '<count>/<period>'"):
        parse_rate("x", text)


def test_off_is_no_limit() -> None:
    assert parse_rate("x", "OFF") is None


async def test_a_mark_lasts_its_time_then_is_gone(limiter: InProcessRateLimiter, clock: Clock) -> None:
    assert not await limiter.marked("alice@192.0.2.1")
    await limiter.mark("alice@192.0.2.1", 10.0)
    assert await limiter.marked("alice@192.0.2.1")
    assert not await limiter.marked("alice@192.0.2.2")
    clock.now += 9.9
    assert await limiter.marked("alice@192.0.2.1")
    clock.now += 0.1
    assert not await limiter.marked("alice@192.0.2.1")
    assert len(limiter) == 0
