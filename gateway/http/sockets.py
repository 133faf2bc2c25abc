"""How many WebSockets one process holds open, in all and per signed-in user."""

from __future__ import annotations

from collections import Counter

#: Close code and reason of a socket over either cap (the common "too many" code).
TOO_MANY_CODE = 4429
TOO_MANY_REASON = "Too many connections"


class SocketCounts:
    """Admission for sockets: ``max_sockets`` in the process, ``max_per_user`` per login.

    Single-threaded (the event loop), so a check and its increment never race.
    """

    def __init__(self, max_sockets: int, max_per_user: int) -> None:
        self.max_sockets = max_sockets
        self.max_per_user = max_per_user
        self.total = 0
        self._per_user: Counter[str] = Counter()

    def open(self) -> bool:
        if self.total >= self.max_sockets:
            return False
        self.total += 1
        return True

    def close(self) -> None:
        self.total -= 1

    def sign_in(self, login: str) -> bool:
        if self._per_user[login] >= self.max_per_user:
            return False
        self._per_user[login] += 1
        return True

    def sign_out(self, login: str) -> None:
        self._per_user[login] -= 1
        if self._per_user[login] <= 0:
            del self._per_user[login]

    def of(self, login: str) -> int:
        return self._per_user[login]
