"""How a setting is declared, read from the environment, checked and documented.

A setting is a field of a frozen dataclass whose default comes from :func:`setting`; the
field's metadata carries a :class:`Setting`: its environment variable, old names, bounds,
allowed values or syntax check, and a one-line description. The functions here are the only
readers of those declarations (:func:`read_env`, :func:`problems`, :func:`markdown_tables`,
...), so a setting added to a class is read, checked and documented without a line anywhere
else.
"""

from __future__ import annotations

import functools
import math
import os
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

T = TypeVar("T")

#: The problem with a value of the variable, as a one-line message naming it, or None.
Check = Callable[[str, Any], str | None]

_METADATA_KEY = "setting"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class SettingsError(ValueError):
    """A configuration variable has a value the gateway cannot use.

    Library code raises it; the command line turns it into a one-line message and exit code 2.
    """

    def __init__(self, variable: str, message: str) -> None:
        super().__init__(message)
        self.variable = variable
        self.message = message


@dataclass(frozen=True)
class Bounds:
    """The range a number must lie in; ``text`` completes "<VARIABLE> must be ..."."""

    text: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False

    def allows(self, value: float) -> bool:
        if self.minimum is not None:
            if value < self.minimum or (self.exclusive_minimum and value == self.minimum):
                return False
        return self.maximum is None or value <= self.maximum


POSITIVE = Bounds("positive", minimum=0, exclusive_minimum=True)
NOT_NEGATIVE = Bounds("0 or more", minimum=0)
PORT = Bounds("a port number", minimum=0, maximum=65535)


def at_least(minimum: float, text: str | None = None) -> Bounds:
    return Bounds(text or f"at least {minimum}", minimum=minimum)


@dataclass(frozen=True)
class Setting:
    """What the environment, the validator and the configuration reference know of a field."""

    variable: str
    description: str
    group: str
    #: Older names still read when ``variable`` is unset; each use is logged as deprecated.
    aliases: tuple[str, ...] = ()
    bounds: Bounds | None = None
    choices: tuple[str, ...] = ()
    check: Check | None = None
    #: Words compared case-insensitively are stored in one case.
    case: Literal["upper", "lower"] | None = None
    #: The reference's default column when the field's default does not say it.
    default_text: str | None = None
    #: Never printed by ``gateway settings``.
    secret: bool = False
    #: Credentials are taken as given; everything else loses surrounding blanks.
    strip: bool = True


def setting(
    variable: str,
    default: T,
    description: str,
    *,
    group: str,
    aliases: tuple[str, ...] = (),
    bounds: Bounds | None = None,
    choices: tuple[str, ...] = (),
    check: Check | None = None,
    case: Literal["upper", "lower"] | None = None,
    default_text: str | None = None,
    secret: bool = False,
    strip: bool = True,
) -> T:
    """A dataclass field declared as a setting (``factory`` variant: :func:`computed_setting`)."""
    spec = Setting(
        variable, description, group, aliases, bounds, choices, check, case, default_text, secret, strip
    )
    return field(default=default, metadata={_METADATA_KEY: spec})


def computed_setting(
    variable: str, factory: Callable[[], T], description: str, *, group: str, default_text: str
) -> T:
    """A setting whose default depends on the machine (read when the settings are made)."""
    spec = Setting(variable, description, group, default_text=default_text)
    return field(default_factory=factory, metadata={_METADATA_KEY: spec})


def declared(cls: type) -> Iterator[tuple[Field[Any], Setting]]:
    """Each field of the dataclass ``cls`` with its declaration, in field order."""
    for item in fields(cls):
        spec = item.metadata.get(_METADATA_KEY)
        if not isinstance(spec, Setting):
            raise TypeError(f"{cls.__name__}.{item.name} is not declared with setting()")
        yield item, spec


@functools.cache
def _types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _environment(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _given(spec: Setting, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """(variable, text) of the first of the setting's names that is set to something."""
    for name in (spec.variable, *spec.aliases):
        raw = environ.get(name)
        if raw is not None and raw.strip():
            return name, raw.strip() if spec.strip else raw
    return None


def _optional_of(kind: Any) -> Any:
    """``X`` of ``X | None``, else None."""
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        args = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return None


def _parse(kind: Any, variable: str, text: str, spec: Setting) -> Any:
    """``text`` as a value of the field's type; SettingsError naming ``variable`` when it is not one."""
    inner = _optional_of(kind)
    if inner is not None:
        return _parse(inner, variable, text, spec)
    if kind is bool:
        word = text.lower()
        if word not in _TRUE + _FALSE:
            raise SettingsError(
                variable, f"{variable} must be 1/0, true/false, yes/no or on/off, got {word!r}"
            )
        return word in _TRUE
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise SettingsError(variable, f"{variable} must be an integer, got {text!r}") from None
    if kind is float:
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise SettingsError(variable, f"{variable} must be a number, got {text!r}")
        return number
    if kind is Path:
        return Path(text)
    if typing.get_origin(kind) is tuple:
        return tuple(part.strip() for part in text.split(",") if part.strip())
    if kind is str:
        if spec.case == "upper":
            return text.upper()
        return text.lower() if spec.case == "lower" else text
    raise TypeError(f"no reader for settings of type {kind!r} ({variable})")


def read_env(cls: type, environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """The values the environment sets for ``cls``'s fields, and the variable each was read from.

    A field whose variables are unset or blank is left out (its default applies). The new
    name wins over an alias when both are set.
    """
    environ = _environment(environ)
    hints = _types(cls)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for item, spec in declared(cls):
        given = _given(spec, environ)
        if given is not None:
            variable, text = given
            values[item.name] = _parse(hints[item.name], variable, text, spec)
            sources[item.name] = variable
    return values, sources


def _shown(choice: str) -> str:
    """CQL constants bare (``LOCAL_SERIAL``), words quoted (``'json'``)."""
    return choice if choice.isupper() else repr(choice)


def _listed(choices: tuple[str, ...]) -> str:
    shown = [_shown(choice) for choice in choices if choice]
    if len(shown) == 2:
        return f"{shown[0]} or {shown[1]}"
    return "one of " + ", ".join(shown)


def problem(spec: Setting, value: Any, variable: str | None = None) -> str | None:
    """What is wrong with ``value`` for the setting, naming ``variable`` (its own by default)."""
    name = variable or spec.variable
    if value is None:
        return None
    if spec.bounds is not None and not isinstance(value, bool) and not spec.bounds.allows(value):
        return f"{name} must be {spec.bounds.text}, got {value}"
    if spec.choices and value not in spec.choices:
        return f"{name} must be {_listed(spec.choices)}, got {value!r}"
    if spec.check is not None:
        return spec.check(name, value)
    return None


def problems(
    cls: type, values: Mapping[str, Any], sources: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """(variable, message) for each value in ``values`` (by field name) its declaration refuses.

    ``sources`` names the variable a value was read from, so an old name in the environment
    is the name in the message.
    """
    found = []
    for item, spec in declared(cls):
        if item.name in values:
            variable = (sources or {}).get(item.name, spec.variable)
            message = problem(spec, values[item.name], variable)
            if message is not None:
                found.append((variable, message))
    return found


def values_of(settings: Any) -> dict[str, Any]:
    """Field name to value of a dataclass instance (``asdict`` without its deep copies)."""
    return {item.name: getattr(settings, item.name) for item in fields(settings)}


def raise_problems(found: list[tuple[str, str]]) -> None:
    """One SettingsError for all of them, named after the first: one line, every problem."""
    if found:
        raise SettingsError(found[0][0], "; ".join(message for _, message in found))


def alias_warnings(cls: type, environ: Mapping[str, str] | None = None) -> list[str]:
    """One line for each old name set in the environment, naming the variable that replaces it."""
    environ = _environment(environ)
    lines = []
    for _, spec in declared(cls):
        for alias in spec.aliases:
            if environ.get(alias, "").strip():
                if environ.get(spec.variable, "").strip():
                    lines.append(f"{alias} is ignored: {spec.variable} is set and replaces it; unset {alias}")
                else:
                    lines.append(f"{alias} is deprecated: rename it to {spec.variable}")
    return lines


def env_text(value: Any) -> str:
    """``value`` as it would be written in the environment."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ",".join(str(part) for part in value)
    return str(value)


def current_values(settings: Any) -> list[tuple[str, str]]:
    """(variable, value) of every setting of the dataclass instance, secrets hidden."""
    lines = []
    for item, spec in declared(type(settings)):
        text = env_text(getattr(settings, item.name))
        lines.append((spec.variable, "(hidden)" if spec.secret and text else text))
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _default_cell(item: Field[Any], spec: Setting) -> str:
    if spec.default_text is not None:
        return spec.default_text
    if item.default is MISSING:
        raise TypeError(f"{spec.variable}: a computed default needs default_text")
    text = env_text(item.default)
    return f"`{text}`" if text else "empty"


def _meaning(spec: Setting) -> str:
    if spec.bounds is not None:
        return f"{spec.description}; must be {spec.bounds.text}"
    allowed = [f"`{choice}`" for choice in spec.choices if choice]
    if allowed and not all(choice in spec.description for choice in allowed):
        listed = " or ".join(allowed) if len(allowed) == 2 else "one of " + ", ".join(allowed)
        return f"{spec.description}; {listed}"
    return spec.description


def markdown_tables(*classes: type) -> str:
    """The configuration reference: one table per group, groups in the order they are declared."""
    groups: dict[str, list[str]] = {}
    for cls in classes:
        for item, spec in declared(cls):
            aliases = ", ".join(f"`{alias}`" for alias in spec.aliases)
            row = [f"`{spec.variable}`", _default_cell(item, spec), _meaning(spec), aliases]
            groups.setdefault(spec.group, []).append("| " + " | ".join(_cell(cell) for cell in row) + " |")
    parts = []
    for group, rows in groups.items():
        header = ["| variable | default | meaning | aliases |", "|---|---|---|---|"]
        parts.append("\n".join([f"## {group}", "", *header, *rows]))
    return "\n\n".join(parts) + "\n"
