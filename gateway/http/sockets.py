"""How many WebSockets one process holds open (in all, per client address and per signed-in
user), and how many operations they run (per socket and per user)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from gateway.settings import Settings

#: Close code and reason of a socket over a cap (the common "too many" code).
TOO_MANY_CODE = 4429
TOO_MANY_REASON = "Too many connections"


@dataclass(frozen=True)
class SocketCaps:
    max_sockets: int
    max_per_user: int
    max_per_address: int
    max_operations_per_socket: int
    max_operations_per_user: int

    @classmethod
    def of(cls, settings: Settings) -> SocketCaps:
        return cls(
            settings.max_sockets,
            settings.max_sockets_per_user,
            settings.max_sockets_per_address,
            settings.max_subscriptions_per_socket,
            settings.max_subscriptions_per_user,
        )


class SocketCounts:
    """Admission for sockets and their operations, against :class:`SocketCaps`.

    Single-threaded (the event loop), so a check and its increment never race.
    """

    def __init__(self, caps: SocketCaps) -> None:
        self.caps = caps
        self.total = 0
        #: Operations running in a task of their own, and subscriptions parked with the live hub.
        self.operation_tasks = 0
        self.parked = 0
        self._per_address: Counter[str] = Counter()
        self._per_user: Counter[str] = Counter()
        self._operations: Counter[str] = Counter()

    # -- sockets ------------------------------------------------------------------

    def open(self, address: str) -> bool:
        """One more socket from ``address`` (the key per-address limits count under)."""
        if self.total >= self.caps.max_sockets or self._per_address[address] >= self.caps.max_per_address:
            return False
        self.total += 1
        self._per_address[address] += 1
        return True

    def close(self, address: str) -> None:
        self.total -= 1
        _decrement(self._per_address, address)

    def from_address(self, address: str) -> int:
        return self._per_address[address]

    def sign_in(self, login: str) -> bool:
        if self._per_user[login] >= self.caps.max_per_user:
            return False
        self._per_user[login] += 1
        return True

    def sign_out(self, login: str) -> None:
        _decrement(self._per_user, login)

    def of(self, login: str) -> int:
        return self._per_user[login]

    # -- operations -----------------------------------------------------------------

    def operation_refused(self, running: int, login: str | None) -> tuple[str, int] | None:
        """Why a socket running ``running`` operations, as ``login`` (None: anonymous), may
        not start one more, and the cap it met; None when it may."""
        per_socket = self.caps.max_operations_per_socket
        if running >= per_socket:
            return f"At most {per_socket} operations run at once on one connection.", per_socket
        per_user = self.caps.max_operations_per_user
        if login is not None and self._operations[login] >= per_user:
            return f"At most {per_user} operations of one user run at once.", per_user
        return None

    def operation_started(self, login: str | None) -> None:
        if login is not None:
            self._operations[login] += 1

    def operation_ended(self, login: str | None) -> None:
        if login is not None:
            _decrement(self._operations, login)

    def operations_of(self, login: str) -> int:
        return self._operations[login]


def _decrement(counter: Counter[str], key: str) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
