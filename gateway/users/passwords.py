"""Password hashing with argon2id (argon2-cffi), on its own bounded pool (``hashing_pool.py``)."""

from __future__ import annotations

from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from gateway.settings import Settings
from gateway.users.hashing_pool import hashing_pool


@lru_cache(maxsize=8)
def _hasher(time_cost: int, memory_cost: int, parallelism: int) -> PasswordHasher:
    return PasswordHasher(time_cost=time_cost, memory_cost=memory_cost, parallelism=parallelism)


def hasher(settings: Settings) -> PasswordHasher:
    return _hasher(settings.argon2_time_cost, settings.argon2_memory_cost_kib, settings.argon2_parallelism)


async def hash_password(settings: Settings, password: str) -> str:
    ph = hasher(settings)
    return await hashing_pool(settings).run(lambda: ph.hash(password))


async def verify_password(settings: Settings, password_hash: str | None, password: str) -> bool:
    """True when ``password`` matches. With no hash (unknown login) a dummy hash is
    verified anyway, so both failures take the same time."""
    ph = hasher(settings)
    target = password_hash or _dummy_hash(
        settings.argon2_time_cost, settings.argon2_memory_cost_kib, settings.argon2_parallelism
    )

    # A lone surrogate cannot be encoded as UTF-8; kept as bytes that match no stored hash
    # (sign-up refuses such passwords), it is a wrong password after the same work.
    given = password.encode("utf-8", "surrogatepass")

    def check() -> bool:
        try:
            return ph.verify(target, given)
        except (VerificationError, InvalidHashError):
            return False

    matched = await hashing_pool(settings).run(check)
    return matched and password_hash is not None


@lru_cache(maxsize=8)
def _dummy_hash(time_cost: int, memory_cost: int, parallelism: int) -> str:
    return _hasher(time_cost, memory_cost, parallelism).hash("not a password of anyone")
