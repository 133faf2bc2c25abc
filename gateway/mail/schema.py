"""The mail domain's root fields: ``Me.folders``, ``Me.folder`` and ``Me.email``, and the
mail mutations with their input.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import strawberry
from strawberry.file_uploads import Upload
from strawberry.types import Info

from gateway.errors import BadUserInput
from gateway.graph.context import Context, context_of
from gateway.graph.cost import max_items
from gateway.mail import rules
from gateway.mail.loaders import unread_counts_loader
from gateway.mail.service import MAX_FOLDERS, MailService
from gateway.mail.store import MailStore
from gateway.mail.types import Email, Folder, email_key, load_folder, mail_service
from gateway.mail.uploads import MAX_FILES
from gateway.ratelimit.policy import Limit

#: An email named by an argument.
EmailId = Annotated[
    strawberry.ID,
    strawberry.argument(
        description="The email's `id`, or the `id` of an EmailSummary of it (the email's time-based UUID "
        "is accepted too, as earlier releases handed it out)."
    ),
]


def service(context: Context) -> MailService:
    return mail_service(context)


@strawberry.input(description="A new email. Attachments go as multipart file uploads.")
class EmailInput:
    to: list[str] = strawberry.field(
        description=f"The recipients' logins, 1-{rules.MAX_RECIPIENTS} (duplicates count once); "
        "BAD_USER_INPUT naming any that is no user."
    )
    subject: str = strawberry.field(description=f"At most {rules.SUBJECT_MAX} characters after trimming.")
    body: str = strawberry.field(description="At most 100 000 characters, kept exactly as written.")
    attachments: list[Upload] | None = strawberry.field(
        default=None,
        description=f"At most {MAX_FILES} files of up to 25 MB each, sent as parts of the multipart request.",
    )
    client_mutation_id: str | None = strawberry.field(
        default=None,
        description="An idempotency key you generate (a UUID; at most 100 characters): a retry with the "
        "same key sends nothing twice and returns the first email.",
    )


@strawberry.type
class MailMe:
    login: strawberry.Private[str]

    @strawberry.field(
        description="Your folders: `inbox`, `sent`, then your own, each with its unread count.",
        metadata=max_items(MAX_FOLDERS + 2),
    )
    async def folders(self, info: Info) -> list[Folder]:
        context = context_of(info)
        records = await context.store(MailStore).folders(self.login)
        counts = await context.loader(unread_counts_loader).load(self.login)
        return [Folder.of(self.login, r, counts.get(r.label, 0)) for r in records]

    @strawberry.field(description="One of your folders by label; null when you have none by that label.")
    async def folder(
        self,
        info: Info,
        label: Annotated[str, strawberry.argument(description="The folder's label, in any case (`inbox`).")],
    ) -> Folder | None:
        return await load_folder(info, self.login, label)

    @strawberry.field(description="An email you sent or received; null otherwise.")
    async def email(self, info: Info, id: EmailId) -> Email | None:
        context = context_of(info)
        record = await service(context).visible_email(self.login, email_key(id))
        if record is None:
            return None
        placement = await context.store(MailStore).placement(self.login, record)
        return Email.of(record, placement, self.login)


@strawberry.type
class MailMutation:
    @strawberry.mutation(
        description=f"Add a folder of your own (at most {MAX_FOLDERS}; more is BAD_USER_INPUT). CONFLICT "
        "when you have that label (inbox and sent too)."
    )
    async def create_folder(
        self,
        info: Info,
        label: Annotated[
            str,
            strawberry.argument(
                description="1-30 characters: a letter or digit, then letters, digits, `_` or `-`; stored "
                "lower-case."
            ),
        ],
        color: Annotated[
            str | None,
            strawberry.argument(description="`#rrggbb` in hex (stored lower-case); null: grey, `#9e9e9e`."),
        ] = None,
    ) -> Folder:
        context = context_of(info)
        login = await context.require_viewer()
        key = rules.label(label, "label")
        chosen = rules.color(color)
        return Folder.of(login, await service(context).create_folder(login, key, chosen), 0)

    @strawberry.mutation(
        description="Send an email: filed unread in each recipient's inbox and read in your sent folder. "
        "Returns your copy. Rate limited (attachments count as uploads too)."
    )
    async def send_email(
        self,
        info: Info,
        input: Annotated[
            EmailInput, strawberry.argument(description="Its recipients, subject, body and attachments.")
        ],
    ) -> Email:
        context = context_of(info)
        client_key = context.idempotency_key(info, input.client_mutation_id)
        login = await context.require_viewer()
        recipients = rules.recipients(input.to)
        subject = rules.subject(input.subject)
        body = rules.body(input.body)
        uploads = rules.uploads(input.attachments)
        # Uploads took their limit (``Limit.UPLOAD``) before their first byte was stored.
        await context.rate_limit(Limit.SEND, login)
        email, placement = await service(context).send(login, recipients, subject, body, uploads, client_key)
        return Email.of(email, placement, login)

    @strawberry.mutation(
        description="Mark an email of yours read or unread; its folder's unread count follows. NOT_FOUND "
        "for an email you neither sent nor received."
    )
    async def mark_email_read(
        self,
        info: Info,
        id: EmailId,
        read: Annotated[
            bool | None, strawberry.argument(description="false: unread; true or null: read.")
        ] = True,
    ) -> Email:
        context = context_of(info)
        login = await context.require_viewer()
        email, placement = await service(context).mark_read(login, _email_id(id), read is not False)
        return Email.of(email, placement, login)

    @strawberry.mutation(
        description="Move an email between two of your folders; an unread one takes its unread count "
        "along. Moving it where it already is changes nothing. NOT_FOUND when it is not in `from`, or "
        "you have no folder `to`."
    )
    async def move_email(
        self,
        info: Info,
        id: EmailId,
        from_: Annotated[
            str, strawberry.argument(name="from", description="The label of the folder that holds it now.")
        ],
        to: Annotated[str, strawberry.argument(description="The label of the folder to move it to.")],
    ) -> Email:
        context = context_of(info)
        login = await context.require_viewer()
        source = rules.label(from_, "from")
        target = rules.label(to, "to")
        email, placement = await service(context).move(login, _email_id(id), source, target)
        return Email.of(email, placement, login)


def _email_id(value: str) -> UUID:
    key = email_key(value)
    if key is None:
        raise BadUserInput("id", "`id` must be an email id.")
    return key
