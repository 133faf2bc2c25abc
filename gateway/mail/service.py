"""Mail's operations that span checks and stores: folders, sending, reading, moving.

Emails are only ever visible to their sender and recipients: for anyone else an
email that exists answers exactly as one that does not.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

from gateway.db import clock
from gateway.db.clock import new_timeuuid
from gateway.db.idempotency import KeyClaim, MutationKeys
from gateway.db.keyed_locks import KeyedLocks
from gateway.errors import BadUserInput, Conflict, NotFound
from gateway.mail.names import unique_filenames
from gateway.mail.records import SYSTEM_FOLDERS, AttachmentRecord, EmailRecord, FolderRecord, Placement
from gateway.mail.store import MailStore, NotInFolder
from gateway.mail.uploads import StoredUpload
from gateway.users.records import UserRecord

MAX_FOLDERS = 100

#: Serialises each user's folder creations in this process, so the count a
#: creation checks cannot change under it: the cap is exact within one gateway
#: process. Across P processes creating folders for the same user at the same
#: instant it is soft, by at most P - 1 folders (one racer per other process);
#: an exact cross-process cap would need an LWT-guarded counter on every
#: creation and deletion, more than a cap on labels is worth.
_FOLDER_CREATIONS = KeyedLocks(wait_seconds=10.0)

#: Looks logins up (in the request's batching loader): a record, or None, for each.
FindUsers = Callable[[list[str]], Awaitable[Sequence[UserRecord | None]]]


@dataclass(frozen=True)
class MailService:
    store: MailStore
    find_users: FindUsers
    keys: MutationKeys

    async def create_folder(self, login: str, label: str, color: str) -> FolderRecord:
        if label in SYSTEM_FOLDERS:
            raise Conflict(f"You have a folder '{label}' already.", field="label")
        async with _FOLDER_CREATIONS.hold(login):
            if await self.store.count_folders(login) >= MAX_FOLDERS:
                raise BadUserInput("label", f"You may have at most {MAX_FOLDERS} folders of your own.")
            if not await self.store.create_folder(login, label, color, clock.now()):
                raise Conflict(f"You have a folder '{label}' already.", field="label")
        return FolderRecord(label, color)

    async def visible_email(self, login: str, email_id: UUID | None) -> EmailRecord | None:
        """The email when ``login`` sent or received it; None otherwise."""
        if email_id is None:
            return None
        email = await self.store.email(email_id)
        return email if email is not None and email.is_participant(login) else None

    async def require_email(self, login: str, email_id: UUID) -> EmailRecord:
        email = await self.visible_email(login, email_id)
        if email is None:
            raise NotFound("No such email.", field="id")
        return email

    async def send(
        self,
        login: str,
        recipients: list[str],
        subject: str,
        body: str,
        uploads: list[StoredUpload],
        client_key: str | None = None,
    ) -> tuple[EmailRecord, Placement]:
        """Store the email, claim its uploads, file it in each inbox and in the sender's sent.

        With ``client_key`` the email id is claimed under (sender, key) first
        (``gateway/db/idempotency.py``). A retry that finds the email files it
        again everywhere (idempotent: the same rows and timestamps) and then
        moves the inbox counters if no request of the key has, so they move
        once, and only once it is filed everywhere: a request that stopped
        while filing (the first, or a retry) leaves it to the next retry, never
        a key that counts as done for an email not filed. A retry's own
        attachments stay unclaimed and are cleaned up as any abandoned upload.
        """
        found = await self.find_users(recipients)
        unknown = [r for r, record in zip(recipients, found, strict=True) if record is None]
        if unknown:
            raise BadUserInput("to", f"No such user: {', '.join(unknown)}.")
        email_id = new_timeuuid()
        claim: KeyClaim | None = None
        if client_key is not None:
            claim = await self.keys.claim(login, "sendEmail", client_key, str(email_id))
            email_id = UUID(claim.result)
            if not claim.first:
                stored = await self.store.email(email_id)
                if stored is not None and stored.sender == login:
                    # An earlier request may have stopped before filing it everywhere.
                    retried = claim
                    await self.store.deliver(stored, lambda: self.keys.take_count(retried))
                    return stored, Placement.delivered(stored, login)
        names = unique_filenames(u.filename for u in uploads)
        email = EmailRecord(
            id=email_id,
            sender=login,
            recipients=recipients,
            subject=subject,
            body=body,
            attachments=[
                AttachmentRecord(name, u.content_type, u.size, u.chunk_count, u.attachment_id)
                for name, u in zip(names, uploads, strict=True)
            ],
        )
        await self.store.store_email(email)
        for upload in uploads:
            upload.claimed = True  # the stored email refers to the chunks now
        keyed = claim
        await self.store.deliver(email, None if keyed is None else lambda: self.keys.take_count(keyed))
        return email, Placement.delivered(email, login)

    async def mark_read(self, login: str, email_id: UUID, read: bool) -> tuple[EmailRecord, Placement]:
        email = await self.require_email(login, email_id)
        return email, await self.store.set_read(login, email, read)

    async def move(
        self, login: str, email_id: UUID, source: str, target: str
    ) -> tuple[EmailRecord, Placement]:
        email = await self.require_email(login, email_id)
        if await self.store.folder(login, target) is None:
            raise NotFound(f"You have no folder '{target}'.", field="to")
        try:
            placement = await self.store.move(login, email, source, target)
        except NotInFolder:
            raise NotFound(f"The email is not in '{source}'.", field="from") from None
        return email, placement
