"""Subscription events as bytes, so a broker can carry them between processes.

JSON with an explicit type tag, never pickle: a broker message is data, and a
process that decodes one runs no code named by it. A value that is JSON-ready
already (the messenger's dicts) travels as it is; any other event type is
registered with a tag and a pair of functions to and from a JSON-ready form.
Publishing an unregistered type fails loudly in the publisher rather than
arriving mangled in another process. A frame may carry when it was published
(``"at"``, Unix seconds), so a receiving process can tell how late it arrives;
a frame without it decodes all the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownEvent(ValueError):
    """Bytes that do not decode to an event this process knows."""


@dataclass(frozen=True)
class EventType(Generic[T]):
    """How one event class travels: a tag naming it on the wire, and its JSON-ready form."""

    tag: str
    cls: type[T]
    to_json: Callable[[T], Any]
    from_json: Callable[[Any], T]


class EventCodec:
    def __init__(self, types: Iterable[EventType[Any]] = ()) -> None:
        self._by_class: dict[type, EventType[Any]] = {}
        self._by_tag: dict[str, EventType[Any]] = {}
        for event_type in types:
            self.register(event_type)

    def register(self, event_type: EventType[Any]) -> None:
        if event_type.tag in self._by_tag or event_type.cls in self._by_class:
            raise ValueError(f"event type {event_type.tag} ({event_type.cls.__name__}) registered twice")
        self._by_class[event_type.cls] = event_type
        self._by_tag[event_type.tag] = event_type

    def encode(self, message: Any, *, at: float | None = None) -> bytes:
        """``{"t": tag, "v": form}`` for a registered type, ``{"v": message}`` for plain JSON,
        with ``"at"`` when given.

        Raises ``TypeError`` for anything else.
        """
        event_type = self._by_class.get(type(message))
        frame: dict[str, Any]
        if event_type is None:
            frame = {"v": message}
        else:
            frame = {"t": event_type.tag, "v": event_type.to_json(message)}
        if at is not None:
            frame["at"] = round(at, 6)
        return json.dumps(frame, separators=(",", ":"), allow_nan=False).encode()

    def decode(self, data: bytes) -> Any:
        return self.decode_stamped(data)[0]

    def decode_stamped(self, data: bytes) -> tuple[Any, float | None]:
        """The event and when it was published (None when the frame does not say)."""
        try:
            frame = json.loads(data)
        except ValueError as exc:
            raise UnknownEvent(f"not JSON: {exc}") from exc
        if not isinstance(frame, dict) or "v" not in frame:
            raise UnknownEvent("not an event frame")
        at = frame.get("at")
        stamp = float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None
        tag = frame.get("t")
        if tag is None:
            return frame["v"], stamp
        event_type = self._by_tag.get(tag)
        if event_type is None:
            raise UnknownEvent(f"unknown event type {tag!r}")
        try:
            return event_type.from_json(frame["v"]), stamp
        except (KeyError, TypeError, ValueError) as exc:
            raise UnknownEvent(f"malformed {tag} event: {exc!r}") from exc
