"""A Jepsen-style workload for the ring tests: concurrent clients, every outcome recorded, and
a check of what the ring holds afterwards against what the clients were told.

Each client is one user driving the real GraphQL API (``tests/support/client.py``) in a closed loop:
direct messages with and without ``clientMessageId``, ``markConversationRead``, joining and
leaving one room, room messages and emails (each with or without ``clientMutationId``), and
reads. A request that fails with ``retrySafe: true`` (and a keyed mutation whose answer was
lost on the way) is sent again with the same key, as a real client would; any other failure
is recorded and left. Every request's outcome is kept: ok, or its code and ``retrySafe``.

The unread count of a pair (recipient R, sender S) is exact only if the order of S's sends
and R's marks is known. So a client takes the pair's lock for a send or a mark (retries
included): the pair's operations are then ordered as the clients saw them, while different
pairs, on one partition and across two gateway processes, run concurrently. A send or a mark
that failed has an unknown outcome; a lightweight transaction that failed is applied before
the next one on its partition or never (Paxos), so it is one of the two places in the pair's
history. The check walks the history and keeps every count the outcomes allow
(:func:`possible_unread`).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, Session
from cassandra.query import SimpleStatement, dict_factory

from gateway.db.timeline import bucket_of_timeuuid, validate_granularity
from gateway.messenger.records import conversation_id
from gateway.settings import Settings
from tests.support.client import Account, Api, Response
from tests.support.ids import uuid_of

SEND = """mutation($to: String!, $content: String!, $key: String) {
  sendMessage(to: $to, content: $content, clientMessageId: $key) { id }
}"""
MARK_READ = "mutation($with: String!) { markConversationRead(with: $with) { unreadCount } }"
JOIN = "mutation($n: String!) { joinRoom(name: $n) { name participantCount } }"
LEAVE = "mutation($n: String!) { leaveRoom(name: $n) }"
POST = """mutation($r: String!, $c: String!, $k: String) {
  postRoomMessage(room: $r, content: $c, clientMutationId: $k) { id }
}"""
SEND_EMAIL = "mutation($input: EmailInput!) { sendEmail(input: $input) { id } }"
PARTNERS = "{ me { talkPartners(first: 5) { nodes { unreadCount partner { login } } } } }"
HISTORY = "query($n: String!) { room(name: $n) { messages(first: 5) { nodes { id content } } } }"
FOLDERS = "{ me { folders { label unreadCount } } }"

#: Share of the creating mutations sent with an idempotency key.
KEYED_SHARE = 0.5
#: How long a client keeps retrying what it may retry (past the faults of a run).
RETRY_WINDOW = 150.0
#: A request with no answer after this long counts as lost on the way (TRANSPORT).
CLIENT_TIMEOUT = 60.0
#: Relative weights of a client's next operation.
MIX: dict[str, int] = {"send": 35, "mark": 12, "member": 10, "post": 15, "email": 13, "read": 15}

Pair = tuple[str, str]  # (recipient, sender)


@dataclass(frozen=True)
class Outcome:
    """One HTTP request: its operation, the phase of the run, and how it ended."""

    op: str
    phase: str
    code: str | None  # None: ok
    retry_safe: bool | None


@dataclass
class Sent:
    """One logical write (a send, post or email), after its retries."""

    author: str
    content: str  # unique: the message's content, or the email's subject
    key: str | None
    ok: bool
    id: UUID | None = None
    to: tuple[str, ...] = ()
    #: Requests of it that failed: each may have applied part of it (its outcome unknown).
    failures: int = 0


@dataclass
class PairEvent:
    kind: str  # "send" or "mark"
    ok: bool
    content: str | None = None


@dataclass
class Ledger:
    """Everything the clients did and were told."""

    phase: str = "start"
    requests: list[Outcome] = field(default_factory=list)
    ops: Counter[str] = field(default_factory=Counter)
    acknowledged: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)  # "op code" of logical operations
    dms: list[Sent] = field(default_factory=list)
    posts: list[Sent] = field(default_factory=list)
    emails: list[Sent] = field(default_factory=list)
    pairs: dict[Pair, list[PairEvent]] = field(default_factory=lambda: defaultdict(list))
    #: Per user, each join/leave: (op, ok, requests of it that failed).
    membership: dict[str, list[tuple[str, bool, int]]] = field(default_factory=lambda: defaultdict(list))

    def requests_failed_by_code(self) -> Counter[str]:
        return Counter(
            f"{o.code} retrySafe={o.retry_safe}" if o.code != "TRANSPORT" else "TRANSPORT"
            for o in self.requests
            if o.code is not None
        )

    def failed_of(self, op: str) -> int:
        return sum(n for name, n in self.failed.items() if name.split()[0] == op)

    def requests_by_phase(self) -> dict[str, tuple[int, int]]:
        """Per phase: (requests, failed requests)."""
        table: dict[str, list[int]] = {}
        for outcome in self.requests:
            row = table.setdefault(outcome.phase, [0, 0])
            row[0] += 1
            row[1] += outcome.code is not None
        return {phase: (n, bad) for phase, (n, bad) in table.items()}


def _ok(response: Response | None) -> bool:
    return response is not None and not response.errors and response.data is not None


class Client:
    """One user's closed loop of operations against one gateway."""

    def __init__(
        self,
        api: Api,
        me: Account,
        *,
        ledger: Ledger,
        locks: dict[Pair, asyncio.Lock],
        send_to: list[Account],
        senders: list[Account],
        everyone: list[Account],
        room: str,
        seed: int,
    ) -> None:
        self.api = api
        self.me = me
        self.ledger = ledger
        self.locks = locks
        self.send_to = send_to
        self.senders = senders
        self.everyone = [account for account in everyone if account.login != me.login]
        self.room = room
        self.rng = random.Random(seed)
        self.member: bool | None = False
        self.failures = 0
        self.seq = itertools.count()
        self.ops: dict[str, Callable[[], Any]] = {
            "send": self.send,
            "mark": self.mark,
            "member": self.membership,
            "post": self.post,
            "email": self.email,
            "read": self.read,
        }

    async def run(self, stop: asyncio.Event) -> None:
        names, weights = list(MIX), list(MIX.values())
        while not stop.is_set():
            name = self.rng.choices(names, weights)[0]
            await self.ops[name]()

    # -- requests ----------------------------------------------------------------

    async def request(self, op: str, query: str, variables: dict[str, Any]) -> Response | None:
        phase = self.ledger.phase
        try:
            response = await asyncio.wait_for(
                self.api.call(query, variables, token=self.me.token), CLIENT_TIMEOUT
            )
        except Exception:  # no answer: the connection failed or timed out on the way
            self.ledger.requests.append(Outcome(op, phase, "TRANSPORT", None))
            return None
        if response.errors:
            extensions = response.errors[0].get("extensions", {})
            self.ledger.requests.append(
                Outcome(op, phase, extensions.get("code"), extensions.get("retrySafe"))
            )
        else:
            self.ledger.requests.append(Outcome(op, phase, None, None))
        return response

    async def attempt(
        self, op: str, query: str, variables: dict[str, Any], *, retry: bool
    ) -> Response | None:
        """One logical operation: sent again while it may be (``retry``: a keyed mutation or a
        query) and its failure says ``retrySafe`` or no answer came, within ``RETRY_WINDOW``.
        ``self.failures`` is left with the number of its requests that failed."""
        self.ledger.ops[op] += 1
        self.failures = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RETRY_WINDOW
        delay = 0.1
        while True:
            response = await self.request(op, query, variables)
            if _ok(response):
                self.ledger.acknowledged[op] += 1
                return response
            self.failures += 1
            safe = response is None or response.errors[0].get("extensions", {}).get("retrySafe") is True
            if not (retry and safe) or loop.time() > deadline:
                code = "TRANSPORT" if response is None else response.codes[0]
                self.ledger.failed[f"{op} {code}"] += 1
                return response
            await asyncio.sleep(self.rng.uniform(delay / 2, delay))
            delay = min(delay * 2, 2.0)

    def _key(self) -> str | None:
        return f"k-{uuid.uuid4()}" if self.rng.random() < KEYED_SHARE else None

    def _content(self, kind: str) -> str:
        return f"{kind} {self.me.login} {next(self.seq)} {uuid.uuid4().hex[:8]}"

    # -- operations --------------------------------------------------------------

    async def send(self) -> None:
        to = self.rng.choice(self.send_to)
        pair = (to.login, self.me.login)
        key, content = self._key(), self._content("dm")
        async with self.locks[pair]:
            response = await self.attempt(
                "sendMessage", SEND, {"to": to.login, "content": content, "key": key}, retry=key is not None
            )
            ok = _ok(response)
            self.ledger.pairs[pair].append(PairEvent("send", ok, content))
        sent = Sent(self.me.login, content, key, ok, to=(to.login,), failures=self.failures)
        if ok and response is not None and response.data is not None:
            sent.id = uuid_of(response.data["sendMessage"]["id"])
        self.ledger.dms.append(sent)

    async def mark(self) -> None:
        if not self.senders:
            return
        sender = self.rng.choice(self.senders)
        pair = (self.me.login, sender.login)
        async with self.locks[pair]:
            response = await self.attempt(
                "markConversationRead", MARK_READ, {"with": sender.login}, retry=False
            )
            self.ledger.pairs[pair].append(PairEvent("mark", _ok(response)))

    async def membership(self) -> None:
        leaving = self.member is True or (self.member is None and self.rng.random() < 0.5)
        op, query = ("leaveRoom", LEAVE) if leaving else ("joinRoom", JOIN)
        response = await self.attempt(op, query, {"n": self.room}, retry=False)
        ok = _ok(response)
        self.ledger.membership[self.me.login].append((op, ok, self.failures))
        self.member = (not leaving) if ok else None

    async def post(self) -> None:
        if self.member is False:
            await self.membership()  # join first: posting is for participants
            return
        key, content = self._key(), self._content("post")
        response = await self.attempt(
            "postRoomMessage", POST, {"r": self.room, "c": content, "k": key}, retry=key is not None
        )
        sent = Sent(self.me.login, content, key, _ok(response), failures=self.failures)
        if sent.ok and response is not None and response.data is not None:
            sent.id = uuid_of(response.data["postRoomMessage"]["id"])
            self.member = True
        elif response is not None and response.codes[:1] == ["FORBIDDEN"]:
            self.member = False  # told: not a participant
        self.ledger.posts.append(sent)

    async def email(self) -> None:
        to = tuple(a.login for a in self.rng.sample(self.everyone, self.rng.choice((1, 2))))
        key, subject = self._key(), self._content("mail")
        variables = {"input": {"to": list(to), "subject": subject, "body": "b", "clientMutationId": key}}
        response = await self.attempt("sendEmail", SEND_EMAIL, variables, retry=key is not None)
        sent = Sent(self.me.login, subject, key, _ok(response), to=to, failures=self.failures)
        if sent.ok and response is not None and response.data is not None:
            sent.id = uuid_of(response.data["sendEmail"]["id"])
        self.ledger.emails.append(sent)

    async def read(self) -> None:
        choice = self.rng.randrange(3)
        if choice == 0:
            await self.attempt("talkPartners", PARTNERS, {}, retry=True)
        elif choice == 1 and self.member:  # a room's messages are for its participants
            await self.attempt("roomHistory", HISTORY, {"n": self.room}, retry=True)
        else:
            await self.attempt("folders", FOLDERS, {}, retry=True)


# -- the check -----------------------------------------------------------------------


def possible_unread(events: Iterable[PairEvent], stored: set[str]) -> set[int]:
    """Every unread count the pair's history allows, in the order the clients saw it.

    A send that succeeded counts one; one that failed counts one if its message is stored
    (the count comes first) and maybe one if not (its count may have applied before the
    write failed: "one high until the recipient marks the conversation read"). A mark that
    succeeded zeroes; one that failed maybe.
    """
    counts = {0}
    for event in events:
        if event.kind == "send":
            if event.ok or event.content in stored:
                counts = {n + 1 for n in counts}
            else:
                counts |= {n + 1 for n in counts}
        elif event.ok:
            counts = {0}
        else:
            counts |= {0}
    return counts


@dataclass
class Findings:
    """What the check found; ``lost``, ``duplicated`` and the mismatches must be empty."""

    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    unread_mismatches: list[str] = field(default_factory=list)
    room_mismatches: list[str] = field(default_factory=list)
    mail_mismatches: list[str] = field(default_factory=list)
    #: Counters off by what requests that failed (outcome unknown) may have left undone:
    #: allowed, listed, and what a repair settles.
    explained: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)

    @property
    def counter_mismatches(self) -> int:
        return len(self.unread_mismatches) + len(self.room_mismatches) + len(self.mail_mismatches)


class Ring:
    """A plain driver session over the ring, reading at LOCAL_QUORUM (LOCAL_SERIAL for the
    cells only lightweight transactions write)."""

    def __init__(self, settings: Settings) -> None:
        profile = ExecutionProfile(
            consistency_level=ConsistencyLevel.LOCAL_QUORUM,
            serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL,
            row_factory=dict_factory,
            request_timeout=60,
        )
        self.cluster = Cluster(
            list(settings.contact_points),
            port=settings.cassandra_port,
            protocol_version=5,
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        )
        self.session: Session = self.cluster.connect()
        self.keyspace = settings.keyspace
        self.settings = settings

    def close(self) -> None:
        self.cluster.shutdown()

    def rows(self, cql: str, params: tuple[Any, ...] = (), *, serial: bool = False) -> list[dict[str, Any]]:
        text = cql.replace("{ks}", self.keyspace)
        level = ConsistencyLevel.LOCAL_SERIAL if serial else ConsistencyLevel.LOCAL_QUORUM
        statement = SimpleStatement(text, consistency_level=level, fetch_size=1000)
        return list(self.session.execute(statement, params))

    def replicas(self, cql: str, params: tuple[Any, ...]) -> list[str]:
        """The addresses of the replicas of the partition ``cql`` reads, the primary first."""
        bound = self.session.prepare(cql.replace("{ks}", self.keyspace)).bind(params)
        hosts = self.cluster.metadata.get_replicas(self.keyspace, bound.routing_key)
        return [host.address for host in hosts]

    def drop_keyspace(self) -> None:
        self.session.execute(f"DROP KEYSPACE IF EXISTS {self.keyspace}", timeout=120)

    # -- reading back ------------------------------------------------------------

    def _buckets(self, index: str, key_cql: str, key: tuple[Any, ...], known: set[int]) -> set[int]:
        found = {
            row["bucket"] for row in self.rows(f"SELECT bucket FROM {{ks}}.{index} WHERE {key_cql}", key)
        }
        return found | known

    def check(self, ledger: Ledger, users: list[Account], room_id: UUID) -> Findings:
        found = Findings()
        self._check_messages(ledger, found)
        self._check_room(ledger, users, room_id, found)
        self._check_mail(ledger, users, found)
        return found

    def _check_messages(self, ledger: Ledger, found: Findings) -> None:
        granularity = validate_granularity(self.settings.messenger_bucket)
        by_conversation: dict[str, list[Sent]] = defaultdict(list)
        for dm in ledger.dms:
            by_conversation[conversation_id(dm.author, dm.to[0])].append(dm)
        stored_contents: set[str] = set()
        for conversation, sends in by_conversation.items():
            known = {bucket_of_timeuuid(dm.id, granularity) for dm in sends if dm.id is not None}
            buckets = self._buckets("direct_message_buckets", "conversation_id = %s", (conversation,), known)
            rows = [
                row
                for bucket in sorted(buckets)
                for row in self.rows(
                    "SELECT message_id, sender, content, client_message_id FROM {ks}.direct_messages"
                    " WHERE conversation_id = %s AND bucket = %s",
                    (conversation, bucket),
                )
            ]
            by_id = {row["message_id"]: row for row in rows}
            contents = Counter(row["content"] for row in rows)
            keys = Counter(
                (row["sender"], row["client_message_id"]) for row in rows if row["client_message_id"]
            )
            stored_contents |= set(contents)
            for dm in sends:
                found.checked["direct messages"] += 1
                if dm.ok and (dm.id not in by_id or by_id[dm.id]["content"] != dm.content):
                    found.lost.append(f"direct message {dm.content!r} ({dm.id}) acknowledged, not stored")
                if not dm.ok and contents[dm.content]:
                    found.notes.append(f"a failed send was stored: {dm.content!r}")
            found.duplicated += [
                f"direct message {c!r} stored {n} times" for c, n in contents.items() if n > 1
            ]
            found.duplicated += [f"clientMessageId {k} stored {n} times" for k, n in keys.items() if n > 1]
            logged = {dm.content for dm in sends}
            found.notes += [f"a message nobody sent: {c!r}" for c in contents if c not in logged]
        for (recipient, sender), events in ledger.pairs.items():
            rows = self.rows(
                "SELECT unread FROM {ks}.talk_partners WHERE owner = %s AND row_kind = 0 AND partner = %s"
                " AND client_message_id = ''",
                (recipient, sender),
                serial=True,
            )
            unread = (rows[0]["unread"] or 0) if rows else 0
            allowed = possible_unread(events, stored_contents)
            found.checked["unread counts"] += 1
            if len(allowed) == 1:
                found.checked["unread counts exact"] += 1
            if unread not in allowed:
                history = " ".join(f"{e.kind}:{'ok' if e.ok else 'failed'}" for e in events[-12:])
                found.unread_mismatches.append(
                    f"unread of {recipient} from {sender} is {unread}, the outcomes allow {sorted(allowed)};"
                    f" last events: {history}"
                )

    def _check_room(self, ledger: Ledger, users: list[Account], room_id: UUID, found: Findings) -> None:
        participants = {
            row["login"]
            for row in self.rows("SELECT login FROM {ks}.room_participants WHERE room_id = %s", (room_id,))
        }
        counted = self.rows(
            "SELECT participants FROM {ks}.room_participant_counts WHERE room_id = %s", (room_id,)
        )
        count = (counted[0]["participants"] or 0) if counted else 0
        listed = set()
        for user in users:
            rows = self.rows("SELECT room_id FROM {ks}.user_rooms WHERE login = %s", (user.login,))
            if any(row["room_id"] == room_id for row in rows):
                listed.add(user.login)
        found.checked["room participants"] = len(participants)
        # The last join or leave of each user, and the joins and leaves that failed.
        final: dict[str, bool | None] = {}
        uncertain = 0
        for login, history in ledger.membership.items():
            state: bool | None = False
            for op, ok, failures in history:
                state = (op == "joinRoom") if ok else None
                uncertain += failures > 0
            final[login] = state
            if state is True and login not in participants:
                found.lost.append(f"{login} joined (acknowledged), is no participant")
            if state is False and login in participants:
                found.room_mismatches.append(f"{login} left (acknowledged), is a participant")
        # A count moves after its join or leave applied, by a counter update: one whose answer
        # was lost may or may not have applied, and is not sent again.
        off = f"participant count {count}, participant rows {len(participants)}"
        if abs(count - len(participants)) > uncertain:
            found.room_mismatches.append(f"{off}; only {uncertain} joins and leaves failed")
        elif count != len(participants):
            found.explained.append(f"{off}; {uncertain} joins and leaves failed")
        if listed - participants:
            found.room_mismatches.append(
                f"listing the room, not participants: {sorted(listed - participants)}"
            )
        unlisted = participants - listed
        # The creator joined by creating it; whoever else never joined is no participant.
        unexplained = sorted(login for login in unlisted if final.get(login, True) is not None)
        if unexplained:
            found.room_mismatches.append(f"participants without the room in their list: {unexplained}")
        if unlisted - set(unexplained):  # "joining again repairs it" (``member_store.py``)
            found.notes.append(
                f"participants whose last join failed, the room not in their list: {sorted(unlisted)}"
            )
        history_granularity = validate_granularity(self.settings.room_bucket)
        known = {bucket_of_timeuuid(p.id, history_granularity) for p in ledger.posts if p.id is not None}
        buckets = self._buckets("room_message_buckets", "room_id = %s", (room_id,), known)
        rows = [
            row
            for bucket in sorted(buckets)
            for row in self.rows(
                "SELECT message_id, content FROM {ks}.room_messages WHERE room_id = %s AND bucket = %s",
                (room_id, bucket),
            )
        ]
        by_id = {row["message_id"]: row["content"] for row in rows}
        contents = Counter(row["content"] for row in rows)
        for post in ledger.posts:
            found.checked["room messages"] += 1
            if post.ok and by_id.get(post.id) != post.content:
                found.lost.append(f"room message {post.content!r} ({post.id}) acknowledged, not stored")
        posted = {post.content for post in ledger.posts}
        found.duplicated += [
            f"room message {c!r} stored {n} times" for c, n in contents.items() if n > 1 and c in posted
        ]

    def _check_mail(self, ledger: Ledger, users: list[Account], found: Findings) -> None:
        granularity = validate_granularity(self.settings.mail_bucket)
        known = {bucket_of_timeuuid(e.id, granularity) for e in ledger.emails if e.id is not None}
        listings: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for user in users:
            for label in ("inbox", "sent"):
                buckets = self._buckets(
                    "email_folder_buckets", "username = %s AND label = %s", (user.login, label), known
                )
                listings[(user.login, label)] = [
                    row
                    for bucket in sorted(buckets)
                    for row in self.rows(
                        "SELECT id, subject, read FROM {ks}.emails_by_user_folder"
                        " WHERE username = %s AND label = %s AND bucket = %s",
                        (user.login, label, bucket),
                    )
                ]
        for email in ledger.emails:
            found.checked["emails"] += 1
            if not email.ok:
                continue
            if not self.rows("SELECT id FROM {ks}.emails WHERE id = %s", (email.id,)):
                found.lost.append(f"email {email.content!r} ({email.id}) acknowledged, not stored")
            for login, label in [(r, "inbox") for r in email.to] + [(email.author, "sent")]:
                if email.id not in {row["id"] for row in listings[(login, label)]}:
                    found.lost.append(f"email {email.content!r} acknowledged, not in {login}'s {label}")
        for (login, label), rows in listings.items():
            subjects = Counter(row["subject"] for row in rows)
            found.duplicated += [
                f"email {s!r} filed {n} times in {login}'s {label}" for s, n in subjects.items() if n > 1
            ]
        for user in users:
            counters = {
                row["label"]: row["unread"] or 0
                for row in self.rows(
                    "SELECT label, unread FROM {ks}.unread_email_stats WHERE username = %s", (user.login,)
                )
            }
            # A counter moves once the email is filed everywhere, by a counter update: one whose
            # answer was lost may not have applied, and is not sent again (never counted twice).
            uncertain = sum(1 for email in ledger.emails if user.login in email.to and email.failures)
            for label in ("inbox", "sent"):
                recount = sum(1 for row in listings[(user.login, label)] if not row["read"])
                counter = counters.get(label, 0)
                found.checked["mail counters"] += 1
                off = f"{user.login}'s {label} counter {counter}, recount {recount}"
                if counter > recount or recount - counter > (uncertain if label == "inbox" else 0):
                    found.mail_mismatches.append(f"{off}; {uncertain} sends to them failed")
                elif counter != recount:
                    found.explained.append(f"{off}; {uncertain} sends to them failed")
