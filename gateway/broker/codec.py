"""Subscription events as bytes, so a broker can carry them between processes.

JSON with an explicit type tag, never pickle: a broker message is data, and a
process that decodes one runs no code named by it. A value that is JSON-ready
already (the messenger's dicts) travels as it is; any other event type is
registered with a tag and a pair of functions to and from a JSON-ready form.
Publishing an unregistered type fails loudly in the publisher rather than
arriving mangled in another process.
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

    def encode(self, message: Any) -> bytes:
        """``{"t": tag, "v": form}`` for a registered type, ``{"v": message}`` for plain JSON.

        Raises ``TypeError`` for anything else.
        """
        event_type = self._by_class.get(type(message))
        if event_type is None:
            frame = {"v": message}
        else:
            frame = {"t": event_type.tag, "v": event_type.to_json(message)}
        return json.dumps(frame, separators=(",", ":"), allow_nan=False).encode()

    def decode(self, data: bytes) -> Any:
        try:
            frame = json.loads(data)
        except ValueError as exc:
            raise UnknownEvent(f"not JSON: {exc}") from exc
        if not isinstance(frame, dict) or "v" not in frame:
            raise UnknownEvent("not an event frame")
        tag = frame.get("t")
        if tag is None:
            return frame["v"]
        event_type = self._by_tag.get(tag)
        if event_type is None:
            raise UnknownEvent(f"unknown event type {tag!r}")
        try:
            return event_type.from_json(frame["v"])
        except (KeyError, TypeError, ValueError) as exc:
            raise UnknownEvent(f"malformed {tag} event: {exc!r}") from exc
