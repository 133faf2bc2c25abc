"""Mail: folders with unread counts, emails, attachments; queries on ``Me`` and mutations."""

from __future__ import annotations

import re
from collections.abc import Awaitable
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import strawberry
from strawberry.file_uploads import Upload
from strawberry.types import Info

from gateway.db import clock
from gateway.db.clock import new_timeuuid
from gateway.errors import BadUserInput, Conflict, NotFound
from gateway.graph import validation
from gateway.graph.context import context_of
from gateway.graph.pagination import Connection, decode_position, page_size, position_cursor
from gateway.graph.selection import selects
from gateway.mail.loaders import unread_counts_loader
from gateway.mail.names import download_path, unique_filenames
from gateway.mail.records import (
    DEFAULT_COLOR,
    SYSTEM_FOLDERS,
    AttachmentRecord,
    EmailRecord,
    FolderEntry,
    FolderRecord,
    Placement,
)
from gateway.mail.store import MailStore, NotInFolder
from gateway.mail.uploads import MAX_FILES, RefusedUpload, StoredUpload
from gateway.users.loaders import user_loader
from gateway.users.schema import Prefetched, User, load_users, prefetched_user, require_user, users_by_login

LABEL = re.compile(r"^[a-z0-9][a-z0-9_-]{0,29}$")
COLOR = re.compile(r"^#[0-9a-f]{6}$")
MAX_RECIPIENTS = 100
MAX_FOLDERS = 100
SUBJECT_MAX = 200
BODY_MAX = 100_000
EMAILS_PAGE = 50


def _label(value: str, field: str) -> str:
    return validation.pattern(
        value.strip().lower(), field, LABEL,
        "must be 1-30 characters: a letter or digit, then letters, digits, '_' or '-'.",
    )


def _color(value: str | None) -> str:
    if value is None:
        return DEFAULT_COLOR
    return validation.pattern(value.strip().lower(), "color", COLOR, "must be a colour like #1a73e8.")


def _email_id(value: str) -> UUID | None:
    """A time-based UUID, or None for anything else."""
    try:
        parsed = UUID(value.strip())
    except (ValueError, AttributeError):
        return None
    return parsed if parsed.version == 1 else None


@strawberry.type(description="A file attached to an email.")
class Attachment:
    filename: str
    content_type: str
    size: int = strawberry.field(description="Bytes.")
    chunk_count: int = strawberry.field(description="Stored chunks of at most 1000 KiB.")
    url: str = strawberry.field(
        description="Path of the download (GET, same bearer token), relative to the API's origin."
    )

    @classmethod
    def of(cls, email: EmailRecord, record: AttachmentRecord) -> Attachment:
        return cls(
            filename=record.filename,
            content_type=record.content_type,
            size=record.size,
            chunk_count=record.chunk_count,
            url=download_path(str(email.id), record.filename),
        )


@strawberry.type(description="An email as a folder lists it.")
class EmailSummary:
    id: strawberry.ID
    subject: str
    sent_at: datetime
    read: bool
    has_attachments: bool
    _sender: strawberry.Private[str]
    #: Senders prefetched by the page resolver; None: not prefetched.
    _senders: strawberry.Private[Prefetched] = None

    @strawberry.field(name="from", graphql_type=User)
    def from_(self, info: Info) -> User | Awaitable[User]:
        return prefetched_user(info, self._senders, self._sender)

    @classmethod
    def of(cls, entry: FolderEntry, senders: Prefetched = None) -> EmailSummary:
        return cls(
            id=strawberry.ID(str(entry.id)),
            subject=entry.subject,
            sent_at=entry.sent_at,
            read=entry.read,
            has_attachments=entry.has_attachments,
            _sender=entry.sender,
            _senders=senders,
        )


@strawberry.type(description="One email, as its sender or a recipient sees it.")
class Email:
    id: strawberry.ID
    subject: str
    body: str
    sent_at: datetime
    read: bool = strawberry.field(description="Whether you have read it.")
    folder: str = strawberry.field(description="The label of your folder that holds it.")
    attachments: list[Attachment]
    _record: strawberry.Private[EmailRecord]

    @strawberry.field(name="from")
    async def from_(self, info: Info) -> User:
        return await require_user(info, self._record.sender)

    @strawberry.field
    async def to(self, info: Info) -> list[User]:
        return await load_users(info, self._record.recipients)

    @classmethod
    def of(cls, email: EmailRecord, placement: Placement) -> Email:
        return cls(
            id=strawberry.ID(str(email.id)),
            subject=email.subject,
            body=email.body,
            sent_at=email.sent_at,
            read=placement.read,
            folder=placement.label,
            attachments=[Attachment.of(email, a) for a in email.attachments],
            _record=email,
        )


@strawberry.type(description="A mail folder: inbox, sent, or one of your own.")
class Folder:
    label: str
    color: str
    unread_count: int
    _login: strawberry.Private[str]

    @strawberry.field(description="The folder's emails, newest first.")
    async def emails(
        self, info: Info, first: int | None = EMAILS_PAGE, after: str | None = None
    ) -> Connection[EmailSummary]:
        size = page_size(info, first, EMAILS_PAGE)
        position = decode_position(after)
        if size == 0:
            return Connection.empty()
        page = await context_of(info).store(MailStore).folder_page(
            self._login, self.label, first=size, after=position
        )
        senders = None
        if selects(info, "from"):
            senders = await users_by_login(info, (entry.sender for _, entry in page.items))
        return Connection.of(
            [(position_cursor(pos), EmailSummary.of(entry, senders)) for pos, entry in page.items],
            page.has_next,
        )

    @classmethod
    def of(cls, login: str, record: FolderRecord, unread: int) -> Folder:
        # A counter can dip below zero after a lost write until it is recounted.
        return cls(label=record.label, color=record.color, unread_count=max(0, unread), _login=login)


@strawberry.input(description="A new email. Attachments go as multipart file uploads.")
class EmailInput:
    to: list[str] = strawberry.field(description=f"1-{MAX_RECIPIENTS} logins.")
    subject: str = strawberry.field(description=f"At most {SUBJECT_MAX} characters.")
    body: str = strawberry.field(description=f"At most {BODY_MAX} characters.")
    attachments: list[Upload] | None = strawberry.field(
        default=None, description=f"At most {MAX_FILES} files of up to 25 MB each."
    )


async def _visible_email(info: Info, login: str, email_id: str) -> EmailRecord | None:
    """The email when the viewer sent or received it; None otherwise (existence never leaks)."""
    key = _email_id(email_id)
    if key is None:
        return None
    email = await context_of(info).store(MailStore).email(key)
    return email if email is not None and email.is_participant(login) else None


async def _require_email(info: Info, login: str, email_id: str) -> EmailRecord:
    if _email_id(email_id) is None:
        raise BadUserInput("id", "`id` must be an email id.")
    email = await _visible_email(info, login, email_id)
    if email is None:
        raise NotFound("No such email.", field="id")
    return email


def _recipients(values: list[str]) -> list[str]:
    if not values:
        raise BadUserInput("to", "`to` needs at least one recipient.")
    logins: list[str] = []
    for value in values:
        login = validation.login(value, "to")
        if login not in logins:
            logins.append(login)
    if len(logins) > MAX_RECIPIENTS:
        raise BadUserInput("to", f"`to` may name at most {MAX_RECIPIENTS} recipients.")
    return logins


def _uploads(values: list[Any] | None) -> list[StoredUpload]:
    uploads: list[StoredUpload] = []
    for value in values or ():
        if isinstance(value, RefusedUpload):
            raise BadUserInput("attachments", value.reason)
        if not isinstance(value, StoredUpload):
            raise BadUserInput(
                "attachments", "Send attachments as files of a multipart request (GraphQL multipart spec)."
            )
        if not any(value is u for u in uploads):
            uploads.append(value)
    if len(uploads) > MAX_FILES:
        raise BadUserInput("attachments", f"At most {MAX_FILES} attachments per email.")
    return uploads


@strawberry.type
class MailMe:
    login: strawberry.Private[str]

    @strawberry.field(description="inbox, sent, then your own folders, each with its unread count.")
    async def folders(self, info: Info) -> list[Folder]:
        context = context_of(info)
        records = await context.store(MailStore).folders(self.login)
        counts = await context.loader(unread_counts_loader).load(self.login)
        return [Folder.of(self.login, r, counts.get(r.label, 0)) for r in records]

    @strawberry.field(description="One of your folders by label; null when you have none by that label.")
    async def folder(self, info: Info, label: str) -> Folder | None:
        key = label.strip().lower()
        if not LABEL.match(key):
            return None
        context = context_of(info)
        record = await context.store(MailStore).folder(self.login, key)
        if record is None:
            return None
        counts = await context.loader(unread_counts_loader).load(self.login)
        return Folder.of(self.login, record, counts.get(key, 0))

    @strawberry.field(description="An email you sent or received; null otherwise.")
    async def email(self, info: Info, id: strawberry.ID) -> Email | None:
        record = await _visible_email(info, self.login, id)
        if record is None:
            return None
        placement = await context_of(info).store(MailStore).placement(self.login, record)
        return Email.of(record, placement)


@strawberry.type
class MailMutation:
    @strawberry.mutation(description="Add a folder. CONFLICT when you have that label (inbox and sent too).")
    async def create_folder(self, info: Info, label: str, color: str | None = None) -> Folder:
        context = context_of(info)
        login = await context.require_viewer()
        key = _label(label, "label")
        chosen = _color(color)
        if key in SYSTEM_FOLDERS:
            raise Conflict(f"You have a folder '{key}' already.", field="label")
        store = context.store(MailStore)
        if await store.count_folders(login) >= MAX_FOLDERS:
            raise BadUserInput("label", f"You may have at most {MAX_FOLDERS} folders of your own.")
        if not await store.create_folder(login, key, chosen, clock.now()):
            raise Conflict(f"You have a folder '{key}' already.", field="label")
        return Folder.of(login, FolderRecord(key, chosen), 0)

    @strawberry.mutation(
        description="Send an email: filed unread in each recipient's inbox and read in your sent folder."
    )
    async def send_email(self, info: Info, input: EmailInput) -> Email:
        context = context_of(info)
        login = await context.require_viewer()
        recipients = _recipients(input.to)
        subject = validation.text(input.subject, "subject", min_len=0, max_len=SUBJECT_MAX)
        body = validation.text(input.body, "body", min_len=0, max_len=BODY_MAX, trim=False)
        uploads = _uploads(input.attachments)
        found = await context.loader(user_loader).load_many(recipients)
        unknown = [r for r, record in zip(recipients, found, strict=True) if record is None]
        if unknown:
            raise BadUserInput("to", f"No such user: {', '.join(unknown)}.")
        names = unique_filenames(u.filename for u in uploads)
        email = EmailRecord(
            id=new_timeuuid(),
            sender=login,
            recipients=recipients,
            subject=subject,
            body=body,
            attachments=[
                AttachmentRecord(name, u.content_type, u.size, u.chunk_count, u.attachment_id)
                for name, u in zip(names, uploads, strict=True)
            ],
        )
        store = context.store(MailStore)
        await store.store_email(email)
        for upload in uploads:
            upload.claimed = True  # the stored email refers to the chunks now
        await store.deliver(email)
        return Email.of(email, Placement.delivered(email, login))

    @strawberry.mutation(
        description="Mark an email read (or unread with read: false; null counts as true)."
    )
    async def mark_email_read(self, info: Info, id: strawberry.ID, read: bool | None = True) -> Email:
        context = context_of(info)
        login = await context.require_viewer()
        email = await _require_email(info, login, id)
        placement = await context.store(MailStore).set_read(login, email, read is not False)
        return Email.of(email, placement)

    @strawberry.mutation(description="Move an email between two of your folders.")
    async def move_email(
        self,
        info: Info,
        id: strawberry.ID,
        from_: Annotated[str, strawberry.argument(name="from")],
        to: str,
    ) -> Email:
        context = context_of(info)
        login = await context.require_viewer()
        source = _label(from_, "from")
        target = _label(to, "to")
        email = await _require_email(info, login, id)
        store = context.store(MailStore)
        if await store.folder(login, target) is None:
            raise NotFound(f"You have no folder '{target}'.", field="to")
        try:
            placement = await store.move(login, email, source, target)
        except NotInFolder:
            raise NotFound(f"The email is not in '{source}'.", field="from") from None
        return Email.of(email, placement)
