"""Live delivery: one execution per event and selection, one frame per subscriber.

A subscription event reaches a process once, on its broker channel. Run the
ordinary way, every subscriber of the channel would then wake its own
operation, execute its selection over the event, read what the selection
needs (the author, the room), and encode the result: for a room of a thousand
members, a thousand executions, reads and encodings of the same answer. Here
the process's :class:`LiveHub` follows each channel once, and for each event

1. asks every subscriber's :class:`Follow` for a :class:`Verdict` (a check in
   memory: who may receive the event is known before it arrives, and ended by
   the events that end it, a leave or a deletion);
2. groups the subscribers that receive it by what their answer depends on: the
   operation (its text, name and variables) and, only when the selection reads
   a field that depends on who asks (:func:`viewer_dependent`), the viewer;
3. executes each group's selection once over the event, in a context of its
   own (fresh loaders, the group's viewer or nobody), and encodes the result
   once;
4. hands the encoded payload to each subscriber's :class:`LiveSink`, which
   writes it to its socket as one frame (``gateway/http/live.py``).

So a delivery costs a frame write; CQL runs per event and group, never per
subscriber, and only for what the event does not carry (a room's or a direct
message's event carries its users' public profiles: a selection of the message,
its room and its users reads nothing). A subscription without a sink (a transport that is not a socket of
this gateway) receives its events through its resolver instead, one execution
each, with the same verdicts: :meth:`Follow.events` yields them.

A subscription registers with its channel before its resolver awaits
anything, and holds what arrives while the resolver checks access and replays
stored history; :meth:`Follow.go_live` then passes on, in order, what is newer
than the replay (``newer``), so nothing is missed or repeated at the seam.

Once live, a subscription with a sink needs nothing of the task that set it
up: :meth:`Follow.events` *parks* it (:attr:`LiveOperation.park`, offered by the
WebSocket handler). The resolver then returns, and the operation's task, its
execution and its extensions are freed; the hub keeps the :class:`Follow` until
it ends (a verdict, the broker, :meth:`LiveHub.recheck`, the client or the
socket), and whoever parked it hears of the end through ``Follow.ended``. An idle
subscribed socket then holds its socket and a few small objects, not a task and
a suspended execution. So a resolver holds nothing for the subscription's life
in its own frame (a ``with`` around ``events()`` would end at once): it hands
such things to :meth:`Follow.on_end`.

What a subscriber was allowed when it went live (a room's membership) is ended
by the events that end it; such an event lost on its way (a broker that dropped
a publish) would leave the subscription running. So every
``GATEWAY_LIVE_RECHECK_SECONDS`` the hub asks again, for each :class:`Recheck`
key (a room), which of its subscribers may still receive, in one call for all of
them, and ends the others' subscriptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Hashable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
    parse,
)

from gateway.broker.pubsub import BrokerUnavailable, PubSub, channel_kind
from gateway.db.session import CassandraUnavailable, RequestMetrics, measuring
from gateway.graph.errors import classify
from gateway.graph.executor_internals import strawberry_definition
from gateway.tasks import cancel_and_wait
from gateway.tracing import SpanKind, Tracer

log = logging.getLogger(__name__)

#: The field metadata key marking a field whose value depends on who asks.
VIEWER_DEPENDENT = "gateway.viewer_dependent"


def viewer_dependent() -> dict[str, bool]:
    """``metadata`` of a field whose value depends on the viewer (``User.email``, a room's
    messages): a live selection that reads one is executed per viewer, not shared."""
    return {VIEWER_DEPENDENT: True}


class Verdict(enum.Enum):
    """What one subscriber does with one event."""

    SKIP = "skip"
    DELIVER = "deliver"
    #: Deliver it, then end: the viewer's own leave, the room's deletion.
    DELIVER_THEN_END = "deliver then end"
    #: End without delivering: the subscriber may no longer see the channel.
    END = "end"


class LiveSink(Protocol):
    """Where one subscription's results go: a frame writer of its socket."""

    def deliver(self, payload: bytes, made: dict[bytes, bytes] | None = None) -> bool:
        """Send one result (``{"data": ...}`` as JSON); False when the sink is closed or has
        cut its socket off for falling behind: the subscription then ends. ``made``: what
        was already made of this payload for other sinks of the event (a sink may keep
        what it makes there for the next one that makes the same)."""
        ...


class LiveOperation:
    """The subscription as its client sent it, and where its results go.

    ``park``, when given, takes a live :class:`Follow` off its operation's hands: called
    once from :meth:`Follow.events`, after which the resolver returns and the operation's
    task ends without a word to the client (the one who parked it answers for the
    subscription from then on, and learns of its end from ``Follow.ended``)."""

    __slots__ = ("operation_name", "park", "parked", "plan", "query", "sink", "variables")

    def __init__(
        self,
        query: str,
        variables: Mapping[str, Any] | None,
        operation_name: str | None,
        sink: LiveSink,
        park: Callable[[Follow], None] | None = None,
    ) -> None:
        self.query = query
        self.variables = variables
        self.operation_name = operation_name
        self.sink = sink
        self.park = park
        #: The follow parked for this operation, once it is.
        self.parked: Follow | None = None
        #: The hub's plan of the selection, once an event was delivered (found once, not per event).
        self.plan: _Plan | None = None

    def unparked(self, _: asyncio.Future[Any]) -> None:
        """The parked follow ended."""
        self.parked = None


@dataclass(frozen=True)
class Recheck:
    """How to ask again who may still receive a channel's events: ``allowed`` answers,
    out of the viewers it is handed, those who may (one call for every subscriber that
    shares ``key``, a room's id); the others' subscriptions end."""

    key: Hashable
    allowed: Callable[[frozenset[str]], Awaitable[Collection[str]]]


#: Set by the WebSocket handler around each operation it runs (``gateway/http/websocket.py``).
CURRENT_OPERATION: ContextVar[LiveOperation | None] = ContextVar("current_live_operation", default=None)


class ContextFactory(Protocol):
    def __call__(self, viewer: str | None, token: str | None) -> Any:
        """A fresh per-event context acting as ``viewer`` (None: nobody)."""


Admit = Callable[[Any], Verdict]
ToRoot = Callable[[Any], Any]


@dataclass(eq=False, slots=True)
class Follow:
    """One subscription of one or more channels."""

    hub: LiveHub
    channel: str
    operation: LiveOperation | None
    viewer: str | None = None
    token: str | None = None
    #: Executed per viewer even when the selection reads nothing viewer-dependent.
    per_viewer: bool = False
    admit: Admit | None = None
    to_root: ToRoot | None = None
    #: Drops events the replay already delivered (None: keeps all).
    newer: Callable[[Any], bool] | None = None
    held: list[Any] = field(default_factory=list)
    #: Replayed events not yet yielded, for a subscription without a sink.
    replaying: list[Any] = field(default_factory=list)
    live: bool = False
    ended: asyncio.Future[BaseException | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    queue: asyncio.Queue[Any] | None = None
    #: Asked again every ``GATEWAY_LIVE_RECHECK_SECONDS`` whether the viewer may still receive.
    recheck: Recheck | None = None
    #: Handed to its operation's ``park``: the hub keeps it until it ends.
    parked: bool = False
    #: The execution it shares (plan, viewer or None) and its operation's sink, once the
    #: hub has delivered to it (:meth:`LiveHub._group_of`).
    group: tuple[_Plan, str | None] | None = None
    sink: LiveSink | None = None

    def end(self, error: BaseException | None = None) -> None:
        if not self.ended.done():
            self.ended.set_result(error)

    def on_end(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the subscription ends. What a resolver holds for the
        subscription's life goes here, not in a ``with`` around :meth:`events`: a parked
        subscription outlives its resolver."""
        self.ended.add_done_callback(lambda _: callback())

    async def go_live(
        self,
        admit: Admit,
        to_root: ToRoot,
        *,
        viewer: str | None,
        token: str | None,
        newer: Callable[[Any], bool] | None = None,
        per_viewer: bool = False,
        replay: Sequence[Any] = (),
        recheck: Recheck | None = None,
    ) -> None:
        """Start passing events on, as ``viewer`` sees them: ``replay`` first (events made
        from what was stored, as the broker would have brought them), then those held
        meanwhile and each as it arrives, the ones ``newer`` keeps (it drops what the
        replay held already). ``per_viewer``: never share one execution between viewers
        (a user's own channel, whose events are theirs). ``recheck``: how to ask again,
        now and then, whether the viewer may still receive (:meth:`LiveHub.recheck`)."""
        self.admit, self.to_root = admit, to_root
        self.viewer, self.token, self.per_viewer = viewer, token, per_viewer
        self.recheck = recheck
        if recheck is not None and viewer is not None:
            self.hub.rechecking()
        if self.operation is None:
            self.newer = newer
            self.replaying = list(replay)
            self.queue = asyncio.Queue()
            for event in self.held:
                self.queue.put_nowait(event)
            self.held.clear()
        else:
            # Events keep arriving (held) while the replay and the held ones are delivered.
            for event in replay:
                if self.ended.done():
                    break
                await self.hub.deliver(self.channel, event, [self])
            self.newer = newer
            while self.held and not self.ended.done():
                await self.hub.deliver(self.channel, self.held.pop(0), [self])
            self.held.clear()
        self.live = True

    async def events(self) -> AsyncIterator[Any]:
        """The roots to yield, for a subscription without a sink; with one, nothing (the
        hub writes its frames): at once when its operation can park it, else once the
        subscription ends. Raises the error that ended it."""
        operation = self.operation
        if operation is not None:
            if operation.park is not None and not self.ended.done():
                self.parked = True
                operation.parked = self
                # Each holds the other: let go once it ends, for reference counting to free both.
                self.ended.add_done_callback(operation.unparked)
                operation.park(self)
                return
            error = await self.ended
            if error is not None:
                raise error
            return
        assert self.queue is not None, "go_live() first"
        assert self.admit is not None and self.to_root is not None
        while self.replaying:
            event = self.replaying.pop(0)
            verdict = self.admit(event)
            if verdict in (Verdict.DELIVER, Verdict.DELIVER_THEN_END):
                yield self.to_root(event)
            if verdict in (Verdict.DELIVER_THEN_END, Verdict.END):
                self.end()
                return
        while True:
            getter = asyncio.ensure_future(self.queue.get())
            try:
                done, _ = await asyncio.wait({getter, self.ended}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                # Closed or cancelled while waiting (the client went away), the getter must
                # not be left pending: a pending task collected with its queue is logged as
                # destroyed.
                if not getter.done():
                    getter.cancel()
            if getter not in done:
                error = self.ended.result()
                if error is not None:
                    raise error
                return
            event = getter.result()
            verdict = self.verdict(event)
            if verdict in (Verdict.DELIVER, Verdict.DELIVER_THEN_END):
                assert self.to_root is not None
                yield self.to_root(event)
            if verdict in (Verdict.DELIVER_THEN_END, Verdict.END):
                self.end()
                return

    def verdict(self, event: Any) -> Verdict:
        if self.newer is not None and not self.newer(event):
            return Verdict.SKIP
        assert self.admit is not None
        return self.admit(event)


@dataclass
class _Channel:
    #: Done once the broker subscription exists (or failed).
    ready: asyncio.Future[None]
    follows: set[Follow] = field(default_factory=set)
    reader: asyncio.Task[None] | None = None


class _Plan:
    """One selection, executed over events: the operation parsed once and its executor
    built once; ``shared`` when no field it reads depends on the viewer."""

    def __init__(self, schema: GraphQLSchema, operation: LiveOperation, executor_class: type[Any]) -> None:
        document = parse(operation.query)
        self.shared = not _reads_viewer_fields(schema, document, operation.operation_name)
        self.document = document
        self.schema = schema
        self.variables = dict(operation.variables or {})
        self.operation_name = operation.operation_name
        self.executor_class = executor_class

    async def run(self, root: Any, context: Any) -> dict[str, Any]:
        """The result over ``root`` as the client receives it: data, and classified errors."""
        built = self.executor_class.build(
            self.schema,
            self.document,
            context_value=context,
            raw_variable_values=self.variables,
            operation_name=self.operation_name,
        )
        if isinstance(built, list):
            return {"data": None, "errors": built}
        result = built.build_per_event_executor(root).execute_operation()
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            result = await result
        out: dict[str, Any] = {"data": result.data}
        if result.errors:
            out["errors"] = list(result.errors)
        return out


def encode_result(result: dict[str, Any], request_id: str) -> bytes:
    """A result as the client receives it: errors classified and masked as every other
    result's are (``gateway/graph/errors.py``), then JSON."""
    errors = result.get("errors")
    if not errors:
        return orjson.dumps({"data": result.get("data")})
    formatted = [classify(error, request_id).formatted for error in errors]
    return orjson.dumps({"data": result.get("data"), "errors": formatted})


def ending_payload(error: BaseException, request_id: str = "") -> bytes:
    """The last result of a subscription that ``error`` ended, as its client receives it."""
    original = error if isinstance(error, Exception) else None
    errors = [GraphQLError(str(error), original_error=original)]
    return encode_result({"data": None, "errors": errors}, request_id)


class LiveHub:
    """The process's live delivery (see the module docstring)."""

    #: Distinct operations whose parsed plans are kept (a client sends few).
    MAX_PLANS = 1000
    #: Events a subscription holds while its resolver replays history.
    MAX_HELD = 1000

    def __init__(
        self,
        pubsub: PubSub,
        schema: GraphQLSchema,
        make_context: ContextFactory,
        executor_class: type[Any],
        *,
        encode: Callable[[dict[str, Any], str], bytes] = encode_result,
        on_delivered: Callable[[int, int], None] | None = None,
        recheck_seconds: float = 60.0,
        tracer: Tracer | None = None,
    ) -> None:
        self.pubsub = pubsub
        #: Makes a span of each event delivered (None: tracing is off).
        self.tracer = tracer
        self.schema = schema
        self.make_context = make_context
        self.encode = encode
        self.executor_class = executor_class
        self.on_delivered = on_delivered
        self.recheck_seconds = recheck_seconds
        self._channels: dict[str, _Channel] = {}
        self._plans: OrderedDict[tuple[str, str | None, str], _Plan] = OrderedDict()
        self._rechecks: asyncio.Task[None] | None = None

    def followers(self, channel: str) -> int:
        """How many subscriptions of this process follow ``channel``."""
        state = self._channels.get(channel)
        return len(state.follows) if state is not None else 0

    @contextlib.asynccontextmanager
    async def follow(self, *channels: str) -> AsyncIterator[Follow]:
        """Follow ``channels`` for the operation running now. Events are held from the
        moment each channel's broker subscription exists, which is before this yields,
        until :meth:`Follow.go_live`."""
        follow = Follow(self, channels[0] if channels else "", CURRENT_OPERATION.get())
        states: list[tuple[str, _Channel]] = []
        for channel in dict.fromkeys(channels):
            state = self._channels.get(channel)
            if state is None:
                state = self._channels[channel] = _Channel(ready=asyncio.get_running_loop().create_future())
                # A channel's reader serves every subscriber of the process: it runs in a context
                # of its own, not in the first subscriber's (its request id, its trace).
                state.reader = asyncio.create_task(self._read(channel, state), context=contextvars.Context())
            state.follows.add(follow)
            states.append((channel, state))
        try:
            for _, state in states:
                await asyncio.shield(state.ready)
            yield follow
        finally:
            if follow.parked and not follow.ended.done():
                # Parked: it follows on until it ends, with no task of its own.
                follow.ended.add_done_callback(lambda _: self._leave(follow, states))
            else:
                follow.end()
                self._leave(follow, states)

    def _leave(self, follow: Follow, states: list[tuple[str, _Channel]]) -> None:
        for channel, state in states:
            state.follows.discard(follow)
            if not state.follows and self._channels.get(channel) is state:
                del self._channels[channel]
                # Let go of the reader: its cancellation's traceback holds the state.
                reader, state.reader = state.reader, None
                if reader is not None:
                    reader.cancel()

    def rechecking(self) -> None:
        """Make sure the periodic recheck runs (while any follow has something to recheck)."""
        if self._rechecks is None or self._rechecks.done():
            self._rechecks = asyncio.create_task(self._recheck_every())

    async def _recheck_every(self) -> None:
        while True:
            await asyncio.sleep(self.recheck_seconds)
            if not await self.recheck():
                return

    async def recheck(self) -> int:
        """Ask again, for each :class:`Recheck` key, which subscribers may still receive,
        and end the others' subscriptions. How many subscriptions have something to
        recheck (0: nothing left to recheck)."""
        groups: dict[Hashable, tuple[Recheck, list[Follow]]] = {}
        pending = 0
        for state in list(self._channels.values()):
            for follow in state.follows:
                recheck = follow.recheck
                if recheck is None or follow.viewer is None or follow.ended.done():
                    continue
                pending += 1
                if not follow.live:  # asked next time, once what it replays is delivered
                    continue
                group = groups.get(recheck.key)
                if group is None:
                    groups[recheck.key] = (recheck, [follow])
                elif follow not in group[1]:
                    group[1].append(follow)
        for recheck, follows in groups.values():
            try:
                allowed = await recheck.allowed(frozenset(f.viewer for f in follows if f.viewer is not None))
            except CassandraUnavailable as exc:
                log.info("live recheck of %s postponed: %s", recheck.key, exc)
                continue
            except Exception:
                log.exception("live recheck of %s failed", recheck.key)
                continue
            for follow in follows:
                if follow.viewer not in allowed:
                    log.info("ending a live subscription of %s: no longer allowed", follow.viewer)
                    follow.end()
        return pending

    async def aclose(self) -> None:
        """Stop the periodic recheck (the channels' readers stop with their last follower)."""
        await cancel_and_wait(self._rechecks, what="the live recheck")

    async def inject(self, channel: str, event: Any) -> None:
        """Hand ``event`` to this process's subscriptions of ``channel`` as if the broker
        had brought it, and to no other process's."""
        state = self._channels.get(channel)
        if state is not None:
            await self._dispatch(channel, state, event)

    async def _read(self, channel: str, state: _Channel) -> None:
        error: BaseException | None = None
        try:
            async with self.pubsub.subscribe(channel) as events:
                state.ready.set_result(None)
                async for event in events:
                    await self._dispatch(channel, state, event)
        except BrokerUnavailable as exc:
            error = exc
        except asyncio.CancelledError:
            if not state.ready.done():
                state.ready.cancel()
            raise
        except Exception as exc:
            log.exception("live channel %s failed", channel)
            error = exc
        if self._channels.get(channel) is state:
            del self._channels[channel]
        if not state.ready.done():
            state.ready.set_exception(error or BrokerUnavailable("the channel closed"))
        for follow in list(state.follows):
            follow.end(error)

    async def _dispatch(self, channel: str, state: _Channel, event: Any) -> None:
        receivers: list[Follow] = []
        for follow in list(state.follows):
            if not follow.live:
                if len(follow.held) >= self.MAX_HELD:
                    follow.end(BrokerUnavailable("too many messages arrived while the subscription started"))
                else:
                    follow.held.append(event)
                continue
            if follow.queue is not None:
                follow.queue.put_nowait(event)
                continue
            receivers.append(follow)
        if receivers:
            await self.deliver(channel, event, receivers)

    async def deliver(self, channel: str, event: Any, follows: list[Follow]) -> None:
        """One event to subscribers with sinks: verdicts, one execution per group, frames;
        with tracing on, under a span of its own."""
        if self.tracer is None:
            await self._deliver(channel, event, follows)
            return
        attributes: dict[str, str | int] = {
            "messaging.operation.type": "process",
            "messaging.destination.name": channel,
            "gateway.subscribers": len(follows),
        }
        name = f"deliver {channel_kind(channel)}"
        with self.tracer.start_as_current_span(name, kind=SpanKind.CONSUMER, attributes=attributes) as span:
            groups, delivered, statements = await self._deliver(channel, event, follows)
            span.set_attribute("gateway.groups", groups)
            span.set_attribute("gateway.delivered", delivered)
            span.set_attribute("gateway.cql.statements", statements)

    async def _deliver(self, channel: str, event: Any, follows: list[Follow]) -> tuple[int, int, int]:
        """:meth:`deliver`'s work; the groups executed, results delivered and statements run."""
        groups: dict[tuple[Any, ...], tuple[_Plan, list[Follow]]] = {}
        ending: list[Follow] = []
        for follow in follows:
            if follow.ended.done():
                continue
            verdict = follow.verdict(event)
            if verdict is Verdict.SKIP:
                continue
            if verdict is Verdict.END:
                follow.end()
                continue
            if verdict is Verdict.DELIVER_THEN_END:
                ending.append(follow)
            key = follow.group
            if key is None:
                key = self._group_of(follow)
            group = groups.get(key)
            if group is None:
                groups[key] = (key[0], [follow])
            else:
                group[1].append(follow)
        delivered = statements = 0
        for (_, group_viewer), (plan, members) in groups.items():
            first = members[0]
            assert first.to_root is not None
            metrics = RequestMetrics()
            with measuring(metrics):
                context = self.make_context(group_viewer, None if group_viewer is None else first.token)
                try:
                    result = await plan.run(first.to_root(event), context)
                except Exception as exc:  # a resolver's failure reaches the group as an error
                    result = {"data": None, "errors": [GraphQLError(str(exc), original_error=exc)]}
            statements += metrics.statements
            payload = self.encode(result, getattr(context, "request_id", ""))
            made: dict[bytes, bytes] = {}
            for follow in members:
                sink = follow.sink
                assert sink is not None
                if sink.deliver(payload, made):
                    delivered += 1
                else:
                    follow.end()
        for follow in ending:
            follow.end()
        if self.on_delivered is not None and delivered:
            self.on_delivered(delivered, statements)
        return len(groups), delivered, statements

    def _group_of(self, follow: Follow) -> tuple[_Plan, str | None]:
        """Which execution ``follow`` shares: its selection's plan, and the viewer unless
        the plan reads nothing that depends on who asks. Found once per subscription."""
        operation = follow.operation
        assert operation is not None
        plan = operation.plan
        if plan is None:
            plan = operation.plan = self._plan(operation)
        shared = plan.shared and not follow.per_viewer
        follow.group = (plan, None if shared else follow.viewer)
        follow.sink = operation.sink
        return follow.group

    def _plan(self, operation: LiveOperation) -> _Plan:
        key = (operation.query, operation.operation_name, _frozen(operation.variables))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _Plan(self.schema, operation, self.executor_class)
            if len(self._plans) > self.MAX_PLANS:
                self._plans.popitem(last=False)
        else:
            self._plans.move_to_end(key)
        return plan


def _frozen(variables: Mapping[str, Any] | None) -> str:
    return orjson.dumps(variables or {}, option=orjson.OPT_SORT_KEYS).decode()


def _reads_viewer_fields(schema: GraphQLSchema, document: DocumentNode, operation_name: str | None) -> bool:
    """Whether the operation's selection reads a field marked :func:`viewer_dependent`."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    operations = [
        d
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
        and (operation_name is None or (d.name is not None and d.name.value == operation_name))
    ]
    root = schema.subscription_type
    pending: list[tuple[SelectionSetNode, Any]] = [(op.selection_set, root) for op in operations]
    seen: set[tuple[int, str]] = set()
    while pending:
        selection_set, parent = pending.pop()
        key = (id(selection_set), getattr(parent, "name", ""))
        if key in seen:
            continue
        seen.add(key)
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                fields = parent.fields if isinstance(parent, GraphQLObjectType | GraphQLInterfaceType) else {}
                definition = fields.get(selection.name.value)
                if definition is None:
                    continue
                strawberry_field = strawberry_definition(definition)
                metadata = getattr(strawberry_field, "metadata", None) or {}
                if metadata.get(VIEWER_DEPENDENT):
                    return True
                if selection.selection_set is not None:
                    pending.append((selection.selection_set, get_named_type(definition.type)))
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                scope = schema.get_type(condition.name.value) if condition else parent
                pending.append((selection.selection_set, scope))
            elif isinstance(selection, FragmentSpreadNode):
                fragment = fragments.get(selection.name.value)
                if fragment is not None:
                    pending.append(
                        (fragment.selection_set, schema.get_type(fragment.type_condition.name.value))
                    )
    return False
