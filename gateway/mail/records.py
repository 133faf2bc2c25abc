"""Plain records of the mail domain, shared by its stores and its GraphQL layer."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from gateway.db.clock import micros_of, time_of

INBOX = "inbox"
SENT = "sent"
SYSTEM_FOLDERS = (INBOX, SENT)
SYSTEM_COLORS = {INBOX: "#1a73e8", SENT: "#34a853"}
DEFAULT_COLOR = "#9e9e9e"


@dataclass(frozen=True)
class FolderRecord:
    label: str
    color: str
    system: bool = False


@dataclass(frozen=True)
class AttachmentRecord:
    filename: str
    content_type: str
    size: int
    chunk_count: int
    attachment_id: UUID


@dataclass(frozen=True)
class EmailRecord:
    id: UUID
    sender: str
    recipients: list[str]
    subject: str
    body: str
    attachments: list[AttachmentRecord]

    @property
    def sent_at(self) -> datetime:
        return time_of(self.id)

    @property
    def filed_at(self) -> int:
        """Write timestamp (µs) of the email's first filing into folders."""
        return micros_of(self.id)

    def is_participant(self, login: str) -> bool:
        return login == self.sender or login in self.recipients

    def attachment(self, filename: str) -> AttachmentRecord | None:
        return next((a for a in self.attachments if a.filename == filename), None)


@dataclass(frozen=True)
class Placement:
    """Where one user keeps one email, and whether they read it.

    ``changed_at`` is None while the email is where it was delivered (no row in
    ``email_placements`` yet); otherwise it is the write timestamp (µs) of the
    last change, which also stamps the folder-row writes that reflect it.
    """

    label: str
    read: bool
    changed_at: int | None = None

    @classmethod
    def delivered(cls, email: EmailRecord, login: str) -> Placement:
        """Recipients get the email in their inbox, unread; the sender in sent, read.
        Sending to yourself files it once, in sent."""
        if login == email.sender:
            return cls(SENT, True)
        return cls(INBOX, False)


@dataclass(frozen=True)
class FolderEntry:
    """One row of a folder listing."""

    id: UUID
    sender: str
    subject: str
    read: bool
    has_attachments: bool

    @property
    def sent_at(self) -> datetime:
        return time_of(self.id)
