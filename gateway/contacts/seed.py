"""Demo identities and address books of the demo users.

bob and carol linked their phone numbers (linked directly: the seed owns these
demo identities, so no code goes through the verification webhook), erin her email address; alice's
phone book has bob, carol and two people who are not on the network; dave's
email contacts include erin. Linking and uploading again change nothing, so the
seed can run any number of times.
"""

from __future__ import annotations

import logging

from gateway.contacts.rules import UploadedContact
from gateway.contacts.service import ContactDirectory
from gateway.db.session import Database
from gateway.errors import Conflict
from gateway.settings import Settings

log = logging.getLogger(__name__)

DEMO_IDENTITIES = [
    ("bob", "tel", "+31 6 1234 5601"),
    ("carol", "tel", "+31 6 1234 5602"),
    ("erin", "email", "Erin.Brockovich@example.com"),
]

DEMO_BOOKS = [
    (
        "alice",
        "tel",
        [
            ("+31 6 1234 5601", "Bob (builder)"),
            ("0031 6 1234 5602", "Carol D."),
            ("+31 6 1234 5699", "Mad Hatter"),
            ("+44 20 7946 0018", "White Rabbit"),
        ],
    ),
    (
        "dave",
        "email",
        [("erin.brockovich@example.com", "Erin"), ("hal9000@example.com", "HAL")],
    ),
]


async def seed_contacts(db: Database, settings: Settings) -> list[str]:
    """Link the demo identities and upload the demo books; returns what was linked."""
    directory = ContactDirectory(db, settings)
    linked = []
    for login, network, network_id in DEMO_IDENTITIES:
        try:
            identity = await directory.link_verified(login, network, network_id)
        except Conflict:
            log.warning(
                "demo identity %s:%s belongs to someone else; not linked to %s", network, network_id, login
            )
            continue
        linked.append(f"{login}:{identity.network}:{identity.network_id}")
    for login, network, contacts in DEMO_BOOKS:
        await directory.upload_contacts(login, network, [UploadedContact(i, n) for i, n in contacts])
    return linked
