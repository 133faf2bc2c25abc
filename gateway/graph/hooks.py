"""Schema extension hooks run without a context manager per hook per request.

Strawberry's extension runner, for each of an operation's four stages
(operation, parsing, validation, execution), looks every extension's hook up
again, wraps each one it finds in a new ``contextlib`` context manager (with
``functools.wraps`` copying its metadata), and enters them through an
``ExitStack``. With the gateway's six extensions that bookkeeping was a large share
of executing ``{ __typename }`` (``bench/NOTES.md``). :class:`HookRunner` keeps Strawberry's
semantics (hooks entered in order and left in reverse, an exception thrown into
each hook still open, which may replace it or hide it from the hooks outside it,
the same errors for a hook that does not yield once) and does the bookkeeping once per list
of extension classes (:class:`_Plan`): a stage holds the hooks found and drives their
generators itself, and only the extensions with results of their own are asked for them.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from types import TracebackType
from typing import Any

from strawberry.extensions import SchemaExtension

from gateway.graph.executor_internals import SchemaExtensionsRunner

_GENERATOR = 0
_ASYNC_GENERATOR = 1
_COROUTINE = 2
_CALL = 3

_Hook = tuple[int, Callable[[SchemaExtension], Any]]

#: The stages' hook names.
_STAGES = ("on_operation", "on_validate", "on_parse", "on_execute")

#: Per extension class, per stage: how its hook runs, or None when it has none.
_HOOKS: dict[type, dict[str, _Hook | None]] = {}


def _hooks_of(cls: type[SchemaExtension]) -> dict[str, _Hook | None]:
    known = _HOOKS.get(cls)
    if known is None:
        known = _HOOKS[cls] = {name: _classify(cls, name) for name in _STAGES}
    return known


def _classify(cls: type[SchemaExtension], name: str) -> _Hook | None:
    function = getattr(cls, name)
    if function is getattr(SchemaExtension, name):
        return None
    if inspect.isgeneratorfunction(function):
        return (_GENERATOR, function)
    if inspect.isasyncgenfunction(function):
        return (_ASYNC_GENERATOR, function)
    if inspect.iscoroutinefunction(function):
        return (_COROUTINE, function)
    if callable(function):
        return (_CALL, function)
    raise ValueError(f"Hook {name} on {cls.__name__} must be callable, received {function!r}")


def _leave(generator: Any, error: BaseException | None) -> bool:
    """Resume a sync hook after its ``yield`` (``contextlib.contextmanager``'s exit);
    True when it suppressed ``error``."""
    if error is None:
        try:
            next(generator)
        except StopIteration:
            return False
        raise RuntimeError("generator didn't stop")
    try:
        generator.throw(error)
    except StopIteration as stop:
        return stop is not error
    except RuntimeError as raised:
        if raised is error or (isinstance(error, StopIteration) and raised.__cause__ is error):
            return False
        raise
    except BaseException as raised:
        if raised is not error:
            raise
        return False
    raise RuntimeError("generator didn't stop after throw()")


async def _aleave(generator: Any, error: BaseException | None) -> bool:
    """``_leave`` for an async generator hook (``contextlib.asynccontextmanager``'s exit)."""
    if error is None:
        try:
            await anext(generator)
        except StopAsyncIteration:
            return False
        raise RuntimeError("generator didn't stop")
    try:
        await generator.athrow(error)
    except StopAsyncIteration as stop:
        return stop is not error
    except RuntimeError as raised:
        if raised is error or (
            isinstance(error, StopIteration | StopAsyncIteration) and raised.__cause__ is error
        ):
            return False
        raise
    except BaseException as raised:
        if raised is not error:
            raise
        return False
    raise RuntimeError("generator didn't stop after athrow()")


class _Stage:
    """One stage's hooks, as one context manager (sync or async)."""

    __slots__ = ("_hooks", "_name", "_open")

    def __init__(
        self, extensions: list[SchemaExtension], hooks: tuple[tuple[int, int, Any], ...], name: str
    ) -> None:
        self._name = name
        #: (kind, hook, extension) of the extensions with a hook for this stage, in order.
        self._hooks = [(kind, function, extensions[index]) for index, kind, function in hooks]
        #: The generators of the hooks entered, in order, each with whether it is async.
        self._open: list[tuple[Any, bool]] = []

    # -- async -----------------------------------------------------------------

    async def __aenter__(self) -> None:
        for kind, function, extension in self._hooks:
            try:
                if kind == _GENERATOR:
                    generator = function(extension)
                    _start(generator)
                    self._open.append((generator, False))
                elif kind == _ASYNC_GENERATOR:
                    generator = function(extension)
                    try:
                        await anext(generator)
                    except StopAsyncIteration:
                        raise RuntimeError("generator didn't yield") from None
                    self._open.append((generator, True))
                elif kind == _COROUTINE:
                    await function(extension)
                else:
                    function(extension)
            except BaseException as error:
                # The hooks already entered are left with the error (Strawberry leaves
                # them to the garbage collector); the caller sees the error itself.
                with contextlib.suppress(Exception):
                    await self.__aexit__(type(error), error, error.__traceback__)
                raise

    async def __aexit__(
        self, exc_type: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool:
        pending = error
        while self._open:
            generator, is_async = self._open.pop()
            try:
                if await _aleave(generator, pending) if is_async else _leave(generator, pending):
                    pending = None
            except BaseException as raised:
                if raised.__context__ is None and raised is not pending:
                    raised.__context__ = pending
                pending = raised
        return self._outcome(error, pending)

    # -- sync ------------------------------------------------------------------

    def __enter__(self) -> None:
        for kind, function, extension in self._hooks:
            try:
                if kind != _GENERATOR and kind != _CALL:
                    raise RuntimeError(
                        f"SchemaExtension hook {extension}.{self._name} failed to complete synchronously."
                    )
                if kind == _GENERATOR:
                    generator = function(extension)
                    _start(generator)
                    self._open.append((generator, False))
                else:
                    function(extension)
            except BaseException as error:
                with contextlib.suppress(Exception):
                    self.__exit__(type(error), error, error.__traceback__)
                raise

    def __exit__(
        self, exc_type: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool:
        pending = error
        while self._open:
            generator, _ = self._open.pop()
            try:
                if _leave(generator, pending):
                    pending = None
            except BaseException as raised:
                if raised.__context__ is None and raised is not pending:
                    raised.__context__ = pending
                pending = raised
        return self._outcome(error, pending)

    @staticmethod
    def _outcome(error: BaseException | None, pending: BaseException | None) -> bool:
        """Raises what a hook raised in place of ``error``. As with Strawberry's runner,
        a hook that swallows ``error`` hides it from the hooks outside it only: the
        stage itself never suppresses it."""
        if pending is None or pending is error:
            return False
        raise pending


def _start(generator: Any) -> None:
    try:
        next(generator)
    except StopIteration:
        raise RuntimeError("generator didn't yield") from None


class _Plan:
    """For one list of extension classes: per stage, the index, kind and function of each
    hook it has; and the indexes of the extensions with results of their own (the base
    class's ``get_results`` answers nothing)."""

    __slots__ = ("results", "stages")

    def __init__(self, classes: tuple[type[SchemaExtension], ...]) -> None:
        self.stages: dict[str, tuple[tuple[int, int, Any], ...]] = {}
        for name in _STAGES:
            found = [(index, _hooks_of(cls)[name]) for index, cls in enumerate(classes)]
            self.stages[name] = tuple((index, hook[0], hook[1]) for index, hook in found if hook is not None)
        self.results = tuple(
            index for index, cls in enumerate(classes) if cls.get_results is not SchemaExtension.get_results
        )


#: Plans by the extensions' classes (a schema makes the same list for every request).
_PLANS: dict[tuple[type, ...], _Plan] = {}
_MAX_PLANS = 256


def _plan_of(extensions: list[SchemaExtension]) -> _Plan:
    classes = tuple(map(type, extensions))
    plan = _PLANS.get(classes)
    if plan is None:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        plan = _PLANS[classes] = _Plan(classes)
    return plan


class HookRunner(SchemaExtensionsRunner):
    """Strawberry's extension runner, with the stages above, the hooks of each found once
    per list of extension classes, and results asked only of the extensions that have
    their own (stream results keep Strawberry's own: they are not on a hot path)."""

    def __init__(self, execution_context: Any, extensions: list[SchemaExtension] | None = None) -> None:
        super().__init__(execution_context, extensions)
        self._plan = _plan_of(self.extensions)

    def _stage(self, name: str) -> _Stage:
        return _Stage(self.extensions, self._plan.stages[name], name)

    def operation(self) -> Any:
        return self._stage("on_operation")

    def validation(self) -> Any:
        return self._stage("on_validate")

    def parsing(self) -> Any:
        return self._stage("on_parse")

    def executing(self) -> Any:
        return self._stage("on_execute")

    async def get_extensions_results(self, ctx: Any) -> dict[str, Any]:
        """Strawberry's merge of every extension's results and the context's, in order."""
        data: dict[str, Any] = {}
        extensions = self.extensions
        for index in self._plan.results:
            results = extensions[index].get_results()
            if inspect.isawaitable(results):
                results = await results
            data.update(results)
        data.update(ctx.extensions_results)
        return data
