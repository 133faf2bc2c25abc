"""Demo mail between the demo users: a few emails, one folder, one attachment."""

from __future__ import annotations

from gateway.db import clock
from gateway.db.clock import new_timeuuid
from gateway.db.session import Database
from gateway.mail.attachment_store import AttachmentStore
from gateway.mail.records import AttachmentRecord, EmailRecord
from gateway.mail.store import MailStore
from gateway.settings import Settings

AGENDA = b"Agenda\n1. Tea\n2. Riddles\n3. More tea\n"

DEMO_EMAILS = [
    ("alice", ["bob", "carol"], "Tea party on Friday", "Bring a riddle. The Hatter insists.", True),
    ("bob", ["alice"], "Re: Tea party on Friday", "Can we fix the teapot first?", False),
    ("carol", ["alice", "dave"], "Flight plan", "Higher, further, faster. Briefing at 9.", False),
    ("dave", ["erin", "alice"], "Pod bay doors", "HAL is being difficult again.", False),
    ("erin", ["alice"], "Fine print", "Page 47, paragraph 3. Read it.", False),
]


async def seed_mail(db: Database, settings: Settings) -> int:
    """Send the demo emails unless alice's sent folder has mail already; returns how many were sent."""
    store = MailStore(db, settings)
    if (await store.folder_page("alice", "sent", size=1, cursor=None)).items:
        return 0
    attachments = AttachmentStore(db, settings)
    for sender, recipients, subject, body, with_agenda in DEMO_EMAILS:
        files: list[AttachmentRecord] = []
        if with_agenda:
            attachment_id = new_timeuuid()
            size, chunks = await attachments.write_bytes(attachment_id, AGENDA)
            files.append(AttachmentRecord("agenda.txt", "text/plain", size, chunks, attachment_id))
        email = EmailRecord(new_timeuuid(), sender, recipients, subject, body, files)
        await store.store_email(email)
        await store.deliver(email)
    if await store.folder("alice", "tea") is None:
        await store.create_folder("alice", "tea", "#c2185b", clock.now())
    return len(DEMO_EMAILS)
