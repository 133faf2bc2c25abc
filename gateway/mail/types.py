"""The mail domain's object types: ``Folder`` (with its emails), ``EmailSummary``,
``Email`` and ``Attachment``; ``folder_node`` finds one of the viewer's folders for
``Query.node``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from datetime import datetime
from uuid import UUID

import strawberry
from strawberry.types import Info

from gateway.db.idempotency import MutationKeys
from gateway.errors import BadUserInput, NotFound
from gateway.graph.context import Context, context_of
from gateway.graph.cost import max_items, text_bound
from gateway.graph.node import ID_DESCRIPTION, Node, global_id, parse_global_id
from gateway.graph.pagination import (
    After,
    Before,
    Connection,
    First,
    Last,
    decode_position,
    page_request,
    position_cursor,
)
from gateway.graph.plain_fields import computed_field, source_field
from gateway.graph.selection import selects
from gateway.mail import rules
from gateway.mail.links import DownloadLinks, SignedLink
from gateway.mail.loaders import unread_counts_loader
from gateway.mail.records import AttachmentRecord, EmailRecord, FolderEntry, FolderRecord, Placement
from gateway.mail.service import MailService
from gateway.mail.store import MailStore
from gateway.mail.uploads import MAX_FILES
from gateway.users.loaders import user_loader
from gateway.users.types import (
    Prefetched,
    User,
    load_users,
    prefetched_user_field,
    require_user,
    users_by_login,
)

EMAILS_PAGE = 50


@strawberry.type(description="A file attached to an email.")
class Attachment:
    id: strawberry.ID = strawberry.field(description="Unique among all attachments (a UUID).")
    filename: str = strawberry.field(
        description="The file's name as uploaded, without any directory part or control characters; at "
        "most 255 characters, never empty. Unique within its email: the download URL names it."
    )
    content_type: str = strawberry.field(
        description="The media type (`image/png`): as the upload declared it, else guessed from the name, "
        "else `application/octet-stream`. Downloads are served with it."
    )
    size: int = strawberry.field(description="The file's size in bytes (at most 25 MB).")
    chunk_count: int = strawberry.field(description="Stored chunks of at most 1000 KiB.")
    _email_id: strawberry.Private[UUID]
    _link: strawberry.Private[SignedLink | None] = None

    async def _signed(self, info: Info) -> SignedLink:
        if self._link is None:
            context = context_of(info)
            viewer = await context.require_viewer()
            links = context.store(DownloadLinks)
            self._link = links.mint(self._email_id, self.filename, viewer)
        return self._link

    @strawberry.field(
        description="URL of the download, signed for you: it works without the Authorization header "
        "(in an <img>, a download manager) until urlExpiresAt. Absolute when the gateway is configured "
        "with its public URL; otherwise a path (/attachments/...) on the origin this API is served from. "
        "Honours Range, ETag and If-None-Match."
    )
    async def url(self, info: Info) -> str:
        return (await self._signed(info)).url

    @strawberry.field(
        description="When url stops working (at least GATEWAY_DOWNLOAD_URL_TTL_SECONDS after "
        "this response); ask for the attachment again for a fresh one."
    )
    async def url_expires_at(self, info: Info) -> datetime:
        return (await self._signed(info)).expires_at

    @classmethod
    def of(cls, email: EmailRecord, record: AttachmentRecord) -> Attachment:
        return cls(
            id=strawberry.ID(str(record.attachment_id)),
            filename=record.filename,
            content_type=record.content_type,
            size=record.size,
            chunk_count=record.chunk_count,
            _email_id=email.id,
        )


def _summary_id(self: EmailSummary) -> strawberry.ID:
    return global_id("EmailSummary", self._owner, self._label, str(self._entry.id))


@strawberry.type(description="An email as a folder lists it.")
class EmailSummary:
    """Fields are read from the folder's row when the query selects them, and resolve on
    the plain-fields path."""

    _entry: strawberry.Private[FolderEntry]
    _owner: strawberry.Private[str]
    _label: strawberry.Private[str]
    #: Senders prefetched by the page resolver; None: not prefetched.
    _senders: strawberry.Private[Prefetched] = None

    id: strawberry.ID = computed_field(
        _summary_id, description="Unique among all objects: not the email's own id (see `email`)."
    )
    subject: str = source_field("_entry.subject", description="At most 200 characters; may be empty.")
    sent_at: datetime = source_field(
        "_entry.sent_at", description="When it was sent; folders are ordered by it."
    )
    read: bool = source_field("_entry.read", description="Whether you have read it.")
    has_attachments: bool = source_field(
        "_entry.has_attachments", description="Whether it has attachments (listed on `email`)."
    )
    from_: User | Awaitable[User] = prefetched_user_field(
        lambda e: e._entry.sender, users="_senders", name="from", description="Who sent it."
    )

    @strawberry.field(
        description="The email itself, with its body and attachments; NOT_FOUND when it left your mailbox "
        "since the page was read."
    )
    async def email(self, info: Info) -> Email:
        found = await email_node(info, self._owner, str(self._entry.id))
        if found is None:  # moved or gone since the page was read
            raise NotFound("That email is no longer in your mailbox.")
        return found

    @classmethod
    def of(cls, entry: FolderEntry, owner: str, label: str, senders: Prefetched = None) -> EmailSummary:
        return cls(_entry=entry, _owner=owner, _label=label, _senders=senders)


@strawberry.type(description="One email, as its sender or a recipient sees it.")
class Email(Node):
    id: strawberry.ID = strawberry.field(
        description=f"{ID_DESCRIPTION} Yours: another recipient's view of the email has another id."
    )
    subject: str = strawberry.field(description="At most 200 characters; may be empty.")
    body: str = strawberry.field(
        description="The text, exactly as written: at most 100 000 characters.",
        metadata=text_bound(rules.BODY_MAX),
    )
    sent_at: datetime = strawberry.field(description="When it was sent.")
    read: bool = strawberry.field(description="Whether you have read it.")
    folder: str = strawberry.field(description="The label of your folder that holds it.")
    attachments: list[Attachment] = strawberry.field(
        description="Its files, in the order they were sent (at most 20).", metadata=max_items(MAX_FILES)
    )
    _record: strawberry.Private[EmailRecord]

    @strawberry.field(name="from", description="Who sent it.")
    async def from_(self, info: Info) -> User:
        return await require_user(info, self._record.sender)

    @strawberry.field(
        description="Its recipients, in the order they were given (1-100).",
        metadata=max_items(rules.MAX_RECIPIENTS),
    )
    async def to(self, info: Info) -> list[User]:
        return await load_users(info, self._record.recipients)

    @classmethod
    def of(cls, email: EmailRecord, placement: Placement, owner: str) -> Email:
        return cls(
            id=global_id("Email", owner, str(email.id)),
            subject=email.subject,
            body=email.body,
            sent_at=email.sent_at,
            read=placement.read,
            folder=placement.label,
            attachments=[Attachment.of(email, a) for a in email.attachments],
            _record=email,
        )


@strawberry.type(description="A mail folder: inbox, sent, or one of your own.")
class Folder(Node):
    label: str = strawberry.field(
        description="Its name, unique among your folders: `inbox`, `sent`, or one you created (lower-case)."
    )
    color: str = strawberry.field(description="`#rrggbb`, lower-case; grey (`#9e9e9e`) unless chosen.")
    unread_count: int = strawberry.field(description="How many of its emails you have not read.")
    _login: strawberry.Private[str]

    @strawberry.field(description="The folder's emails, newest first.")
    async def emails(
        self,
        info: Info,
        first: First = EMAILS_PAGE,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[EmailSummary]:
        request = page_request(info, first, after, last, before, EMAILS_PAGE)
        position = decode_position(request.cursor, request.cursor_field)
        page = (
            await context_of(info)
            .store(MailStore)
            .folder_page(
                self._login, self.label, size=request.size, cursor=position, backward=request.backward
            )
        )
        senders = None
        if selects(info, "from"):
            senders = await users_by_login(info, (entry.sender for _, entry in page.items))
        edges = [
            (position_cursor(pos), EmailSummary.of(entry, self._login, self.label, senders))
            for pos, entry in page.items
        ]
        return Connection.paged(request, edges, page.more, page.beyond)

    @classmethod
    def of(cls, login: str, record: FolderRecord, unread: int) -> Folder:
        # A counter can dip below zero after a lost write until it is recounted.
        return cls(
            id=global_id("Folder", login, record.label),
            label=record.label,
            color=record.color,
            unread_count=max(0, unread),
            _login=login,
        )


async def load_folder(info: Info, owner: str, label: str) -> Folder | None:
    key = rules.label_or_none(label)
    if key is None:
        return None
    context = context_of(info)
    record = await context.store(MailStore).folder(owner, key)
    if record is None:
        return None
    counts = await context.loader(unread_counts_loader).load(owner)
    return Folder.of(owner, record, counts.get(key, 0))


async def folder_node(info: Info, owner: str, label: str) -> Folder | None:
    """``node``'s lookup of a ``Folder`` global id: only the owner's own folders."""
    if await context_of(info).viewer() != owner:
        return None
    return await load_folder(info, owner, label)


def mail_service(context: Context) -> MailService:
    return MailService(
        context.store(MailStore), context.loader(user_loader).load_many, MutationKeys(context.db)
    )


def email_key(value: str, field: str = "id") -> UUID | None:
    """The email an ``id`` argument names: an ``Email`` or ``EmailSummary`` global id, or the
    email's time-based UUID (which clients of the first releases hold); None for anything else."""
    with contextlib.suppress(BadUserInput):
        type_name, key = parse_global_id(value, field)
        if type_name in ("Email", "EmailSummary"):
            return rules.email_id_or_none(key.rsplit(":", 1)[-1])
    return rules.email_id_or_none(value)


async def email_node(info: Info, owner: str, email_id: str) -> Email | None:
    """``node``'s lookup of an ``Email`` global id: only the owner's own view of it."""
    context = context_of(info)
    key = rules.email_id_or_none(email_id)
    if key is None or await context.viewer() != owner:
        return None
    record = await mail_service(context).visible_email(owner, key)
    if record is None:
        return None
    placement = await context.store(MailStore).placement(owner, record)
    return Email.of(record, placement, owner)
