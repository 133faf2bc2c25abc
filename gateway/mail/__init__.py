"""Mail: folders with unread counters, emails, and attachments stored in 1000 KiB chunks.

Owns ``folders_by_user``, ``unread_email_stats``, ``emails``,
``emails_by_user_folder`` with its bucket index, ``email_placements`` and
``attachment_chunks``; ``Me.folders``, ``Me.folder``, ``Me.email``, the mail
mutations, and the ``GET /attachments/{emailId}/{filename}`` route.

The domain template's modules, with the store split by what it holds:
``store.py`` (folders, emails, placements, counters) and
``attachment_store.py`` (file contents). Attachments travel over HTTP here:
``uploads.py`` streams multipart uploads into the attachment store,
``routes.py`` serves downloads, ``links.py`` signs their URLs, ``ranges.py``
answers ``Range`` and ``If-None-Match``, ``names.py`` cleans file names and
content types. ``recount.py`` is ``gateway mail-recount``. Tables, invariants
and repairs: ``docs/data-model/mail.md``.
"""
